/* The daemon's shared state: one struct gw_daemon, owned by the control thread, and one struct
 * gw_worker per datapath lcore.
 *
 * Threads: the control thread (EAL main lcore) runs the libevent base: signals, the stats endpoint,
 * config reloads, rdma_cm events. Workers run gw_worker_main() on their own lcores. Every field shared
 * between the two says who writes it and who reads it; nothing shared is locked. */
#ifndef GW_GW_H
#define GW_GW_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <time.h>

#include "../conf/conf-t.h"
#include "../eth_side/local-t.h"
#include "../translate/counter.h"
#include "../translate/ip.h"
#include "../translate/metric-t.h"
#include "../translate/ratelim-t.h"
#include "../translate/session-t.h"

#define GW_MAX_WORKERS 64
/* PROXY protocol v2 (proxy.c): reasons a header is refused (the parser's results and 4 more), and
 * the largest header ibgwd sends: 16 + IPv6 addresses 36 + TLVs: unique id 3 + 16, route 3 + name,
 * GID 3 + 16, QPN 3 + 4 */
#define GW_PP_REASONS 16
#define GW_PP_HDR_MAX  (16 + 36 + 19 + 3 + CONF_NAME_MAX + 19 + 7)
/* The receive window of an accept_proxy connection until its header passed (proxy.c): a balancer's
 * first flight (ten segments) fits, and 1024 waiting connections hold 16 MiB a worker at most. */
#define GW_PP_WINDOW (16u * 1024u)
#define GW_VERSION     "0.1.0"
/* backend objects at once (backend.h): every route's pool, and those that removed routes still hold */
#define GW_MAX_BACKENDS (2 * CONF_MAX_ROUTES * CONF_MAX_BACKENDS)

struct event_base;
struct event;
struct eth_port;
struct eth_stack;
struct ib_worker;
struct ib_ctl;
struct gw_metrics;
struct gw_alog_ring;
struct xlt_stream;
struct conf_route;
struct gw_pool;
struct gw_backend;

/* Values the workers read that a reload may change. The control thread builds a new snapshot on every
 * (re)load and publishes it whole (live.c, RCU-style): a worker takes the current one at the top of
 * each round, so it never sees half a reload, and an old snapshot is freed only after every worker
 * has started a new round since it was replaced. Immutable once published. Everything else a worker
 * reads is either fixed before the workers launch (pool sizes, struct gw_worker's copied fields) or
 * lives in a referenced struct gw_route; the workers never read d->conf, which a reload frees. */
struct gw_live {
	uint32_t max_sessions;  /* [gateway] max_sessions, capped at d->cap_sessions */
	uint64_t idle_sleep_us; /* [gateway] idle_sleep */
	uint64_t busy_poll_ns;  /* [gateway] busy_poll */
	/* backend pools (backend.c): slot i describes the backend whose serial is bk_serial[i]; a
	 * backend whose serial differs from its slot's is not in this snapshot yet (not usable) */
	uint32_t bk_serial[GW_MAX_BACKENDS];
	uint8_t bk_usable[GW_MAX_BACKENDS]; /* health up and admin ready */
	bool alog_on;		  /* [gateway] access_log is set: sessions leave records */
	uint64_t alog_interval_ns; /* [gateway] access_log_interval (0: end records only) */
	struct eth_local_set locals; /* addresses on the kernel TAP (kernel.c): the engines own them too */
	/* control thread only, once retired: */
	uint64_t retired_epoch; /* freed when every worker has reported this epoch */
	SLIST_ENTRY(gw_live) retired_link; /* on d->live_retired */
};

/* Counters of one worker: written by that worker only, read by the control thread (relaxed). */
struct gw_worker_stats {
	uint64_t loops;		  /* iterations of the poll loop */
	uint64_t busy_loops;	  /* iterations that found work */
	uint64_t idle_sleeps;	  /* naps taken while idle */
	uint64_t idle_wakeups;	  /* naps ended by an fd (a frame, a completion), not the timeout */
	uint64_t poll_hits;	  /* busy_poll windows that found the work they polled for */
	uint64_t poll_misses;	  /* busy_poll windows that ended in a nap all the same */
	uint64_t rx_packets;	  /* packets taken from the worker's RX queue */
	uint64_t sessions_active; /* gauge */
};

extern const struct xlt_metric_desc gw_worker_metrics[];
extern const unsigned gw_worker_n_metrics;

