/* PROXY protocol version 2 (HAProxy's doc/proxy-protocol.txt, section 2.2): building the header ibgwd
 * sends to a TCP destination (route key proxy_protocol = v2) and parsing the one an L4 balancer sends
 * in front of a tcp: listener (accept_proxy = v2).
 *
 * Pure functions over byte buffers: no allocation, no I/O, no clock. The parser treats its input as
 * hostile: every length is checked against the bytes given, TLVs must tile the space after the
 * addresses exactly, and a CRC32C TLV, when present, must match (section 2.2.3). It can be fed a
 * prefix: it says how many bytes it needs in all, and rejects a wrong signature as soon as the bytes
 * seen differ from it, so a client speaking another protocol is refused at once, not after a timeout. */
#ifndef XLT_PROXY_V2_H
#define XLT_PROXY_V2_H

#include <stddef.h>
#include <stdint.h>

#include "ip-t.h"

#define XLT_PP2_SIG_LEN 12
#define XLT_PP2_HDR_LEN 16 /* signature, version/command, family/protocol, length */
/* The largest header accepted: the spec designs headers to fit the smallest TCP segment every host
 * must take (576 - 40 bytes), so a sender never needs more; it bounds what a waiting connection holds. */
#define XLT_PP2_MAX_LEN 536

extern const uint8_t xlt_pp2_sig[XLT_PP2_SIG_LEN];

enum {
	XLT_PP2_CMD_LOCAL = 0x0,
	XLT_PP2_CMD_PROXY = 0x1,
};

enum {
	XLT_PP2_AF_UNSPEC = 0x0,
	XLT_PP2_AF_INET = 0x1,
	XLT_PP2_AF_INET6 = 0x2,
	XLT_PP2_AF_UNIX = 0x3,
};

enum {
	XLT_PP2_PROTO_UNSPEC = 0x0,
	XLT_PP2_PROTO_STREAM = 0x1,
	XLT_PP2_PROTO_DGRAM = 0x2,
};

/* TLV types: the spec's, and the application range ibgwd uses (README, "PROXY protocol"). */
enum {
	XLT_PP2_TYPE_CRC32C = 0x03,
	XLT_PP2_TYPE_NOOP = 0x04,
	XLT_PP2_TYPE_UNIQUE_ID = 0x05,
	XLT_PP2_TYPE_IBGW_ROUTE = 0xE0,  /* route name, UTF-8, 1..32 bytes */
	XLT_PP2_TYPE_IBGW_IB_GID = 0xE1, /* IB peer's port GID, 16 bytes as on the wire */
	XLT_PP2_TYPE_IBGW_IB_QPN = 0xE2, /* IB peer's queue pair number, 4 bytes big-endian */
};

/* What a parse found. For AF_INET and AF_INET6 with an address block: the addresses (IPv4 held
 * IPv4-mapped, ip-t.h; an AF_INET6 block may itself carry v4-mapped addresses, which then read as
 * IPv4) and the ports in host order; for other families only the raw block is given (addr,
 * addr_len), and src_addr/dst_addr stay unspecified. */
struct xlt_pp2_info {
	uint8_t command; /* XLT_PP2_CMD_* */
	uint8_t family;  /* XLT_PP2_AF_* */
	uint8_t proto;   /* XLT_PP2_PROTO_* */
	struct xlt_ip src_addr, dst_addr;
	uint16_t src_port, dst_port;
	const uint8_t *addr; /* the address block as sent (points into the input) */
	size_t addr_len;     /* what the family/protocol pair defines (0 for UNSPEC) */
	const uint8_t *tlv;  /* the TLVs (points into the input) */
	size_t tlv_len;
	size_t len; /* the whole header: 16 + its length field */
};

enum xlt_pp2_result {
	XLT_PP2_OK = 0, /* a complete valid header of info->len bytes */
	XLT_PP2_MORE,   /* valid so far; info->len is the byte count needed in all */
	XLT_PP2_ERR_SIGNATURE,
	XLT_PP2_ERR_VERSION,
	XLT_PP2_ERR_COMMAND,
	XLT_PP2_ERR_FAMILY,   /* unassigned family or protocol nibble */
	XLT_PP2_ERR_LENGTH,   /* length field shorter than the family's address block */
	XLT_PP2_ERR_TOO_LONG, /* above XLT_PP2_MAX_LEN */
	XLT_PP2_ERR_TLV,      /* a TLV runs past the header, or a known TLV has an impossible length */
	XLT_PP2_ERR_CRC,      /* a CRC32C TLV that does not match */
	XLT_PP2_RESULT_COUNT,
};

/* Short names of the results (metric labels): "ok", "more", "signature", "version", ... */
extern const char *const xlt_pp2_result_names[XLT_PP2_RESULT_COUNT];

/* Parses the first N bytes of BUF (BUF may hold more than the header: only info->len bytes are its).
 * Returns XLT_PP2_OK (INFO filled, pointers into BUF), XLT_PP2_MORE (INFO->len = bytes needed, 16
 * until the length field is seen) or an error. */
enum xlt_pp2_result xlt_pp2_parse(const uint8_t *buf, size_t n, struct xlt_pp2_info *info);

/* Walks the TLVs of a header xlt_pp2_parse accepted: *OFF starts at 0. Returns 1 with the next TLV
 * (VAL points into the header), 0 at the end. */
int xlt_pp2_tlv_next(const struct xlt_pp2_info *info, size_t *off, uint8_t *type, const uint8_t **val,
                     uint16_t *len);

/* One TLV to add to a header. */
struct xlt_pp2_tlv {
	uint8_t type;
	uint16_t len;
	const void *val;
};

/* Writes a header into BUF (CAP bytes): command PROXY, TCP from SRC:SPORT to DST:DPORT (ports in host
 * order): over IPv4 (12-byte block) when both are IPv4, over IPv6 (36 bytes) when either is IPv6 (the
 * IPv4 one then v4-mapped, as a dual-stack socket would report it); with SRC NULL or unspecified (a
 * source with no IP address, AF_IB) AF_UNSPEC and no address block. Then the N TLVs in order. DST
 * unspecified with an IP source goes as :: or 0.0.0.0 of the source's family. Returns the header's
 * length, or -ENOSPC when it does not fit CAP (or XLT_PP2_MAX_LEN). */
int xlt_pp2_build(uint8_t *buf, size_t cap, const struct xlt_ip *src, uint16_t sport,
                  const struct xlt_ip *dst, uint16_t dport, const struct xlt_pp2_tlv *tlvs, unsigned n);

/* Writes the LOCAL command (what a health check sends): no address, no TLVs. Returns 16 or -ENOSPC. */
int xlt_pp2_build_local(uint8_t *buf, size_t cap);

/* CRC32C (Castagnoli, RFC 4960 appendix B) of LEN bytes, as the CRC32C TLV carries it. */
uint32_t xlt_pp2_crc32c(const uint8_t *p, size_t len);

#endif
