/* TCP sequence-number arithmetic (RFC 9293 3.4): comparisons modulo 2^32.
 *
 * Sequence numbers wrap, so "a before b" means the signed 32-bit distance from b to a is negative.
 * This holds while the two are less than 2^31 apart, which any valid window (at most 2^30 with
 * window scaling, RFC 7323) guarantees. Everything here is inline and pure: unit-tested on its own. */
#ifndef ETH_TCP_SEQ_H
#define ETH_TCP_SEQ_H

#include <stdbool.h>
#include <stdint.h>

static inline int32_t eth_seq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

static inline bool eth_seq_lt(uint32_t a, uint32_t b)
{
	return eth_seq_diff(a, b) < 0;
}

static inline bool eth_seq_leq(uint32_t a, uint32_t b)
{
	return eth_seq_diff(a, b) <= 0;
}

static inline bool eth_seq_gt(uint32_t a, uint32_t b)
{
	return eth_seq_diff(a, b) > 0;
}

static inline bool eth_seq_geq(uint32_t a, uint32_t b)
{
	return eth_seq_diff(a, b) >= 0;
}

static inline uint32_t eth_seq_max(uint32_t a, uint32_t b)
{
	return eth_seq_gt(a, b) ? a : b;
}

static inline uint32_t eth_seq_min(uint32_t a, uint32_t b)
{
	return eth_seq_lt(a, b) ? a : b;
}

/* LO <= X < HI (an empty range when LO == HI). */
static inline bool eth_seq_in(uint32_t x, uint32_t lo, uint32_t hi)
{
	return eth_seq_geq(x, lo) && eth_seq_lt(x, hi);
}

/* RFC 9293 3.10.7.4, the segment acceptability test: a segment SEQ of LEN octets (SYN and FIN
 * counted) is acceptable in a receive window [RCV_NXT, RCV_NXT + WND) when any part of it falls
 * inside; a zero-length segment when its SEQ does (or equals RCV_NXT when the window is zero). */
static inline bool eth_seq_acceptable(uint32_t seq, uint32_t len, uint32_t rcv_nxt, uint32_t wnd)
{
	/* one deviation, as Linux: an empty segment exactly at the right edge is accepted too. A peer
	 * that filled our window sends its ACKs from there; refusing them while our window is closed
	 * would also refuse the ACKs that let our own sending (and so our reader) go on: a deadlock. */
	if (len == 0)
		return eth_seq_geq(seq, rcv_nxt) && eth_seq_leq(seq, rcv_nxt + wnd);
	if (wnd == 0)
		return false;
	return eth_seq_in(seq, rcv_nxt, rcv_nxt + wnd) || eth_seq_in(seq + len - 1, rcv_nxt, rcv_nxt + wnd);
}

#endif
