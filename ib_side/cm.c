/* The IB engine on the control thread: rdma_cm, resources, and the hand-over to workers.
 *
 * Design.
 *  - One rdma_cm event channel (non-blocking, polled by the gateway's event loop) carries the events of
 *    every listener and connection. Each event is copied and acknowledged before it is acted on, so
 *    destroying an id never waits for an unacknowledged event of its own.
 *  - Accepting: the private data is checked first (version, shape), then the gateway's admission
 *    (allow list, limits); a refusal is an rdma_reject, counted by reason, and nothing else happens.
 *    Otherwise the connection gets a worker (the least loaded), a slot in that worker's table, a
 *    buffer set from the pool, room in one of the worker's completion queues, a queue pair on it and
 *    all its receives, and is handed to the worker (ADOPT) BEFORE rdma_accept: the peer may write the
 *    moment it hears the accept, and the worker must know whose completion that is.
 *  - Resources before admission: admission RESERVES the session slots (route and gateway) at the
 *    request, before any memory is pinned for it, so half-open connections count against
 *    max_sessions and therefore against the memory budget. A connection not established within
 *    IB_ACCEPT_NS (a peer that never sends its RTU) is failed and counted (half_open); a message from
 *    the peer establishes it too (its RTU may be late or lost: the worker opens it, a session takes
 *    its slot, and rdma_cm is told, as the RTU would; see opened()); and when a request finds no
 *    slot, the oldest half-open connection gives its slot up (as a SYN queue drops its oldest
 *    entry), so a flood of handshakes that never complete cannot lock legitimate clients out: theirs
 *    complete within a round trip, and would need max_sessions newer requests meanwhile to be
 *    displaced. (A minimum age before displacement was tried: a flood faster than
 *    max_sessions per that age then kept every slot young and every other request out.)
 *  - Connecting (for routes to ib:HOST:PORT): the worker takes a ready connection object (a spare,
 *    since it must not allocate) and asks for the open; address and route resolution, the queue pair
 *    and rdma_connect happen here, bounded by the route's connect_timeout.
 *  - Only the worker decides when a connection is over (RELEASE); only then are its queue pair and id
 *    destroyed, because until then the worker may still post on them. Its buffers go back to the pool
 *    registered and cleared (the next connection gets a new key for them), its slot gets a new
 *    generation.
 *  - Isolation between peers: every buffer set has its own protection domain, and the connection's
 *    queue pair is created in it, so the keys a peer is given work through its own queue pair only
 *    (see struct ib_bufs), and a pooled set is registered anew for each connection, so a key is
 *    valid for one connection and its lifetime. A stale key of an earlier connection, or the key of
 *    a peer's other connection, gets a remote access error and the writer's connection is dropped.
 * Resources are per device (librdmacm opens them all; the cm_id of a request says which one): a
 * buffer pool, and per worker a list of completion queues (any PD's queue pairs may share one) sized
 * so that the queue pairs on one can never overrun it. */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "../translate/ratelim.h"
#include "conn.h"
#include "ib.h"
#include "proto.h"

#define CQ_CONNS     64  /* queue pairs one completion queue is sized for, at most */
#define POOL_MAX     256 /* idle buffer sets kept per device */
#define LISTEN_BACKLOG 1024
/* How long an accepted connection may take to be established. A peer's CM answers our accept within
 * a round trip (milliseconds even on soft-RoCE under load); one that never does holds a queue pair,
 * pinned buffers and a session slot until this passes. */
#define IB_ACCEPT_NS (5 * 1000000000ull)
#define LOG_EVERY_NS 1000000000ull /* lines a peer can cause: at most one a second each */
#define DEVS_CHECK_NS 1000000000ull /* how often the devices' uverbs nodes are looked for */

struct ib_listener {
	struct ib_ctl *ctl;
	struct rdma_cm_id *id;
	struct ib_route_params rp; /* what its connections are set up with (the route's, copied) */
	void *route;
	uint16_t port;
	LIST_ENTRY(ib_listener) link; /* ctl->listeners */
};

struct pending {
	struct ib_msg *m;
	unsigned n, cap;
};

struct ib_ctl {
	struct ib_params params; /* copied at ib_ctl_create */
	const struct xlt_listen_hooks *hooks;
	struct rdma_event_channel *ch;
	int wake_fd;
	struct ibv_context **dev_list;
	struct ib_dev devs[IB_MAX_DEVS];
	unsigned n_devs;
	uint64_t devs_check_ns; /* when to look for removed devices next */
	unsigned n_workers;
	struct ib_worker *workers;
	struct pending *pend; /* per worker: messages its ring had no room for */
	uint32_t n_slots;
	uint16_t spare_depth;	  /* receive queue depth a spare connection object (active open) can serve */
	uint32_t max_need;	  /* CQ entries the largest connection needs: every CQ is sized by it */
	uint64_t mem_limit;	  /* registered buffers kept idle in the pools only while all fit in this */
	LIST_HEAD(, ib_conn) conns; /* every connection object, spares included */
	TAILQ_HEAD(, ib_conn) ho;   /* half-open (accepting) connections, oldest first */
	struct xlt_ratelim rl_accept, rl_reject, rl_half_open, rl_refused; /* lines a peer can cause
	                                                                     * (LOG_EVERY_NS) */
	uint32_t dying; /* passive connections failed, not yet handed back and freed */
	uint32_t max_conns; /* the sessions the gateway may ever hold ([gateway] max_sessions at start) */
	LIST_HEAD(, ib_listener) listeners;
	uint64_t now;
	bool serving;
	struct ib_ctl_stats st;
	struct ib_extmem extmem; /* set before the first buffer set (ib_ctl_extmem) */
	const struct ib_mem_ops *mops; /* buffer sets' memory (ib_ctl_bufmem); NULL: mmap */
	const struct ib_copy_ops *cops; /* copy buffers (ib_ctl_copymem); NULL: send rings */
	bool copy_bufs_failed;          /* a set could not register them: send rings from then on */
};

/* A copy of an rdma_cm event, taken before the event is acknowledged. */
struct cm_ev {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id, *listen_id;
	struct rdma_conn_param param;
	uint8_t pdata[256];
	uint8_t plen;
};

