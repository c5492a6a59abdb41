/* Receive queues of frame references: Ethernet -> IB without copies (issue #14).
 *
 * In-order payload stays in the mbufs it arrived in: the queue keeps a reference to each buffer of
 * the frame that holds some (a piece), and lend() hands those pieces to the destination, which takes
 * references of its own (hops get/put: the mbuf's reference count). An IB destination RDMA-writes
 * straight from them when the mempool is registered with its protection domain (XLT_SEG_EXTMEM).
 * consume() drops the queue's references; a buffer goes back to the pool when its last holder puts
 * it (the IB write completed, or was flushed).
 *
 * Accounting stays that of the chunked buffer (buf.h): the queue is a list of runs, each a piece of a
 * frame or a count of rbuf's bytes (copies), then rbuf's bytes no run covers; rbuf.cap is the
 * configured size less the bytes held in frames, so the advertised window is the free part of the
 * one bounded buffer, out-of-order data lands in rbuf at its offset from rcv_nxt (rbuf's end is
 * always rcv_nxt), and every other use of rbuf is unchanged.
 *
 * Bounds on pinned frames (a pool shared by every connection and by the RX ring itself):
 *  - a piece must carry at least a quarter of its buffer, so frames pinned are at most 4x the bytes
 *    held, whatever the peer sends: a peer of 1-byte segments gets each one copied into chunks;
 *  - while out-of-order data waits in rbuf, in-order bytes are copied in front of it (its offset
 *    counts from rcv_nxt at rbuf's end), as before; once the hole is filled, frames are kept again
 *    behind those copies;
 *  - a worker pins at most half of the pool divided among the workers (and ETH_RSEG_MAX); past it,
 *    segments are copied, so the pool never runs dry for the RX ring;
 *  - nor while the pool is down to a quarter (eth_pool_low): frames a destination still holds after
 *    consume (an IB write in flight, retried for seconds where the peer's HCA stopped
 *    acknowledging) are in no count of ours, and the RX ring must find mbufs whoever holds the rest.
 * Every copy is counted in copied_in (ibgw_copied_bytes_total{dir="eth_to_ib"}) and the fallbacks
 * in rx_pin_copies. */
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "buf.h"
#include "engine.h"
#include "rcvq.h"
#include "stack.h"

static void hold_get(void *hold)
{
	rte_mbuf_refcnt_update(hold, 1);
}

static void hold_put(void *hold)
{
	rte_pktmbuf_free_seg(hold);
}

/* Mbuf reference counts and pool puts are thread-safe: a hold may be put from any thread. */
const struct xlt_hold_ops eth_mbuf_hops = {.get = hold_get, .put = hold_put};

static uint32_t rseg_limit(struct eth_stack *st)
{
	if (!st->rseg_limit) {
		uint32_t n = st->c.pool->size / (2 * st->c.n_workers);
		st->rseg_limit = n < ETH_RSEG_MAX ? (n ? n : 1) : ETH_RSEG_MAX;
	}
	return st->rseg_limit;
}

/* The pool's free mbufs, read at most once a millisecond, when a frame would be kept or a copy would
 * take an mbuf (the count walks every lcore's cache). */
static uint32_t pool_avail(struct eth_stack *st)
{
	if (st->pool_avail_ms != st->now_ms || !st->pool_avail_ms) {
		st->pool_avail_ms = st->now_ms;
		st->pool_avail = rte_mempool_avail_count(st->c.pool);
	}
	return st->pool_avail;
}

bool eth_pool_low(struct eth_stack *st)
{
	return pool_avail(st) < st->c.pool->size / 4;
}

bool eth_pool_scarce(struct eth_stack *st)
{
	return pool_avail(st) < st->c.pool->size / 16;
}

static struct eth_rseg *rseg_get(struct eth_stack *st)
{
	struct eth_rseg *r = SLIST_FIRST(&st->rseg_free);

	if (r)
		SLIST_REMOVE_HEAD(&st->rseg_free, free_link);
	else
		r = &st->rsegs[st->rseg_carved++]; /* the caller checked rseg_used < limit <= ETH_RSEG_MAX */
	st->rseg_used++;
	return r;
}

