/* SYN cookies (RFC 4987 3.6): when a listener's share of the half-open table is full, the SYN-ACK's
 * sequence number carries what the connection needs and no state is kept; the ACK that comes back
 * (ACK number - 1 = the cookie) rebuilds the connection once the cookie proves genuine.
 *
 * A cookie is 32 bits:
 *   bits 0-2   the peer's MSS as an index into a table (rounded down: never more than it offered)
 *   bit  3     the peer sent timestamps: its window scale and SACK-permitted ride in the low 6 bits
 *              of our TSval, which the ACK echoes in TSecr (as Linux does); without timestamps there
 *              is no room for them, so the SYN-ACK offers neither
 *   bit  4     the parity of the time slot (64 s) the cookie was made in: a cookie is valid in its
 *              slot and the next one, 64 to 128 s
 *   bits 5-31  a MAC: SipHash-2-4 under the worker's secret of the 4-tuple (full addresses of either
 *              family), the peer's ISN, the full
 *              slot number, the fields above, the 6 option bits (with timestamps) and our own window
 *              scale (so a listener re-opened with another buffer size fails old cookies rather than
 *              scaling windows wrongly)
 * A blind forgery succeeds with probability 2^-27 per try, and only while the listener sends cookies
 * (eth_syncookie_check is only asked then). Pure functions, no DPDK: unit-tested on their own. */
#ifndef ETH_SYNCOOKIE_H
#define ETH_SYNCOOKIE_H

#include <stdbool.h>
#include <stdint.h>

#include "siphash.h"
#include "../translate/ip-t.h"

#define ETH_SYNCOOKIE_SLOT_MS 64000u /* a cookie lives one to two slots */
#define ETH_SYNCOOKIE_TS_BITS 6      /* low bits of our TSval that carry options */
#define ETH_SYNCOOKIE_NO_WS   0xfu   /* in the TSval bits: the peer sent no window scale */

/* The connection a cookie belongs to: addresses of either family (IPv4 mapped), ports in host order. */
struct eth_syncookie_flow {
	struct xlt_ip raddr, laddr;
	uint16_t rport, lport;
	uint32_t peer_isn;  /* the SYN's sequence number (the ACK's - 1) */
	uint8_t our_wscale; /* the listener's window scale (whether the SYN-ACK offers it or not) */
};

/* What a valid cookie gives back. */
struct eth_syncookie_opts {
	uint16_t mss;   /* the peer's MSS, rounded down to the table */
	bool ts;        /* timestamps in use */
	bool ws_ok;     /* window scaling in use (only with timestamps) */
	uint8_t wscale; /* the peer's shift */
	bool sack;      /* SACK-permitted (only with timestamps) */
};

/* The option bits for our TSval: the peer's window scale (WS_OK/WSCALE) and SACK-permitted. */
uint8_t eth_syncookie_ts_bits(bool ws_ok, uint8_t wscale, bool sack);

/* Our TSval for a cookie SYN-ACK: NOW_TS with its low bits replaced by BITS, and never above NOW_TS
 * (later segments, stamped from the clock, must not look older to the peer's PAWS). */
uint32_t eth_syncookie_tsval(uint32_t now_ts, uint8_t bits);

/* The cookie for flow F at NOW_MS, the peer offering MSS (0: none), TS (timestamps) and TS_BITS
 * (eth_syncookie_ts_bits, used only with TS). */
uint32_t eth_syncookie_make(const struct eth_siphash_key *k, const struct eth_syncookie_flow *f,
                            uint64_t now_ms, uint16_t mss, bool ts, uint8_t ts_bits);

/* Checks COOKIE (the ACK number - 1) for flow F at NOW_MS. TS says whether the ACK carries a
 * timestamp, TSECR its echo. Returns 0 and fills O, or -EINVAL (a forgery, another flow's cookie,
 * or one older than two slots: its slot number no longer matches the MAC) or -EPROTO (the cookie
 * was made with timestamps and the ACK has none: RFC 7323 3.2 drops such a segment). */
int eth_syncookie_check(const struct eth_siphash_key *k, const struct eth_syncookie_flow *f, uint64_t now_ms,
                        uint32_t cookie, bool ts, uint32_t tsecr, struct eth_syncookie_opts *o);

#endif
