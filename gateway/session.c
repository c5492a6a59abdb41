/* Sessions: the workers' side.
 *
 * Runs on the workers: a session is owned by one worker end to end (its pool, both of its streams,
 * its retries and timers), so nothing here takes a lock or allocates (design.md, Threads). The
 * exceptions say so: admission (gw_session_check/admit/unadmit) runs on any thread, with atomics,
 * because IB connect requests are admitted on the control thread (ib_glue.c) and TCP connections on
 * the workers; gw_sessions_init/fini run on the control thread before the workers start and after
 * they stopped. Routes themselves (the table, reloads, freeing, metrics) are the control thread's:
 * route_table.c.
 *
 * Admission: the allow list, then the per-route and global limits. Session objects come from a
 * per-worker pool sized by [gateway] max_sessions at start (d->cap_sessions): no allocation on the
 * datapath. The global limit in force is the published one (struct gw_live), which a reload may lower
 * or raise up to that size, never beyond: the pools and everything sized with them stay valid.
 *
 * Far sides: a tcp:/ib: route has a pool of backends (backend.c); the session's far side goes to the
 * one gw_pool_pick chooses. A connect that fails at once, or later (refused, reset, timed out), is
 * tried on another usable backend of the pool not tried yet, while the route's connect_timeout,
 * counted from the session's start, allows: the session starts once, and ends once, with the last
 * failure as its reason when no backend could be reached. */
#include <errno.h>
#include <stdlib.h>

#include "../conf/conf.h"
#include "../translate/session.h"
#include "backend.h"
#include "access_log.h"
#include "gw.h"
#include "log.h"

/* The global session limit in force. On a worker, the snapshot loaded here stays valid until its next
 * round (live.c); on the control thread, until the next reload. */
static uint32_t max_sessions(const struct gw_daemon *d)
{
	return atomic_load_explicit(&d->live, memory_order_acquire)->max_sessions;
}

int gw_session_check(struct gw_daemon *d, struct gw_route *r, const struct xlt_ip *addr)
{
	enum gw_reject why;
	int ret;

	/* (a route a reload replaced since the caller followed it to its newest version still serves,
	 * unless a later reload removed its newest: its pool stays, and its limit is the one its
	 * versions share) */
	/* (the route's limit before the gateway's: a listener that frees a slot to let a request in,
	 * ib_side's admit, must know whether only one of the route's own would do) */
	if (!conf_route_allows(&r->conf, addr))
		why = GW_REJECT_ACL, ret = -EACCES;
	else if (atomic_load_explicit(&gw_route_current(r)->removed, memory_order_acquire) ||
	         atomic_load_explicit(&d->state, memory_order_acquire) != GW_SERVING)
		why = GW_REJECT_GLOBAL, ret = -ESHUTDOWN;
	else if (atomic_load_explicit(&r->share->active, memory_order_relaxed) >= r->conf.max_sessions)
		why = GW_REJECT_LIMIT, ret = -EBUSY;
	else if (atomic_load_explicit(&d->sessions_admitted, memory_order_relaxed) >= max_sessions(d))
		why = GW_REJECT_GLOBAL, ret = -ENOSPC;
	else
		return 0;
	atomic_fetch_add_explicit(&r->rejected[why], 1, memory_order_relaxed);
	return ret;
}

/* Takes a route slot and a global slot, or counts why not. */
int gw_session_admit(struct gw_daemon *d, struct gw_route *r, const struct xlt_ip *addr)
{
	int ret = gw_session_check(d, r, addr);

	if (ret)
		return ret;
	if (atomic_fetch_add_explicit(&r->share->active, 1, memory_order_relaxed) + 1 > r->conf.max_sessions) {
		atomic_fetch_sub_explicit(&r->share->active, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&r->rejected[GW_REJECT_LIMIT], 1, memory_order_relaxed);
		return -EBUSY;
	}
	if (atomic_fetch_add_explicit(&d->sessions_admitted, 1, memory_order_relaxed) + 1 > max_sessions(d)) {
		atomic_fetch_sub_explicit(&d->sessions_admitted, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&r->share->active, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&r->rejected[GW_REJECT_GLOBAL], 1, memory_order_relaxed);
		return -ENOSPC;
	}
	atomic_fetch_add_explicit(&r->active, 1, memory_order_relaxed);
	gw_route_get(r);
	return 0;
}

