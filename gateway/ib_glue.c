/* IB side glue: plugs ib_side (rdma_cm on the control thread, the rsocket engine on the workers) into
 * the daemon.
 *
 * The control thread's libevent base watches the rdma_cm channel and the workers' wake-up eventfd and
 * runs a 20 ms tick (connect timeouts, spare connection objects, drain). Listeners follow the route
 * table: one per route with listen = ib:PORT, each holding a reference to its struct gw_route; a
 * route that a reload drops loses its listener, one that it changes keeps it (same port) under the new
 * route; connections made before finish under the old one. A listener that cannot open (its port
 * held, the bind address not up yet) is tried again every LISTEN_RETRY_NS, its failure logged once;
 * meanwhile its route is not ready (gw_route_ready: /health 503).
 * No RDMA device (a host without rdma_rxe or an HCA) is not an error: IB routes stay closed and say so
 * (and are not ready), the Ethernet side runs alone. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <event2/event.h>

#include "../conf/conf.h"
#include "../ib_side/ib.h"
#include "gw.h"
#include "log.h"
#include "metrics.h"

#define TICK_US 20000

struct glue_listener {
	struct gw_route *route;
	struct ib_listener *l;
};

/* Control thread only (one daemon per process). */
static struct {
	struct xlt_listen_hooks hooks;
	struct event *ev_cm, *ev_wake, *ev_tick;
	struct glue_listener lis[CONF_MAX_ROUTES];
	unsigned n_lis;
	bool draining;
	bool unavailable_logged;
	uint64_t retry_ns; /* when to try again the listeners that failed to open (0: none failed) */
} g;

#define LISTEN_RETRY_NS (1000 * 1000000ull)

/* The engine's parameters, from [ib] (the engine keeps a copy; [ib] changes need a restart). */
static void ib_params_of(const struct conf_ib *c, struct ib_params *p)
{
	*p = (struct ib_params){
	    .bind = c->bind.s_addr,
	    .sq_depth = c->sq_depth,
	    .rq_depth = c->rq_depth,
	    .inline_size = c->inline_size,
	    .keepalive_ms = c->keepalive_ms,
	};
	_Static_assert(sizeof(p->device) >= sizeof(c->device), "[ib] device does not fit ib_params");
	memcpy(p->device, c->device, sizeof(c->device));
}

/* What the engine needs of route R (copied by the engine into a listener or a connection; a reload
 * reaches new connections through ib_listener_update, with the new route's). Any thread: R's conf is
 * immutable. The config bounds the buffer sizes far below 4 GiB. */
static void route_params_of(const struct conf_route *r, struct ib_route_params *p)
{
	*p = (struct ib_route_params){
	    .rbuf_size = (uint32_t)r->ib_rbuf_size,
	    .sbuf_size = (uint32_t)r->ib_sbuf_size,
	    /* copies in flight, in frames of the port's pool where the route lends (conf.h) */
	    .copy_size = conf_route_ib_copy_limit(r),
	    .sq_depth = r->ib_sq_depth,
	    .rq_depth = r->ib_rq_depth,
	    .connect_timeout_ms = r->connect_timeout_ms,
	};
}

/* The slots are taken at the connect request (ib_side holds them for the connection until its session
 * takes them over): a connection that is accepted but never established counts against max_sessions,
 * and so against the memory budget, from the start. An IPv6 source is matched against the list's
 * IPv6 networks; one without an IP address (AF_IB) comes as the unspecified address, which only a
 * list that admits everyone (::/0) admits (conf_route_allows). */
static int hook_admit(void *arg, void *route, const struct xlt_ip *addr)
{
	return gw_session_admit(arg, route, addr);
}

static void hook_unadmit(void *arg, void *route)
{
	gw_session_unadmit(arg, route);
}

/* versions of a route that a reload changed share its count of sessions (gw_route_share) */
static bool hook_same_limit(void *a, void *b)
{
	return a == b || ((struct gw_route *)a)->share == ((struct gw_route *)b)->share;
}

static void hook_route_get(void *route)
{
	gw_route_get(route);
}

