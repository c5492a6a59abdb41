/* Active health checks of the backends of pools (backend.h).
 *
 * A check must reach a backend the way its sessions do: a tcp: backend is reachable only through the
 * DPDK port (the kernel has no path to the Ethernet side), an ib: backend through ib_side's rdma_cm
 * path. So checks run on a worker, as connections of that worker's engines, not on the control thread:
 *
 *   control (a 100 ms tick)                         worker 0 (every round, gw_health_poll)
 *   backend due and no check out: its record  --req ring-->  opens a stream to the backend with the
 *   struct gw_check (the backend's, reused),                route's parameters (gw_side_of(kind)->
 *   with a reference on the route                           connect), like a session's far side;
 *                                                           passes on connect (tcp: then check_send
 *                                                           written and check_expect matched),
 *   results: rise/fall counts, up/down,   <--res ring--     fails on refusal, reset, mismatch or
 *   latency; a change republishes the                       check_timeout; then aborts the stream
 *   snapshot the workers pick from                          (RST / DISCONNECT; one that passed
 *                                                           on connect with bytes to send once they
 *                                                           are acknowledged) and posts the record
 *
 * Both rings are single-producer single-consumer, sized for every backend's one record, so they never
 * fill. While a record is out it belongs to worker 0 (which reads the backend's immutable endpoint
 * only); the control thread touches it again once it came back, and never frees a backend whose
 * check is out. Checks stop while the daemon drains; what is out finishes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "../conf/conf.h"
#include "../translate/proxy_v2.h"
#include "backend.h"
#include "log.h"

#define HEALTH_TICK_US 100000
#define HEALTH_RING    (GW_MAX_BACKENDS * 2)

struct gw_check {
	/* set by control before posting, read-only while out */
	struct gw_backend *b;
	struct gw_route *r; /* referenced while out (route parameters, the ib connection's route) */
	uint64_t timeout_ns;
	/* worker 0 while out; control reads them once the record is back */
	struct xlt_stream *s;
	uint64_t start_ns, deadline_ns;
	uint32_t sent, matched;
	bool decided;
	bool flushing;         /* passed with bytes to deliver: aborted once they are acknowledged */
	int result;            /* 0 passed, else why not (-errno) */
	uint64_t latency_ns;   /* start to pass */
	LIST_ENTRY(gw_check) link; /* h.out, while under way */
};

/* control enqueues req and dequeues res; worker 0 the other way round */
static struct {
	struct rte_ring *req, *res;
	LIST_HEAD(, gw_check) out; /* worker 0 only: checks under way */
} h;

/* ---- worker 0 ---- */

static void post(struct gw_check *c)
{
	if (rte_ring_sp_enqueue(h.res, c))
		GW_ERR("health: result ring full"); /* cannot happen: sized for every record */
}

/* What a check sends: on a route that sends PROXY headers, a LOCAL header first (the spec's word for
 * a balancer's own check: a backend that requires headers, HAProxy's accept-proxy or nginx's
 * proxy_protocol, takes anything else as an error, and a server that speaks first says nothing until
 * it came), then check_send. SENT counts both. */
static uint32_t local_len(const struct gw_check *c)
{
	return c->r->conf.proxy_protocol && c->b->ep.kind == CONF_EP_TCP ? XLT_PP2_HDR_LEN : 0;
}

static void send_some(struct gw_check *c)
{
	const struct conf_bytes *snd = &c->r->conf.check_send;
	uint32_t pre = local_len(c);

	if (c->sent < pre) {
		uint8_t local[XLT_PP2_HDR_LEN];

		xlt_pp2_build_local(local, sizeof(local));
		c->sent += (uint32_t)c->s->ops->write(c->s, local + c->sent, pre - c->sent);
		if (c->sent < pre)
			return;
	}
	if (c->sent - pre < snd->len)
		c->sent += (uint32_t)c->s->ops->write(c->s, snd->b + (c->sent - pre), snd->len - (c->sent - pre));
}

/* A check that passed with bytes to send (no check_expect: it passes on connect) sends the rest, and
 * is aborted once the backend acknowledged them all (gw_health_poll): an abort right away would
 * take them back (the engine's send queue goes with a reset), and the backend would see a
 * connection that said nothing, against what check_send promises. A reset once they arrived, as
 * HAProxy's checks end, leaves no TIME_WAIT behind each check and waits for no FIN of the backend's;
 * the check's deadline aborts what is still unacknowledged then (check_timeout). */
static bool delivered(struct gw_check *c)
{
	return c->sent == local_len(c) + c->r->conf.check_send.len &&
	       (!c->s->ops->unsent || !c->s->ops->unsent(c->s));
}