static void logf_(struct ib_ctl *ctl, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void logf_(struct ib_ctl *ctl, int level, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (!ctl->hooks->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ctl->hooks->log(ctl->hooks->arg, level, msg);
}

static const char *ipstr(const struct xlt_ip *addr, char *buf)
{
	return xlt_ip_fmt(addr, buf);
}

/* ---- messages to workers ---- */

static bool pend_push(struct pending *p, const struct ib_msg *m)
{
	if (p->n == p->cap) {
		unsigned cap = p->cap ? p->cap * 2 : 64;
		struct ib_msg *n = realloc(p->m, cap * sizeof(*n));
		if (!n)
			return false;
		p->m = n;
		p->cap = cap;
	}
	p->m[p->n++] = *m;
	return true;
}

static void pend_flush(struct ib_ctl *ctl)
{
	for (unsigned i = 0; i < ctl->n_workers; i++) {
		struct pending *p = &ctl->pend[i];
		unsigned k = 0;
		while (k < p->n && !rte_ring_sp_enqueue_elem(ctl->workers[i].in, &p->m[k], sizeof(p->m[k])))
			k++;
		if (!k)
			continue; /* (p->m may be NULL: memmove's arguments must not be, even for 0 bytes) */
		memmove(p->m, p->m + k, (p->n - k) * sizeof(p->m[0]));
		p->n -= k;
	}
}

/* Puts a message for C's worker straight onto its ring: 0, or -ENOBUFS when the ring is full or
 * messages wait on the pending list (it would overtake them). */
static int to_worker_now(struct ib_ctl *ctl, struct ib_conn *c, enum ib_msg_type type, int err)
{
	struct ib_msg m = {.type = type, .err = err, .slot = c->slot, .gen = c->gen, .conn = c};

	if (ctl->pend[c->w->id].n || rte_ring_sp_enqueue_elem(c->w->in, &m, sizeof(m)))
		return -ENOBUFS;
	return 0;
}

/* Queues a message for C's worker. The rings hold 4 messages per slot, more than a connection ever
 * has outstanding; the pending list is a safety net that keeps order. */
static int to_worker(struct ib_ctl *ctl, struct ib_conn *c, enum ib_msg_type type, int err)
{
	struct ib_msg m = {.type = type, .err = err, .slot = c->slot, .gen = c->gen, .conn = c};

	if (!to_worker_now(ctl, c, type, err))
		return 0;
	return pend_push(&ctl->pend[c->w->id], &m) ? 0 : -ENOMEM;
}

/* ---- slots and connection objects ---- */

static size_t conn_size(uint32_t depth)
{
	return sizeof(struct ib_conn) + sizeof(uint32_t) * depth;
}

/* A connection object owned by worker W, with a slot of W's table, for receive queues up to DEPTH. */
static struct ib_conn *conn_new(struct ib_ctl *ctl, struct ib_worker *w, uint16_t depth)
{
	struct ib_conn *c;

	if (!w->ct_nfree)
		return NULL;
	c = calloc(1, conn_size(depth));
	if (!c)
		return NULL;
	c->ends_cap = depth;
	c->w = w;
	c->slot = w->ct_free[--w->ct_nfree];
	c->gen = w->ct_gen[c->slot];
	c->s.ops = &ib_conn_ops;
	c->s.state = XLT_STREAM_CONNECTING;
	w->ct_conns++;
	ctl->st.conn_bytes += conn_size(depth);
	LIST_INSERT_HEAD(&ctl->conns, c, ct_link);
	return c;
}

/* ---- half-open connections and their session slots ---- */

static void ho_add(struct ib_ctl *ctl, struct ib_conn *c)
{
	TAILQ_INSERT_TAIL(&ctl->ho, c, ho_link);
	c->ho_listed = true;
	ctl->st.half_open++;
}

static void ho_del(struct ib_ctl *ctl, struct ib_conn *c)
{
	if (!c->ho_listed)
		return;
	TAILQ_REMOVE(&ctl->ho, c, ho_link);
	c->ho_listed = false;
	ctl->st.half_open--;
}

/* Gives C's session slot back unless the worker already handed it to a session. */
static void unreserve(struct ib_ctl *ctl, struct ib_conn *c)
{
	if (atomic_exchange_explicit(&c->reserved, false, memory_order_acq_rel))
		ctl->hooks->unadmit(ctl->hooks->arg, c->route);
}

/* Passive C carried a message before rdma_cm said it was established, and the worker opened it: its
 * peer moved its queue pair on our accept and sends, but our CM has not seen its RTU (late, or lost:
 * the REP is sent again only after seconds, and a CM that never hears an RTU may in the end give up
 * on the connection). It is not half-open any more. rdma_cm is told, as the RTU would: ESTABLISHED
 * follows (or already came: then this changes nothing). */
static void opened(struct ib_ctl *ctl, struct ib_conn *c)
{
	ho_del(ctl, c);
	if (c->ct == IB_CT_ACCEPTING)
		rdma_notify(c->id, IBV_EVENT_COMM_EST); /* (fails only where the CM is past that already) */
}

/* Takes half-open C's session slot back, to fail it: true when it was still reserved (the slot is
 * given back); false when the worker took it meanwhile for a session, which only a message of the
 * peer's can make it do: then C is opened (its IB_MSG_OPENED may still be on its way). */
static bool ho_reclaim(struct ib_ctl *ctl, struct ib_conn *c)
{
	if (atomic_exchange_explicit(&c->reserved, false, memory_order_acq_rel)) {
		ctl->hooks->unadmit(ctl->hooks->arg, c->route);
		return true;
	}
	opened(ctl, c);
	return false;
}

static struct ib_dev *dev_of(struct ib_ctl *ctl, struct ibv_context *ctx)
{
	for (unsigned i = 0; i < ctl->n_devs; i++)
		if (ctl->devs[i].ctx == ctx)
			return &ctl->devs[i];
	return NULL;
}

/* Device D is being removed by the kernel (a driver unload, `rdma link delete`, a device reset). Its
 * connections end by themselves (rdma_cm's DEVICE_REMOVAL, flushed completions) and requests on it
 * are refused. What ibgwd cannot do while it runs is let the device go: its buffer sets, completion
 * queues and rdma_cm's context stay open until the process exits, and the kernel's removal waits for
 * that (with drivers that cannot take resources from a process, such as rxe). So it is said at error
 * level, and no IB route is ready (/health 503, a pair's peer takes over) until ibgwd restarts. */
static void dev_removed(struct ib_ctl *ctl, struct ib_dev *d, const char *how)
{
	if (!d || d->removed)
		return;
	d->removed = true;
	ctl->st.devs_removed++;
	logf_(ctl, 3,
	      "ib: device %s is being removed (%s; a driver unload, rdma link delete, device reset): IB routes "
	      "are down, and the kernel's removal waits for ibgwd to exit: restart ibgwd",
	      d->name, how);
}

/* D's uverbs node in sysfs (/sys/class/infiniband_verbs/uverbsN) is gone, or is another one (a
 * device back under the same number). Only that: a node ibgwd cannot look at (sysfs hidden from it,
 * say) or never could (ino 0) tells nothing, and must not take the IB routes down. */
static bool uverbs_gone(const struct ib_dev *d)
{
	struct stat st;

	if (stat(d->ctx->device->dev_path, &st))
		return d->ino && errno == ENOENT;
	return d->ino && st.st_ino != d->ino;
}

/* Devices whose uverbs node is gone: the kernel deletes it first when it removes a device, before it
 * waits for the processes that hold the device. (A device no rdma_cm id of ours is on, with no
 * connection and listeners bound to any address, gets no DEVICE_REMOVAL event to say so.) */
static void devs_check(struct ib_ctl *ctl)
{
	if (ctl->now < ctl->devs_check_ns)
		return;
	ctl->devs_check_ns = ctl->now + DEVS_CHECK_NS;
	for (unsigned i = 0; i < ctl->n_devs; i++)
		if (!ctl->devs[i].removed && uverbs_gone(&ctl->devs[i]))
			dev_removed(ctl, &ctl->devs[i], "its uverbs node is gone");
}

/* ---- buffer pool ---- */

/* A set: the receive ring (RS bytes) and our target_sgl, the send ring (SS bytes: copies) and the
 * control slots. */
static size_t bufs_len(uint32_t rs, uint32_t ss)
{
	return (size_t)rs + IB_TSGL_BYTES + ss + IB_CTRL_BYTES;
}

/* The send ring C's set gets. None where the route copies little (its copy_size, where it relays by
 * reference) and the gateway gives copy buffers in the memory every set registers (ib_ctl_copymem):
 * the set is then its receive ring, target_sgl and control slots. Without them such a route's copy
 * area holds the target_sgl and control slots too, so that the set is exactly rbuf_size +
 * copy_size bytes; otherwise the ring is the whole window, as every byte sent may be a copy (echo),
 * and those slots come on top. */
static uint32_t ring_size_of(const struct ib_ctl *ctl, const struct ib_conn *c, bool copy_bufs)
{
	uint32_t cs = c->copy_size < IB_COPY_MIN ? IB_COPY_MIN : c->copy_size;

	if (!c->copy_size)
		return c->sbuf_size;
	if (copy_bufs && ctl->cops && ctl->extmem.n && !ctl->copy_bufs_failed)
		return 0;
	if (cs >= c->sbuf_size)
		return c->sbuf_size;
	return cs - IB_TSGL_BYTES - IB_CTRL_BYTES;
}

static void bufs_free(struct ib_ctl *ctl, struct ib_bufs *b);

static struct ib_bufs *bufs_get(struct ib_ctl *ctl, struct ib_dev *dev, uint32_t rs, uint32_t ss)
{
	struct ib_bufs *b;
	void *mem;

	LIST_FOREACH(b, &dev->pool, pool_link)
		if (b->rbuf_size == rs && b->sbuf_size == ss) {
			struct ibv_mr *mr;
			LIST_REMOVE(b, pool_link);
			ctl->st.buf_idle_bytes -= b->len;
			/* a new key for the next connection: the one the last peer was given dies here
			 * (registered before the old one goes, so it cannot be the same value) */
			mr = ibv_reg_mr(b->pd, b->rbuf, rs + IB_TSGL_BYTES, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
			if (!mr) {
				bufs_free(ctl, b);
				return NULL;
			}
			ibv_dereg_mr(b->rmr);
			b->rmr = mr;
			ctl->st.buf_rekeys++;
			return b;
		}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->pd = ibv_alloc_pd(dev->ctx);
	if (!b->pd)
		goto err_b;
	/* a new set holds nobody's bytes: the gateway's memory comes zeroed, and so do fresh anonymous
	 * pages (the C heap would not) */
	b->len = bufs_len(rs, ss);
	mem = ctl->mops ? ctl->mops->alloc(ctl->mops->arg, b->len) : NULL;
	if (mem) {
		b->mops = ctl->mops;
		b->seg_flags = ctl->mops->seg_flags;
	} else {
		mem = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED)
			goto err_pd;
	}
	b->mem = mem;
	b->dev = dev;
	b->rbuf_size = rs;
	b->sbuf_size = ss;
	b->rbuf = b->mem;
	b->tsgl = (volatile struct ib_rs_sge *)(b->mem + rs);
	b->sbuf = b->mem + rs + IB_TSGL_BYTES;
	b->ctrl = b->sbuf + ss;
	/* the peer writes into the receive ring and our target_sgl; nobody but us touches the rest */
	b->rmr = ibv_reg_mr(b->pd, b->rbuf, rs + IB_TSGL_BYTES, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!b->rmr)
		goto err_mem;
	b->smr = ibv_reg_mr(b->pd, b->sbuf, ss + IB_CTRL_BYTES, IBV_ACCESS_LOCAL_WRITE);
	if (!b->smr)
		goto err_rmr;
	/* the Ethernet frames to send from, once per set (a pooled set keeps them); without them the
	 * set copies what it is lent (extmem.c) */
	ib_extmem_reg(&ctl->extmem, b, &ctl->st);
	ctl->st.buf_bytes += b->len;
	if (b->mops)
		ctl->st.buf_mem_bytes += b->len;
	ctl->st.buf_regs++;
	return b;
err_rmr:
	ibv_dereg_mr(b->rmr);
err_mem:
	ib_bufs_unmap(b);
err_pd:
	ibv_dealloc_pd(b->pd);
err_b:
	free(b);
	return NULL;
}

static void bufs_free(struct ib_ctl *ctl, struct ib_bufs *b)
{
	ctl->st.buf_bytes -= b->len;
	if (b->mops)
		ctl->st.buf_mem_bytes -= b->len;
	ib_bufs_release(b);
}

/* B's queue pair is destroyed: nothing can write into it any more. */
static void bufs_put(struct ib_ctl *ctl, struct ib_bufs *b)
{
	struct ib_bufs *p;
	unsigned n = 0;

	LIST_FOREACH(p, &b->dev->pool, pool_link)
		n++;
	/* idle sets are a cache: an eighth of the memory budget at most, and only while all registered
	 * memory fits the budget (sessions hold theirs against it from their connect request on) */
	if (n >= POOL_MAX || ctl->st.buf_idle_bytes + b->len > ctl->mem_limit / 8 ||
	    ctl->st.buf_bytes > ctl->mem_limit) {
		bufs_free(ctl, b);
		return;
	}
	/* the next connection must find none of this one's bytes: a peer that claims more than it
	 * wrote would be relayed what lies in the ring */
	memset(b->mem, 0, b->len);
	LIST_INSERT_HEAD(&b->dev->pool, b, pool_link);
	ctl->st.buf_idle_bytes += b->len;
}

/* Pools (with PUT) the sets whose last lent reference went since the last call (lend.c). */
static void bufs_returned(struct ib_ctl *ctl, void (*put)(struct ib_ctl *, struct ib_bufs *))
{
	for (unsigned d = 0; d < ctl->n_devs; d++) {
		struct ib_bufs *b = ib_bufs_take_returned(&ctl->devs[d], &ctl->st), *next;

		for (; b; b = next) {
			next = b->ret_next;
			put(ctl, b);
		}
	}
}

/* ---- completion queues ---- */

static uint32_t cq_need(const struct ib_conn *c)
{
	return (uint32_t)c->sq_depth + c->rq_depth + IB_RS_CTRL_SLOTS;
}

static uint32_t cq_conns(const struct ib_dev *dev, uint32_t need)
{
	uint64_t size = (uint64_t)need * CQ_CONNS;

	if (size > (uint64_t)dev->attr.max_cqe)
		size = (uint64_t)dev->attr.max_cqe;
	return size / need ? (uint32_t)(size / need) : 1;
}

/* CQ's room of destroyed queue pairs goes back once its worker emptied it since (struct ib_cq): the
 * room of those before the mark once the worker reached it, then the later ones get the next mark
 * (so a steady churn holds back one poll's worth, not all of it). */
static void cq_settle(struct ib_cq *cq)
{
	uint64_t drained = atomic_load_explicit(&cq->drained, memory_order_acquire);

	if (cq->ret_old && drained >= cq->ret_mark) {
		cq->reserved -= cq->ret_old;
		cq->ret_old = 0;
	}
	if (!cq->ret_old && cq->ret_new) {
		cq->ret_old = cq->ret_new;
		cq->ret_new = 0;
		cq->ret_mark = atomic_load_explicit(&cq->destroyed, memory_order_relaxed);
		if (drained >= cq->ret_mark) {
			cq->reserved -= cq->ret_old;
			cq->ret_old = 0;
		}
	}
}

/* C's queue pair is destroyed (or never existed): its room returns once the worker drained the CQ. */
static void cq_release(struct ib_conn *c)
{
	c->cq->ret_new += cq_need(c);
	atomic_fetch_add_explicit(&c->cq->destroyed, 1, memory_order_release);
}

static struct ib_cq *cq_reserve(struct ib_ctl *ctl, struct ib_dev *dev, struct ib_worker *w, uint32_t need)
{
	struct ib_cq *cq;
	unsigned n = 0;

	for (cq = SLIST_FIRST(&dev->cqs[w->id]); cq; cq = SLIST_NEXT(cq, link), n++) {
		cq_settle(cq);
		if (cq->size - cq->reserved >= need) {
			cq->reserved += need;
			return cq;
		}
	}
	if (need > (uint32_t)dev->attr.max_cqe)
		return NULL;
	for (unsigned i = 0; i < ctl->n_devs; i++)
		for (struct ib_cq *q = SLIST_FIRST(&ctl->devs[i].cqs[w->id]); q; q = SLIST_NEXT(q, link))
			n++;
	if (n >= w->max_cqs)
		return NULL;
	cq = aligned_alloc(alignof(struct ib_cq), sizeof(*cq)); /* (its worker's fields on a line of their own) */
	if (!cq)
		return NULL;
	memset(cq, 0, sizeof(*cq));
	/* an event channel lets the idle worker sleep until a completion arrives; without one (no
	 * fd to spare) the CQ is polled only and the worker falls back to short naps */
	cq->ch = ibv_create_comp_channel(dev->ctx);
	if (cq->ch && fcntl(cq->ch->fd, F_SETFL, fcntl(cq->ch->fd, F_GETFL) | O_NONBLOCK)) {
		ibv_destroy_comp_channel(cq->ch);
		cq->ch = NULL;
	}
	/* sized by the largest connection: any mix of routes' queue depths fits as many as init_worker
	 * counted on */
	cq->cq = ibv_create_cq(dev->ctx, (int)(cq_conns(dev, ctl->max_need) * ctl->max_need), NULL, cq->ch, 0);
	if (!cq->cq) {
		if (cq->ch)
			ibv_destroy_comp_channel(cq->ch);
		free(cq);
		return NULL;
	}
	cq->size = (uint32_t)cq->cq->cqe;
	cq->reserved = need;
	SLIST_INSERT_HEAD(&dev->cqs[w->id], cq, link);
	ctl->st.cqs++;
	/* the worker polls it from its next round on, whether any connection on it ever reaches the
	 * worker or not (the flushed completions of one that failed before must be taken too) */
	n = atomic_load_explicit(&w->cqs_pub, memory_order_relaxed);
	w->cqs[n] = cq;
	atomic_store_explicit(&w->cqs_pub, n + 1, memory_order_release);
	return cq;
}

/* ---- connection set-up and teardown ---- */

static uint16_t clamp_depth(uint32_t want, uint32_t dev_max)
{
	uint32_t max = dev_max < IB_RS_QP_MAX ? dev_max : IB_RS_QP_MAX;

	if (want > max)
		want = max;
	return (uint16_t)(want < IB_RS_QP_MIN ? IB_RS_QP_MIN : want);
}

/* Buffers, CQ room, queue pair, protocol state and every receive, for C on DEV. Returns 0 or
 * -errno; what was set up stays for conn_destroy. */
static int conn_setup(struct ib_ctl *ctl, struct ib_conn *c, struct ib_dev *dev)
{
	struct ibv_qp_init_attr attr;
	uint32_t max_wr = (uint32_t)dev->attr.max_qp_wr;
	uint32_t sq = c->route_sq ? c->route_sq : ctl->params.sq_depth;
	uint32_t rq = c->route_rq ? c->route_rq : ctl->params.rq_depth;
	int ret;

	/* the route's depths (the gateway keeps them within the engine's), within the device's and the
	 * object's */
	c->sq_depth = clamp_depth(sq < ctl->params.sq_depth ? sq : ctl->params.sq_depth, max_wr);
	c->rq_depth = clamp_depth(rq < c->ends_cap ? rq : c->ends_cap, max_wr - IB_RS_CTRL_SLOTS);
	c->bufs = bufs_get(ctl, dev, c->rbuf_size, ring_size_of(ctl, c, true));
	if (c->bufs && !c->bufs->sbuf_size && !c->bufs->n_xmr) {
		/* its registration of the copy buffers' memory failed (the memlock limit, say): a send
		 * ring of its own instead, and so for every set from now on, rather than a failed
		 * registration of the whole pool per connection */
		bufs_free(ctl, c->bufs);
		ctl->copy_bufs_failed = true;
		logf_(ctl, 4, "IB side: a buffer set could not register the Ethernet frames: sets of routes "
		              "relaying by reference get a copy area of their own from now on");
		c->bufs = bufs_get(ctl, dev, c->rbuf_size, ring_size_of(ctl, c, false));
	}
	if (!c->bufs)
		return -ENOMEM;
	ib_bufs_lend_init(c->bufs);
	c->cq = cq_reserve(ctl, dev, c->w, cq_need(c));
	if (!c->cq)
		return -ENOSPC;
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = attr.recv_cq = c->cq->cq;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 1;
	attr.cap.max_send_wr = c->sq_depth;
	/* a peer's 4 control messages need no credit: room for them on top of the credits */
	attr.cap.max_recv_wr = (uint32_t)c->rq_depth + IB_RS_CTRL_SLOTS;
	/* data writes gather lent segments (extmem.c): as many entries as the device allows, up to
	 * IB_LENT_SGE */
	attr.cap.max_send_sge = dev->attr.max_sge < IB_LENT_SGE ? (uint32_t)dev->attr.max_sge : IB_LENT_SGE;
	if (attr.cap.max_send_sge < 2)
		attr.cap.max_send_sge = 2;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = ctl->params.inline_size;
	/* in the buffer set's own protection domain: its keys work through this queue pair only */
	if (rdma_create_qp(c->id, c->bufs->pd, &attr)) {
		attr.cap.max_inline_data = 0; /* a device without inline sends still works, slower */
		if (rdma_create_qp(c->id, c->bufs->pd, &attr))
			return -errno;
	}
	c->qp = c->id->qp;
	c->inline_max = attr.cap.max_inline_data;
	c->send_sge = (uint16_t)(attr.cap.max_send_sge < IB_LENT_SGE ? attr.cap.max_send_sge : IB_LENT_SGE);
	ib_conn_proto_init(c);
	ret = ib_conn_post_recvs(c, (unsigned)c->rq_depth + IB_RS_CTRL_SLOTS);
	return ret;
}

static void our_params(const struct ib_conn *c, uint8_t *buf)
{
	struct ib_rs_params p = {
		.version = IB_RS_VERSION,
		.flags = __BYTE_ORDER == __BIG_ENDIAN ? IB_RS_FLAG_NET : 0,
		.credits = c->rq_depth,
		.iomap_size = 0,
		.target_sgl = {.addr = (uintptr_t)c->bufs->tsgl, .key = c->bufs->rmr->rkey, .length = IB_RS_SGL_SIZE},
		.data_buf = {.addr = (uintptr_t)c->bufs->rbuf, .key = c->bufs->rmr->rkey, .length = c->bufs->rbuf_size / 2},
	};

	ib_rs_params_format(&p, buf);
}

/* The peer's private data: where our adverts go, its first buffer half, byte order. Credits go to
 * the worker through c->peer (active) or straight into the send state (passive, not yet handed
 * over); the first buffer half too, which the worker puts in our target_sgl when it opens C (an
 * active C is the worker's already: its checks of the adverts the peer may write there early must
 * not race a write of ours). */
static void apply_params(struct ib_conn *c, const struct ib_rs_params *p)
{
	bool we_net = __BYTE_ORDER == __BIG_ENDIAN;

	c->peer = *p;
	c->remote_sgl = p->target_sgl;
	c->swap_sgl = we_net != !!(p->flags & IB_RS_FLAG_NET);
}

static void conn_destroy(struct ib_ctl *ctl, struct ib_conn *c)
{
	if (c->id) {
		if (c->ct == IB_CT_LIVE || c->ct == IB_CT_ACCEPTING || c->ct == IB_CT_FAILED)
			rdma_disconnect(c->id); /* errors only mean it was not connected */
		if (c->id->qp)
			rdma_destroy_qp(c->id);
		rdma_destroy_id(c->id);
	}
	ib_lent_put_all(c); /* holds whose writes outlived the worker's wait: no queue pair reads them now */
	if (c->cq)
		cq_release(c);
	/* a set whose receive ring is still lent out (frames, a TCP send queue) waits for its last
	 * reference (lend.c) */
	if (c->bufs && ib_bufs_conn_done(c->bufs, &ctl->st))
		bufs_put(ctl, c->bufs);
	ho_del(ctl, c);
	if (c->route) {
		unreserve(ctl, c);
		ctl->hooks->route_put(c->route);
	}
	if (c->ct != IB_CT_SPARE)
		ctl->st.active--;
	if (!c->active && c->ct == IB_CT_FAILED)
		ctl->dying--;
	/* accepted, never a session's, and not failed otherwise: the peer vanished or broke it before
	 * establishment (e.g. its queue pair died of a remote access error). no_session is the worker's,
	 * read after its RELEASE. */
	if (!c->active && c->ct != IB_CT_SPARE && c->ct != IB_CT_FAILED && c->no_session)
		ctl->st.failed[IB_FAIL_ACCEPT]++;
	c->w->ct_gen[c->slot] = (c->w->ct_gen[c->slot] + 1) & IB_WR_GEN_MASK;
	c->w->ct_free[c->w->ct_nfree++] = c->slot;
	c->w->ct_conns--;
	ctl->st.conn_bytes -= conn_size(c->ends_cap);
	LIST_REMOVE(c, ct_link);
	free(c);
}

/* ---- passive side ---- */

static struct ib_worker *pick_worker(struct ib_ctl *ctl)
{
	struct ib_worker *best = &ctl->workers[0];

	for (unsigned i = 1; i < ctl->n_workers; i++)
		if (ctl->workers[i].ct_conns < best->ct_conns)
			best = &ctl->workers[i];
	return best;
}

/* The IP address of SA (IPv4, v4-mapped IPv6 as IPv4, IPv6), unspecified when it has none (AF_IB);
 * its port in *PORT. */
static struct xlt_ip sa_ip(const struct sockaddr *sa, uint16_t *port)
{
	struct xlt_ip ip = {0};

	*port = 0;
	if (sa->sa_family == AF_INET) {
		*port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
		ip = xlt_ip_v4(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
	} else if (sa->sa_family == AF_INET6) {
		*port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
		memcpy(ip.b, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16); /* v4-mapped stays IPv4 */
	}
	return ip;
}

/* The source's address as rdma_cm reports it (from the CM request's IP header: the requester chose
 * it); unspecified for AF_IB, which only an allow list that admits everyone admits. */
static struct xlt_ip peer_ip(struct rdma_cm_id *id, uint16_t *port)
{
	return sa_ip(rdma_get_peer_addr(id), port);
}

static void reject(struct ib_ctl *ctl, struct rdma_cm_id *id, enum ib_reject why, const struct xlt_ip *addr)
{
	static const char *const names[IB_REJ_COUNT] = {"wrong version", "malformed private data", "source not allowed",
							"limits", "no resources"};
	char a[XLT_IP_STRLEN];
	uint64_t skipped;

	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
	ctl->st.rejected[why]++;
	/* debug only, and rate-limited: a misbehaving client must not be able to flood the log */
	if (xlt_ratelim_ok(&ctl->rl_reject, ctl->now, LOG_EVERY_NS, &skipped))
		logf_(ctl, 7, "ib: connect request from %s rejected: %s (%" PRIu64 " more not logged)",
		      ipstr(addr, a), names[why], skipped);
}

static void fail_active(struct ib_ctl *ctl, struct ib_conn *c, int err, enum ib_fail why);

/* Admission with a reservation. When the route or the gateway is full, the oldest half-open
 * connection whose slot lets this request in gives it up: a handshake completes within a round trip,
 * so only a connection that is not completing its own loses out. A full route takes the slot of one of
 * its own half-open connections only (admitted on any version of the route: same_limit), a full
 * gateway (its route has room) that of any: a request to a route it cannot enter never ends another
 * route's handshake. The refusal that led to it is counted all the same (limit or global). */
static int admit(struct ib_ctl *ctl, void *route, const struct xlt_ip *addr)
{
	int ret = ctl->hooks->admit(ctl->hooks->arg, route, addr);
	struct ib_conn *old = NULL, *c, *next;

	if (ret != -EBUSY && ret != -ENOSPC)
		return ret;
	/* oldest first: the list is in deadline order, which is age order. Its own route's first, then
	 * (gateway full) any route's; one a session took meanwhile only leaves the list. */
	for (int any = 0; any <= (ret == -ENOSPC) && !old; any++)
		for (c = TAILQ_FIRST(&ctl->ho); c && !old; c = next) {
			next = TAILQ_NEXT(c, ho_link);
			if ((any || c->route == route ||
			     (ctl->hooks->same_limit && ctl->hooks->same_limit(c->route, route))) &&
			    ho_reclaim(ctl, c))
				old = c;
		}
	if (!old)
		return ret;
	fail_active(ctl, old, -ETIMEDOUT, IB_FAIL_HALF_OPEN);
	return ctl->hooks->admit(ctl->hooks->arg, route, addr);
}

/* The requester's own parameters, as rsocket answers, within what the device can do: more
 * read/atomic resources than it has would make rdma_accept fail (EINVAL), for every such request. */
static void accept_params(const struct ib_dev *dev, struct rdma_conn_param *p)
{
	if (p->responder_resources > dev->attr.max_qp_rd_atom)
		p->responder_resources = (uint8_t)dev->attr.max_qp_rd_atom;
	if (p->initiator_depth > dev->attr.max_qp_init_rd_atom)
		p->initiator_depth = (uint8_t)dev->attr.max_qp_init_rd_atom;
	if (p->retry_count > 7)
		p->retry_count = 7;
	if (p->rnr_retry_count > 7)
		p->rnr_retry_count = 7;
	p->srq = 0;
	p->qp_num = 0;
}

static void on_request(struct ib_ctl *ctl, struct cm_ev *e)
{
	struct ib_listener *l;
	struct ib_rs_params p;
	struct rdma_conn_param param;
	struct ib_dev *dev;
	struct ib_conn *c;
	uint8_t ours[IB_RS_PDATA_LEN];
	uint16_t port;
	struct xlt_ip addr = peer_ip(e->id, &port);
	uint64_t skipped;
	int ret;

	for (l = LIST_FIRST(&ctl->listeners); l && l->id != e->listen_id; l = LIST_NEXT(l, link))
		;
	if (!l || !ctl->serving) {
		reject(ctl, e->id, IB_REJ_LIMIT, &addr);
		return;
	}
	ret = ib_rs_params_parse(e->pdata, e->plen, &p);
	if (ret) {
		reject(ctl, e->id, ret == -EPROTONOSUPPORT ? IB_REJ_VERSION : IB_REJ_MALFORMED, &addr);
		return;
	}
	dev = dev_of(ctl, e->id->verbs);
	/* connections failed or ended but not freed yet still hold their queue pair and buffers (a
	 * session's slot goes back when it ends, its connection's once the worker handed it back: after
	 * its abort reached the peer, IB_LINGER_NS at most, and its lent writes completed): beyond
	 * IB_SLOT_SPARE of them (a flood displacing half-open ones faster than the workers hand them
	 * back, a peer ending sessions that linger), new requests wait for room, so memory stays within
	 * max_sessions + that (+ the one admission may displace). Checked before admission, which may
	 * end a half-open connection to make room: never for a request that is refused all the same. */
	if (!dev || dev->removed || ctl->dying >= IB_SLOT_SPARE || ctl->st.active >= ctl->max_conns + IB_SLOT_SPARE) {
		reject(ctl, e->id, IB_REJ_RESOURCES, &addr);
		return;
	}
	ret = admit(ctl, l->route, &addr);
	if (ret) {
		reject(ctl, e->id, ret == -EACCES ? IB_REJ_ACL : IB_REJ_LIMIT, &addr);
		return;
	}
	c = conn_new(ctl, pick_worker(ctl), clamp_depth(l->rp.rq_depth, IB_RS_QP_MAX));
	if (!c) {
		ctl->hooks->unadmit(ctl->hooks->arg, l->route);
		reject(ctl, e->id, IB_REJ_RESOURCES, &addr);
		return;
	}
	/* published to the worker by ADOPT */
	atomic_store_explicit(&c->reserved, true, memory_order_relaxed);
	c->ct = IB_CT_ACCEPTING;
	ctl->st.active++;
	c->deadline_ns = ctl->now + IB_ACCEPT_NS;
	ho_add(ctl, c);
	c->id = e->id;
	c->id->context = c;
	c->route = l->route;
	ctl->hooks->route_get(c->route);
	c->s.peer_addr = addr;
	c->s.peer_port = port;
	/* what the peer reached, and who it is on the fabric (PROXY v2 TLVs, logs): the GID of the
	 * request's path (rdma_cm turns it around for the passive side: dgid is the requester's) and the
	 * requester's QPN from the request */
	c->s.local_addr = sa_ip(rdma_get_local_addr(e->id), &port);
	c->s.local_port = l->port;
	memcpy(c->peer_gid, e->id->route.addr.addr.ibaddr.dgid.raw, sizeof(c->peer_gid));
	c->peer_qpn = e->param.qp_num;
	c->rbuf_size = l->rp.rbuf_size;
	c->sbuf_size = l->rp.sbuf_size;
	c->copy_size = l->rp.copy_size;
	c->route_sq = l->rp.sq_depth;
	c->route_rq = l->rp.rq_depth;
	ret = conn_setup(ctl, c, dev);
	if (ret)
		goto err;
	apply_params(c, &p);
	c->tx.edge = p.credits;
	our_params(c, ours);
	/* answer with the requester's own parameters (rnr_retry 7 = forever, as rsocket wants) */
	param = e->param;
	accept_params(dev, &param);
	param.private_data = ours;
	param.private_data_len = sizeof(ours);
	/* the worker must find ADOPT on its ring when the peer's first write completes, which may be the
	 * moment rdma_accept returns: never behind the pending list (then the request waits no longer,
	 * it is refused as for want of any other resource) */
	if (to_worker_now(ctl, c, IB_MSG_ADOPT, 0))
		goto err;
	if (rdma_accept(c->id, &param)) {
		char a[XLT_IP_STRLEN];
		if (xlt_ratelim_ok(&ctl->rl_accept, ctl->now, LOG_EVERY_NS, &skipped))
			logf_(ctl, 6, "ib: accepting %s failed: %s (%" PRIu64 " more not logged)",
			      ipstr(&addr, a), strerror(errno), skipped);
		fail_active(ctl, c, -ECONNABORTED, IB_FAIL_ACCEPT); /* the worker hands it back */
		return;
	}
	ctl->st.accepted++;
	return;
err:
	/* reject() destroys the id, but never its queue pair */
	if (e->id->qp)
		rdma_destroy_qp(e->id);
	c->id = NULL;
	conn_destroy(ctl, c);
	reject(ctl, e->id, IB_REJ_RESOURCES, &addr);
}

/* ---- active side ---- */

/* C (active, or passive before establishment) failed: counted, its session slot (if it still holds
 * one) given back now, the rest once the worker's RELEASE comes. */
static void fail_active(struct ib_ctl *ctl, struct ib_conn *c, int err, enum ib_fail why)
{
	ho_del(ctl, c);
	unreserve(ctl, c);
	if (c->ct == IB_CT_FAILED)
		return;
	if (!c->active)
		ctl->dying++;
	ctl->st.failed[why]++;
	c->ct = IB_CT_FAILED;
	/* resources stay until the worker's RELEASE: once rdma_connect ran, completions may exist */
	to_worker(ctl, c, IB_MSG_FAILED, err);
}

static int remaining_ms(struct ib_ctl *ctl, struct ib_conn *c)
{
	uint64_t left = c->deadline_ns > ctl->now ? (c->deadline_ns - ctl->now) / 1000000 : 0;

	return left < 1 ? 1 : left > 60000 ? 60000 : (int)left;
}

/* rdma_cm resolving from a bound source address does not fail when there is no route: it keeps trying
 * until its timeout (seen on 6.1: ADDR_ERROR -ETIMEDOUT after connect_timeout, reported as a timeout),
 * whereas an unbound resolution fails at once with ENETUNREACH. A UDP connect() from the same source
 * asks the routing table the same question and answers at once (no packet is sent). Returns 0 (routed,
 * or cannot tell: rdma_cm decides) or -ENETUNREACH/-EHOSTUNREACH. */
static int route_check(struct in_addr src, const struct sockaddr_in *dst)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_addr = src};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret = 0;

	if (fd < 0)
		return 0;
	if (!bind(fd, (struct sockaddr *)&s, sizeof(s)) && connect(fd, (const struct sockaddr *)dst, sizeof(*dst)) &&
	    (errno == ENETUNREACH || errno == EHOSTUNREACH))
		ret = -errno;
	close(fd);
	return ret;
}

static void start_active(struct ib_ctl *ctl, struct ib_conn *c)
{
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(c->dst_port), .sin_addr = c->dst};
	struct sockaddr_in src = {.sin_family = AF_INET, .sin_addr = {.s_addr = ctl->params.bind}};
	int ret;

	c->ct = IB_CT_RESOLVING;
	c->active = true;
	ctl->st.active++;
	ctl->st.connects++;
	c->deadline_ns = ctl->now + c->timeout_ms * 1000000ull;
	if (src.sin_addr.s_addr && (ret = route_check(src.sin_addr, &dst))) {
		fail_active(ctl, c, ret, IB_FAIL_UNREACHABLE);
		return;
	}
	if (rdma_create_id(ctl->ch, &c->id, c, RDMA_PS_TCP)) {
		c->id = NULL;
		fail_active(ctl, c, -errno, IB_FAIL_RESOURCES);
		return;
	}
	if (rdma_resolve_addr(c->id, src.sin_addr.s_addr ? (struct sockaddr *)&src : NULL, (struct sockaddr *)&dst,
			      remaining_ms(ctl, c)))
		fail_active(ctl, c, -errno, IB_FAIL_UNREACHABLE);
}