static void hook_route_put(void *route)
{
	gw_route_put(route);
}

static int hook_accept(void *warg, void *route, struct xlt_stream *s)
{
	return gw_session_start(warg, route, s);
}

static void hook_log(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level >= CONF_LOG_DEBUG && !gw_log_enabled(CONF_LOG_DEBUG))
		return;
	gw_log((enum conf_log_level)level, "%s", msg);
}

static void on_ready(evutil_socket_t fd, short what, void *arg)
{
	struct gw_daemon *d = arg;

	(void)fd;
	(void)what;
	ib_ctl_process(d->ib, gw_now_ns());
}

static void close_listener(unsigned i)
{
	atomic_fetch_sub_explicit(&g.lis[i].route->listening, 1, memory_order_relaxed);
	ib_listener_close(g.lis[i].l); /* puts the route */
	g.lis[i] = g.lis[--g.n_lis];
}

static void ib_routes(struct gw_daemon *d);

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct gw_daemon *d = arg;
	bool serving = atomic_load_explicit(&d->state, memory_order_acquire) == GW_SERVING;
	uint64_t now;

	(void)fd;
	(void)what;
	if (!serving && !g.draining) {
		/* draining: no new IB sessions; the ones running finish on their own */
		g.draining = true;
		while (g.n_lis)
			close_listener(0);
		GW_INFO("IB side: listeners closed for the drain");
	}
	now = gw_now_ns();
	if (serving && g.retry_ns && now >= g.retry_ns)
		ib_routes(d); /* listeners that could not open (an address not up yet, a port taken) */
	ib_ctl_tick(d->ib, now, serving);
}

static void ib_stop(struct gw_daemon *d);

static int ib_start(struct gw_daemon *d)
{
	void *wargs[GW_MAX_WORKERS];
	char devs[256];
	struct ib_params params;
	struct ib_ctl *ctl;

	g.hooks = (struct xlt_listen_hooks){
		.arg = d,
		.admit = hook_admit,
		.unadmit = hook_unadmit,
		.same_limit = hook_same_limit,
		.route_get = hook_route_get,
		.route_put = hook_route_put,
		.accept = hook_accept,
		.log = hook_log,
	};
	for (unsigned i = 0; i < d->n_workers; i++)
		wargs[i] = &d->workers[i];
	ib_params_of(&d->conf->ib, &params);
	ctl = ib_ctl_create(&params, d->n_workers, wargs, d->conf->gateway.max_sessions,
			    d->conf->gateway.memory_limit, &g.hooks);
	if (!ctl) {
		if (errno == ENODEV || errno == ENOENT || errno == ENOSYS) {
			GW_NOTICE("IB side: no RDMA device%s%s: IB routes stay closed", d->conf->ib.device[0] ? " " : "",
				  d->conf->ib.device);
			return 0;
		}
		return -errno;
	}
	d->ib = ctl;
	g.ev_cm = event_new(d->base, ib_ctl_cm_fd(ctl), EV_READ | EV_PERSIST, on_ready, d);
	g.ev_wake = event_new(d->base, ib_ctl_wake_fd(ctl), EV_READ | EV_PERSIST, on_ready, d);
	g.ev_tick = event_new(d->base, -1, EV_PERSIST, on_tick, d);
	if (!g.ev_cm || !g.ev_wake || !g.ev_tick || event_add(g.ev_cm, NULL) || event_add(g.ev_wake, NULL) ||
	    event_add(g.ev_tick, &(struct timeval){.tv_usec = TICK_US})) {
		ib_stop(d);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < d->n_workers; i++)
		d->workers[i].ib = ib_ctl_worker(ctl, i);
	GW_INFO("IB side: device(s) %s", ib_ctl_devices(ctl, devs, sizeof(devs)));
	gw_extmem_start(d); /* before any buffer set: each registers the frames when created */
	return 0;
}

static unsigned ib_rx(struct gw_worker *w, uint64_t now_ns)
{
	unsigned work;

	if (!w->ib)
		return 0;
	work = ib_worker_poll(w->ib, now_ns, w->live->busy_poll_ns);
	if (ib_worker_hot(w->ib))
		w->hot = true;
	return work;
}

