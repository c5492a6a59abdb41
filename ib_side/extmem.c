/* External memory and lent segments: the Ethernet -> IB direction without copies (issue #14).
 *
 * Registration. The gateway hands over the memory of the Ethernet RX mempool once, before any buffer
 * set exists (ib_ctl_extmem). Every buffer set registers it in its own protection domain, when the
 * set is created; a pooled set keeps it, so a connection that reuses a set registers nothing. The
 * region is LOCAL_WRITE only (what ibv_reg_mr needs for a local read; no remote access): its local
 * key lets this set's queue pair read frames for its own sends and is never given to a peer, so #12's
 * isolation is unchanged (remote keys: the set's receive ring, per connection). A set whose
 * registration failed works without it: lent segments are copied into its send buffer.
 *
 * Lent segments (write_lent). A segment of registered memory is kept by reference (its hold taken)
 * in the connection's ring of IB_LENT_MAX, in stream order; it counts against the send window all
 * the same (so bytes taken and not completed stay bounded by the send buffer's size, as write()'s
 * are), but takes no room in the send ring: a data write's scatter list points into the segment
 * (flush phase, conn.c post_data), up to the connection's send_sge entries per write. Other
 * segments are copied into the send buffer as write() copies. On each data completion (success or
 * flush) the holds of the segments it finished are put. on_sent reports bytes in order: everything
 * before the oldest lent segment not yet completed (a copy is done with its source at once).
 *
 * A connection released with lent writes in flight must not be handed back before they complete:
 * after hand-back its completions are dropped and the control thread destroys the queue pair, while
 * its writes might still read frames already put back. So it lingers (conn.c retire) with its queue
 * pair moved to the error state, which flushes every posted write at once, and puts the holds from
 * those completions. IB_LENT_WAIT_NS bounds the wait: then the connection is handed back with the
 * holds still taken (counted), and the control thread puts them once it has destroyed the queue
 * pair (ib_lent_put_all), when no device can read the frames any more.
 *
 * Copy buffers are shared: the worker's share of the frame pool (ib_copy_ops), taken by its
 * connections as they copy. A connection whose peer takes nothing (credits withheld, no buffer
 * advertised, writes never acknowledged) keeps its copy buffers until the session's stall limit,
 * minutes; enough of them would keep every buffer, and every other connection's copies (small TCP
 * segments, PROXY headers) would wait as long. So a copy refused for want of the share, of a
 * connection short of buffers (fewer than IB_COPY_PRESSURE_BUFS), reclaims some (copy_reclaim): of
 * the connections that hold copy buffers and whose peer has taken no byte of their send stream for
 * IB_COPY_HOLD_NS (no write completed: front_ns), the one waiting longest is reset, and its buffers
 * not yet posted go back at once. Progress is judged by completions, not
 * by a buffer's age: a slow reader whose copies wait behind lent bytes, or that has taken most of a
 * buffer, moves. A peer that takes a little every few seconds is slow, not stopped: it is not
 * reset, but while the share runs out (a refusal within IB_COPY_PRESSURE_NS) no connection takes
 * more than IB_COPY_PRESSURE_BUFS buffers, so such peers give back what they held beyond that as
 * their writes complete, and the buffers go round the connections that wait. */
#include <string.h>
#include <time.h>

#include "conn.h"
#include "proto.h"

#define IB_LENT_WAIT_NS 2000000000ull
/* How long a connection that holds copy buffers may go without its peer taking a byte before it may
 * be reset when another needs one: a peer that took nothing in that long is gone or hostile, while
 * a pause of an application that reads (a collector's flush, a page-in) is shorter. */
#define IB_COPY_HOLD_NS 5000000000ull
/* The least time between two reclaims on a worker: a reset gives back its unposted buffers at once,
 * its posted ones once their writes are flushed (after its abort's linger, if the peer takes no
 * message): the next reset waits for them rather than cascading. */
