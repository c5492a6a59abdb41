/* PROXY protocol v2 headers (see proxy_v2.h). Layout (all multi-byte fields big-endian):
 *
 *   0  12  signature 0D 0A 0D 0A 00 0D 0A 51 55 49 54 0A
 *   12  1  version (high nibble, must be 2) | command (low nibble: 0 LOCAL, 1 PROXY)
 *   13  1  family (high nibble) | transport protocol (low nibble)
 *   14  2  length of what follows: address block + TLVs
 *   16     address block (TCP/UDP over IPv4: src, dst, sport, dport = 12 bytes; IPv6: 36; UNIX: 216)
 *          then TLVs: type (1), length (2), value
 *
 * The receiver's rules followed here (spec 2.2): only version 2; commands other than LOCAL and PROXY,
 * and unassigned family or protocol nibbles, are refused; the length field always decides the header
 * size, whatever the command (LOCAL may carry an address block, which is skipped); a length shorter
 * than the family's address block is refused. */
#include <errno.h>
#include <string.h>

#include "ip.h"
#include "proxy_v2.h"

const uint8_t xlt_pp2_sig[XLT_PP2_SIG_LEN] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                              0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

const char *const xlt_pp2_result_names[XLT_PP2_RESULT_COUNT] = {
    [XLT_PP2_OK] = "ok",
    [XLT_PP2_MORE] = "more",
    [XLT_PP2_ERR_SIGNATURE] = "signature",
    [XLT_PP2_ERR_VERSION] = "version",
    [XLT_PP2_ERR_COMMAND] = "command",
    [XLT_PP2_ERR_FAMILY] = "family",
    [XLT_PP2_ERR_LENGTH] = "length",
    [XLT_PP2_ERR_TOO_LONG] = "too_long",
    [XLT_PP2_ERR_TLV] = "tlv",
    [XLT_PP2_ERR_CRC] = "crc",
};

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Bitwise CRC32C (reflected polynomial 0x82F63B78): headers are a few hundred bytes at most and are
 * checked once per connection, so a table buys nothing. */
static uint32_t crc32c_update(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0x82F63B78u & (uint32_t) - (int32_t)(crc & 1));
	}
	return crc;
}

uint32_t xlt_pp2_crc32c(const uint8_t *p, size_t len)
{
	return ~crc32c_update(~0u, p, len);
}

/* The address block a family/protocol byte defines, or -1 for unassigned values. */
static int addr_len_of(uint8_t fam, uint8_t proto)
{
	if (proto > XLT_PP2_PROTO_DGRAM)
		return -1;
	switch (fam) {
	case XLT_PP2_AF_UNSPEC:
		return 0;
	case XLT_PP2_AF_INET:
		return proto == XLT_PP2_PROTO_UNSPEC ? 0 : 12;
	case XLT_PP2_AF_INET6:
		return proto == XLT_PP2_PROTO_UNSPEC ? 0 : 36;
	case XLT_PP2_AF_UNIX:
		return proto == XLT_PP2_PROTO_UNSPEC ? 0 : 216;
	default:
		return -1;
	}
}

/* Checks that the TLVs tile [tlv, tlv + len) and that a CRC32C TLV matches the header H of HLEN bytes. */
static enum xlt_pp2_result check_tlvs(const uint8_t *h, size_t hlen, const uint8_t *tlv, size_t len)
{
	size_t off = 0;

	while (off < len) {
		uint16_t l;

		if (len - off < 3)
			return XLT_PP2_ERR_TLV;
		l = get16(tlv + off + 1);
		if (l > len - off - 3)
			return XLT_PP2_ERR_TLV;
		if (tlv[off] == XLT_PP2_TYPE_CRC32C) {
			size_t at = (size_t)(tlv + off + 3 - h);
			uint32_t want, got;
			if (l != 4)
				return XLT_PP2_ERR_TLV;
			want = (uint32_t)h[at] << 24 | (uint32_t)h[at + 1] << 16 | (uint32_t)h[at + 2] << 8 |
			       h[at + 3];
			got = crc32c_update(~0u, h, at);
			got = crc32c_update(got, (const uint8_t[4]){0}, 4);
			got = ~crc32c_update(got, h + at + 4, hlen - at - 4);
			if (got != want)
				return XLT_PP2_ERR_CRC;
		}
		off += 3 + (size_t)l;
	}
	return XLT_PP2_OK;
}

enum xlt_pp2_result xlt_pp2_parse(const uint8_t *buf, size_t n, struct xlt_pp2_info *info)
{
	size_t sig = n < XLT_PP2_SIG_LEN ? n : XLT_PP2_SIG_LEN;
	uint16_t len;
	int alen;

