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
	struct eth_port *port;
	unsigned n_workers;
	struct gw_worker workers[GW_MAX_WORKERS];
};

/* worker.c: the datapath loop, launched on each worker lcore. ARG is a struct gw_worker. */
int gw_worker_main(void *arg);

/* daemon.c: lifecycle on the control thread. Returns the process exit status. */
int gw_daemon_run(struct gw_daemon *d);
uint64_t gw_now_ns(void);
uint64_t gw_sessions_active(const struct gw_daemon *d);

/* stats.c: the HTTP endpoint on [gateway] stats. Returns 0 or -errno. */
int gw_stats_start(struct gw_daemon *d);
void gw_stats_stop(struct gw_daemon *d);

#endif
