/* Backend pools: a route whose connect names several tcp: (or ib:) destinations spreads its sessions
 * over them (backend.c), skipping those that health checks found down (health.c), that reset their
 * sessions before sending a byte (the passive check, gw_backends_eject) or that an operator set to
 * drain or maintenance.
 *
 * Who owns what:
 *  - struct gw_backend is one destination of one route NAME (route name + endpoint). It outlives
 *    reloads: a reload that rebuilds the route object keeps the backend objects whose endpoint is
 *    still in the pool, so their health, admin state, counters and active sessions carry on. The
 *    control thread creates and frees them (a backend no route object names, with no session and no
 *    check out, is freed by gw_backends_sweep).
 *  - struct gw_pool belongs to one route object (immutable once the route is published, except each
 *    worker's round-robin cursor): the backends in config order, their weights and limits, and an
 *    interleaved weighted schedule for round robin.
 *  - Which backends may take new sessions (health up and admin ready) is decided on the control
 *    thread and published to the workers in the struct gw_live snapshot (live.c): one usable bit per
 *    backend slot, tagged with the backend's serial so that a slot reused by a newer backend never
 *    reads as the old one's. A worker picks from the snapshot it took at the top of its round, so the
 *    datapath reads no state that changes under it, takes no lock and allocates nothing.
 *  - Per-backend counters: active sessions are one atomic per backend (every worker and every route
 *    object of that name add to it; leastconn and max= read it); totals and connect failures are per
 *    worker, written by that worker only. */
#ifndef GW_BACKEND_H
#define GW_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "../conf/conf-t.h"
#include "gw.h"

struct gw_metrics;
struct gw_check;

/* Counters of one backend on one worker: written by that worker only, read by control
 * (translate/counter.h); on a cache line of their own. */
struct gw_backend_wstats {
	alignas(64) uint64_t sessions_total; /* sessions sent to the backend (each connect attempt) */
	uint64_t
	    connect_failures; /* far-side connects that failed (each was retried elsewhere if time allowed) */
	uint64_t early_resets; /* sessions the backend reset before sending a byte (passive check) */
};

/* A run of early resets ejects a backend only once it came from this many different clients (or
 * eject_after, if fewer): a client can provoke resets (bytes a server rejects by closing with unread
 * data), so one client alone must not steer everyone's sessions off healthy backends. */
#define GW_RUN_SOURCES 3

struct gw_backend {
	/* immutable */
	char route[CONF_NAME_MAX + 1];
	char name[CONF_EP_STRLEN]; /* "198.18.0.2:80", "[2001:db8::10]:80", "ib:198.19.0.1:9001": its
	                              name in /metrics, POST /backends, the access log */
	struct conf_endpoint ep; /* tcp: or ib: */
	uint32_t serial;         /* unique in the daemon's life; tags its slot in the snapshot */
	unsigned slot;           /* its index in struct gw_live's backend arrays */
	uint64_t hkey;           /* keyed hash of the endpoint (source balancing) */
	/* any thread (atomic): sessions holding it now, all workers and route objects */
	_Atomic uint32_t active;
	/* workers: sessions in a row it reset before its first byte (a served session clears it), the
	 * clients of that run (gw_run_sources: up to GW_RUN_SOURCES different ones, 0 = free), and
	 * whether one was served since control last looked */
	_Atomic uint32_t reset_run;
	_Atomic uint64_t run_src[GW_RUN_SOURCES];
	_Atomic bool served;
	/* control thread only */
	unsigned refs;       /* pools (route objects) naming it */
	uint32_t admin;      /* enum conf_backend_state in force */
	uint32_t conf_admin; /* what the config said last: a reload that changes it applies it */
	bool up;             /* health: checks passed (always true while its route has no checks) */
	unsigned rise_run, fall_run;
	uint32_t check_interval_ms; /* its current route's, 0 when nothing checks it (out of every pool,
	                             * or its route runs no checks); a check out may carry an older
	                             * route's */
	uint64_t next_check_ns;
	bool checking; /* a check is out (its record belongs to worker 0 until the result comes back) */
	bool pooled;   /* a current route's pool lists it (gw_backends_routes) */
	bool ejected;  /* passive check: out until eject_until */
	uint64_t eject_until_ns;
	unsigned ejections; /* in a row, without a served session between (doubles the time) */
	uint64_t checks_passed, checks_failed;
	uint64_t check_ns_last, check_ns_sum;        /* latency of passed checks (connect, send, expect) */
	struct gw_check *chk;                        /* health.c's record, allocated on the first check */
	LIST_ENTRY(gw_backend) link;                 /* d->backends */
	struct gw_backend_wstats st[GW_MAX_WORKERS]; /* st[i] written by worker i only */
};

#define GW_RR_MAX (CONF_MAX_BACKENDS * 100) /* weights are 1..100 */

