/* Daemon lifecycle on the control thread: start workers, serve, reload on SIGHUP, drain on SIGTERM.
 *
 * Reload builds a whole new config aside and swaps it in only when it is entirely valid, so a broken
 * file never touches the running gateway: first everything that can fail (parsing and checks, the
 * buffers the routes need against those sized at start, new route objects), then the commit, which
 * cannot fail. Keys that need a restart (workers, the port, IB buffers) are reported, not
 * half-applied, and the rest of the file applies. max_sessions and memory_limit apply live up to the
 * values the daemon started with (its pools and buffer arenas are sized once); above, the start
 * value stays in force and the log says the rest needs a restart. Values the workers read are
 * published (struct gw_live, live.c), never freed under them. Drain: /health turns 503 so load balancers move
 * away, listeners close, sessions get [gateway] drain_timeout to finish, then the rest are aborted and
 * counted. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "../conf/conf.h"
#include "backend.h"
#include "access_log.h"
#include "gw.h"
#include "log.h"
#include "privs.h"

#define DRAIN_POLL_US 100000

/* Ethernet first: the IB side registers the Ethernet frames when it starts (gw.h). */
const struct gw_side_ops *const gw_sides[GW_N_SIDES] = {
    [GW_SIDE_ETH] = &gw_eth_side,
    [GW_SIDE_IB] = &gw_ib_side,
};

uint64_t gw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gw_signals_hold(bool hold)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(hold ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

uint64_t gw_sessions_active(const struct gw_daemon *d)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < d->n_workers; i++)
		n += xlt_counter_read(&d->workers[i].st.sessions_active);
	return n;
}

static void log_conf_error(void *arg, const char *msg)
{
	(void)arg;
	GW_ERR("%s", msg);
}

static void log_conf_warning(void *arg, const char *msg)
{
	(void)arg;
	GW_WARN("%s", msg);
}

/* Buffers the routes of C may hold at once (conf_load checks the same sum against C's memory_limit). */
static uint64_t routes_need(const struct conf *c)
{
	uint64_t need = 0;

	for (uint32_t i = 0; i < c->n_routes; i++)
		need += (uint64_t)c->routes[i].max_sessions * conf_route_session_bytes(&c->routes[i]);
	return need;
}

/* One line for route R: how its sessions relay and the buffers that costs (conf.h). */
static void log_route_buffers(const char *what, const struct conf_route *r)
{
	char relay[96];
	uint64_t per = conf_route_session_bytes(r);

	GW_INFO("%sroute %s: %s: %" PRIu64 " KiB of buffers a session, up to %" PRIu64 " MiB for %u", what,
	        r->name, conf_route_relay_str(r, relay, sizeof(relay)), per >> 10,
	        ((uint64_t)r->max_sessions * per + (1u << 20) - 1) >> 20, r->max_sessions);
}

/* Reports what changed between OLD (running) and NEW (the file). Returns the number of differences
 * needing a restart. */
