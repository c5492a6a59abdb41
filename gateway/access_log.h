/* Access log: one JSON line per session at its end (and, with [gateway] access_log_interval, a
 * progress line for every running session that often), to a file or to syslog.
 *
 * Off the datapath: a worker fills a fixed-size record (struct gw_alog_rec) in place in its own
 * bounded single-producer/single-consumer ring and moves on: no allocation, no syscall, no
 * formatting. When the ring is full the record is dropped and counted; a worker never waits. The
 * control thread drains every ring on a timer, formats the lines and writes them in batches; a
 * failed write (a full disk, EIO) loses that batch, counted, and never blocks it (regular files do
 * not block on a full disk; syslog datagrams are sent with MSG_DONTWAIT).
 *
 * Threads: gw_alog_reserve/commit on the ring's worker only; everything else on the control thread. */
#ifndef GW_ACCESS_LOG_H
#define GW_ACCESS_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../conf/conf-t.h"
#include "../translate/counter.h"
#include "../translate/stream-t.h"

#define GW_ALOG_RING_SIZE 2048 /* records per worker ring (a power of two) */
#define GW_ALOG_LINE_MAX  1536 /* longest formatted line, newline included */

enum gw_alog_event {
	GW_ALOG_END,      /* the session is over */
	GW_ALOG_PROGRESS, /* the session runs on (access_log_interval) */
};

/* One end of a session as the record sees it: the client (the listener side) or the backend. */
struct gw_alog_end {
	uint8_t side;    /* enum conf_endpoint_kind */
	uint8_t present; /* a stream existed: addr, port and info are its own */
	uint16_t port;   /* host order */
	uint16_t via_port; /* the real TCP peer that sent a PROXY header giving addr (0: none) */
	struct xlt_ip addr; /* either family */
	struct xlt_ip via_addr;
	struct xlt_stream_info info;
};

/* A record: filled by a worker, formatted by the control thread. Plain data, fixed size. */
struct gw_alog_rec {
	uint64_t uid;
	uint64_t start_ns, now_ns; /* CLOCK_MONOTONIC: the session began; the record was made */
	uint64_t connect_ns;       /* how long the backend took to connect (valid when connected) */
	uint64_t bytes[2];         /* client -> backend, backend -> client */
	uint64_t blocked_ns[2];    /* time each direction waited for its destination */
	struct gw_alog_end client, backend;
	uint8_t event;     /* enum gw_alog_event */
	uint8_t reason;    /* enum xlt_end_reason (GW_ALOG_END) */
	uint8_t connected; /* the backend's connection was established (relay routes) */
	char route[CONF_NAME_MAX + 1];
};

/* A worker's ring, grouped by writer, each group on cache lines of its own. */
struct gw_alog_ring {
	/* written by the worker: the records it committed (release), read by the control thread
	 * (acquire); records lost to a full ring, read by the control thread (translate/counter.h) */
	_Atomic uint64_t head __attribute__((aligned(64)));
	uint64_t dropped;
	/* written by the control thread: the records it consumed (release), read by the worker
	 * (acquire) */
	_Atomic uint64_t tail __attribute__((aligned(64)));
	/* [tail, head): written by the worker before it moves head, read by the control thread */
	struct gw_alog_rec slot[GW_ALOG_RING_SIZE] __attribute__((aligned(64)));
};

/* Worker: the next free record of R to fill, or NULL (ring full: counted as dropped). Fill it, then
 * gw_alog_commit. */
static inline struct gw_alog_rec *gw_alog_reserve(struct gw_alog_ring *r)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed); /* its own */

	if (head - tail >= GW_ALOG_RING_SIZE) {
		xlt_counter_add(&r->dropped, 1);
		return NULL;
	}
	return &r->slot[head & (GW_ALOG_RING_SIZE - 1)];
}

/* Worker: records R can take now without dropping any. */
static inline unsigned gw_alog_room(struct gw_alog_ring *r)
{
	return GW_ALOG_RING_SIZE - (unsigned)(atomic_load_explicit(&r->head, memory_order_relaxed) -
	                                      atomic_load_explicit(&r->tail, memory_order_acquire));
}

/* Worker: hands the record gw_alog_reserve returned to the control thread. */
static inline void gw_alog_commit(struct gw_alog_ring *r)
{
	atomic_store_explicit(&r->head, atomic_load_explicit(&r->head, memory_order_relaxed) + 1,
	                      memory_order_release);
}

/* Control thread: the oldest record not consumed yet, or NULL; gw_alog_pop consumes it. */
static inline const struct gw_alog_rec *gw_alog_peek(struct gw_alog_ring *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed); /* its own */

	return head == tail ? NULL : &r->slot[tail & (GW_ALOG_RING_SIZE - 1)];
}

static inline void gw_alog_pop(struct gw_alog_ring *r)
{
	atomic_store_explicit(&r->tail, atomic_load_explicit(&r->tail, memory_order_relaxed) + 1,
	                      memory_order_release);
}

/* Formats R as one JSON line (newline included) into BUF (LEN >= GW_ALOG_LINE_MAX). REAL_NS and
 * MONO_NS are the same instant on CLOCK_REALTIME and CLOCK_MONOTONIC: the record's time is converted
 * with them. Returns the line's length. Pure (unit-tested). */
size_t gw_alog_format(const struct gw_alog_rec *r, uint64_t real_ns, uint64_t mono_ns, char *buf, size_t len);

struct gw_daemon;
struct gw_metrics;
struct gw_worker;
struct gw_session;
struct conf;

/* Worker: a record of session S (EV: its end, from the session's ended hook, or its progress) into
 * W's ring, or a drop counted there. NOW: CLOCK_MONOTONIC. */
void gw_alog_session(struct gw_worker *w, struct gw_session *s, enum gw_alog_event ev, uint64_t now);

/* Control thread. gw_alog_init: the workers' rings and the target of D's config (0, or -errno with
 * the reason logged: an unwritable path fails start-up). gw_alog_fini: drains what is left (workers
 * stopped), closes. */
int gw_alog_init(struct gw_daemon *d);
void gw_alog_fini(struct gw_daemon *d);
/* -t: whether C's file opens as the daemon would open it at start (0, or -errno with the reason
 * logged); it is created as the start would create it. The daemon's own stdout/stderr and syslog are
 * not checked. */
int gw_alog_check(const struct conf *c);
/* Reload, in two steps: gw_alog_reload_prepare opens C's target when it differs from the running one (0,
 * or -errno logged: the reload fails and nothing changed); gw_alog_reload_commit switches to it (cannot
 * fail). gw_alog_reload_abort drops a prepared target. */
int gw_alog_reload_prepare(struct gw_daemon *d, const struct conf *c);
void gw_alog_reload_commit(struct gw_daemon *d);
void gw_alog_reload_abort(struct gw_daemon *d);
/* SIGUSR1: reopens the file by its name (logrotate moved it away). */
void gw_alog_reopen(struct gw_daemon *d);
/* Drains every worker's ring and writes the lines (the timer's work; also at exit). */
void gw_alog_drain(struct gw_daemon *d);
void gw_alog_metrics(struct gw_daemon *d, struct gw_metrics *m);

#endif
