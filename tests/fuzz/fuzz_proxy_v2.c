/* libFuzzer target: what a client in front of an accept_proxy = v2 listener controls, as bytes. The
 * parser must never read past its input nor accept a header longer than it or than XLT_PP2_MAX_LEN;
 * what it accepts must walk to the exact end of its TLVs, give the same answer on every longer input
 * (bytes after a header are the client's data), and ask for more on every strict prefix.
 * fuzz-sources: translate/proxy_v2.c
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "translate/proxy_v2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                             \
	do {                                                                                                 \
		if (!(x))                                                                                    \
			abort();                                                                             \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xlt_pp2_info in, again;
	enum xlt_pp2_result r;
	uint8_t *copy;

	/* a copy of exactly SIZE bytes, so that ASan sees any read past the input */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	r = xlt_pp2_parse(copy, size, &in);
	CHECK(r < XLT_PP2_RESULT_COUNT);
	if (r == XLT_PP2_OK) {
		size_t off = 0, seen = 0;
		uint8_t t;
		const uint8_t *v;
		uint16_t l;

		CHECK(in.len <= size && in.len <= XLT_PP2_MAX_LEN && in.len >= XLT_PP2_HDR_LEN);
		/* (LOCAL's block is discarded whole: no address, no TLV) */
		CHECK(in.command == XLT_PP2_CMD_LOCAL ? !in.addr_len && !in.tlv_len && in.family == XLT_PP2_AF_UNSPEC
		                                      : in.addr_len + in.tlv_len + XLT_PP2_HDR_LEN == in.len);
		while (xlt_pp2_tlv_next(&in, &off, &t, &v, &l))
			seen += 3 + (size_t)l;
		CHECK(seen == in.tlv_len);
		/* the addresses given are the block's own bytes (IPv6) or their mapped form (IPv4) */
		if (in.family == XLT_PP2_AF_INET6 && in.addr_len == 36)
			CHECK(!memcmp(in.src_addr.b, in.addr, 16) &&
			      !memcmp(in.dst_addr.b, in.addr + 16, 16));
		if (in.family == XLT_PP2_AF_INET && in.addr_len == 12)
			CHECK(!memcmp(in.src_addr.b + 12, in.addr, 4) &&
			      !memcmp(in.dst_addr.b + 12, in.addr + 4, 4));
		CHECK(xlt_pp2_parse(copy, in.len, &again) == XLT_PP2_OK && again.len == in.len);
		for (size_t k = 0; k < in.len; k++)
			CHECK(xlt_pp2_parse(copy, k, &again) == XLT_PP2_MORE);
	} else if (r == XLT_PP2_MORE) {
		CHECK(in.len > size && in.len <= XLT_PP2_MAX_LEN);
	}
	free(copy);
	return 0;
}
