/* The rsocket engine on a worker: completions, sends, credits, and the stream interface.
 *
 * Design. A worker polls the completion queues of its connections (several connections share one
 * CQ), posts everything itself, and never blocks, allocates, locks or makes system calls, except one
 * eventfd write per poll round that handed something to the control thread.
 *  - Receives carry no buffer: the peer RDMA-writes into our ring and the immediate tells the length.
 *    Each receive completion is replenished at once (rsocket sets rnr_retry to infinite: a dry queue
 *    would stall the peer, not fail it), and the control thread posted depth + 4 of them up front.
 *  - Bytes stay in the ring until the session consumes them; only then do credits and adverts go back
 *    (proto.c), which is what throttles an IB sender behind a slow TCP receiver.
 *  - Credit messages go out before data and have their own 4 send slots, so data can never block a
 *    credit update.
 *  - Everything that can happen to a connection during a round (completions, ring messages, stream
 *    ops) only updates state and puts the connection on the work list. The worker's relay phase
 *    fires the stream events of the listed connections (ib_worker_relay), its flush phase posts what
 *    each has due as one chain of work requests, one doorbell (ib_worker_flush). A stream event is
 *    therefore never fired from inside an op, and no op posts: the bytes the sessions write to a
 *    connection during a round leave together, in writes of up to 64 KiB.
 *  - A completion names its connection by (slot, generation): a stale completion of a connection
 *    that is gone, or whose slot was reused, is recognised and dropped. */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "../translate/ratelim.h"
#include "conn.h"
#include "ib.h"
#include "proto.h"

enum {
	IB_EV_CONNECTED = 1,
	IB_EV_READABLE = 2,
	IB_EV_WRITABLE = 4,
	IB_EV_CLOSED = 8,
};

#define CQ_BATCH     32
#define CQ_ROUNDS    4 /* batches per CQ per poll round: bounds the time one round takes */
#define RING_BATCH    32
#define IB_CTRL_STUB  0x80000000u /* ib_close reason "not counted" */
/* A keepalive is a zero-length RDMA write: any live peer's HCA acknowledges it within a round trip.
 * One still unacknowledged after this many keepalive intervals means the peer is gone. The transport
 * would say so by itself only after its retries ran out, which is never when they are infinite
 * (rxe treats rsocket's retry_count 7 as "retry forever") and can take long on real fabrics. */
#define IB_KA_DEAD   3
/* Messages that cost their sender nothing (costless) a peer may send in one second: each costs us a
 * completion and a receive, most a wake-up of the session too. Stock rsocket sends its keepalives as
 * plain writes we never see (ibgwd too) and a second end of stream only when its application shuts
 * down twice; the other kinds never (adverts our bytes did not earn among them), nor anything after
 * the connection closed but the few messages of an orderly end (see on_recv). */
#define IB_FREE_RX_MAX 100
/* A connection we abort is handed back to the control thread, which moves its queue pair to the error
 * state: a CTRL DISCONNECT still queued in the device (a loaded host, a peer answering RNR) would be
 * flushed, and an rsocket peer learns that a stream ended only from that message (it ignores the
 * rdma_cm DREQ while connected): it would wait forever, or retry writes into a queue pair that is gone.
 * So an aborted connection lingers until its abort completed, for this long at most; then, if writes
 * from lent frames are still in flight, up to IB_LENT_WAIT_NS more (extmem.c). A drain that ends
 * first (daemon.c gives aborts 2 s) destroys such queue pairs at exit: the frames' holds are put
 * after that (ib_lent_put_all). */
#define IB_LINGER_NS 1000000000ull
/* The peer's DISCONNECT completes at our end before our device has necessarily acknowledged it (rxe
 * completes a receive, then sends the ACK): a queue pair destroyed in between never acknowledges,
 * and the peer, retrying forever, waits for that ACK in rshutdown (seen: stock rstream -T b hung at
 * its close now and then). So a connection the peer closed both ways is handed back this much later. */
#define IB_PEER_LINGER_NS 100000000ull

/* ---- work list ---- */

/* Whether the relay phase reports lent bytes of C to its session (on_sent): done with and not yet
 * reported, C open, no write of it lost. The flush phase keeps C listed for the next round by the
 * same test: by another, a connection whose write was lost stayed listed for bytes never reported,
 * and the worker never napped. */
static bool lent_report_due(struct ib_conn *c)
{
	return c->ws == IB_W_OPEN && !c->tx_lost && ib_lent_reportable(c) > c->lt_reported;
}

static void work(struct ib_conn *c)
{
	struct ib_worker *w = c->w;

	/* a retired connection is only waited for (its completions, on_wc); what would list it again
	 * (a DISCONNECTED from the control thread, a failed post) is moot, and the list must not
	 * point to it once it is handed back */
	if (c->listed || c->retired)
		return;
	c->listed = true;
	STAILQ_INSERT_TAIL(&w->work, c, work_link);
}

static void due(struct ib_conn *c, uint8_t ev)
{
	c->events |= ev;
	work(c);
}

static void stall_end(struct ib_conn *c)
{
	if (!c->stalled)
		return;
	c->stalled = false;
	xlt_counter_add(&c->w->st.credit_stall_ns, c->w->now - c->stall_since);
	c->stall_ns += c->w->now - c->stall_since;
}

static void withheld_end(struct ib_conn *c)
{
	if (!c->withheld)
		return;
	c->withheld = false;
	xlt_counter_add(&c->w->st.credit_withheld_ns, c->w->now - c->withheld_since);
}

/* Ends the connection with ERR (0: orderly); on_closed follows at the end of the round. REASON is
 * an enum ib_close, or IB_CTRL_STUB for a connection that never carried a session. */
static void closing(struct ib_conn *c, int err, unsigned reason)
{
	if (c->ws >= IB_W_CLOSING)
		return;
	stall_end(c);
	withheld_end(c);
	c->err = err;
	c->ws = IB_W_CLOSING;
	if (reason < IB_CLOSE_COUNT)
		xlt_counter_add(&c->w->st.closed[reason], 1);
	due(c, IB_EV_CLOSED);
}

static void protocol_error(struct ib_conn *c)
{
	c->qp_dead = true; /* a peer that broke the rules gets nothing more from us */
	closing(c, -EPROTO, IB_CLOSE_PROTOCOL);
}

/* The peer broke rule WHY: counted, and that connection alone is reset. */
static void violated(struct ib_conn *c, enum ib_violation why)
{
	xlt_counter_add(&c->w->st.violations[why], 1);
	protocol_error(c);
}

/* ---- posting ----
 * Sends are built into the worker's chain (chain_add) and posted with one ibv_post_send per
 * connection and flush (post_chain): credits, data and the end of stream that one connection has due
 * ring its doorbell once. What a message needs afterwards (payload, advert slot) is accounted when it
 * is chained: a chain that fails to post kills the queue pair, so nothing waits for its completions. */

int ib_conn_post_recvs(struct ib_conn *c, unsigned n)
{
	struct ibv_recv_wr wr = {.wr_id = ib_wr_id(IB_WR_RECV, c, 0)}, *bad;

	for (unsigned i = 0; i < n; i++) {
		int ret = ibv_post_recv(c->qp, &wr, &bad);
		if (ret)
			return -ret; /* ibv_post_* return a positive errno */
	}
	return 0;
}

