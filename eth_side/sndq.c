/* The TCP send queue of references (design in sndq.h).
 *
 * The queue is a ring of entries, oldest first. A lent entry holds one reference to its memory
 * (hops->get when taken, put when the peer acknowledged its last byte); each frame that carries lent
 * bytes holds references of its own, one per mbuf attached to that memory, put by DPDK's free
 * callback when the device (or whoever drops the frame) frees the mbuf. The memory therefore stays
 * valid until the ACK came AND no frame points at it, whichever is last: a retransmission still in a
 * device queue when the ACK arrives reads valid memory. (What it reads may already be newer bytes of
 * the lender's ring, since the lender reuses the space once the session consumed it; a copy of bytes
 * the peer already has is discarded by the peer, so that costs nothing but the duplicate it always
 * was.)
 *
 * Two kinds of queue, fixed when the connection is made:
 *  - lending mode (eth_tcp_params.copy_size: a route between IB and TCP, whose IB side lends nearly
 *    everything): the ring is inline in the connection block, and copies (write(), segments without
 *    a hold) go into mbufs of the stack's own pool, each an entry like a lent one (its hold is the
 *    mbuf, its references the mbuf's reference count); the next copy fills the last entry's mbuf
 *    while it has room. So such a connection takes no chunk of the worker's pool at all, and the
 *    gateway budgets none for its send queue. A copy takes no mbuf while the pool is down to a
 *    sixteenth (rcvq.h eth_pool_scarce: the RX ring must find mbufs) or is dry: it takes nothing,
 *    the session sees the direction blocked and retries; it never falls back to chunks, which were
 *    not budgeted;
 *  - otherwise (TCP -> TCP, echo: copies are the rule) copies go into the connection's chunk queue
 *    (sbuf) as before lending existed, and the ring is a chunk of the worker's pool, taken when a
 *    session first lends and given back once everything was acknowledged.
 *
 * Bounds are those of the copying queue: copied and lent bytes together stay within the configured
 * send buffer (sbuf.cap), and copies in flight alone within copy_cap, so a peer that stops reading
 * makes write_lent take nothing, and the session sees the direction blocked, with the lender's space
 * (credits) withheld. A full ring (stretches that could not be merged, e.g. small segments of
 * different holds) takes nothing more until acknowledgements free entries.
 *
 * Attached mbufs are used only where the driver can read that memory: any memory on ports that
 * read frames with the CPU (ETH_OFFLOAD_EXTMEM: af_packet copies each segment into its ring), memory
 * in DPDK's heap (a lender's XLT_SEG_DEVMEM, a copy's mbuf) on ports that address frames by virtual
 * address within DPDK's memory segments (ETH_OFFLOAD_DEVMEM: virtio_user, whose vhost knows those
 * segments and no other memory); elsewhere the bytes are copied into the frame, counted in
 * copied_out like every copy. Software checksums cover a chain whole (cksum.c). */
#include <errno.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_mbuf.h>

#include "buf.h"
#include "engine.h"
#include "rcvq.h"
#include "sndq.h"

/* What an mbuf attached to lent memory carries to its free callback: its reference, and the engine
 * whose tx_lent_mbufs gauge counts it. It lives in the mbuf's own data room, unused while the mbuf
 * points elsewhere, and intact until the callback returned (DPDK restores the mbuf's own buffer only
 * after it). */
struct extref {
	struct rte_mbuf_ext_shared_info sh;
	void *hold;
	const struct xlt_hold_ops *hops;
	struct eth_stack *st;
};

/* Called by whoever frees the mbuf: the worker (its TX burst cleaning the device's ring, a frame
 * dropped), or, once the workers stopped, the thread closing the port: the gauge keeps one writer.
 * The port is closed after the engines: the last frame of a destroyed engine frees it. */
