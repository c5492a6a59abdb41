/* ib_side/lend.c without a device: the segments lend() describes over the receive ring (after SKIP,
 * across the ring's wrap, none past what arrived), the end of stream it passes on, and the buffer
 * set's reference count: a set whose connection is destroyed while references are out waits on its
 * device's lent list, and reaches the returned stack (for the pool) only with its last put. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ib_side/conn.h"
#include "ib_side/ib.h"
#include "ib_side/proto.h"

#define RSIZE 1024u
#define MS    1000000ull
#define DEPTH 16u

static struct ib_worker w;
static struct ib_dev dev;
static struct ib_ctl_stats st;

static struct ib_conn *mk(void)
{
	struct ib_conn *c = calloc(1, sizeof(*c) + DEPTH * sizeof(uint32_t));
	struct ib_bufs *b = calloc(1, sizeof(*b));

	assert_non_null(c);
	assert_non_null(b);
	b->rbuf = calloc(1, RSIZE);
	b->rbuf_size = RSIZE;
	b->dev = &dev;
	c->bufs = b;
	c->w = &w;
	c->ws = IB_W_OPEN;
	c->s.ops = &ib_conn_ops;
	c->s.state = XLT_STREAM_OPEN;
	ib_rx_init(&c->rx, RSIZE, DEPTH, c->ends);
	ib_bufs_lend_init(b);
	return c;
}

static void rm(struct ib_conn *c)
{
	free(c->bufs->rbuf);
	free(c->bufs);
	free(c);
}

static int setup(void **state)
{
	(void)state;
	memset(&w, 0, sizeof(w));
	STAILQ_INIT(&w.work); /* as init_worker */
	memset(&dev, 0, sizeof(dev));
	memset(&st, 0, sizeof(st));
	return 0;
}

/* What arrived and was not consumed, after SKIP, in ring order: two segments across the wrap. */
static void test_segments(void **state)
{
	struct ib_conn *c = mk();
	struct xlt_seg v[XLT_LEND_MAX];

	(void)state;
	c->rx.consumed = 1000;
	c->rx.recvd = 1300; /* 24 bytes to the ring's end, 276 from its start */
	assert_int_equal(ib_conn_lend(&c->s, 0, v, XLT_LEND_MAX), 2);
	assert_ptr_equal(v[0].data, c->bufs->rbuf + 1000);
	assert_int_equal(v[0].len, 24);
	assert_ptr_equal(v[1].data, c->bufs->rbuf);
	assert_int_equal(v[1].len, 276);
	assert_ptr_equal(v[0].hold, c->bufs);
	assert_non_null(v[0].hops);
	assert_int_equal(ib_conn_lend(&c->s, 24, v, XLT_LEND_MAX), 1);
	assert_ptr_equal(v[0].data, c->bufs->rbuf);
	assert_int_equal(v[0].len, 276);
	assert_int_equal(ib_conn_lend(&c->s, 100, v, 1), 1);
	assert_ptr_equal(v[0].data, c->bufs->rbuf + 76);
	assert_int_equal(v[0].len, 200);
	assert_int_equal(ib_conn_lend(&c->s, 300, v, XLT_LEND_MAX), 0); /* all lent already */
	assert_int_equal(ib_conn_lend(&c->s, 0, v, 1), 1);              /* MAX respected */
	/* lending released nothing */
	assert_int_equal(c->rx.consumed, 1000);
	assert_int_equal(c->s.peer_done, 0);
	/* not open: nothing */
	c->ws = IB_W_CLOSING;
	assert_int_equal(ib_conn_lend(&c->s, 0, v, XLT_LEND_MAX), 0);
	rm(c);
}

/* End of stream reaches the session through lend too, once every byte was consumed (not while
 * bytes are only lent). */
static void test_end_of_stream(void **state)
{
	struct ib_conn *c = mk();
	struct xlt_seg v[XLT_LEND_MAX];

	(void)state;
	c->rx.recvd = 10;
	c->rx.eof = true;
	assert_int_equal(ib_conn_lend(&c->s, 10, v, XLT_LEND_MAX), 0);
	assert_int_equal(c->s.peer_done, 0); /* 10 bytes lent, not delivered */
	c->rx.consumed = 10;
	assert_int_equal(ib_conn_lend(&c->s, 0, v, XLT_LEND_MAX), 0);
	assert_int_equal(c->s.peer_done, 1);
	rm(c);
}

