/* Unit tests of translate/proxy_v2.c: headers built against golden byte vectors written out by hand
 * from HAProxy's doc/proxy-protocol.txt (section 2.2), the parser on those vectors, on every prefix of
 * them (it must ask for more, never accept or refuse early), and on hostile input: wrong signature,
 * version, command, family or protocol, lengths beyond the buffer or short of the address block,
 * TLVs that overrun the header, a CRC32C that does not match, headers above the size bound, IPv6
 * blocks cut short; plus AF_UNSPEC and LOCAL, which are valid. Both families: TCP over IPv6 when
 * either end is IPv6 (the IPv4 one v4-mapped), and its 36-byte block parsed into struct xlt_ip. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>

#include "translate/ip.h"
#include "translate/proxy_v2.h"

#define SIG 0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A

/* The vectors are laid out field by field. */
/* clang-format off */
/* PROXY, TCP over IPv4, 198.18.0.2:40000 -> 198.18.0.1:8000, no TLVs. */
static const uint8_t v_tcp4[] = {
	SIG,
	0x21,			/* version 2, PROXY */
	0x11,			/* AF_INET, STREAM */
	0x00, 0x0C,		/* 12 bytes follow */
	0xC6, 0x12, 0x00, 0x02, /* 198.18.0.2 */
	0xC6, 0x12, 0x00, 0x01, /* 198.18.0.1 */
	0x9C, 0x40,		/* 40000 */
	0x1F, 0x40,		/* 8000 */
};

/* The same with ibgwd's TLVs: UNIQUE_ID "00000000000000a1", route "web", GID fe80::2, QPN 0x11. */
static const uint8_t v_tcp4_tlv[] = {
	SIG, 0x21, 0x11,
	0x00, 0x3F, /* 12 + 19 + 6 + 19 + 7 = 63 */
	0xC6, 0x12, 0x00, 0x02, 0xC6, 0x12, 0x00, 0x01, 0x9C, 0x40, 0x1F, 0x40,
	0x05, 0x00, 0x10, '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', 'a', '1',
	0xE0, 0x00, 0x03, 'w', 'e', 'b',
	0xE1, 0x00, 0x10, 0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
	0xE2, 0x00, 0x04, 0x00, 0x00, 0x00, 0x11,
};

/* PROXY, TCP over IPv6, [2001:db8::2]:40000 -> [2001:db8::1]:8000, route TLV "web". */
static const uint8_t v_tcp6[] = {
	SIG,
	0x21,			/* version 2, PROXY */
	0x21,			/* AF_INET6, STREAM */
	0x00, 0x2A,		/* 36 + 6 = 42 bytes follow */
	0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, /* 2001:db8::2 */
	0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, /* 2001:db8::1 */
	0x9C, 0x40,		/* 40000 */
	0x1F, 0x40,		/* 8000 */
	0xE0, 0x00, 0x03, 'w', 'e', 'b',
};

/* A mixed pair: 198.18.0.2:40000 (v4-mapped) -> [2001:db8::1]:8000, no TLVs. */
static const uint8_t v_tcp6_mixed[] = {
	SIG, 0x21, 0x21,
	0x00, 0x24,		/* 36 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xC6, 0x12, 0x00, 0x02, /* ::ffff:198.18.0.2 */
	0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01,
	0x9C, 0x40, 0x1F, 0x40,
};
/* clang-format on */

static struct xlt_ip xip(const char *s)
{
	struct xlt_ip a;

	assert_int_equal(xlt_ip_parse(s, &a), 0);
	return a;
}

/* LOCAL, AF_UNSPEC, nothing follows (what a health check sends). */
static const uint8_t v_local[] = {SIG, 0x20, 0x00, 0x00, 0x00};

/* PROXY with AF_UNSPEC and a TLV: a source without an IPv4 address (ibgwd: an AF_IB peer). */
static const uint8_t v_unspec[] = {SIG, 0x21, 0x00, 0x00, 0x06, 0xE0, 0x00, 0x03, 'w', 'e', 'b'};

