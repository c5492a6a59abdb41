/* Connection byte buffers: bounded queues of fixed-size chunks from a per-worker pool.
 *
 * Why chunks: a connection's configured buffer (tcp_rbuf/tcp_sbuf, up to 64 MB) is only an upper
 * bound; memory is taken a chunk at a time as data arrives and given back as it is consumed, so an
 * idle connection holds none (what lets 10,000 idle connections fit in a few KiB each) and the pool
 * never runs on malloc. Random access (TCP retransmissions, out-of-order data) walks the chunk list
 * from a cursor that sequential access keeps warm. Pure C, no DPDK: unit-testable.
 * One worker owns a pool and its queues; nothing is thread-safe. */
#ifndef ETH_BUF_H
#define ETH_BUF_H

#include <stdbool.h>

#include "buf-t.h"

/* Reserves BYTES of address space for chunks (touched only when used). Returns 0 or -errno. */
int eth_chunk_pool_init(struct eth_chunk_pool *p, size_t bytes);
void eth_chunk_pool_fini(struct eth_chunk_pool *p);

/* An empty queue holding at most CAP bytes. */
void eth_bufq_init(struct eth_bufq *q, uint32_t cap);

/* Writes N bytes at offset OFF (OFF + N <= cap) without changing len: for data past a gap, or
 * appended before eth_bufq_extend. Returns 0, -ENOBUFS past cap, -ENOMEM when the pool is dry
 * (nothing written). */
int eth_bufq_write_at(struct eth_chunk_pool *p, struct eth_bufq *q, uint32_t off, const void *data, uint32_t n);

/* Declares N more contiguous bytes (already written with write_at). */
static inline void eth_bufq_extend(struct eth_bufq *q, uint32_t n)
{
	q->len += n;
}

/* Appends up to N bytes; returns how many fit (cap and pool permitting). */
uint32_t eth_bufq_append(struct eth_chunk_pool *p, struct eth_bufq *q, const void *data, uint32_t n);

/* Contiguous bytes readable at OFF (< len): returns their count (up to the chunk's end) and a
 * pointer in *DATA. Returns 0 when OFF >= len. */
uint32_t eth_bufq_peek(struct eth_bufq *q, uint32_t off, const uint8_t **data);

/* Copies N bytes from offset OFF (OFF + N <= len, or within written data) into DST. */
void eth_bufq_read(struct eth_bufq *q, uint32_t off, void *dst, uint32_t n);

/* Drops the first N bytes (N <= len), returning chunks that no longer hold any byte. */
void eth_bufq_consume(struct eth_chunk_pool *p, struct eth_bufq *q, uint32_t n);

/* Returns the chunks past the contiguous data (and all of them when the queue is empty): call
 * when no data written ahead of a gap must be kept. */
void eth_bufq_trim(struct eth_chunk_pool *p, struct eth_bufq *q);

/* Returns every chunk; the queue is empty and reusable. */
void eth_bufq_free(struct eth_chunk_pool *p, struct eth_bufq *q);

/* One chunk for other uses than a queue (the send queue's entries, sndq.c): NULL when the pool is
 * dry. Given back with eth_chunk_put. */
struct eth_chunk *eth_chunk_get(struct eth_chunk_pool *p);
void eth_chunk_put(struct eth_chunk_pool *p, struct eth_chunk *c);

static inline uint32_t eth_bufq_space(const struct eth_bufq *q)
{
	return q->cap - q->len;
}

#endif