static void extref_free(void *addr, void *opaque)
{
	struct extref *r = opaque;
	struct eth_stack *st = r->st;

	(void)addr;
	r->hops->put(r->hold);
	xlt_counter_add(&st->stats.tx_lent_mbufs, (uint64_t)-1);
	if (st->destroyed && !xlt_counter_read(&st->stats.tx_lent_mbufs))
		free(st);
}

/* Whether the queue is a ring of entries (else every byte is in sbuf): always in lending mode. */
static inline bool has_ring(const struct eth_sndq *q)
{
	return q->lends || q->ring;
}

static inline uint16_t ring_cap(const struct eth_sndq *q)
{
	return q->lends ? ETH_SNDQ_INLINE : ETH_SNDQ_ENTS;
}

static inline struct eth_sndq_ent *ents(const struct eth_tcb *t)
{
	if (t->sndq.lends)
		return (struct eth_sndq_ent *)t->sndq.inl;
	return (struct eth_sndq_ent *)(void *)t->sndq.ring->data;
}

static inline struct eth_sndq_ent *ent_at(const struct eth_tcb *t, unsigned i)
{
	return &ents(t)[(t->sndq.head + i) % ring_cap(&t->sndq)];
}

/* The chunk ring of a queue that does not lend, made when a session first lends all the same: the
 * bytes already queued (copies) become its first entry. Returns 0 or -ENOMEM. */
static int ring_make(struct eth_tcb *t)
{
	struct eth_sndq *q = &t->sndq;

	q->ring = eth_chunk_get(&t->st->chunks);
	if (!q->ring)
		return -ENOMEM;
	q->head = q->n = 0;
	q->popped = q->acked = q->sbuf_acked = q->at_ent = 0; /* (at_ent <= popped: no cursor) */
	if (t->sbuf.len) {
		*ent_at(t, 0) = (struct eth_sndq_ent){.len = t->sbuf.len};
		q->n = 1;
	}
	eth_buf_gauge(t->st);
	return 0;
}

static void ring_drop(struct eth_tcb *t)
{
	eth_chunk_put(&t->st->chunks, t->sndq.ring);
	t->sndq.ring = NULL;
	t->sndq.head = t->sndq.n = 0;
	eth_buf_gauge(t->st);
}

/* Queues N copied bytes (already appended to sbuf) as an entry, merged into the last one when it
 * is a copy of the same kind. The caller checked there is room for an entry (copy_room). */
static void add_copy(struct eth_tcb *t, uint32_t n, uint8_t report)
{
	struct eth_sndq *q = &t->sndq;
	struct eth_sndq_ent *last = q->n ? ent_at(t, q->n - 1u) : NULL;

	if (last && !last->data && last->report == report) {
		last->len += n;
		return;
	}
	*ent_at(t, q->n) = (struct eth_sndq_ent){.len = n, .report = report};
	q->n++;
}

static bool copy_room(const struct eth_tcb *t, uint8_t report)
{
	const struct eth_sndq *q = &t->sndq;
	const struct eth_sndq_ent *last = q->n ? ent_at(t, q->n - 1u) : NULL;

	return q->n < ring_cap(q) || (last && !last->data && last->report == report);
}

/* Lending mode: copies up to LEN bytes (the caller checked the copy cap) into mbufs of the stack's
 * pool: into the room left in the last entry's mbuf, then into new ones. A copy of another report
 * than the last entry's is an entry of its own, in the same mbuf while it has room (a reference of
 * its own). Returns the bytes taken: fewer once the ring is full, or when a new mbuf is needed and
 * the pool is low (the RX ring needs them more) or dry. */
