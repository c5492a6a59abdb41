/* The daemon's shared state: one struct gw_daemon, owned by the control thread, and one struct
 * gw_worker per datapath lcore.
 *
 * Threads: the control thread (EAL main lcore) runs the libevent base: signals, the stats endpoint,
 * config reloads, rdma_cm events. Workers run gw_worker_main() on their own lcores. Every field shared
 * between the two says who writes it and who reads it; nothing shared is locked. */
#ifndef GW_GW_H
#define GW_GW_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "../conf/conf-t.h"
#include "../translate/metric-t.h"

#define GW_MAX_WORKERS 64
#define GW_VERSION     "0.1.0"

struct event_base;
struct event;
struct evhttp;
struct eth_port;
struct eth_stack;
struct ib_worker;
struct ib_ctl;
struct gw_metrics;
struct xlt_stream;
struct conf_route;

/* Counters of one worker: written by that worker only, read by the control thread (relaxed). */
struct gw_worker_stats {
	uint64_t loops;		  /* iterations of the poll loop */
	uint64_t busy_loops;	  /* iterations that found work */
	uint64_t idle_sleeps;	  /* naps taken while idle */
	uint64_t rx_packets;	  /* packets taken from the worker's RX queue */
	uint64_t sessions_active; /* gauge */
};

extern const struct xlt_metric_desc gw_worker_metrics[];
extern const unsigned gw_worker_n_metrics;

struct gw_worker {
	unsigned id;	   /* also the port queue it owns */
	unsigned lcore;
	bool stop;	   /* written by control, read by the worker (atomic) */
	uint64_t idle_sleep_us; /* copied before launch */
	struct eth_port *port; /* NULL: no Ethernet port */
	struct gw_daemon *d;
	struct eth_stack *eth; /* this worker's TCP/IP engine (eth_glue.c), NULL without a port */
	struct ib_worker *ib;  /* this worker's IB engine (ib_glue.c) */
	struct gw_worker_stats st;
};

enum gw_state {
	GW_STARTING,
	GW_SERVING,
	GW_DRAINING,
	GW_STOPPING,
};

struct gw_daemon {
	/* control thread only */
	struct conf *conf;
	const char *conf_path;
	struct event_base *base;
	struct evhttp *http;
	struct event *sig_hup, *sig_term, *sig_int, *drain_timer;
	struct timespec started;   /* CLOCK_MONOTONIC */
	uint64_t drain_deadline_ns;
	uint64_t reloads_ok;
	uint64_t reloads_failed;
	uint64_t drain_aborted;    /* sessions aborted when the drain timeout passed */
	int ready_fd;		   /* -1, or the pipe telling the launching parent that start-up succeeded */

	enum gw_state state; /* written by control; read by workers (atomic) */
	struct ib_ctl *ib;   /* rdma_cm side of the IB engine (ib_glue.c), control thread */
	struct eth_port *port;
	unsigned n_workers;
	struct gw_worker workers[GW_MAX_WORKERS];
};

/* Adds N to a counter that only the calling thread writes; readers on other threads load it relaxed. */
static inline void gw_bump(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
}

/* worker.c: the datapath loop, launched on each worker lcore. ARG is a struct gw_worker. */
int gw_worker_main(void *arg);

/* daemon.c: lifecycle on the control thread. Returns the process exit status. */
int gw_daemon_run(struct gw_daemon *d);
uint64_t gw_now_ns(void);
uint64_t gw_sessions_active(const struct gw_daemon *d);

/* Engine glue: each side of the gateway plugs into the daemon through these hooks.
 * eth_glue.c drives eth_side (the TCP/IP engine on the DPDK port), ib_glue.c drives ib_side (rdma_cm and
 * the rsocket engine). _start runs on the control thread before the workers launch, _poll on each worker
 * every loop (returns the amount of work done, 0 when idle), _routes on the control thread at start and
 * after every reload, _metrics while rendering /metrics and /stats, _stop after the workers stopped. */
int gw_eth_start(struct gw_daemon *d);
unsigned gw_eth_poll(struct gw_worker *w, uint64_t now_ns);
void gw_eth_routes(struct gw_daemon *d);
void gw_eth_metrics(struct gw_daemon *d, struct gw_metrics *m);
void gw_eth_stop(struct gw_daemon *d);
int gw_ib_start(struct gw_daemon *d);
unsigned gw_ib_poll(struct gw_worker *w, uint64_t now_ns);
void gw_ib_routes(struct gw_daemon *d);
void gw_ib_metrics(struct gw_daemon *d, struct gw_metrics *m);
void gw_ib_stop(struct gw_daemon *d);

/* stats.c: the HTTP endpoint on [gateway] stats. Returns 0 or -errno. */
int gw_stats_start(struct gw_daemon *d);
void gw_stats_stop(struct gw_daemon *d);

#endif
