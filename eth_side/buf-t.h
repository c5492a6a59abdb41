/* Types of the connection byte buffers (see buf.h). */
#ifndef ETH_BUF_T_H
#define ETH_BUF_T_H

#include <stddef.h>
#include <stdint.h>

#define ETH_CHUNK_SIZE 8192u
#define ETH_CHUNK_DATA (ETH_CHUNK_SIZE - 64u) /* the data stays cache-line aligned */

struct eth_chunk {
	/* a queue's chain, or the pool's free list. Hand-linked, not sys/queue.h: trim cuts a chain
	 * after its Nth chunk, which glibc's STAILQ can only do by writing its head's fields itself. */
	struct eth_chunk *next;
	/* in a queue, the chunk ETH_CHUNK_SKIP places on, for those that have one (buf.c find): a
	 * peer aiming segments anywhere in a big receive window must not make each a walk of the chain */
	struct eth_chunk *skip;
	uint8_t pad_[64 - 2 * sizeof(void *)];
	uint8_t data[ETH_CHUNK_DATA];
};

/* One worker's chunks: a reserved, lazily touched region carved by a bump index plus a LIFO free
 * list, so memory becomes resident only as buffers really fill and hot chunks are reused first. */
struct eth_chunk_pool {
	uint8_t *base;
	size_t bytes;	   /* reserved */
	uint32_t n_max;	   /* chunks the region holds */
	uint32_t n_carved; /* chunks ever handed out (touched) */
	uint32_t n_used;   /* chunks in buffers now */
	struct eth_chunk *free;
};

/* A bounded byte queue made of chunks. Byte 0 is the oldest byte; [0, len) is contiguous data;
 * chunks may cover more (data written ahead of a gap: TCP out-of-order segments). */
struct eth_bufq {
	struct eth_chunk *head, *tail;
	uint32_t head_off; /* where byte 0 sits in the head chunk */
	uint32_t n_chunks;
	uint32_t len;	   /* contiguous bytes from byte 0 */
	uint32_t cap;	   /* bytes the queue may hold at most (the configured buffer size) */
	struct eth_chunk *cur; /* access cursor: a chunk and its index from head (NULL: none) */
	uint32_t cur_idx;
	/* the chunk at index n_chunks - ETH_CHUNK_SKIP, whose skip the next chunk appended becomes
	 * (NULL while fewer chunks): the chunks before it have theirs */
	struct eth_chunk *skip_src;
};

#define ETH_CHUNK_SKIP 64u

#endif