static void append(struct eth_tcb *t, struct eth_rseg *r)
{
	STAILQ_INSERT_TAIL(&t->rq, r, link);
}

bool eth_rcvq_take(struct eth_tcb *t, const struct rte_mbuf *m, uint32_t off, uint32_t len)
{
	struct eth_stack *st = t->st;
	uint32_t skip = off, left = len, pieces = 0, min_piece = 0, tail = t->rbuf.len - t->rq_chunk;

	if (!len)
		return true;
	/* rbuf holds data past rcv_nxt at its offset from there: in-order bytes go in front of it */
	if (t->n_ooo)
		goto copy;
	for (const struct rte_mbuf *s = m; s && left; s = s->next) {
		uint32_t n;
		if (skip >= s->data_len) {
			skip -= s->data_len;
			continue;
		}
		n = s->data_len - skip < left ? s->data_len - skip : left;
		pieces++;
		min_piece += s->buf_len / 4u;
		left -= n;
		skip = 0;
	}
	if (left || len < min_piece || st->rseg_used + pieces + !!tail > rseg_limit(st) || eth_pool_low(st))
		goto copy;
	if (tail) {
		/* rbuf's bytes not covered yet come first (copies): one entry stands for them */
		struct eth_rseg *r = rseg_get(st);
		r->m = NULL;
		r->len = tail;
		t->rq_chunk += tail;
		append(t, r);
	}
	skip = off;
	left = len;
	for (struct rte_mbuf *s = (struct rte_mbuf *)(uintptr_t)m; s && left; s = s->next) {
		struct eth_rseg *r;
		uint32_t n;
		if (skip >= s->data_len) {
			skip -= s->data_len;
			continue;
		}
		n = s->data_len - skip < left ? s->data_len - skip : left;
		rte_mbuf_refcnt_update(s, 1); /* the frame is freed after input: this piece stays */
		r = rseg_get(st);
		r->m = s;
		r->data = rte_pktmbuf_mtod_offset(s, const uint8_t *, skip);
		r->len = n;
		append(t, r);
		left -= n;
		skip = 0;
	}
	t->rq_len += len;
	t->rbuf.cap -= len;
	xlt_counter_set(&st->stats.rx_pinned, st->rseg_used);
	return true;
copy:
	xlt_counter_add(&st->stats.rx_pin_copies, 1);
	return false;
}

size_t eth_rcvq_peek(struct eth_tcb *t, const uint8_t **data)
{
	struct eth_rseg *r = STAILQ_FIRST(&t->rq);
	uint32_t n;

	if (r && r->m) {
		*data = r->data;
		return r->len;
	}
	n = eth_bufq_peek(&t->rbuf, 0, data);
	return r && n > r->len ? r->len : n;
}

static void pop(struct eth_tcb *t)
{
	struct eth_rseg *r = STAILQ_FIRST(&t->rq);

	STAILQ_REMOVE_HEAD(&t->rq, link);
	if (r->m)
		rte_pktmbuf_free_seg(r->m);
	r->m = NULL;
	SLIST_INSERT_HEAD(&t->st->rseg_free, r, free_link);
	t->st->rseg_used--;
}

uint32_t eth_rcvq_consume(struct eth_tcb *t, uint32_t n)
{
	struct eth_stack *st = t->st;
	uint32_t done = 0;

	while (n && !STAILQ_EMPTY(&t->rq)) {
		struct eth_rseg *r = STAILQ_FIRST(&t->rq);
		uint32_t k = n < r->len ? n : r->len;

		if (r->m) {
			r->data += k;
			t->rq_len -= k;
			t->rbuf.cap += k;
		} else {
			eth_bufq_consume(&st->chunks, &t->rbuf, k);
			t->rq_chunk -= k;
			t->chunk_dropped += k;
		}
		t->rq_dropped += k;
		r->len -= k;
		n -= k;
		done += k;
		if (!r->len)
			pop(t);
	}
	xlt_counter_set(&st->stats.rx_pinned, st->rseg_used);
	if (n > t->rbuf.len - t->rq_chunk)
		n = t->rbuf.len - t->rq_chunk;
	if (n)
		eth_bufq_consume(&st->chunks, &t->rbuf, n);
	return done + n;
}