/* Work requests of C's chain from U on that the device refused (ibv_post_send's BAD): they will
 * never complete, so what waits for their completions stops waiting. A data write's bytes go back
 * to unposted (the writes after it in the chain are C's too, in stream order), so the lent holds of
 * its segments are put at release (ib_lent_wait) instead of waiting for a completion that never
 * comes; a control message gives its slot back. */
static void unposted(struct ib_conn *c, const struct ibv_send_wr *u)
{
	for (; u; u = u->next) {
		if ((enum ib_wr_kind)(u->wr_id >> IB_WR_KIND_SHIFT) == IB_WR_DATA) {
			c->tx.posted -= (uint32_t)u->wr_id & IB_WR_LEN_MASK;
			if (c->tx.wrs)
				c->tx.wrs--;
		} else if (c->ctrl_used)
			c->ctrl_used--;
	}
}

/* Posts the chain built for C (one doorbell). Returns 0 or -errno; after a failure C posts nothing
 * more and closes at its next progress. */
static int post_chain(struct ib_conn *c)
{
	struct ib_worker *w = c->w;
	struct ibv_send_wr *bad = NULL;
	unsigned n = w->n_chain;
	int ret;

	if (!n || w->chain_conn != c)
		return 0;
	w->n_chain = 0;
	w->chain_conn = NULL;
	w->chain_wr[n - 1].next = NULL;
	ret = ibv_post_send(c->qp, &w->chain_wr[0], &bad);
	xlt_counter_add(&w->st.doorbells, 1);
	if (ret) {
		/* (a provider that names no BAD leaves the accounting as it is: the holds then wait
		 * the bounded time of ib_lent_wait rather than risk being put under a posted write) */
		unposted(c, bad);
		c->qp_dead = true;
		c->post_err = -ret; /* ibv_post_* return a positive errno */
		work(c);
		return -ret;
	}
	c->last_tx_ns = w->now;
	if (!c->tx_wait_ns)
		c->tx_wait_ns = w->now ? w->now : 1;
	return 0;
}

/* Forgets C's chain unposted: its queue pair is dead, or the peer gets nothing more from us. What the
 * chain's work requests accounted goes back as for a refused post (unposted): nothing waits for
 * completions that will never come (the lent holds of its writes, at release). */
static void chain_drop(struct ib_conn *c)
{
	struct ib_worker *w = c->w;

	if (w->chain_conn != c)
		return;
	if (w->n_chain) {
		w->chain_wr[w->n_chain - 1].next = NULL;
		unposted(c, &w->chain_wr[0]);
	}
	w->n_chain = 0;
	w->chain_conn = NULL;
}

/* The next work request of C's chain (zeroed, linked; its two scatter entries in *SGE), or NULL
 * with *ERR when a full chain could not be posted. */
static struct ibv_send_wr *chain_add(struct ib_conn *c, struct ibv_sge **sge, int *err)
{
	struct ib_worker *w = c->w;
	struct ibv_send_wr *wr;

	/* Each chain is posted before the next is built; were one left, it goes now (a failure is that
	 * connection's own: post_chain marks it, it closes at its next progress). */
	if (w->n_chain && w->chain_conn != c)
		post_chain(w->chain_conn);
	if (w->n_chain == IB_CHAIN_MAX && (*err = post_chain(c)))
		return NULL;
	w->chain_conn = c;
	wr = &w->chain_wr[w->n_chain];
	*wr = (struct ibv_send_wr){0};
	*sge = w->chain_sge[w->n_chain];
	if (w->n_chain)
		w->chain_wr[w->n_chain - 1].next = wr;
	w->n_chain++;
	*err = 0;
	return wr;
}

/* A zero-length control message: CTRL (FIN, abort) or a plain write (keepalive). The remote address
 * of a zero-length write is never accessed; the peer's target_sgl is a valid one all the same. */
static int post_ctrl(struct ib_conn *c, enum ib_wr_kind kind, uint32_t ctrl)
{
	struct ibv_sge *sge;
	int ret;
	struct ibv_send_wr *wr = chain_add(c, &sge, &ret);

	if (!wr)
		return ret;
	wr->wr_id = ib_wr_id(kind, c, 0);
	wr->opcode = kind == IB_WR_KEEPALIVE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->imm_data = htobe32(ib_rs_imm(IB_RS_OP_CTRL, ctrl));
	wr->wr.rdma.remote_addr = c->remote_sgl.addr;
	wr->wr.rdma.rkey = c->remote_sgl.key;
	c->ctrl_seq++;
	c->ctrl_used++;
	if (kind == IB_WR_KEEPALIVE)
		c->ka_sent_ns = c->w->now ? c->w->now : 1;
	xlt_counter_add(kind == IB_WR_KEEPALIVE ? &c->w->st.keepalives_tx : &c->w->st.ctrl_tx, 1);
	return 0;
}

/* Posts the abort that is due if a control slot is free; otherwise the next control completion does
 * (ctrl_done). */
static void post_abort(struct ib_conn *c)
{
	if (!c->abort_due || c->ctrl_used >= IB_RS_CTRL_SLOTS)
		return;
	c->abort_due = false;
	if (!post_ctrl(c, IB_WR_ABORT, IB_RS_CTRL_DISCONNECT) && !post_chain(c))
		c->abort_sent = true;
}

/* Our abort (CTRL DISCONNECT). Like any control message it needs no credit (credits count data
 * messages; the peer reposts each receive as it polls) but one of the IB_RS_CTRL_SLOTS. With all of
 * them in flight (credit updates, a FIN, a keepalive) it waits for the first to complete rather than
 * being dropped: a stock rsocket peer learns that its stream ended only from this message. The
 * connection lingers until it completed, IB_LINGER_NS from now at most. */
static void send_abort(struct ib_conn *c)
{
	c->abort_due = true;
	c->linger_until = c->w->now + IB_LINGER_NS;
	work(c); /* posted in the flush phase (ib_worker_flush), never from inside a stream op */
}

/* A control message completed: its slot is free again, for the abort if one waits. */
static void ctrl_done(struct ib_conn *c, const struct ibv_wc *wc)
{
	if (c->ctrl_used)
		c->ctrl_used--;
	if (wc->status == IBV_WC_SUCCESS)
		post_abort(c);
	else
		c->abort_due = false; /* the queue pair is in error: nothing reaches the peer any more */
}

