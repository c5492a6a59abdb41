/* Lending the receive ring: the IB -> Ethernet direction without copies (issue #14).
 *
 * Design.
 *  - lend() describes the bytes the peer wrote into the connection's receive ring (rbuf) after those
 *    already lent, as at most two segments (the ring wraps once). Lending releases nothing: the
 *    space stays taken, and the credits and buffer adverts for it stay with us, until the session
 *    consume()s the bytes, which it does only when the destination reports them delivered (the TCP
 *    peer ACKed them). So the IB peer gets credit only as the TCP peer acknowledges, and a TCP
 *    retransmission reads the same bytes again.
 *  - The hold of a segment is the buffer set (struct ib_bufs), reference counted: the connection
 *    using it (1, from conn_setup to conn_destroy) plus one per reference a destination took
 *    (a queued segment, a frame pointing at the ring). References are put by the worker (ACKs,
 *    aborts, transmitted frames) and, at shutdown, by the thread freeing frames still queued, so
 *    the count is atomic.
 *  - A set goes back to the pool, where it is cleared and registered anew for the next peer
 *    (struct ib_bufs: isolation), only once its count is 0. When the control thread destroys a
 *    connection whose set still has references out, the set waits on its device's lent list; the
 *    put that drops the last reference pushes it on the device's returned stack (lock-free, any
 *    thread), which the control thread empties on its tick (ib_ctl_tick). After ib_ctl_destroy a
 *    set still referenced is an orphan, freed whole by its last put.
 *  - Segments carry the set's seg_flags: a set whose memory the gateway gave (ib_ctl_bufmem: DPDK's
 *    heap, XLT_SEG_DEVMEM) may be sent from by a port that reaches only that memory (virtio_user);
 *    a set in pages of its own is copied there.
 *  - The ring stays writable by the peer's key while its connection lives: a peer that writes into
 *    bytes it was not given space for (lent, not yet credited) changes only what its own stream
 *    sends, as it could by sending other bytes. Once the connection is gone its queue pair is
 *    destroyed and the memory is only read. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "conn.h"

static void bufs_ref(void *hold)
{
	struct ib_bufs *b = hold;

	atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
}

void ib_bufs_unmap(struct ib_bufs *b)
{
	if (b->mops)
		b->mops->free(b->mops->arg, b->mem, b->len);
	else
		munmap(b->mem, b->len);
	b->mem = NULL;
}

void ib_bufs_release(struct ib_bufs *b)
{
	ib_extmem_dereg(b);
	ibv_dereg_mr(b->smr);
	ibv_dereg_mr(b->rmr);
	ibv_dealloc_pd(b->pd);
	ib_bufs_unmap(b);
	free(b);
}

static void bufs_unref(void *hold)
{
	struct ib_bufs *b = hold;
	struct ib_bufs *top;

	if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
		return;
	/* the last reference: the connection is gone (it holds one until conn_destroy) */
	if (atomic_load_explicit(&b->orphan, memory_order_acquire)) {
		ib_bufs_release(b);
		return;
	}
	top = atomic_load_explicit(&b->dev->returned, memory_order_relaxed);
	do
		b->ret_next = top;
	while (!atomic_compare_exchange_weak_explicit(&b->dev->returned, &top, b, memory_order_release,
	                                              memory_order_relaxed));
}

static const struct xlt_hold_ops bufs_hops = {
    .get = bufs_ref,
    .put = bufs_unref,
};

unsigned ib_conn_lend(struct xlt_stream *s, size_t skip, struct xlt_seg *segs, unsigned max)
{
	struct ib_conn *c = (struct ib_conn *)s;
	const struct ib_rx *rx = &c->rx;
	uint64_t pending, from;
	const uint8_t *p;
	unsigned k = 0;

	if (c->ws != IB_W_OPEN)
		return 0;
	pending = rx->recvd - rx->consumed;
	if (!pending) {
		ib_conn_ops.peek(s, &p); /* it passes the peer's end of stream on (peer_done) */
		return 0;
	}
	if (skip >= pending)
		return 0;
	from = rx->consumed + skip;
	pending -= skip;
	while (pending && k < max) {
		uint32_t off = (uint32_t)(from % rx->size);
		uint32_t n = pending < rx->size - off ? (uint32_t)pending : rx->size - off;

		segs[k++] = (struct xlt_seg){
		    .data = c->bufs->rbuf + off,
		    .len = n,
		    .flags = c->bufs->seg_flags,
		    .hold = c->bufs,
		    .hops = &bufs_hops,
		};
		from += n;
		pending -= n;
	}
	return k;
}

void ib_bufs_lend_init(struct ib_bufs *b)
{
	atomic_store_explicit(&b->refs, 1, memory_order_relaxed);
	atomic_store_explicit(&b->orphan, false, memory_order_relaxed);
	b->ret_next = NULL;
}

bool ib_bufs_conn_done(struct ib_bufs *b, struct ib_ctl_stats *st)
{
	/* the connection's reference; the worker handed the connection back, so it lends no more */
	if (atomic_load_explicit(&b->refs, memory_order_acquire) == 1) {
		atomic_store_explicit(&b->refs, 0, memory_order_relaxed);
		return true;
	}
	/* linked before the count may reach 0 in another thread: the control thread unlinks it when it
	 * finds it on the returned stack, never before */
	LIST_INSERT_HEAD(&b->dev->lent, b, lent_link);
	b->on_lent = true;
	xlt_counter_add(&st->buf_lent, 1); /* read by the workers too (eth_glue.c) */
	bufs_unref(b); /* (if that was the last reference: pushed on the returned stack, pooled at the
			* next tick; else the last put pushes it) */
	return false;
}

struct ib_bufs *ib_bufs_take_returned(struct ib_dev *dev, struct ib_ctl_stats *st)
{
	struct ib_bufs *list = atomic_exchange_explicit(&dev->returned, NULL, memory_order_acquire);

	for (struct ib_bufs *b = list; b; b = b->ret_next) {
		if (b->on_lent) {
			LIST_REMOVE(b, lent_link);
			b->on_lent = false;
			xlt_counter_add(&st->buf_lent, (uint64_t)-1);
		}
	}
	return list;
}

void ib_bufs_orphan_all(struct ib_dev *dev)
{
	while (!LIST_EMPTY(&dev->lent)) {
		struct ib_bufs *b = LIST_FIRST(&dev->lent);

		LIST_REMOVE(b, lent_link);
		b->on_lent = false;
		atomic_store_explicit(&b->orphan, true, memory_order_release);
	}
}
