/* The TCP send queue with references (issue #14): bytes a session lends (xlt_stream_ops.write_lent)
 * stay in their owner's memory, the queue keeps (pointer, length, hold), and frames carry that
 * memory as external mbuf buffers. Bytes written with write() (and lent without a hold) are copied:
 * in lending mode (eth_tcp_params.copy_size) into mbufs of the stack's pool, queued like lent memory,
 * so that the connection takes no chunk for its send queue; otherwise into the connection's chunks
 * as before. Both kinds count against the configured send buffer alike. Worker only. */
#ifndef ETH_SNDQ_H
#define ETH_SNDQ_H

#include <stdbool.h>
#include <stddef.h>

#include "engine-t.h"

struct rte_ipv4_hdr;

/* Bytes in the send queue, from snd_una: sent and not acknowledged, then not sent yet. */
static inline uint32_t eth_sndq_len(const struct eth_tcb *t)
{
	return t->sbuf.len + t->sndq.copied + t->sndq.lent;
}

static inline uint32_t eth_sndq_space(const struct eth_tcb *t)
{
	return t->sbuf.cap > eth_sndq_len(t) ? t->sbuf.cap - eth_sndq_len(t) : 0;
}

/* Bytes a copy may add now: room in the send buffer and under its copy cap. (Copies are in sbuf or,
 * in lending mode, in mbufs: one of the two counts is 0.) */
static inline uint32_t eth_sndq_copy_space(const struct eth_tcb *t)
{
	uint32_t copies = t->sbuf.len + t->sndq.copied;
	uint32_t cap = t->sndq.copy_cap > copies ? t->sndq.copy_cap - copies : 0;
	uint32_t space = eth_sndq_space(t);

	return cap < space ? cap : space;
}

/* write(): copies up to LEN bytes in; returns how many fit (in lending mode none while the pool is
 * low or dry: the caller marks the direction blocked, the session retries). */
uint32_t eth_sndq_write(struct eth_tcb *t, const uint8_t *data, uint32_t len);

/* The stream's write_lent op (struct xlt_stream_ops). */
size_t eth_sndq_write_lent(struct xlt_stream *s, const struct xlt_seg *segs, unsigned n);

/* Appends the queue's bytes [OFF, OFF + LEN) to frame M: lent ones as mbufs attached to their memory
 * (each holding a reference until the mbuf is freed) where the port takes them, copied otherwise.
 * Returns 0 or -ENOMEM (the caller frees M, which puts what it took). */
int eth_sndq_payload(struct eth_tcb *t, struct rte_mbuf *m, uint32_t off, uint32_t len);

/* The peer acknowledged the first N bytes: drops them, puts their references, and queues their
 * report (ETH_EV_SENT) for the bytes write_lent took. */
void eth_sndq_ack(struct eth_tcb *t, uint32_t n);

/* Empties the queue (puts every reference). DROP_REPORT: forget acknowledged bytes not reported yet
 * (the connection was aborted or reset: it reports nothing more). */
void eth_sndq_free(struct eth_tcb *t, bool drop_report);

#endif
