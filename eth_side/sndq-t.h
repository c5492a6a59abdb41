/* Types of the TCP send queue of references (see sndq.h). */
#ifndef ETH_SNDQ_T_H
#define ETH_SNDQ_T_H

#include <stdint.h>

#include "buf-t.h"

struct xlt_hold_ops;

/* One stretch of the send queue: lent memory (held by HOLD), or bytes copied into the connection's
 * chunk queue (sbuf), which holds the copied stretches back to back, in queue order. */
struct eth_sndq_ent {
	const uint8_t *data; /* lent memory; NULL: copied bytes (in sbuf) */
	void *hold;          /* lent: one reference, put when the stretch is acknowledged */
	const struct xlt_hold_ops *hops;
	uint32_t len;
	uint16_t report; /* taken by write_lent: reported through on_sent once acknowledged */
	uint16_t devmem; /* lent: in DPDK's memory (XLT_SEG_DEVMEM), which ETH_OFFLOAD_DEVMEM ports send */
};

/* Entries one connection's queue holds at most: one chunk of the worker's pool. */
#define ETH_SNDQ_ENTS ((uint16_t)(ETH_CHUNK_DATA / sizeof(struct eth_sndq_ent)))

/* A connection's send queue beyond its copies. Without a ring (no write_lent yet, or all sent and
 * acknowledged) every byte of the queue is in sbuf, as before lending existed. Worker only. */
struct eth_sndq {
	struct eth_chunk *ring; /* ETH_SNDQ_ENTS entries, the oldest at head (NULL: none) */
	uint16_t head, n;
	uint32_t lent;     /* bytes of lent entries (the rest of the queue is in sbuf) */
	uint32_t copy_cap; /* sbuf's bytes at most (eth_tcp_params.copy_size), within sbuf.cap */
	uint32_t sent_due; /* acknowledged bytes that write_lent took, for the next on_sent */
	/* where the last frame's payload ended (sndq.c): frames mostly go out in sequence, so the next
	 * one starts in that entry or after it, and a walk from the head would cost the queue's length
	 * per frame. Counted since the ring was made, so acknowledgements leave them valid: entries
	 * popped, bytes acknowledged (in sbuf: copies), the entry's number and where it starts. */
	uint64_t popped, acked, sbuf_acked;
	uint64_t at_ent, at_pos, at_soff;
};

#endif
