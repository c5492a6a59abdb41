/* Ethernet side glue: one TCP/IP engine (eth_side/stack.h) per worker on the worker's port queue.
 *
 * Start-up (control thread): one engine per worker, sharing a random flow key so every worker agrees
 * on who owns a flow, linked by SPSC rings for frames that land on the wrong queue.
 *
 * Listeners follow the routes without locks: after each (re)load, the control thread sends every
 * worker, over that worker's own SPSC message ring, one message per route with listen = tcp:PORT (a
 * referenced struct gw_route pointer) and then a COMMIT marker. The worker opens or updates those
 * listeners in its own engine and, on COMMIT, closes the ones the batch did not name. A listener keeps
 * its route referenced until its last connection is released, then puts it (the control thread's
 * sweep frees routes nobody holds). On drain, each worker closes its listeners itself.
 *
 * Accepted connections go to gw_session_accept (the listen hooks); a refusal resets the connection. The
 * session code opens TCP far sides through gw_eth_side.connect, on the same worker (active opens pick a local
 * port that hashes back to it). */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "../conf/conf.h"
#include "../eth_side/port.h"
#include "../eth_side/stack.h"
#include "../ib_side/ib.h"
#include "../translate/ip.h"
#include "gw.h"
#include "log.h"
#include "metrics.h"

#define CTL_RING_SIZE 4096
#define MSG_COMMIT    ((void *)1)

struct glue_listener {
	uint16_t port;
	bool seen; /* named by the batch being received */
	struct gw_route *r;
};

/* Per worker: written by that worker only, except ctl (control enqueues, the worker dequeues). Cache
 * line aligned: the workers' entries of glue[] share no line. */
struct glue_worker {
	alignas(64) struct rte_ring *ctl;
	struct glue_listener lis[CONF_MAX_ROUTES];
	unsigned n_lis;
	/* routes of the batch whose new port found every listener slot taken: opened at COMMIT, once the
	 * ports the batch no longer names are closed (with the references their messages carried) */
	struct gw_route *later[CONF_MAX_ROUTES];
	unsigned n_later;
	bool drained;
	uint64_t frames_seen; /* for the worker's rx_packets counter */
	bool intr;            /* the port wakes the worker by interrupt: see eth_flush */
	uint64_t hot_until;   /* eth_flush */
	uint64_t now;		    /* the round's clock (eth_rx) */
	uint64_t reclaim_at;        /* see ETH_RECLAIM_NS */
	unsigned work;		    /* the round's work so far (eth_rx, eth_relay) */
};

/* An idle worker whose sent frames still point into lent IB buffer sets, while sets wait for their
 * last references (their connection gone), has the port free what its TX ring keeps
 * (eth_port_tx_reclaim) at most this often: nothing else would, until the next frame goes out. On
 * virtio_user each call sends a frame, and a few get it there. */
#define ETH_RECLAIM_NS 20000000

static struct glue_worker glue[GW_MAX_WORKERS];

/* A refusal (-errno) makes the engine reset S. */
static int hook_accept(void *warg, void *route, struct xlt_stream *s)
{
	struct gw_worker *w = warg;
	struct gw_route *r = gw_route_current(route); /* the listener may not have heard of a reload yet */

	/* accept_proxy: the session waits for the client's PROXY header (proxy.c) */
	if (r->conf.accept_proxy)
		return gw_proxy_wait(w, r, s);
	eth_tcp_open_window(s); /* (a reload turned accept_proxy off after its SYN: no header to wait for) */
	return gw_session_accept(w, r, s);
}

void gw_eth_open_window(struct xlt_stream *s)
{
	eth_tcp_open_window(s);
}

static void hook_route_get(void *route)
{
	gw_route_get(route);
}

static void hook_route_put(void *route)
{
	gw_route_put(route);
}

/* Every engine's listeners (the TCP engine admits in accept: no admit/unadmit). */
static const struct xlt_listen_hooks hooks = {
    .route_get = hook_route_get,
    .route_put = hook_route_put,
    .accept = hook_accept,
};

static struct eth_tcp_params params_of(const struct gw_route *r)
{
	return (struct eth_tcp_params){
		.rbuf_size = (uint32_t)r->conf.tcp_rbuf_size,
		.rbuf_start = r->conf.accept_proxy ? GW_PP_WINDOW : 0, /* (proxy.c) */
		.sbuf_size = (uint32_t)r->conf.tcp_sbuf_size,
		/* what the session budget counts (conf.h): where the route lends, copies are a PROXY header */
		.copy_size = conf_route_lends(&r->conf) ? CONF_LENT_TCP_COPY : 0,
		.connect_timeout_ms = r->conf.connect_timeout_ms,
	};
}

static void eth_stop(struct gw_daemon *d);