/* One worker's counters of a route: written by that worker only (translate/counter.h), read by
 * control; on cache lines of their own, so workers relaying on one route do not share a line. */
struct gw_route_wstats {
	alignas(64) struct xlt_route_stats s;
};

/* A route of the running config. Routes outlive reloads while anything uses them: a reload that drops
 * or changes a route marks the old object removed (its listeners close, its sessions finish) and the
 * control thread frees it once nothing holds it. Whoever keeps a struct gw_route pointer beyond a call
 * (a listener, a connection on its way to a worker, a session) holds a reference: gw_route_get/put. */
struct gw_route {
	struct conf_route conf; /* immutable */
	/* any thread: atomic read-modify-writes */
	_Atomic uint32_t refs;
	_Atomic uint32_t active;                      /* admitted sessions */
	/* the admitted sessions of every version of the route (the objects of its name a reload changed
	 * and the ones still running sessions): what max_sessions is checked against, so that a reload
	 * that changes the route (or lowers its limit) does not start it from 0. Shared by those objects;
	 * made, shared and freed by the control thread (route_table.c) */
	struct gw_route_share *share;
	_Atomic uint64_t rejected[3];                 /* by enum gw_reject */
	_Atomic uint64_t proxy_errors[GW_PP_REASONS]; /* accept_proxy connections reset for their header,
	                                               * by reason (proxy.c) */
	/* its listener (gw_side_ops.routes), written by whoever opens and closes it (IB: the control
	 * thread; TCP: each worker for its own engine), read by the control thread (/health, /metrics):
	 * listeners open for it now, and the last failure to open one (-errno; 0: none) */
	_Atomic uint32_t listening;
	_Atomic int32_t listen_err;
	/* written by control (release), read by anyone (acquire) */
	_Atomic bool removed;
	/* a removed route that a reload replaced by one of the same name and listener: that one
	 * (referenced), so a connection its listener accepts before it learns of the reload is admitted
	 * under the new config instead of being refused. Written by control (release: first before
	 * `removed`, then each time a later reload replaces the route it names, so that it always names
	 * the newest: a chain of versions would keep every one of them while the oldest has a session),
	 * read by anyone (acquire). */
	_Atomic(struct gw_route *) successor;
	/* control thread: the live epoch after which no worker can still be reading it through another
	 * route's successor (0: none pointed at it) */
	uint64_t unlinked_epoch;
	LIST_ENTRY(gw_route) removed_link; /* d->removed_routes; control thread */
	uint64_t added_ns; /* control thread: when a reload added it (0: it came with the start) */
	struct gw_pool *pool;	       /* backend.c: tcp:/ib: destinations; NULL for echo/discard */
	/* control thread only: the counters of freed route objects of the same name (a changed route's
	 * predecessor, once its last session ended), so that a route's series never go backwards */
	uint64_t past_rejected[3];
	struct xlt_route_stats past;
	uint64_t past_proxy_errors[GW_PP_REASONS];
	struct gw_route_wstats st[GW_MAX_WORKERS]; /* st[i]: worker i's */
};

struct gw_route_share {
	_Atomic uint32_t active; /* any thread: atomic read-modify-writes */
	unsigned users;          /* control thread: route objects sharing it */
};

enum gw_reject {
	GW_REJECT_ACL,	    /* source not in the route's allow list */
	GW_REJECT_LIMIT,    /* route max_sessions reached */
	GW_REJECT_GLOBAL,   /* [gateway] max_sessions reached, or draining */
};

/* One pooled session of a worker. */
struct gw_session {
	struct xlt_session x; /* first */
	struct gw_route *route;
	struct gw_worker *w;
	SLIST_ENTRY(gw_session) free_link; /* w->free_sessions */
	/* daemon-unique id of this session (worker id in the top 8 bits, that worker's count below):
	 * names the session in the access log, /stats and PROXY v2's UNIQUE_ID TLV */
	uint64_t uid;
	/* far side not opened yet (transient shortage, e.g. no spare IB connection object): retried
	 * from gw_sessions_poll until the route's connect_timeout */
	bool pending;
	LIST_ENTRY(gw_session) pending_link; /* w->pending, while pending */
	uint64_t retry_ns, deadline_ns; /* deadline: the route's connect_timeout from the session's start */
	/* the pool's backend the far side is (being) connected to (NULL: none now), its index, the
	 * backends whose connect failed for this session (bit i), and the last failure */
	struct gw_backend *be;
	unsigned be_idx;
	uint64_t tried;
	int last_err;
	/* the endpoint of the last connect started (the access log's backend once B is gone: retried,
	 * failed); kind unset (0 port) before any */
	struct conf_endpoint last_ep;
	uint64_t client; /* the client's key for source balancing (gw_client_key) */
	/* the PROXY v2 header its far side gets first (route key proxy_protocol) */
	uint8_t pp[GW_PP_HDR_MAX];
	uint64_t next_progress_ns; /* its next access log progress record (access_log_interval) */
};