static void test_build_golden(void **state)
{
	(void)state;
	uint8_t buf[XLT_PP2_MAX_LEN];
	struct xlt_ip src = xip("198.18.0.2"), dst = xip("198.18.0.1"), none = {0};
	static const uint8_t gid[16] = {0xFE, 0x80, [15] = 0x02};
	static const uint8_t qpn[4] = {0, 0, 0, 0x11};
	struct xlt_pp2_tlv tlv[] = {
	    {XLT_PP2_TYPE_UNIQUE_ID, 16, "00000000000000a1"},
	    {XLT_PP2_TYPE_IBGW_ROUTE, 3, "web"},
	    {XLT_PP2_TYPE_IBGW_IB_GID, 16, gid},
	    {XLT_PP2_TYPE_IBGW_IB_QPN, 4, qpn},
	};
	int n;

	n = xlt_pp2_build(buf, sizeof(buf), &src, 40000, &dst, 8000, NULL, 0);
	assert_int_equal(n, sizeof(v_tcp4));
	assert_memory_equal(buf, v_tcp4, sizeof(v_tcp4));
	n = xlt_pp2_build(buf, sizeof(buf), &src, 40000, &dst, 8000, tlv, 4);
	assert_int_equal(n, sizeof(v_tcp4_tlv));
	assert_memory_equal(buf, v_tcp4_tlv, sizeof(v_tcp4_tlv));
	/* a source with no IP address (AF_IB): AF_UNSPEC, NULL or unspecified alike */
	n = xlt_pp2_build(buf, sizeof(buf), NULL, 0, NULL, 0, &tlv[1], 1);
	assert_int_equal(n, sizeof(v_unspec));
	assert_memory_equal(buf, v_unspec, sizeof(v_unspec));
	n = xlt_pp2_build(buf, sizeof(buf), &none, 5, &dst, 8000, &tlv[1], 1);
	assert_int_equal(n, sizeof(v_unspec));
	assert_memory_equal(buf, v_unspec, sizeof(v_unspec));
	n = xlt_pp2_build_local(buf, sizeof(buf));
	assert_int_equal(n, sizeof(v_local));
	assert_memory_equal(buf, v_local, sizeof(v_local));
	/* too small a buffer: nothing written past it */
	assert_int_equal(xlt_pp2_build(buf, sizeof(v_tcp4_tlv) - 1, &src, 1, &dst, 2, tlv, 4), -ENOSPC);
	assert_int_equal(xlt_pp2_build_local(buf, 15), -ENOSPC);
}

/* IPv6: AF_INET6 when either end is IPv6, the 36-byte block, the IPv4 end v4-mapped. */
static void test_build_v6(void **state)
{
	(void)state;
	uint8_t buf[XLT_PP2_MAX_LEN];
	struct xlt_ip s6 = xip("2001:db8::2"), d6 = xip("2001:db8::1"), s4 = xip("198.18.0.2"), none = {0};
	struct xlt_pp2_tlv route = {XLT_PP2_TYPE_IBGW_ROUTE, 3, "web"};
	struct xlt_pp2_info in;
	int n;

	n = xlt_pp2_build(buf, sizeof(buf), &s6, 40000, &d6, 8000, &route, 1);
	assert_int_equal(n, sizeof(v_tcp6));
	assert_memory_equal(buf, v_tcp6, sizeof(v_tcp6));
	n = xlt_pp2_build(buf, sizeof(buf), &s4, 40000, &d6, 8000, NULL, 0);
	assert_int_equal(n, sizeof(v_tcp6_mixed));
	assert_memory_equal(buf, v_tcp6_mixed, sizeof(v_tcp6_mixed));
	/* an IPv6 source to an IPv4 destination: IPv6 too, the destination mapped */
	n = xlt_pp2_build(buf, sizeof(buf), &s6, 1, &s4, 2, NULL, 0);
	assert_int_equal(n, 16 + 36);
	assert_int_equal(buf[13], 0x21);
	assert_int_equal(xlt_pp2_parse(buf, (size_t)n, &in), XLT_PP2_OK);
	assert_true(xlt_ip_eq(&in.src_addr, &s6));
	assert_true(xlt_ip_eq(&in.dst_addr, &s4));
	/* an unspecified destination takes the source's family */
	n = xlt_pp2_build(buf, sizeof(buf), &s6, 1, &none, 2, NULL, 0);
	assert_int_equal(n, 16 + 36);
	assert_true(xlt_pp2_parse(buf, (size_t)n, &in) == XLT_PP2_OK && xlt_ip_is_any(&in.dst_addr));
	n = xlt_pp2_build(buf, sizeof(buf), &s4, 1, NULL, 2, NULL, 0);
	assert_int_equal(n, 16 + 12);
	/* the 36-byte block counts against the buffer */
	assert_int_equal(xlt_pp2_build(buf, sizeof(v_tcp6) - 1, &s6, 40000, &d6, 8000, &route, 1), -ENOSPC);
	assert_int_equal(xlt_pp2_build(buf, 16 + 36 - 1, &s4, 1, &d6, 2, NULL, 0), -ENOSPC);
}