static int eth_start(struct gw_daemon *d)
{
	const struct conf_eth *e = &d->conf->eth;
	struct eth_stack *stacks[GW_MAX_WORKERS];
	uint64_t key[2];
	char name[RTE_RING_NAMESIZE];
	int ret;

	if (!d->port)
		return 0;
	if (getrandom(key, sizeof(key), 0) != sizeof(key))
		return -EIO;
	if ((ret = gw_kernel_tap_create(d)))
		return ret;
	for (unsigned i = 0; i < d->n_workers; i++) {
		struct gw_worker *w = &d->workers[i];
		/* sized for the start values: a reload stays within them (daemon.c) */
		uint32_t max_conns = 2 * d->cap_sessions + e->syn_backlog + 4096;
		struct eth_stack_conf c = {
			.worker = i,
			.n_workers = d->n_workers,
			.port_id = eth_port_id(d->port),
			.queue = (uint16_t)i,
			.pool = eth_port_pool(d->port),
			.addr = e->address.net.s_addr,
			.prefix = e->address.prefix,
			.gateway = e->gateway.s_addr,
			.prefix6 = e->address6.prefix,
			.mtu = e->mtu,
			.offloads = eth_port_offloads(d->port),
			.time_wait_ms = e->time_wait_ms,
			.syn_backlog = e->syn_backlog,
			.keepalive_ms = e->keepalive_ms,
			.keepalive_intvl_ms = e->keepalive_intvl_ms,
			.keepalive_probes = e->keepalive_probes,
			.user_timeout_ms = e->user_timeout_ms,
			.max_conns = max_conns,
		    .buffer_bytes = d->cap_memory,
			.flow_key = {key[0], key[1]},
			.exc = d->exc,
			.flow_peer = e->flow_peer.s_addr,
			.hooks = &hooks,
			.cb_arg = w,
		};

		memcpy(c.mac, eth_port_mac(d->port), 6);
		memcpy(c.addr6, &e->address6.addr, 16);
		memcpy(c.gateway6, &e->gateway6, 16);
		memcpy(c.flow_peer6, &e->flow_peer6, 16);
		w->eth = eth_stack_create(&c);
		if (!w->eth) {
			ret = -errno;
			goto err;
		}
		stacks[i] = w->eth;
		snprintf(name, sizeof(name), "ethctl%u", i);
		glue[i] = (struct glue_worker){.intr = eth_port_rx_intr(d->port)};
		glue[i].ctl = rte_ring_create(name, CTL_RING_SIZE, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!glue[i].ctl) {
			ret = -rte_errno;
			goto err;
		}
	}
	if (d->n_workers > 1 && (ret = eth_stack_link(stacks, d->n_workers)))
		goto err;
	if ((ret = gw_kernel_start(d)))
		goto err;
	{
		char a[INET_ADDRSTRLEN];
		unsigned o = eth_port_offloads(d->port);

		GW_INFO("Ethernet side: %s/%u, MTU %u, %u engine(s), idle workers %s, offloads:%s%s%s%s%s%s%s",
			inet_ntop(AF_INET, &e->address.net, a, sizeof(a)), e->address.prefix, e->mtu, d->n_workers,
			eth_port_rx_fd(d->workers[0].port, 0) >= 0 ? "wake on arriving frames" : "nap and poll",
			o & ETH_OFFLOAD_TX_CSUM ? " tx-checksum" : "", o & ETH_OFFLOAD_TSO ? " tso" : "",
			o & ETH_OFFLOAD_RX_CSUM ? " rx-checksum" : "", o & ETH_OFFLOAD_LRO ? " lro" : "",
			o & ETH_OFFLOAD_EXTMEM ? " lent-memory-tx" : "",
			o & ETH_OFFLOAD_DEVMEM ? " lent-dpdk-memory-tx" : "", o ? "" : " none");
	}
	return 0;
err:
	eth_stop(d);
	return ret;
}

static struct glue_listener *find(struct glue_worker *g, uint16_t port)
{
	for (unsigned i = 0; i < g->n_lis; i++)
		if (g->lis[i].port == port)
			return &g->lis[i];
	return NULL;
}

/* This worker's listener of R opened (1) or closed (-1): struct gw_route.listening. Called while
 * the listener holds its reference to R (before whatever puts it). */
static void listening_add(struct gw_route *r, int n)
{
	atomic_fetch_add_explicit(&r->listening, (uint32_t)n, memory_order_relaxed);
}

/* LISTEN R (with a reference the message carried). LATER: a port the engine has no slot for waits
 * for the COMMIT (a file that moves a route to a new port while every slot is taken: the old port
 * closes there). */