static int post_credit(struct ib_conn *c, bool advert)
{
	struct ib_bufs *b = c->bufs;
	struct ibv_sge *sge;
	uint32_t off = 0;
	unsigned idx = 0;
	uint16_t edge;
	int ret;
	struct ibv_send_wr *wr = chain_add(c, &sge, &ret);

	if (!wr)
		return ret;
	edge = ib_rx_credit_sent(&c->rx, advert, &off, &idx);
	wr->wr_id = ib_wr_id(IB_WR_CREDIT, c, 0);
	wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->wr.rdma.remote_addr = c->remote_sgl.addr;
	wr->wr.rdma.rkey = c->remote_sgl.key;
	wr->imm_data = htobe32(ib_rs_imm(IB_RS_OP_SGL, edge));
	if (advert) {
		/* the advert payload lives in a control slot until the write completes: with at most 4
		 * control messages in flight, slot seq & 3 is free again when seq comes round */
		uint8_t *slot = b->ctrl + (c->ctrl_seq & (IB_RS_CTRL_SLOTS - 1)) * sizeof(struct ib_rs_sge);
		ib_rs_sge_encode(slot, (uintptr_t)(b->rbuf + off), b->rmr->rkey, c->rx.half, c->swap_sgl);
		sge[0] = (struct ibv_sge){.addr = (uintptr_t)slot, .length = sizeof(struct ib_rs_sge), .lkey = b->smr->lkey};
		wr->sg_list = sge;
		wr->num_sge = 1;
		if (c->inline_max >= sizeof(struct ib_rs_sge))
			wr->send_flags |= IBV_SEND_INLINE;
		wr->wr.rdma.remote_addr = c->remote_sgl.addr + idx * sizeof(struct ib_rs_sge);
	}
	c->ctrl_seq++;
	c->ctrl_used++;
	xlt_counter_add(&c->w->st.ctrl_tx, 1);
	if (c->withheld && !ib_rx_peer_blocked(&c->rx))
		withheld_end(c);
	return 0;
}

/* One data message: everything queued and not posted yet, as far as rsocket's largest write
 * (IB_RS_MAX_XFER) and the peer's current target entry allow (ib_tx_next). */
static int post_data(struct ib_conn *c)
{
	struct ib_bufs *b = c->bufs;
	struct ib_tx_write tw;
	struct ibv_sge *sge;
	int ret;
	struct ibv_send_wr *wr = chain_add(c, &sge, &ret);

	if (!wr)
		return ret;
	if (c->lent_n) {
		/* lent segments among the bytes (extmem.c): as many as the scatter list holds */
		uint32_t max_xfer = c->tx.max_xfer, n_lent;
		unsigned n_sge;

		sge = c->w->lent_sge[c->w->n_chain - 1];
		c->tx.max_xfer = ib_lent_walk(c, max_xfer, NULL, &n_sge, &n_lent);
		ib_tx_next(&c->tx, b->tsgl, &tw);
		c->tx.max_xfer = max_xfer;
		c->tx.posted -= tw.len; /* (the walk starts at the write's first byte) */
		ib_lent_walk(c, tw.len, sge, &n_sge, &n_lent);
		c->tx.posted += tw.len;
		c->cp_posted += tw.len - n_lent;
		wr->num_sge = (int)n_sge;
		xlt_counter_add(&c->w->st.lent_tx, n_lent);
	} else {
		/* copies only: the send ring's next ones (which may wrap) */
		uint32_t ring = b->sbuf_size, off = (uint32_t)(c->cp_posted % ring), seg0;

		ib_tx_next(&c->tx, b->tsgl, &tw);
		c->cp_posted += tw.len;
		seg0 = tw.len < ring - off ? tw.len : ring - off;
		sge[0] = (struct ibv_sge){
		    .addr = (uintptr_t)(b->sbuf + off), .length = seg0, .lkey = b->smr->lkey};
		sge[1] = (struct ibv_sge){
		    .addr = (uintptr_t)b->sbuf, .length = tw.len - seg0, .lkey = b->smr->lkey};
		wr->num_sge = seg0 < tw.len ? 2 : 1;
	}
	wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->sg_list = sge;
	wr->wr_id = ib_wr_id(IB_WR_DATA, c, tw.len);
	wr->imm_data = htobe32(ib_rs_imm(IB_RS_OP_DATA, tw.len));
	wr->wr.rdma.remote_addr = tw.raddr;
	wr->wr.rdma.rkey = tw.rkey;
	if (tw.len <= c->inline_max)
		wr->send_flags |= IBV_SEND_INLINE;
	xlt_counter_add(&c->w->st.msgs_tx, 1);
	xlt_counter_add(&c->w->st.bytes_tx, tw.len);
	return 0;
}

static void check_close(struct ib_conn *c)
{
	bool rx_done, tx_idle;

	if (c->ws != IB_W_OPEN)
		return;
	rx_done = c->rx.eof && !ib_rx_pending(&c->rx) && c->s.peer_done;
	tx_idle = c->qp_dead || (c->tx.done == c->tx.posted && !c->ctrl_used);
	if (!rx_done || !tx_idle)
		return;
	if (c->fin_acked && !c->tx_lost)
		closing(c, 0, IB_CLOSE_OK);
	else if (c->peer_gone || c->qp_dead) {
		/* the peer closed both ways (DISCONNECT): orderly unless it left bytes of ours unsent,
		 * or a write of them failed */
		bool lost = c->tx_lost || c->tx.queued != c->tx.done;

		closing(c, lost ? -ECONNRESET : 0, lost ? IB_CLOSE_RESET : IB_CLOSE_OK);
	}
}

/* Posts what is due: credits first, then data, then our end of stream; then sees whether the
 * connection is over. */
static void progress(struct ib_conn *c)
{
	enum ib_tx_block b = IB_TX_EMPTY;
	int ret = 0;

	if (c->ws != IB_W_OPEN)
		return;
	if (c->post_err) {
		closing(c, c->post_err, IB_CLOSE_ERROR);
		return;
	}
	if (c->qp_dead) {
		check_close(c);
		return;
	}
	while (!c->rx.eof && c->ctrl_used < IB_RS_CTRL_SLOTS) {
		enum ib_rx_credit due_now = ib_rx_credit_due(&c->rx);
		if (due_now == IB_RX_CREDIT_NONE)
			break;
		if ((ret = post_credit(c, due_now == IB_RX_CREDIT_ADVERT)))
			goto err;
	}
	if (!c->peer_gone) {
		while ((b = ib_tx_blocked(&c->tx, c->bufs->tsgl)) == IB_TX_OK)
			if ((ret = post_data(c)))
				goto err;
		if (b == IB_TX_BAD_TARGET) {
			chain_drop(c);
			violated(c, IB_VIOL_ADVERT);
			return;
		}
		if (b == IB_TX_NO_CREDIT || b == IB_TX_NO_TARGET) {
			if (!c->stalled) {
				c->stalled = true;
				c->stall_since = c->w->now;
				xlt_counter_add(&c->w->st.credit_stalls, 1);
				c->n_stalls++;
			}
		} else {
			stall_end(c);
		}
		if (c->s.local_done && !c->fin_posted && c->tx.queued == c->tx.posted &&
		    c->ctrl_used < IB_RS_CTRL_SLOTS) {
			/* rsocket's rule: SHUTDOWN while the peer may still send, DISCONNECT once both
			 * directions are done */
			ret = post_ctrl(c, IB_WR_FIN, c->rx.eof ? IB_RS_CTRL_DISCONNECT : IB_RS_CTRL_SHUTDOWN);
			if (ret)
				goto err;
			c->fin_posted = true;
		}
	} else {
		stall_end(c);
	}
	if ((ret = post_chain(c)))
		goto err;
	check_close(c);
	return;
err:
	chain_drop(c);
	c->qp_dead = true;
	closing(c, ret, IB_CLOSE_ERROR);
}

/* ---- stream ops (called by the session, on this worker) ---- */

static size_t op_peek(struct xlt_stream *s, const uint8_t **data)
{
	struct ib_conn *c = (struct ib_conn *)s;
	uint32_t off, n;

	if (c->ws != IB_W_OPEN)
		return 0;
	n = ib_rx_peek(&c->rx, &off);
	*data = c->bufs->rbuf + off;
	if (!n && c->rx.eof && !s->peer_done) {
		s->peer_done = 1;
		work(c); /* the close check may now pass */
	}
	return n;
}