void gw_session_unadmit(struct gw_daemon *d, struct gw_route *r)
{
	atomic_fetch_sub_explicit(&d->sessions_admitted, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&r->share->active, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&r->active, 1, memory_order_relaxed);
	gw_route_put(r);
}

static uint64_t owner_now(void *arg)
{
	(void)arg;
	return gw_now_ns();
}

/* The session is over, its streams not released yet: its access log record. */
static void owner_ended(void *arg, struct xlt_session *x)
{
	struct gw_worker *w = arg;
	struct gw_session *s = (struct gw_session *)x;

	if (s->be && x->b_open && x->st[1]) {
		/* the passive check: the backend reset the session before sending a byte (what arrived
		 * counts, read or not: a reply and a RST in one burst is a reply), and not in answer to
		 * our end of stream (a client that closed at once: an L4 health probe) nor after its own
		 * (a backend that closed an idle connection answers the client's next bytes with a reset:
		 * any client could otherwise have a healthy backend ejected), or served it */
		struct xlt_stream *b = x->st[1];
		struct xlt_stream_info bi = {0};
		if (b->ops->info)
			b->ops->info(b, &bi);
		bool sent = bi.rcvd || b->bytes_in;
		gw_backend_outcome(w, s->be, !sent && x->reset_by == 1 && !b->local_done && !bi.peer_ended,
		                   sent, &x->st[0]->peer_addr);
	}
	if (w->live->alog_on)
		gw_alog_session(w, s, GW_ALOG_END, gw_now_ns());
}

static void owner_done(void *arg, struct xlt_session *x, enum xlt_end_reason reason)
{
	struct gw_worker *w = arg;
	struct gw_session *s = (struct gw_session *)x;

	if (s->pending) {
		/* A went away while its far side was still to be opened */
		LIST_REMOVE(s, pending_link);
		s->pending = false;
	}

	if (s->be) {
		gw_backend_release(w, s->be, false);
		s->be = NULL;
	}
	if (reason != XLT_END_OK)
		GW_DEBUG("route %s: session %u ended: %s", s->route->conf.name, x->id,
		         xlt_end_reason_names[reason]);
	gw_session_unadmit(w->d, s->route);
	s->route = NULL;
	x->gen++;
	SLIST_INSERT_HEAD(&w->free_sessions, s, free_link);
	xlt_counter_add(&w->st.sessions_active, (uint64_t)-1);
}

/* Far-side connect retries: an engine may lack a ready connection object for a moment (ib_side keeps
 * a few spare ones per worker, refilled by the control thread every 20 ms; a burst of accepts empties
 * them). Turning the accepted client away then would reset a connection that a millisecond later
 * could have been served, so the session starts with its far side missing and retries. */
#define RETRY_NS 1000000ull
#define TICK_NS  100000000ull

static bool transient(int err)
{
	return err == -ENOBUFS || err == -EAGAIN || err == -ENOMEM || err == -EADDRNOTAVAIL;
}

/* Opens S's far side on a backend of its route's pool that S did not try yet. Returns the stream, or
 * NULL with *ERR: transient (try again soon, same backends), or the last connect failure of S
 * (-EHOSTUNREACH when no backend was usable at all). */
static struct xlt_stream *far_connect(struct gw_worker *w, struct gw_session *s, int *err)
{
	struct gw_route *r = s->route;

	for (;;) {
		unsigned i = 0;
		struct gw_backend *b = gw_pool_pick(w, r, s->client, s->tried, &i);
		struct xlt_stream *st;
		uint64_t left_ms;
		unsigned untried;

		*err = 0;
		if (!b) {
			/* a reload's new backend, published to the workers before the route that names it
			 * (daemon.c), can still be missing from a snapshot taken before the publication
			 * by a round that follows the new route: wait for the next round's */
			*err = gw_pool_unpublished(w, r) ? -EAGAIN : s->last_err ? s->last_err : -EHOSTUNREACH;
			return NULL;
		}
		/* what is left of connect_timeout, shared by the backends left to try (this one
		 * included): the route's bound holds over all of them, and a backend that never answers
		 * leaves time for the next; but each try gets a second at least (a SYN and its first
		 * retransmission; an IB address and route resolution), or all that is left */
		left_ms = gw_ms_left(s->deadline_ns, gw_now_ns());
		untried = gw_pool_untried(w, r, s->tried);
		if (untried > 1) {
			uint64_t share = left_ms / untried;
			left_ms = share >= 1000 ? share : left_ms < 1000 ? left_ms : 1000;
		}
		s->last_ep = b->ep;
		st = gw_side_of(b->ep.kind)->connect(w, r, &b->ep.addr, b->ep.port, left_ms, err);
		if (!st && !*err)
			*err = -EIO;
		if (!st && transient(*err)) {
			gw_backend_release(w, b, false); /* our shortage, not the backend's */
			return NULL;
		}
		gw_backend_tried(w, b);
		if (st) {
			s->be = b;
			s->be_idx = i;
			return st;
		}
		gw_backend_release(w, b, true);
		s->tried |= 1ull << i;
		s->last_err = *err;
	}
}

