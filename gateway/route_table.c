/* The route table: the control thread's side of routes.
 *
 * Runs on the control thread only (gw_route_get/put/current excepted: any thread). Reloads, the 1 s
 * sweep and /metrics all happen there, and freeing a route there is what lets the workers use one
 * without locks: a worker only ever holds a reference (gw_route_get/put, atomic) and reads fields that
 * are immutable or atomic, and the object is freed only once the last reference is gone, never under
 * a worker, never by one.
 *
 * Each reload builds a new list of struct gw_route. A route whose config is unchanged is kept as the
 * same object (its counters and sessions carry on); a changed or dropped one is marked removed and
 * parked until nothing references it, so sessions that started under the old config finish under it.
 * When a parked route is freed, its counters are folded into the object that carries its name on, so
 * that a route's series in /metrics never go backwards. The sessions themselves are the workers'
 * (session.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../conf/conf.h"
#include "../translate/session.h"
#include "backend.h"
#include "gw.h"
#include "log.h"
#include "metrics.h"

void gw_route_get(struct gw_route *r)
{
	atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
}

void gw_route_put(struct gw_route *r)
{
	atomic_fetch_sub_explicit(&r->refs, 1, memory_order_release);
}

struct gw_route *gw_route_current(struct gw_route *r)
{
	struct gw_route *s;

	while (atomic_load_explicit(&r->removed, memory_order_acquire) &&
	       (s = atomic_load_explicit(&r->successor, memory_order_acquire)))
		r = s;
	return r;
}

static void route_free(struct gw_route *r);
static int route_share(struct gw_daemon *d, struct gw_route *r);

static struct gw_route *route_new(struct gw_daemon *d, const struct conf_route *c)
{
	/* aligned: its per-worker counters have cache lines of their own (struct gw_route_wstats) */
	struct gw_route *r = aligned_alloc(alignof(struct gw_route), sizeof(*r));

	if (!r)
		return NULL;
	memset(r, 0, sizeof(*r));
	r->conf = *c;
	r->refs = 1; /* the route table's */
	if (atomic_load_explicit(&d->state, memory_order_relaxed) == GW_SERVING)
		r->added_ns = gw_now_ns(); /* a reload's: its listeners open within the workers' next round */
	if (route_share(d, r) || (c->n_backends && !(r->pool = gw_pool_create(d, c)))) {
		route_free(r);
		return NULL;
	}
	return r;
}

static void route_free(struct gw_route *r)
{
	if (r->share && !--r->share->users)
		free(r->share);
	gw_pool_destroy(r->pool);
	free(r);
}

/* The admission count R's versions share (gw_route.share): that of a route of its name still in the
 * table or running sessions, else a new one. 0 or -ENOMEM. */
static int route_share(struct gw_daemon *d, struct gw_route *r)
{
	struct gw_route *o;

	for (unsigned i = 0; i < d->n_routes && !r->share; i++)
		if (!strcmp(d->routes[i]->conf.name, r->conf.name))
			r->share = d->routes[i]->share;
	LIST_FOREACH(o, &d->removed_routes, removed_link)
		if (!r->share && !strcmp(o->conf.name, r->conf.name))
			r->share = o->share;
	if (!r->share && !(r->share = calloc(1, sizeof(*r->share))))
		return -ENOMEM;
	r->share->users++;
	return 0;
}

static void route_retire(struct gw_daemon *d, struct gw_route *r)
{
	atomic_store_explicit(&r->removed, true, memory_order_release);
	LIST_INSERT_HEAD(&d->removed_routes, r, removed_link);
	gw_route_put(r); /* the table's reference */
}

/* A reload's new table between gw_routes_prepare and gw_routes_commit (control thread only). */
static struct {
	struct gw_route *next[CONF_MAX_ROUTES];
	bool kept[CONF_MAX_ROUTES], fresh[CONF_MAX_ROUTES];
	unsigned n;
} pend;