static void op_consume(struct xlt_stream *s, size_t n)
{
	struct ib_conn *c = (struct ib_conn *)s;

	if (c->ws != IB_W_OPEN)
		return;
	ib_rx_consume(&c->rx, (uint32_t)n);
	if (c->rx.eof && !ib_rx_pending(&c->rx))
		s->peer_done = 1;
	work(c); /* consumption is what returns credits: they go out in the flush phase */
}

static size_t op_write(struct xlt_stream *s, const uint8_t *data, size_t len)
{
	struct ib_conn *c = (struct ib_conn *)s;
	uint32_t n;

	if (c->ws != IB_W_OPEN || s->local_done || c->qp_dead)
		return 0;
	if (c->peer_gone) {
		/* the peer closed both ways: what we would write can never arrive, so this direction is
		 * broken (as a TCP peer that closed answers data with a reset) */
		if (len)
			closing(c, -ECONNRESET, IB_CLOSE_RESET);
		return 0;
	}
	n = ib_copy_space(c);
	if (len < n)
		n = (uint32_t)len;
	if (n)
		n = ib_copy_in(c, data, n);
	if (n < len)
		c->want_writable = true;
	work(c); /* posted in the flush phase, merged with the round's other writes */
	return n;
}

/* Lending (extmem.c): segments of registered memory are written from where they lie, others are
 * copied; bounded by the send buffer as write() is. */
static size_t op_write_lent(struct xlt_stream *s, const struct xlt_seg *segs, unsigned n)
{
	struct ib_conn *c = (struct ib_conn *)s;
	size_t offered = 0, taken;

	for (unsigned i = 0; i < n; i++)
		offered += segs[i].len;
	if (c->ws != IB_W_OPEN || s->local_done || c->qp_dead)
		return 0;
	if (c->peer_gone) {
		if (offered)
			closing(c, -ECONNRESET, IB_CLOSE_RESET); /* as op_write */
		return 0;
	}
	taken = ib_lent_take(c, segs, n);
	if (taken < offered)
		c->want_writable = true;
	work(c); /* posted in the flush phase; copies are reported sent from the next relay phase */
	return taken;
}

static void op_shutdown(struct xlt_stream *s)
{
	struct ib_conn *c = (struct ib_conn *)s;

	if (s->local_done)
		return;
	s->local_done = 1;
	work(c);
}

void ib_conn_reset(struct ib_conn *c, int err, enum ib_close why)
{
	bool open = c->ws == IB_W_OPEN;

	if (c->ws >= IB_W_CLOSING)
		return;
	/* best effort: tell the peer; the control thread's rdma_disconnect follows on release, once the
	 * message left (IB_LINGER_NS) */
	if (open && !c->qp_dead)
		send_abort(c);
	c->qp_dead = true;
	closing(c, err, open ? why : IB_CTRL_STUB);
}

static void op_abort(struct xlt_stream *s)
{
	ib_conn_reset((struct ib_conn *)s, -ECONNABORTED, IB_CLOSE_ABORTED);
}

static void op_release(struct xlt_stream *s)
{
	struct ib_conn *c = (struct ib_conn *)s;

	/* handed back at the end of the round: C may still be on the work list */
	c->released = true;
	work(c);
}

static void op_info(struct xlt_stream *s, struct xlt_stream_info *out)
{
	const struct ib_conn *c = (const struct ib_conn *)s;
	uint64_t now = c->w->now;

	*out = (struct xlt_stream_info){
		.kind = XLT_STREAM_IB,
		.has_gid = c->peer_qpn != 0, /* (0: an active open not established) */
		.peer_ended = c->rx.eof || c->peer_gone,
		.qpn = c->peer_qpn,
		.credit_stalls = c->n_stalls,
		.credit_stall_ns = c->stall_ns + (c->stalled && now > c->stall_since ? now - c->stall_since : 0),
		.rcvd = c->rx.recvd,
	};
	memcpy(out->gid, c->peer_gid, sizeof(out->gid));
}

/* Taken and not written to the peer's ring yet (their writes not completed). */
static size_t op_unsent(struct xlt_stream *s)
{
	const struct ib_conn *c = (const struct ib_conn *)s;

	return (size_t)(c->tx.queued - c->tx.done);
}

const struct xlt_stream_ops ib_conn_ops = {
	.peek = op_peek,
	.consume = op_consume,
	.write = op_write,
	.shutdown = op_shutdown,
	.abort = op_abort,
	.release = op_release,
	.info = op_info,
	.lend = ib_conn_lend,
	.write_lent = op_write_lent,
	.unsent = op_unsent,
};

int ib_stream_peer_id(const struct xlt_stream *s, uint8_t gid[16], uint32_t *qpn)
{
	const struct ib_conn *c = (const struct ib_conn *)s;

	if (s->ops != &ib_conn_ops || c->active)
		return -EINVAL;
	memcpy(gid, c->peer_gid, sizeof(c->peer_gid));
	*qpn = c->peer_qpn;
	return 0;
}

void ib_conn_proto_init(struct ib_conn *c)
{
	ib_rx_init(&c->rx, c->bufs->rbuf_size, c->rq_depth, c->ends);
	/* data messages may use every send slot but the IB_RS_CTRL_SLOTS kept for control; the window
	 * is the route's sbuf_size, whatever part of it the set's send ring holds (copies) */
	ib_tx_init(&c->tx, c->sbuf_size, c->sq_depth - IB_RS_CTRL_SLOTS, 0);
	c->bufs->tsgl[0] = (struct ib_rs_sge){0};
	c->bufs->tsgl[1] = (struct ib_rs_sge){0};
}

/* ---- the worker ---- */

/* The CQs the control thread created since the last round (ib_worker.cqs_pub). */
static void adopt_cqs(struct ib_worker *w)
{
	unsigned n = atomic_load_explicit(&w->cqs_pub, memory_order_acquire);

	while (w->n_cqs < n)
		if (!w->cqs[w->n_cqs++]->ch)
			w->evented = false;
}

static void live_add(struct ib_worker *w, struct ib_conn *c)
{
	LIST_INSERT_HEAD(&w->live, c, live_link);
	xlt_counter_add(&w->st.conns, 1);
}

static void live_del(struct ib_worker *w, struct ib_conn *c)
{
	LIST_REMOVE(c, live_link);
	xlt_counter_add(&w->st.conns, (uint64_t)-1);
}

static struct ib_conn *lookup(struct ib_worker *w, uint32_t slot, uint32_t gen)
{
	struct ib_conn *c;

	if (slot >= w->n_slots)
		return NULL;
	c = w->slots[slot].conn;
	if (!c || w->slots[slot].gen != (gen & IB_WR_GEN_MASK))
		return NULL;
	return c;
}

/* C opens: the peer's first buffer half (its private data, c->peer) becomes our target_sgl's entry
 * 0, where our first data goes; the peer writes its later adverts into entry 1, then 0, ... */
static void open_common(struct ib_worker *w, struct ib_conn *c)
{
	c->ws = IB_W_OPEN;
	c->s.state = XLT_STREAM_OPEN;
	c->last_tx_ns = w->now;
	c->bufs->tsgl[0] = c->peer.data_buf;
}

