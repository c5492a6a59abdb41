/* TCP receive queues that keep in-order payload in its frames (see rcvq.c). Worker only. */
#ifndef ETH_RCVQ_H
#define ETH_RCVQ_H

#include <stdbool.h>
#include <stddef.h>

#include "engine-t.h"

struct rte_mbuf;
struct xlt_hold_ops;

/* Holds on an mbuf of the stack's pool (a received frame's buffer, a send queue's copy): get and put
 * are its reference count, put frees it into its pool. Thread-safe: a destination may put from any
 * thread. */
extern const struct xlt_hold_ops eth_mbuf_hops;

/* Whether the stack's mempool is down to a quarter: then nothing pins mbufs that the RX ring may
 * need (a receive queue copies instead), whoever holds the rest. */
bool eth_pool_low(struct eth_stack *st);
/* Whether it is down to a sixteenth: then no copy takes an mbuf either (a lending send queue's, an
 * IB connection's, eth_stack_copy_buf), so that while frames are no longer kept the copies that
 * replace them still flow, and the RX ring keeps the last of the pool. */
bool eth_pool_scarce(struct eth_stack *st);

/* In-order bytes received and not consumed: those in frames, then those in chunks. */
static inline uint32_t eth_rcvq_len(const struct eth_tcb *t)
{
	return t->rq_len + t->rbuf.len;
}

/* Keeps LEN in-order payload bytes of frame M, from packet offset OFF, by reference (each buffer of
 * M that holds some gains a reference of the queue's). Returns false when they must be copied
 * instead (into rbuf's chunks, at its end, as before): chunks hold bytes already (copies or
 * out-of-order data, which come after the frames' bytes), the pieces would be small for the buffers
 * they pin, or the worker's budget of pinned buffers is spent. The caller has checked that LEN fits
 * the window. */
bool eth_rcvq_take(struct eth_tcb *t, const struct rte_mbuf *m, uint32_t off, uint32_t len);

/* Contiguous bytes at the front (what peek shows): returns their count and sets *DATA. */
size_t eth_rcvq_peek(struct eth_tcb *t, const uint8_t **data);

/* Drops the first N bytes (frames first, then chunks); returns how many were dropped. */
uint32_t eth_rcvq_consume(struct eth_tcb *t, uint32_t n);

/* The stream's lend(): segments of the bytes after the first SKIP. */
unsigned eth_rcvq_lend(struct eth_tcb *t, size_t skip, struct xlt_seg *segs, unsigned max);

/* Drops every frame reference (a connection that closes; rbuf's chunks are the caller's). */
void eth_rcvq_free(struct eth_tcb *t);

#endif