int gw_routes_prepare(struct gw_daemon *d, const struct conf *conf)
{
	struct gw_route **next = pend.next;
	bool *kept = pend.kept, *fresh = pend.fresh;
	unsigned n = conf->n_routes;

	memset(&pend, 0, sizeof(pend));
	for (unsigned i = 0; i < n; i++) {
		const struct conf_route *c = &conf->routes[i];
		next[i] = NULL;
		for (unsigned j = 0; j < d->n_routes; j++)
			if (!kept[j] && conf_route_equal(&d->routes[j]->conf, c)) {
				next[i] = d->routes[j];
				kept[j] = true;
				break;
			}
		if (!next[i] && !(fresh[i] = (next[i] = route_new(d, c)) != NULL)) {
			int e = errno == ENOSPC ? ENOSPC : ENOMEM;
			/* nothing was published yet: the new objects go, the table stays as it was */
			for (unsigned k = 0; k < i; k++)
				if (fresh[k])
					route_free(next[k]);
			char where[CONF_PATH_MAX + 16];
			conf_where(conf, c, NULL, NULL, where, sizeof(where));
			if (e == ENOSPC)
				GW_ERR("%s: route %s: more backends than ibgwd holds at once (%u; backends a reload "
				       "removed count until their last session ends)",
				       where, c->name, GW_MAX_BACKENDS);
			else
				GW_ERR("%s: route %s: out of memory", where, c->name);
			memset(&pend, 0, sizeof(pend));
			return -e;
		}
	}
	pend.n = n;
	return 0;
}

void gw_routes_abort(struct gw_daemon *d)
{
	(void)d;
	for (unsigned i = 0; i < pend.n; i++)
		if (pend.fresh[i])
			route_free(pend.next[i]);
	memset(&pend, 0, sizeof(pend));
}

void gw_routes_commit(struct gw_daemon *d, struct gw_live *live)
{
	struct gw_route **next = pend.next;
	const bool *kept = pend.kept, *fresh = pend.fresh;
	unsigned n = pend.n;

	/* the new pools' backends and the states the file gives them first, published before any old
	 * route names its successor: from then on a connection an old listener takes is the
	 * successor's, whose picks must see them (a backend the file drains takes no new session from
	 * that moment) */
	gw_backends_routes(d, next, n);
	if (live) {
		gw_backends_fill(d, live);
		gw_live_publish(d, live);
	}
	for (unsigned j = 0; j < d->n_routes; j++) {
		struct gw_route *r = d->routes[j], *o;
		if (kept[j])
			continue;
		for (unsigned i = 0; i < n && !r->successor; i++)
			if (fresh[i] && !strcmp(next[i]->conf.name, r->conf.name) &&
			    next[i]->conf.listen.kind == r->conf.listen.kind &&
			    next[i]->conf.listen.port == r->conf.listen.port) {
				gw_route_get(next[i]);
				atomic_store_explicit(&r->successor, next[i], memory_order_release);
				/* the older versions that named R name its successor now: R can go once
				 * its own sessions ended (after the workers' grace, see gw_routes_sweep) */
				LIST_FOREACH(o, &d->removed_routes, removed_link)
					if (o->successor == r) {
						gw_route_get(next[i]);
						atomic_store_explicit(&o->successor, next[i], memory_order_release);
						r->unlinked_epoch = d->live_epoch + 1; /* (the reload publishes next) */
						gw_route_put(r);
					}
			}
		route_retire(d, r);
	}
	memcpy(d->routes, next, n * sizeof(next[0]));
	d->n_routes = n;
	memset(&pend, 0, sizeof(pend));
}

int gw_routes_apply(struct gw_daemon *d, const struct conf *conf)
{
	int ret = gw_routes_prepare(d, conf);

	if (!ret)
		gw_routes_commit(d, NULL);
	return ret;
}