	memset(info, 0, sizeof(*info));
	info->len = XLT_PP2_HDR_LEN;
	if (memcmp(buf, xlt_pp2_sig, sig))
		return XLT_PP2_ERR_SIGNATURE;
	if (n > XLT_PP2_SIG_LEN) {
		if (buf[12] >> 4 != 2)
			return XLT_PP2_ERR_VERSION;
		if ((buf[12] & 0xF) > XLT_PP2_CMD_PROXY)
			return XLT_PP2_ERR_COMMAND;
	}
	/* LOCAL (a balancer's own check): the spec has the receiver accept it and discard its block,
	 * family included, whatever they say; only its length counts (where the data starts) */
	if (n > 13 && (buf[12] & 0xF) != XLT_PP2_CMD_LOCAL && addr_len_of(buf[13] >> 4, buf[13] & 0xF) < 0)
		return XLT_PP2_ERR_FAMILY;
	if (n < XLT_PP2_HDR_LEN)
		return XLT_PP2_MORE;
	info->command = buf[12] & 0xF;
	len = get16(buf + 14);
	if (info->command == XLT_PP2_CMD_LOCAL) {
		info->len = XLT_PP2_HDR_LEN + (size_t)len;
		if (info->len > XLT_PP2_MAX_LEN)
			return XLT_PP2_ERR_TOO_LONG;
		return n < info->len ? XLT_PP2_MORE : XLT_PP2_OK; /* (family UNSPEC, no address, no TLV) */
	}
	info->family = buf[13] >> 4;
	info->proto = buf[13] & 0xF;
	alen = addr_len_of(info->family, info->proto);
	if (len < alen)
		return XLT_PP2_ERR_LENGTH;
	info->len = XLT_PP2_HDR_LEN + (size_t)len;
	if (info->len > XLT_PP2_MAX_LEN)
		return XLT_PP2_ERR_TOO_LONG;
	if (n < info->len)
		return XLT_PP2_MORE;
	info->addr = buf + XLT_PP2_HDR_LEN;
	info->addr_len = (size_t)alen;
	info->tlv = info->addr + alen;
	info->tlv_len = len - (size_t)alen;
	if (info->family == XLT_PP2_AF_INET && alen) {
		uint32_t a;
		memcpy(&a, info->addr, 4);
		info->src_addr = xlt_ip_v4(a);
		memcpy(&a, info->addr + 4, 4);
		info->dst_addr = xlt_ip_v4(a);
		info->src_port = get16(info->addr + 8);
		info->dst_port = get16(info->addr + 10);
	} else if (info->family == XLT_PP2_AF_INET6 && alen) {
		memcpy(info->src_addr.b, info->addr, 16);
		memcpy(info->dst_addr.b, info->addr + 16, 16);
		info->src_port = get16(info->addr + 32);
		info->dst_port = get16(info->addr + 34);
	}
	return check_tlvs(buf, info->len, info->tlv, info->tlv_len);
}

int xlt_pp2_tlv_next(const struct xlt_pp2_info *info, size_t *off, uint8_t *type, const uint8_t **val,
                     uint16_t *len)
{
	const uint8_t *p = info->tlv + *off;

	/* the parse checked that the TLVs tile the space exactly; the bound is kept for callers that
	 * pass an info of their own */
	if (*off + 3 > info->tlv_len)
		return 0;
	*type = p[0];
	*len = get16(p + 1);
	if (*len > info->tlv_len - *off - 3)
		return 0;
	*val = p + 3;
	*off += 3 + (size_t)*len;
	return 1;
}

static void put_head(uint8_t *buf, uint8_t cmd, uint8_t fam_proto, uint16_t len)
{
	memcpy(buf, xlt_pp2_sig, XLT_PP2_SIG_LEN);
	buf[12] = (uint8_t)(0x20 | cmd);
	buf[13] = fam_proto;
	put16(buf + 14, len);
}

int xlt_pp2_build(uint8_t *buf, size_t cap, const struct xlt_ip *src, uint16_t sport,
                  const struct xlt_ip *dst, uint16_t dport, const struct xlt_pp2_tlv *tlvs, unsigned n)
{
	static const struct xlt_ip none;
	const struct xlt_ip *d = dst ? dst : &none;
	bool inet = src && !xlt_ip_is_any(src);
	/* an unspecified destination takes the source's family: it says nothing of its own */
	bool v4 = inet && xlt_ip_is_v4(src) && (xlt_ip_is_v4(d) || xlt_ip_is_any(d));
	uint8_t fam = !inet ? XLT_PP2_AF_UNSPEC : v4 ? XLT_PP2_AF_INET : XLT_PP2_AF_INET6;
	size_t alen = !inet ? 0 : v4 ? 12 : 36, total = XLT_PP2_HDR_LEN + alen, off;

	for (unsigned i = 0; i < n; i++)
		total += 3 + (size_t)tlvs[i].len;
	if (total > cap || total > XLT_PP2_MAX_LEN)
		return -ENOSPC;
	put_head(buf, XLT_PP2_CMD_PROXY,
	         inet ? (uint8_t)(fam << 4 | XLT_PP2_PROTO_STREAM) : (uint8_t)XLT_PP2_AF_UNSPEC,
	         (uint16_t)(total - XLT_PP2_HDR_LEN));
	off = XLT_PP2_HDR_LEN;
	if (v4) {
		memcpy(buf + off, &src->b[12], 4);
		memcpy(buf + off + 4, &d->b[12], 4); /* :: reads as 0.0.0.0 here too */
		put16(buf + off + 8, sport);
		put16(buf + off + 10, dport);
	} else if (inet) {
		/* the IPv4 end of a mixed pair goes v4-mapped; an unspecified one as :: */
		memcpy(buf + off, src->b, 16);
		if (xlt_ip_is_any(d))
			memset(buf + off + 16, 0, 16);
		else
			memcpy(buf + off + 16, d->b, 16);
		put16(buf + off + 32, sport);
		put16(buf + off + 34, dport);
	}
	off += alen;
	for (unsigned i = 0; i < n; i++) {
		buf[off] = tlvs[i].type;
		put16(buf + off + 1, tlvs[i].len);
		if (tlvs[i].len)
			memcpy(buf + off + 3, tlvs[i].val, tlvs[i].len);
		off += 3 + (size_t)tlvs[i].len;
	}
	return (int)total;
}

int xlt_pp2_build_local(uint8_t *buf, size_t cap)
{
	if (cap < XLT_PP2_HDR_LEN)
		return -ENOSPC;
	put_head(buf, XLT_PP2_CMD_LOCAL, XLT_PP2_AF_UNSPEC, 0);
	return XLT_PP2_HDR_LEN;
}