/* References outlive the connection: its set goes to the pool only with the last one. */
static void test_refcount(void **state)
{
	struct ib_conn *c = mk();
	struct ib_bufs *b = c->bufs;
	struct xlt_seg v[XLT_LEND_MAX];

	(void)state;
	c->rx.recvd = 100;
	assert_int_equal(ib_conn_lend(&c->s, 0, v, XLT_LEND_MAX), 1);
	v[0].hops->get(v[0].hold); /* a send queue's reference */
	v[0].hops->get(v[0].hold); /* a frame's */
	assert_int_equal(b->refs, 3);
	/* the connection is destroyed with references out: the set waits */
	assert_false(ib_bufs_conn_done(b, &st));
	assert_ptr_equal(LIST_FIRST(&dev.lent), b);
	assert_int_equal(st.buf_lent, 1);
	assert_null(ib_bufs_take_returned(&dev, &st));
	v[0].hops->put(v[0].hold);
	assert_null(ib_bufs_take_returned(&dev, &st));
	assert_int_equal(st.buf_lent, 1);
	v[0].hops->put(v[0].hold); /* the last: pushed for the control thread */
	assert_int_equal(b->refs, 0);
	assert_ptr_equal(ib_bufs_take_returned(&dev, &st), b);
	assert_null(b->ret_next);
	assert_true(LIST_EMPTY(&dev.lent));
	assert_int_equal(st.buf_lent, 0);
	assert_null(ib_bufs_take_returned(&dev, &st));
	/* reused for the next connection: one reference again; none out, so straight back */
	ib_bufs_lend_init(b);
	assert_true(ib_bufs_conn_done(b, &st));
	assert_true(LIST_EMPTY(&dev.lent));
	rm(c);
}

/* Several sets, returned in any order: each found and unlinked from the lent list. */
static void test_many_sets(void **state)
{
	struct ib_conn *c[3] = {mk(), mk(), mk()};
	struct ib_bufs *r;
	unsigned n = 0;

	(void)state;
	for (unsigned i = 0; i < 3; i++) {
		c[i]->rx.recvd = 10;
		c[i]->bufs->refs++; /* one reference out each (as hops->get) */
		assert_false(ib_bufs_conn_done(c[i]->bufs, &st));
	}
	assert_int_equal(st.buf_lent, 3);
	{
		struct xlt_seg v[1];
		assert_int_equal(ib_conn_lend(&c[1]->s, 0, v, 1), 1);
		v[0].hops->put(v[0].hold);
		assert_int_equal(ib_conn_lend(&c[0]->s, 0, v, 1), 1);
		v[0].hops->put(v[0].hold);
	}
	for (r = ib_bufs_take_returned(&dev, &st); r; r = r->ret_next)
		n++;
	assert_int_equal(n, 2);
	assert_int_equal(st.buf_lent, 1);
	assert_ptr_equal(LIST_FIRST(&dev.lent), c[2]->bufs);
	c[2]->bufs->refs--;
	assert_int_equal(st.buf_lent, 1); /* (a put by hand: nothing pushed) */
	for (unsigned i = 0; i < 3; i++)
		rm(c[i]);
}

/* Segments carry their set's flags: XLT_SEG_DEVMEM for a set whose memory the gateway gave (DPDK's
 * heap, ib_ctl_bufmem), none for a set in pages of its own. */
static void test_seg_flags(void **state)
{
	struct ib_conn *c = mk();
	struct xlt_seg v[XLT_LEND_MAX];

	(void)state;
	c->rx.consumed = 1000;
	c->rx.recvd = 1300;
	assert_int_equal(ib_conn_lend(&c->s, 0, v, XLT_LEND_MAX), 2);
	assert_int_equal(v[0].flags, 0);
	assert_int_equal(v[1].flags, 0);
	c->bufs->seg_flags = XLT_SEG_DEVMEM;
	assert_int_equal(ib_conn_lend(&c->s, 0, v, XLT_LEND_MAX), 2);
	assert_int_equal(v[0].flags, XLT_SEG_DEVMEM);
	assert_int_equal(v[1].flags, XLT_SEG_DEVMEM);
	rm(c);
}

/* ---- the send side: a send window for every byte, a smaller send ring for the copies ---- */

#define WIN  1024u /* the route's sbuf_size */
#define RING 256u  /* the set's send ring (a lending route's small copy area) */

static uint8_t frames[4096]; /* "the Ethernet frames": registered external memory */
static unsigned holds;       /* references the IB side holds on them */

static void fr_get(void *hold)
{
	(void)hold;
	holds++;
}

static void fr_put(void *hold)
{
	(void)hold;
	assert_true(holds > 0);
	holds--;
}

static const struct xlt_hold_ops fr_hops = {.get = fr_get, .put = fr_put};

static struct ibv_mr xmr = {.addr = frames, .length = sizeof(frames), .lkey = 77};
static struct ibv_mr smr = {.lkey = 55};

static struct ib_conn *mk_tx(void)
{
	struct ib_conn *c = mk();

	c->bufs->sbuf = calloc(1, RING);
	assert_non_null(c->bufs->sbuf);
	c->bufs->sbuf_size = RING;
	c->bufs->smr = &smr;
	c->bufs->xmr[0] = &xmr;
	c->bufs->n_xmr = 1;
	c->send_sge = IB_LENT_SGE;
	c->sbuf_size = WIN;
	ib_tx_init(&c->tx, WIN, 8, 100);
	holds = 0;
	return c;
}

