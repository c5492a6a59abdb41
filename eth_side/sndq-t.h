/* Types of the TCP send queue of references (see sndq.h). */
#ifndef ETH_SNDQ_T_H
#define ETH_SNDQ_T_H

#include <stdbool.h>
#include <stdint.h>

#include "buf-t.h"

struct xlt_hold_ops;

/* One stretch of the send queue: memory held by HOLD (lent, or in lending mode a copy in an mbuf of
 * the stack's pool, held by its reference count), or bytes copied into the connection's chunk queue
 * (sbuf), which holds the copied stretches back to back, in queue order. */
struct eth_sndq_ent {
	const uint8_t *data; /* lent memory or a copy's mbuf; NULL: copied bytes (in sbuf) */
	void *hold;          /* one reference, put when the stretch is acknowledged */
	const struct xlt_hold_ops *hops;
	uint32_t len;
	uint8_t report; /* taken by write_lent: reported through on_sent once acknowledged */
	uint8_t devmem; /* in DPDK's heap (XLT_SEG_DEVMEM, a copy's mbuf): ETH_OFFLOAD_DEVMEM ports send it */
	uint8_t copy;   /* lending mode: a copy in HOLD, an mbuf (its bytes end at its data_len) */
};

/* Entries a queue that does not lend holds at most: one chunk of the worker's pool. */
#define ETH_SNDQ_ENTS ((uint16_t)(ETH_CHUNK_DATA / sizeof(struct eth_sndq_ent)))

/* Entries a lending queue holds at most, inside the connection block. Few suffice: the IB side lends
 * the contiguous bytes of its receive ring under one hold, which merge into one entry, so a queue
 * holds the ring's wrap (a second entry) and a copy mbuf or two (a PROXY header, a segment without
 * a hold); a full ring only makes write_lent take nothing until acknowledgements free entries. */
#define ETH_SNDQ_INLINE 16u

/* A connection's send queue. In lending mode (eth_tcp_params.copy_size, a route between IB and TCP)
 * every stretch is an entry of the inline ring, copies included, and the queue takes no chunk at all.
 * Otherwise, without a ring (no write_lent yet, or all sent and acknowledged) every byte of the queue
 * is in sbuf, as before lending existed, and the first write_lent takes a chunk for the ring.
 * Worker only. */
struct eth_sndq {
	struct eth_chunk *ring; /* not lending: ETH_SNDQ_ENTS entries, the oldest at head (NULL: none) */
	bool lends;             /* lending mode: the ring is inl, copies are in mbufs */
	uint16_t head, n;
	uint32_t lent;     /* bytes of lent entries (the rest of the queue is in sbuf or copied) */
	uint32_t copied;   /* lending mode: bytes of copy entries (in mbufs; sbuf stays empty) */
	uint32_t copy_cap; /* copied bytes queued at most (eth_tcp_params.copy_size), within sbuf.cap */
	uint32_t sent_due; /* acknowledged bytes that write_lent took, for the next on_sent */
	/* where the last frame's payload ended (sndq.c): frames mostly go out in sequence, so the next
	 * one starts in that entry or after it, and a walk from the head would cost the queue's length
	 * per frame. Counted since the ring was made (lending: since the connection was), so
	 * acknowledgements leave them valid: entries popped, bytes acknowledged (in sbuf: copies), the
	 * entry's number and where it starts. */
	uint64_t popped, acked, sbuf_acked;
	uint64_t at_ent, at_pos, at_soff;
	struct eth_sndq_ent inl[ETH_SNDQ_INLINE]; /* lending mode's ring */
};

#endif