static void on_route(struct ib_ctl *ctl, struct ib_conn *c)
{
	struct rdma_conn_param param = {
		.flow_control = 1,
		.retry_count = 7,
		.rnr_retry_count = 7, /* infinite: we never let our receive queue run dry either */
	};
	struct ib_dev *dev = dev_of(ctl, c->id->verbs);
	uint8_t ours[IB_RS_PDATA_LEN];
	int ret;

	if (!dev || dev->removed) {
		fail_active(ctl, c, -ENODEV, IB_FAIL_RESOURCES);
		return;
	}
	ret = conn_setup(ctl, c, dev);
	if (ret) {
		fail_active(ctl, c, ret, IB_FAIL_RESOURCES);
		return;
	}
	our_params(c, ours);
	param.private_data = ours;
	param.private_data_len = sizeof(ours);
	c->ct = IB_CT_CONNECTING;
	if (rdma_connect(c->id, &param))
		fail_active(ctl, c, -errno, IB_FAIL_UNREACHABLE);
}

static void on_established(struct ib_ctl *ctl, struct ib_conn *c, struct cm_ev *e)
{
	struct ib_rs_params p;

	if (c->ct == IB_CT_ACCEPTING) {
		ho_del(ctl, c);
		c->ct = IB_CT_LIVE;
		to_worker(ctl, c, IB_MSG_ESTABLISHED, 0);
		return;
	}
	if (c->ct != IB_CT_CONNECTING)
		return; /* timed out meanwhile: the release disconnects it */
	if (ib_rs_params_parse(e->pdata, e->plen, &p)) {
		fail_active(ctl, c, -EPROTO, IB_FAIL_PROTOCOL);
		return;
	}
	apply_params(c, &p);
	/* who answered on the fabric (access log): the destination's GID on our path and its QPN from
	 * the reply; handed over with CONNECTED */
	memcpy(c->peer_gid, e->id->route.addr.addr.ibaddr.dgid.raw, sizeof(c->peer_gid));
	c->peer_qpn = e->param.qp_num;
	c->ct = IB_CT_LIVE;
	ctl->st.connected++;
	to_worker(ctl, c, IB_MSG_CONNECTED, 0);
}