/* Segments of rbuf's bytes [*OFF, *OFF + LEN) into SEGS[*K..MAX) (valid until consumed, not
 * registered memory: a destination copies them). */
static void chunk_segs(struct eth_tcb *t, uint32_t *off, uint32_t len, struct xlt_seg *segs, unsigned *k,
                       unsigned max)
{
	uint32_t end = *off + len;

	while (*off < end && *k < max) {
		const uint8_t *p;
		uint32_t n = eth_bufq_peek(&t->rbuf, *off, &p);
		if (!n)
			break;
		if (n > end - *off)
			n = end - *off;
		segs[(*k)++] = (struct xlt_seg){.data = p, .len = n};
		*off += n;
	}
}

unsigned eth_rcvq_lend(struct eth_tcb *t, size_t skip, struct xlt_seg *segs, unsigned max)
{
	struct eth_stack *st = t->st;
	struct eth_rseg *r = STAILQ_FIRST(&t->rq);
	uint64_t want = t->rq_dropped + skip; /* the first byte asked for */
	uint64_t pos = t->rq_dropped;         /* r's first byte */
	uint64_t cpos = t->chunk_dropped;     /* the same in rbuf's bytes */
	unsigned k = 0;

	/* resume after the entry the last walk passed: still queued, and before the bytes asked for */
	if (t->lend_at && t->lend_at_end > t->rq_dropped && t->lend_at_end <= want) {
		r = STAILQ_NEXT(t->lend_at, link);
		pos = t->lend_at_end;
		cpos = t->lend_at_cend;
	}
	for (; r && k < max; r = STAILQ_NEXT(r, link)) {
		uint32_t in = want > pos ? (uint32_t)(want - pos) : 0;

		if (in >= r->len) {
			pos += r->len;
			if (!r->m)
				cpos += r->len;
			t->lend_at = r;
			t->lend_at_end = pos;
			t->lend_at_cend = cpos;
			continue;
		}
		if (!r->m) {
			uint32_t o = (uint32_t)(cpos - t->chunk_dropped) + in;
			chunk_segs(t, &o, r->len - in, segs, &k, max);
		} else {
			segs[k++] = (struct xlt_seg){
			    .data = r->data + in,
			    .len = r->len - in,
			    /* (a received frame's own buffer lies in DPDK's heap: a virtio_user port
			     * sends from it, so an echo or a TCP -> TCP relay copies nothing there
			     * either) */
			    .flags = (st->rx_extmem && r->m->pool == st->c.pool ? XLT_SEG_EXTMEM : 0) |
			             (RTE_MBUF_DIRECT(r->m) ? XLT_SEG_DEVMEM : 0),
			    .hold = r->m,
			    .hops = &eth_mbuf_hops,
			};
		}
		pos += r->len;
		if (!r->m)
			cpos += r->len;
	}
	/* then rbuf's bytes no entry covers */
	if (k < max && !r) {
		uint32_t coff = (uint32_t)(cpos - t->chunk_dropped), in = want > pos ? (uint32_t)(want - pos) : 0;

		if (in < t->rbuf.len - coff) {
			uint32_t o = coff + in;
			chunk_segs(t, &o, t->rbuf.len - o, segs, &k, max);
		}
	}
	return k;
}

void eth_rcvq_free(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;

	while (!STAILQ_EMPTY(&t->rq))
		pop(t);
	t->lend_at = NULL;
	t->rbuf.cap += t->rq_len;
	t->rq_len = 0;
	t->rq_chunk = 0;
	xlt_counter_set(&st->stats.rx_pinned, st->rseg_used);
}

void eth_stack_rx_extmem(struct eth_stack *st, bool on)
{
	st->rx_extmem = on;
}