static void open_passive(struct ib_worker *w, struct ib_conn *c)
{
	int ret;

	open_common(w, c);
	work(c); /* the first advert goes out at the end of the round */
	/* the control thread set tx.edge from the private data before the hand-over */
	if (ib_tx_peer(&c->tx, c->peer.credits, c->peer.data_buf.length, c->tx.edge)) {
		violated(c, IB_VIOL_CREDIT);
		return;
	}
	/* the session takes over the slot reserved at the request, unless the control thread took it
	 * back (handshake deadline): its FAILED follows */
	if (atomic_exchange_explicit(&c->reserved, false, memory_order_acq_rel))
		ret = w->hooks->accept(w->arg, c->route, &c->s);
	else
		ret = -ETIMEDOUT;
	if (ret) {
		/* refused by admission: reset it ourselves, no session ever sees it */
		send_abort(c);
		c->qp_dead = true;
		closing(c, ret, IB_CTRL_STUB);
		return;
	}
	c->no_session = false;
}

static void open_active(struct ib_worker *w, struct ib_conn *c)
{
	open_common(w, c);
	if (c->qp_dead) {
		/* flushed while connecting, yet established: nothing can be posted on it */
		closing(c, -ECONNRESET, IB_CLOSE_ERROR);
		return;
	}
	/* an SGL message may have come before this, the peer's private data (c->peer) only now */
	if (ib_tx_peer(&c->tx, c->peer.credits, c->peer.data_buf.length, c->peer.credits)) {
		violated(c, IB_VIOL_CREDIT);
		return;
	}
	due(c, IB_EV_CONNECTED);
	if (ib_rx_pending(&c->rx) || c->rx.eof)
		due(c, IB_EV_READABLE);
}

static bool send_msg(struct ib_worker *w, enum ib_msg_type type, struct ib_conn *c)
{
	struct ib_msg m = {.type = type, .slot = c->slot, .gen = c->gen, .conn = c};

	if (rte_ring_sp_enqueue_elem(w->out, &m, sizeof(m)))
		return false;
	w->wake = true;
	return true;
}

static void on_msg(struct ib_worker *w, const struct ib_msg *m)
{
	struct ib_conn *c;

	if (m->type == IB_MSG_ADOPT) {
		c = m->conn;
		w->slots[c->slot] = (struct ib_slot){.conn = c, .gen = c->gen & IB_WR_GEN_MASK};
		c->ws = IB_W_ACCEPTING;
		c->no_session = true;
		live_add(w, c);
		return;
	}
	c = lookup(w, m->slot, m->gen);
	if (!c || c->released)
		return;
	switch (m->type) {
	case IB_MSG_ESTABLISHED:
		if (c->ws == IB_W_ACCEPTING)
			open_passive(w, c);
		break;
	case IB_MSG_CONNECTED:
		if (c->ws == IB_W_CONNECTING)
			open_active(w, c);
		break;
	case IB_MSG_FAILED:
		c->qp_dead = true;
		closing(c, m->err, c->ws == IB_W_OPEN ? IB_CLOSE_ERROR : IB_CTRL_STUB);
		break;
	case IB_MSG_DISCONNECTED:
		c->cm_gone = true;
		c->cm_gone_polled = c->cq ? c->cq->polled : 0;
		c->cm_gone_drains = c->cq ? c->cq->drains : 0;
		work(c);
		break;
	default:
		break;
	}
}

static unsigned drain_in(struct ib_worker *w)
{
	struct ib_msg m[RING_BATCH];
	unsigned n, total = 0;

	do {
		n = rte_ring_dequeue_burst_elem(w->in, m, sizeof(m[0]), RING_BATCH, NULL);
		for (unsigned i = 0; i < n; i++)
			on_msg(w, &m[i]);
		total += n;
	} while (n == RING_BATCH);
	return total;
}

static int wc_errno(enum ibv_wc_status st)
{
	/* A remote access error is what a killed peer looks like (its memory goes before its queue
	 * pair), so it is a reset, not a protocol error; a request the peer calls invalid is ours */
	switch (st) {
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR: return -ETIMEDOUT;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_LOC_LEN_ERR: return -EPROTO;
	default: return -ECONNRESET;
	}
}

static void wc_error(struct ib_conn *c, const struct ibv_wc *wc)
{
	bool first = !c->qp_dead;

	c->qp_dead = true;
	if (wc->status != IBV_WC_WR_FLUSH_ERR)
		xlt_counter_add(&c->w->st.comp_errors, 1);
	if (!first || c->ws >= IB_W_CLOSING)
		return;
	/* An active open that fails (REJ, no answer) moves its queue pair to the error state before
	 * the control thread reads the rdma_cm event, so the flushed receives often arrive first. They
	 * say nothing about why: the control thread's FAILED (refused, timeout, ...) decides, and it
	 * always comes (connect_timeout bounds the open). */
	if (c->ws == IB_W_CONNECTING && wc->status == IBV_WC_WR_FLUSH_ERR)
		return;
	if (wc->status == IBV_WC_REM_ACCESS_ERR && wc->wr_id >> IB_WR_KIND_SHIFT == IB_WR_RECV)
		closing(c, -ECONNRESET, IB_CLOSE_ACCESS); /* the peer wrote with a key it was not given */
	else if (c->ws == IB_W_OPEN && wc_errno(wc->status) == -EPROTO)
		closing(c, -EPROTO, IB_CLOSE_PROTOCOL);
	else
		closing(c, wc_errno(wc->status), c->ws == IB_W_OPEN ? IB_CLOSE_ERROR : IB_CTRL_STUB);
}

/* Both entries of our target_sgl: each either used up (length 0) or a real buffer of a size an
 * immediate can describe. Nothing the peer may legitimately write fails this, whatever we used already. */
static bool ib_tsgl_sane(const volatile struct ib_rs_sge *t)
{
	for (unsigned i = 0; i < IB_RS_SGL_SIZE; i++)
		if (t[i].length > IB_RS_IMM_MASK || (t[i].length && !t[i].addr))
			return false;
	return true;
}

/* Whether message MSG (of completion M) cost the peer nothing and changed nothing that a session could
 * see: a CTRL KEEPALIVE, a credit update that neither moves the edge nor advertises a buffer, a buffer
 * advert beyond those the bytes we sent earned it (ib_tx_advert_earned: a stock peer advertises a
 * half of its ring at the start, then one more each time it consumed another half of our bytes;
 * whatever else it carries, one more is a completion, a receive, a check of our target_sgl and a
 * round of sends for nothing), a zero-length DATA message (its credit comes back at once: there is nothing to
 * consume), or an end of stream repeated. EDGE, EOF and GONE are the connection's before the
 * message. */
static bool costless(const struct ib_conn *c, enum ib_rs_msg msg, const struct ib_rs_wc *m, uint16_t edge,
		     bool eof, bool gone)
{
	switch (msg) {
	case IB_RS_MSG_KEEPALIVE: return true;
	case IB_RS_MSG_DATA: return !m->byte_len;
	/* (an active open's peer, before its accept told its depth, can move the edge anywhere below
	 * 0xffff: every such message counts until then) */
	case IB_RS_MSG_CREDIT:
		return m->byte_len ? !ib_tx_advert_earned(&c->tx) : c->tx.edge == edge || !c->tx.peer_depth;
	case IB_RS_MSG_SHUTDOWN: return eof;
	case IB_RS_MSG_DISCONNECT: return gone;
	default: return false;
	}
}