/* ---- events ---- */

static void on_event(struct ib_ctl *ctl, struct cm_ev *e)
{
	struct ib_conn *c;

	if (e->type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		on_request(ctl, e);
		return;
	}
	if (e->type == RDMA_CM_EVENT_DEVICE_REMOVAL)
		dev_removed(ctl, dev_of(ctl, e->id->verbs), "rdma_cm's DEVICE_REMOVAL");
	c = e->id->context;
	if (!c)
		return; /* a listener's (device removal, address change): nothing to do per event */
	switch (e->type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (c->ct == IB_CT_RESOLVING && rdma_resolve_route(c->id, remaining_ms(ctl, c)))
			fail_active(ctl, c, -errno, IB_FAIL_UNREACHABLE);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (c->ct == IB_CT_RESOLVING)
			on_route(ctl, c);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		/* status -ETIMEDOUT: nobody answered (ARP, path query) within the time we gave, which
		 * is what is left of connect_timeout */
		if (e->status == -ETIMEDOUT)
			fail_active(ctl, c, -ETIMEDOUT, IB_FAIL_TIMEOUT);
		else
			fail_active(ctl, c, e->type == RDMA_CM_EVENT_ADDR_ERROR ? -EHOSTUNREACH : -ENETUNREACH,
				    IB_FAIL_UNREACHABLE);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		on_established(ctl, c, e);
		break;
	case RDMA_CM_EVENT_REJECTED:
		/* the peer's CM answered REJ: no listener on the port (status 8, invalid service id, as
		 * rxe answers), or its rsocket/ibgw refused the request (28, consumer defined). Either
		 * way the destination refused, as a TCP RST to a SYN. */
		if (c->active) {
			uint64_t skipped;

			/* (as many as TCP clients make us connect: rate-limited) */
			if (xlt_ratelim_ok(&ctl->rl_refused, ctl->now, LOG_EVERY_NS, &skipped))
				logf_(ctl, 7, "ib: connect to port %u rejected (CM reason %d; %" PRIu64 " more not logged)",
				      c->dst_port, e->status, skipped);
			fail_active(ctl, c, -ECONNREFUSED, IB_FAIL_REFUSED);
		} else
			fail_active(ctl, c, -ECONNRESET, IB_FAIL_ACCEPT);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		if (c->ct == IB_CT_LIVE)
			to_worker(ctl, c, IB_MSG_DISCONNECTED, 0);
		else if (!c->active)
			fail_active(ctl, c, -ECONNRESET, IB_FAIL_ACCEPT);
		else if (e->type == RDMA_CM_EVENT_UNREACHABLE && e->status == -ETIMEDOUT)
			/* the REQ went unanswered through all CM retries: a connect timeout */
			fail_active(ctl, c, -ETIMEDOUT, IB_FAIL_TIMEOUT);
		else if (e->type == RDMA_CM_EVENT_UNREACHABLE)
			fail_active(ctl, c, -EHOSTUNREACH, IB_FAIL_UNREACHABLE);
		else
			fail_active(ctl, c, -ECONNREFUSED, IB_FAIL_REFUSED);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (c->ct == IB_CT_LIVE || c->ct == IB_CT_ACCEPTING)
			to_worker(ctl, c, IB_MSG_DISCONNECTED, 0);
		else if (c->active)
			fail_active(ctl, c, -ECONNRESET, IB_FAIL_UNREACHABLE);
		break;
	default:
		break; /* TIMEWAIT_EXIT, ADDR_CHANGE, ... */
	}
}