static void test_parse_v6(void **state)
{
	(void)state;
	struct xlt_pp2_info in;
	struct xlt_ip s6 = xip("2001:db8::2"), d6 = xip("2001:db8::1"), s4 = xip("198.18.0.2");
	uint8_t buf[256];
	size_t off = 0;
	uint8_t type;
	const uint8_t *val;
	uint16_t len;

	assert_int_equal(xlt_pp2_parse(v_tcp6, sizeof(v_tcp6), &in), XLT_PP2_OK);
	assert_int_equal(in.len, sizeof(v_tcp6));
	assert_int_equal(in.family, XLT_PP2_AF_INET6);
	assert_int_equal(in.proto, XLT_PP2_PROTO_STREAM);
	assert_int_equal(in.addr_len, 36);
	assert_true(xlt_ip_eq(&in.src_addr, &s6));
	assert_true(xlt_ip_eq(&in.dst_addr, &d6));
	assert_int_equal(in.src_port, 40000);
	assert_int_equal(in.dst_port, 8000);
	assert_int_equal(in.tlv_len, 6);
	assert_true(xlt_pp2_tlv_next(&in, &off, &type, &val, &len));
	assert_int_equal(type, XLT_PP2_TYPE_IBGW_ROUTE);
	assert_memory_equal(val, "web", 3);
	assert_false(xlt_pp2_tlv_next(&in, &off, &type, &val, &len));
	/* a v4-mapped source in an IPv6 block reads as the IPv4 address it is */
	assert_int_equal(xlt_pp2_parse(v_tcp6_mixed, sizeof(v_tcp6_mixed), &in), XLT_PP2_OK);
	assert_true(xlt_ip_is_v4(&in.src_addr));
	assert_true(xlt_ip_eq(&in.src_addr, &s4));
	assert_int_equal(in.tlv_len, 0);
	/* IPv4 headers fill the same fields, mapped */
	assert_int_equal(xlt_pp2_parse(v_tcp4, sizeof(v_tcp4), &in), XLT_PP2_OK);
	assert_true(xlt_ip_eq(&in.src_addr, &s4));
	/* every strict prefix asks for more */
	for (size_t k = 0; k < sizeof(v_tcp6); k++) {
		assert_int_equal(xlt_pp2_parse(v_tcp6, k, &in), XLT_PP2_MORE);
		assert_int_equal(in.len, k < 16 ? 16 : sizeof(v_tcp6));
	}
	/* truncated IPv6 blocks: a length field short of 36 is refused whatever follows, for every
	 * length from 0 to 35 (12, an IPv4 block's, included), and over the TLV bytes that follow */
	for (unsigned l = 0; l < 36; l++) {
		memcpy(buf, v_tcp6, sizeof(v_tcp6));
		buf[14] = 0, buf[15] = (uint8_t)l;
		assert_int_equal(xlt_pp2_parse(buf, sizeof(v_tcp6), &in), XLT_PP2_ERR_LENGTH);
		assert_int_equal(xlt_pp2_parse(buf, 16, &in), XLT_PP2_ERR_LENGTH);
	}
	/* an IPv4 header relabelled IPv6 (12 bytes of block): refused, never read past */
	memcpy(buf, v_tcp4, sizeof(v_tcp4));
	buf[13] = 0x21;
	assert_int_equal(xlt_pp2_parse(buf, sizeof(v_tcp4), &in), XLT_PP2_ERR_LENGTH);
	/* a length that promises the block but a buffer that stops inside it: more, not a guess */
	memcpy(buf, v_tcp6, sizeof(v_tcp6));
	assert_int_equal(xlt_pp2_parse(buf, 16 + 20, &in), XLT_PP2_MORE);
	/* AF_INET6 over DGRAM has the block too; UNSPEC protocol has none */
	buf[13] = 0x22;
	assert_int_equal(xlt_pp2_parse(buf, sizeof(v_tcp6), &in), XLT_PP2_OK);
	assert_int_equal(in.addr_len, 36);
	buf[13] = 0x20;
	assert_int_equal(xlt_pp2_parse(buf, sizeof(v_tcp6), &in),
	                 XLT_PP2_ERR_TLV); /* the block reads as TLVs */
}