static unsigned diff_and_report(const struct gw_daemon *d, const struct conf *old, const struct conf *new)
{
	unsigned restart = 0;
	char a[64];

	if (new->gateway.max_sessions > d->cap_sessions) {
		GW_WARN("reload: [gateway] max_sessions %" PRIu32 " is above the %" PRIu32
			" the session pools were sized for at start: %" PRIu32
			" apply until a restart",
			new->gateway.max_sessions, d->cap_sessions, d->cap_sessions);
		restart++;
	}
	if (new->gateway.memory_limit > d->cap_memory) {
		GW_WARN("reload: [gateway] memory_limit %" PRIu64 " MiB is above the %" PRIu64
			" MiB the buffer arenas were sized for at start: %" PRIu64
			" MiB apply until a restart",
			new->gateway.memory_limit >> 20, d->cap_memory >> 20, d->cap_memory >> 20);
		restart++;
	}

#define NEEDS_RESTART(cond, what)                                                                            \
	do {                                                                                                 \
		if (cond) {                                                                                  \
			GW_WARN("reload: %s changed; it takes effect after a restart", what);                \
			restart++;                                                                           \
		}                                                                                            \
	} while (0)
	NEEDS_RESTART(old->gateway.workers != new->gateway.workers, "[gateway] workers");
	NEEDS_RESTART(memcmp(&old->gateway.stats, &new->gateway.stats, sizeof(old->gateway.stats)),
		      "[gateway] stats");
	NEEDS_RESTART(old->gateway.log_target != new->gateway.log_target, "[gateway] log_target");
	/* the switch happens once, before DPDK starts: a running daemon can neither take back root nor
	 * become another user */
	NEEDS_RESTART(strcmp(old->gateway.user, new->gateway.user), "[gateway] user");
	NEEDS_RESTART(strcmp(old->gateway.group, new->gateway.group), "[gateway] group");
	NEEDS_RESTART(memcmp(&old->ib, &new->ib, sizeof(old->ib)), "[ib]");
	NEEDS_RESTART(memcmp(&old->eth, &new->eth, sizeof(old->eth)), "[eth]");
#undef NEEDS_RESTART

	for (uint32_t i = 0; i < new->n_routes; i++) {
		const struct conf_route *r = &new->routes[i], *o = NULL;
		for (uint32_t j = 0; j < old->n_routes && !o; j++)
			if (!strcmp(old->routes[j].name, r->name))
				o = &old->routes[j];
		if (!o)
			GW_NOTICE("reload: route %s added (%s)", r->name, conf_endpoint_str(&r->listen, a, sizeof(a)));
		else if (!conf_route_equal(o, r))
			GW_NOTICE("reload: route %s changed; new sessions use the new settings", r->name);
		if (!o || !conf_route_equal(o, r))
			log_route_buffers("reload: ", r);
	}
	for (uint32_t j = 0; j < old->n_routes; j++) {
		bool kept = false;
		for (uint32_t i = 0; i < new->n_routes && !kept; i++)
			kept = !strcmp(old->routes[j].name, new->routes[i].name);
		if (!kept)
			GW_NOTICE("reload: route %s removed; its sessions finish", old->routes[j].name);
	}
	return restart;
}

