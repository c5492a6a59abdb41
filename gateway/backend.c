/* Backend pools: the backend objects, their publication to the workers and the workers' choice.
 *
 * Design (see backend.h for who owns what):
 *  - A backend is named by (route name, endpoint). gw_pool_create, called for every new route object
 *    (start and reloads), looks the endpoint up among the existing backends of that route name first,
 *    so a reload that changes a pool keeps the backends it keeps: their health, admin state, counters
 *    and sessions (which stay on their route object and backend until they end). A backend removed
 *    from the pool stays while old route objects or sessions hold it, and takes no new session.
 *  - The control thread alone decides whether a backend is usable (health up, admin ready); each
 *    change republishes the struct gw_live snapshot (live.c) with one usable bit per backend slot.
 *    Workers pick from the snapshot of their current round: no lock, no allocation, no syscall.
 *  - Choice: roundrobin walks a smooth weighted round robin schedule computed once per pool (each
 *    worker has its own cursor; a skipped backend's turn goes to the next usable one); leastconn takes
 *    the fewest active sessions per unit of weight (ties rotate); source is weighted rendezvous
 *    hashing of the client address with a key drawn at start: each backend gets a score from
 *    hash(client, backend) and the highest usable wins, so the choice is stable while the usable set
 *    is unchanged and, when a backend leaves or joins, only the clients it wins or loses move.
 *  - A backend's max= is enforced with its atomic active count: the pick reserves (add, and undo when
 *    it went over), so concurrent workers never exceed it. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/random.h>

#include "../conf/conf.h"
#include "../eth_side/siphash.h"
#include "../translate/ratelim.h"
#include "backend.h"
#include "log.h"
#include "metrics.h"

const char *const gw_backend_state_names[4] = {"up", "down", "drain", "maint"};

static struct gw_backend *backend_find(struct gw_daemon *d, const char *route, const struct conf_endpoint *ep)
{
	struct gw_backend *b;

	LIST_FOREACH(b, &d->backends, link)
		if (!strcmp(b->route, route) && b->ep.kind == ep->kind && xlt_ip_eq(&b->ep.addr, &ep->addr) &&
		    b->ep.port == ep->port)
			return b;
	return NULL;
}

static struct gw_backend *backend_new(struct gw_daemon *d, const char *route, const struct conf_backend *cb)
{
	struct eth_siphash_key key = {d->bk_key[0], d->bk_key[1]};
	char a[XLT_IP_STRLEN];
	struct gw_backend *b;
	unsigned slot;
	bool v4 = xlt_ip_is_v4(&cb->ep.addr);
	uint8_t hin[20];

	for (slot = 0; slot < GW_MAX_BACKENDS && d->bk_slot_used[slot]; slot++)
		;
	if (slot == GW_MAX_BACKENDS) {
		errno = ENOSPC;
		return NULL;
	}
	b = aligned_alloc(alignof(struct gw_backend), sizeof(*b)); /* (struct gw_backend_wstats) */
	if (!b)
		return NULL;
	memset(b, 0, sizeof(*b));
	snprintf(b->route, sizeof(b->route), "%s", route);
	/* an IB backend's name says so: a reload can turn a route's pool from tcp: to ib: (or back) on the
	 * same address and port while sessions hold the old backend, and both are then in /metrics */
	snprintf(b->name, sizeof(b->name), "%s%s%s%s:%u", cb->ep.kind == CONF_EP_IB ? "ib:" : "", v4 ? "" : "[",
	         xlt_ip_fmt(&cb->ep.addr, a), v4 ? "" : "]", cb->ep.port);
	b->ep = cb->ep;
	b->serial = ++d->bk_serial_next;
	b->slot = slot;
	/* the endpoint as bytes: the address's 16 (either family), port and kind */
	memcpy(hin, cb->ep.addr.b, 16);
	hin[16] = (uint8_t)(cb->ep.port >> 8), hin[17] = (uint8_t)cb->ep.port;
	hin[18] = (uint8_t)cb->ep.kind, hin[19] = 0;
	b->hkey = eth_siphash(&key, hin, sizeof(hin));
	b->admin = b->conf_admin = cb->state;
	/* up until checks say otherwise: a gateway that starts (or a pool that grows) serves at once, as
	 * HAProxy does; a dead backend costs a failed connect that is retried elsewhere meanwhile */
	b->up = true;
	d->bk_slot_used[slot] = 1;
	LIST_INSERT_HEAD(&d->backends, b, link);
	d->bk_dirty = true;
	return b;
}

