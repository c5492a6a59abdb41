/* Session relay logic (see session.h).
 *
 * Directions: 0 is A -> B (listener side to destination), 1 is B -> A. For echo both directions are
 * the one stream (A -> A); for discard A's bytes are consumed and dropped. Half-close: when a source's
 * peer is done and every byte of it has been handed to the destination, the destination is shut down
 * (TCP FIN <-> rsocket SHUTDOWN); the other direction keeps flowing. An error on either end aborts the
 * other; the session is over when every stream it holds has closed.
 *
 * Limits (xlt_session_tick): a session that makes no progress is reset, whatever its peers do.
 * Progress is bytes a direction moved; the tick compares each direction's count with the previous
 * tick's, so the datapath never reads a clock for it. Three ways to make none:
 *  - idle: no byte either way (idle_ns);
 *  - stall: a direction waits on a destination that takes nothing (a TCP zero window that never
 *    opens, an IB peer that never returns credits): stall_ns, one mechanism for both sides, since
 *    both show up the same way here, as a stream whose write() takes nothing;
 *  - half-closed: one direction passed its end of stream (a TCP FIN sent: FIN_WAIT; or received:
 *    CLOSE_WAIT) and the other's source sends nothing (half_closed_ns). A live direction that is
 *    blocked is not silent: its bytes wait for the destination, which is the stall limit's case. */
#include <errno.h>
#include <stddef.h>

#include "counter.h"
#include "session.h"

const char *const xlt_end_reason_names[XLT_END_COUNT] = {
	[XLT_END_OK] = "ok",
	[XLT_END_RESET] = "reset",
	[XLT_END_CONNECT_REFUSED] = "connect_refused",
	[XLT_END_CONNECT_TIMEOUT] = "connect_timeout",
	[XLT_END_CONNECT_FAILED] = "connect_failed",
	[XLT_END_PROTOCOL] = "protocol_error",
	[XLT_END_ABORTED] = "aborted",
	[XLT_END_IDLE_TIMEOUT] = "idle_timeout",
	[XLT_END_ZERO_WINDOW_TIMEOUT] = "zero_window_timeout",
	[XLT_END_CREDIT_STALL_TIMEOUT] = "credit_stall_timeout",
	[XLT_END_HALF_CLOSED_TIMEOUT] = "half_closed_timeout",
};

enum xlt_end_reason xlt_end_reason_of(int err, bool connecting)
{
	switch (err) {
	case 0: return XLT_END_OK;
	case -ECONNREFUSED: return XLT_END_CONNECT_REFUSED;
	case -ETIMEDOUT: return connecting ? XLT_END_CONNECT_TIMEOUT : XLT_END_RESET;
	case -EPROTO: return XLT_END_PROTOCOL;
	case -ECONNABORTED: return XLT_END_ABORTED;
	case -ECONNRESET:
	case -EPIPE: return connecting ? XLT_END_CONNECT_FAILED : XLT_END_RESET;
	default: return connecting ? XLT_END_CONNECT_FAILED : XLT_END_RESET;
	}
}

static struct xlt_stream *src_of(struct xlt_session *s, unsigned dir)
{
	return s->kind == XLT_SESSION_RELAY ? s->st[dir] : s->st[0];
}

static struct xlt_stream *dst_of(struct xlt_session *s, unsigned dir)
{
	switch (s->kind) {
	case XLT_SESSION_RELAY: return s->st[!dir];
	case XLT_SESSION_ECHO: return s->st[0];
	default: return NULL;
	}
}

static unsigned n_dirs(const struct xlt_session *s)
{
	return s->kind == XLT_SESSION_RELAY ? 2 : 1;
}

/* Bytes direction DIR has moved so far (what its source had consumed). */
static uint64_t dir_bytes(struct xlt_session *s, unsigned dir)
{
	struct xlt_stream *src = src_of(s, dir);

	return src ? src->bytes_in : 0;
}

/* Progress is counted from NOW on (the session began, or its far side opened). */
static void progress_from(struct xlt_session *s, uint64_t now)
{
	for (unsigned i = 0; i < 2; i++) {
		s->moved[i] = dir_bytes(s, i);
		s->moved_ns[i] = now;
	}
}