#define IB_RECLAIM_GAP_NS 200000000ull
/* Pressure: how long after the share last ran out each connection is held to IB_COPY_PRESSURE_BUFS
 * (two: one being filled while the other's write is out) */
#define IB_COPY_PRESSURE_NS   1000000000ull
#define IB_COPY_PRESSURE_BUFS 2

int ib_extmem_add(struct ib_extmem *x, void *addr, size_t len)
{
	uint8_t *a = addr;

	if (!a || !len)
		return -EINVAL;
	for (unsigned i = 0; i < x->n; i++) {
		/* chunks of a mempool are often adjacent: one region each run */
		if (x->r[i].addr + x->r[i].len == a) {
			x->r[i].len += len;
			return 0;
		}
		if (a + len == x->r[i].addr) {
			x->r[i].addr = a;
			x->r[i].len += len;
			return 0;
		}
	}
	if (x->n == IB_EXTMEM_MAX)
		return -ENOSPC;
	x->r[x->n].addr = a;
	x->r[x->n].len = len;
	x->n++;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ib_extmem_reg(const struct ib_extmem *x, struct ib_bufs *b, struct ib_ctl_stats *st)
{
	int ret = 0;

	b->n_xmr = 0;
	for (unsigned i = 0; i < x->n; i++) {
		uint64_t t0 = mono_ns();
		/* LOCAL_WRITE is the least access ibv_reg_mr accepts for a source of sends; no REMOTE_* */
		struct ibv_mr *mr = ibv_reg_mr(b->pd, x->r[i].addr, x->r[i].len, IBV_ACCESS_LOCAL_WRITE);

		if (!mr) {
			ret = -errno;
			ib_extmem_dereg(b);
			return ret;
		}
		st->extmem_regs++;
		st->extmem_reg_ns += mono_ns() - t0;
		b->xmr[b->n_xmr++] = mr;
	}
	return 0;
}

void ib_extmem_dereg(struct ib_bufs *b)
{
	for (unsigned i = 0; i < b->n_xmr; i++)
		ibv_dereg_mr(b->xmr[i]);
	b->n_xmr = 0;
}

/* The local key of [P, P + LEN) if it lies in B's external memory. */
static bool lkey_of(const struct ib_bufs *b, const uint8_t *p, uint32_t len, uint32_t *lkey)
{
	for (unsigned i = 0; i < b->n_xmr; i++) {
		const uint8_t *a = b->xmr[i]->addr;
		if (p >= a && (size_t)(p - a) + len <= b->xmr[i]->length) {
			*lkey = b->xmr[i]->lkey;
			return true;
		}
	}
	return false;
}

static struct ib_lent *lent_at(struct ib_conn *c, unsigned i)
{
	return &c->lent[(c->lent_head + i) % IB_LENT_MAX];
}

static bool is_copy(const struct ib_lent *e)
{
	return e->lpos & IB_LENT_COPY;
}

/* A copy buffer's bytes after its entry's (struct ib_lent). */
static uint32_t copy_room(const struct ib_lent *e)
{
	return (uint32_t)(e->lpos & ~IB_LENT_COPY);
}

/* Puts the hold of entry E (popped or dropped): a copy buffer's room goes back to the connection. */
static void lent_put(struct ib_conn *c, struct ib_lent *e)
{
	if (is_copy(e)) {
		c->cb_bytes -= e->len + copy_room(e);
		c->cb_n--;
	}
	e->hops->put(e->hold);
}

/* Puts the holds of C's entries no write was posted from (C posts nothing more). */
static void lent_drop_unposted(struct ib_conn *c)
{
	while (c->lent_n) {
		struct ib_lent *e = lent_at(c, c->lent_n - 1u);
		if (e->tpos < c->tx.posted)
			break;
		lent_put(c, e);
		c->lent_n--;
	}
}

/* C queues N bytes to send; if its send stream was empty, its peer had taken all there was until
 * now (copy_reclaim). */
static void tx_queue(struct ib_conn *c, uint32_t n)
{
	if (c->tx.queued == c->tx.done)
		c->front_ns = c->w->now;
	ib_tx_queue(&c->tx, n);
}

/* How long C's peer has taken no byte of C's send stream while some waited (0: none waits). */
static uint64_t front_wait(const struct ib_conn *c, uint64_t now)
{
	return c->tx.queued != c->tx.done && now > c->front_ns ? now - c->front_ns : 0;
}

/* A copy of ASKER's was refused for want of the worker's share: resets the connection of W that holds
 * copy buffers and whose peer has taken nothing longest, once that is IB_COPY_HOLD_NS (see the top of
 * this file), and puts its buffers that no write was posted from (it posts nothing more; the posted
 * ones go as their writes complete or are flushed, conn.c retire). ASKER is no candidate: its
 * entries are being built (but it keeps the next walk near when it would be one). A walk of the live
 * list, at most once per IB_RECLAIM_GAP_NS, and not before the longest wait it found can be long
 * enough. Returns true when buffers went back. */
static bool copy_reclaim(struct ib_worker *w, struct ib_conn *asker)
{
	struct ib_conn *victim = NULL;
	uint64_t longest = 0, next = IB_COPY_HOLD_NS; /* (a candidate appears no sooner) */
	uint32_t held;

	if (w->now < w->reclaim_next)
		return false;
	for (struct ib_conn *c = LIST_FIRST(&w->live); c; c = LIST_NEXT(c, live_link)) {
		uint64_t waited, due_in;

		if (c->ws != IB_W_OPEN || !(waited = front_wait(c, w->now)))
			continue;
		/* when a walk could find one due: the asker too (a candidate when another asks), and
		 * one waiting with lent bytes only (it may copy before then) */
		due_in = waited < IB_COPY_HOLD_NS ? IB_COPY_HOLD_NS - waited : 0;
		if (due_in < next)
			next = due_in;
		if (c != asker && c->cb_bytes && waited > longest) {
			longest = waited;
			victim = c;
		}
	}
	if (longest < IB_COPY_HOLD_NS) {
		w->reclaim_next = w->now + (next > IB_RECLAIM_GAP_NS ? next : IB_RECLAIM_GAP_NS);
		return false;
	}
	w->reclaim_next = w->now + IB_RECLAIM_GAP_NS;
	ib_conn_reset(victim, -ETIME, IB_CLOSE_RECLAIMED);
	held = victim->cb_bytes;
	lent_drop_unposted(victim);
	return victim->cb_bytes < held;
}

/* Copies into copy buffers (a set without a send ring): onto the stream's last entry while it is a
 * copy buffer with room, else into a new buffer from the copy ops, which becomes an entry of the
 * lent ring. Returns the count copied. */
static uint32_t copy_to_bufs(struct ib_conn *c, const uint8_t *data, uint32_t n)
{
	const struct ib_copy_ops *ops = c->w->copy_ops;
	uint32_t done = 0;

	while (done < n) {
		struct ib_lent *e = c->lent_n ? lent_at(c, c->lent_n - 1u) : NULL;
		uint32_t k;

		if (!e || !is_copy(e) || !copy_room(e)) {
			struct xlt_seg g;
			uint32_t lkey;
			int ret;

			/* buffers are counted whole against copy_size: small copies between lent
			 * segments, each in a buffer of its own, hold no more than that */
			if (c->lent_n == IB_LENT_MAX || c->cb_bytes >= c->copy_size)
				break;
			if (c->cb_n >= IB_COPY_PRESSURE_BUFS && c->w->now < c->w->copy_pressure_until)
				ret = -ENOBUFS; /* (its share under pressure is taken) */
			else
				ret = ops ? ops->get(c->w->arg, &g) : -ENODEV;
			if (ret == -ENOBUFS && c->cb_n < IB_COPY_PRESSURE_BUFS) {
				/* short of buffers: the others are held to a few for a while, and one
				 * whose peer takes nothing gives its back (the asker first) */
				c->w->copy_pressure_until = c->w->now + IB_COPY_PRESSURE_NS;
				if (copy_reclaim(c->w, c))
					ret = ops->get(c->w->arg, &g);
			}
			if (ret) {
				xlt_counter_add(&c->w->st.copy_waits, 1);
				break;
			}
			if (!g.len || !lkey_of(c->bufs, g.data, g.len, &lkey)) {
				g.hops->put(g.hold); /* (not memory this set registered: cannot send from it) */
				xlt_counter_add(&c->w->st.copy_waits, 1);
				break;
			}
			e = lent_at(c, c->lent_n++);
			*e = (struct ib_lent){.tpos = c->tx.queued + done,
			                      .lpos = IB_LENT_COPY | g.len,
			                      .addr = g.data,
			                      .lkey = lkey,
			                      .hold = g.hold,
			                      .hops = g.hops};
			c->cb_bytes += g.len;
			c->cb_n++;
		}
		k = n - done < copy_room(e) ? n - done : copy_room(e);
		memcpy((uint8_t *)(uintptr_t)e->addr + e->len, data + done, k);
		e->len += k;
		e->lpos -= k; /* (its room) */
		done += k;
	}
	return done;
}

uint32_t ib_copy_in(struct ib_conn *c, const uint8_t *data, uint32_t n)
{
	uint32_t ring = c->bufs->sbuf_size;

	if (ring) {
		uint32_t off = (uint32_t)(ib_copy_queued(c) % ring), first = ring - off < n ? ring - off : n;

		memcpy(c->bufs->sbuf + off, data, first);
		memcpy(c->bufs->sbuf, data + first, n - first);
	} else {
		n = copy_to_bufs(c, data, n);
	}
	tx_queue(c, n);
	xlt_counter_add(&c->w->st.copied_tx, n);
	return n;
}

size_t ib_lent_take(struct ib_conn *c, const struct xlt_seg *segs, unsigned n)
{
	size_t taken = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct xlt_seg *g = &segs[i];
		uint32_t space = ib_tx_space(&c->tx), k = g->len < space ? g->len : space, lkey;

		if (!k)
			break;
		if ((g->flags & XLT_SEG_EXTMEM) && g->hold && g->hops && c->lent_n < IB_LENT_MAX &&
		    lkey_of(c->bufs, g->data, k, &lkey)) {
			/* by reference: room in the send window only */
			struct ib_lent *e = lent_at(c, c->lent_n);
			*e = (struct ib_lent){.tpos = c->tx.queued,
			                      .lpos = c->lt_taken,
			                      .addr = g->data,
			                      .len = k,
			                      .lkey = lkey,
			                      .hold = g->hold,
			                      .hops = g->hops};
			g->hops->get(g->hold);
			c->lent_n++;
			c->lt_lent += k;
			tx_queue(c, k);
		} else {
			/* copied: room for copies too, which a full ring (or no copy buffer) makes the
			 * source wait for */
			space = ib_copy_space(c);
			if (k > space)
				k = space;
			if (k)
				k = ib_copy_in(c, g->data, k);
			if (!k)
				break;
		}
		c->lt_taken += k;
		taken += k;
		if (k < g->len)
			break;
	}
	return taken;
}