static void test_parse_golden(void **state)
{
	(void)state;
	struct xlt_pp2_info in;
	uint8_t buf[256];
	size_t off = 0;
	uint8_t type;
	const uint8_t *val;
	uint16_t len;

	assert_int_equal(xlt_pp2_parse(v_tcp4, sizeof(v_tcp4), &in), XLT_PP2_OK);
	assert_int_equal(in.len, sizeof(v_tcp4));
	assert_int_equal(in.command, XLT_PP2_CMD_PROXY);
	assert_int_equal(in.family, XLT_PP2_AF_INET);
	assert_int_equal(in.proto, XLT_PP2_PROTO_STREAM);
	assert_int_equal(xlt_ip_to_v4(&in.src_addr), inet_addr("198.18.0.2"));
	assert_int_equal(xlt_ip_to_v4(&in.dst_addr), inet_addr("198.18.0.1"));
	assert_int_equal(in.src_port, 40000);
	assert_int_equal(in.dst_port, 8000);
	assert_int_equal(in.tlv_len, 0);

	/* bytes after the header (the client's data in the same segment) are not the header's */
	memcpy(buf, v_tcp4_tlv, sizeof(v_tcp4_tlv));
	memcpy(buf + sizeof(v_tcp4_tlv), "GET / HTTP/1.0\r\n", 16);
	assert_int_equal(xlt_pp2_parse(buf, sizeof(v_tcp4_tlv) + 16, &in), XLT_PP2_OK);
	assert_int_equal(in.len, sizeof(v_tcp4_tlv));
	assert_int_equal(in.tlv_len, 51);
	assert_true(xlt_pp2_tlv_next(&in, &off, &type, &val, &len));
	assert_int_equal(type, XLT_PP2_TYPE_UNIQUE_ID);
	assert_int_equal(len, 16);
	assert_memory_equal(val, "00000000000000a1", 16);
	assert_true(xlt_pp2_tlv_next(&in, &off, &type, &val, &len));
	assert_int_equal(type, 0xE0);
	assert_memory_equal(val, "web", 3);
	assert_true(xlt_pp2_tlv_next(&in, &off, &type, &val, &len));
	assert_int_equal(type, 0xE1);
	assert_int_equal(len, 16);
	assert_int_equal(val[0], 0xFE);
	assert_true(xlt_pp2_tlv_next(&in, &off, &type, &val, &len));
	assert_int_equal(type, 0xE2);
	assert_int_equal(len, 4);
	assert_int_equal(val[3], 0x11);
	assert_false(xlt_pp2_tlv_next(&in, &off, &type, &val, &len));

	assert_int_equal(xlt_pp2_parse(v_local, sizeof(v_local), &in), XLT_PP2_OK);
	assert_int_equal(in.command, XLT_PP2_CMD_LOCAL);
	assert_int_equal(in.family, XLT_PP2_AF_UNSPEC);
	assert_int_equal(in.len, 16);
	assert_int_equal(xlt_pp2_parse(v_unspec, sizeof(v_unspec), &in), XLT_PP2_OK);
	assert_int_equal(in.command, XLT_PP2_CMD_PROXY);
	assert_int_equal(in.family, XLT_PP2_AF_UNSPEC);
	assert_int_equal(in.addr_len, 0);
	assert_int_equal(in.tlv_len, 6);
}

