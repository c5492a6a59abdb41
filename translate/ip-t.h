/* An IP address of either family, as the translate layer, the config and both engines see it.
 *
 * IPv4 is held IPv4-mapped (::ffff:a.b.c.d, RFC 4291 section 2.5.5.2), so that one 16-byte compare,
 * one hash and one prefix match serve both families, and code that only logs or compares an address
 * never asks which family it is. An IPv4 prefix /n is the mapped prefix /(96 + n). */
#ifndef XLT_IP_T_H
#define XLT_IP_T_H

#include <stdint.h>

/* Longest text xlt_ip_fmt writes, with its NUL (INET6_ADDRSTRLEN). */
#define XLT_IP_STRLEN 46

struct xlt_ip {
	uint8_t b[16]; /* network order */
};

/* A network: host bits of net are clear. */
struct xlt_cidr {
	struct xlt_ip net;
	uint8_t prefix; /* 0..128 over the 16 bytes (an IPv4 /n is 96 + n) */
};

#endif
