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
#include "ib_side/proto.h"

#define RSIZE 1024u
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
	assert_ptr_equal(dev.lent, b);
	assert_int_equal(st.buf_lent, 1);
	assert_null(ib_bufs_take_returned(&dev, &st));
	v[0].hops->put(v[0].hold);
	assert_null(ib_bufs_take_returned(&dev, &st));
	assert_int_equal(st.buf_lent, 1);
	v[0].hops->put(v[0].hold); /* the last: pushed for the control thread */
	assert_int_equal(b->refs, 0);
	assert_ptr_equal(ib_bufs_take_returned(&dev, &st), b);
	assert_null(b->ret_next);
	assert_null(dev.lent);
	assert_int_equal(st.buf_lent, 0);
	assert_null(ib_bufs_take_returned(&dev, &st));
	/* reused for the next connection: one reference again; none out, so straight back */
	ib_bufs_lend_init(b);
	assert_true(ib_bufs_conn_done(b, &st));
	assert_null(dev.lent);
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
	assert_ptr_equal(dev.lent, c[2]->bufs);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_segments, setup),  cmocka_unit_test_setup(test_end_of_stream, setup),
	    cmocka_unit_test_setup(test_refcount, setup),  cmocka_unit_test_setup(test_many_sets, setup),
	    cmocka_unit_test_setup(test_seg_flags, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