struct gw_pool *gw_pool_create(struct gw_daemon *d, const struct conf_route *c)
{
	struct gw_pool *p;
	int cw[CONF_MAX_BACKENDS] = {0};

	if (!c->n_backends)
		return NULL;
	p = aligned_alloc(alignof(struct gw_pool), sizeof(*p)); /* (its per-worker counters' lines) */
	if (!p)
		return NULL;
	memset(p, 0, sizeof(*p));
	if (!d->bk_key[0] && !d->bk_key[1] &&
	    getrandom(d->bk_key, sizeof(d->bk_key), 0) != sizeof(d->bk_key)) {
		free(p);
		errno = EIO;
		return NULL;
	}
	for (unsigned i = 0; i < c->n_backends; i++) {
		const struct conf_backend *cb = &c->backends[i];
		struct gw_backend *b = backend_find(d, c->name, &cb->ep);

		if (!b && !(b = backend_new(d, c->name, cb))) {
			gw_pool_destroy(p); /* new backends with no reference go at the next sweep */
			return NULL;
		}
		/* (a state= the file changed applies once the routes commit: gw_backends_routes) */
		b->refs++;
		p->b[p->n] = b;
		p->weight[p->n] = cb->weight;
		p->max[p->n] = cb->max_sessions;
		p->n++;
		p->sched_len += cb->weight;
	}
	/* smooth weighted round robin (nginx's): weights 2,1,1 give 0,1,2,0 rather than 0,0,1,2 */
	for (unsigned k = 0; k < p->sched_len; k++) {
		unsigned best = 0;
		for (unsigned i = 0; i < p->n; i++) {
			cw[i] += (int)p->weight[i];
			if (cw[i] > cw[best])
				best = i;
		}
		cw[best] -= (int)p->sched_len;
		p->sched[k] = (uint8_t)best;
	}
	return p;
}

uint64_t gw_client_key(struct gw_daemon *d, const struct gw_route *r, const struct xlt_stream *a)
{
	struct eth_siphash_key key = {d->bk_key[0], d->bk_key[1]};
	uint8_t gid[16];
	uint32_t qpn;

	/* an IB peer is its port GID (it may have no IP address at all), a TCP client the 16 bytes of its
	 * address (either family), each hashed to 64 bits with the key; the top bit keeps the two apart */
	if (r->conf.listen.kind == CONF_EP_IB && !gw_ib_peer_id(a, gid, &qpn))
		return eth_siphash(&key, gid, sizeof(gid)) | 1ull << 63;
	return eth_siphash(&key, a->peer_addr.b, sizeof(a->peer_addr.b)) & ~(1ull << 63);
}

void gw_pool_destroy(struct gw_pool *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->n; i++)
		p->b[i]->refs--;
	free(p);
}

/* ---- the worker's pick ---- */

static bool usable(const struct gw_live *l, const struct gw_backend *b)
{
	return l->bk_serial[b->slot] == b->serial && l->bk_usable[b->slot];
}

/* Takes a place in backend I of P (within its max=). */
static bool reserve(struct gw_pool *p, unsigned i)
{
	struct gw_backend *b = p->b[i];
	uint32_t n = atomic_fetch_add_explicit(&b->active, 1, memory_order_relaxed) + 1;

	if (p->max[i] && n > p->max[i]) {
		atomic_fetch_sub_explicit(&b->active, 1, memory_order_relaxed);
		return false;
	}
	return true;
}

static bool candidate(const struct gw_live *l, const struct gw_pool *p, unsigned i, uint64_t tried)
{
	return !(tried & (1ull << i)) && usable(l, p->b[i]) &&
	       (!p->max[i] || atomic_load_explicit(&p->b[i]->active, memory_order_relaxed) < p->max[i]);
}

static int pick_rr(const struct gw_live *l, struct gw_pool *p, unsigned w, uint64_t tried)
{
	uint32_t pos = p->rr[w].pos;

	for (unsigned k = 0; k < p->sched_len; k++) {
		unsigned i = p->sched[(pos + k) % p->sched_len];
		if (candidate(l, p, i, tried) && reserve(p, i)) {
			p->rr[w].pos = (pos + k + 1) % p->sched_len;
			return (int)i;
		}
	}
	return -1;
}

