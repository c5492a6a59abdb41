/* Session relay logic (see session.h).
 *
 * Directions: 0 is A -> B (listener side to destination), 1 is B -> A. For echo both directions are
 * the one stream (A -> A); for discard A's bytes are consumed and dropped. Half-close: when a source's
 * peer is done and every byte of it has been handed to the destination, the destination is shut down
 * (TCP FIN <-> rsocket SHUTDOWN); the other direction keeps flowing. An error on either end aborts the
 * other; the session is over when every stream it holds has closed. */
#include <errno.h>
#include <stddef.h>

#include "session.h"

const char *const xlt_end_reason_names[XLT_END_COUNT] = {
	[XLT_END_OK] = "ok",
	[XLT_END_RESET] = "reset",
	[XLT_END_CONNECT_REFUSED] = "connect_refused",
	[XLT_END_CONNECT_TIMEOUT] = "connect_timeout",
	[XLT_END_CONNECT_FAILED] = "connect_failed",
	[XLT_END_PROTOCOL] = "protocol_error",
	[XLT_END_ABORTED] = "aborted",
};

static inline void add(uint64_t *c, uint64_t n)
{
	/* single writer (the session's worker); other threads read relaxed */
	__atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
}

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

static void set_blocked(struct xlt_session *s, unsigned dir, bool blocked)
{
	uint64_t now;

	if (s->blocked[dir] == blocked)
		return;
	now = s->owner->now_ns(s->owner->arg);
	if (blocked) {
		s->blocked_since[dir] = now;
		add(dir ? &s->stats->blocked_b_to_a : &s->stats->blocked_a_to_b, 1);
	} else {
		add(dir ? &s->stats->blocked_ns_b_to_a : &s->stats->blocked_ns_a_to_b, now - s->blocked_since[dir]);
	}
	s->blocked[dir] = blocked;
}

/* Records how many bytes direction DIR leaves waiting in its source (the route's occupancy gauge). */
static void set_held(struct xlt_session *s, unsigned dir, uint64_t n)
{
	if (s->held[dir] == n)
		return;
	add(dir ? &s->stats->held_b_to_a : &s->stats->held_a_to_b, n - s->held[dir]); /* wraps to a decrease */
	s->held[dir] = n;
}

/* Moves bytes of one direction until the source is empty or the destination full. */
static void pump_dir(struct xlt_session *s, unsigned dir)
{
	struct xlt_stream *src = src_of(s, dir), *dst = dst_of(s, dir);
	uint64_t *bytes = dir ? &s->stats->bytes_b_to_a : &s->stats->bytes_a_to_b;
	const uint8_t *p;
	size_t n, w;

	if (!src || src->state != XLT_STREAM_OPEN)
		return;
	if (s->kind == XLT_SESSION_RELAY && !dst)
		return; /* B not attached yet (connect retried by the owner): A's bytes wait, window closed */
	if (dst && dst->state != XLT_STREAM_OPEN)
		return; /* connecting: A's bytes wait in A's buffer, its window/credits closed */
	while ((n = src->ops->peek(src, &p)) > 0) {
		if (dst && dst->local_done) {
			/* the destination was shut down yet bytes keep coming: cannot deliver them */
			xlt_session_abort(s, XLT_END_PROTOCOL);
			return;
		}
		w = dst ? dst->ops->write(dst, p, n) : n;
		if (w) {
			src->ops->consume(src, w);
			src->bytes_in += w;
			if (dst)
				dst->bytes_out += w;
			add(bytes, w);
		}
		if (w < n) {
			/* without a backlog op, what peek shows is a lower bound (a ring may wrap) */
			set_held(s, dir, src->ops->backlog ? src->ops->backlog(src) : n - w);
			set_blocked(s, dir, true);
			return;
		}
	}
	set_held(s, dir, 0);
	set_blocked(s, dir, false);
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
		s->b_open = true;
		add(&s->stats->connect_ns_sum, s->owner->now_ns(s->owner->arg) - s->connect_start_ns);
		add(&s->stats->connects, 1);
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

static void finish(struct xlt_session *s)
{
	for (unsigned i = 0; i < 2; i++)
		if (s->st[i] && s->st[i]->state != XLT_STREAM_CLOSED)
			return;
	for (unsigned i = 0; i < 2; i++) {
		set_blocked(s, i, false);
		set_held(s, i, 0);
	}
	for (unsigned i = 0; i < 2; i++)
		if (s->st[i]) {
			s->st[i]->ops->release(s->st[i]);
			s->st[i] = NULL;
		}
	s->live = false;
	add(&s->stats->sessions_active, (uint64_t)-1);
	add(&s->stats->ends[s->reason], 1);
	s->owner->done(s->owner->arg, s, s->reason);
}

static void on_closed(void *arg, int err)
{
	struct xlt_session_end *e = arg;
	struct xlt_session *s = e->s;
	struct xlt_stream *other = s->kind == XLT_SESSION_RELAY ? s->st[!e->idx] : NULL;
	bool connecting = e->idx == 1 && !s->b_open;

	if (err && s->reason == XLT_END_OK)
		s->reason = xlt_end_reason_of(err, connecting);
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
	};
}

void xlt_session_start(struct xlt_session *s, enum xlt_session_kind kind, struct xlt_stream *a,
		       struct xlt_stream *b, struct xlt_route_stats *stats, const struct xlt_session_owner *owner)
{
	s->kind = kind;
	s->live = true;
	s->st[0] = a;
	s->st[1] = kind == XLT_SESSION_RELAY ? b : NULL;
	s->blocked[0] = s->blocked[1] = false;
	s->held[0] = s->held[1] = 0;
	s->reason = XLT_END_OK;
	s->b_open = false;
	s->stats = stats;
	s->owner = owner;
	s->connect_start_ns = owner->now_ns(owner->arg);
	add(&stats->sessions_total, 1);
	add(&stats->sessions_active, 1);
	for (unsigned i = 0; i < 2; i++)
		install(s, i);
	if (s->st[1] && s->st[1]->state == XLT_STREAM_OPEN) {
		s->b_open = true;
		add(&stats->connects, 1);
	}
	xlt_session_pump(s);
}

void xlt_session_attach(struct xlt_session *s, struct xlt_stream *b)
{
	s->st[1] = b;
	install(s, 1);
	if (b->state == XLT_STREAM_OPEN) {
		s->b_open = true;
		add(&s->stats->connect_ns_sum, s->owner->now_ns(s->owner->arg) - s->connect_start_ns);
		add(&s->stats->connects, 1);
	}
	xlt_session_pump(s);
}

void xlt_session_tick(struct xlt_session *s)
{
	uint64_t now;

	if (!s->live || !(s->blocked[0] || s->blocked[1]))
		return;
	now = s->owner->now_ns(s->owner->arg);
	for (unsigned i = 0; i < 2; i++)
		if (s->blocked[i]) {
			add(i ? &s->stats->blocked_ns_b_to_a : &s->stats->blocked_ns_a_to_b, now - s->blocked_since[i]);
			s->blocked_since[i] = now;
		}
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
