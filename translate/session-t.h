/* Session types: one session joins the stream a listener accepted (end A) to its route's destination
 * (end B: another stream, or the echo/discard diagnostics). See session.h. */
#ifndef XLT_SESSION_T_H
#define XLT_SESSION_T_H

#include <stdbool.h>
#include <stdint.h>

#include "metric-t.h"
#include "stream-t.h"

enum xlt_session_kind {
	XLT_SESSION_RELAY,   /* A <-> B */
	XLT_SESSION_ECHO,    /* A -> A */
	XLT_SESSION_DISCARD, /* A -> nowhere */
};

/* Why a session ended or was never made; indexes xlt_route_stats.ends. */
enum xlt_end_reason {
	XLT_END_OK,		/* both directions closed in order */
	XLT_END_RESET,		/* a peer reset or vanished */
	XLT_END_CONNECT_REFUSED,
	XLT_END_CONNECT_TIMEOUT,
	XLT_END_CONNECT_FAILED, /* other connect errors (no route, no resources) */
	XLT_END_PROTOCOL,	/* a peer broke its protocol */
	XLT_END_ABORTED,	/* aborted by the gateway (drain timeout, shutdown) */
	/* reset by a limit of struct xlt_session_limits: */
	XLT_END_IDLE_TIMEOUT,	      /* no byte moved either way */
	XLT_END_ZERO_WINDOW_TIMEOUT,  /* a TCP peer took nothing (zero window) while bytes waited for it */
	XLT_END_CREDIT_STALL_TIMEOUT, /* an IB peer took nothing (no credits/space) while bytes waited */
	XLT_END_HALF_CLOSED_TIMEOUT,  /* one direction ended, the other's source stayed silent */
	XLT_END_COUNT,
};

/* Counters of one route on one worker: written by that worker only. */
struct xlt_route_stats {
	uint64_t sessions_active; /* gauge */
	uint64_t sessions_total;
	uint64_t ends[XLT_END_COUNT];
	uint64_t bytes_a_to_b; /* from the listener side to the destination */
	uint64_t bytes_b_to_a;
	uint64_t blocked_ns_a_to_b; /* time a direction waited for the other side to take bytes */
	uint64_t blocked_ns_b_to_a;
	uint64_t blocked_a_to_b; /* times a direction became blocked */
	uint64_t blocked_b_to_a;
	uint64_t connect_ns_sum; /* far-side connect latency: sum and count */
	uint64_t connects;
	/* gauges: bytes a direction's source holds that its destination cannot take yet (the receive
	 * buffer backlog behind closed credits or a closed window), as of the last attempt to move them */
	uint64_t held_a_to_b;
	uint64_t held_b_to_a;
};

/* How long a session may make no progress before it is reset (ns; 0 = no limit). The owner fills it
 * from the route's config; the session keeps a copy. Checked by xlt_session_tick, so a limit is
 * enforced within one tick period of its expiry. */
struct xlt_session_limits {
	uint64_t idle_ns;	  /* no byte moved in either direction */
	uint64_t stall_ns;	  /* a direction held bytes its destination took none of */
	uint64_t half_closed_ns; /* relay: one direction ended, the other moved nothing (and was not blocked) */
	/* the end reason of a stall whose destination is end A (0) or B (1): what that end's peer is
	 * (XLT_END_ZERO_WINDOW_TIMEOUT for TCP, XLT_END_CREDIT_STALL_TIMEOUT for IB) */
	uint8_t stall_reason[2];
};

/* The session's view of the world: the owner (gateway) provides the clock and hears when a session
 * is over so it can recycle it. */
struct xlt_session;
struct xlt_session_owner {
	void *arg;
	uint64_t (*now_ns)(void *arg);
	/* The session ended (REASON) and both ends were released; the owner may reuse S. */
	void (*done)(void *arg, struct xlt_session *s, enum xlt_end_reason reason);
	/* Optional: end B of relay session S failed to connect (ERR, from on_closed). Return true to try
	 * another destination: the session releases B and waits, its A untouched, for the owner to
	 * xlt_session_attach a new B or xlt_session_abort it; false ends the session as without a retry. */
	bool (*retry)(void *arg, struct xlt_session *s, int err);
	/* Optional: the session is over (s->reason is final) and its streams are all CLOSED but not yet
	 * released, so the owner may read what they say (xlt_stream_ops.info, byte counts, peers) for its
	 * access log. done follows at once. */
	void (*ended)(void *arg, struct xlt_session *s);
};

struct xlt_session_end {
	struct xlt_session *s;
	unsigned idx; /* 0 = A, 1 = B */
};

/* Worker-private; never seen by other threads except through (id, gen). */
struct xlt_session {
	uint32_t id;
	uint32_t gen;
	enum xlt_session_kind kind;
	bool live;
	struct xlt_stream *st[2];	 /* A, B (B NULL for echo/discard, or once released) */
	struct xlt_session_end ends[2]; /* event args of A and B */
	bool blocked[2];		 /* direction A->B (0) and B->A (1) waits for its destination */
	uint64_t blocked_since[2];
	uint64_t held[2]; /* this session's share of stats->held_* */
	uint64_t lent[2]; /* bytes taken by each direction's destination (write_lent), not reported sent */
	bool delivered[2]; /* some lent bytes were reported sent (on_sent) since the last tick */
	bool stuck[2]; /* lent bytes of which none was reported sent for a tick: blocked on delivery */
	size_t unsent[2]; /* the destination's unsent bytes (its op) as of the last tick */
	bool copy_stuck[2]; /* copied bytes it held, none delivered, for a tick: blocked on delivery */
	bool b_open;		/* B finished connecting (a close before that is a connect failure) */
	uint64_t connect_start_ns; /* also when the session started */
	uint64_t connect_ns;	   /* how long B took to connect (0: not connected, or open at once) */
	uint64_t blocked_ns[2];	   /* this session's share of stats->blocked_ns_* */
	enum xlt_end_reason reason; /* first cause of the end */
	int8_t reset_by;	    /* the end (0 A, 1 B) whose peer's reset (-ECONNRESET) set reason; -1: none */
	struct xlt_session_limits limits;
	uint64_t moved[2];	/* bytes each direction moved, as of the last tick */
	uint64_t moved_ns[2];	/* when each direction last moved bytes (seen by a tick), or began */
	uint64_t half_ns;	/* when the tick first saw one direction ended (0: not yet) */
	/* bytes B gets before any of A's (xlt_session_preamble; the owner's memory) and how many it took */
	const uint8_t *pre;
	uint16_t pre_len, pre_off;
	struct xlt_route_stats *stats;
	const struct xlt_session_owner *owner;
	void *user; /* owner's pointer (e.g. its route) */
};

#endif