static void set_blocked(struct xlt_session *s, unsigned dir, bool blocked)
{
	uint64_t now;

	if (s->blocked[dir] == blocked)
		return;
	now = s->owner->now_ns(s->owner->arg);
	if (blocked) {
		s->blocked_since[dir] = now;
		xlt_counter_add(dir ? &s->stats->blocked_b_to_a : &s->stats->blocked_a_to_b, 1);
	} else {
		xlt_counter_add(dir ? &s->stats->blocked_ns_b_to_a : &s->stats->blocked_ns_a_to_b,
		                now - s->blocked_since[dir]);
		s->blocked_ns[dir] += now - s->blocked_since[dir];
	}
	s->blocked[dir] = blocked;
}

/* Records how many bytes direction DIR leaves waiting in its source (the route's occupancy gauge). */
static void set_held(struct xlt_session *s, unsigned dir, uint64_t n)
{
	if (s->held[dir] == n)
		return;
	/* wraps to a decrease */
	xlt_counter_add(dir ? &s->stats->held_b_to_a : &s->stats->held_a_to_b, n - s->held[dir]);
	s->held[dir] = n;
}

/* Counts N bytes as moved by direction DIR (taken by the destination, or dropped by discard). */
static void moved(struct xlt_session *s, unsigned dir, struct xlt_stream *src, struct xlt_stream *dst,
		  size_t n)
{
	src->bytes_in += n;
	if (dst)
		dst->bytes_out += n;
	xlt_counter_add(dir ? &s->stats->bytes_b_to_a : &s->stats->bytes_a_to_b, n);
}

/* pump_dir's zero-copy form: the destination takes references to the source's memory; the source
 * keeps the bytes (and their space) until the destination reports them sent (on_sent). Returns false
 * when the direction stays blocked or the session was aborted, true when the source has nothing more
 * to lend. */
static bool lend_dir(struct xlt_session *s, unsigned dir, struct xlt_stream *src, struct xlt_stream *dst)
{
	struct xlt_seg v[XLT_LEND_MAX];
	unsigned k;
	size_t offered, w;

	while ((k = src->ops->lend(src, s->lent[dir], v, XLT_LEND_MAX)) > 0) {
		if (dst->local_done) {
			xlt_session_abort(s, XLT_END_PROTOCOL); /* as in pump_dir */
			return false;
		}
		offered = 0;
		for (unsigned i = 0; i < k; i++)
			offered += v[i].len;
		w = dst->ops->write_lent(dst, v, k);
		if (w) {
			s->lent[dir] += w;
			moved(s, dir, src, dst, w);
		}
		if (w < offered) {
			set_held(s, dir, src->ops->backlog ? src->ops->backlog(src) : offered - w);
			set_blocked(s, dir, true);
			return false;
		}
	}
	return true;
}

