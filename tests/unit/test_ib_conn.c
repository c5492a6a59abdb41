/* ib_side/conn.c's worker without a device: what happens to a connection the worker is done with.
 * A refused connection (no session took it) lingers while its abort is on its way to the peer, and
 * is then handed back to the control thread, which frees it. Whatever happens to it meanwhile (here
 * the control thread's DISCONNECTED, as when the peer's DREQ comes) must not put it back on the
 * worker's work list: the relay and flush phases would then walk a connection that the control
 * thread may already have freed.
 *
 * And when a disconnect is decided: rdma_cm's DISCONNECTED waits until the connection's own
 * completion queue was drained (its peer's last messages may still be queued there), whatever the
 * worker's other completion queues hold. The queues here are stand-ins whose poll_cq the test
 * answers (ibv_poll_cq calls the context's).
 *
 * And what a peer sends once its connection closed while a session still holds it: counted in the
 * costless window, and past it no receive is posted again. */
#include <endian.h>
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
#include "ib_side/proto.h"

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

/* ---- disconnects and completion queues ---- */

static struct ib_cq busy_cq, quiet_cq, closed_cq, *cq_table[4];
static struct ibv_cq closed_ibv;
static unsigned closed_pending, reposts; /* completions closed_cq still has; receives posted */

/* The busy queue always has a full batch: completions of a connection that is gone (slot 3 holds
 * none), as a flood of another tenant's would keep it; the quiet one has nothing; the closed one has
 * CTRL KEEPALIVE messages for slot 2, closed_pending of them. */
static int fake_poll(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	if (cq == &closed_ibv) {
		int n = closed_pending < (unsigned)num ? (int)closed_pending : num;
		for (int i = 0; i < n; i++)
			wc[i] = (struct ibv_wc){
			    .wr_id = (uint64_t)IB_WR_RECV << IB_WR_KIND_SHIFT |
			             (uint64_t)2 << IB_WR_SLOT_SHIFT | (uint64_t)1 << IB_WR_GEN_SHIFT,
			    .status = IBV_WC_SUCCESS,
			    .wc_flags = IBV_WC_WITH_IMM,
			    .imm_data = htobe32(ib_rs_imm(IB_RS_OP_CTRL, IB_RS_CTRL_KEEPALIVE))};
		closed_pending -= (unsigned)n;
		return n;
	}
	if (cq != busy_cq.cq)
		return 0;
	for (int i = 0; i < num; i++)
		wc[i] = (struct ibv_wc){
		    .wr_id = (uint64_t)IB_WR_RECV << IB_WR_KIND_SHIFT | (uint64_t)3 << IB_WR_SLOT_SHIFT,
		    .status = IBV_WC_SUCCESS};
	return num;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp, (void)wr, (void)bad;
	reposts++;
	return 0;
}

static struct ibv_context fake_ctx = {.ops = {.poll_cq = fake_poll, .post_recv = fake_post_recv}};
static struct ibv_cq busy_ibv = {.context = &fake_ctx}, quiet_ibv = {.context = &fake_ctx};
static struct ibv_qp closed_qp = {.context = &fake_ctx};

/* A connection adopted on CQ, whose peer rdma_cm then reports gone (DISCONNECTED, as for a DREQ with
 * nothing before it), beside a worker whose busy CQ already has a flood on it. */
static struct ib_conn *vanished(struct ib_cq *cq, uint32_t cq_size)
{
	struct ib_conn *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	busy_cq = (struct ib_cq){.cq = &busy_ibv, .size = 1024};
	quiet_cq = (struct ib_cq){.cq = &quiet_ibv, .size = 1024};
	cq->size = cq_size;
	w.cqs = cq_table;
	w.max_cqs = 4;
	/* published as the control thread creates them: the flood's first, then C's (if another) */
	w.cqs[0] = &busy_cq;
	w.cqs[1] = cq;
	atomic_store_explicit(&w.cqs_pub, cq == &busy_cq ? 1u : 2u, memory_order_release);
	c->slot = 1;
	c->gen = 1;
	c->w = &w;
	c->cq = cq;
	msg(IB_MSG_ADOPT, c);
	msg(IB_MSG_DISCONNECTED, c);
	return c;
}