struct pollfd;

/* One worker. Its fields are grouped by writer, each group on its own cache lines (and the workers
 * of d->workers[] never share one): what the control thread writes while the worker runs does not
 * sit beside what the worker writes every round. */
struct gw_worker {
	/* set by the control thread before launch, read-only while the worker runs */
	unsigned id; /* also the port queue it owns */
	unsigned lcore;
	unsigned n_sessions;   /* size of the session pool (d->cap_sessions) */
	struct eth_port *port; /* NULL: no Ethernet port */
	struct gw_daemon *d;
	struct eth_stack *eth; /* this worker's TCP/IP engine (eth_glue.c), NULL without a port */
	struct ib_worker *ib;  /* this worker's IB engine (ib_glue.c) */
	/* access log records (access_log.h): this worker produces, the control thread consumes */
	struct gw_alog_ring *alog;
	/* written by control (release), read by the worker (acquire) */
	alignas(64) _Atomic bool stop;
	_Atomic bool abort_all; /* abort every session (drain timeout); the worker clears it */
	/* written by the worker, read by control */
	/* the last live epoch this worker saw at the top of a round: from then on it holds no snapshot
	 * older than the one published with that epoch (release; control loads acquire) */
	alignas(64) _Atomic uint64_t qs_epoch;
	struct gw_worker_stats st; /* translate/counter.h */
	/* worker only: */
	alignas(64) const struct gw_live *live; /* this round's snapshot (gw_live_enter) */
	bool hot; /* a side expects work within [gateway] busy_poll (set by rx or flush this round) */
	bool polling; /* in a busy_poll window: empty rounds yield instead of napping */
	struct gw_session *sessions; /* pool of n_sessions */
	SLIST_HEAD(, gw_session) free_sessions;
	struct xlt_session_owner owner;
	LIST_HEAD(, gw_session) pending; /* sessions waiting to retry their far-side connect */
	uint64_t tick_ns;	    /* next pass over live sessions (backpressure time) */
	uint64_t uid_next;          /* the next session's uid (count part) */
};

enum gw_state {
	GW_STARTING,
	GW_SERVING,
	GW_DRAINING,
	GW_STOPPING,
};

struct gw_daemon {
	/* control thread only: the running config. Replaced and freed by a reload, so never read by a
	 * worker (values they need are in struct gw_live, the route objects or copied before launch). */
	struct conf *conf;
	const char *conf_path;
	bool verbose; /* -v: debug logging, whatever log_level the file (or a reload's) says */
	struct event_base *base;
	struct event *sig_hup, *sig_term, *sig_int, *sig_usr1, *drain_timer;
	struct timespec started;   /* CLOCK_MONOTONIC */
	uint64_t drain_deadline_ns;
	bool drain_aborting;
	uint64_t reloads_ok;
	uint64_t reloads_failed;
	unsigned restart_pending; /* keys of the file that differ from what runs and need a restart */
	/* Sizes fixed at start, immutable after: the session pools (per worker), the IB and TCP connection
	 * pools and the TCP buffer arenas are made for them. A reload applies max_sessions and
	 * memory_limit up to these; above, the rest needs a restart. */
	uint32_t cap_sessions; /* [gateway] max_sessions at start */
	uint64_t cap_memory;   /* [gateway] memory_limit at start */
	/* RCU-style publication (live.c): written by control (release), read by everyone (acquire) */
	_Atomic(struct gw_live *) live;
	_Atomic uint64_t live_epoch;
	/* written by control (release), read by the workers (acquire) */
	_Atomic enum gw_state state;
	/* any thread (atomic read-modify-writes): admitted sessions, all routes */
	_Atomic uint32_t sessions_admitted;
	/* control thread only: */
	SLIST_HEAD(, gw_live) live_retired; /* control only: replaced snapshots in their grace period */
	uint64_t drain_aborted;    /* sessions aborted when the drain timeout passed */
	int ready_fd;		   /* -1, or the pipe telling the launching parent that start-up succeeded */

