/* Internal types of the IB engine, shared by cm.c (control thread) and conn.c (workers).
 *
 * Ownership is per field group, as marked: "control" fields are only touched by the control thread,
 * "worker" fields only by the owning worker, "handed over" fields are written by the control thread
 * before the connection reaches the worker (through a ring message, or before the first completion
 * can exist) and only read afterwards. */
#ifndef IB_CONN_T_H
#define IB_CONN_T_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "../translate/ratelim-t.h"
#include "../translate/stream-t.h"
#include "ib-t.h"
#include "proto-t.h"

#define IB_MAX_DEVS   16
#define IB_SPARES     32 /* connection objects kept ready on each worker for active opens */
#define IB_SLOT_SPARE 64 /* slots beyond max sessions: connections still being torn down */
#define IB_CTRL_BYTES (IB_RS_CTRL_SLOTS * sizeof(struct ib_rs_sge))
#define IB_TSGL_BYTES 64 /* our target_sgl (2 entries, 32 bytes), padded */
#define IB_EXTMEM_MAX 8	  /* ranges of external memory (extmem.c) */
#define IB_LENT_MAX   128 /* lent segments a connection holds at once (write_lent, extmem.c) */
#define IB_LENT_SGE   32  /* scatter entries of one data write (max_send_sge, within the device's) */

/* Memory the gateway lends the IB side to send from (the Ethernet RX mempool): registered
 * LOCAL-only in every buffer set's protection domain (extmem.c). Control thread, before any set. */
struct ib_extmem {
	unsigned n;
	struct {
		uint8_t *addr;
		size_t len;
	} r[IB_EXTMEM_MAX];
};

/* One segment a destination took by reference (write_lent): bytes [tpos, tpos + len) of the send
 * stream (tx.queued's count: they count against the send window, and take no room in the send ring)
 * lie at ADDR, under LKEY; LPOS is its place among the bytes write_lent took (what on_sent reports).
 * Or, on a connection whose set has no send ring (ib_copy_ops), a copy buffer: bytes copied into a
 * buffer of the copy ops, held like a lent segment until its writes completed, which later copies
 * fill on while it is the stream's last entry. Its LPOS (no place among reported bytes: copies are
 * done with their source at once) is then IB_LENT_COPY and the buffer's bytes after ADDR + LEN; a
 * lent segment's stays below IB_LENT_COPY (2^63 bytes). So the entry keeps its size: IB_LENT_MAX of
 * them are most of a connection's state. */
struct ib_lent {
	uint64_t tpos, lpos;
	const uint8_t *addr;
	uint32_t len, lkey;
	void *hold;
	const struct xlt_hold_ops *hops;
};

#define IB_LENT_COPY (1ull << 63)

/* wr_id: kind (4 bits) | slot (20) | generation (23) | length (17) */
#define IB_WR_KIND_SHIFT 60
#define IB_WR_SLOT_SHIFT 40
#define IB_WR_GEN_SHIFT	 17
#define IB_WR_SLOT_MAX	 (1u << 20)
#define IB_WR_GEN_MASK	 ((1u << 23) - 1)
#define IB_WR_LEN_MASK	 ((1u << 17) - 1)

enum ib_wr_kind {
	IB_WR_RECV,
	IB_WR_DATA,	 /* length = payload bytes */
	IB_WR_CREDIT,	 /* SGL message (edge, or edge + advert) */
	IB_WR_FIN,	 /* CTRL SHUTDOWN or DISCONNECT of an orderly close */
	IB_WR_ABORT,	 /* CTRL DISCONNECT of an abort */
	IB_WR_KEEPALIVE, /* zero-length RDMA write without immediate */
};