static void decide(struct gw_check *c, int result, uint64_t now)
{
	if (c->decided)
		return;
	c->decided = true;
	c->result = result;
	if (!result)
		c->latency_ns = now - c->start_ns;
	if (!c->s || c->s->state == XLT_STREAM_CLOSED)
		return;
	if (!result && !c->r->conf.check_expect.len && local_len(c) + c->r->conf.check_send.len) {
		c->flushing = true; /* (gw_health_poll aborts it once delivered) */
		send_some(c);
		return;
	}
	c->s->ops->abort(c->s); /* on_closed follows from the engine's poll */
}

static void ev_connected(void *arg)
{
	struct gw_check *c = arg;

	send_some(c);
	if (!c->r->conf.check_expect.len)
		decide(c, 0, gw_now_ns());
}

static void ev_readable(void *arg)
{
	struct gw_check *c = arg;
	const struct conf_bytes *exp = &c->r->conf.check_expect;
	const uint8_t *p;
	size_t n;

	if (c->decided) {
		/* what a backend says after the check passed (a banner while what the check sends is
		 * on its way) is read and dropped: unread, it would close the window on it */
		while ((n = c->s->ops->peek(c->s, &p)) > 0)
			c->s->ops->consume(c->s, n);
		return;
	}
	while (c->matched < exp->len && (n = c->s->ops->peek(c->s, &p)) > 0) {
		size_t k = n < exp->len - c->matched ? n : exp->len - c->matched;
		if (memcmp(p, exp->b + c->matched, k)) {
			decide(c, -EPROTO, gw_now_ns());
			return;
		}
		c->matched += (uint32_t)k;
		c->s->ops->consume(c->s, n); /* what follows the expected bytes is not ours to judge */
	}
	if (exp->len && c->matched == exp->len)
		decide(c, 0, gw_now_ns());
	else if (c->s->peer_done)
		decide(c, -EPROTO, gw_now_ns()); /* closed before it said what we expect */
}

static void ev_writable(void *arg)
{
	struct gw_check *c = arg;

	if (c->flushing || !c->decided)
		send_some(c);
}

static void ev_closed(void *arg, int err)
{
	struct gw_check *c = arg;

	decide(c, err ? err : -ECONNRESET, gw_now_ns()); /* closed before it passed */
	c->s->ops->release(c->s);
	c->s = NULL;
	LIST_REMOVE(c, link);
	post(c);
}

static bool transient(int err)
{
	return err == -ENOBUFS || err == -EAGAIN || err == -ENOMEM || err == -EADDRNOTAVAIL;
}

/* Opens C's connection; false when C is finished: the caller unlinks and posts it (after posting,
 * the record is the control thread's). */
static bool start(struct gw_worker *w, struct gw_check *c, uint64_t now)
{
	const struct conf_endpoint *ep = &c->b->ep;
	int err = 0;

	c->s = gw_side_of(ep->kind)->connect(w, c->r, &ep->addr, ep->port, gw_ms_left(c->deadline_ns, now), &err);
	if (!c->s) {
		if (transient(err) && now < c->deadline_ns)
			return true; /* no connection object ready this instant: next round */
		c->decided = true;
		c->result = err ? err : -EIO;
		return false;
	}
	c->s->ev = (struct xlt_stream_events){
	    .arg = c,
	    .on_connected = ev_connected,
	    .on_readable = ev_readable,
	    .on_writable = ev_writable,
	    .on_closed = ev_closed,
	};
	if (c->s->state == XLT_STREAM_OPEN)
		ev_connected(c);
	return true;
}

unsigned gw_health_poll(struct gw_worker *w, uint64_t now)
{
	void *msgs[16];
	unsigned n, work = 0;

	if (!h.req)
		return 0;
	n = rte_ring_sc_dequeue_burst(h.req, msgs, 16, NULL);
	for (unsigned i = 0; i < n; i++) {
		struct gw_check *c = msgs[i];
		c->s = NULL;
		c->start_ns = now;
		c->deadline_ns = now + c->timeout_ns;
		c->sent = c->matched = 0;
		c->decided = c->flushing = false;
		c->result = 0;
		c->latency_ns = 0;
		LIST_INSERT_HEAD(&h.out, c, link);
	}
	work += n;
	for (struct gw_check *c = LIST_FIRST(&h.out), *next; c; c = next) {
		next = LIST_NEXT(c, link); /* (what is done to C touches no other check) */
		if (!c->s) {
			/* not connected yet (new, or no connection object ready last round) */
			if (!start(w, c, now)) {
				LIST_REMOVE(c, link);
				post(c);
				work++;
				continue;
			}
		} else if (now >= c->deadline_ns && !c->decided) {
			decide(c, -ETIMEDOUT, now); /* ev_closed unlinks and posts it from a later poll */
			work++;
		} else if (c->flushing && c->s->state != XLT_STREAM_CLOSED &&
		           (delivered(c) || now >= c->deadline_ns)) {
			/* passed, and what it sends is delivered (or its time is up) */
			c->flushing = false;
			c->s->ops->abort(c->s);
			work++;
		}
	}
	return work;
}