/* At most MAX events. */
static void read_events(struct ib_ctl *ctl, unsigned max)
{
	struct rdma_cm_event *ev;
	unsigned n = 0;

	while (n < max && !rdma_get_cm_event(ctl->ch, &ev)) {
		n++;
		struct cm_ev e = {
			.type = ev->event,
			.status = ev->status,
			.id = ev->id,
			.listen_id = ev->listen_id,
			.param = ev->param.conn,
		};
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST || ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			e.plen = ev->param.conn.private_data && ev->param.conn.private_data_len
					 ? ev->param.conn.private_data_len
					 : 0;
			if (e.plen) /* (private_data may be NULL: memcpy's arguments must not be) */
				memcpy(e.pdata, ev->param.conn.private_data, e.plen);
		}
		e.param.private_data = NULL;
		rdma_ack_cm_event(ev);
		ctl->st.cm_events++;
		on_event(ctl, &e);
	}
}

static void read_messages(struct ib_ctl *ctl)
{
	struct ib_msg m[32];
	uint64_t v;

	if (read(ctl->wake_fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nobody woke us, we were called for the cm channel or the tick */
	}
	for (unsigned i = 0; i < ctl->n_workers; i++) {
		unsigned n;
		do {
			n = rte_ring_sc_dequeue_burst_elem(ctl->workers[i].out, m, sizeof(m[0]), 32, NULL);
			for (unsigned k = 0; k < n; k++) {
				if (m[k].type == IB_MSG_CONNECT)
					start_active(ctl, m[k].conn);
				else if (m[k].type == IB_MSG_OPENED)
					opened(ctl, m[k].conn);
				else if (m[k].type == IB_MSG_RELEASE)
					conn_destroy(ctl, m[k].conn);
			}
		} while (n == 32);
	}
}

static void refill_spares(struct ib_ctl *ctl)
{
	for (unsigned i = 0; i < ctl->n_workers; i++) {
		struct ib_worker *w = &ctl->workers[i];
		while (rte_ring_count(w->spares) < IB_SPARES) {
			struct ib_conn *c = conn_new(ctl, w, ctl->spare_depth);
			if (!c)
				break;
			c->ct = IB_CT_SPARE;
			if (rte_ring_sp_enqueue(w->spares, c)) {
				conn_destroy(ctl, c);
				break;
			}
		}
	}
}

void ib_ctl_process(struct ib_ctl *ctl, uint64_t now_ns)
{
	ctl->now = now_ns;
	/* a bounded batch of events, then the workers' releases: under a flood of requests the
	 * connections they displace are freed as they go, and the event loop serves the stats endpoint
	 * and the tick (deadlines) in between; the channel stays readable, so it calls again */
	read_events(ctl, 32);
	read_messages(ctl);
	pend_flush(ctl);
}

void ib_ctl_tick(struct ib_ctl *ctl, uint64_t now_ns, bool serving)
{
	ctl->now = now_ns;
	ctl->serving = serving;
	for (struct ib_conn *c = LIST_FIRST(&ctl->conns); c; c = LIST_NEXT(c, ct_link))
		if ((c->ct == IB_CT_RESOLVING || c->ct == IB_CT_CONNECTING) && now_ns >= c->deadline_ns)
			fail_active(ctl, c, -ETIMEDOUT, IB_FAIL_TIMEOUT);
	/* half-open connections past their deadline, oldest first (all got the same time); one a session
	 * took is not half-open (ho_reclaim takes it off the list) */
	while (!TAILQ_EMPTY(&ctl->ho) && now_ns >= TAILQ_FIRST(&ctl->ho)->deadline_ns) {
		struct ib_conn *c = TAILQ_FIRST(&ctl->ho);
		char a[XLT_IP_STRLEN];
		uint64_t skipped;

		if (!ho_reclaim(ctl, c))
			continue;
		if (xlt_ratelim_ok(&ctl->rl_half_open, ctl->now, LOG_EVERY_NS, &skipped))
			logf_(ctl, 6,
			      "ib: connection from %s not established in time, dropped (%" PRIu64
			      " more not logged)",
			      ipstr(&c->s.peer_addr, a), skipped);
		fail_active(ctl, c, -ETIMEDOUT, IB_FAIL_HALF_OPEN);
	}
	read_messages(ctl);
	refill_spares(ctl);
	pend_flush(ctl);
	bufs_returned(ctl, bufs_put);
	devs_check(ctl);
}

/* ---- listeners ---- */

struct ib_listener *ib_listen(struct ib_ctl *ctl, uint16_t port, const struct ib_route_params *rp,
			      void *route)
{
	struct sockaddr_in sin = {
	    .sin_family = AF_INET, .sin_port = htons(port), .sin_addr = {.s_addr = ctl->params.bind}};
	struct ib_listener *l = calloc(1, sizeof(*l));
	int one = 1, e;

	if (!l)
		return NULL;
	if (rdma_create_id(ctl->ch, &l->id, NULL, RDMA_PS_TCP))
		goto err;
	/* a restarted daemon must get its port back at once */
	rdma_set_option(l->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one));
	if (rdma_bind_addr(l->id, (struct sockaddr *)&sin) || rdma_listen(l->id, LISTEN_BACKLOG))
		goto err_id;
	l->ctl = ctl;
	l->rp = *rp;
	l->route = route;
	l->port = port;
	ctl->hooks->route_get(route);
	LIST_INSERT_HEAD(&ctl->listeners, l, link);
	ctl->st.listeners++;
	return l;
err_id:
	e = errno;
	rdma_destroy_id(l->id);
	errno = e;
err:
	e = errno;
	ctl->st.listen_errors++;
	free(l);
	errno = e;
	return NULL;
}