/* Ring messages, control <-> worker. */
enum ib_msg_type {
	IB_MSG_ADOPT,	     /* c->w: accepted connection (conn); the accept follows */
	IB_MSG_ESTABLISHED,  /* c->w: passive connection established */
	IB_MSG_CONNECTED,    /* c->w: active connection established; peer parameters staged */
	IB_MSG_FAILED,	     /* c->w: the connection failed (err) before or while establishing */
	IB_MSG_DISCONNECTED, /* c->w: rdma_cm says the peer disconnected */
	IB_MSG_CONNECT,	     /* w->c: start an active open of conn */
	IB_MSG_OPENED,	     /* w->c: passive conn opened on its peer's first message, before ESTABLISHED
			      * reached the worker, and a session took it */
	IB_MSG_RELEASE,	     /* w->c: the worker is done with conn; free it */
};

struct ib_conn;

struct ib_msg {
	uint32_t type;
	int32_t err;
	uint32_t slot;
	uint32_t gen;
	struct ib_conn *conn;
};

struct ib_dev;

/* A worker's completion queue, shared by many of its connections. Its room is promised to each queue
 * pair's work requests (cq_need). A queue pair destroyed leaves its flushed work requests' completions
 * in the CQ (providers such as rxe do not take them out; the worker drops them as stale), so its room
 * is promised again only once the worker has emptied the CQ since the destroy: it reads `destroyed`
 * before a poll and, when that poll took the last completion, says so in `drained` (release/acquire
 * both ways: what was in the CQ when the control thread counted the destroy was taken by then). */
struct ib_cq {
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch; /* its completion events (non-blocking), or NULL: polled only */
	uint32_t size;
	/* control */
	uint32_t reserved; /* entries promised to queue pairs on it, destroyed ones' until returned */
	/* of reserved, destroyed queue pairs' entries: those counted in `destroyed` up to ret_mark
	 * (returned once `drained` reaches it), and later ones (waiting for the next mark) */
	uint32_t ret_old, ret_new;
	uint64_t ret_mark;
	_Atomic uint64_t destroyed; /* queue pairs on it destroyed so far */
	SLIST_ENTRY(ib_cq) link; /* on dev->cqs[worker] */
	/* its worker */
	alignas(64) uint64_t polled; /* completions taken from it so far */
	uint64_t drains;  /* polls of it that found fewer completions than asked for (it was empty then) */
	_Atomic uint64_t drained; /* `destroyed` as read before the last poll that found it empty */
};

/* One registered buffer set: receive ring + our target_sgl (remote-writable), send ring + control
 * message slots (local). The send ring holds copies only (lent bytes are sent from where they lie):
 * the whole send window, or a smaller copy area (cm.c ring_size_of). Pooled per device:
 * registered once, reused by later connections. Each set
 * has a protection domain of its own, which holds its MRs and the queue pair of the one connection
 * using it: its rkey works through that queue pair only, so no other peer (another tenant, or an
 * earlier connection of the same peer that learnt the key) can write into it. A set goes back to
 * the pool only after its queue pair is destroyed, and cleared; the next connection gets its receive
 * ring registered anew, under a new key. */