	struct ib_ctl *ib;   /* rdma_cm side of the IB engine (ib_glue.c), control thread */
	/* routes of the running config (control thread writes; see struct gw_route) */
	unsigned n_routes;
	struct gw_route *routes[CONF_MAX_ROUTES];
	LIST_HEAD(, gw_route) removed_routes; /* still referenced; freed by gw_routes_sweep */
	struct event *sweep_timer;
	struct eth_port *port;
	/* backend pools (backend.c, health.c), control thread only */
	LIST_HEAD(, gw_backend) backends;
	uint32_t bk_serial_next;
	bool bk_dirty; /* a usable bit changed and is not published yet */
	/* admin state changes (POST /backends) published at once in the current second */
	struct xlt_window bk_admin_pub;
	uint8_t bk_slot_used[GW_MAX_BACKENDS];
	uint64_t bk_key[2]; /* random key of source balancing's hash (stable for the daemon's life) */
	struct event *health_timer;
	/* the exception path (kernel.c), control thread only: the TAP, its service timer, the rtnetlink
	 * socket following its addresses, and the current set (copied into every live snapshot) */
	struct eth_exc *exc;
	struct event *exc_timer, *nl_ev;
	int nl_fd;
	struct eth_local_set locals;
	uint64_t locals_gone_ns[ETH_LOCAL_MAX]; /* control: when each of them left the TAP (kernel.c) */
	/* control (kernel.c): a dump of the TAP's addresses under way, whether its first reply came,
	 * whether it must be asked again at its end (another overrun, or the kernel says it was
	 * interrupted), and which addresses it (or a notification after its first reply) listed */
	bool locals_dumping, locals_replied, locals_redump;
	bool locals_seen[ETH_LOCAL_MAX];
	unsigned n_workers;
	struct gw_worker workers[GW_MAX_WORKERS];
};

/* live.c: publication of struct gw_live.
 * gw_live_make (control): a new snapshot of C's values, capped at the sizes fixed at start; NULL
 * (ENOMEM). gw_live_publish (control): makes L current (taking it over) and retires the previous one.
 * gw_live_sweep (control, periodically): frees retired snapshots whose grace period is over.
 * gw_live_fini (control, workers stopped): frees them all. */
struct gw_live *gw_live_make(const struct gw_daemon *d, const struct conf *c);
void gw_live_publish(struct gw_daemon *d, struct gw_live *l);
void gw_live_sweep(struct gw_daemon *d);
/* Control: the oldest epoch a worker reported (gw_live_enter): what was unlinked before the epoch's
 * publication, no worker can still be reading (UINT64_MAX without workers). */
uint64_t gw_live_seen(const struct gw_daemon *d);
void gw_live_fini(struct gw_daemon *d);

/* Worker, at the top of every round (its quiescent point: it holds no snapshot across it): takes the
 * current snapshot and reports the epoch it saw. The epoch is loaded before the pointer, and the
 * control thread stores the pointer before the epoch, so the snapshot taken is at least as new as
 * the epoch reported; the release store orders this worker's reads of older snapshots before it. */
static inline const struct gw_live *gw_live_enter(struct gw_worker *w)
{
	uint64_t e = atomic_load_explicit(&w->d->live_epoch, memory_order_acquire);

	w->live = atomic_load_explicit(&w->d->live, memory_order_acquire);
	atomic_store_explicit(&w->qs_epoch, e, memory_order_release);
	return w->live;
}

/* worker.c: the datapath loop, launched on each worker lcore. ARG is a struct gw_worker.
 * gw_worker_copy_metrics: the copied-bytes family (both engines' copies, by direction). */
int gw_worker_main(void *arg);
void gw_worker_copy_metrics(struct gw_daemon *d, struct gw_metrics *m);