static void rm_tx(struct ib_conn *c)
{
	free(c->bufs->sbuf);
	rm(c);
}

static struct xlt_seg lent_seg(uint32_t off, uint32_t len)
{
	return (struct xlt_seg){
	    .data = frames + off, .len = len, .flags = XLT_SEG_EXTMEM, .hold = frames, .hops = &fr_hops};
}

static struct xlt_seg copy_seg(const uint8_t *data, uint32_t len)
{
	return (struct xlt_seg){.data = data, .len = len}; /* no hold: valid during the call only */
}

/* One data write of MAX bytes at most, as the flush phase posts it (conn.c post_data): its scatter
 * list in SGE; returns its length. */
static uint32_t post(struct ib_conn *c, uint32_t max, struct ibv_sge *sge, unsigned *n_sge, uint32_t *n_lent)
{
	uint32_t n = ib_lent_walk(c, max, sge, n_sge, n_lent);

	c->tx.posted += n;
	c->cp_posted += n - *n_lent;
	return n;
}

/* The writes' completion up to stream byte DONE (in order, as an RC queue pair completes them). */
static void complete_to(struct ib_conn *c, uint64_t done)
{
	ib_tx_done(&c->tx, (uint32_t)(done - c->tx.done));
	ib_lent_done(c);
}

/* Lent bytes take room in the window only: far more than the ring holds go out by reference, while
 * copies stop at the ring's size (the source waits) and go on once their writes completed. */
static void test_send_ring(void **state)
{
	struct ib_conn *c = mk_tx();
	uint8_t src[600];
	struct xlt_seg g[3];
	struct ibv_sge sge[IB_LENT_SGE];
	unsigned n_sge;
	uint32_t n_lent;

	(void)state;
	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 1);
	/* 600 lent (beyond the ring's 256), then copies: only the ring's 256 of them */
	g[0] = lent_seg(0, 600);
	g[1] = copy_seg(src, 300);
	assert_int_equal(ib_lent_take(c, g, 2), 856);
	assert_int_equal(holds, 1);
	assert_int_equal(c->lt_lent, 600);
	assert_int_equal(ib_copy_queued(c), 256);
	assert_int_equal(ib_copy_space(c), 0);
	assert_memory_equal(c->bufs->sbuf, src, 256);
	/* the ring full: a copy takes nothing (op_write too), a lent segment what the window has left */
	g[0] = copy_seg(src, 10);
	assert_int_equal(ib_lent_take(c, g, 1), 0);
	assert_int_equal(ib_conn_ops.write(&c->s, src, 10), 0);
	assert_true(c->want_writable);
	g[0] = lent_seg(1000, 300);
	assert_int_equal(ib_lent_take(c, g, 1), WIN - 856);
	assert_int_equal(ib_tx_space(&c->tx), 0);
	/* one write carries it all, in stream order, each kind from where it lies */
	assert_int_equal(post(c, 4096, sge, &n_sge, &n_lent), WIN);
	assert_int_equal(n_sge, 3);
	assert_int_equal(n_lent, WIN - 256);
	assert_int_equal(sge[0].addr, (uintptr_t)frames);
	assert_int_equal(sge[0].length, 600);
	assert_int_equal(sge[0].lkey, 77);
	assert_int_equal(sge[1].addr, (uintptr_t)c->bufs->sbuf);
	assert_int_equal(sge[1].length, 256);
	assert_int_equal(sge[1].lkey, 55);
	assert_int_equal(sge[2].addr, (uintptr_t)(frames + 1000));
	assert_int_equal(sge[2].length, WIN - 856);
	/* completions (of writes the device split, say) in the middle of the first segment, then past
	 * it: its hold goes, the 100 copies' room comes back */
	complete_to(c, 300);
	assert_int_equal(holds, 2);
	assert_int_equal(c->cp_done, 0);
	complete_to(c, 700);
	assert_int_equal(holds, 1);
	assert_int_equal(c->cp_done, 100);
	assert_int_equal(ib_copy_space(c), 100);
	/* everything: the ring is empty again, no hold left */
	complete_to(c, WIN);
	assert_int_equal(holds, 0);
	assert_int_equal(c->cp_done, 256);
	assert_int_equal(ib_copy_space(c), RING);
	rm_tx(c);
}

/* Copies wrap around the ring at their own count, whatever lent bytes lie between them, and a
 * write's scatter list follows them across the wrap. */