struct ib_bufs {
	LIST_ENTRY(ib_bufs) pool_link; /* control: on dev->pool */
	struct ib_dev *dev;
	struct ibv_pd *pd;
	uint8_t *mem; /* zeroed: mmap'ed (fresh pages), or from mops */
	size_t len;
	const struct ib_mem_ops *mops; /* where mem came from (NULL: mmap) */
	uint32_t seg_flags;            /* XLT_SEG_* of the receive ring's lent segments (mops') */
	uint32_t rbuf_size, sbuf_size; /* the receive ring; the send ring (copies) */
	uint8_t *rbuf;
	volatile struct ib_rs_sge *tsgl;
	uint8_t *sbuf;
	uint8_t *ctrl;
	struct ibv_mr *rmr, *smr;
	/* Lending (lend.c). Written by any thread (the worker taking references, whoever frees a frame
	 * still pointing at the ring putting them, the control thread at conn_done), read by the same:
	 * the connection using the set (1, from conn_setup to conn_destroy) plus the references
	 * destinations took to its receive ring. The set is cleared and pooled only at 0. */
	_Atomic uint32_t refs;
	/* Written by the control thread (orphan_all, as it goes), read by the thread whose put drops
	 * the last reference: that put frees the set. */
	_Atomic bool orphan;
	/* Written by the put that dropped the last reference (before it pushes the set on
	 * dev->returned), read by the control thread once it took the stack. A plain pointer, not a
	 * sys/queue entry: the stack is lock-free (compare-and-swap on its head). */
	struct ib_bufs *ret_next;
	LIST_ENTRY(ib_bufs) lent_link;     /* control: on dev->lent (its connection gone, references out) */
	bool on_lent;			   /* control: linked by lent_link */
	struct ibv_mr *xmr[IB_EXTMEM_MAX]; /* the external memory, LOCAL_WRITE only (extmem.c) */
	unsigned n_xmr;
};

SLIST_HEAD(ib_cq_list, ib_cq);

struct ib_dev {
	struct ibv_context *ctx;
	struct ibv_device_attr attr;
	const char *name;
	struct ib_cq_list *cqs;    /* per worker: list of CQs (control) */
	LIST_HEAD(, ib_bufs) pool; /* idle buffer sets (control) */
	LIST_HEAD(, ib_bufs) lent; /* control: sets whose connection is gone while references are out */
	/* A lock-free stack of the sets whose last reference went: pushed by any thread (the last
	 * put), taken whole by the control thread (so no ABA). */
	_Atomic(struct ib_bufs *) returned;
	bool removed; /* control: the kernel is removing it (its uverbs node is gone, or rdma_cm said so) */
	ino_t ino;    /* control: its uverbs node's at start (0: could not look; tells a device back under
	               * the same name) */
};

enum ib_ct_state {
	IB_CT_SPARE,	  /* on a worker's spare ring */
	IB_CT_ACCEPTING,  /* passive: accepted, waiting for ESTABLISHED */
	IB_CT_RESOLVING,  /* active: address/route resolution */
	IB_CT_CONNECTING, /* active: rdma_connect sent */
	IB_CT_LIVE,	  /* established */
	IB_CT_FAILED,	  /* FAILED sent; waiting for the worker's RELEASE */
};

enum ib_w_state {
	IB_W_IDLE,	 /* not the worker's (yet) */
	IB_W_ACCEPTING,	 /* adopted, not established */
	IB_W_CONNECTING, /* active open under way */
	IB_W_OPEN,
	IB_W_CLOSING,	 /* on_closed is due */
	IB_W_CLOSED,	 /* on_closed fired; waiting for release */
};

struct ib_worker;

struct ib_conn {
	struct xlt_stream s; /* first */

	/* identity (handed over) */
	struct ib_worker *w;
	uint32_t slot, gen;
	bool active;
	void *route;

	/* resources and peer parameters (handed over) */
	struct ib_bufs *bufs;
	struct ib_cq *cq;
	struct ibv_qp *qp;
	uint16_t sq_depth, rq_depth;
	uint16_t ends_cap; /* entries of ends[]: the deepest receive queue this object can serve */
	uint32_t inline_max;
	bool swap_sgl;		      /* the peer has the other byte order */
	struct ib_rs_sge remote_sgl; /* the peer's target_sgl array */
	struct ib_rs_params peer;    /* active opens: staged until CONNECTED */
	/* the peer's port GID and queue pair number, as its connect request (passive) or its reply
	 * (active, set before CONNECTED) carried them */
	uint8_t peer_gid[16];
	uint32_t peer_qpn;

	/* A route + global session slot taken at the connect request (passive only). Set by the
	 * control thread before the hand-over; cleared by the worker (handing it to the session) or by
	 * the control thread (failing or freeing the connection), read by both: whoever clears it
	 * first owns giving it back. */
	_Atomic bool reserved;

