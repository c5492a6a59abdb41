/* Software checksums. DPDK 22.11's rte_raw_cksum adds one 16-bit word at a time; this loop adds
 * 32-bit words into 64-bit accumulators: with SSE2 (every x86-64), 64 bytes a step, each 16-byte
 * load widened into two vectors of two 64-bit lanes; otherwise 32 bytes a step, the two halves of each
 * 64-bit read into four scalar accumulators (independent chains the CPU runs side by side). A word is
 * below 2^32, so an accumulator cannot carry out before 2^32 additions, far beyond any frame; the
 * 32-bit words are congruent to their 16-bit words modulo 0xffff, which is all the ones'-complement
 * sum keeps, and the end-around folding gives rte_raw_cksum's value. */
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <rte_ip.h>
#include <rte_mbuf.h>

#include "cksum.h"

static inline uint64_t halves(uint64_t w)
{
	return (w & 0xffffffffu) + (w >> 32);
}

uint16_t eth_cksum(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t a = 0, b = 0, c = 0, d = 0, s;

#ifdef __SSE2__
	if (len >= 64) {
		const __m128i z = _mm_setzero_si128();
		__m128i v0 = z, v1 = z, v2 = z, v3 = z;
		uint64_t lanes[8];

		for (; len >= 64; p += 64, len -= 64) {
			__m128i w0 = _mm_loadu_si128((const __m128i *)(const void *)p);
			__m128i w1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
			__m128i w2 = _mm_loadu_si128((const __m128i *)(const void *)(p + 32));
			__m128i w3 = _mm_loadu_si128((const __m128i *)(const void *)(p + 48));

			v0 = _mm_add_epi64(v0, _mm_unpacklo_epi32(w0, z));
			v1 = _mm_add_epi64(v1, _mm_unpackhi_epi32(w0, z));
			v2 = _mm_add_epi64(v2, _mm_unpacklo_epi32(w1, z));
			v3 = _mm_add_epi64(v3, _mm_unpackhi_epi32(w1, z));
			v0 = _mm_add_epi64(v0, _mm_unpacklo_epi32(w2, z));
			v1 = _mm_add_epi64(v1, _mm_unpackhi_epi32(w2, z));
			v2 = _mm_add_epi64(v2, _mm_unpacklo_epi32(w3, z));
			v3 = _mm_add_epi64(v3, _mm_unpackhi_epi32(w3, z));
		}
		_mm_storeu_si128((__m128i *)(void *)lanes, v0);
		_mm_storeu_si128((__m128i *)(void *)(lanes + 2), v1);
		_mm_storeu_si128((__m128i *)(void *)(lanes + 4), v2);
		_mm_storeu_si128((__m128i *)(void *)(lanes + 6), v3);
		a = lanes[0] + lanes[1];
		b = lanes[2] + lanes[3];
		c = lanes[4] + lanes[5];
		d = lanes[6] + lanes[7];
	}
#endif
	for (; len >= 32; p += 32, len -= 32) {
		uint64_t w[4];

		memcpy(w, p, sizeof(w));
		a += halves(w[0]);
		b += halves(w[1]);
		c += halves(w[2]);
		d += halves(w[3]);
	}
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;

		memcpy(&w, p, sizeof(w));
		a += halves(w);
	}
	if (len >= 4) {
		uint32_t w;

		memcpy(&w, p, sizeof(w));
		b += w;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		uint16_t w;

		memcpy(&w, p, sizeof(w));
		c += w;
		p += 2;
		len -= 2;
	}
	if (len) {
		uint16_t w = 0;

		memcpy(&w, p, 1); /* the first byte of a word whose second is zero, in host order */
		d += w;
	}
	s = a + b + c + d;
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffffffffu) + (s >> 32);
	return eth_cksum_add((uint32_t)(s & 0xffffu), (uint32_t)(s >> 16));
}

bool eth_cksum_chain(const struct rte_mbuf *m, uint32_t off, uint32_t len, uint16_t *out)
{
	uint32_t sum = 0, done = 0;

	for (const struct rte_mbuf *seg = m; seg && done < len; seg = seg->next) {
		uint32_t n, part;

		if (off >= seg->data_len) {
			off -= seg->data_len;
			continue;
		}
		n = seg->data_len - off < len - done ? seg->data_len - off : len - done;
		part = eth_cksum(rte_pktmbuf_mtod_offset(seg, const uint8_t *, off), n);
		if (done & 1) /* this segment's bytes sit at odd positions of the sum */
			part = ((part & 0xffu) << 8) | (part >> 8);
		sum = eth_cksum_add(sum, part);
		done += n;
		off = 0;
	}
	*out = (uint16_t)sum;
	return done == len;
}

uint16_t eth_cksum_l4(const struct rte_mbuf *m, uint32_t phdr, uint32_t l4_off)
{
	uint16_t sum = 0;

	eth_cksum_chain(m, l4_off, m->pkt_len - l4_off, &sum);
	return (uint16_t)~eth_cksum_add(phdr, sum);
}

uint16_t eth_ipv4_cksum(const struct rte_ipv4_hdr *ip)
{
	return (uint16_t)~eth_cksum(ip, (size_t)(ip->version_ihl & 0xf) * 4u);
}

uint16_t eth_ipv4_phdr_cksum(const struct rte_ipv4_hdr *ip)
{
	struct {
		rte_be32_t src, dst;
		uint8_t zero, proto;
		rte_be16_t len;
	} __rte_packed psd = {
	    .src = ip->src_addr,
	    .dst = ip->dst_addr,
	    .proto = ip->next_proto_id,
	    .len = rte_cpu_to_be_16(
	        (uint16_t)(rte_be_to_cpu_16(ip->total_length) - (ip->version_ihl & 0xf) * 4u)),
	};

	return eth_cksum(&psd, sizeof(psd));
}

uint16_t eth_ipv6_phdr_cksum(const struct rte_ipv6_hdr *ip, uint32_t len, uint8_t proto)
{
	uint32_t be[2] = {rte_cpu_to_be_32(len), rte_cpu_to_be_32(proto)};

	return eth_cksum_add(eth_cksum(ip->src_addr, 32), eth_cksum(be, sizeof(be)));
}
