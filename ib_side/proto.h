/* rsocket protocol arithmetic (see proto-t.h and /work/shared/rsocket-protocol.md).
 *
 * Everything here is pure: no verbs, no allocation, no clock. The engine (conn.c) calls it to decide
 * what to post; the unit tests and the fuzz target call it directly. */
#ifndef IB_PROTO_H
#define IB_PROTO_H

#include <stddef.h>

#include "proto-t.h"

/* Immediate data (host order; the wire carries it big-endian). */
static inline uint32_t ib_rs_imm(unsigned op, uint32_t val)
{
	return ((uint32_t)op << 29) | (val & IB_RS_IMM_MASK);
}

static inline unsigned ib_rs_imm_op(uint32_t imm)
{
	return imm >> 29;
}

static inline uint32_t ib_rs_imm_val(uint32_t imm)
{
	return imm & IB_RS_IMM_MASK;
}

/* 16-bit sequence arithmetic: is A before B (modulo 2^16)? */
static inline bool ib_seq_before(uint16_t a, uint16_t b)
{
	return (int16_t)(uint16_t)(a - b) < 0;
}

/* Parses BUF[LEN] (private data at offset 0). Returns 0, -EPROTONOSUPPORT (version is not 1) or
 * -EBADMSG (short, or fields no rsocket peer would send: no credits or more than IB_RS_QP_MAX, a
 * target_sgl that is not 2 entries, an empty or oversized data buffer, null addresses). */
int ib_rs_params_parse(const void *buf, size_t len, struct ib_rs_params *p);

/* Writes P as 40 bytes of private data into BUF. */
void ib_rs_params_format(const struct ib_rs_params *p, void *buf);

/* Writes an sge advert into DST (16 bytes) in the byte order the peer wants (SWAP: byte-swap). */
void ib_rs_sge_encode(void *dst, uint64_t addr, uint32_t key, uint32_t length, bool swap);

/* ---- receive side ---- */

/* SIZE (even, >= 2) bytes of ring; DEPTH credits granted; ENDS holds DEPTH entries. The first half is
 * advertised in the private data, so it counts as advertised already. */
void ib_rx_init(struct ib_rx *rx, uint32_t size, uint16_t depth, uint32_t *ends);

/* A data message of LEN bytes arrived. Returns 0, or -EPROTO when the peer wrote beyond the space it
 * was given, past the end of the ring, or beyond its credits. */
int ib_rx_data(struct ib_rx *rx, uint32_t len);

/* Contiguous unconsumed bytes at ring offset *OFF (0: none). */
uint32_t ib_rx_peek(const struct ib_rx *rx, uint32_t *off);

/* Releases N (<= unconsumed) bytes; counts the messages they complete. */
void ib_rx_consume(struct ib_rx *rx, uint32_t n);

static inline uint64_t ib_rx_pending(const struct ib_rx *rx)
{
	return rx->recvd - rx->consumed;
}

/* What credit message is due now (rsocket's rule: a half of the ring free, or the consumed-message
 * count reached its threshold). */
enum ib_rx_credit ib_rx_credit_due(const struct ib_rx *rx);

/* Records that a credit message goes out; returns the credit edge to put in its immediate. With
 * ADVERT, also returns the ring offset of the half being advertised and the entry of the peer's
 * target_sgl to write it into. */
uint16_t ib_rx_credit_sent(struct ib_rx *rx, bool advert, uint32_t *off, unsigned *remote_idx);

/* The peer cannot send anything until we give space or credits. */
static inline bool ib_rx_peer_blocked(const struct ib_rx *rx)
{
	return rx->recvd == rx->advertised || rx->msgs_recvd == rx->edge;
}

/* ---- send side ---- */

void ib_tx_init(struct ib_tx *tx, uint32_t size, uint32_t wrs_max, uint16_t edge);

/* Free bytes of the send ring (what write() may take). */
static inline uint32_t ib_tx_space(const struct ib_tx *tx)
{
	return tx->size - (uint32_t)(tx->queued - tx->done);
}

/* Takes N (<= space) bytes; returns the ring offset they start at (they may wrap). */
uint32_t ib_tx_queue(struct ib_tx *tx, uint32_t n);

/* Can a data write go out now, and if not, why. TARGET is our target_sgl (2 entries), written by
 * the peer's adverts. IB_TX_BAD_TARGET: the entry to use now holds an absurd advert (the peer broke
 * the protocol). */
enum ib_tx_block ib_tx_blocked(struct ib_tx *tx, const volatile struct ib_rs_sge *target);

/* Plans and commits the next data write (call when ib_tx_blocked() is IB_TX_OK): fills W, consumes
 * target space (moving to the other entry when one is used up), counts the message. */
void ib_tx_next(struct ib_tx *tx, volatile struct ib_rs_sge *target, struct ib_tx_write *w);

/* A data write of LEN bytes completed. */
void ib_tx_done(struct ib_tx *tx, uint32_t len);

/* The peer's private data is known: its receive queue DEPTH (<= IB_RS_QP_MAX) bounds every credit
 * edge it may send, HALF (its data_buf length) is what each of its buffer adverts stands for, and
 * EDGE (passive side: from that private data) is where sending starts unless an SGL message set it
 * already. Returns 0, or -EPROTO when an edge received earlier was beyond DEPTH. */
int ib_tx_peer(struct ib_tx *tx, uint16_t depth, uint32_t half, uint16_t edge);

/* A credit edge from an SGL message. Returns 0, or -EPROTO when it lies further ahead of the
 * messages sent than the peer's depth (its credits count messages it has receives for), or less far
 * ahead of them than the edge before (it went back). Exact for any depth up to IB_RS_QP_MAX. */
int ib_tx_credit(struct ib_tx *tx, uint16_t edge);

/* Whether the buffer adverts received so far (tx->adverts, counted by ib_rs_recv) are all ones the
 * peer earned: its first comes at once, each later one only after it consumed another HALF (see
 * ib_tx_peer) of the bytes we posted, an entry of its adverts we used up. False: the last one is more than a stock rsocket ever sends,
 * a message that cost the peer nothing (the engine's costless window decides). */
bool ib_tx_advert_earned(const struct ib_tx *tx);

/* ---- receive completions ---- */

/* Applies one successful receive completion WC to the connection's state: RX (our ring) and TX (our
 * send side). Checks everything the peer controls against what it may do: byte_len against the
 * immediate, data against the advertised space and our credits, credit edges against the peer's
 * depth (the adverts themselves are checked when used: ib_tx_blocked; how many came is counted in
 * tx->adverts, for ib_tx_advert_earned). Returns what the message
 * was; on IB_RS_MSG_VIOLATION *WHY says which rule was broken and the state is left as it was (the
 * connection is reset anyway). */
enum ib_rs_msg ib_rs_recv(struct ib_rx *rx, struct ib_tx *tx, const struct ib_rs_wc *wc,
			  enum ib_violation *why);

#endif