	/* control thread */
	struct rdma_cm_id *id;
	enum ib_ct_state ct;
	uint64_t deadline_ns; /* active: connect_timeout; passive: handshake deadline (IB_ACCEPT_NS) */
	TAILQ_ENTRY(ib_conn) ho_link; /* passive, accepting: the half-open list, oldest first */
	bool ho_listed;
	LIST_ENTRY(ib_conn) ct_link; /* every connection object (ctl->conns) */
	struct in_addr dst;	/* active: written by the worker before CONNECT */
	uint16_t dst_port;
	/* the route's values it is set up with (struct ib_route_params; active: written by the worker
	 * before CONNECT) */
	uint32_t rbuf_size, sbuf_size, copy_size;
	uint32_t route_sq, route_rq; /* queue depths, 0: the engine's */
	uint64_t timeout_ms;

	/* worker */
	enum ib_w_state ws;
	bool no_session;    /* never given to a session: released by the engine itself */
	bool qp_dead;	    /* an error completion or a DISCONNECTED: post nothing more */
	int post_err;	    /* a post of its chain failed (-errno): closed at its next progress */
	bool peer_gone;	    /* DISCONNECT received: the peer reads nothing more */
	bool cm_gone;	    /* rdma_cm reported the disconnect; decided once its CQ was drained since */
	uint64_t cm_gone_polled; /* its CQ's polled count then: what was queued before is taken once
				  * the CQ's size more are */
	uint64_t cm_gone_drains; /* its CQ's drains then: what was queued before is taken once it grew */
	struct xlt_window free_rx; /* the peer's costless messages in the second (IB_FREE_RX_MAX) */
	bool fin_posted, fin_acked;
	bool tx_lost;	    /* a data write of ours failed: nothing more is reported sent, the end is a reset */
	bool stalled, withheld, want_writable;
	uint8_t events;	    /* IB_EV_* due */
	bool listed;	    /* on the worker's work list */
	bool released;
	bool retired;	    /* the worker is done with it (lingering or handed back): off its work list for
			     * good, since the control thread frees it once handed back */
	bool abort_due;	    /* our abort waits for a control slot: the next control completion posts it */
	bool abort_sent;    /* our abort (CTRL DISCONNECT) is posted: hand back once it completed */
	uint64_t linger_until; /* ... or at this time, whichever comes first */
	int err;	    /* for on_closed */
	uint16_t ctrl_used; /* control work requests in flight */
	uint32_t ctrl_seq;
	struct ib_rx rx;
	struct ib_tx tx;
	uint64_t last_tx_ns;
	uint64_t ka_sent_ns; /* when the keepalive in flight was posted (0: none) */
	uint64_t tx_wait_ns; /* since when sends are in flight and none completed (0: none in flight) */
	uint64_t stall_since, withheld_since;
	uint32_t n_stalls;  /* this connection's credit stalls and their time, ended episodes (access log) */
	uint64_t stall_ns;
	STAILQ_ENTRY(ib_conn) work_link; /* the worker's work list (while listed) */
	LIST_ENTRY(ib_conn) live_link;   /* the worker's live list */
	SLIST_ENTRY(ib_conn) list_link;  /* worker's stash, backlog or linger list */