/* Every strict prefix of a valid header asks for more, with the right total once the length is seen. */
static void test_parse_prefixes(void **state)
{
	(void)state;
	struct xlt_pp2_info in;

	for (size_t k = 0; k < sizeof(v_tcp4_tlv); k++) {
		assert_int_equal(xlt_pp2_parse(v_tcp4_tlv, k, &in), XLT_PP2_MORE);
		assert_int_equal(in.len, k < 16 ? 16 : sizeof(v_tcp4_tlv));
	}
}

static enum xlt_pp2_result parse_mod(const uint8_t *v, size_t n, size_t at, uint8_t val, size_t give)
{
	uint8_t buf[1024];
	struct xlt_pp2_info in;

	memcpy(buf, v, n);
	buf[at] = val;
	return xlt_pp2_parse(buf, give, &in);
}

static void test_parse_hostile(void **state)
{
	(void)state;
	struct xlt_pp2_info in;
	uint8_t buf[1024];
	const size_t n = sizeof(v_tcp4);

	/* wrong signature: refused as soon as a differing byte is seen, even before 16 bytes */
	assert_int_equal(xlt_pp2_parse((const uint8_t *)"GET / HTTP/1.1\r\n", 16, &in),
	                 XLT_PP2_ERR_SIGNATURE);
	assert_int_equal(xlt_pp2_parse((const uint8_t *)"G", 1, &in), XLT_PP2_ERR_SIGNATURE);
	assert_int_equal(xlt_pp2_parse((const uint8_t *)"PROXY TCP4 ", 11, &in), XLT_PP2_ERR_SIGNATURE);
	assert_int_equal(parse_mod(v_tcp4, n, 11, 0x0B, 12), XLT_PP2_ERR_SIGNATURE);
	assert_int_equal(parse_mod(v_tcp4, n, 4, 0x01, n), XLT_PP2_ERR_SIGNATURE);
	/* version 1 in binary form, and version 3; unassigned commands */
	assert_int_equal(parse_mod(v_tcp4, n, 12, 0x11, 13), XLT_PP2_ERR_VERSION);
	assert_int_equal(parse_mod(v_tcp4, n, 12, 0x31, n), XLT_PP2_ERR_VERSION);
	assert_int_equal(parse_mod(v_tcp4, n, 12, 0x22, n), XLT_PP2_ERR_COMMAND);
	assert_int_equal(parse_mod(v_tcp4, n, 12, 0x2F, 14), XLT_PP2_ERR_COMMAND);
	/* unassigned family (4) and protocol (3) */
	assert_int_equal(parse_mod(v_tcp4, n, 13, 0x41, 14), XLT_PP2_ERR_FAMILY);
	assert_int_equal(parse_mod(v_tcp4, n, 13, 0x13, n), XLT_PP2_ERR_FAMILY);
	/* length short of the address block: TCP4 needs 12, IPv6 36, UNIX 216 */
	assert_int_equal(parse_mod(v_tcp4, n, 15, 0x08, n), XLT_PP2_ERR_LENGTH);
	assert_int_equal(parse_mod(v_tcp4, n, 13, 0x21, n), XLT_PP2_ERR_LENGTH);
	assert_int_equal(parse_mod(v_tcp4, n, 13, 0x31, n), XLT_PP2_ERR_LENGTH);
	/* length beyond the buffer: wants more (the caller's timeout bounds the wait)... */
	assert_int_equal(parse_mod(v_tcp4, n, 15, 0x40, n), XLT_PP2_MORE);
	/* ... but never beyond XLT_PP2_MAX_LEN (16 + 520 is the largest allowed) */
	memcpy(buf, v_tcp4, n);
	buf[14] = 0x02, buf[15] = 0x09; /* 521 */
	assert_int_equal(xlt_pp2_parse(buf, n, &in), XLT_PP2_ERR_TOO_LONG);
	buf[14] = 0xFF, buf[15] = 0xFF;
	assert_int_equal(xlt_pp2_parse(buf, 16, &in), XLT_PP2_ERR_TOO_LONG);
	buf[14] = 0x02, buf[15] = 0x08; /* 520: a NOOP TLV of 505 bytes fills it */
	buf[28] = XLT_PP2_TYPE_NOOP, buf[29] = 0x01, buf[30] = 0xF9;
	memset(buf + 31, 0, 505);
	assert_int_equal(xlt_pp2_parse(buf, 536, &in), XLT_PP2_OK);
	assert_int_equal(in.len, XLT_PP2_MAX_LEN);

	/* TLVs that overrun the header: a value longer than what is left, a TLV header cut short */
	memcpy(buf, v_tcp4, n);
	buf[15] = 12 + 3 + 4;
	buf[28] = 0xE0, buf[29] = 0x00, buf[30] = 0x05, memcpy(buf + 31, "abcd", 4);
	assert_int_equal(xlt_pp2_parse(buf, n + 7 + 10, &in), XLT_PP2_ERR_TLV);
	buf[15] = 12 + 2;
	assert_int_equal(xlt_pp2_parse(buf, n + 2, &in), XLT_PP2_ERR_TLV);
	buf[15] = 12 + 3 + 4, buf[30] = 0x04;
	assert_int_equal(xlt_pp2_parse(buf, n + 7, &in), XLT_PP2_OK);
	/* a TLV length of 0xFF10 deep in the header (the GID TLV) */
	assert_int_equal(parse_mod(v_tcp4_tlv, sizeof(v_tcp4_tlv), 54, 0xFF, sizeof(v_tcp4_tlv)),
	                 XLT_PP2_ERR_TLV);
	/* a CRC32C TLV must be 4 bytes */
	memcpy(buf, v_tcp4, n);
	buf[15] = 12 + 3 + 2;
	buf[28] = XLT_PP2_TYPE_CRC32C, buf[29] = 0, buf[30] = 2;
	assert_int_equal(xlt_pp2_parse(buf, n + 5, &in), XLT_PP2_ERR_TLV);
}