void ib_listener_close(struct ib_listener *l)
{
	struct ib_ctl *ctl;

	if (!l)
		return;
	ctl = l->ctl;
	rdma_destroy_id(l->id);
	LIST_REMOVE(l, link);
	ctl->hooks->route_put(l->route);
	ctl->st.listeners--;
	free(l);
}

void ib_listener_update(struct ib_listener *l, const struct ib_route_params *rp, void *route)
{
	void *old = l->route;

	l->ctl->hooks->route_get(route);
	l->rp = *rp;
	l->route = route;
	l->ctl->hooks->route_put(old);
}

uint16_t ib_listener_port(const struct ib_listener *l)
{
	return l->port;
}

/* ---- life cycle ---- */

static uint32_t pow2_at_least(uint64_t n)
{
	uint32_t p = 64;

	while (p < n && p < (1u << 30))
		p <<= 1;
	return p;
}

static int open_devices(struct ib_ctl *ctl)
{
	struct stat st;
	int n = 0;

	ctl->dev_list = rdma_get_devices(&n);
	if (!ctl->dev_list)
		return errno ? -errno : -ENODEV;
	for (int i = 0; i < n && ctl->n_devs < IB_MAX_DEVS; i++) {
		struct ibv_context *ctx = ctl->dev_list[i];
		struct ib_dev *d = &ctl->devs[ctl->n_devs];
		const char *name = ibv_get_device_name(ctx->device);

		if (ctl->params.device[0] && strcmp(ctl->params.device, name))
			continue;
		if (ibv_query_device(ctx, &d->attr))
			continue;
		d->cqs = calloc(ctl->n_workers, sizeof(d->cqs[0]));
		if (!d->cqs)
			continue;
		d->ctx = ctx;
		d->name = name;
		d->ino = stat(ctx->device->dev_path, &st) ? 0 : st.st_ino;
		ctl->n_devs++;
	}
	return ctl->n_devs ? 0 : -ENODEV;
}