static uint32_t copy_mbufs(struct eth_tcb *t, const uint8_t *data, uint32_t len, uint8_t report)
{
	struct eth_stack *st = t->st;
	struct eth_sndq *q = &t->sndq;
	uint32_t done = 0;

	while (done < len) {
		struct eth_sndq_ent *last = q->n ? ent_at(t, q->n - 1u) : NULL;
		/* (the last entry's bytes end at its mbuf's data_len: only it writes there) */
		struct rte_mbuf *m = last && last->copy ? last->hold : NULL;
		uint32_t k;

		if (!m || !rte_pktmbuf_tailroom(m)) {
			if (q->n == ring_cap(q) || eth_pool_scarce(st) || !(m = eth_pkt_alloc(st)))
				break;
			m->data_off = 0; /* never a frame's head: no headers go in front */
			last = NULL;
		} else if (last->report != report) {
			if (q->n == ring_cap(q))
				break;
			eth_mbuf_hops.get(m);
			last = NULL;
		}
		if (!last) {
			last = ent_at(t, q->n);
			*last = (struct eth_sndq_ent){
			    .data = rte_pktmbuf_mtod_offset(m, const uint8_t *, m->data_len),
			    .hold = m,
			    .hops = &eth_mbuf_hops,
			    .report = report,
			    .devmem = 1, /* a direct mbuf: DPDK's heap */
			    .copy = 1,
			};
			q->n++;
		}
		k = rte_pktmbuf_tailroom(m);
		if (k > len - done)
			k = len - done;
		memcpy(rte_pktmbuf_mtod_offset(m, uint8_t *, m->data_len), data + done, k);
		m->data_len = (uint16_t)(m->data_len + k);
		m->pkt_len += k;
		last->len += k;
		q->copied += k;
		done += k;
	}
	return done;
}

/* Copies up to LEN bytes of DATA into the queue, within the copy cap: into mbufs in lending mode, else
 * into sbuf (an entry too once there is a ring). Returns the bytes taken, counted in copied_out. */
static uint32_t copy_in(struct eth_tcb *t, const uint8_t *data, uint32_t len, uint8_t report)
{
	struct eth_stack *st = t->st;
	uint32_t n;

	if (len > eth_sndq_copy_space(t))
		len = eth_sndq_copy_space(t);
	if (t->sndq.lends) {
		n = copy_mbufs(t, data, len, report);
	} else {
		if (t->sndq.ring && !copy_room(t, report))
			return 0;
		n = eth_bufq_append(&st->chunks, &t->sbuf, data, len);
		if (n && t->sndq.ring)
			add_copy(t, n, report);
	}
	xlt_counter_add(&st->stats.copied_out, n);
	return n;
}

uint32_t eth_sndq_write(struct eth_tcb *t, const uint8_t *data, uint32_t len)
{
	uint32_t n = copy_in(t, data, len, 0);

	eth_buf_gauge(t->st);
	return n;
}

size_t eth_sndq_write_lent(struct xlt_stream *s, const struct xlt_seg *segs, unsigned n)
{
	struct eth_tcb *t = eth_tcb_of(s);
	struct eth_stack *st = t->st;
	struct eth_sndq *q = &t->sndq;
	size_t offered = 0, took = 0;
	uint32_t room = eth_sndq_space(t);

	for (unsigned i = 0; i < n; i++)
		offered += segs[i].len;
	if (s->local_done || s->state == XLT_STREAM_CLOSED || t->fin_queued)
		return 0;
	if (!has_ring(q) && room && ring_make(t)) {
		t->want_writable = true; /* the pool is dry: the next ACK frees chunks */
		return 0;
	}
	for (unsigned i = 0; i < n && room; i++) {
		const struct xlt_seg *g = &segs[i];
		uint32_t k = g->len < room ? g->len : room;

		if (g->hold && g->hops) {
			struct eth_sndq_ent *last = q->n ? ent_at(t, q->n - 1u) : NULL;
			uint16_t devmem = (g->flags & XLT_SEG_DEVMEM) != 0;

			if (last && last->data && !last->copy && last->hold == g->hold &&
			    last->devmem == devmem && last->data + last->len == g->data) {
				last->len +=
				    k; /* the lender's next bytes, under the reference already held */
			} else if (q->n < ring_cap(q)) {
				*ent_at(t, q->n) = (struct eth_sndq_ent){
				    .data = g->data,
				    .hold = g->hold,
				    .hops = g->hops,
				    .len = k,
				    .report = 1,
				    .devmem = devmem,
				};
				q->n++;
				g->hops->get(g->hold);
			} else {
				break;
			}
			q->lent += k;
			xlt_counter_add(&st->stats.tx_lent_bytes, k);
		} else {
			/* memory valid only during this call: copied, within the copy cap */
			k = copy_in(t, g->data, k, 1);
			if (!k)
				break;
		}
		took += k;
		room -= k;
		if (k < g->len)
			break;
	}
	eth_buf_gauge(st);
	if (took < offered)
		t->want_writable = true;
	if (took && t->state != ETH_TCP_SYN_SENT)
		eth_tcb_output_later(t);
	return took;
}