static void apply_listen(struct gw_worker *w, struct glue_worker *g, struct gw_route *r, bool later)
{
	uint16_t port = r->conf.listen.port;
	struct glue_listener *l = find(g, port);
	struct eth_tcp_params p = params_of(r);
	int ret;

	if (g->drained) {
		gw_route_put(r);
		return;
	}
	if (l && l->r == r) {
		gw_route_put(r); /* unchanged */
		l->seen = true;
		return;
	}
	if (l)
		listening_add(l->r, -1); /* it goes on under R; before the call, which puts l->r */
	ret = eth_tcp_listen(w->eth, port, &p, r); /* the listener adopts the reference */
	if (ret == -ENOSPC && later && g->n_later < CONF_MAX_ROUTES) {
		g->later[g->n_later++] = r;
		return;
	}
	if (ret) {
		GW_ERR("route %s: cannot listen on tcp:%u: %s", r->conf.name, port, strerror(-ret));
		atomic_store_explicit(&r->listen_err, ret, memory_order_relaxed);
		gw_route_put(r);
		return;
	}
	if (!l) {
		l = &g->lis[g->n_lis++];
		l->port = port;
	}
	l->r = r;
	l->seen = true;
	listening_add(r, 1);
}

static void apply_commit(struct gw_worker *w, struct glue_worker *g)
{
	for (unsigned i = 0; i < g->n_lis;) {
		if (g->lis[i].seen) {
			i++;
			continue;
		}
		listening_add(g->lis[i].r, -1); /* before unlisten, which may put the last reference */
		eth_tcp_unlisten(w->eth, g->lis[i].port);
		g->lis[i] = g->lis[--g->n_lis];
	}
	for (unsigned i = 0; i < g->n_later; i++)
		apply_listen(w, g, g->later[i], false);
	g->n_later = 0;
	for (unsigned i = 0; i < g->n_lis; i++)
		g->lis[i].seen = false; /* for the next batch */
}

/* The fd of the worker's RX queue, armed (eth_port_rx_arm). It announces all the side's work when
 * nothing else feeds the worker frames: one queue, so no steering ring from other workers. */
static int eth_arm(struct gw_worker *w, struct pollfd *fds, unsigned max, bool *covered)
{
	int fd = w->port ? eth_port_rx_fd(w->port, w->id) : -1;

	*covered = !w->port || (fd >= 0 && max && eth_port_queues(w->port) == 1);
	if (fd < 0 || !max)
		return 0;
	eth_port_rx_arm(w->port, w->id);
	fds[0] = (struct pollfd){.fd = fd, .events = POLLIN};
	return 1;
}

static void eth_woken(struct gw_worker *w, const struct pollfd *fds, unsigned n)
{
	(void)fds;
	if (n)
		eth_port_rx_disarm(w->port, w->id);
}

static unsigned eth_rx(struct gw_worker *w, uint64_t now_ns)
{
	struct glue_worker *g = &glue[w->id];
	void *msgs[32];
	unsigned n, work;
	uint64_t seen;

	if (!w->eth)
		return 0;
	g->now = now_ns;
	n = rte_ring_sc_dequeue_burst(g->ctl, msgs, 32, NULL);
	for (unsigned i = 0; i < n; i++) {
		if (msgs[i] == MSG_COMMIT)
			apply_commit(w, g);
		else
			apply_listen(w, g, msgs[i], true);
	}
	if (!g->drained && atomic_load_explicit(&w->d->state, memory_order_acquire) >= GW_DRAINING) {
		for (unsigned i = 0; i < g->n_lis; i++)
			listening_add(g->lis[i].r, -1);
		eth_tcp_unlisten_all(w->eth); /* drain: no new connections, the established ones go on */
		g->n_lis = 0;
		g->drained = true;
	}
	eth_stack_set_locals(w->eth, &w->live->locals); /* held for the round (gw_live_enter) */
	work = eth_stack_rx(w->eth, now_ns) + n;
	seen = eth_stack_stats(w->eth)->frames_in;
	if (seen != g->frames_seen) {
		xlt_counter_add(&w->st.rx_packets, seen - g->frames_seen);
		g->frames_seen = seen;
	}
	g->work = work;
	return work;
}

static unsigned eth_relay(struct gw_worker *w)
{
	unsigned work;

	if (!w->eth)
		return 0;
	work = eth_stack_relay(w->eth);
	glue[w->id].work += work;
	return work;
}