	/* lent segments (worker; extmem.c): a ring in stream order, popped as their writes complete */
	uint16_t send_sge;   /* (handed over) scatter entries a data write may use */
	uint16_t lent_head, lent_n;
	uint64_t lt_taken;    /* bytes write_lent took */
	/* the send ring's copies, counted apart from the stream (they are in it in stream order) */
	uint64_t lt_lent;     /* bytes of the send stream queued as lent segments (the rest are copies in
			       * the send ring: tx.queued - lt_lent of them so far) */
	uint64_t cp_posted;   /* copied bytes before tx.posted: the next write's copies start there */
	uint64_t cp_done;     /* copied bytes before tx.done: their room in the ring is free */
	uint64_t lt_done;     /* tx.done when ib_lent_done last looked */
	uint64_t lt_reported; /* ... and reported through on_sent */
	uint32_t cb_bytes;    /* the sizes of the copy buffers held (at most copy_size and one buffer) */
	uint16_t cb_n;	      /* ... and their count */
	uint64_t front_ns;    /* since then the peer has taken no byte of the send stream (a write
			       * completed, or the stream was empty; extmem.c copy_reclaim) */
	uint64_t lent_until;  /* released with writes from lent memory in flight: wait for them until then */
	bool lent_flushing;   /* the queue pair was moved to the error state to flush them */
	struct ib_lent lent[IB_LENT_MAX];
	uint32_t ends[]; /* rq_depth: the receive side's message ends */
};

/* A worker's slot table entry (worker only). */
struct ib_slot {
	struct ib_conn *conn;
	uint32_t gen;
};

struct rte_ring;

/* Work requests chained behind one doorbell at most (a longer run of them takes more). */
#define IB_CHAIN_MAX 32

/* One worker's engine. Grouped by writer, each group on cache lines of its own (and the workers of
 * ctl->workers[] share none): set before launch, the worker's, the control thread's. */
struct ib_worker {
	struct ib_ctl *ctl;
	unsigned id;
	void *arg;
	const struct xlt_listen_hooks *hooks;
	const struct ib_copy_ops *copy_ops; /* ib_ctl_copymem (NULL: none) */
	struct rte_ring *in;	 /* control -> worker messages */
	struct rte_ring *out;	 /* worker -> control messages */
	struct rte_ring *spares; /* control -> worker: ready connection objects */
	int wake_fd;

	/* worker */
	alignas(64) struct ib_slot *slots;
	uint32_t n_slots;
	struct ib_cq **cqs; /* the CQs of this worker's connections (cq and ch are fixed once created):
			     * the control thread adds them (cqs_pub), the worker polls them from then on */
	unsigned n_cqs, max_cqs; /* (n_cqs: those the worker adopted) */
	bool evented;	    /* every CQ has a channel: an armed worker wakes on any completion */
	SLIST_HEAD(, ib_conn) stash;   /* spares taken but not used */
	SLIST_HEAD(, ib_conn) backlog; /* RELEASEs the ring had no room for */
	SLIST_HEAD(, ib_conn) linger;  /* done with, but their abort is still on its way to the peer */
	STAILQ_HEAD(, ib_conn) work;
	LIST_HEAD(, ib_conn) live;
	uint64_t now;
	uint64_t ka_ns, ka_next;
	uint64_t reclaim_next; /* no copy-buffer reclaim before then (extmem.c copy_reclaim) */
	uint64_t copy_pressure_until; /* the share of copy buffers ran out lately: each connection is
				       * held to a few until then (extmem.c copy_to_bufs) */
	uint64_t hot_until; /* keep the worker polling until then: a completion is likely due */
	bool wake;
	struct ib_worker_stats st; /* read by control (translate/counter.h) */
	/* the chain of work requests being built for one connection: posted with one doorbell when
	 * that connection is done (conn.c post_chain), or when it is full */
	struct ib_conn *chain_conn;
	unsigned n_chain;
	struct ibv_send_wr chain_wr[IB_CHAIN_MAX];
	struct ibv_sge chain_sge[IB_CHAIN_MAX][2];
	struct ibv_sge lent_sge[IB_CHAIN_MAX][IB_LENT_SGE]; /* data writes with lent segments */

	/* control */
	alignas(64) _Atomic uint32_t cqs_pub; /* CQs in cqs[] (release: the worker adopts them in order) */
	uint32_t *ct_gen;
	uint32_t *ct_free;
	uint32_t ct_nfree;
	uint32_t ct_conns;
};

#endif