static void on_hup(evutil_socket_t fd, short what, void *arg)
{
	struct gw_daemon *d = arg;
	struct gw_live *live = NULL;
	const struct conf_route *low;
	struct conf *c;
	uint64_t need;
	char where[CONF_PATH_MAX + 16];

	(void)fd;
	(void)what;
	GW_NOTICE("SIGHUP: reloading %s", d->conf_path);
	/* 1. everything that can fail; nothing of the running gateway changes */
	c = conf_load(d->conf_path, log_conf_error, NULL);
	if (!c) {
		if (errno != EINVAL)
			GW_ERR("reload: cannot read %s: %s", d->conf_path, strerror(errno));
		goto err;
	}
	conf_warn(c, log_conf_warning, NULL);
	need = routes_need(c);
	if (need > d->cap_memory) {
		GW_ERR("%s: routes need up to %" PRIu64 " MiB of buffers, above the %" PRIu64
		       " MiB of memory_limit the buffer arenas were sized for at start "
		       "(a larger memory_limit needs a restart)",
		       conf_where(c, NULL, "gateway", "memory_limit", where, sizeof(where)),
		       (need + (1 << 20) - 1) >> 20, d->cap_memory >> 20);
		goto err;
	}
	if (!gw_privs_may_bind_low() && (low = gw_privs_low_ib_route(c))) {
		/* rdma_cm would refuse the bind after the reload said it was done */
		GW_ERR("%s: route %s listens on ib:%u, below 1024, which needs CAP_NET_BIND_SERVICE: ibgwd kept "
		       "it only if the file it started with had such a listener (restart to add one)",
		       conf_where(c, low, NULL, NULL, where, sizeof(where)), low->name, low->listen.port);
		goto err;
	}
	if (gw_alog_reload_prepare(d, c)) /* a new access log target must open before anything changes */
		goto err;
	if (gw_routes_prepare(d, c)) /* (says why) */
		goto err;
	/* (with the new routes' backends: see gw_routes_commit below) */
	live = gw_live_make(d, c);
	if (!live) {
		gw_routes_abort(d);
		GW_ERR("reload: out of memory");
		goto err;
	}
	/* 2. the commit: nothing below fails */
	d->restart_pending = diff_and_report(d, d->conf, c);
	/* the restart-only values keep their running ones so what runs and what is shown agree */
	c->gateway.workers = d->conf->gateway.workers;
	c->gateway.stats = d->conf->gateway.stats;
	c->gateway.log_target = d->conf->gateway.log_target;
	memcpy(c->gateway.user, d->conf->gateway.user, sizeof(c->gateway.user));
	memcpy(c->gateway.group, d->conf->gateway.group, sizeof(c->gateway.group));
	c->gateway.max_sessions = live->max_sessions;
	if (c->gateway.memory_limit > d->cap_memory)
		c->gateway.memory_limit = d->cap_memory;
	c->ib = d->conf->ib;
	c->eth = d->conf->eth;
	if (d->verbose) /* the command line's -v outlasts reloads */
		c->gateway.log_level = CONF_LOG_DEBUG;
	gw_log_set_level(c->gateway.log_level);
	gw_alog_reload_commit(d);
	/* publishes the snapshot with the new backends first: once the old routes are retired, a
	 * connection their listener takes goes to the successor, whose pool must find its backends
	 * usable (it found none before: reset, connect_failed) */
	gw_routes_commit(d, live);
	conf_free(d->conf);
	d->conf = c;
	/* once more: the epoch the routes the commit retired wait for (it frees them once every worker
	 * has passed it; where this fails, the health tick publishes) */
	gw_backends_publish(d);
	for (unsigned i = 0; i < GW_N_SIDES; i++)
		gw_sides[i]->routes(d);
	d->reloads_ok++;
	gw_stats_stale();
	GW_NOTICE("reload done: %u route(s)%s", c->n_routes,
	          d->restart_pending ? "; some changes need a restart (see above)" : "");
	return;
err:
	gw_alog_reload_abort(d);
	free(live);
	conf_free(c);
	GW_ERR("reload failed: keeping the running configuration");
	d->reloads_failed++;
	gw_stats_stale();
}

static void on_usr1(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	gw_alog_reopen(arg);
}

static void sweep_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	gw_routes_sweep(arg);
	gw_backends_sweep(arg);
	gw_live_sweep(arg);
}

/* The drain is over when no session is left and every IB connection was freed, or at the deadline.
 * The IB connections count too: one that just closed or was aborted still has a message on its way to
 * its peer (an rsocket peer learns that its stream ended only from it), which the teardown after the
 * drain would flush. Nothing here waits for a peer beyond the deadlines: drain_timeout, then 2 s for
 * the aborts. */
static void drain_tick(evutil_socket_t fd, short what, void *arg)
{
	struct gw_daemon *d = arg;
	uint64_t active = gw_sessions_active(d);
	uint64_t busy = active;

	for (unsigned i = 0; i < GW_N_SIDES; i++)
		busy += gw_sides[i]->conns(d);

	(void)fd;
	(void)what;
	if (busy && gw_now_ns() < d->drain_deadline_ns)
		return;
	if (active && !d->drain_aborting) {
		/* the workers abort their sessions; give the aborts a moment to reach the peers */
		GW_WARN("drain timeout: aborting %llu session(s)", (unsigned long long)active);
		d->drain_aborted += active;
		d->drain_aborting = true;
		for (unsigned i = 0; i < d->n_workers; i++)
			atomic_store_explicit(&d->workers[i].abort_all, true, memory_order_release);
		d->drain_deadline_ns = gw_now_ns() + 2000000000ull;
		return;
	}
	if (busy && gw_now_ns() < d->drain_deadline_ns)
		return;
	d->state = GW_STOPPING;
	event_base_loopexit(d->base, NULL);
}