static void test_send_ring_wrap(void **state)
{
	struct ib_conn *c = mk_tx();
	uint8_t src[RING], got[RING];
	struct xlt_seg g[2];
	struct ibv_sge sge[IB_LENT_SGE];
	unsigned n_sge;
	uint32_t n_lent, at = 0;

	(void)state;
	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(255 - i);
	/* 200 copies, 100 lent; all written and completed */
	assert_int_equal(ib_conn_ops.write(&c->s, src, 200), 200);
	g[0] = lent_seg(0, 100);
	assert_int_equal(ib_lent_take(c, g, 1), 100);
	assert_int_equal(post(c, 4096, sge, &n_sge, &n_lent), 300);
	complete_to(c, 300);
	assert_int_equal(c->cp_done, 200);
	/* 150 copies now land at ring offset 200: 56 there, 94 from the start */
	g[0] = copy_seg(src, 150);
	g[1] = lent_seg(500, 50);
	assert_int_equal(ib_lent_take(c, g, 2), 200);
	assert_memory_equal(c->bufs->sbuf + 200, src, 56);
	assert_memory_equal(c->bufs->sbuf, src + 56, 94);
	assert_int_equal(ib_lent_walk(c, 4096, sge, &n_sge, &n_lent), 200);
	assert_int_equal(n_sge, 3);
	assert_int_equal(n_lent, 50);
	assert_int_equal(sge[0].addr, (uintptr_t)(c->bufs->sbuf + 200));
	assert_int_equal(sge[0].length, 56);
	assert_int_equal(sge[1].addr, (uintptr_t)c->bufs->sbuf);
	assert_int_equal(sge[1].length, 94);
	assert_int_equal(sge[2].addr, (uintptr_t)(frames + 500));
	for (unsigned i = 0; i < 2; i++) {
		memcpy(got + at, (const void *)(uintptr_t)sge[i].addr, sge[i].length);
		at += sge[i].length;
	}
	assert_memory_equal(got, src, 150);
	/* a write that stops inside the copies: the next one starts where it stopped, in the ring */
	assert_int_equal(post(c, 100, sge, &n_sge, &n_lent), 100);
	assert_int_equal(n_sge, 2);
	assert_int_equal(post(c, 4096, sge, &n_sge, &n_lent), 100);
	assert_int_equal(sge[0].addr, (uintptr_t)(c->bufs->sbuf + 44));
	assert_int_equal(sge[0].length, 50);
	assert_int_equal(sge[1].addr, (uintptr_t)(frames + 500));
	complete_to(c, c->tx.posted);
	assert_int_equal(c->cp_done, 350);
	assert_int_equal(holds, 0);
	assert_int_equal(ib_copy_space(c), RING);
	rm_tx(c);
}

/* A chain the flush phase drops unposted (here: the peer's next advert is absurd, so the connection
 * is reset) gives back what its writes accounted, as a refused post does: at release the lent holds
 * go at once, instead of waiting IB_LENT_WAIT_NS for completions that will never come (pinning the
 * frames, shared by every tenant, and counting them late). */
static void test_dropped_chain(void **state)
{
	struct ib_conn *c = mk_tx();
	struct ib_rs_sge tsgl[2] = {{.addr = 0x10000, .key = 9, .length = 100},
				    {.addr = 0x20000, .key = 9, .length = 0xffffffffu}};
	struct xlt_seg g = lent_seg(0, 600);

	(void)state;
	w.wake_fd = -1;
	c->bufs->tsgl = tsgl;
	c->rx.eof = true; /* (no credit to return: the chain holds the data write alone) */
	assert_int_equal(ib_conn_ops.write_lent(&c->s, &g, 1), 600);
	assert_int_equal(holds, 1);
	ib_worker_flush(&w); /* one write of 100 chained into entry 0; entry 1 is refused */
	assert_int_equal(w.st.violations[IB_VIOL_ADVERT], 1);
	assert_int_equal(w.n_chain, 0);
	assert_int_equal(c->tx.posted, 0);
	assert_int_equal(c->tx.wrs, 0);
	assert_false(ib_lent_wait(c, 1));
	assert_int_equal(holds, 0);
	STAILQ_INIT(&w.work);
	rm_tx(c);
}

/* ---- a set without a send ring: copies go into copy buffers (ib_copy_ops) ---- */

#define CB_SIZE 128u /* each copy buffer's bytes */
#define CB_CAP  300u /* the route's copy_size: copies in flight at most */
#define CB_BASE 2048u /* copy buffers lie in the registered "frames", from here on */

static unsigned cb_holds, cb_next;
static unsigned cb_share; /* buffers out at most: past it, -ENOBUFS (the worker's share) */
static bool cb_fail;	  /* -ENOMEM: the pool is short */

static void cb_get_ref(void *hold)
{
	(void)hold;
	fail(); /* nobody but the engine holds a copy buffer: never taken twice */
}

static void cb_put(void *hold)
{
	(void)hold;
	assert_true(cb_holds > 0);
	cb_holds--;
}

static const struct xlt_hold_ops cb_hops = {.get = cb_get_ref, .put = cb_put};

static int cb_get(void *warg, struct xlt_seg *seg)
{
	(void)warg;
	if (cb_fail || CB_BASE + (cb_next + 1) * CB_SIZE > sizeof(frames))
		return -ENOMEM;
	if (cb_holds >= cb_share)
		return -ENOBUFS;
	*seg = (struct xlt_seg){.data = frames + CB_BASE + cb_next * CB_SIZE, .len = CB_SIZE, .hold = frames,
	                        .hops = &cb_hops};
	cb_next++;
	cb_holds++;
	return 0;
}