/* Moves bytes of one direction until the source is empty or the destination full. */
static void pump_dir(struct xlt_session *s, unsigned dir)
{
	struct xlt_stream *src = src_of(s, dir), *dst = dst_of(s, dir);
	const uint8_t *p;
	size_t n, w;

	if (!src || src->state != XLT_STREAM_OPEN)
		return;
	if (s->kind == XLT_SESSION_RELAY && !dst)
		return; /* B not attached yet (connect retried by the owner): A's bytes wait, window closed */
	if (dst && dst->state != XLT_STREAM_OPEN) {
		/* closed: its peer ended both ways in order (an rsocket peer's DISCONNECT without a
		 * SHUTDOWN first), so what the source still has for it can never be delivered; the source
		 * is reset, as a TCP peer answers data for a closed socket, instead of its bytes waiting
		 * in a closed window until half_closed_timeout */
		if (dst->state == XLT_STREAM_CLOSED && src->ops->peek(src, &p) > 0)
			xlt_session_abort(s, XLT_END_RESET);
		return; /* connecting: A's bytes wait in A's buffer, its window/credits closed */
	}
	if (dir == 0 && s->pre_off < s->pre_len) {
		/* the preamble first, whether A sent anything or not; A's bytes wait behind it */
		s->pre_off = (uint16_t)(s->pre_off +
		                        dst->ops->write(dst, s->pre + s->pre_off, s->pre_len - s->pre_off));
		if (s->pre_off < s->pre_len) {
			set_blocked(s, dir, true);
			return;
		}
	}
	if (dst && src->ops->lend && dst->ops->write_lent) {
		if (!lend_dir(s, dir, src, dst))
			return;
		if (s->lent[dir] && s->stuck[dir])
			return; /* all lent, none delivered for a while: still blocked (xlt_session_tick) */
		goto drained;
	}
	while ((n = src->ops->peek(src, &p)) > 0) {
		if (dst && dst->local_done) {
			/* the destination was shut down yet bytes keep coming: cannot deliver them */
			xlt_session_abort(s, XLT_END_PROTOCOL);
			return;
		}
		w = dst ? dst->ops->write(dst, p, n) : n;
		if (w) {
			src->ops->consume(src, w);
			moved(s, dir, src, dst, w);
		}
		if (w < n) {
			/* without a backlog op, what peek shows is a lower bound (a ring may wrap) */
			set_held(s, dir, src->ops->backlog ? src->ops->backlog(src) : n - w);
			set_blocked(s, dir, true);
			return;
		}
	}
drained:
	set_held(s, dir, 0);
	set_blocked(s, dir, s->copy_stuck[dir]); /* (copies held undelivered: xlt_session_tick) */
	if (src->peer_done) {
		/* everything the source's peer sent has been handed over: pass its end of stream on
		 * (discard answers it by closing its own direction, so the peer sees an orderly close) */
		struct xlt_stream *to = dst ? dst : src;
		if (!to->local_done && to->state == XLT_STREAM_OPEN)
			to->ops->shutdown(to);
	}
}

void xlt_session_pump(struct xlt_session *s)
{
	if (!s->live)
		return;
	pump_dir(s, 0);
	if (s->live && s->kind == XLT_SESSION_RELAY)
		pump_dir(s, 1);
}

static void on_connected(void *arg)
{
	struct xlt_session_end *e = arg;
	struct xlt_session *s = e->s;

	if (e->idx == 1) {
		uint64_t now = s->owner->now_ns(s->owner->arg);
		s->b_open = true;
		s->connect_ns = now - s->connect_start_ns;
		xlt_counter_add(&s->stats->connect_ns_sum, s->connect_ns);
		xlt_counter_add(&s->stats->connects, 1);
		progress_from(s, now);
	}
	xlt_session_pump(s);
}

static void on_readable(void *arg)
{
	struct xlt_session_end *e = arg;

	/* bytes arrived at end idx: its outgoing direction is idx (A -> B is 0, B -> A is 1) */
	if (e->s->live)
		pump_dir(e->s, e->idx);
}

static void on_writable(void *arg)
{
	struct xlt_session_end *e = arg;
	struct xlt_session *s = e->s;

	/* room at end idx: the direction feeding it is the other one (echo: the same) */
	if (s->live)
		pump_dir(s, s->kind == XLT_SESSION_RELAY ? !e->idx : 0);
}

static void on_sent(void *arg, size_t n)
{
	struct xlt_session_end *e = arg;
	struct xlt_session *s = e->s;
	/* end idx is a destination: the direction feeding it is the other one (echo: the same) */
	unsigned dir = s->kind == XLT_SESSION_RELAY ? !e->idx : 0;
	struct xlt_stream *src = src_of(s, dir);

	if (n > s->lent[dir])
		n = s->lent[dir]; /* (more than it took would be the destination's bug: never trusted) */
	s->lent[dir] -= n;
	if (n)
		s->delivered[dir] = true;
	s->stuck[dir] = false;
	if (!s->live || !src || src->state != XLT_STREAM_OPEN)
		return;
	/* the bytes are delivered: only now does the source give their space back to its peer */
	src->ops->consume(src, n);
	pump_dir(s, dir); /* the source's end of stream may pass on now (all its bytes consumed) */
}