/* The far side's connect failed (xlt owner->retry): another backend, if time and the pool allow.
 * The attempt is made from gw_sessions_poll, outside the engine's event that reported the failure. */
static bool owner_retry(void *arg, struct xlt_session *x, int err)
{
	struct gw_worker *w = arg;
	struct gw_session *s = (struct gw_session *)x;

	if (!s->be)
		return false;
	gw_backend_release(w, s->be, true);
	s->tried |= 1ull << s->be_idx;
	s->last_err = err;
	s->be = NULL;
	/* out of time, or every backend tried (a one-backend route ends here at once, as it always did) */
	if (gw_now_ns() >= s->deadline_ns || s->tried + 1 == 1ull << s->route->pool->n)
		return false;
	s->pending = true;
	s->retry_ns = 0;
	LIST_INSERT_HEAD(&w->pending, s, pending_link);
	return true;
}

/* What a session may not do for long (xlt_session_limits), from its route's config. */
static uint8_t stall_reason(enum conf_endpoint_kind k)
{
	return k == CONF_EP_IB ? XLT_END_CREDIT_STALL_TIMEOUT : XLT_END_ZERO_WINDOW_TIMEOUT;
}

static struct xlt_session_limits route_limits(const struct conf_route *c)
{
	return (struct xlt_session_limits){
	    .idle_ns = c->idle_timeout_ms * 1000000ull,
	    .stall_ns = c->stall_timeout_ms * 1000000ull,
	    .half_closed_ns = c->half_closed_timeout_ms * 1000000ull,
	    .stall_reason = {stall_reason(c->listen.kind), stall_reason(c->connect.kind)},
	};
}

int gw_session_accept(struct gw_worker *w, struct gw_route *r, struct xlt_stream *a)
{
	int ret;

	r = gw_route_current(r); /* the listener may not have heard of a reload yet */
	ret = gw_session_admit(w->d, r, &a->peer_addr);
	return ret ? ret : gw_session_start(w, r, a);
}

int gw_session_start(struct gw_worker *w, struct gw_route *r, struct xlt_stream *a)
{
	struct xlt_session_limits lim = route_limits(&r->conf);
	const struct conf_endpoint *to = &r->conf.connect;
	struct xlt_stream *b = NULL;
	enum xlt_session_kind kind;
	struct gw_session *s;
	int ret, err = 0;

	s = SLIST_FIRST(&w->free_sessions);
	if (!s) {
		ret = -ENOMEM; /* cannot happen: the global limit never exceeds the pool; kept as a guard */
		goto err;
	}
	s->route = r;
	s->be = NULL;
	s->tried = 0;
	s->last_err = 0;
	s->last_ep.port = 0;
	s->client = r->conf.balance == CONF_BALANCE_SOURCE ? gw_client_key(w->d, r, a) : 0;
	s->deadline_ns = gw_now_ns() + r->conf.connect_timeout_ms * 1000000ull;
	switch (to->kind) {
	case CONF_EP_ECHO:
		kind = XLT_SESSION_ECHO;
		break;
	case CONF_EP_DISCARD:
		kind = XLT_SESSION_DISCARD;
		break;
	case CONF_EP_TCP:
	case CONF_EP_IB:
		kind = XLT_SESSION_RELAY;
		b = far_connect(w, s, &err);
		if (!b && !transient(err)) {
			enum xlt_end_reason why = xlt_end_reason_of(err ? err : -EIO, true);
			xlt_counter_add(&r->st[w->id].s.ends[why], 1);
			ret = err ? err : -EIO;
			goto err;
		}
		break;
	default:
		ret = -EINVAL;
		goto err;
	}
	SLIST_REMOVE_HEAD(&w->free_sessions, free_link);
	s->w = w;
	s->uid = (uint64_t)w->id << 56 | (++w->uid_next & ((1ull << 56) - 1));
	s->next_progress_ns = gw_now_ns() + w->live->alog_interval_ns;
	xlt_counter_add(&w->st.sessions_active, 1);
	xlt_session_start(&s->x, kind, a, b, &r->st[w->id].s, &w->owner, &lim);
	if (to->kind == CONF_EP_TCP && r->conf.proxy_protocol == CONF_PROXY_V2 && gw_proxy_send(s, a))
		xlt_session_abort(&s->x, XLT_END_ABORTED); /* cannot happen: the header always fits */
	if (kind == XLT_SESSION_RELAY && !b) {
		uint64_t now = gw_now_ns();
		s->pending = true;
		s->retry_ns = now + RETRY_NS;
		LIST_INSERT_HEAD(&w->pending, s, pending_link);
	}
	return 0;
err:
	gw_session_unadmit(w->d, r);
	return ret;
}