static int init_worker(struct ib_ctl *ctl, struct ib_worker *w, unsigned i, void *arg, uint32_t max_conns)
{
	char name[32];
	uint32_t n = max_conns + IB_SPARES + IB_SLOT_SPARE;

	if (n > IB_WR_SLOT_MAX)
		n = IB_WR_SLOT_MAX;
	STAILQ_INIT(&w->work);
	w->ctl = ctl;
	w->id = i;
	w->arg = arg;
	w->hooks = ctl->hooks;
	w->wake_fd = ctl->wake_fd;
	w->ka_ns = ctl->params.keepalive_ms * 1000000ull;
	w->n_slots = n;
	w->slots = calloc(n, sizeof(w->slots[0]));
	w->ct_gen = calloc(n, sizeof(w->ct_gen[0]));
	w->ct_free = calloc(n, sizeof(w->ct_free[0]));
	if (!w->slots || !w->ct_gen || !w->ct_free)
		return -ENOMEM;
	for (uint32_t k = 0; k < n; k++)
		w->ct_free[k] = n - 1 - k;
	w->ct_nfree = n;
	for (unsigned d = 0; d < ctl->n_devs; d++)
		w->max_cqs += n / cq_conns(&ctl->devs[d], ctl->max_need) + 2;
	w->cqs = calloc(w->max_cqs, sizeof(w->cqs[0]));
	if (!w->cqs)
		return -ENOMEM;
	w->evented = true; /* no CQ yet: nothing to wait for */
	snprintf(name, sizeof(name), "ib_in%u", i);
	w->in = rte_ring_create_elem(name, sizeof(struct ib_msg), pow2_at_least(4ull * n), SOCKET_ID_ANY,
				     RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "ib_out%u", i);
	w->out = rte_ring_create_elem(name, sizeof(struct ib_msg), pow2_at_least(2ull * n + 64), SOCKET_ID_ANY,
				      RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "ib_spare%u", i);
	w->spares = rte_ring_create(name, pow2_at_least(IB_SPARES + 1), SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!w->in || !w->out || !w->spares)
		return -ENOMEM;
	return 0;
}

struct ib_ctl *ib_ctl_create(const struct ib_params *p, unsigned n_workers, void *const *wargs,
                             uint32_t max_conns, uint64_t mem_limit, const struct xlt_listen_hooks *hooks)
{
	struct ib_ctl *ctl = calloc(1, sizeof(*ctl));
	int ret = -ENOMEM, flags;

	if (!ctl)
		return NULL;
	TAILQ_INIT(&ctl->ho);
	ctl->params = *p;
	ctl->params.device[IB_DEVICE_MAX - 1] = 0;
	ctl->hooks = hooks;
	ctl->n_workers = n_workers;
	ctl->serving = true;
	ctl->wake_fd = -1;
	ctl->mem_limit = mem_limit;
	ctl->max_conns = max_conns;
	ctl->spare_depth = clamp_depth(p->rq_depth, IB_RS_QP_MAX);
	ctl->max_need =
	    (uint32_t)clamp_depth(p->sq_depth, IB_RS_QP_MAX) + ctl->spare_depth + IB_RS_CTRL_SLOTS;
	ctl->ch = rdma_create_event_channel();
	if (!ctl->ch) {
		ret = errno ? -errno : -ENODEV;
		goto err;
	}
	flags = fcntl(ctl->ch->fd, F_GETFL);
	if (flags < 0 || fcntl(ctl->ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
		ret = -errno;
		goto err;
	}
	ctl->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ctl->wake_fd < 0) {
		ret = -errno;
		goto err;
	}
	if ((ret = open_devices(ctl)))
		goto err;
	/* aligned: each worker's groups have cache lines of their own (struct ib_worker) */
	ctl->workers = aligned_alloc(alignof(struct ib_worker), n_workers * sizeof(ctl->workers[0]));
	if (ctl->workers)
		memset(ctl->workers, 0, n_workers * sizeof(ctl->workers[0]));
	ctl->pend = calloc(n_workers, sizeof(ctl->pend[0]));
	if (!ctl->workers || !ctl->pend) {
		ret = -ENOMEM;
		goto err;
	}
	for (unsigned i = 0; i < n_workers; i++)
		if ((ret = init_worker(ctl, &ctl->workers[i], i, wargs[i], max_conns)))
			goto err;
	ctl->n_slots = ctl->workers[0].n_slots;
	refill_spares(ctl);
	return ctl;
err:
	ib_ctl_destroy(ctl);
	errno = -ret;
	return NULL;
}

void ib_ctl_destroy(struct ib_ctl *ctl)
{
	if (!ctl)
		return;
	while (!LIST_EMPTY(&ctl->listeners))
		ib_listener_close(LIST_FIRST(&ctl->listeners));
	while (!LIST_EMPTY(&ctl->conns))
		conn_destroy(ctl, LIST_FIRST(&ctl->conns));
	bufs_returned(ctl, bufs_free);
	for (unsigned d = 0; d < ctl->n_devs; d++) {
		struct ib_dev *dev = &ctl->devs[d];
		ib_bufs_orphan_all(dev); /* (the workers are stopped: frames freed later put the last ones) */
		for (unsigned i = 0; i < ctl->n_workers; i++)
			while (!SLIST_EMPTY(&dev->cqs[i])) {
				struct ib_cq *cq = SLIST_FIRST(&dev->cqs[i]);
				SLIST_REMOVE_HEAD(&dev->cqs[i], link);
				ibv_destroy_cq(cq->cq); /* (the worker acked every event it read) */
				if (cq->ch)
					ibv_destroy_comp_channel(cq->ch);
				free(cq);
			}
		while (!LIST_EMPTY(&dev->pool)) {
			struct ib_bufs *b = LIST_FIRST(&dev->pool);
			LIST_REMOVE(b, pool_link);
			bufs_free(ctl, b);
		}
		free(dev->cqs);
	}
	if (ctl->dev_list)
		rdma_free_devices(ctl->dev_list);
	for (unsigned i = 0; ctl->workers && i < ctl->n_workers; i++) {
		struct ib_worker *w = &ctl->workers[i];
		rte_ring_free(w->in);
		rte_ring_free(w->out);
		rte_ring_free(w->spares);
		free(w->slots);
		free(w->ct_gen);
		free(w->ct_free);
		free(w->cqs);
		if (ctl->pend)
			free(ctl->pend[i].m);
	}
	free(ctl->workers);
	free(ctl->pend);
	if (ctl->wake_fd >= 0)
		close(ctl->wake_fd);
	if (ctl->ch)
		rdma_destroy_event_channel(ctl->ch);
	free(ctl);
}

int ib_ctl_cm_fd(const struct ib_ctl *ctl)
{
	return ctl->ch->fd;
}

int ib_ctl_wake_fd(const struct ib_ctl *ctl)
{
	return ctl->wake_fd;
}

const struct ib_ctl_stats *ib_ctl_stats(const struct ib_ctl *ctl)
{
	return &ctl->st;
}

int ib_ctl_extmem(struct ib_ctl *ctl, void *addr, size_t len)
{
	int ret = ib_extmem_add(&ctl->extmem, addr, len);

	if (!ret)
		ctl->st.extmem_bytes += len;
	return ret;
}

void ib_ctl_extmem_clear(struct ib_ctl *ctl)
{
	ctl->extmem.n = 0;
	ctl->st.extmem_bytes = 0;
}

