/* Sessions: relay bytes between two streams with backpressure, propagate half-closes and aborts.
 *
 * A session never buffers anything of its own: it moves bytes from one stream's receive buffer into
 * the other stream's send buffer (write) and only then releases them at the source (consume). When
 * the destination is full the source keeps its bytes, so its window (TCP) or credits (rsocket) stay
 * closed until the destination drains: backpressure crosses the gateway with zero copies held here.
 *
 * Pure logic: no DPDK, no verbs, no allocation. The owner allocates struct xlt_session (from a
 * per-worker pool), starts it, and gets it back through owner->done. One thread per session. */
#ifndef XLT_SESSION_H
#define XLT_SESSION_H

#include "session-t.h"

/* Starts S on the accepted stream A. For XLT_SESSION_RELAY, B is the far-side stream (CONNECTING or
 * OPEN), or NULL to attach it later (xlt_session_attach); it must be NULL for echo and discard. The session installs A's and B's events and owns both
 * streams until owner->done. STATS and OWNER outlive the session; LIMITS (NULL: none) is copied. */
void xlt_session_start(struct xlt_session *s, enum xlt_session_kind kind, struct xlt_stream *a,
		       struct xlt_stream *b, struct xlt_route_stats *stats, const struct xlt_session_owner *owner,
		       const struct xlt_session_limits *limits);

/* Attaches the far-side stream B (CONNECTING or OPEN) to relay session S started with B = NULL: the
 * owner could not open B at once (a transient shortage) and retried. Until then A's bytes stay in A's
 * buffer. If the owner gives up it calls xlt_session_abort with the connect failure's reason. */
void xlt_session_attach(struct xlt_session *s, struct xlt_stream *b);

/* Gives relay session S LEN bytes to send to end B before any of A's: a header such as PROXY
 * protocol's. PRE stays the owner's and must outlive the session. B takes them like any byte, within
 * its send space (a short write waits for on_writable, and A's bytes wait behind them), but they are
 * not A's: they count in no byte counter and make no progress for the limits. They go as soon as B is
 * open, whether A sends anything or not. Call it before A's bytes reach B (right after
 * xlt_session_start, whose far side is still connecting): returns 0, -EALREADY once some have,
 * -EINVAL for other kinds or LEN above 65535. */
int xlt_session_preamble(struct xlt_session *s, const uint8_t *pre, size_t len);

/* Call it now and then (every 100 ms; NOW from owner->now_ns): accounts the time of a backpressure
 * episode still under way, so the blocked-time counters grow while a direction stays blocked, not
 * only when it ends; and enforces the session's limits, aborting it with the limit's reason. Progress
 * is judged by the bytes each direction moved since the previous call, so the datapath pays nothing
 * for it. A blocked direction tries to move bytes again on every call (a destination may have room
 * yet not have said so, or have lacked memory that no event announces coming back), and once more
 * before its stall limit is judged. Cheap when nothing is due. */
void xlt_session_tick(struct xlt_session *s, uint64_t now);

/* Aborts both ends (drain timeout, shutdown); done follows once the streams report closed. */
void xlt_session_abort(struct xlt_session *s, enum xlt_end_reason reason);

/* Moves what can be moved now in both directions (also called from the stream events). */
void xlt_session_pump(struct xlt_session *s);

/* Maps a stream's on_closed error to an end reason. */
enum xlt_end_reason xlt_end_reason_of(int err, bool connecting);

extern const char *const xlt_end_reason_names[XLT_END_COUNT];

#endif