unsigned gw_sessions_poll(struct gw_worker *w, uint64_t now)
{
	struct gw_session *next;
	unsigned work = gw_proxy_poll(w, now);

	for (struct gw_session *s = LIST_FIRST(&w->pending); s; s = next) {
		struct xlt_stream *b = NULL;
		int err = -ETIMEDOUT;

		/* (ending S below ends no other session: its successor stays listed) */
		next = LIST_NEXT(s, pending_link);
		if (now < s->retry_ns)
			continue;
		if (now < s->deadline_ns && !(b = far_connect(w, s, &err)) && transient(err)) {
			s->retry_ns = now + RETRY_NS;
			continue;
		}
		/* leave the list before the session can end (owner_done unlinks pending ones) */
		LIST_REMOVE(s, pending_link);
		s->pending = false;
		work++;
		if (b)
			xlt_session_attach(&s->x, b);
		else
			xlt_session_abort(&s->x, err == -ETIMEDOUT ? XLT_END_CONNECT_TIMEOUT
			                                           : xlt_end_reason_of(err, true));
	}
	if (w->id == 0)
		work += gw_health_poll(w, now);
	if (now >= w->tick_ns && w->st.sessions_active) {
		uint64_t iv = w->live->alog_on ? w->live->alog_interval_ns : 0;
		w->tick_ns = now + TICK_NS;
		for (unsigned i = 0; i < w->n_sessions; i++) {
			struct gw_session *s = &w->sessions[i];
			if (s->x.live)
				xlt_session_tick(&s->x, now);
			/* progress records never take the last half of the ring, which stays for
			 * end records: a burst of them (sessions started together) waits for the
			 * next tick instead of being dropped */
			if (iv && s->x.live && now >= s->next_progress_ns &&
			    gw_alog_room(w->alog) > GW_ALOG_RING_SIZE / 2) {
				gw_alog_session(w, s, GW_ALOG_PROGRESS, now);
				s->next_progress_ns = now + iv;
			}
		}
	}
	return work;
}

void gw_session_abort_all(struct gw_worker *w)
{
	for (unsigned i = 0; i < w->n_sessions; i++)
		if (w->sessions[i].x.live)
			xlt_session_abort(&w->sessions[i].x, XLT_END_ABORTED);
}

int gw_sessions_init(struct gw_daemon *d)
{
	unsigned cap = d->cap_sessions;

	for (unsigned i = 0; i < d->n_workers; i++) {
		struct gw_worker *w = &d->workers[i];
		w->sessions = calloc(cap, sizeof(*w->sessions));
		if (!w->sessions)
			return -ENOMEM;
		w->n_sessions = cap;
		for (unsigned k = cap; k-- > 0;) {
			w->sessions[k].x.id = k;
			SLIST_INSERT_HEAD(&w->free_sessions, &w->sessions[k], free_link);
		}
		w->owner = (struct xlt_session_owner){.arg = w,
		                                      .now_ns = owner_now,
		                                      .done = owner_done,
		                                      .retry = owner_retry,
		                                      .ended = owner_ended};
	}
	if (gw_proxy_init(d))
		return -ENOMEM;
	return gw_routes_apply(d, d->conf);
}

void gw_sessions_fini(struct gw_daemon *d)
{
	gw_routes_free(d);
	gw_proxy_fini(d);
	for (unsigned i = 0; i < d->n_workers; i++) {
		free(d->workers[i].sessions);
		d->workers[i].sessions = NULL;
		SLIST_INIT(&d->workers[i].free_sessions);
		d->workers[i].n_sessions = 0;
	}
}