static void finish(struct xlt_session *s)
{
	for (unsigned i = 0; i < 2; i++)
		if (s->st[i] && s->st[i]->state != XLT_STREAM_CLOSED)
			return;
	for (unsigned i = 0; i < 2; i++) {
		set_blocked(s, i, false);
		set_held(s, i, 0);
	}
	if (s->owner->ended)
		s->owner->ended(s->owner->arg, s);
	for (unsigned i = 0; i < 2; i++)
		if (s->st[i]) {
			s->st[i]->ops->release(s->st[i]);
			s->st[i] = NULL;
		}
	s->live = false;
	xlt_counter_add(&s->stats->sessions_active, (uint64_t)-1);
	xlt_counter_add(&s->stats->ends[s->reason], 1);
	s->owner->done(s->owner->arg, s, s->reason);
}

static void on_closed(void *arg, int err)
{
	struct xlt_session_end *e = arg;
	struct xlt_session *s = e->s;
	struct xlt_stream *other = s->kind == XLT_SESSION_RELAY ? s->st[!e->idx] : NULL;
	bool connecting = e->idx == 1 && !s->b_open;

	if (connecting && err && s->reason == XLT_END_OK && other && other->state != XLT_STREAM_CLOSED &&
	    s->owner->retry && s->owner->retry(s->owner->arg, s, err)) {
		/* the owner tries another destination (a pool's next backend): A keeps its bytes meanwhile */
		s->st[1]->ops->release(s->st[1]);
		s->st[1] = NULL;
		s->pre_off = 0; /* (B never opened, so none of the preamble went: the next B gets it whole) */
		return;
	}
	if (err && s->reason == XLT_END_OK) {
		/* (-ETIME: a stall the stream itself ended, end E's stall reason as the stall limit's) */
		uint8_t stall = s->limits.stall_reason[e->idx];

		s->reason = err == -ETIME && !connecting && stall ? (enum xlt_end_reason)stall
		                                                  : xlt_end_reason_of(err, connecting);
		if (err == -ECONNRESET)
			s->reset_by = (int8_t)e->idx;
	}
	if (other && other->state != XLT_STREAM_CLOSED) {
		if (err)
			other->ops->abort(other);
		else
			pump_dir(s, !e->idx); /* an orderly close: let the other side finish */
	}
	finish(s);
}

static void install(struct xlt_session *s, unsigned i)
{
	struct xlt_stream *st = s->st[i];

	s->ends[i] = (struct xlt_session_end){.s = s, .idx = i};
	if (!st)
		return;
	st->ev = (struct xlt_stream_events){
		.arg = &s->ends[i],
		.on_connected = on_connected,
		.on_readable = on_readable,
		.on_writable = on_writable,
		.on_closed = on_closed,
		.on_sent = on_sent,
	};
}

void xlt_session_start(struct xlt_session *s, enum xlt_session_kind kind, struct xlt_stream *a,
		       struct xlt_stream *b, struct xlt_route_stats *stats, const struct xlt_session_owner *owner,
		       const struct xlt_session_limits *limits)
{
	s->kind = kind;
	s->live = true;
	s->st[0] = a;
	s->st[1] = kind == XLT_SESSION_RELAY ? b : NULL;
	s->blocked[0] = s->blocked[1] = false;
	s->held[0] = s->held[1] = 0;
	s->lent[0] = s->lent[1] = 0;
	s->delivered[0] = s->delivered[1] = false;
	s->stuck[0] = s->stuck[1] = false;
	s->unsent[0] = s->unsent[1] = 0;
	s->copy_stuck[0] = s->copy_stuck[1] = false;
	s->blocked_ns[0] = s->blocked_ns[1] = 0;
	s->connect_ns = 0;
	s->reason = XLT_END_OK;
	s->reset_by = -1;
	s->b_open = false;
	s->stats = stats;
	s->owner = owner;
	s->connect_start_ns = owner->now_ns(owner->arg);
	s->limits = limits ? *limits : (struct xlt_session_limits){0};
	s->half_ns = 0;
	s->pre = NULL;
	s->pre_len = s->pre_off = 0;
	progress_from(s, s->connect_start_ns);
	xlt_counter_add(&stats->sessions_total, 1);
	xlt_counter_add(&stats->sessions_active, 1);
	for (unsigned i = 0; i < 2; i++)
		install(s, i);
	if (s->st[1] && s->st[1]->state == XLT_STREAM_OPEN) {
		s->b_open = true;
		xlt_counter_add(&stats->connects, 1);
	}
	xlt_session_pump(s);
}