static void on_term(evutil_socket_t fd, short what, void *arg)
{
	struct gw_daemon *d = arg;
	struct timeval tv = {.tv_sec = 0, .tv_usec = DRAIN_POLL_US};

	(void)what;
	if (d->state == GW_DRAINING) {
		GW_WARN("second %s: stopping now", strsignal((int)fd));
		d->state = GW_STOPPING;
		event_base_loopexit(d->base, NULL);
		return;
	}
	if (d->state == GW_STOPPING)
		return; /* (a third in the same pass of the loop: stopping already) */
	GW_NOTICE("%s: draining (up to %llu ms)", strsignal((int)fd), (unsigned long long)d->conf->gateway.drain_timeout_ms);
	atomic_store_explicit(&d->state, GW_DRAINING, memory_order_release);
	d->drain_deadline_ns = gw_now_ns() + d->conf->gateway.drain_timeout_ms * 1000000ull;
	d->drain_timer = event_new(d->base, -1, EV_PERSIST, drain_tick, d);
	if (!d->drain_timer || event_add(d->drain_timer, &tv)) {
		GW_ERR("cannot arm the drain timer: stopping now");
		event_base_loopexit(d->base, NULL);
		return;
	}
	drain_tick(-1, 0, d);
}

static int start_workers(struct gw_daemon *d)
{
	unsigned lcore, i = 0;

	RTE_LCORE_FOREACH_WORKER(lcore)
	{
		struct gw_worker *w;
		int ret;

		if (i == d->n_workers)
			break;
		w = &d->workers[i];
		w->lcore = lcore;
		ret = rte_eal_remote_launch(gw_worker_main, w, lcore);
		if (ret) {
			GW_ERR("cannot launch worker %u on lcore %u: %s", i, lcore, strerror(-ret));
			return ret;
		}
		i++;
	}
	if (i != d->n_workers) {
		GW_ERR("only %u lcore(s) for %u worker(s)", i, d->n_workers);
		return -EINVAL;
	}
	return 0;
}

static void stop_workers(struct gw_daemon *d)
{
	for (unsigned i = 0; i < d->n_workers; i++)
		atomic_store_explicit(&d->workers[i].stop, true, memory_order_release);
	rte_eal_mp_wait_lcore();
}