static void decided_and_handed_back(struct ib_conn *c)
{
	struct ib_msg m;

	assert_int_equal(c->ws, IB_W_CLOSING);
	assert_false(c->cm_gone);
	ib_worker_flush(&w); /* no session: retired, and handed back (nothing to linger for) */
	assert_int_equal(rte_ring_sc_dequeue_elem(w.out, &m, sizeof(m)), 0);
	assert_int_equal(m.type, IB_MSG_RELEASE);
	assert_ptr_equal(m.conn, c);
	free(c);
}

/* Its own CQ quiet, another busy: one poll finds its CQ empty, so nothing of its peer's is left to
 * come, and the disconnect is decided in that round. (It waited for every CQ of the worker to be
 * drained in one sweep: for as long as the other tenant's flood lasted.) */
static void test_disconnect_beside_a_busy_cq(void **state)
{
	struct ib_conn *c = vanished(&quiet_cq, 1024);

	(void)state;
	ib_worker_poll(&w, 10, 0);
	assert_int_equal(w.n_cqs, 2);
	assert_true(busy_cq.polled > 0);
	ib_worker_relay(&w);
	decided_and_handed_back(c);
}

/* Its own CQ the busy one: never drained, but once it gave up as many completions as it holds, what
 * was queued before the disconnect was taken. Not before: the first round takes fewer. */
static void test_disconnect_on_a_busy_cq(void **state)
{
	struct ib_conn *c = vanished(&busy_cq, 256);

	(void)state;
	ib_worker_poll(&w, 10, 0); /* (the first batches a round takes: fewer than 256) */
	ib_worker_relay(&w);
	assert_int_equal(c->ws, IB_W_ACCEPTING);
	assert_true(c->cm_gone);
	ib_worker_flush(&w);
	assert_true(c->listed); /* undecided: the next round looks again */
	for (int i = 0; i < 8 && c->ws == IB_W_ACCEPTING; i++) {
		ib_worker_poll(&w, 20 + (uint64_t)i, 0);
		ib_worker_relay(&w);
		if (c->ws == IB_W_ACCEPTING)
			ib_worker_flush(&w);
	}
	assert_true(busy_cq.polled >= 256);
	decided_and_handed_back(c);
}

/* A connection in slot 2 (generation 1) whose completions come from IBV (a stand-in CQ, closed_cq,
 * the worker's only one), in state WS. */
static struct ib_conn *conn_on_cq(struct ibv_cq *ibv, enum ib_w_state ws)
{
	struct ib_conn *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	closed_cq = (struct ib_cq){.cq = ibv, .size = 1024};
	w.cqs = cq_table;
	w.max_cqs = 4;
	w.cqs[w.n_cqs++] = &closed_cq;
	c->slot = 2;
	c->gen = 1;
	c->w = &w;
	c->cq = &closed_cq;
	c->ws = ws;
	slots[2] = (struct ib_slot){.conn = c, .gen = 1};
	return c;
}

/* ---- a write that fails after the peer's end of stream ---- */

static struct ibv_cq failed_ibv;
static unsigned failed_pending;

static int fake_poll_failed(struct ibv_cq *cq, int num, struct ibv_wc *wc)
{
	(void)cq;
	if (!failed_pending || num < 1)
		return 0;
	failed_pending--;
	wc[0] = (struct ibv_wc){
	    .wr_id = (uint64_t)IB_WR_DATA << IB_WR_KIND_SHIFT | (uint64_t)2 << IB_WR_SLOT_SHIFT |
	             (uint64_t)1 << IB_WR_GEN_SHIFT | 4096,
	    .status = IBV_WC_WR_FLUSH_ERR};
	return 1;
}

static void on_sent_count(void *arg, size_t n)
{
	*(size_t *)arg += n;
}