static const struct ib_copy_ops cb_ops = {.get = cb_get};

static struct ib_conn *mk_cb(void)
{
	struct ib_conn *c = mk_tx();

	free(c->bufs->sbuf);
	c->bufs->sbuf = NULL;
	c->bufs->sbuf_size = 0;
	c->copy_size = CB_CAP;
	w.copy_ops = &cb_ops;
	cb_holds = cb_next = 0;
	cb_share = UINT32_MAX;
	cb_fail = false;
	memset(frames, 0, sizeof(frames));
	return c;
}

/* The bytes one write's scatter list carries, appended to OUT at *AT. */
static void gather(const struct ibv_sge *sge, unsigned n, uint8_t *out, uint32_t *at)
{
	for (unsigned i = 0; i < n; i++) {
		memcpy(out + *at, (const void *)(uintptr_t)sge[i].addr, sge[i].length);
		*at += sge[i].length;
	}
}

/* Copies land in copy buffers from the ops, filled on while the stream's last entry is one, held
 * until their writes completed; they count against copy_size (the source waits past it), take no
 * room a lent segment needs, are reported at once, and a write's scatter list carries them and lent
 * bytes in stream order. */
static void test_copy_buffers(void **state)
{
	struct ib_conn *c = mk_cb();
	uint8_t src[400], want[1024], got[1024];
	struct xlt_seg g[2];
	struct ibv_sge sge[IB_LENT_SGE];
	unsigned n_sge;
	uint32_t n_lent, at = 0, wn = 0;

	(void)state;
	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 13 + 5);
	memset(frames, 0xA5, CB_BASE); /* the lent frames' bytes */
	/* a preamble of 200 (write): two buffers, the second filled on */
	assert_int_equal(ib_conn_ops.write(&c->s, src, 150), 150);
	assert_int_equal(ib_conn_ops.write(&c->s, src + 150, 50), 50);
	memcpy(want, src, 200), wn = 200;
	assert_int_equal(cb_holds, 2);
	assert_int_equal(c->lent_n, 2);
	assert_int_equal(ib_copy_queued(c), 200);
	assert_int_equal(c->lt_taken, 0); /* (write's bytes are never reported) */
	/* then 100 lent and 150 copies (write_lent): the copies start a buffer of their own after the
	 * lent segment, and stop at copy_size (300 in flight) */
	g[0] = lent_seg(0, 100);
	g[1] = copy_seg(src, 150);
	assert_int_equal(ib_lent_take(c, g, 2), 200);
	memcpy(want + wn, frames, 100), wn += 100;
	memcpy(want + wn, src, 100), wn += 100;
	assert_int_equal(cb_holds, 3);
	assert_int_equal(holds, 1);
	assert_int_equal(ib_copy_queued(c), CB_CAP);
	assert_int_equal(ib_copy_space(c), 0);
	assert_int_equal(ib_conn_ops.write(&c->s, src, 10), 0);
	assert_true(c->want_writable);
	/* the copies before the lent segment are done with their source: reported up to it */
	assert_int_equal(ib_lent_reportable(c), 0);
	/* one write carries all, in stream order: buffers 1 and 2, the frames, buffer 3 */
	assert_int_equal(post(c, 4096, sge, &n_sge, &n_lent), 400);
	assert_int_equal(n_sge, 4);
	assert_int_equal(n_lent, 100);
	for (unsigned i = 0; i < n_sge; i++)
		assert_int_equal(sge[i].lkey, 77); /* all in the registered frames */
	assert_int_equal(sge[0].length, CB_SIZE);
	assert_int_equal(sge[1].length, 200 - CB_SIZE);
	assert_int_equal(sge[2].addr, (uintptr_t)frames);
	assert_int_equal(sge[3].length, 100);
	gather(sge, n_sge, got, &at);
	assert_int_equal(at, wn);
	assert_memory_equal(got, want, wn);
	/* completions: the first buffer goes once its bytes are written, the second with the 200th */
	complete_to(c, 100);
	assert_int_equal(cb_holds, 3);
	complete_to(c, 150);
	assert_int_equal(cb_holds, 2);
	assert_int_equal(c->cp_done, 150);
	complete_to(c, 250);
	assert_int_equal(cb_holds, 1);
	assert_int_equal(holds, 1);
	assert_int_equal(c->cp_done, 200);
	assert_int_equal(ib_copy_space(c), CB_CAP - 100) /* 100 copies still in flight */;
	assert_int_equal(ib_lent_reportable(c), 0); /* the lent segment is not done yet */
	complete_to(c, 300);
	assert_int_equal(holds, 0);
	assert_int_equal(ib_lent_reportable(c), 200); /* its 100 and the 100 copies after it */
	/* the third buffer is filled on (28 bytes of room), then a fourth */
	assert_int_equal(ib_conn_ops.write(&c->s, src + 200, 60), 60);
	assert_int_equal(cb_holds, 2);
	complete_to(c, 400);
	assert_int_equal(cb_holds, 2); /* the 60 are not written yet: the third stays */
	assert_int_equal(post(c, 4096, sge, &n_sge, &n_lent), 60);
	assert_int_equal(n_sge, 2);
	assert_int_equal(sge[0].length, 28);
	assert_int_equal(n_lent, 0);
	at = 0;
	gather(sge, n_sge, got, &at);
	assert_memory_equal(got, src + 200, 60);
	complete_to(c, 460);
	assert_int_equal(cb_holds, 0);
	assert_int_equal(c->lent_n, 0);
	assert_int_equal(ib_copy_space(c), CB_CAP);
	STAILQ_INIT(&w.work); /* (the ops listed it) */
	rm_tx(c);
}