static unsigned eth_flush(struct gw_worker *w)
{
	struct glue_worker *g = &glue[w->id];
	unsigned work;

	if (!w->eth)
		return 0;
	work = eth_stack_flush(w->eth);
	if (!work && !g->work && g->now >= g->reclaim_at && w->port && w->d->ib &&
	    xlt_counter_read(&eth_stack_stats(w->eth)->tx_lent_mbufs) &&
	    xlt_counter_read(&ib_ctl_stats(w->d->ib)->buf_lent)) {
		g->reclaim_at = g->now + ETH_RECLAIM_NS;
		eth_port_tx_reclaim(w->port, w->id); /* not work: the worker may sleep */
	}
	/* Waking through a device interrupt costs kernel-thread hand-offs (vhost-net's worker signals
	 * an eventfd): in a request/response exchange the answer usually comes within a round trip, so
	 * for [gateway] busy_poll after Ethernet work the worker keeps polling, as after IB completions
	 * (ib.h). af_packet's ring socket is woken by the kernel directly: there polling on bought no
	 * latency and cost throughput (README, "Performance"). */
	if (!g->intr)
		return work;
	if (work || g->work)
		g->hot_until = g->now + w->live->busy_poll_ns;
	else if (g->now < g->hot_until)
		w->hot = true; /* the answer to what just went out is likely due */
	return work;
}

static void eth_routes(struct gw_daemon *d)
{
	void *msgs[CONF_MAX_ROUTES + 1];

	for (unsigned i = 0; i < d->n_workers; i++) {
		struct rte_ring *ring = glue[i].ctl;
		unsigned n = 0;

		if (!d->workers[i].eth || !ring)
			continue;
		for (unsigned k = 0; k < d->n_routes; k++)
			if (d->routes[k]->conf.listen.kind == CONF_EP_TCP)
				msgs[n++] = d->routes[k];
		msgs[n++] = MSG_COMMIT;
		for (unsigned k = 0; k + 1 < n; k++)
			gw_route_get(msgs[k]);
		/* the whole set or none of it: a COMMIT behind a dropped route would close its listener */
		if (!rte_ring_sp_enqueue_bulk(ring, msgs, n, NULL)) {
			for (unsigned k = 0; k + 1 < n; k++)
				gw_route_put(msgs[k]);
			GW_ERR("worker %u: control ring full, its listeners stay as they were until the next reload", i);
		}
	}
}

static unsigned eth_listeners(const struct gw_daemon *d)
{
	unsigned n = 0;

	for (unsigned i = 0; i < d->n_workers; i++)
		n += d->workers[i].eth != NULL;
	return n;
}

static struct xlt_stream *eth_connect(struct gw_worker *w, struct gw_route *r, const struct xlt_ip *addr,
                                      uint16_t port, uint64_t timeout_ms, int *err)
{
	struct eth_tcp_params p = params_of(r);

	p.connect_timeout_ms = timeout_ms;

	if (!w->eth) {
		*err = -ENETUNREACH;
		return NULL;
	}
	return eth_tcp_connect(w->eth, addr, port, &p, err);
}

static void eth_metrics(struct gw_daemon *d, struct gw_metrics *m)
{
	const void *bases[GW_MAX_WORKERS];
	char ids[GW_MAX_WORKERS][12];
	const char *labels[GW_MAX_WORKERS];
	unsigned n = 0;

	for (unsigned i = 0; i < d->n_workers; i++) {
		if (!d->workers[i].eth)
			continue;
		snprintf(ids[n], sizeof(ids[n]), "%u", i);
		labels[n] = ids[n];
		bases[n++] = eth_stack_stats(d->workers[i].eth);
	}
	if (n)
		gw_metrics_table(m, eth_stack_metrics, eth_stack_n_metrics, bases, n, "worker", labels);
	gw_worker_copy_metrics(d, m); /* both engines' copies; printed here, beside the engine's own */
	gw_kernel_metrics(d, m);
}

static void eth_stop(struct gw_daemon *d)
{
	gw_kernel_stop(d);
	for (unsigned i = 0; i < d->n_workers; i++) {
		struct glue_worker *g = &glue[i];
		void *msg;

		if (g->ctl) {
			while (rte_ring_sc_dequeue(g->ctl, &msg) == 0)
				if (msg != MSG_COMMIT)
					gw_route_put(msg);
			rte_ring_free(g->ctl);
			g->ctl = NULL;
		}
		eth_stack_destroy(d->workers[i].eth); /* its listeners put their routes */
		d->workers[i].eth = NULL;
		g->n_lis = 0;
	}
	gw_kernel_tap_destroy(d); /* after the engines: nothing punts to it any more */
}

/* The Ethernet engine keeps no connection the drain must wait for beyond the sessions: a closed TCP
 * connection's last segments leave in its worker's next round. */
static uint64_t eth_conns(const struct gw_daemon *d)
{
	(void)d;
	return 0;
}

const struct gw_side_ops gw_eth_side = {
    .name = "Ethernet side",
    .start = eth_start,
    .routes = eth_routes,
    .listeners = eth_listeners,
    .metrics = eth_metrics,
    .conns = eth_conns,
    .stop = eth_stop,
    .rx = eth_rx,
    .relay = eth_relay,
    .flush = eth_flush,
    .arm = eth_arm,
    .woken = eth_woken,
    .connect = eth_connect,
};