static void on_recv(struct ib_worker *w, struct ib_conn *c, const struct ibv_wc *wc)
{
	struct ib_rs_wc m = {
		.with_imm = !!(wc->wc_flags & IBV_WC_WITH_IMM),
		.imm = be32toh(wc->imm_data),
		.byte_len = wc->byte_len,
	};
	enum ib_violation why = IB_VIOL_MESSAGE;
	enum ib_rs_msg msg;
	uint16_t edge;
	bool eof, gone;
	int ret;

	if (wc->status != IBV_WC_SUCCESS) {
		wc_error(c, wc);
		return;
	}
	if (!c->qp_dead && (ret = ib_conn_post_recvs(c, 1))) {
		c->qp_dead = true;
		closing(c, ret, c->ws == IB_W_OPEN ? IB_CLOSE_ERROR : IB_CTRL_STUB);
		return;
	}
	if (c->ws == IB_W_ACCEPTING) {
		open_passive(w, c); /* a message proves the connection is up, whatever rdma_cm says later */
		/* rdma_cm may not know yet (the peer's RTU late or lost): the control thread tells it and
		 * keeps the connection from its half-open deadline (a full ring leaves that to the deadline,
		 * which finds the session's slot taken) */
		if (c->ws == IB_W_OPEN && !c->no_session)
			send_msg(w, IB_MSG_OPENED, c);
	}
	if (c->ws >= IB_W_CLOSING) {
		/* Closed, with the queue pair alive (an orderly end, a DISCONNECT with bytes of ours
		 * unsent), while the session may hold the stream until its other side is done (a TCP
		 * half-close, its timeout): nothing checks these messages any more, so each counts in
		 * the costless window. An honest peer sends a few at most by now (its DISCONNECT after
		 * a SHUTDOWN, credit updates for bytes of ours it still reads), and they still find a
		 * receive each as before: one that waited in RNR would hold a stock peer in rshutdown
		 * for good (see IB_PEER_LINGER_NS). Past the window the queue pair is dead to us: no
		 * receive is posted again, so what is left of the receive queue bounds the rest and the
		 * peer waits in RNR, which hurts it alone, until the session lets go and the control
		 * thread disconnects it. */
		if (!c->qp_dead && !xlt_window_ok(&c->free_rx, w->now, 1000000000ull, IB_FREE_RX_MAX))
			violated(c, IB_VIOL_MESSAGE);
		return;
	}
	edge = c->tx.edge, eof = c->rx.eof, gone = c->peer_gone;
	msg = ib_rs_recv(&c->rx, &c->tx, &m, &why);
	/* a flood of messages that cost their sender no credit would take this worker's rounds from
	 * every other session on it, and keep its CQs backlogged */
	if (costless(c, msg, &m, edge, eof, gone) &&
	    !xlt_window_ok(&c->free_rx, w->now, 1000000000ull, IB_FREE_RX_MAX)) {
		violated(c, IB_VIOL_MESSAGE);
		return;
	}
	switch (msg) {
	case IB_RS_MSG_DATA:
		xlt_counter_add(&w->st.msgs_rx, 1);
		xlt_counter_add(&w->st.bytes_rx, m.byte_len);
		if (!c->withheld && ib_rx_peer_blocked(&c->rx)) {
			c->withheld = true;
			c->withheld_since = w->now;
			xlt_counter_add(&w->st.credit_withheld, 1);
		}
		if (c->ws == IB_W_OPEN)
			due(c, IB_EV_READABLE);
		break;
	case IB_RS_MSG_CREDIT:
		/* the advert itself (if any) was written into our target_sgl before this completion: one
		 * no peer could mean is refused now, not only when we would use it */
		if (!ib_tsgl_sane(c->bufs->tsgl)) {
			violated(c, IB_VIOL_ADVERT);
			return;
		}
		xlt_counter_add(&w->st.ctrl_rx, 1);
		work(c);
		break;
	case IB_RS_MSG_KEEPALIVE:
		xlt_counter_add(&w->st.ctrl_rx, 1);
		xlt_counter_add(&w->st.keepalives_rx, 1);
		break;
	case IB_RS_MSG_SHUTDOWN:
	case IB_RS_MSG_DISCONNECT:
		xlt_counter_add(&w->st.ctrl_rx, 1);
		if (msg == IB_RS_MSG_DISCONNECT) {
			c->peer_gone = true;
			c->linger_until = w->now + IB_PEER_LINGER_NS;
			/* bytes we still owe it (queued, not yet posted) or a writer waiting for room can
			 * never be delivered now: reset, rather than wait for a reader that is gone. Posted
			 * writes are not counted: their completions may trail the peer's DISCONNECT. */
			if (c->ws == IB_W_OPEN && (c->tx.queued != c->tx.posted || c->want_writable)) {
				closing(c, -ECONNRESET, IB_CLOSE_RESET);
				break;
			}
		}
		withheld_end(c);
		if (c->ws == IB_W_OPEN)
			due(c, IB_EV_READABLE);
		else
			work(c);
		break;
	case IB_RS_MSG_VIOLATION:
		violated(c, why);
		break;
	}
}

static void on_send(struct ib_worker *w, struct ib_conn *c, const struct ibv_wc *wc, enum ib_wr_kind kind,
		    uint32_t len)
{
	if (kind == IB_WR_DATA) {
		ib_tx_done(&c->tx, len);
		ib_lent_done(c); /* (a flushed write too: the device is done with its memory) */
	} else
		ctrl_done(c, wc);
	if (wc->status != IBV_WC_SUCCESS) {
		wc_error(c, wc);
		/* the bytes of a failed write may never have arrived: none is reported as sent from now
		 * on, and the end is a reset, whatever came before (after the peer's end of stream and
		 * then its disconnect the queue pair was dead already, and the close looked orderly).
		 * What the peer sent before still goes to the session first (an upload whose sender
		 * left at once): check_close decides once it did. */
		if (kind == IB_WR_DATA) {
			c->tx_lost = true;
			work(c);
		}
		return;
	}
	if (kind == IB_WR_FIN)
		c->fin_acked = true;
	if (kind == IB_WR_KEEPALIVE)
		c->ka_sent_ns = 0;
	/* the peer takes our messages: what is still in flight waits from now */
	c->tx_wait_ns = c->ctrl_used || c->tx.wrs ? (w->now ? w->now : 1) : 0;
	if (kind == IB_WR_DATA && c->want_writable && c->ws == IB_W_OPEN) {
		c->want_writable = false;
		due(c, IB_EV_WRITABLE);
	}
	work(c);
}