/* The peer sent its end of stream, then went away without DISCONNECT (rdma_cm's DISCONNECTED: the
 * queue pair is dead, the session still delivers the peer's bytes to TCP) while 4096 bytes of ours,
 * lent by the Ethernet side, were in flight; their write completes flushed. They never arrived: none
 * is reported as sent (the session would count them delivered), the connection waits until the
 * session took what the peer sent before (an upload whose sender left at once loses nothing), and
 * then ends with a reset. (The completion was counted done, the bytes reported, and the close
 * orderly.) */
static void test_write_failed_after_eof(void **state)
{
	static struct ibv_context ctx = {.ops = {.poll_cq = fake_poll_failed, .post_recv = fake_post_recv}};
	struct ib_conn *c;
	size_t reported = 0;

	(void)state;
	failed_ibv = (struct ibv_cq){.context = &ctx};
	c = conn_on_cq(&failed_ibv, IB_W_OPEN);
	c->rx.eof = true;
	c->peer_gone = true;
	c->qp_dead = true;
	c->tx.queued = c->tx.posted = 4096;
	c->tx.wrs = 1;
	c->lt_taken = 4096; /* lent by the session (write_lent), all of it in that write */
	c->s.ev.on_sent = on_sent_count;
	c->s.ev.arg = &reported;
	failed_pending = 1;
	ib_worker_poll(&w, 1000, 0);
	assert_int_equal(c->tx.done, 4096);
	ib_worker_relay(&w);
	ib_worker_flush(&w);
	assert_int_equal(reported, 0);
	assert_int_equal(c->ws, IB_W_OPEN); /* the session has not taken the peer's bytes yet */
	/* it has (nothing left in the ring, the peer's end of stream seen): the end, a reset */
	ib_conn_ops.consume(&c->s, 0);
	assert_true(c->s.peer_done);
	ib_worker_relay(&w);
	ib_worker_flush(&w);
	assert_int_equal(c->err, -ECONNRESET);
	assert_int_equal(w.st.closed[IB_CLOSE_RESET], 1);
	assert_int_equal(w.st.closed[IB_CLOSE_OK], 0);
	assert_int_equal(reported, 0);
	slots[2] = (struct ib_slot){0};
	STAILQ_INIT(&w.work);
	free(c);
}

/* ---- messages after the end ---- */

/* A connection that ended in order (a DISCONNECT after our FIN, say) while its session holds it for
 * its other side: its queue pair alive, receives posted. The peer goes on sending: the first
 * IB_FREE_RX_MAX in the second find a receive each as before, the next is a violation, and from then
 * on no receive is posted again (the peer's writes wait in RNR: what is left of the queue bounds
 * them). Each was taken and reposted uncapped before. */
static void test_messages_after_the_end(void **state)
{
	struct ib_conn *c;

	(void)state;
	closed_ibv = (struct ibv_cq){.context = &fake_ctx};
	c = conn_on_cq(&closed_ibv, IB_W_CLOSED); /* on_closed fired; the session has not released it */
	c->qp = &closed_qp;
	reposts = 0;
	closed_pending = 100; /* an honest peer's last few, and more: all within the window */
	ib_worker_poll(&w, 1000, 0);
	assert_int_equal(reposts, 100);
	assert_false(c->qp_dead);
	assert_int_equal(w.st.violations[IB_VIOL_MESSAGE], 0);
	closed_pending = 200; /* the same second: a flood */
	ib_worker_poll(&w, 2000, 0);
	assert_int_equal(reposts, 101); /* the one that broke the window still found one */
	assert_true(c->qp_dead);
	assert_int_equal(w.st.violations[IB_VIOL_MESSAGE], 1);
	assert_int_equal(c->ws, IB_W_CLOSED);
	closed_pending = 50; /* a second later: still nothing posted, counted once */
	ib_worker_poll(&w, 2000000000ull, 0);
	assert_int_equal(reposts, 101);
	assert_int_equal(w.st.violations[IB_VIOL_MESSAGE], 1);
	slots[2] = (struct ib_slot){0};
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_retired_stays_off_the_work_list, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_disconnect_beside_a_busy_cq, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_disconnect_on_a_busy_cq, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_messages_after_the_end, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_write_failed_after_eof, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