int xlt_session_preamble(struct xlt_session *s, const uint8_t *pre, size_t len)
{
	if (s->kind != XLT_SESSION_RELAY || len > UINT16_MAX)
		return -EINVAL;
	if (s->st[1] && s->st[1]->bytes_out)
		return -EALREADY;
	s->pre = pre;
	s->pre_len = (uint16_t)len;
	s->pre_off = 0;
	xlt_session_pump(s);
	return 0;
}

void xlt_session_attach(struct xlt_session *s, struct xlt_stream *b)
{
	s->st[1] = b;
	install(s, 1);
	if (b->state == XLT_STREAM_OPEN) {
		uint64_t now = s->owner->now_ns(s->owner->arg);
		s->b_open = true;
		s->connect_ns = now - s->connect_start_ns;
		xlt_counter_add(&s->stats->connect_ns_sum, s->connect_ns);
		xlt_counter_add(&s->stats->connects, 1);
		progress_from(s, now);
	}
	xlt_session_pump(s);
}

/* NOW - SINCE, or 0 when SINCE is later: the owner's NOW may be taken before a session it then
 * started (the worker reads its clock once per round), and a wrapped difference would look like
 * forever. */
static uint64_t since_ns(uint64_t now, uint64_t since)
{
	return now > since ? now - since : 0;
}

/* Lending: a destination takes what the source lends as long as its own bound allows, which may be
 * more than the source can hold (a TCP send buffer larger than the IB receive ring); then the source
 * fills with lent bytes and its peer waits (credits withheld, window shut) while the destination
 * never refuses a byte. Lent bytes of which the destination reported none delivered during a whole
 * tick mean it waits on its own peer: the direction is blocked, for the stall limit and the
 * backpressure metrics, until it reports some (on_sent). A destination that delivers keeps
 * reporting, tick after tick. */
static void stuck_check(struct xlt_session *s, unsigned dir, uint64_t now)
{
	if (s->lent[dir] && !s->delivered[dir] && !s->blocked[dir]) {
		s->stuck[dir] = true;
		set_held(s, dir, s->lent[dir]);
		set_blocked(s, dir, true);
	} else if (!s->lent[dir] && s->unsent[dir] && s->moved_ns[dir] != now && !s->blocked[dir]) {
		/* the same for bytes the destination took by copy: none delivered during a whole tick */
		s->copy_stuck[dir] = true;
		set_blocked(s, dir, true);
	}
	s->delivered[dir] = false;
}

/* The bytes direction DIR's destination took and has not delivered yet (0: none, or not known). */
static size_t dst_unsent(struct xlt_session *s, unsigned dir)
{
	struct xlt_stream *dst = dst_of(s, dir);

	return dst && dst->ops->unsent && dst->state == XLT_STREAM_OPEN ? dst->ops->unsent(dst) : 0;
}

/* Enforces the stall limit on a blocked direction DIR. Returns true when the session was aborted. */
static bool check_stall(struct xlt_session *s, unsigned dir, uint64_t now)
{
	if (!s->limits.stall_ns || !s->blocked[dir] || since_ns(now, s->moved_ns[dir]) < s->limits.stall_ns)
		return false;
	/* one more try before judging: write() may take bytes now (room freed without a writable event,
	 * which engines send only once a good share of the buffer is free); a destination that takes
	 * any is slow, not stalled */
	pump_dir(s, dir);
	if (!s->live || s->reason != XLT_END_OK)
		return true;
	if (dir_bytes(s, dir) != s->moved[dir] || !s->blocked[dir]) {
		s->moved[dir] = dir_bytes(s, dir);
		s->moved_ns[dir] = now;
		return false;
	}
	/* the destination is end B for A -> B, end A otherwise (B -> A, echo) */
	xlt_session_abort(s, (enum xlt_end_reason)s->limits.stall_reason[s->kind == XLT_SESSION_RELAY && !dir]);
	return true;
}