static int pick_leastconn(const struct gw_live *l, struct gw_pool *p, unsigned w, uint64_t tried)
{
	uint64_t tried_now = tried;

	/* a reservation that loses a race for a backend's last place tries the next best */
	for (unsigned attempt = 0; attempt < p->n; attempt++) {
		int best = -1;
		uint64_t best_a = 0;
		uint32_t start = p->rr[w].pos;

		for (unsigned k = 0; k < p->n; k++) {
			unsigned i = (start + k) % p->n;
			uint64_t a;
			if (!candidate(l, p, i, tried_now))
				continue;
			a = atomic_load_explicit(&p->b[i]->active, memory_order_relaxed);
			/* a / weight[i] < best_a / weight[best], without division */
			if (best < 0 || a * p->weight[best] < best_a * p->weight[i]) {
				best = (int)i;
				best_a = a;
			}
		}
		if (best < 0)
			return -1;
		if (reserve(p, (unsigned)best)) {
			p->rr[w].pos = (start + 1) % p->n; /* ties rotate */
			return best;
		}
		tried_now |= 1ull << best;
	}
	return -1;
}

/* Weighted rendezvous hashing: score = weight / -ln(u), u uniform in (0,1) from the keyed hash of
 * (client, backend). The highest usable score wins; the scores do not depend on which others are
 * usable, hence the stability. */