/* LOCAL: the block is discarded, family included, whatever it says (the spec; HAProxy sends LOCAL
 * with its own family and addresses, and may add TLVs); only its length counts. They were refused
 * (length, family, tlv). PROXY keeps every check. */
static void test_parse_local_lenient(void **state)
{
	(void)state;
	struct xlt_pp2_info in;
	uint8_t buf[64];
	const size_t n = sizeof(v_tcp4);

	memcpy(buf, v_tcp4, n);
	buf[12] = 0x20; /* LOCAL, TCP over IPv4, length 0 */
	buf[15] = 0;
	assert_int_equal(xlt_pp2_parse(buf, 16, &in), XLT_PP2_OK);
	assert_int_equal(in.len, 16);
	assert_int_equal(in.command, XLT_PP2_CMD_LOCAL);
	assert_int_equal(in.family, XLT_PP2_AF_UNSPEC);
	assert_true(xlt_ip_is_any(&in.src_addr));
	buf[13] = 0x41; /* an unassigned family */
	assert_int_equal(xlt_pp2_parse(buf, 14, &in), XLT_PP2_MORE);
	assert_int_equal(xlt_pp2_parse(buf, 16, &in), XLT_PP2_OK);
	buf[13] = 0x11, buf[15] = 12 + 3; /* addresses, then a TLV header whose value overruns */
	buf[28] = 0xE0, buf[29] = 0x00, buf[30] = 0x09;
	assert_int_equal(xlt_pp2_parse(buf, 30, &in), XLT_PP2_MORE);
	assert_int_equal(xlt_pp2_parse(buf, 31, &in), XLT_PP2_OK);
	assert_int_equal(in.len, 31);
	assert_int_equal(in.tlv_len, 0);
	buf[14] = 0x02, buf[15] = 0x09; /* still bounded: 16 + 521 */
	assert_int_equal(xlt_pp2_parse(buf, 16, &in), XLT_PP2_ERR_TOO_LONG);
	/* PROXY with the same bytes: refused as before */
	memcpy(buf, v_tcp4, n);
	buf[13] = 0x41;
	assert_int_equal(xlt_pp2_parse(buf, n, &in), XLT_PP2_ERR_FAMILY);
	buf[13] = 0x11, buf[15] = 0;
	assert_int_equal(xlt_pp2_parse(buf, n, &in), XLT_PP2_ERR_LENGTH);
}

