/* TCP option parsing and writing (design in tcp_opt.h).
 *
 * Reads are byte-wise (options are unaligned); lengths are checked before every read, so no input
 * can make the parser look past LEN. A malformed list stops the parse: RFC 9293 leaves the reaction
 * to us, and dropping the segment (the caller counts it) is safer than guessing what the rest says. */
#include <errno.h>
#include <string.h>

#include "tcp_opt.h"

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

int eth_tcp_opt_parse(const uint8_t *p, size_t len, bool syn, struct eth_tcp_opts *o)
{
	size_t i = 0;

	memset(o, 0, sizeof(*o));
	while (i < len) {
		uint8_t kind = p[i], olen;

		if (kind == ETH_TCPOPT_EOL)
			break;
		if (kind == ETH_TCPOPT_NOP) {
			i++;
			continue;
		}
		if (len - i < 2)
			return -EBADMSG;
		olen = p[i + 1];
		if (olen < 2 || olen > len - i)
			return -EBADMSG;
		switch (kind) {
		case ETH_TCPOPT_MSS:
			if (olen != 4)
				return -EBADMSG;
			if (syn) {
				o->mss_ok = true;
				o->mss = rd16(p + i + 2);
			}
			break;
		case ETH_TCPOPT_WSCALE:
			if (olen != 3)
				return -EBADMSG;
			if (syn) {
				o->ws_ok = true;
				o->wscale = p[i + 2] > ETH_TCP_MAX_WSCALE ? ETH_TCP_MAX_WSCALE : p[i + 2];
			}
			break;
		case ETH_TCPOPT_SACK_PERM:
			if (olen != 2)
				return -EBADMSG;
			if (syn)
				o->sack_ok = true;
			break;
		case ETH_TCPOPT_TS:
			if (olen != 10)
				return -EBADMSG;
			o->ts_ok = true;
			o->tsval = rd32(p + i + 2);
			o->tsecr = rd32(p + i + 6);
			break;
		case ETH_TCPOPT_SACK:
			if (olen < 10 || (olen - 2) % 8)
				return -EBADMSG;
			o->n_sack = 0;
			for (unsigned b = 0; b < (unsigned)(olen - 2) / 8 && b < ETH_TCP_MAX_SACK; b++) {
				o->sack[b].start = rd32(p + i + 2 + 8 * b);
				o->sack[b].end = rd32(p + i + 6 + 8 * b);
				o->n_sack++;
			}
			break;
		default:
			break; /* unknown: skipped by its length */
		}
		i += olen;
	}
	return 0;
}

unsigned eth_tcp_opt_write_syn(uint8_t *p, uint16_t mss, bool sack, bool ts, uint32_t tsval, uint32_t tsecr,
			       int wscale)
{
	unsigned n = 0;

	p[n++] = ETH_TCPOPT_MSS;
	p[n++] = 4;
	wr16(p + n, mss);
	n += 2;
	if (sack && ts) {
		p[n++] = ETH_TCPOPT_SACK_PERM; /* the Linux layout: SACK-permitted takes the TS option's NOPs */
		p[n++] = 2;
	} else if (ts) {
		p[n++] = ETH_TCPOPT_NOP;
		p[n++] = ETH_TCPOPT_NOP;
	}
	if (ts) {
		p[n++] = ETH_TCPOPT_TS;
		p[n++] = 10;
		wr32(p + n, tsval);
		wr32(p + n + 4, tsecr);
		n += 8;
	} else if (sack) {
		p[n++] = ETH_TCPOPT_NOP;
		p[n++] = ETH_TCPOPT_NOP;
		p[n++] = ETH_TCPOPT_SACK_PERM;
		p[n++] = 2;
	}
	if (wscale >= 0) {
		p[n++] = ETH_TCPOPT_NOP;
		p[n++] = ETH_TCPOPT_WSCALE;
		p[n++] = 3;
		p[n++] = (uint8_t)wscale;
	}
	return n;
}

unsigned eth_tcp_opt_write(uint8_t *p, bool ts, uint32_t tsval, uint32_t tsecr, const struct eth_sack_block *sack,
			   unsigned n_sack)
{
	unsigned n = 0, max = ts ? 3 : 4;

	if (ts) {
		p[n++] = ETH_TCPOPT_NOP;
		p[n++] = ETH_TCPOPT_NOP;
		p[n++] = ETH_TCPOPT_TS;
		p[n++] = 10;
		wr32(p + n, tsval);
		wr32(p + n + 4, tsecr);
		n += 8;
	}
	if (n_sack > max)
		n_sack = max;
	if (n_sack) {
		p[n++] = ETH_TCPOPT_NOP;
		p[n++] = ETH_TCPOPT_NOP;
		p[n++] = ETH_TCPOPT_SACK;
		p[n++] = (uint8_t)(2 + 8 * n_sack);
		for (unsigned b = 0; b < n_sack; b++) {
			wr32(p + n, sack[b].start);
			wr32(p + n + 4, sack[b].end);
			n += 8;
		}
	}
	return n;
}