static void on_wc(struct ib_worker *w, const struct ibv_wc *wc)
{
	enum ib_wr_kind kind = (enum ib_wr_kind)(wc->wr_id >> IB_WR_KIND_SHIFT);
	uint32_t slot = (uint32_t)(wc->wr_id >> IB_WR_SLOT_SHIFT) & (IB_WR_SLOT_MAX - 1);
	uint32_t gen = (uint32_t)(wc->wr_id >> IB_WR_GEN_SHIFT) & IB_WR_GEN_MASK;
	struct ib_conn *c = lookup(w, slot, gen);

	if (!c) {
		/* a connection accepted since the ring was last read: its ADOPT is there by now (it was
		 * queued before rdma_accept, the accept before any completion) */
		drain_in(w);
		c = lookup(w, slot, gen);
		if (!c) {
			xlt_counter_add(&w->st.stale_wcs, 1); /* stale: its connection is gone */
			return;
		}
	}
	if (c->released || (c->ws == IB_W_CLOSED && c->no_session)) {
		/* lingering (or about to): only the control messages in flight matter now, and the
		 * writes from lent memory (their holds) */
		if (kind == IB_WR_DATA) {
			ib_tx_done(&c->tx, (uint32_t)wc->wr_id & IB_WR_LEN_MASK);
			ib_lent_done(c);
		} else if (kind != IB_WR_RECV)
			ctrl_done(c, wc);
		return;
	}
	if (kind == IB_WR_RECV)
		on_recv(w, c, wc);
	else
		on_send(w, c, wc, kind, (uint32_t)wc->wr_id & IB_WR_LEN_MASK);
}

static unsigned poll_cqs(struct ib_worker *w)
{
	struct ibv_wc wc[CQ_BATCH];
	unsigned total = 0;

	for (unsigned i = 0; i < w->n_cqs; i++) {
		struct ib_cq *cq = w->cqs[i];
		uint64_t destroyed = atomic_load_explicit(&cq->destroyed, memory_order_acquire);

		for (unsigned r = 0; r < CQ_ROUNDS; r++) {
			int n = ibv_poll_cq(cq->cq, CQ_BATCH, wc);

			/* counted before the completions are handled: a DISCONNECTED read while handling
			 * them (on_wc reads the ring) was not before this poll, so it waits for the next */
			if (n >= 0 && n < CQ_BATCH) {
				cq->drains++;
				/* the completions of the queue pairs destroyed before this poll are taken */
				if (atomic_load_explicit(&cq->drained, memory_order_relaxed) != destroyed)
					atomic_store_explicit(&cq->drained, destroyed, memory_order_release);
			}
			if (n > 0) {
				total += (unsigned)n;
				cq->polled += (unsigned)n;
			}
			for (int k = 0; k < n; k++)
				on_wc(w, &wc[k]);
			if (n < CQ_BATCH)
				break;
		}
	}
	return total;
}

/* The worker is done with C: the control thread destroys its queue pair and id and frees it. */
static void hand_back(struct ib_worker *w, struct ib_conn *c)
{
	if (w->slots[c->slot].conn == c)
		w->slots[c->slot].conn = NULL;
	live_del(w, c); /* adopted or connected: every connection a worker hands back is live */
	stall_end(c);
	withheld_end(c);
	if (!send_msg(w, IB_MSG_RELEASE, c)) {
		/* the ring is sized so this does not happen; never lose one */
		SLIST_INSERT_HEAD(&w->backlog, c, list_link);
	}
}

/* Must C stay a while: its abort is still on its way (IB_LINGER_NS at most), or the peer's
 * DISCONNECT may not be acknowledged yet (IB_PEER_LINGER_NS)? */
static bool lingers(const struct ib_worker *w, struct ib_conn *c)
{
	if (w->now < c->linger_until && (((c->abort_sent || c->abort_due) && c->ctrl_used) || c->peer_gone))
		return true;
	/* then the writes from lent memory still in flight (extmem.c) */
	return ib_lent_wait(c, w->now);
}

/* The worker is done with C: hands it back now, or once it need not linger any more. */
static void retire(struct ib_worker *w, struct ib_conn *c)
{
	if (c->listed) {
		/* an abort whose post failed (post_chain) listed it again in this flush: handed back,
		 * it would be freed while still on the list */
		STAILQ_REMOVE(&w->work, c, ib_conn, work_link);
		c->listed = false;
	}
	c->retired = true;
	if (lingers(w, c)) {
		SLIST_INSERT_HEAD(&w->linger, c, list_link);
		return;
	}
	hand_back(w, c);
}

static void linger_check(struct ib_worker *w)
{
	/* (a pointer to the link to unlink through: glibc's sys/queue.h has no SLIST_REMOVE_AFTER) */
	struct ib_conn **pp = &SLIST_FIRST(&w->linger);

	while (*pp) {
		struct ib_conn *c = *pp;
		if (lingers(w, c)) {
			pp = &SLIST_NEXT(c, list_link);
			continue;
		}
		*pp = SLIST_NEXT(c, list_link);
		hand_back(w, c);
	}
}

/* The relay phase: fires the stream events of the connections on the work list. The sessions'
 * ops only update state and put connections on the list (appended: their events, if any, fire in
 * this same walk); nothing is posted here. A connection released meanwhile stays on the list until
 * the flush phase hands it back, so none is freed while listed. */
unsigned ib_worker_relay(struct ib_worker *w)
{
	unsigned n = 0;

	for (struct ib_conn *c = STAILQ_FIRST(&w->work); c; c = STAILQ_NEXT(c, work_link)) {
		uint8_t ev;

		n++;
		if (c->released)
			continue; /* the flush phase hands it back */
		/* its last messages may still be queued in its CQ: decided once a poll of that CQ found it
		 * empty since the disconnect, or once it gave up as many completions as it holds (a flood
		 * on the same CQ). Until then the flush phase relists it. Other CQs do not matter: a busy
		 * one would hold the decision off for as long as its flood lasts. */
		if (c->cm_gone && c->ws < IB_W_CLOSING &&
		    (!c->cq || c->cq->drains != c->cm_gone_drains ||
		     c->cq->polled - c->cm_gone_polled >= c->cq->size)) {
			/* without the peer's SHUTDOWN or DISCONNECT the stream was cut short */
			c->cm_gone = false;
			c->qp_dead = true;
			if (c->ws == IB_W_OPEN && c->rx.eof)
				c->peer_gone = true;
			else
				closing(c, -ECONNRESET, c->ws == IB_W_OPEN ? IB_CLOSE_RESET : IB_CTRL_STUB);
		}
		if (c->no_session)
			continue; /* events nobody listens to: the flush phase retires it once closed */
		ev = c->events;
		c->events = 0;
		if ((ev & IB_EV_CONNECTED) && c->ws == IB_W_OPEN && c->s.ev.on_connected)
			c->s.ev.on_connected(c->s.ev.arg);
		if ((ev & IB_EV_READABLE) && c->ws == IB_W_OPEN && c->s.ev.on_readable)
			c->s.ev.on_readable(c->s.ev.arg);
		if ((ev & IB_EV_WRITABLE) && c->ws == IB_W_OPEN && c->s.ev.on_writable)
			c->s.ev.on_writable(c->s.ev.arg);
		if (c->s.ev.on_sent && lent_report_due(c)) {
			/* write_lent's bytes done with, in order (copied, or their writes completed) */
			size_t done = (size_t)(ib_lent_reportable(c) - c->lt_reported);

			c->lt_reported += done;
			c->s.ev.on_sent(c->s.ev.arg, done);
		}
		if ((ev & IB_EV_CLOSED) || c->ws == IB_W_CLOSING) {
			if (c->ws != IB_W_CLOSING)
				continue;
			c->ws = IB_W_CLOSED;
			c->s.state = XLT_STREAM_CLOSED;
			if (c->s.ev.on_closed)
				c->s.ev.on_closed(c->s.ev.arg, c->err); /* may release C (freed only after the flush) */
		}
	}
	return n;
}

