/* SipHash-2-4, after the reference implementation (public domain, CC0). */
#include <string.h>

#include "siphash.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND                                                                                             \
	do {                                                                                                 \
		v0 += v1;                                                                                    \
		v1 = ROTL(v1, 13);                                                                           \
		v1 ^= v0;                                                                                    \
		v0 = ROTL(v0, 32);                                                                           \
		v2 += v3;                                                                                    \
		v3 = ROTL(v3, 16);                                                                           \
		v3 ^= v2;                                                                                    \
		v0 += v3;                                                                                    \
		v3 = ROTL(v3, 21);                                                                           \
		v3 ^= v0;                                                                                    \
		v2 += v1;                                                                                    \
		v1 = ROTL(v1, 17);                                                                           \
		v1 ^= v2;                                                                                    \
		v2 = ROTL(v2, 32);                                                                           \
	} while (0)

uint64_t eth_siphash(const struct eth_siphash_key *key, const void *data, size_t len)
{
	const uint8_t *in = data;
	uint64_t v0 = 0x736f6d6570736575ULL ^ key->k0, v1 = 0x646f72616e646f6dULL ^ key->k1;
	uint64_t v2 = 0x6c7967656e657261ULL ^ key->k0, v3 = 0x7465646279746573ULL ^ key->k1;
	uint64_t b = (uint64_t)len << 56, m;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&m, in + i, 8); /* little-endian hosts only, like DPDK on x86 */
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (unsigned s = 0; i < len; i++, s += 8)
		b |= (uint64_t)in[i] << s;
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t eth_siphash_3u32(const struct eth_siphash_key *key, uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t w[3] = {a, b, c};

	return eth_siphash(key, w, sizeof(w));
}
