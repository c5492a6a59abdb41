/* Text forms of struct xlt_ip and prefix arithmetic (ip.h). The inet_pton/inet_ntop of the C library
 * do the parsing; this file only maps IPv4 into the 16-byte form and checks prefix lengths. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ip.h"

struct xlt_cidr xlt_cidr_make(const struct xlt_ip *ip, unsigned int prefix)
{
	struct xlt_cidr c = {.net = *ip, .prefix = prefix > 128 ? 128 : (uint8_t)prefix};
	unsigned int i;

	for (i = 0; i < 16; i++) {
		unsigned int keep = c.prefix > i * 8 ? c.prefix - i * 8 : 0;

		if (keep < 8)
			c.net.b[i] &= (uint8_t)(0xff00 >> keep);
	}
	return c;
}

const char *xlt_ip_fmt(const struct xlt_ip *ip, char buf[XLT_IP_STRLEN])
{
	if (xlt_ip_is_v4(ip))
		inet_ntop(AF_INET, &ip->b[12], buf, XLT_IP_STRLEN);
	else
		inet_ntop(AF_INET6, ip->b, buf, XLT_IP_STRLEN);
	return buf;
}

int xlt_ip_parse(const char *s, struct xlt_ip *ip)
{
	struct in_addr a4;

	if (inet_pton(AF_INET, s, &a4) == 1) {
		*ip = xlt_ip_v4(a4.s_addr);
		return 0;
	}
	if (inet_pton(AF_INET6, s, ip->b) == 1)
		return 0;
	return -EINVAL;
}

int xlt_cidr_parse(const char *s, struct xlt_cidr *c)
{
	char addr[XLT_IP_STRLEN];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	struct xlt_ip ip;
	unsigned long n;
	unsigned int max;
	char *end;

	if (alen == 0 || alen >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	if (xlt_ip_parse(addr, &ip) < 0)
		return -EINVAL;
	max = xlt_ip_is_v4(&ip) ? 32 : 128;
	n = max;
	if (slash) {
		if (slash[1] < '0' || slash[1] > '9')
			return -EINVAL;
		errno = 0;
		n = strtoul(slash + 1, &end, 10);
		if (errno || *end != '\0' || n > max)
			return -EINVAL;
	}
	*c = xlt_cidr_make(&ip, (unsigned int)n + (128 - max));
	return 0;
}