uint32_t ib_lent_walk(struct ib_conn *c, uint32_t max, struct ibv_sge *sge, unsigned *n_sge, uint32_t *n_lent)
{
	uint64_t start = c->tx.posted, pos = start, end = start + max, cpos = c->cp_posted;
	uint32_t sbuf_lkey = c->bufs->smr->lkey, ring = c->bufs->sbuf_size;
	unsigned used = 0, i = 0;

	*n_lent = 0;
	if (end > c->tx.queued)
		end = c->tx.queued;
	while (i < c->lent_n && lent_at(c, i)->tpos + lent_at(c, i)->len <= pos)
		i++; /* written already, waiting for their completion */
	while (pos < end && used < c->send_sge) {
		struct ib_lent *e = i < c->lent_n ? lent_at(c, i) : NULL;
		uint64_t stop;

		if (e && e->tpos <= pos) {
			uint64_t k = e->tpos + e->len - pos;
			if (k > end - pos)
				k = end - pos;
			if (sge)
				sge[used] = (struct ibv_sge){.addr = (uintptr_t)(e->addr + (pos - e->tpos)),
				                             .length = (uint32_t)k,
				                             .lkey = e->lkey};
			used++;
			if (!is_copy(e))
				*n_lent += (uint32_t)k;
			pos += k;
			i++;
			continue;
		}
		/* copied bytes up to the next lent segment: the send ring's next ones, which may wrap
		 * (a set without a ring has every byte in an entry) */
		stop = e && e->tpos < end ? e->tpos : end;
		if (!ring)
			break;
		while (pos < stop && used < c->send_sge) {
			uint32_t off = (uint32_t)(cpos % ring), k = ring - off;
			if (k > stop - pos)
				k = (uint32_t)(stop - pos);
			if (sge)
				sge[used] = (struct ibv_sge){
				    .addr = (uintptr_t)(c->bufs->sbuf + off), .length = k, .lkey = sbuf_lkey};
			used++;
			pos += k;
			cpos += k;
		}
	}
	*n_sge = used;
	return (uint32_t)(pos - start);
}