/* No copy buffer now (the pool is low): a copy takes nothing, counted, and the next try takes it;
 * copy buffers a released connection never posted go back at once, posted ones with their
 * completions (ib_lent_wait), and whatever is left once the queue pair is gone (ib_lent_put_all). */
static void test_copy_buffers_wait_and_release(void **state)
{
	struct ib_conn *c = mk_cb();
	uint8_t src[300] = {1};
	struct ibv_sge sge[IB_LENT_SGE];
	unsigned n_sge;
	uint32_t n_lent;

	(void)state;
	w.st.copy_waits = 0;
	cb_fail = true;
	assert_int_equal(ib_conn_ops.write(&c->s, src, 100), 0);
	assert_true(c->want_writable);
	assert_int_equal(w.st.copy_waits, 1);
	assert_int_equal(c->tx.queued, 0);
	cb_fail = false;
	assert_int_equal(ib_conn_ops.write(&c->s, src, 100), 100);
	/* a second buffer fails half way: the first's bytes are taken, the rest waits */
	cb_fail = true;
	assert_int_equal(ib_conn_ops.write(&c->s, src, 100), CB_SIZE - 100);
	assert_int_equal(w.st.copy_waits, 2);
	cb_fail = false;
	assert_int_equal(ib_conn_ops.write(&c->s, src, 100), 100);
	assert_int_equal(cb_holds, 2);
	/* one write posted, the rest not: released, the unposted buffer goes now, the posted one
	 * waits for its completion */
	assert_int_equal(post(c, 50, sge, &n_sge, &n_lent), 50);
	c->qp = NULL; /* (no queue pair to flush here) */
	assert_true(ib_lent_wait(c, 1));
	assert_int_equal(cb_holds, 1);
	complete_to(c, 50);
	assert_false(ib_lent_wait(c, 2));
	assert_int_equal(cb_holds, 0);
	STAILQ_INIT(&w.work); /* (the ops listed it) */
	rm_tx(c);

	/* released with a posted write that never completes: after the queue pair is gone */
	c = mk_cb();
	assert_int_equal(ib_conn_ops.write(&c->s, src, 10), 10);
	assert_int_equal(post(c, 4096, sge, &n_sge, &n_lent), 10);
	assert_true(ib_lent_wait(c, 1));
	assert_int_equal(cb_holds, 1);
	ib_lent_put_all(c);
	assert_int_equal(cb_holds, 0);
	STAILQ_INIT(&w.work); /* (the ops listed it) */
	rm_tx(c);

	/* a set without a ring and no copy ops: copies wait, nothing breaks */
	c = mk_cb();
	w.copy_ops = NULL;
	assert_int_equal(ib_conn_ops.write(&c->s, src, 10), 0);
	assert_int_equal(c->tx.queued, 0);
	STAILQ_INIT(&w.work); /* (the ops listed it) */
	rm_tx(c);
}

/* Copies between lent segments take a buffer each: buffers count whole against copy_size, so one
 * byte copies hold no more than copy_size (and one buffer) of the pool, however the bytes alternate. */
static void test_copy_buffers_counted_whole(void **state)
{
	struct ib_conn *c = mk_cb();
	static const uint8_t one = 7;
	struct xlt_seg g[2];
	struct ibv_sge sge[IB_LENT_SGE];
	unsigned n_sge;
	uint32_t n_lent;

	(void)state;
	for (unsigned i = 0; i < 3; i++) {
		g[0] = lent_seg(i * 10, 10);
		g[1] = copy_seg(&one, 1);
		assert_int_equal(ib_lent_take(c, g, 2), 11);
	}
	assert_int_equal(cb_holds, 3); /* 384 bytes of buffers for 3 bytes: the last one allowed */
	g[0] = lent_seg(30, 10);
	assert_int_equal(ib_lent_take(c, g, 2), 10); /* the copy waits */
	assert_int_equal(cb_holds, 3);
	assert_int_equal(ib_copy_queued(c), 3);
	assert_int_equal(w.st.copy_waits, 0); /* (its own limit, not the pool's) */
	/* the writes complete: the buffers go back, and copies take buffers again */
	assert_int_equal(post(c, 4096, sge, &n_sge, &n_lent), 43);
	complete_to(c, 43);
	assert_int_equal(cb_holds, 0);
	assert_int_equal(c->cb_bytes, 0);
	g[0] = copy_seg(&one, 1);
	assert_int_equal(ib_lent_take(c, g, 1), 1);
	assert_int_equal(cb_holds, 1);
	assert_int_equal(post(c, 4096, sge, &n_sge, &n_lent), 1);
	complete_to(c, 44);
	assert_int_equal(cb_holds, 0);
	STAILQ_INIT(&w.work);
	rm_tx(c);
}