/* daemon.c: lifecycle on the control thread. Returns the process exit status. */
int gw_daemon_run(struct gw_daemon *d);
uint64_t gw_now_ns(void);
/* Milliseconds from NOW_NS to DEADLINE_NS, rounded up; 1 at least (a timeout of 0 means none). */
static inline uint64_t gw_ms_left(uint64_t deadline_ns, uint64_t now_ns)
{
	return deadline_ns > now_ns ? (deadline_ns - now_ns + 999999) / 1000000 : 1;
}
/* Blocks SIGHUP, SIGUSR1, SIGTERM and SIGINT in the calling thread (HOLD; main, before any thread
 * exists, and gw_daemon_run before it frees their handlers) or unblocks them once their handlers are
 * in place: what came meanwhile is handled then (a stop asked for during start-up drains at once). */
void gw_signals_hold(bool hold);
uint64_t gw_sessions_active(const struct gw_daemon *d);

/* The two sides of the gateway, one interface (HAProxy style: a table of named operations).
 * eth_glue.c implements it for eth_side (the TCP/IP engine on the DPDK port), ib_glue.c for ib_side
 * (rdma_cm and the rsocket engine). The daemon (daemon.c, stats.c) and the workers (worker.c) call
 * both sides through it, in the order of gw_sides[]: Ethernet first, since the IB side registers the
 * Ethernet frames as its external memory when it starts (gw_extmem_start); stop goes in reverse.
 * Calls are per round or per event, never per packet. A side without its engine (no port, no RDMA
 * device) still answers every operation: it does nothing and reports no work. */
struct gw_side_ops {
	const char *name; /* "Ethernet side", "IB side": for the log */
	/* Control thread. start: before the workers launch, 0 or -errno (on failure the side stopped
	 * itself). routes: at start and after every reload (after gw_routes_apply): the side's listeners
	 * follow d->routes. metrics: its families of /metrics and /stats. conns: connections of the
	 * engine that still exist and that a drain waits for (one just closed may still have its last
	 * message to send). stop: after the workers stopped (also after a failed start of a later side). */
	int (*start)(struct gw_daemon *d);
	void (*routes)(struct gw_daemon *d);
	/* listeners a route on this side's port has open when all is well (gw_route.listening): one per
	 * worker engine (Ethernet), or one (IB); 0: the side has no engine (no port, no RDMA device), so
	 * neither its listeners nor its destinations can be served */
	unsigned (*listeners)(const struct gw_daemon *d);
	void (*metrics)(struct gw_daemon *d, struct gw_metrics *m);
	uint64_t (*conns)(const struct gw_daemon *d);
	void (*stop)(struct gw_daemon *d);
	/* Worker, the phases of its round (worker.c), each returning the amount of work done (0: idle):
	 * rx takes what the devices have (no stream event fires), relay fires the stream events (ops
	 * only queue), flush hands what was queued to the devices. A side that expects work within
	 * [gateway] busy_poll sets w->hot in rx or flush: the worker keeps polling. */
	unsigned (*rx)(struct gw_worker *w, uint64_t now_ns);
	unsigned (*relay)(struct gw_worker *w);
	unsigned (*flush)(struct gw_worker *w);
	/* Worker, sleeping without missing work: arm fills at most MAX of FDS with the fds that turn
	 * readable when the side has work, armed, and returns how many; *COVERED is false when some of
	 * its work has no fd (then the worker naps and polls). woken, after the sleep, gets back the N
	 * fds arm filled, with revents (none fired: 0), and consumes or disarms them. */
	int (*arm)(struct gw_worker *w, struct pollfd *fds, unsigned max, bool *covered);
	void (*woken)(struct gw_worker *w, const struct pollfd *fds, unsigned n);
	/* Worker: a far side of route R to ADDR:PORT, for the session code and health checks, that gives
	 * up after TIMEOUT_MS (what is left of the session's connect_timeout, or a check's timeout).
	 * Returns a CONNECTING (or OPEN) stream whose events report the outcome, or NULL with *ERR set
	 * (-ENETUNREACH without the engine). */
	struct xlt_stream *(*connect)(struct gw_worker *w, struct gw_route *r, const struct xlt_ip *addr,
	                              uint16_t port, uint64_t timeout_ms, int *err);
};

enum { GW_SIDE_ETH, GW_SIDE_IB, GW_N_SIDES };
extern const struct gw_side_ops gw_eth_side, gw_ib_side;
extern const struct gw_side_ops *const gw_sides[GW_N_SIDES]; /* in start order (daemon.c) */

