/* TCP options: parsing (untrusted input) and writing.
 *
 * Parsing follows RFC 9293 3.1 and 3.10.7: EOL ends the list, NOP is one byte, every other kind has
 * a length byte that must be at least 2 and fit in what is left; a known kind with the wrong length
 * is malformed (RFC 7323 and RFC 2018 fix the lengths). Unknown kinds are skipped by their length.
 * Pure functions, no DPDK: unit-tested and fuzzed. */
#ifndef ETH_TCP_OPT_H
#define ETH_TCP_OPT_H

#include <stddef.h>

#include "tcp_opt-t.h"

/* Parses LEN bytes of options at P into O (zeroed first). SYN says whether the segment is a SYN:
 * MSS, window scale and SACK-permitted count only there (RFC 9293, RFC 7323, RFC 2018).
 * Returns 0, or -EBADMSG when the options are malformed (O then holds what came before). */
int eth_tcp_opt_parse(const uint8_t *p, size_t len, bool syn, struct eth_tcp_opts *o);

/* Options of a SYN or SYN-ACK: MSS, then SACK-permitted, timestamps and window scale as asked
 * (WSCALE < 0: none). Writes at most 20 bytes at P (padded to 4). Returns the length written. */
unsigned eth_tcp_opt_write_syn(uint8_t *p, uint16_t mss, bool sack, bool ts, uint32_t tsval, uint32_t tsecr,
			       int wscale);

/* Options of a synchronized segment: timestamps when TS, then up to N SACK blocks that fit in
 * 40 bytes (3 with timestamps, 4 without). Returns the length written (multiple of 4, <= 40). */
unsigned eth_tcp_opt_write(uint8_t *p, bool ts, uint32_t tsval, uint32_t tsecr, const struct eth_sack_block *sack,
			   unsigned n);

#endif