/* CS[N] are the worker's live connections (what copy_reclaim walks), copying into the fake pool. */
static void live_on_worker(struct ib_conn *const *cs, unsigned n)
{
	LIST_INIT(&w.live);
	for (unsigned i = 0; i < n; i++)
		LIST_INSERT_HEAD(&w.live, cs[i], live_link);
	w.copy_ops = &cb_ops;
}

/* The copy buffers of connections whose peers take nothing are taken back when another's copy is
 * refused for want of the worker's share: of the connections holding copy buffers whose peer has
 * taken no byte for IB_COPY_HOLD_NS (5 s; a completed write restarts the clock), the one waiting
 * longest is reset (-ETIME, counted reclaimed), its buffers no write was posted from go back at
 * once (the asker gets one of them), the posted ones stay for their completions. Not the asker,
 * though it keeps the next walk near; none within IB_RECLAIM_GAP_NS (200 ms) of a reset; none
 * when the pool itself is short (-ENOMEM: no connection's buffers would cure that). */
static void test_copy_reclaim(void **state)
{
	struct ib_conn *v = mk_cb(), *a = mk_cb(), *d = mk_cb(), *b = mk_cb(); /* (each resets the pool) */
	uint8_t src[200] = {3};
	struct ibv_sge sge[IB_LENT_SGE];
	unsigned n_sge;
	uint32_t n_lent;

	(void)state;
	live_on_worker((struct ib_conn *[]){v, a, d, b}, 4);
	v->copy_size = WIN; /* (V, the asker, copies more than the others) */
	w.now = 500 * MS; /* V's peer: nothing taken since 0.5 s */
	assert_int_equal(ib_conn_ops.write(&v->s, src, 10), 10);
	w.now = 1000 * MS; /* A: two buffers, a write posted from the first */
	assert_int_equal(ib_conn_ops.write(&a->s, src, 200), 200);
	assert_int_equal(post(a, 50, sge, &n_sge, &n_lent), 50);
	w.now = 2000 * MS; /* ... which completes: A's peer took bytes at 2 s */
	complete_to(a, 50);
	w.now = 2200 * MS;
	assert_int_equal(ib_conn_ops.write(&d->s, src, 10), 10);
	w.now = 3000 * MS;
	assert_int_equal(ib_conn_ops.write(&b->s, src, 10), 10);
	assert_int_equal(cb_holds, 5);
	cb_share = 5; /* the worker's share is taken */

	/* 6.5 s: A has waited 4.5 s, D 4.3 s: none due; the asker V (6 s) would be: next walk in 0.2 s */
	w.now = 6500 * MS;
	w.st.copy_waits = 0;
	assert_int_equal(ib_conn_ops.write(&v->s, src, 200), CB_SIZE - 10);
	assert_int_equal(w.st.copy_waits, 1);
	assert_int_equal(w.reclaim_next, 6700 * MS);
	assert_int_equal(a->ws, IB_W_OPEN);
	assert_int_equal(v->ws, IB_W_OPEN);
	w.now = 6600 * MS;
	assert_int_equal(ib_conn_ops.write(&v->s, src, 10), 0);
	/* 7.1 s: A has waited 5.1 s: reset; its unposted buffer goes back, and the asker takes it */
	w.now = 7100 * MS;
	assert_int_equal(ib_conn_ops.write(&v->s, src, 10), 10);
	assert_int_equal(a->ws, IB_W_CLOSING);
	assert_int_equal(a->err, -ETIME);
	assert_true(a->qp_dead);
	assert_int_equal(w.st.closed[IB_CLOSE_RECLAIMED], 1);
	assert_int_equal(a->lent_n, 1); /* its posted buffer stays */
	assert_int_equal(cb_holds, 5);
	assert_int_equal(w.reclaim_next, 7300 * MS);
	/* V's writes complete (it holds none now), and the share shrinks to what is out */
	assert_int_equal(post(v, 4096, sge, &n_sge, &n_lent), CB_SIZE + 10);
	complete_to(v, CB_SIZE + 10);
	assert_int_equal(cb_holds, 3);
	cb_share = 3;
	/* 7.25 s: D has waited 5.05 s, but the last reset was 150 ms ago */
	w.now = 7250 * MS;
	assert_int_equal(ib_conn_ops.write(&v->s, src, 200), 0);
	assert_int_equal(d->ws, IB_W_OPEN);
	w.now = 7350 * MS;
	assert_int_equal(ib_conn_ops.write(&v->s, src, 10), 10);
	assert_int_equal(d->ws, IB_W_CLOSING);
	assert_int_equal(w.st.closed[IB_CLOSE_RECLAIMED], 2);
	assert_int_equal(cb_holds, 3);
	/* 9 s: B has waited 6 s, but the pool is short, not the share: no reset cures that */
	w.now = 9000 * MS;
	cb_fail = true;
	assert_int_equal(ib_conn_ops.write(&v->s, src, 200), CB_SIZE - 10);
	assert_int_equal(b->ws, IB_W_OPEN);
	assert_int_equal(w.st.closed[IB_CLOSE_RECLAIMED], 2);
	assert_int_equal(v->ws, IB_W_OPEN);

	assert_false(ib_lent_wait(a, w.now)); /* A's posted write completed: the rest was never posted */
	ib_lent_put_all(v);
	ib_lent_put_all(b);
	assert_int_equal(cb_holds, 0);
	STAILQ_INIT(&w.work); /* (the ops and the resets listed them) */
	rm_tx(v);
	rm_tx(a);
	rm_tx(d);
	rm_tx(b);
}