bool gw_route_ready(const struct gw_daemon *d, const struct gw_route *r, uint64_t now_ns, char *why,
                    size_t len)
{
	const struct conf_endpoint *lis = &r->conf.listen, *dst = &r->conf.connect;
	unsigned want = gw_side_of(lis->kind)->listeners(d), open;
	int err = atomic_load_explicit(&r->listen_err, memory_order_relaxed);
	char ep[CONF_EP_STRLEN];

	if (!want || ((dst->kind == CONF_EP_IB || dst->kind == CONF_EP_TCP) &&
	              !gw_side_of(dst->kind)->listeners(d))) {
		snprintf(why, len, "cannot be served: no %s", (!want ? lis->kind : dst->kind) == CONF_EP_IB
		                                                   ? "RDMA device"
		                                                   : "Ethernet port");
		return false;
	}
	open = atomic_load_explicit(&r->listening, memory_order_relaxed);
	if (open >= want || (!err && r->added_ns && now_ns - r->added_ns < GW_LISTEN_GRACE_NS))
		return true;
	conf_endpoint_str(lis, ep, sizeof(ep));
	if (err)
		snprintf(why, len, "not listening on %s (%u of %u open): %s", ep, open, want, strerror(-err));
	else
		snprintf(why, len, "not listening on %s (%u of %u open)", ep, open, want);
	return false;
}

/* ---- per-name sums of route counters (/metrics, and a freed route's counters carried on) ---- */

struct route_sum {
	const char *name;
	uint64_t active, rejected[3];
	struct xlt_route_stats st;
};

/* ACC += S field by field: struct xlt_route_stats is all uint64_t (S may be a worker's, written as we
 * read: relaxed loads give whole values). */
static void stats_add(struct xlt_route_stats *acc, const struct xlt_route_stats *s)
{
	uint64_t *a = (uint64_t *)acc;
	const uint64_t *v = (const uint64_t *)s;

	for (size_t k = 0; k < sizeof(*s) / sizeof(uint64_t); k++)
		a[k] += xlt_counter_read(&v[k]);
}

/* SUM += everything R counted: its workers' counters and those of the freed predecessors it carries
 * (whose gauges are 0). */
static void sum_route(struct route_sum *sum, const struct gw_route *r, unsigned n_workers)
{
	sum->name = r->conf.name;
	sum->active += atomic_load_explicit(&r->active, memory_order_relaxed);
	for (unsigned k = 0; k < 3; k++)
		sum->rejected[k] +=
		    atomic_load_explicit(&r->rejected[k], memory_order_relaxed) + r->past_rejected[k];
	stats_add(&sum->st, &r->past);
	for (unsigned w = 0; w < n_workers; w++)
		stats_add(&sum->st, &r->st[w].s);
}

/* R (removed, unreferenced) is about to be freed: its counters go to the route object that carries its
 * name on, the running one or else another removed one still in use, so that the per-name samples of
 * /metrics (which add up every object of a name) never go backwards. A name that no object carries any
 * more disappears from /metrics: Prometheus treats a series that stops as stale, whereas a counter
 * that drops would read as a restart and skew rate() and increase(). */
static void route_fold(struct gw_daemon *d, struct gw_route *r)
{
	struct route_sum sum = {0};
	struct gw_route *to = NULL, *o;

	for (unsigned i = 0; i < d->n_routes && !to; i++)
		if (!strcmp(d->routes[i]->conf.name, r->conf.name))
			to = d->routes[i];
	LIST_FOREACH(o, &d->removed_routes, removed_link)
		if (!to && o != r && atomic_load_explicit(&o->refs, memory_order_acquire) &&
		    !strcmp(o->conf.name, r->conf.name))
			to = o;
	if (!to)
		return;
	/* no reference left: no worker writes these any more (the acquire load of refs saw their last) */
	sum_route(&sum, r, d->n_workers);
	/* gauges describe the object's sessions, and it has none */
	sum.st.sessions_active = sum.st.held_a_to_b = sum.st.held_b_to_a = 0;
	stats_add(&to->past, &sum.st);
	for (unsigned k = 0; k < 3; k++)
		to->past_rejected[k] += sum.rejected[k];
	for (unsigned k = 0; k < GW_PP_REASONS; k++)
		to->past_proxy_errors[k] += r->proxy_errors[k] + r->past_proxy_errors[k];
}