void ib_ctl_bufmem(struct ib_ctl *ctl, const struct ib_mem_ops *ops)
{
	ctl->mops = ops;
}

void ib_ctl_copymem(struct ib_ctl *ctl, const struct ib_copy_ops *ops)
{
	ctl->cops = ops;
	for (unsigned i = 0; i < ctl->n_workers; i++)
		ctl->workers[i].copy_ops = ops;
}

struct ib_worker *ib_ctl_worker(struct ib_ctl *ctl, unsigned i)
{
	return &ctl->workers[i];
}

const char *ib_ctl_devices(const struct ib_ctl *ctl, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < ctl->n_devs && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " " : "", ctl->devs[i].name);
	return buf;
}

/* ---- counter names ---- */

#define C(f, name, help)       {name, XLT_COUNTER, offsetof(struct ib_ctl_stats, f), help, NULL}
#define CL(f, name, help, lbl) {name, XLT_COUNTER, offsetof(struct ib_ctl_stats, f), help, lbl}
#define G(f, name, help)       {name, XLT_GAUGE, offsetof(struct ib_ctl_stats, f), help, NULL}
const struct xlt_metric_desc ib_ctl_metrics[] = {
	G(active, "ib_connections_active", "IB connections that exist (accepted or connecting, not yet freed)"),
	G(half_open, "ib_connections_half_open",
	  "IB connections accepted and not yet established (each holds a session slot until its deadline)"),
	C(accepted, "ib_connections_accepted_total", "IB connections accepted"),
	CL(rejected[IB_REJ_VERSION], "ib_connections_rejected_total", "IB connect requests refused, by reason",
	   "reason=version"),
	CL(rejected[IB_REJ_MALFORMED], "ib_connections_rejected_total", "", "reason=malformed"),
	CL(rejected[IB_REJ_ACL], "ib_connections_rejected_total", "", "reason=acl"),
	CL(rejected[IB_REJ_LIMIT], "ib_connections_rejected_total", "", "reason=limit"),
	CL(rejected[IB_REJ_RESOURCES], "ib_connections_rejected_total", "", "reason=resources"),
	C(connects, "ib_connects_total", "IB connections opened by the gateway (routes to ib:HOST:PORT)"),
	C(connected, "ib_connects_established_total", "IB connections opened by the gateway and established"),
	CL(failed[IB_FAIL_REFUSED], "ib_connections_failed_total", "IB connections that failed before carrying data",
	   "reason=refused"),
	CL(failed[IB_FAIL_TIMEOUT], "ib_connections_failed_total", "", "reason=timeout"),
	CL(failed[IB_FAIL_UNREACHABLE], "ib_connections_failed_total", "", "reason=unreachable"),
	CL(failed[IB_FAIL_PROTOCOL], "ib_connections_failed_total", "", "reason=protocol"),
	CL(failed[IB_FAIL_RESOURCES], "ib_connections_failed_total", "", "reason=resources"),
	CL(failed[IB_FAIL_ACCEPT], "ib_connections_failed_total", "", "reason=accept"),
	CL(failed[IB_FAIL_HALF_OPEN], "ib_connections_failed_total", "", "reason=half_open"),
	G(listeners, "ib_listeners", "rsocket listeners open"),
	C(listen_errors, "ib_listen_errors_total", "rsocket listeners that could not be opened"),
	C(cm_events, "ib_cm_events_total", "rdma_cm events handled"),
	G(buf_bytes, "ib_buffer_bytes", "registered IB buffer memory (receive rings + copy areas)"),
	G(buf_idle_bytes, "ib_buffer_idle_bytes", "registered IB buffer memory idle in the pool"),
	G(buf_mem_bytes, "ib_buffer_dpdk_bytes",
	  "of the IB buffer memory, what lies in DPDK's memory, where a virtio_user port sends from without a copy"),
	G(buf_lent, "ib_buffer_lent_sets",
	  "IB buffer sets whose connection ended while the Ethernet side still referenced their receive ring"),
	C(buf_regs, "ib_buffer_registrations_total",
	  "IB buffer sets registered with the device (a connection that reuses a pooled one does not count)"),
	C(buf_rekeys, "ib_buffer_rekeys_total",
	  "pooled IB buffer sets given a new remote key for their next connection (the old key dies)"),
	G(conn_bytes, "ib_connection_state_bytes",
	  "memory of IB connection objects besides their buffers (spares for active opens included)"),
	G(cqs, "ib_completion_queues", "completion queues"),
	G(extmem_bytes, "ib_extmem_bytes",
	  "Ethernet frame memory each IB buffer set registers (local access only) to send from without a copy"),
	C(extmem_regs, "ib_extmem_registrations_total", "registrations of that memory (per range and new buffer set)"),
	G(devs_removed, "ib_devices_removed",
	  "RDMA devices the kernel is removing (driver unload, rdma link delete, reset) while ibgwd holds them: "
	  "IB routes are down and the removal waits until ibgwd restarts"),
};
const unsigned ib_ctl_n_metrics = sizeof(ib_ctl_metrics) / sizeof(ib_ctl_metrics[0]);
#undef C
#undef CL
#undef G

#define C(f, name, help)       {name, XLT_COUNTER, offsetof(struct ib_worker_stats, f), help, NULL}
#define CL(f, name, help, lbl) {name, XLT_COUNTER, offsetof(struct ib_worker_stats, f), help, lbl}
/* The stall and withheld times are nanosecond counters: the gateway prints them in seconds. */
const struct xlt_metric_desc ib_worker_metrics[] = {
	{"ib_worker_connections", XLT_GAUGE, offsetof(struct ib_worker_stats, conns), "IB connections owned by the worker",
	 NULL},
	CL(bytes_rx, "ib_bytes_total", "IB payload bytes, by direction", "dir=rx"),
	CL(bytes_tx, "ib_bytes_total", "", "dir=tx"),
	CL(msgs_rx, "ib_messages_total", "rsocket data messages, by direction", "dir=rx"),
	CL(msgs_tx, "ib_messages_total", "", "dir=tx"),
	CL(ctrl_rx, "ib_control_messages_total", "rsocket credit, advert and control messages, by direction", "dir=rx"),
	CL(ctrl_tx, "ib_control_messages_total", "", "dir=tx"),
	C(credit_stalls, "ib_credit_stalls_total", "times the gateway had data for an IB peer but no credits or space"),
	C(credit_withheld, "ib_credit_withheld_total", "times an IB peer had to wait for credits the gateway held back"),
	C(comp_errors, "ib_completion_errors_total", "completions with an error status (flushes not counted)"),
	CL(keepalives_tx, "ib_keepalives_total", "rsocket keepalives, by direction", "dir=tx"),
	CL(keepalives_rx, "ib_keepalives_total", "", "dir=rx"),
	CL(closed[IB_CLOSE_OK], "ib_connections_closed_total", "established IB connections that ended, by cause",
	   "reason=ok"),
	CL(closed[IB_CLOSE_RESET], "ib_connections_closed_total", "", "reason=reset"),
	CL(closed[IB_CLOSE_PROTOCOL], "ib_connections_closed_total", "", "reason=protocol"),
	CL(closed[IB_CLOSE_ABORTED], "ib_connections_closed_total", "", "reason=aborted"),
	CL(closed[IB_CLOSE_ERROR], "ib_connections_closed_total", "", "reason=error"),
	CL(closed[IB_CLOSE_KEEPALIVE], "ib_connections_closed_total", "", "reason=keepalive"),
	CL(closed[IB_CLOSE_ACCESS], "ib_connections_closed_total", "", "reason=access"),
	CL(closed[IB_CLOSE_RECLAIMED], "ib_connections_closed_total", "", "reason=reclaimed"),
	CL(violations[IB_VIOL_MESSAGE], "ib_protocol_violations_total",
	   "IB peers' protocol violations (each resets its connection), by kind", "reason=message"),
	CL(violations[IB_VIOL_LENGTH], "ib_protocol_violations_total", "", "reason=length"),
	CL(violations[IB_VIOL_SPACE], "ib_protocol_violations_total", "", "reason=space"),
	CL(violations[IB_VIOL_CREDIT], "ib_protocol_violations_total", "", "reason=credit"),
	CL(violations[IB_VIOL_ADVERT], "ib_protocol_violations_total", "", "reason=advert"),
	C(doorbells, "ib_send_doorbells_total",
	  "ibv_post_send calls (doorbells), each posting one work request or a chain of them"),
	C(lent_tx, "ib_lent_bytes_total", "payload bytes RDMA-written straight from lent Ethernet frames (no copy)"),
	C(lent_late, "ib_lent_holds_late_total",
	  "lent frames whose writes did not complete within 2 s of a reset: given back only after the queue pair was destroyed"),
	C(copy_waits, "ib_copy_waits_total",
	  "tries of copies to IB peers that found no frame of the port's pool to copy into (the worker's share of an eighth of the pool taken, the pool down to a sixteenth, or the connection held to 2 while others are short) and waited"),
	C(stale_wcs, "ib_stale_completions_total",
	  "completions of connections already handed back for destruction (their queue pairs' flushed work requests), dropped"),
};
const unsigned ib_worker_n_metrics = sizeof(ib_worker_metrics) / sizeof(ib_worker_metrics[0]);
#undef C
#undef CL