static unsigned ib_relay(struct gw_worker *w)
{
	return w->ib ? ib_worker_relay(w->ib) : 0;
}

static unsigned ib_flush(struct gw_worker *w)
{
	return w->ib ? ib_worker_flush(w->ib) : 0;
}

/* The event channels of the worker's CQs (ib_worker_arm); none cover its work when the engine has
 * none, or more CQs than fit. */
static int ib_arm(struct gw_worker *w, struct pollfd *fds, unsigned max, bool *covered)
{
	int n = w->ib ? ib_worker_arm(w->ib, fds, max) : 0;

	*covered = n >= 0;
	return n > 0 ? n : 0;
}

static void ib_woken(struct gw_worker *w, const struct pollfd *fds, unsigned n)
{
	if (w->ib)
		ib_worker_woken(w->ib, fds, n);
}

static void ib_routes(struct gw_daemon *d)
{
	char addr[INET_ADDRSTRLEN];

	if (!d->ib) {
		for (unsigned i = 0; i < d->n_routes && !g.unavailable_logged; i++)
			if (d->routes[i]->conf.listen.kind == CONF_EP_IB) {
				GW_WARN("route %s: no RDMA device, ib:%u is not listening", d->routes[i]->conf.name,
					d->routes[i]->conf.listen.port);
				g.unavailable_logged = true;
			}
		return;
	}
	/* a changed route that kept its port keeps its listener, now under the new route (its port never
	 * closes: a client connecting during the reload is not refused); the others close first, since a
	 * changed route may reuse a dropped route's port */
	for (unsigned i = 0; i < g.n_lis;) {
		struct gw_route *now = g.draining ? NULL : gw_route_current(g.lis[i].route);
		for (unsigned k = 0; now && k < d->n_routes; k++)
			if (d->routes[k] == now)
				goto keep;
		close_listener(i);
		continue;
keep:
		if (now != g.lis[i].route) {
			struct ib_route_params rp;

			route_params_of(&now->conf, &rp);
			atomic_fetch_sub_explicit(&g.lis[i].route->listening, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&now->listening, 1, memory_order_relaxed);
			ib_listener_update(g.lis[i].l, &rp, now);
			g.lis[i].route = now;
			GW_INFO("route %s: changed, ib:%u stays open", now->conf.name, now->conf.listen.port);
		}
		i++;
	}
	if (g.draining)
		return;
	g.retry_ns = 0;
	inet_ntop(AF_INET, &d->conf->ib.bind, addr, sizeof(addr));
	for (unsigned k = 0; k < d->n_routes; k++) {
		struct gw_route *r = d->routes[k];
		struct ib_route_params rp;
		bool open = false;

		if (r->conf.listen.kind != CONF_EP_IB)
			continue;
		for (unsigned i = 0; i < g.n_lis && !open; i++)
			open = g.lis[i].route == r;
		if (open)
			continue;
		route_params_of(&r->conf, &rp);
		g.lis[g.n_lis].l = ib_listen(d->ib, r->conf.listen.port, &rp, r);
		if (!g.lis[g.n_lis].l) {
			int err = errno ? -errno : -EIO;
			/* tried again every LISTEN_RETRY_NS, said once per cause */
			if (atomic_exchange_explicit(&r->listen_err, err, memory_order_relaxed) != err)
				GW_ERR("route %s: cannot listen on ib %s:%u: %s (trying again every second)",
				       r->conf.name, addr, r->conf.listen.port, strerror(-err));
			g.retry_ns = gw_now_ns() + LISTEN_RETRY_NS;
			continue;
		}
		g.lis[g.n_lis++].route = r;
		atomic_fetch_add_explicit(&r->listening, 1, memory_order_relaxed);
		if (atomic_exchange_explicit(&r->listen_err, 0, memory_order_relaxed))
			GW_NOTICE("route %s: listening on ib %s:%u at last", r->conf.name, addr, r->conf.listen.port);
		else
			GW_INFO("route %s: listening on ib %s:%u", r->conf.name, addr, r->conf.listen.port);
	}
}