void gw_routes_sweep(struct gw_daemon *d)
{
	struct gw_route *next;
	uint64_t seen = gw_live_seen(d);
	bool freed;

	do { /* (a freed route puts its successor, which may go in the same sweep) */
		freed = false;
		for (struct gw_route *r = LIST_FIRST(&d->removed_routes); r; r = next) {
			next = LIST_NEXT(r, removed_link);
			/* unreferenced, and no worker still on its way through it from an older version
			 * (live.c's grace: every worker started a round after the reload that unlinked it) */
			if (atomic_load_explicit(&r->refs, memory_order_acquire) == 0 && r->unlinked_epoch <= seen) {
				LIST_REMOVE(r, removed_link);
				GW_INFO("route %s: last session gone, freed", r->conf.name);
				route_fold(d, r);
				if (r->successor)
					gw_route_put(r->successor);
				route_free(r);
				freed = true;
			}
		}
	} while (freed);
}

void gw_routes_free(struct gw_daemon *d)
{
	for (unsigned i = 0; i < d->n_routes; i++)
		route_retire(d, d->routes[i]);
	d->n_routes = 0;
	/* workers are stopped: whatever they held is gone with them */
	while (!LIST_EMPTY(&d->removed_routes)) {
		struct gw_route *r = LIST_FIRST(&d->removed_routes);
		LIST_REMOVE(r, removed_link);
		route_free(r);
	}
	gw_backends_free(d);
}

/* ---- metrics: one sample per route name (a changed route and its draining predecessor add up) ---- */

static const char *side_name(enum conf_endpoint_kind k)
{
	return k == CONF_EP_IB ? "ib" : k == CONF_EP_TCP ? "eth" : "diag";
}

/* The dir label of R's two directions: SIDE_to_SIDE, from the listener's side to the destination's
 * and back. A route whose sides are of one kind (tcp: -> tcp:, ib: -> ib:) names its way back
 * SIDE_to_SIDE_back, so that its two series never share one set of labels. */
static void dir_names(char to_b[16], char to_a[16], const struct gw_route *r)
{
	const char *a = side_name(r->conf.listen.kind), *b = side_name(r->conf.connect.kind);

	snprintf(to_b, 16, "%s_to_%s", a, b);
	snprintf(to_a, 16, "%s_to_%s%s", b, a, strcmp(a, b) ? "" : "_back");
}