struct gw_pool {
	unsigned n;
	struct gw_backend *b[CONF_MAX_BACKENDS]; /* referenced (refs) */
	uint32_t weight[CONF_MAX_BACKENDS];
	uint32_t max[CONF_MAX_BACKENDS]; /* 0 = no limit of its own */
	unsigned sched_len;              /* sum of the weights */
	uint8_t sched[GW_RR_MAX];        /* smooth weighted round robin order, computed once */
	struct {
		alignas(64) uint32_t pos; /* worker i's position (schedule, leastconn ties): worker i only */
	} rr[GW_MAX_WORKERS];
};

/* Control: the pool of route config C, finding or creating the backend objects of C's name (state
 * carried over). NULL (ENOMEM) for none made; echo/discard routes get NULL too (check c->n_backends). */
struct gw_pool *gw_pool_create(struct gw_daemon *d, const struct conf_route *c);
/* Control: drops P's references (the backends go at the next gw_backends_sweep if unused). */
void gw_pool_destroy(struct gw_pool *p);

/* Worker: picks a usable backend of R's pool for a session from CLIENT (gw_client_key), not one
 * of TRIED (bit i = backend i), per the route's balance. Reserves a place in it (active + 1, within
 * its max=). Returns it and its index in *IDX, or NULL when none is left. A session counts on it
 * once a connect to it is tried (gw_backend_tried): a retry for a shortage of ours (no connection
 * object this instant) counts nothing. */
struct gw_backend *gw_pool_pick(struct gw_worker *w, struct gw_route *r, uint64_t client, uint64_t tried,
                                unsigned *idx);
/* Worker: whether a backend of R's pool is newer than the worker's snapshot (made by a reload the
 * worker's round began before): a pick that found nothing usable may find it next round. */
bool gw_pool_unpublished(const struct gw_worker *w, const struct gw_route *r);
/* Worker: how many backends of R's pool a pick could choose now: usable, below their max=, not in
 * TRIED. */
unsigned gw_pool_untried(const struct gw_worker *w, const struct gw_route *r, uint64_t tried);
/* Worker: the key source balancing hashes for the client of stream A accepted by route R: an IB peer's
 * port GID when its connect request carried one, else its IPv4 address (network order). */
uint64_t gw_client_key(struct gw_daemon *d, const struct gw_route *r, const struct xlt_stream *a);
/* Worker: the session on B ended (or its connect failed: FAILED counts it). */
void gw_backend_release(struct gw_worker *w, struct gw_backend *b, bool failed);
/* Worker: a session on B is over, B's side open once: B reset it before sending a byte (EARLY_RESET)
 * or it served it (SERVED: bytes came from B). The passive check (gw_backends_eject) reads these. */
void gw_backend_outcome(struct gw_worker *w, struct gw_backend *b, bool early_reset, bool served,
                        const struct xlt_ip *client);
/* Control, every health tick: ejects a backend that reset eject_after sessions in a row before
 * their first byte (never a pool's last usable one) and lets it back after eject_time. */
void gw_backends_eject(struct gw_daemon *d, uint64_t now_ns);
/* Worker: a session's connect to B started, or failed at once (not for a shortage of ours). */
static inline void gw_backend_tried(struct gw_worker *w, struct gw_backend *b)
{
	xlt_counter_add(&b->st[w->id].sessions_total, 1);
}

/* Control: a new snapshot with the backends' usable bits, published (on ENOMEM the old one stays and
 * the next health tick tries again). */
void gw_backends_publish(struct gw_daemon *d);
/* Control: fills L's backend arrays from the backends' state (gw_live_make). */
void gw_backends_fill(const struct gw_daemon *d, struct gw_live *l);
/* Control: as a reload's routes ROUTES (N) go in (gw_routes_commit), each backend follows the check
 * settings of its current route and a state= the file changed. */
void gw_backends_routes(struct gw_daemon *d, struct gw_route *const *routes, unsigned n);
/* Control: sets the admin state of backend NAME of route ROUTE; WHO (the client, "ADDR port N") is
 * named in the log line of a change. 0, -ENOENT. */
int gw_backend_set_state(struct gw_daemon *d, const char *route, const char *name, enum conf_backend_state s,
                         const char *who);
/* Control: frees the backends nothing uses; gw_backends_free frees all (workers stopped). */
void gw_backends_sweep(struct gw_daemon *d);
void gw_backends_free(struct gw_daemon *d);
void gw_backend_metrics(struct gw_daemon *d, struct gw_metrics *m);
extern const char *const gw_backend_state_names[4]; /* up, down, drain, maint */

/* health.c: active checks. gw_health_start (control, after the engines started): the rings and the
 * tick; gw_health_poll (worker 0, every round): runs the checks posted to it; gw_health_stop
 * (control, workers stopped). */
int gw_health_start(struct gw_daemon *d);
unsigned gw_health_poll(struct gw_worker *w, uint64_t now_ns);
void gw_health_stop(struct gw_daemon *d);

#endif