/* None once a device is being removed: ibgwd holds it until it exits, so nothing IB is served (its
 * routes not ready, /health 503) until a restart (ib_side/cm.c, dev_removed). */
static unsigned ib_listeners(const struct gw_daemon *d)
{
	return d->ib && !ib_ctl_stats(d->ib)->devs_removed;
}

static struct xlt_stream *ib_connect(struct gw_worker *w, struct gw_route *r, const struct xlt_ip *addr,
                                     uint16_t port, uint64_t timeout_ms, int *err)
{
	struct ib_route_params rp;

	/* the config takes IPv4 ib: destinations only (rdma_cm resolves from [ib] bind, IPv4) */
	if (!w->ib || !xlt_ip_is_v4(addr)) {
		*err = -ENETUNREACH;
		return NULL;
	}
	route_params_of(&r->conf, &rp);
	rp.connect_timeout_ms = timeout_ms;
	return ib_worker_connect(w->ib, &rp, r, (struct in_addr){xlt_ip_to_v4(addr)}, port, err);
}

static void ib_metrics(struct gw_daemon *d, struct gw_metrics *m)
{
	const void *bases[GW_MAX_WORKERS];
	char ids[GW_MAX_WORKERS][12];
	const char *labels[GW_MAX_WORKERS];
	const void *ctl_base[1];
	double stall = 0, withheld = 0;

	if (!d->ib)
		return;
	ctl_base[0] = ib_ctl_stats(d->ib);
	gw_metrics_table(m, ib_ctl_metrics, ib_ctl_n_metrics, ctl_base, 1, NULL, NULL);
	for (unsigned i = 0; i < d->n_workers; i++) {
		const struct ib_worker_stats *st = ib_worker_stats(d->workers[i].ib);
		snprintf(ids[i], sizeof(ids[i]), "%u", i);
		labels[i] = ids[i];
		bases[i] = st;
		stall += (double)xlt_counter_read(&st->credit_stall_ns) / 1e9;
		withheld += (double)xlt_counter_read(&st->credit_withheld_ns) / 1e9;
	}
	gw_metrics_table(m, ib_worker_metrics, ib_worker_n_metrics, bases, d->n_workers, "worker", labels);
	gw_metrics_family(m, "ib_credit_stall_seconds_total", XLT_COUNTER,
			  "time the gateway had data for IB peers but no credits or advertised space");
	gw_metrics_sample(m, stall, NULL);
	gw_metrics_family(m, "ib_credit_withheld_seconds_total", XLT_COUNTER,
			  "time IB peers waited for credits the gateway held back (their bytes not consumed yet)");
	gw_metrics_sample(m, withheld, NULL);
	gw_extmem_metrics(d, m);
}

int gw_ib_peer_id(const struct xlt_stream *s, uint8_t gid[16], uint32_t *qpn)
{
	return ib_stream_peer_id(s, gid, qpn);
}

static uint64_t ib_conns(const struct gw_daemon *d)
{
	return d->ib ? ib_ctl_stats(d->ib)->active : 0;
}

static void ib_stop(struct gw_daemon *d)
{
	while (g.n_lis)
		close_listener(0);
	if (g.ev_cm)
		event_free(g.ev_cm);
	if (g.ev_wake)
		event_free(g.ev_wake);
	if (g.ev_tick)
		event_free(g.ev_tick);
	g.ev_cm = g.ev_wake = g.ev_tick = NULL;
	ib_ctl_destroy(d->ib);
	d->ib = NULL;
	for (unsigned i = 0; i < d->n_workers; i++)
		d->workers[i].ib = NULL;
}

const struct gw_side_ops gw_ib_side = {
    .name = "IB side",
    .start = ib_start,
    .routes = ib_routes,
    .listeners = ib_listeners,
    .metrics = ib_metrics,
    .conns = ib_conns,
    .stop = ib_stop,
    .rx = ib_rx,
    .relay = ib_relay,
    .flush = ib_flush,
    .arm = ib_arm,
    .woken = ib_woken,
    .connect = ib_connect,
};