/* Appends LEN bytes to frame M, taken from sbuf at SOFF (SRC NULL) or from SRC, copied into the
 * tail of *LAST and mbufs chained after it. Returns 0 or -ENOMEM. */
static int append_copy(struct eth_tcb *t, struct rte_mbuf *m, struct rte_mbuf **last, const uint8_t *src,
                       uint32_t soff, uint32_t len)
{
	while (len) {
		uint32_t room = rte_pktmbuf_tailroom(*last), n;

		if (!room || RTE_MBUF_HAS_EXTBUF(*last)) {
			struct rte_mbuf *s = eth_pkt_alloc(t->st);

			if (!s)
				return -ENOMEM;
			s->data_off = 0; /* headers live in the first segment only */
			(*last)->next = s;
			*last = s;
			m->nb_segs++;
			continue;
		}
		n = len < room ? len : room;
		if (src) {
			memcpy(rte_pktmbuf_mtod_offset(*last, uint8_t *, (*last)->data_len), src, n);
			src += n;
		} else {
			eth_bufq_read(&t->sbuf, soff,
			              rte_pktmbuf_mtod_offset(*last, uint8_t *, (*last)->data_len), n);
			soff += n;
		}
		(*last)->data_len = (uint16_t)((*last)->data_len + n);
		m->pkt_len += n;
		xlt_counter_add(&t->st->stats.copied_out, n);
		len -= n;
	}
	return 0;
}

/* Chains an mbuf pointing at LEN lent bytes at DATA after *LAST; it holds a reference of its own. */
static int append_ref(struct eth_tcb *t, struct rte_mbuf *m, struct rte_mbuf **last,
                      const struct eth_sndq_ent *e, const uint8_t *data, uint32_t len)
{
	struct rte_mbuf *s = eth_pkt_alloc(t->st);
	struct extref *r;

	if (!s)
		return -ENOMEM;
	r = (struct extref *)s->buf_addr; /* the mbuf's own room (see struct extref) */
	r->sh.free_cb = extref_free;
	r->sh.fcb_opaque = r;
	rte_mbuf_ext_refcnt_set(&r->sh, 1);
	r->hold = e->hold;
	r->hops = e->hops;
	r->st = t->st;
	e->hops->get(e->hold);
	xlt_counter_add(&t->st->stats.tx_lent_mbufs, 1);
	/* the device reads it with the CPU (ETH_OFFLOAD_EXTMEM) or by its virtual address in DPDK's memory
	 * (ETH_OFFLOAD_DEVMEM, virtio_user): no IO address needed; never written */
	rte_pktmbuf_attach_extbuf(s, (void *)(uintptr_t)data, RTE_BAD_IOVA, (uint16_t)len, &r->sh);
	s->data_len = (uint16_t)len;
	(*last)->next = s;
	*last = s;
	m->nb_segs++;
	m->pkt_len += len;
	return 0;
}

