/* ib_side/conn.c's worker without a device: what happens to a connection the worker is done with.
 * A refused connection (no session took it) lingers while its abort is on its way to the peer, and
 * is then handed back to the control thread, which frees it. Whatever happens to it meanwhile (here
 * the control thread's DISCONNECTED, as when the peer's DREQ comes) must not put it back on the
 * worker's work list: the relay and flush phases would then walk a connection that the control
 * thread may already have freed. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "ib_side/conn.h"
#include "ib_side/ib.h"

#define RING_N 64u

static struct ib_worker w;
static struct ib_slot slots[4];

static struct rte_ring *ring_new(const char *name)
{
	ssize_t sz = rte_ring_get_memsize_elem(sizeof(struct ib_msg), RING_N);
	struct rte_ring *r;

	assert_true(sz > 0);
	r = aligned_alloc(64, ((size_t)sz + 63) & ~(size_t)63);
	assert_non_null(r);
	assert_int_equal(rte_ring_init(r, name, RING_N, RING_F_SP_ENQ | RING_F_SC_DEQ), 0);
	return r;
}

static int setup(void **state)
{
	(void)state;
	memset(&w, 0, sizeof(w));
	memset(slots, 0, sizeof(slots));
	STAILQ_INIT(&w.work); /* as init_worker */
	LIST_INIT(&w.live);
	w.slots = slots;
	w.n_slots = 4;
	w.wake_fd = -1;
	w.in = ring_new("in");
	w.out = ring_new("out");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(w.in);
	free(w.out);
	return 0;
}

static void msg(enum ib_msg_type type, struct ib_conn *c)
{
	struct ib_msg m = {.type = type, .slot = c->slot, .gen = c->gen, .conn = c, .err = -ECONNREFUSED};

	assert_int_equal(rte_ring_sp_enqueue_elem(w.in, &m, sizeof(m)), 0);
}

/* A connection the control thread hands the worker (ADOPT) that then fails (no session took it),
 * with its abort to the peer in flight. */
static struct ib_conn *refused(uint32_t slot)
{
	struct ib_conn *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	c->slot = slot;
	c->gen = 1;
	c->w = &w;
	msg(IB_MSG_ADOPT, c);
	msg(IB_MSG_FAILED, c);
	ib_worker_poll(&w, 10, 0);
	assert_ptr_equal(slots[slot].conn, c);
	assert_true(c->listed);
	c->abort_sent = true;
	c->ctrl_used = 1;
	c->linger_until = 1000;
	return c;
}

static void test_retired_stays_off_the_work_list(void **state)
{
	struct ib_conn *c = refused(1);
	struct ib_msg m;

	(void)state;
	ib_worker_flush(&w); /* closed, no session: retired, and it lingers (its abort is out) */
	assert_ptr_equal(SLIST_FIRST(&w.linger), c);
	assert_true(STAILQ_EMPTY(&w.work));
	assert_int_equal(rte_ring_count(w.out), 0);
	/* the peer's DREQ reaches the worker in the round whose linger check hands it back */
	msg(IB_MSG_DISCONNECTED, c);
	ib_worker_poll(&w, 2000, 0);
	assert_true(SLIST_EMPTY(&w.linger));
	assert_int_equal(rte_ring_sc_dequeue_elem(w.out, &m, sizeof(m)), 0);
	assert_int_equal(m.type, IB_MSG_RELEASE);
	assert_ptr_equal(m.conn, c);
	/* handed back: the control thread may free it now, so no list of the worker holds it */
	assert_true(STAILQ_EMPTY(&w.work));
	assert_false(c->listed);
	assert_null(slots[1].conn);
	assert_int_equal(ib_worker_flush(&w), 0);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_retired_stays_off_the_work_list, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