void gw_routes_metrics(struct gw_daemon *d, struct gw_metrics *m)
{
	static const char *const reject_names[3] = {"acl", "limit", "global"};
	struct route_sum *sums = calloc(CONF_MAX_ROUTES * 2, sizeof(*sums));
	char dir[2][CONF_MAX_ROUTES * 2][16];
	unsigned n = 0;

	if (!sums)
		return;
	for (unsigned i = 0; i < d->n_routes; i++) {
		const struct gw_route *r = d->routes[i];
		dir_names(dir[0][n], dir[1][n], r);
		sum_route(&sums[n++], r, d->n_workers);
	}
	const struct gw_route *r;

	LIST_FOREACH(r, &d->removed_routes, removed_link) {
		unsigned i;
		for (i = 0; i < n && strcmp(sums[i].name, r->conf.name); i++)
			;
		if (i == n) {
			if (n == CONF_MAX_ROUTES * 2)
				continue;
			dir_names(dir[0][n], dir[1][n], r);
			n++;
		}
		sum_route(&sums[i], r, d->n_workers);
	}

	/* the running routes only: a removed one has no listener */
	gw_metrics_family(m, "route_ready", XLT_GAUGE,
	                  "1 while the route can be served (its listener open, on every worker for tcp:, and "
	                  "the engines of both its sides there), else 0: /health then answers 503 and says why");
	uint64_t now = gw_now_ns();
	for (unsigned i = 0; i < d->n_routes; i++) {
		char why[160];
		gw_metrics_sample(m, gw_route_ready(d, d->routes[i], now, why, sizeof(why)), "route",
		                  d->routes[i]->conf.name, NULL);
	}
	gw_metrics_family(m, "route_sessions_active", XLT_GAUGE, "sessions of the route now");
	for (unsigned i = 0; i < n; i++)
		gw_metrics_sample(m, (double)sums[i].active, "route", sums[i].name, NULL);
	gw_metrics_family(m, "route_sessions_total", XLT_COUNTER, "sessions the route started");
	for (unsigned i = 0; i < n; i++)
		gw_metrics_sample(m, (double)sums[i].st.sessions_total, "route", sums[i].name, NULL);
	gw_metrics_family(m, "route_sessions_rejected_total", XLT_COUNTER,
	                  "sessions refused: acl (source not allowed), limit (route max_sessions), global "
	                  "(gateway max_sessions or draining)");
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < 3; k++)
			gw_metrics_sample(m, (double)sums[i].rejected[k], "route", sums[i].name, "reason",
			                  reject_names[k], NULL);
	gw_metrics_family(
	    m, "route_sessions_ended_total", XLT_COUNTER,
	    "sessions over, by cause (ok, reset, connect_refused, connect_timeout, ..., idle_timeout, "
	    "zero_window_timeout, credit_stall_timeout, half_closed_timeout)");
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < XLT_END_COUNT; k++)
			gw_metrics_sample(m, (double)sums[i].st.ends[k], "route", sums[i].name, "reason",
			                  xlt_end_reason_names[k], NULL);
	gw_metrics_family(m, "route_bytes_total", XLT_COUNTER, "bytes relayed, by direction");
	for (unsigned i = 0; i < n; i++) {
		gw_metrics_sample(m, (double)sums[i].st.bytes_a_to_b, "route", sums[i].name, "dir", dir[0][i],
		                  NULL);
		gw_metrics_sample(m, (double)sums[i].st.bytes_b_to_a, "route", sums[i].name, "dir", dir[1][i],
		                  NULL);
	}
	gw_metrics_family(m, "route_backpressure_seconds_total", XLT_COUNTER,
	                  "time a direction held bytes its destination could not take yet");
	for (unsigned i = 0; i < n; i++) {
		gw_metrics_sample(m, (double)sums[i].st.blocked_ns_a_to_b / 1e9, "route", sums[i].name, "dir",
		                  dir[0][i], NULL);
		gw_metrics_sample(m, (double)sums[i].st.blocked_ns_b_to_a / 1e9, "route", sums[i].name, "dir",
		                  dir[1][i], NULL);
	}
	gw_metrics_family(
	    m, "route_buffer_bytes", XLT_GAUGE,
	    "bytes received and held in the gateway's buffers because the direction's destination "
	    "cannot take them yet (at least; the rest of the buffers is in flight to the destination)");
	for (unsigned i = 0; i < n; i++) {
		gw_metrics_sample(m, (double)sums[i].st.held_a_to_b, "route", sums[i].name, "dir", dir[0][i],
		                  NULL);
		gw_metrics_sample(m, (double)sums[i].st.held_b_to_a, "route", sums[i].name, "dir", dir[1][i],
		                  NULL);
	}
	gw_metrics_family(m, "route_backpressure_events_total", XLT_COUNTER,
	                  "times a direction became blocked by its destination");
	for (unsigned i = 0; i < n; i++) {
		gw_metrics_sample(m, (double)sums[i].st.blocked_a_to_b, "route", sums[i].name, "dir",
		                  dir[0][i], NULL);
		gw_metrics_sample(m, (double)sums[i].st.blocked_b_to_a, "route", sums[i].name, "dir",
		                  dir[1][i], NULL);
	}
	gw_metrics_family(m, "route_connects_total", XLT_COUNTER, "far-side connections established");
	for (unsigned i = 0; i < n; i++)
		gw_metrics_sample(m, (double)sums[i].st.connects, "route", sums[i].name, NULL);
	gw_metrics_family(m, "route_connect_seconds_total", XLT_COUNTER,
	                  "total far-side connect latency (divide by route_connects_total for the mean)");
	for (unsigned i = 0; i < n; i++)
		gw_metrics_sample(m, (double)sums[i].st.connect_ns_sum / 1e9, "route", sums[i].name, NULL);
	free(sums);
}