static void test_crc32c(void **state)
{
	(void)state;
	uint8_t buf[64];
	struct xlt_pp2_info in;
	uint32_t crc;
	const size_t n = sizeof(v_tcp4);

	/* the standard check value of CRC-32C (Castagnoli) */
	assert_int_equal(xlt_pp2_crc32c((const uint8_t *)"123456789", 9), 0xE3069283u);
	/* a header with a CRC32C TLV: computed over the header with the field zeroed (spec 2.2.3) */
	memcpy(buf, v_tcp4, n);
	buf[15] = 12 + 7;
	buf[28] = XLT_PP2_TYPE_CRC32C, buf[29] = 0, buf[30] = 4;
	memset(buf + 31, 0, 4);
	crc = xlt_pp2_crc32c(buf, n + 7);
	buf[31] = (uint8_t)(crc >> 24), buf[32] = (uint8_t)(crc >> 16), buf[33] = (uint8_t)(crc >> 8);
	buf[34] = (uint8_t)crc;
	assert_int_equal(xlt_pp2_parse(buf, n + 7, &in), XLT_PP2_OK);
	buf[19] ^= 1; /* the source address changed in transit */
	assert_int_equal(xlt_pp2_parse(buf, n + 7, &in), XLT_PP2_ERR_CRC);
	buf[19] ^= 1;
	buf[34] ^= 0x80;
	assert_int_equal(xlt_pp2_parse(buf, n + 7, &in), XLT_PP2_ERR_CRC);
}

/* Random bytes after a valid signature: never a crash, never a header longer than the input or the
 * bound, and whatever is accepted has TLVs that walk to their exact end. */
static void test_parse_random(void **state)
{
	(void)state;
	uint8_t buf[600];
	struct xlt_pp2_info in;

	srand(1);
	for (int i = 0; i < 200000; i++) {
		size_t n = (size_t)rand() % sizeof(buf);
		for (size_t k = 0; k < n; k++)
			buf[k] = (uint8_t)rand();
		memcpy(buf, xlt_pp2_sig, n < 12 ? n : 12);
		if (n > 12)
			buf[12] = (uint8_t)(0x20 | (buf[12] & 1));
		if (n > 15)
			buf[14] = (uint8_t)(buf[14] & 1);
		enum xlt_pp2_result r = xlt_pp2_parse(buf, n, &in);
		if (r == XLT_PP2_OK) {
			size_t off = 0, seen = 0;
			uint8_t t;
			const uint8_t *v;
			uint16_t l;
			assert_true(in.len <= n && in.len <= XLT_PP2_MAX_LEN);
			while (xlt_pp2_tlv_next(&in, &off, &t, &v, &l))
				seen += 3 + (size_t)l;
			assert_int_equal(seen, in.tlv_len);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_build_golden),   cmocka_unit_test(test_parse_golden),
	    cmocka_unit_test(test_build_v6),       cmocka_unit_test(test_parse_v6),
	    cmocka_unit_test(test_parse_prefixes), cmocka_unit_test(test_parse_hostile),
	    cmocka_unit_test(test_parse_local_lenient),
	    cmocka_unit_test(test_crc32c),         cmocka_unit_test(test_parse_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