void ib_lent_done(struct ib_conn *c)
{
	uint64_t from = c->lt_done, to = c->tx.done, lent = 0;

	/* of the bytes completed since the last call, the lent ones: the segments starting before TO
	 * (those popped now, and one a write ended in the middle of) */
	for (unsigned i = 0; i < c->lent_n; i++) {
		const struct ib_lent *e = lent_at(c, i);
		uint64_t a = e->tpos > from ? e->tpos : from,
		         b = e->tpos + e->len < to ? e->tpos + e->len : to;

		if (e->tpos >= to)
			break;
		if (b > a && !is_copy(e))
			lent += b - a;
	}
	c->cp_done += to - from - lent; /* the rest were copies: their room is free */
	c->lt_done = to;
	if (to != from)
		c->front_ns = c->w->now; /* the peer took bytes (copy_reclaim) */
	while (c->lent_n) {
		struct ib_lent *e = lent_at(c, 0);
		if (e->tpos + e->len > c->tx.done)
			break;
		lent_put(c, e);
		c->lent_head = (uint16_t)((c->lent_head + 1) % IB_LENT_MAX);
		c->lent_n--;
	}
}

uint64_t ib_lent_reportable(struct ib_conn *c)
{
	/* the oldest lent segment not completed; copy buffers before it are done with their sources */
	for (unsigned i = 0; i < c->lent_n; i++)
		if (!is_copy(lent_at(c, i)))
			return lent_at(c, i)->lpos;
	return c->lt_taken;
}

bool ib_lent_wait(struct ib_conn *c, uint64_t now)
{
	lent_drop_unposted(c); /* what was never posted will not be: its holds go now */
	/* every posted write completed: what is left is the unposted tail of a segment a write ended
	 * in the middle of */
	if (c->tx.done == c->tx.posted)
		ib_lent_put_all(c);
	if (!c->lent_n)
		return false;
	if (!c->lent_until)
		c->lent_until = now + IB_LENT_WAIT_NS;
	if (!c->lent_flushing && c->qp) {
		struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
		c->lent_flushing = true;
		ibv_modify_qp(c->qp, &a, IBV_QP_STATE); /* a failure shows as the wait running out */
	}
	if (now < c->lent_until)
		return true;
	xlt_counter_add(&c->w->st.lent_late, c->lent_n);
	return false; /* the holds go with the connection: ib_lent_put_all */
}

void ib_lent_put_all(struct ib_conn *c)
{
	while (c->lent_n) {
		struct ib_lent *e = lent_at(c, 0);
		lent_put(c, e);
		c->lent_head = (uint16_t)((c->lent_head + 1) % IB_LENT_MAX);
		c->lent_n--;
	}
}