/* ---- control ---- */

static void result(struct gw_daemon *d, struct gw_check *c, uint64_t now)
{
	struct gw_backend *b = c->b;
	const struct conf_route *rc = &c->r->conf;

	b->checking = false;
	if (!b->check_interval_ms) {
		/* a reload turned its checks off while this one ran: nothing would ever check it again
		 * to undo a verdict (up stays as the reload left it) */
		gw_route_put(c->r);
		c->r = NULL;
		return;
	}
	if (atomic_load_explicit(&c->r->removed, memory_order_acquire)) {
		/* a reload changed the route while this check ran: it went with the old settings (what
		 * it sends and expects, rise and fall), and its verdict would count into a run of the
		 * new ones. Not counted; the next check goes now */
		b->next_check_ns = now;
		gw_route_put(c->r);
		c->r = NULL;
		return;
	}
	b->next_check_ns = c->start_ns + b->check_interval_ms * 1000000ull;
	if (b->next_check_ns < now)
		b->next_check_ns = now;
	if (!c->result) {
		b->checks_passed++;
		b->check_ns_last = c->latency_ns;
		b->check_ns_sum += c->latency_ns;
		b->fall_run = 0;
		if (!b->up && ++b->rise_run >= rc->rise) {
			b->up = true;
			b->rise_run = 0;
			d->bk_dirty = true;
			GW_NOTICE("route %s: backend %s is up (%u check(s) passed)", b->route, b->name,
			          rc->rise);
		}
	} else {
		b->checks_failed++;
		b->rise_run = 0;
		if (b->up && ++b->fall_run >= rc->fall) {
			b->up = false;
			b->fall_run = 0;
			d->bk_dirty = true;
			GW_WARN("route %s: backend %s is down (%u check(s) failed, last: %s)", b->route,
			        b->name, rc->fall, strerror(-c->result));
		}
	}
	gw_route_put(c->r);
	c->r = NULL;
}

static void dispatch(struct gw_route *r, uint64_t now)
{
	for (unsigned k = 0; k < r->pool->n; k++) {
		struct gw_backend *b = r->pool->b[k];
		if (b->checking || b->admin == CONF_BACKEND_MAINT || now < b->next_check_ns)
			continue;
		if (!b->chk && !(b->chk = calloc(1, sizeof(*b->chk))))
			continue; /* the next tick tries again */
		b->chk->b = b;
		b->chk->r = r;
		b->chk->timeout_ns = r->conf.check_timeout_ms * 1000000ull;
		gw_route_get(r);
		b->checking = true;
		if (rte_ring_sp_enqueue(h.req, b->chk)) {
			GW_ERR("health: request ring full"); /* cannot happen: sized for every record */
			gw_route_put(r);
			b->checking = false;
		}
	}
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
	struct gw_daemon *d = arg;
	uint64_t now = gw_now_ns();
	void *msgs[64];
	unsigned n;

	(void)fd;
	(void)what;
	while ((n = rte_ring_sc_dequeue_burst(h.res, msgs, 64, NULL)) > 0)
		for (unsigned i = 0; i < n; i++)
			result(d, msgs[i], now);
	if (atomic_load_explicit(&d->state, memory_order_acquire) == GW_SERVING) {
		for (unsigned i = 0; i < d->n_routes; i++)
			if (d->routes[i]->pool && d->routes[i]->conf.check_interval_ms)
				dispatch(d->routes[i], now);
		gw_backends_eject(d, now);
	}
	if (d->bk_dirty)
		gw_backends_publish(d);
}

int gw_health_start(struct gw_daemon *d)
{
	h.req = rte_ring_create("gwhealthreq", HEALTH_RING, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	h.res = rte_ring_create("gwhealthres", HEALTH_RING, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!h.req || !h.res)
		goto err;
	d->health_timer = event_new(d->base, -1, EV_PERSIST, tick, d);
	if (!d->health_timer || event_add(d->health_timer, &(struct timeval){.tv_usec = HEALTH_TICK_US}))
		goto err;
	return 0;
err:
	gw_health_stop(d);
	return -ENOMEM;
}

void gw_health_stop(struct gw_daemon *d)
{
	void *msg;

	if (d->health_timer)
		event_free(d->health_timer);
	d->health_timer = NULL;
	/* the workers are stopped: records still out died with their engines' connections; the routes
	 * they hold are freed by gw_routes_free whatever their counts */
	if (h.res)
		while (rte_ring_sc_dequeue(h.res, &msg) == 0)
			((struct gw_check *)msg)->b->checking = false;
	rte_ring_free(h.req);
	rte_ring_free(h.res);
	h.req = h.res = NULL;
	LIST_INIT(&h.out);
}