static int pick_source(struct gw_daemon *d, const struct gw_live *l, struct gw_pool *p, uint64_t client,
                       uint64_t tried)
{
	struct eth_siphash_key key = {d->bk_key[0], d->bk_key[1]};
	uint64_t tried_now = tried;

	for (unsigned attempt = 0; attempt < p->n; attempt++) {
		int best = -1;
		double best_s = 0;

		for (unsigned i = 0; i < p->n; i++) {
			uint64_t h;
			double u, sc;
			if (!candidate(l, p, i, tried_now))
				continue;
			uint64_t in[2] = {client, p->b[i]->hkey};
			h = eth_siphash(&key, in, sizeof(in));
			u = ((double)(h >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
			sc = (double)p->weight[i] / -log(u);
			if (best < 0 || sc > best_s) {
				best = (int)i;
				best_s = sc;
			}
		}
		if (best < 0)
			return -1;
		if (reserve(p, (unsigned)best))
			return best;
		tried_now |= 1ull << best;
	}
	return -1;
}

static int pick_by(struct gw_worker *w, struct gw_route *r, uint64_t client, uint64_t tried)
{
	switch (r->conf.balance) {
	case CONF_BALANCE_LEASTCONN:
		return pick_leastconn(w->live, r->pool, w->id, tried);
	case CONF_BALANCE_SOURCE:
		return pick_source(w->d, w->live, r->pool, client, tried);
	default:
		return pick_rr(w->live, r->pool, w->id, tried);
	}
}

/* Any thread: B's run of early resets starts again. */
static void run_clear(struct gw_backend *b)
{
	atomic_store_explicit(&b->reset_run, 0, memory_order_relaxed);
	for (unsigned i = 0; i < GW_RUN_SOURCES; i++)
		atomic_store_explicit(&b->run_src[i], 0, memory_order_relaxed);
}

/* Who a client is for the run: its IPv4 address, or its IPv6 /48: one site is delegated a /48 or a
 * /56 (a /64 per subnet), so a client counted by /64 could be 256 or 65536 "clients" and eject a
 * healthy backend by itself, resetting its own sessions; never 0. */
static uint64_t run_source(const struct xlt_ip *a)
{
	uint64_t v = 0;

	if (xlt_ip_is_v4(a))
		v = xlt_ip_to_v4(a);
	else
		memcpy(&v, a->b, 6);
	return v | 1ull << 63;
}

/* Whether B's run ejects it under EJECT_AFTER: that many resets in a row, from enough clients. */
static bool run_ejects(struct gw_backend *b, uint32_t eject_after)
{
	unsigned srcs = 0, need = eject_after < GW_RUN_SOURCES ? eject_after : GW_RUN_SOURCES;

	if (!eject_after || atomic_load_explicit(&b->reset_run, memory_order_relaxed) < eject_after)
		return false;
	for (unsigned i = 0; i < GW_RUN_SOURCES; i++)
		srcs += atomic_load_explicit(&b->run_src[i], memory_order_relaxed) != 0;
	return srcs >= need;
}

struct gw_backend *gw_pool_pick(struct gw_worker *w, struct gw_route *r, uint64_t client, uint64_t tried,
                                unsigned *idx)
{
	struct gw_pool *p = r->pool;
	uint64_t suspect = 0;
	int i;

	if (!p)
		return NULL;
	/* a backend that reset eject_after sessions in a row before its first byte is passed over at
	 * once, before the control thread's next tick ejects it (gw_backends_eject), unless nothing
	 * else is left */
	for (unsigned k = 0; r->conf.eject_after && k < p->n; k++)
		if (run_ejects(p->b[k], r->conf.eject_after))
			suspect |= 1ull << k;
	i = pick_by(w, r, client, tried | suspect);
	if (i < 0 && suspect)
		i = pick_by(w, r, client, tried);
	if (i < 0)
		return NULL;
	*idx = (unsigned)i;
	return p->b[i];
}

bool gw_pool_unpublished(const struct gw_worker *w, const struct gw_route *r)
{
	const struct gw_pool *p = r->pool;

	for (unsigned i = 0; p && i < p->n; i++)
		if (w->live->bk_serial[p->b[i]->slot] != p->b[i]->serial)
			return true;
	return false;
}

unsigned gw_pool_untried(const struct gw_worker *w, const struct gw_route *r, uint64_t tried)
{
	unsigned n = 0;

	for (unsigned i = 0; r->pool && i < r->pool->n; i++)
		n += candidate(w->live, r->pool, i, tried);
	return n;
}

void gw_backend_release(struct gw_worker *w, struct gw_backend *b, bool failed)
{
	atomic_fetch_sub_explicit(&b->active, 1, memory_order_relaxed);
	if (failed)
		xlt_counter_add(&b->st[w->id].connect_failures, 1);
}

void gw_backend_outcome(struct gw_worker *w, struct gw_backend *b, bool early_reset, bool served,
                        const struct xlt_ip *client)
{
	if (early_reset) {
		uint64_t src = run_source(client);

		xlt_counter_add(&b->st[w->id].early_resets, 1);
		atomic_fetch_add_explicit(&b->reset_run, 1, memory_order_relaxed);
		/* (workers race for the free entries: a source lost or named twice only delays an
		 * ejection) */
		for (unsigned i = 0; i < GW_RUN_SOURCES; i++) {
			uint64_t cur = atomic_load_explicit(&b->run_src[i], memory_order_relaxed);
			if (cur == src)
				break;
			if (!cur && atomic_compare_exchange_strong_explicit(&b->run_src[i], &cur, src,
			                                                    memory_order_relaxed,
			                                                    memory_order_relaxed))
				break;
			if (cur == src)
				break;
		}
	} else if (served) {
		/* (read first: a backend that serves leaves the line shared, unwritten) */
		if (atomic_load_explicit(&b->reset_run, memory_order_relaxed))
			run_clear(b);
		if (!atomic_load_explicit(&b->served, memory_order_relaxed))
			atomic_store_explicit(&b->served, true, memory_order_relaxed);
	}
}

/* Control: may B take new sessions (health, admin state, passive check)? One a reload took out of
 * its pool is not asked about here: a session started on the route's older version keeps that
 * version's pool for its tries (a route version still serves until its sessions end, session.c),
 * and a session started after the reload picks from the new pool, which does not list it. */
static bool may_take(const struct gw_backend *b)
{
	return b->up && b->admin == CONF_BACKEND_READY && !b->ejected;
}

/* Control: B takes sessions again (its ejection over or lifted: WHY). */
static void eject_end(struct gw_daemon *d, struct gw_backend *b, const char *route, const char *why)
{
	b->ejected = false;
	run_clear(b);
	d->bk_dirty = true;
	GW_NOTICE("route %s: backend %s takes sessions again: %s", route, b->name, why);
}

/* A backend that accepts connections and resets them at once passes connect checks, and with
 * leastconn it would take nearly every new session (its sessions end at once). Its sessions are
 * not retried elsewhere (the client's first bytes may have gone to it), but the next ones are kept
 * away from it for a while (as Envoy's outlier detection and HAProxy's observe layer4 do). */
void gw_backends_eject(struct gw_daemon *d, uint64_t now)
{
	for (unsigned i = 0; i < d->n_routes; i++) {
		const struct gw_route *r = d->routes[i];
		const struct gw_pool *p = r->pool;
		unsigned n_usable = 0;

		if (!p)
			continue;
		for (unsigned k = 0; k < p->n; k++)
			n_usable += may_take(p->b[k]);
		for (unsigned k = 0; k < p->n; k++) {
			struct gw_backend *b = p->b[k];
			unsigned shift;

			if (atomic_exchange_explicit(&b->served, false, memory_order_relaxed))
				b->ejections = 0;
			if (b->ejected) {
				/* over; or passive checks turned off by a reload; or the pool has nothing
				 * else left (health checks or an operator took the rest): some sessions
				 * served beat none */
				if (now < b->eject_until_ns && r->conf.eject_after && n_usable)
					continue;
				eject_end(d, b, r->conf.name,
				          now >= b->eject_until_ns ? "its ejection is over"
				          : !r->conf.eject_after   ? "eject_after is 0 now"
				                                   : "early: the pool has no other usable backend");
				n_usable += may_take(b); /* (not if checks took it down meanwhile) */
				continue;
			}
			if (!may_take(b)) {
				/* down, drained or in maintenance: what it did before does not count once it
				 * is back (a rolling restart resets the connections it had queued) */
				run_clear(b);
				continue;
			}
			if (!run_ejects(b, r->conf.eject_after))
				continue;
			if (n_usable <= 1) {
				/* the last one: ejecting it would refuse every session, not some; its count
				 * starts again (the pick passes it over only while another is usable) */
				run_clear(b);
				continue;
			}
			shift = b->ejections < 4 ? b->ejections : 4;
			b->ejected = true;
			b->eject_until_ns = now + (r->conf.eject_time_ms << shift) * 1000000ull;
			b->ejections++;
			n_usable--;
			d->bk_dirty = true;
			GW_WARN("route %s: backend %s ejected for %" PRIu64 " ms: it reset %u session(s) in a row "
			        "before sending a byte",
			        r->conf.name, b->name, r->conf.eject_time_ms << shift,
			        (unsigned)atomic_load_explicit(&b->reset_run, memory_order_relaxed));
		}
	}
}

/* ---- control: publication, admin state, lifetime ---- */

void gw_backends_fill(const struct gw_daemon *d, struct gw_live *l)
{
	const struct gw_backend *b;

	LIST_FOREACH(b, &d->backends, link) {
		l->bk_serial[b->slot] = b->serial;
		l->bk_usable[b->slot] = may_take(b);
	}
}

void gw_backends_publish(struct gw_daemon *d)
{
	struct gw_live *l;

	if (!d->conf || !d->live)
		return;
	l = gw_live_make(d, d->conf);
	if (!l) {
		d->bk_dirty = true; /* the health tick tries again */
		return;
	}
	gw_live_publish(d, l);
	d->bk_dirty = false;
	gw_stats_stale(); /* the next /metrics shows the new states */
}

void gw_backends_routes(struct gw_daemon *d, struct gw_route *const *routes, unsigned n)
{
	uint64_t now = gw_now_ns();
	struct gw_backend *b;

	LIST_FOREACH(b, &d->backends, link)
		b->pooled = false;
	for (unsigned i = 0; i < n; i++) {
		struct gw_route *r = routes[i];
		if (!r->pool)
			continue;
		for (unsigned k = 0; k < r->pool->n; k++) {
			struct gw_backend *pb = r->pool->b[k];
			enum conf_backend_state cs = r->conf.backends[k].state;
			uint32_t iv = r->conf.check_interval_ms;

			if (iv && iv != pb->check_interval_ms) {
				/* checks on, or at another interval: the next one within the new interval
				 * (a backend down under check_interval = 1h would wait out the hour), and
				 * its runs start over (a run counted under other checks or none is no run of
				 * these) */
				if (pb->next_check_ns > now + iv * 1000000ull)
					pb->next_check_ns = now + iv * 1000000ull;
				pb->rise_run = pb->fall_run = 0;
			}
			pb->check_interval_ms = iv;
			pb->pooled = true;
			if (pb->conf_admin != cs) {
				/* the file changed this backend's state: it wins over an earlier POST. Here
				 * and not when the pool is made, so that a reload that fails later changes
				 * nothing */
				pb->admin = pb->conf_admin = cs;
				d->bk_dirty = true;
			}
		}
	}
	LIST_FOREACH(b, &d->backends, link) {
		if (!b->pooled)
			b->check_interval_ms = 0; /* (back in a pool with checks: they start over) */
		if (!b->check_interval_ms && !b->up) {
			b->up = true; /* nothing checks it any more: its sessions' connects judge it */
			b->rise_run = b->fall_run = 0;
			d->bk_dirty = true;
		}
	}
	/* published by the caller once the reload committed (or by the next health tick) */
	LIST_FOREACH(b, &d->backends, link)
		if (b->ejected && !b->pooled)
			eject_end(d, b, b->route, "the reload took it out of its pool");
}

/* Backend state changes logged (control thread only): every one, an operator's audit trail, up to
 * ADMIN_LOG_PER_S a second (a script draining a pool's 16 backends at once); past that a client
 * flipping states in a loop would flood the log and use up journald's own limit, so the next line
 * says how many were not logged. */
#define ADMIN_LOG_PER_S 20
#define ADMIN_PUB_PER_S 10 /* admin changes a second published at once (the rest: the health tick) */
static struct xlt_window admin_log;
static uint64_t admin_log_quiet;

int gw_backend_set_state(struct gw_daemon *d, const char *route, const char *name, enum conf_backend_state s,
                         const char *who)
{
	for (unsigned i = 0; i < d->n_routes; i++) {
		struct gw_route *r = d->routes[i];
		if (!r->pool || strcmp(r->conf.name, route))
			continue;
		for (unsigned k = 0; k < r->pool->n; k++) {
			struct gw_backend *b = r->pool->b[k];
			/* (an IB backend also by its name before ib: came in front: a pool has one kind) */
			if (strcmp(b->name, name) &&
			    (b->ep.kind != CONF_EP_IB || strncmp(b->name, "ib:", 3) || strcmp(b->name + 3, name)))
				continue;
			static const char *const admin_names[3] = {"ready", "drain", "maint"};
			if (s == CONF_BACKEND_READY && b->ejected)
				eject_end(d, b, route, "set ready by POST /backends");
			else if (b->admin == s)
				return 0; /* (nothing to publish: each snapshot is a whole table) */
			if (xlt_window_ok(&admin_log, gw_now_ns() / 1000000, 1000, ADMIN_LOG_PER_S)) {
				char more[64] = "";
				if (admin_log_quiet)
					snprintf(more, sizeof(more), " (%" PRIu64 " earlier changes not logged)",
					         admin_log_quiet);
				GW_NOTICE("route %s: backend %s set to %s (was %s) by %s%s", route, name,
				          admin_names[s], admin_names[b->admin], who, more);
				admin_log_quiet = 0;
			} else {
				admin_log_quiet++;
			}
			b->admin = s;
			if (s == CONF_BACKEND_READY)
				b->next_check_ns = 0; /* back from maint: check at once */
			/* at once, so that the sessions after the reply see it (an operator's drain, a
			 * script's ready then traffic); but each snapshot is a whole table, freed a second
			 * later: past ADMIN_PUB_PER_S changes a second, a client flipping states in a loop
			 * gets the health tick's pace (every 100 ms) */
			if (!xlt_window_ok(&d->bk_admin_pub, gw_now_ns() / 1000000, 1000, ADMIN_PUB_PER_S)) {
				d->bk_dirty = true;
				return 0;
			}
			gw_backends_publish(d);
			return 0;
		}
	}
	return -ENOENT;
}

static void backend_free(struct gw_daemon *d, struct gw_backend *b)
{
	d->bk_slot_used[b->slot] = 0;
	free(b->chk);
	free(b);
}

void gw_backends_sweep(struct gw_daemon *d)
{
	struct gw_backend *next;

	for (struct gw_backend *b = LIST_FIRST(&d->backends); b; b = next) {
		next = LIST_NEXT(b, link);
		if (!b->refs && !b->checking && !atomic_load_explicit(&b->active, memory_order_acquire)) {
			LIST_REMOVE(b, link);
			GW_INFO("route %s: backend %s removed", b->route, b->name);
			backend_free(d, b);
		}
	}
}

void gw_backends_free(struct gw_daemon *d)
{
	while (!LIST_EMPTY(&d->backends)) {
		struct gw_backend *b = LIST_FIRST(&d->backends);
		LIST_REMOVE(b, link);
		backend_free(d, b);
	}
}

/* ---- metrics ---- */

static unsigned state_of(const struct gw_backend *b)
{
	if (b->admin == CONF_BACKEND_MAINT)
		return 3;
	if (!b->up || b->ejected)
		return 1;
	return b->admin == CONF_BACKEND_DRAIN ? 2 : 0;
}

/* One counter family of struct gw_backend_wstats (the field at OFF), summed over the workers. */
static void wstats_family(struct gw_daemon *d, struct gw_metrics *m, const char *name, const char *help,
                          size_t off)
{
	const struct gw_backend *b;

	gw_metrics_family(m, name, XLT_COUNTER, help);
	LIST_FOREACH(b, &d->backends, link) {
		uint64_t n = 0;
		for (unsigned w = 0; w < d->n_workers; w++)
			n += xlt_counter_read((const uint64_t *)((const char *)&b->st[w] + off));
		gw_metrics_sample(m, (double)n, "route", b->route, "backend", b->name, NULL);
	}
}

void gw_backend_metrics(struct gw_daemon *d, struct gw_metrics *m)
{
	const struct gw_backend *b;

	if (LIST_EMPTY(&d->backends))
		return;
	gw_metrics_family(
	    m, "backend_up", XLT_GAUGE,
	    "1 while the backend's health checks pass (always 1 when its route runs none; 0 in maint)");
	LIST_FOREACH(b, &d->backends, link)
		gw_metrics_sample(m, b->up && b->admin != CONF_BACKEND_MAINT, "route", b->route, "backend",
		                  b->name, NULL);
	gw_metrics_family(
	    m, "backend_state", XLT_GAUGE,
	    "1 for the backend's state: up (takes sessions), down (checks failed), drain (takes no new "
	    "session, its sessions finish), maint (drain, and no checks)");
	LIST_FOREACH(b, &d->backends, link)
		for (unsigned k = 0; k < 4; k++)
			gw_metrics_sample(m, state_of(b) == k, "route", b->route, "backend", b->name, "state",
			                  gw_backend_state_names[k], NULL);
	gw_metrics_family(m, "backend_sessions_active", XLT_GAUGE, "sessions on the backend now");
	LIST_FOREACH(b, &d->backends, link)
		gw_metrics_sample(m, atomic_load_explicit(&b->active, memory_order_relaxed), "route",
		                  b->route, "backend", b->name, NULL);
	wstats_family(d, m, "backend_sessions_total", "sessions sent to the backend (failed connects included)",
	              offsetof(struct gw_backend_wstats, sessions_total));
	wstats_family(d, m, "backend_connect_failures_total",
	              "sessions' far-side connects to the backend that failed (retried on another backend "
	              "while the route's connect_timeout allowed)",
	              offsetof(struct gw_backend_wstats, connect_failures));
	wstats_family(d, m, "backend_early_resets_total",
	              "sessions the backend reset before sending a byte (eject_after of them in a row eject it)",
	              offsetof(struct gw_backend_wstats, early_resets));
	gw_metrics_family(m, "backend_ejected", XLT_GAUGE,
	                  "1 while the backend takes no new session after resetting eject_after sessions in a row "
	                  "(backend_state says down meanwhile)");
	LIST_FOREACH(b, &d->backends, link)
		gw_metrics_sample(m, b->ejected, "route", b->route, "backend", b->name, NULL);
	gw_metrics_family(m, "backend_checks_total", XLT_COUNTER, "health checks of the backend, by result");
	LIST_FOREACH(b, &d->backends, link) {
		gw_metrics_sample(m, (double)b->checks_passed, "route", b->route, "backend", b->name,
		                  "result", "passed", NULL);
		gw_metrics_sample(m, (double)b->checks_failed, "route", b->route, "backend", b->name,
		                  "result", "failed", NULL);
	}
	gw_metrics_family(m, "backend_check_seconds", XLT_GAUGE,
	                  "duration of the backend's last passed check");
	LIST_FOREACH(b, &d->backends, link)
		gw_metrics_sample(m, (double)b->check_ns_last / 1e9, "route", b->route, "backend", b->name,
		                  NULL);
	gw_metrics_family(
	    m, "backend_check_seconds_total", XLT_COUNTER,
	    "total duration of the backend's passed checks (divide by checks_total{result=\"passed\"})");
	LIST_FOREACH(b, &d->backends, link)
		gw_metrics_sample(m, (double)b->check_ns_sum / 1e9, "route", b->route, "backend", b->name,
		                  NULL);
}