static void keepalive(struct ib_worker *w)
{
	for (struct ib_conn *c = LIST_FIRST(&w->live); c; c = LIST_NEXT(c, live_link)) {
		if (c->ws != IB_W_OPEN || c->qp_dead)
			continue;
		/* A keepalive left unanswered; or sends in flight and none completing: a peer that takes
		 * none of our messages (its receive queue left empty: each waits in RNR, retried for
		 * ever) holds every control slot soon, and the keepalive is never posted. Completions
		 * come in order: whatever was posted before is stuck as well. */
		if ((c->ka_sent_ns && w->now - c->ka_sent_ns >= IB_KA_DEAD * w->ka_ns) ||
		    (c->tx_wait_ns && (c->ctrl_used || c->tx.wrs) &&
		     w->now - c->tx_wait_ns >= IB_KA_DEAD * w->ka_ns)) {
			c->qp_dead = true;
			closing(c, -ETIMEDOUT, IB_CLOSE_KEEPALIVE);
			continue;
		}
		if (!c->peer_gone && !c->ka_sent_ns && w->now - c->last_tx_ns >= w->ka_ns &&
		    c->ctrl_used < IB_RS_CTRL_SLOTS && !post_ctrl(c, IB_WR_KEEPALIVE, IB_RS_CTRL_KEEPALIVE))
			post_chain(c); /* a failure shows as the keepalive never answered */
	}
	w->ka_next = w->now + w->ka_ns / 2;
}

unsigned ib_worker_poll(struct ib_worker *w, uint64_t now_ns, uint64_t hot_ns)
{
	unsigned n, done;

	w->now = now_ns;
	adopt_cqs(w);
	n = drain_in(w);
	while (!SLIST_EMPTY(&w->backlog)) {
		struct ib_conn *c = SLIST_FIRST(&w->backlog);
		if (!send_msg(w, IB_MSG_RELEASE, c))
			break;
		SLIST_REMOVE_HEAD(&w->backlog, list_link);
	}
	if ((done = poll_cqs(w))) {
		n += done;
		w->hot_until = now_ns + hot_ns;
	}
	if (!SLIST_EMPTY(&w->linger))
		linger_check(w);
	return n;
}

bool ib_worker_hot(const struct ib_worker *w)
{
	return w->now < w->hot_until;
}

/* The flush phase: each connection on the work list posts what is due as one chain (aborts first,
 * then credits, data, end of stream: progress), or is handed back once released. Whatever this
 * raises (a close found by progress, events left by the relay) goes on a new list for the next
 * round. */
unsigned ib_worker_flush(struct ib_worker *w)
{
	struct ib_conn *c, *next;
	unsigned n = 0;

	if (w->ka_ns && w->now >= w->ka_next)
		keepalive(w); /* what it closes joins the list */
	c = STAILQ_FIRST(&w->work);
	STAILQ_INIT(&w->work);
	for (; c; c = next) {
		next = STAILQ_NEXT(c, work_link);
		c->listed = false;
		n++;
		if (c->abort_due)
			post_abort(c);
		if (c->released) {
			retire(w, c);
			continue;
		}
		progress(c);
		if (c->no_session) {
			uint8_t ev = c->events;

			c->events = 0;
			if (ev & IB_EV_CLOSED) {
				c->ws = IB_W_CLOSED;
				c->s.state = XLT_STREAM_CLOSED;
				retire(w, c);
				continue;
			}
		}
		if (c->events || (c->cm_gone && c->ws < IB_W_CLOSING) || lent_report_due(c))
			work(c); /* raised after its relay, undecided (its CQ), or bytes to report: next round */
	}
	if (w->wake) {
		uint64_t one = 1;
		w->wake = false;
		/* the one system call of the datapath, and only in rounds that handed something over */
		if (write(w->wake_fd, &one, sizeof(one)) < 0) {
			/* EAGAIN: the counter is saturated, the control thread is awake anyway */
		}
	}
	return n + !STAILQ_EMPTY(&w->work);
}

struct xlt_stream *ib_worker_connect(struct ib_worker *w, const struct ib_route_params *rp, void *route,
				     struct in_addr addr, uint16_t port, int *err)
{
	struct ib_conn *c = SLIST_FIRST(&w->stash);
	struct ib_msg m;

	if (c)
		SLIST_REMOVE_HEAD(&w->stash, list_link);
	else if (rte_ring_sc_dequeue(w->spares, (void **)&c))
		c = NULL;
	if (!c) {
		*err = -ENOBUFS; /* the control thread refills the spares; a burst beyond them fails */
		return NULL;
	}
	c->s.ops = &ib_conn_ops;
	c->s.state = XLT_STREAM_CONNECTING;
	c->s.peer_addr = xlt_ip_v4(addr.s_addr);
	c->s.peer_port = port;
	c->route = route;
	w->hooks->route_get(route);
	c->dst = addr;
	c->dst_port = port;
	c->timeout_ms = rp->connect_timeout_ms;
	c->rbuf_size = rp->rbuf_size;
	c->sbuf_size = rp->sbuf_size;
	c->copy_size = rp->copy_size;
	c->route_sq = rp->sq_depth;
	c->route_rq = rp->rq_depth;
	c->ws = IB_W_CONNECTING;
	m = (struct ib_msg){.type = IB_MSG_CONNECT, .slot = c->slot, .gen = c->gen, .conn = c};
	if (rte_ring_sp_enqueue_elem(w->out, &m, sizeof(m))) {
		w->hooks->route_put(route);
		c->route = NULL;
		c->ws = IB_W_IDLE;
		SLIST_INSERT_HEAD(&w->stash, c, list_link);
		*err = -ENOBUFS;
		return NULL;
	}
	w->slots[c->slot] = (struct ib_slot){.conn = c, .gen = c->gen & IB_WR_GEN_MASK};
	live_add(w, c);
	w->wake = true;
	return &c->s;
}

const struct ib_worker_stats *ib_worker_stats(const struct ib_worker *w)
{
	return &w->st;
}

int ib_worker_arm(struct ib_worker *w, struct pollfd *fds, unsigned max)
{
	unsigned n = 0;

	if (!w->evented || w->n_cqs > max)
		return -ENOTSUP;
	for (unsigned i = 0; i < w->n_cqs; i++) {
		int ret = ibv_req_notify_cq(w->cqs[i]->cq, 0);

		if (ret)
			return -ret; /* (a positive errno at the verbs edge) */
		fds[n++] = (struct pollfd){.fd = w->cqs[i]->ch->fd, .events = POLLIN};
	}
	return (int)n;
}

void ib_worker_woken(struct ib_worker *w, const struct pollfd *fds, unsigned n)
{
	for (unsigned i = 0; i < n && i < w->n_cqs; i++) {
		struct ibv_cq *cq;
		void *ctx;
		unsigned got = 0;

		if (!(fds[i].revents & POLLIN))
			continue;
		/* read every event the channel holds (non-blocking) and ack them at once: the CQ
		 * cannot be destroyed while an event read is unacked */
		while (!ibv_get_cq_event(w->cqs[i]->ch, &cq, &ctx))
			got++;
		if (got)
			ibv_ack_cq_events(cq, got);
	}
}