int gw_daemon_run(struct gw_daemon *d)
{
	int ret, status = 1;
	unsigned started = 0; /* sides started (gw_sides[] order) */

	/* a stats client that resets mid-reply must cost an EPIPE, not the daemon */
	signal(SIGPIPE, SIG_IGN);
	clock_gettime(CLOCK_MONOTONIC, &d->started);
	conf_warn(d->conf, log_conf_warning, NULL);
	d->base = event_base_new();
	if (!d->base) {
		GW_ERR("cannot create the event loop");
		return 1;
	}
	ret = gw_stats_start(d);
	if (ret) {
		char a[INET_ADDRSTRLEN];
		GW_ERR("cannot listen on %s:%u for stats: %s",
		       inet_ntop(AF_INET, &d->conf->gateway.stats.addr, a, sizeof(a)), d->conf->gateway.stats.port,
		       strerror(-ret));
		goto err;
	}
	d->sig_hup = evsignal_new(d->base, SIGHUP, on_hup, d);
	d->sig_term = evsignal_new(d->base, SIGTERM, on_term, d);
	d->sig_int = evsignal_new(d->base, SIGINT, on_term, d);
	d->sig_usr1 = evsignal_new(d->base, SIGUSR1, on_usr1, d);
	if (!d->sig_hup || !d->sig_term || !d->sig_int || !d->sig_usr1 || evsignal_add(d->sig_hup, NULL) ||
	    evsignal_add(d->sig_term, NULL) || evsignal_add(d->sig_int, NULL) || evsignal_add(d->sig_usr1, NULL)) {
		GW_ERR("cannot install signal handlers");
		goto err;
	}
	gw_signals_hold(false); /* held since start-up (main.c) */
	d->cap_sessions = d->conf->gateway.max_sessions;
	d->cap_memory = d->conf->gateway.memory_limit;
	{
		struct gw_live *live = gw_live_make(d, d->conf);
		if (!live) {
			GW_ERR("out of memory");
			goto err;
		}
		gw_live_publish(d, live);
	}
	for (unsigned i = 0; i < d->n_workers; i++) {
		d->workers[i].id = i;
		d->workers[i].d = d;
		d->workers[i].port = d->port;
	}
	if ((ret = gw_sessions_init(d))) {
		GW_ERR("cannot set up sessions: %s", strerror(-ret));
		goto err;
	}
	if ((ret = gw_alog_init(d))) {
		if (ret == -ENOMEM)
			GW_ERR("cannot set up the access log: %s", strerror(-ret));
		goto err;
	}
	for (; started < GW_N_SIDES; started++)
		if ((ret = gw_sides[started]->start(d))) {
			GW_ERR("%s: cannot start: %s", gw_sides[started]->name, strerror(-ret));
			goto err_sides;
		}
	for (unsigned i = 0; i < GW_N_SIDES; i++)
		gw_sides[i]->routes(d);
	for (uint32_t i = 0; i < d->conf->n_routes; i++)
		log_route_buffers("", &d->conf->routes[i]);
	gw_backends_publish(d);
	if ((ret = gw_health_start(d))) {
		GW_ERR("cannot start health checks: %s", strerror(-ret));
		goto err_workers;
	}
	d->sweep_timer = event_new(d->base, -1, EV_PERSIST, sweep_tick, d);
	if (!d->sweep_timer || event_add(d->sweep_timer, &(struct timeval){.tv_sec = 1})) {
		GW_ERR("cannot arm the route sweep timer");
		goto err_workers;
	}
	if (gw_privs_check(d->conf)) /* every thread as gw_privs_drop left it, before the workers run */
		goto err_workers;
	if (start_workers(d))
		goto err_workers;
	atomic_store_explicit(&d->state, GW_SERVING, memory_order_release);
	GW_NOTICE("serving: %u worker(s), %u route(s)", d->n_workers, d->conf->n_routes);
	if (d->ready_fd >= 0) {
		ret = (int)write(d->ready_fd, "1", 1);
		close(d->ready_fd);
		d->ready_fd = -1;
	}
	event_base_dispatch(d->base);
	status = 0;
	GW_NOTICE("stopped");
err_workers:
	stop_workers(d);
	gw_health_stop(d);
err_sides:
	while (started)
		gw_sides[--started]->stop(d);
err:
	gw_alog_fini(d); /* the workers are stopped: what they logged last is written */
	gw_sessions_fini(d);
	gw_live_fini(d); /* the workers are stopped */
	/* freeing a signal event puts back the default action, which for all four ends the process: a
	 * reload or a log reopen asked for while main tears DPDK down would kill it mid-way (its runtime
	 * directory left behind, the exit status the signal's) */
	gw_signals_hold(true);
	if (d->sweep_timer)
		event_free(d->sweep_timer);
	if (d->drain_timer)
		event_free(d->drain_timer);
	if (d->sig_hup)
		event_free(d->sig_hup);
	if (d->sig_term)
		event_free(d->sig_term);
	if (d->sig_int)
		event_free(d->sig_int);
	if (d->sig_usr1)
		event_free(d->sig_usr1);
	gw_stats_stop(d);
	event_base_free(d->base);
	return status;
}