/* The side that serves endpoints of KIND: CONF_EP_TCP or CONF_EP_IB. */
static inline const struct gw_side_ops *gw_side_of(enum conf_endpoint_kind kind)
{
	return kind == CONF_EP_TCP ? &gw_eth_side : &gw_ib_side;
}

/* kernel.c: the exception TAP ([eth] kernel_tap) and the addresses on it, control thread.
 * _tap_create makes the TAP (before the engines, which punt to it), _start opens the rtnetlink socket
 * and the service timer, _stop closes them; the TAP itself goes with gw_kernel_tap_destroy. */
int gw_kernel_tap_create(struct gw_daemon *d);
int gw_kernel_start(struct gw_daemon *d);
void gw_kernel_stop(struct gw_daemon *d);
void gw_kernel_tap_destroy(struct gw_daemon *d);
void gw_kernel_metrics(struct gw_daemon *d, struct gw_metrics *m);

/* extmem.c: the Ethernet frames as IB external memory (after the Ethernet side started, within the IB
 * side's start, before any IB connection). */
void gw_extmem_start(struct gw_daemon *d);
void gw_extmem_metrics(struct gw_daemon *d, struct gw_metrics *m);

/* route_table.c: the route table (control thread).
 * gw_routes_apply (control): builds d->routes from C's routes, keeping unchanged routes (and their
 * counters and sessions), marking dropped or changed ones removed. All or nothing: on -ENOMEM the
 * route table is as it was. Call before gw_*_routes. gw_routes_sweep (control, every second): frees
 * removed routes nothing references any more, their counters carried on by the route of their name.
 * gw_routes_free (control, workers stopped): frees them all. gw_routes_metrics (control): the per-route
 * families of /metrics, one sample per route name. */
int gw_routes_apply(struct gw_daemon *d, const struct conf *c);
/* gw_routes_apply in two steps, for a reload that publishes between them (control): _prepare makes
 * the new route objects and backends (0, or -ENOSPC / -ENOMEM with nothing changed); then either
 * _commit, which installs them and retires the old routes (workers follow them to their successors
 * from then on, so the new backends must be in a published snapshot first: _commit fills LIVE, made
 * after _prepare, with the new pools' backends and publishes it before anything else; NULL: nothing
 * is published), or _abort. */
int gw_routes_prepare(struct gw_daemon *d, const struct conf *c);
void gw_routes_commit(struct gw_daemon *d, struct gw_live *live);
void gw_routes_abort(struct gw_daemon *d);
void gw_routes_sweep(struct gw_daemon *d);
void gw_routes_free(struct gw_daemon *d);
void gw_routes_metrics(struct gw_daemon *d, struct gw_metrics *m);
/* Control thread: can route R be served now (its listener open on every engine, the engines of both
 * its sides there)? A listener a reload just added counts as open for GW_LISTEN_GRACE_NS unless one
 * failed (workers open theirs within a round). Else false, with the reason written into WHY (a
 * line without its route's name). */
#define GW_LISTEN_GRACE_NS (2 * 1000000000ull)
bool gw_route_ready(const struct gw_daemon *d, const struct gw_route *r, uint64_t now_ns, char *why,
                    size_t len);
/* Any thread: the route R stands for now: R, or the route that replaced it (gw_route.successor). */
struct gw_route *gw_route_current(struct gw_route *r);
/* Any thread: a reference to R (struct gw_route says who must hold one). */
void gw_route_get(struct gw_route *r);
void gw_route_put(struct gw_route *r);

/* session.c: sessions (workers; admission on any thread).
 * Any thread: would a session from ADDR (either family; unspecified: a source with no IP address) be
 * admitted now? 0 or -EACCES (allow list), -ESHUTDOWN (route removed, draining), -EBUSY (the
 * route's max_sessions; checked before the gateway's), -ENOSPC ([gateway] max_sessions). Counts the
 * rejection. Use it to refuse early (IB CONNECT_REQUEST); gw_session_accept checks again. */
int gw_session_check(struct gw_daemon *d, struct gw_route *r, const struct xlt_ip *addr);
/* Worker: a listener of route R accepted stream S (OPEN, peer_addr set). Admits it (allow list,
 * limits), opens the far side (echo/discard here, tcp and ib through their side's connect) and
 * starts the session, which then owns S. Returns 0, or gw_session_check's errors, -ENOMEM or connect errors: S was
 * not taken, the caller must reset and release it. */