/* Enforces the half-closed limit on a relay. */
static void check_half_closed(struct xlt_session *s, uint64_t now)
{
	/* a direction ended once its destination was shut down (its source's end of stream passed on) */
	bool done0 = s->st[1] && s->st[1]->local_done, done1 = s->st[0] && s->st[0]->local_done;
	unsigned live;
	uint64_t since;

	if (done0 == done1) {
		/* both open, or both ended: the streams are closing, which their engines bound */
		s->half_ns = 0;
		return;
	}
	if (!s->half_ns)
		s->half_ns = now;
	live = done0 ? 1 : 0;
	if (s->unsent[!live] && s->moved_ns[!live] == now) {
		/* the ended direction still delivers what its source ended with (a slow reader of the
		 * last bytes): the half-closed clock runs from its last delivery, so a reader that stops
		 * taking them is still bounded by it (and by the stall limit) */
		s->half_ns = now;
		return;
	}
	if (s->blocked[live])
		return; /* its source is not silent: bytes wait for the destination (stall limit) */
	since = s->moved_ns[live] > s->half_ns ? s->moved_ns[live] : s->half_ns;
	if (since_ns(now, since) >= s->limits.half_closed_ns)
		xlt_session_abort(s, XLT_END_HALF_CLOSED_TIMEOUT);
}

void xlt_session_tick(struct xlt_session *s, uint64_t now)
{
	unsigned n = n_dirs(s);
	uint64_t last;

	if (!s->live)
		return;
	for (unsigned i = 0; i < 2; i++)
		if (s->blocked[i]) {
			xlt_counter_add(i ? &s->stats->blocked_ns_b_to_a : &s->stats->blocked_ns_a_to_b,
			                since_ns(now, s->blocked_since[i]));
			s->blocked_ns[i] += since_ns(now, s->blocked_since[i]);
			if (now > s->blocked_since[i])
				s->blocked_since[i] = now;
		}
	if (s->reason != XLT_END_OK || (s->kind == XLT_SESSION_RELAY && !s->b_open))
		return; /* ending already; or connecting, which the route's connect_timeout bounds */
	/* a blocked direction tries again: its destination may have taken nothing for want of memory
	 * whose return no event of its own announces (a copy needs a buffer of the frame pool, which
	 * is refused while the pool is down to a quarter), or have room it did not announce yet */
	for (unsigned i = 0; i < n; i++)
		if (s->blocked[i] && s->live && s->reason == XLT_END_OK)
			pump_dir(s, i);
	if (!s->live || s->reason != XLT_END_OK)
		return;
	for (unsigned i = 0; i < n; i++) {
		uint64_t b = dir_bytes(s, i);
		size_t u = dst_unsent(s, i);
		/* lent bytes the destination reported delivered are progress too: a source that lent all
		 * it had and waits (for an answer) is not idle while they go out; and so are bytes it
		 * took by copy and delivered since */
		if (b != s->moved[i] || s->delivered[i] || u < s->unsent[i]) {
			s->moved[i] = b;
			s->moved_ns[i] = now;
			if (s->copy_stuck[i]) {
				s->copy_stuck[i] = false;
				if (!s->held[i] && !s->stuck[i])
					set_blocked(s, i, false); /* (else the source's bytes still wait) */
			}
		}
		s->unsent[i] = u;
	}
	for (unsigned i = 0; i < n; i++)
		stuck_check(s, i, now);
	for (unsigned i = 0; i < n; i++)
		if (check_stall(s, i, now))
			return;
	last = s->moved_ns[0] > s->moved_ns[n - 1] ? s->moved_ns[0] : s->moved_ns[n - 1];
	if (s->limits.idle_ns && since_ns(now, last) >= s->limits.idle_ns) {
		xlt_session_abort(s, XLT_END_IDLE_TIMEOUT);
		return;
	}
	if (s->kind == XLT_SESSION_RELAY && s->limits.half_closed_ns)
		check_half_closed(s, now);
}

void xlt_session_abort(struct xlt_session *s, enum xlt_end_reason reason)
{
	if (!s->live)
		return;
	if (s->reason == XLT_END_OK)
		s->reason = reason;
	for (unsigned i = 0; i < 2; i++)
		if (s->st[i] && s->st[i]->state != XLT_STREAM_CLOSED)
			s->st[i]->ops->abort(s->st[i]);
}