int eth_sndq_payload(struct eth_tcb *t, struct rte_mbuf *m, uint32_t off, uint32_t len)
{
	bool ext = t->st->c.offloads & ETH_OFFLOAD_EXTMEM, dev = t->st->c.offloads & ETH_OFFLOAD_DEVMEM;
	struct eth_sndq *q = &t->sndq;
	struct rte_mbuf *last = m;
	uint32_t pos = 0, soff = 0;
	unsigned i = 0;
	int ret;

	if (!has_ring(q))
		return append_copy(t, m, &last, NULL, off, len);
	/* start at the entry where the last frame ended when it is still queued past the head (whose
	 * start moves with partial acknowledgements) and starts at or before OFF: a retransmission
	 * of older bytes walks from the head */
	if (q->at_ent > q->popped && q->at_ent - q->popped < q->n && q->at_pos - q->acked <= off) {
		i = (unsigned)(q->at_ent - q->popped);
		pos = (uint32_t)(q->at_pos - q->acked);
		soff = (uint32_t)(q->at_soff - q->sbuf_acked);
	}
	for (; len && i < q->n; i++) {
		const struct eth_sndq_ent *e = ent_at(t, i);
		uint32_t in, k;

		if (off >= pos + e->len) {
			pos += e->len;
			if (!e->data)
				soff += e->len;
			continue;
		}
		in = off - pos;
		k = e->len - in < len ? e->len - in : len;
		if (!e->data)
			ret = append_copy(t, m, &last, NULL, soff + in, k);
		else if (ext || (dev && e->devmem))
			ret = append_ref(t, m, &last, e, e->data + in, k);
		else
			ret = append_copy(t, m, &last, e->data + in, 0, k);
		if (ret)
			return ret;
		q->at_ent = q->popped + i;
		q->at_pos = q->acked + pos;
		q->at_soff = q->sbuf_acked + soff;
		pos += e->len;
		if (!e->data)
			soff += e->len;
		off += k;
		len -= k;
	}
	return 0;
}

void eth_sndq_ack(struct eth_tcb *t, uint32_t n)
{
	struct eth_stack *st = t->st;
	struct eth_sndq *q = &t->sndq;

	if (n > eth_sndq_len(t))
		n = eth_sndq_len(t);
	if (!has_ring(q)) {
		eth_bufq_consume(&st->chunks, &t->sbuf, n);
	} else {
		while (n && q->n) {
			struct eth_sndq_ent *e = ent_at(t, 0);
			uint32_t k = e->len < n ? e->len : n;

			if (e->data) {
				e->data += k;
				if (e->copy)
					q->copied -= k;
				else {
					q->lent -= k;
					xlt_counter_add(&st->stats.tx_lent_bytes, -(uint64_t)k);
				}
			} else {
				eth_bufq_consume(&st->chunks, &t->sbuf, k);
				q->sbuf_acked += k;
			}
			q->acked += k;
			if (e->report)
				q->sent_due += k;
			e->len -= k;
			n -= k;
			if (e->len)
				break;
			if (e->data)
				e->hops->put(e->hold); /* frames still pointing at it hold their own */
			q->head = (uint16_t)((q->head + 1u) % ring_cap(q));
			q->n--;
			q->popped++;
		}
		if (!q->n && q->ring)
			ring_drop(t);
		if (q->sent_due)
			eth_tcb_event(t, ETH_EV_SENT); /* reported from the relay phase (stack.c) */
	}
	if (t->sbuf.len == 0)
		eth_bufq_trim(&st->chunks, &t->sbuf);
	eth_buf_gauge(st);
}

void eth_sndq_free(struct eth_tcb *t, bool drop_report)
{
	struct eth_sndq *q = &t->sndq;

	if (has_ring(q)) {
		for (unsigned i = 0; i < q->n; i++) {
			struct eth_sndq_ent *e = ent_at(t, i);

			if (e->data)
				e->hops->put(e->hold); /* lent memory, or a copy's mbuf */
		}
		if (q->ring)
			ring_drop(t);
		q->head = q->n = 0;
	}
	xlt_counter_add(&t->st->stats.tx_lent_bytes, -(uint64_t)q->lent);
	q->lent = 0;
	q->copied = 0;
	if (drop_report)
		q->sent_due = 0;
	eth_bufq_free(&t->st->chunks, &t->sbuf);
}