/* While the share runs out for a connection short of buffers (fewer than 2), every connection is held
 * to 2 for a second: one that held many (a peer that takes a little now and then) gives back what it
 * held beyond that as its writes complete, and the one that waited gets one. A refusal of a
 * connection that holds 2 or more declares no pressure. */
static void test_copy_pressure(void **state)
{
	struct ib_conn *x = mk_cb(), *y = mk_cb();
	uint8_t src[4 * CB_SIZE] = {5};
	struct ibv_sge sge[IB_LENT_SGE];
	unsigned n_sge;
	uint32_t n_lent;

	(void)state;
	live_on_worker((struct ib_conn *[]){x, y}, 2);
	x->copy_size = WIN;
	cb_share = 4;
	w.now = 1000 * MS; /* X takes the whole share */
	assert_int_equal(ib_conn_ops.write(&x->s, src, 4 * CB_SIZE), 4 * CB_SIZE);
	assert_int_equal(x->cb_n, 4);
	w.now = 1100 * MS; /* Y, holding none, is refused: pressure for a second (X is no victim: it moves) */
	assert_int_equal(ib_conn_ops.write(&y->s, src, 10), 0);
	assert_int_equal(w.copy_pressure_until, 2100 * MS);
	assert_int_equal(x->ws, IB_W_OPEN);
	/* X's writes complete; it copies again but takes 2 buffers only */
	assert_int_equal(post(x, 4096, sge, &n_sge, &n_lent), 4 * CB_SIZE);
	complete_to(x, 4 * CB_SIZE);
	assert_int_equal(cb_holds, 0);
	w.now = 1200 * MS;
	assert_int_equal(ib_conn_ops.write(&x->s, src, 4 * CB_SIZE), 2 * CB_SIZE);
	assert_int_equal(x->cb_n, 2);
	assert_int_equal(w.copy_pressure_until, 2100 * MS); /* (X's own wait declares none) */
	assert_int_equal(ib_conn_ops.write(&y->s, src, 10), 10); /* Y gets one */
	assert_int_equal(cb_holds, 3);
	/* the pressure over, X takes what the share has */
	w.now = 2200 * MS;
	assert_int_equal(ib_conn_ops.write(&x->s, src, 2 * CB_SIZE), CB_SIZE);
	assert_int_equal(x->cb_n, 3);
	assert_int_equal(cb_holds, 4);
	assert_int_equal(w.copy_pressure_until, 2100 * MS); /* (refused holding 3: no pressure) */

	ib_lent_put_all(x);
	ib_lent_put_all(y);
	assert_int_equal(cb_holds, 0);
	assert_int_equal(x->cb_n + y->cb_n, 0);
	STAILQ_INIT(&w.work);
	rm_tx(x);
	rm_tx(y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_segments, setup),
	    cmocka_unit_test_setup(test_end_of_stream, setup),
	    cmocka_unit_test_setup(test_refcount, setup),
	    cmocka_unit_test_setup(test_many_sets, setup),
	    cmocka_unit_test_setup(test_seg_flags, setup),
	    cmocka_unit_test_setup(test_send_ring, setup),
	    cmocka_unit_test_setup(test_send_ring_wrap, setup),
	    cmocka_unit_test_setup(test_dropped_chain, setup),
	    cmocka_unit_test_setup(test_copy_buffers, setup),
	    cmocka_unit_test_setup(test_copy_buffers_wait_and_release, setup),
	    cmocka_unit_test_setup(test_copy_buffers_counted_whole, setup),
	    cmocka_unit_test_setup(test_copy_reclaim, setup),
	    cmocka_unit_test_setup(test_copy_pressure, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