int gw_session_accept(struct gw_worker *w, struct gw_route *r, struct xlt_stream *s);
/* Any thread: the two halves of admission, for a listener that reserves the slots before it accepts
 * (IB, at the connect request): gw_session_admit checks as gw_session_check does and takes a route and
 * a global slot (0 or gw_session_check's errors, counted); gw_session_unadmit gives them back. Worker:
 * gw_session_start starts the session of S with slots already taken; on 0 the session owns them,
 * on failure it gives them back. */
int gw_session_admit(struct gw_daemon *d, struct gw_route *r, const struct xlt_ip *addr);
void gw_session_unadmit(struct gw_daemon *d, struct gw_route *r);
int gw_session_start(struct gw_worker *w, struct gw_route *r, struct xlt_stream *s);
/* Worker, every loop: retries pending far-side connects, and every 100 ms accounts backpressure time
 * still under way. Returns the amount of work done. */
unsigned gw_sessions_poll(struct gw_worker *w, uint64_t now_ns);
/* Worker: abort every session (drain timeout). */
void gw_session_abort_all(struct gw_worker *w);
/* Control thread, before the workers launch: every worker's session pool, then the route table of
 * d->conf (gw_routes_apply). 0 or -ENOMEM. gw_sessions_fini, after they stopped: frees both. */
int gw_sessions_init(struct gw_daemon *d);
void gw_sessions_fini(struct gw_daemon *d);
/* proxy.c: PROXY protocol v2.
 * gw_proxy_send (worker): builds session S's header (its client A, uid, route, IB identity) and
 * hands it to the session as the first bytes of its far side. 0 or -errno.
 * gw_proxy_wait (worker): a listener of route R (accept_proxy = v2) accepted S: it waits for its
 * header, then goes to gw_session_accept with the address the header gave; a bad or late header
 * resets it (counted). Returns 0 (S is taken), or -EACCES: S's real peer is not in R's proxy_from
 * (counted, logged rate-limited); the caller resets S. When every waiting slot is taken, the
 * longest waiting connection is reset for S (counted as overload).
 * gw_proxy_poll (worker, every loop): resets connections whose header is late. Returns the work done.
 * gw_proxy_init/fini (control, before the workers run / after they stopped): the waiting pools.
 * gw_proxy_metrics (control): ibgw_proxy_header_errors_total. */
int gw_proxy_send(struct gw_session *s, struct xlt_stream *a);
int gw_proxy_wait(struct gw_worker *w, struct gw_route *r, struct xlt_stream *s);
unsigned gw_proxy_poll(struct gw_worker *w, uint64_t now_ns);
int gw_proxy_init(struct gw_daemon *d);
void gw_proxy_fini(struct gw_daemon *d);
void gw_proxy_metrics(struct gw_daemon *d, struct gw_metrics *m);
/* ib_glue.c (worker): the fabric identity of the peer of S, a stream the IB side accepted (GID, QPN);
 * 0, or -EINVAL for other streams. */
int gw_ib_peer_id(const struct xlt_stream *s, uint8_t gid[16], uint32_t *qpn);
/* eth_glue.c (worker): offers S, a connection a TCP listener accepted, its whole receive buffer (an
 * accept_proxy route's connections start with GW_PP_WINDOW of it). */
void gw_eth_open_window(struct xlt_stream *s);

/* stats.c: the HTTP endpoint on [gateway] stats. Returns 0 or -errno. gw_stats_stale (control):
 * what the last render showed changed (a reload): the next request renders anew. */
int gw_stats_start(struct gw_daemon *d);
void gw_stats_stop(struct gw_daemon *d);
void gw_stats_stale(void);
/* Where a request head ends (its first empty line: "\r\n\r\n", "\n\n" or "\n\r\n"), found across
 * reads: each read's new bytes go through gw_http_head_scan once, so a client sending its head a byte
 * at a time costs time in proportion to the head, not to its square. Zeroed for a new request. */
struct gw_http_head {
	size_t len;    /* bytes scanned; once complete, the head's length, its empty line included */
	uint8_t state; /* the bytes last scanned: 0 none that count, 1 "\n", 2 "\n\r" */
	bool complete;
};
/* Scans the N bytes at P, which follow those H scanned already, up to the end of the head. Returns
 * whether the head is complete (then H->len is its length and the bytes after it are not H's). Pure. */
bool gw_http_head_scan(struct gw_http_head *h, const char *p, size_t n);

#endif
