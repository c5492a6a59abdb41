/* Helpers over struct xlt_ip (ip-t.h): building, testing, formatting and parsing addresses of
 * either family. Pure functions: no allocation, no I/O. */
#ifndef XLT_IP_H
#define XLT_IP_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ip-t.h"

/* The IPv4 address A (network byte order) as an IPv4-mapped address. */
static inline struct xlt_ip xlt_ip_v4(uint32_t a)
{
	struct xlt_ip ip = {.b = {[10] = 0xff, [11] = 0xff}};

	memcpy(&ip.b[12], &a, 4);
	return ip;
}

static inline bool xlt_ip_is_v4(const struct xlt_ip *ip)
{
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};

	return memcmp(ip->b, mapped, sizeof(mapped)) == 0;
}

/* The IPv4 address (network byte order) of a mapped address; 0 for an IPv6 one. */
static inline uint32_t xlt_ip_to_v4(const struct xlt_ip *ip)
{
	uint32_t a = 0;

	if (xlt_ip_is_v4(ip))
		memcpy(&a, &ip->b[12], 4);
	return a;
}

static inline bool xlt_ip_eq(const struct xlt_ip *a, const struct xlt_ip *b)
{
	return memcmp(a->b, b->b, sizeof(a->b)) == 0;
}

/* The unspecified address of either family (:: or 0.0.0.0): "any" in a listener, "unset" elsewhere. */
static inline bool xlt_ip_is_any(const struct xlt_ip *ip)
{
	static const struct xlt_ip zero;

	return xlt_ip_eq(ip, &zero) || (xlt_ip_is_v4(ip) && xlt_ip_to_v4(ip) == 0);
}

/* Whether IP lies in network C. */
static inline bool xlt_cidr_match(const struct xlt_cidr *c, const struct xlt_ip *ip)
{
	unsigned int full = c->prefix / 8, rest = c->prefix % 8;

	if (c->prefix > 128) /* never made by xlt_cidr_make/parse; a stray value must not read past b[] */
		return false;
	if (memcmp(c->net.b, ip->b, full) != 0)
		return false;
	return rest == 0 || ((c->net.b[full] ^ ip->b[full]) & (uint8_t)(0xff00 >> rest)) == 0;
}

/* The network of IP with PREFIX bits (0..128 in the mapped space); host bits cleared. */
struct xlt_cidr xlt_cidr_make(const struct xlt_ip *ip, unsigned int prefix);

/* Writes IP as text into BUF (XLT_IP_STRLEN bytes): dotted quad for IPv4, RFC 5952 for IPv6.
 * Returns BUF. */
const char *xlt_ip_fmt(const struct xlt_ip *ip, char buf[XLT_IP_STRLEN]);

/* Parses a dotted quad or an IPv6 address (no brackets, no zone) into *IP. Returns 0, or -EINVAL. */
int xlt_ip_parse(const char *s, struct xlt_ip *ip);

/* Parses "ADDR" or "ADDR/N" (N counted in ADDR's own family: 0..32 or 0..128) into *C with host bits
 * cleared; no /N is a host route. Returns 0, or -EINVAL. */
int xlt_cidr_parse(const char *s, struct xlt_cidr *c);

#endif
