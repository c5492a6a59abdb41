/* Unit tests of translate/session.c with in-memory streams: relay integrity under a tiny destination
 * buffer (backpressure), half-close both ways, errors and connect failures aborting the other end,
 * echo and discard, the blocked-time accounting, the owner's ended hook, and the limits (idle, stall, half-closed) that end
 * sessions making no progress. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "translate/session.h"

#define CAP 4096

/* An in-memory stream: RX holds what its "peer" sent (not yet consumed), TX what the session wrote
 * (bounded by tx_room, which the test opens to simulate the peer draining). */
struct fake {
	struct xlt_stream s;
	uint8_t rx[CAP];
	size_t rx_len, rx_off;
	uint8_t tx[1 << 20];
	size_t tx_len, tx_room;
	size_t max_peek; /* emulate a ring: peek returns at most this much at once */
	int shutdowns, aborts, releases;
	/* lending (lend_ops) */
	int gets, puts, eof;
	size_t in_flight;
	void *held[64];
	unsigned n_held;
	size_t unsent; /* (fake_ops_unsent) taken bytes its peer has not acknowledged yet */
};

static size_t f_peek(struct xlt_stream *s, const uint8_t **data)
{
	struct fake *f = (struct fake *)s;
	size_t n = f->rx_len - f->rx_off;

	if (f->max_peek && n > f->max_peek)
		n = f->max_peek;
	*data = f->rx + f->rx_off;
	return n;
}

static void f_consume(struct xlt_stream *s, size_t n)
{
	struct fake *f = (struct fake *)s;

	assert_true(n <= f->rx_len - f->rx_off);
	f->rx_off += n;
}

static size_t f_write(struct xlt_stream *s, const uint8_t *data, size_t len)
{
	struct fake *f = (struct fake *)s;
	size_t n = len < f->tx_room ? len : f->tx_room;

	assert_false(s->local_done);
	memcpy(f->tx + f->tx_len, data, n);
	f->tx_len += n;
	f->tx_room -= n;
	return n;
}

static void f_shutdown(struct xlt_stream *s)
{
	((struct fake *)s)->shutdowns++;
	s->local_done = 1;
}

static void f_abort(struct xlt_stream *s)
{
	((struct fake *)s)->aborts++;
}

static void f_release(struct xlt_stream *s)
{
	((struct fake *)s)->releases++;
}

static const struct xlt_stream_ops fake_ops = {f_peek, f_consume, f_write, f_shutdown, f_abort, f_release};

static uint64_t clock_ns;
static int done_calls;
static enum xlt_end_reason done_reason;

static uint64_t now(void *arg)
{
	(void)arg;
	return clock_ns;
}

static void done(void *arg, struct xlt_session *s, enum xlt_end_reason r)
{
	(void)arg;
	(void)s;
	done_calls++;
	done_reason = r;
}

static const struct xlt_session_owner owner = {.now_ns = now, .done = done};

static struct fake *fake_new(enum xlt_stream_state st, size_t tx_room)
{
	struct fake *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->s.ops = &fake_ops;
	f->s.state = st;
	f->tx_room = tx_room;
	return f;
}

/* The peer of F sends DATA (appended to F's receive buffer), then the stream signals readable. */
static void peer_sends(struct fake *f, const void *data, size_t len)
{
	assert_true(f->rx_len + len <= CAP);
	memcpy(f->rx + f->rx_len, data, len);
	f->rx_len += len;
	f->s.ev.on_readable(f->s.ev.arg);
}

static void peer_drains(struct fake *f, size_t room)
{
	f->tx_room += room;
	f->s.ev.on_writable(f->s.ev.arg);
}

static void closed(struct fake *f, int err)
{
	f->s.state = XLT_STREAM_CLOSED;
	f->s.ev.on_closed(f->s.ev.arg, err);
}

static void reset_globals(void)
{
	clock_ns = 1000;
	done_calls = 0;
	done_reason = XLT_END_COUNT;
}

static void test_relay_backpressure_integrity(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, 100);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};
	uint8_t data[3000];

	(void)state;
	reset_globals();
	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, NULL);
	a->max_peek = 512;
	peer_sends(a, data, sizeof(data));
	/* B takes only 100 bytes: the rest stays in A (not consumed), the direction is blocked */
	assert_int_equal(b->tx_len, 100);
	assert_int_equal(a->rx_off, 100);
	assert_int_equal(st.blocked_a_to_b, 1);
	clock_ns += 5000;
	while (b->tx_len < sizeof(data))
		peer_drains(b, 37);
	assert_memory_equal(b->tx, data, sizeof(data));
	assert_int_equal(a->rx_off, sizeof(data));
	assert_int_equal(st.bytes_a_to_b, sizeof(data));
	assert_int_equal(st.blocked_ns_a_to_b, 5000);
	/* the other direction flows independently */
	peer_sends(b, "pong", 4);
	assert_int_equal(a->tx_len, 4);
	assert_memory_equal(a->tx, "pong", 4);
	assert_int_equal(st.bytes_b_to_a, 4);
	assert_int_equal(st.sessions_active, 1);
	free(a);
	free(b);
}

static void test_half_close_both_ways(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, 10);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, NULL);
	a->s.peer_done = 1;
	peer_sends(a, "0123456789abcdef", 16);
	/* B's buffer is full: no shutdown before every byte was handed over */
	assert_int_equal(b->shutdowns, 0);
	peer_drains(b, 100);
	assert_int_equal(b->tx_len, 16);
	assert_int_equal(b->shutdowns, 1);
	/* B -> A keeps flowing after A's peer half-closed */
	peer_sends(b, "reply", 5);
	assert_int_equal(a->tx_len, 5);
	assert_int_equal(a->shutdowns, 0);
	b->s.peer_done = 1;
	b->s.ev.on_readable(b->s.ev.arg);
	assert_int_equal(a->shutdowns, 1);
	closed(a, 0);
	assert_int_equal(done_calls, 0); /* B still open */
	closed(b, 0);
	assert_int_equal(done_calls, 1);
	assert_int_equal(done_reason, XLT_END_OK);
	assert_int_equal(a->releases, 1);
	assert_int_equal(b->releases, 1);
	assert_int_equal(a->aborts + b->aborts, 0);
	assert_int_equal(st.ends[XLT_END_OK], 1);
	assert_int_equal(st.sessions_active, 0);
	free(a);
	free(b);
}

/* B's peer ends both ways in order (an rsocket DISCONNECT without SHUTDOWN) while A's peer still has
 * bytes for it: they can never be delivered, so A is reset at once (its bytes used to wait in a
 * closed window until half_closed_timeout). Without bytes for B, A is left to finish in order. */
static void test_closed_destination_resets_source(void **state)
{
	struct xlt_route_stats st = {0};

	(void)state;
	for (int pending = 0; pending < 2; pending++) {
		struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, CAP);
		struct xlt_session s = {0};

		reset_globals();
		xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, NULL);
		peer_sends(b, "answer", 6);
		assert_int_equal(a->tx_len, 6);
		b->s.peer_done = 1;
		b->s.ev.on_readable(b->s.ev.arg);
		assert_int_equal(a->shutdowns, 1);
		b->tx_room = 0; /* (B's peer reads nothing more) */
		if (pending)
			peer_sends(a, "request", 7);
		closed(b, 0);
		assert_int_equal(a->aborts, pending);
		if (!pending) {
			/* A's peer sends only now: reset then */
			peer_sends(a, "late", 4);
			assert_int_equal(a->aborts, 1);
		}
		closed(a, -ECONNRESET);
		assert_int_equal(done_calls, 1);
		assert_int_equal(done_reason, XLT_END_RESET);
		free(a);
		free(b);
	}
}

static void test_error_aborts_other_end(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, CAP);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, NULL);
	closed(b, -ECONNRESET);
	assert_int_equal(a->aborts, 1);
	assert_int_equal(done_calls, 0);
	closed(a, -ECONNABORTED);
	assert_int_equal(done_calls, 1);
	assert_int_equal(done_reason, XLT_END_RESET);
	assert_int_equal(st.ends[XLT_END_RESET], 1);
	free(a);
	free(b);
}

static void test_connect_refused_and_timeout(void **state)
{
	int errs[] = {-ECONNREFUSED, -ETIMEDOUT};
	enum xlt_end_reason want[] = {XLT_END_CONNECT_REFUSED, XLT_END_CONNECT_TIMEOUT};

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_CONNECTING, CAP);
		struct xlt_route_stats st = {0};
		struct xlt_session s = {0};

		reset_globals();
		xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, NULL);
		/* bytes from A wait while B connects: nothing consumed, nothing written */
		peer_sends(a, "early", 5);
		assert_int_equal(a->rx_off, 0);
		closed(b, errs[i]);
		assert_int_equal(a->aborts, 1);
		closed(a, -ECONNABORTED);
		assert_int_equal(done_reason, want[i]);
		assert_int_equal(st.ends[want[i]], 1);
		assert_int_equal(st.connects, 0);
		free(a);
		free(b);
	}
}

static void test_connect_then_flush(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_CONNECTING, CAP);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, NULL);
	peer_sends(a, "early", 5);
	clock_ns += 777;
	b->s.state = XLT_STREAM_OPEN;
	b->s.ev.on_connected(b->s.ev.arg);
	assert_int_equal(b->tx_len, 5);
	assert_int_equal(st.connects, 1);
	assert_int_equal(st.connect_ns_sum, 777);
	/* after connecting, a timeout is a reset, not a connect failure */
	closed(b, -ETIMEDOUT);
	closed(a, -ECONNABORTED);
	assert_int_equal(done_reason, XLT_END_RESET);
	free(a);
	free(b);
}

static void test_echo(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, 3);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_ECHO, &a->s, NULL, &st, &owner, NULL);
	peer_sends(a, "hello world", 11);
	assert_int_equal(a->tx_len, 3);
	assert_int_equal(a->rx_off, 3);
	peer_drains(a, 100);
	assert_int_equal(a->tx_len, 11);
	assert_memory_equal(a->tx, "hello world", 11);
	a->s.peer_done = 1;
	a->s.ev.on_readable(a->s.ev.arg);
	assert_int_equal(a->shutdowns, 1);
	closed(a, 0);
	assert_int_equal(done_calls, 1);
	assert_int_equal(a->releases, 1);
	free(a);
}

static void test_discard(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, 0);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};
	uint8_t big[CAP] = {1};

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_DISCARD, &a->s, NULL, &st, &owner, NULL);
	peer_sends(a, big, sizeof(big));
	assert_int_equal(a->rx_off, sizeof(big));
	assert_int_equal(st.bytes_a_to_b, sizeof(big));
	assert_int_equal(a->tx_len, 0);
	a->s.peer_done = 1;
	a->s.ev.on_readable(a->s.ev.arg);
	assert_int_equal(a->shutdowns, 1); /* the peer's FIN is answered so it sees an orderly close */
	closed(a, 0);
	assert_int_equal(done_reason, XLT_END_OK);
	free(a);
}

static void test_abort(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, CAP);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, NULL);
	xlt_session_abort(&s, XLT_END_ABORTED);
	assert_int_equal(a->aborts, 1);
	assert_int_equal(b->aborts, 1);
	closed(a, -ECONNABORTED);
	closed(b, -ECONNABORTED);
	assert_int_equal(done_calls, 1);
	assert_int_equal(done_reason, XLT_END_ABORTED);
	free(a);
	free(b);
}

/* The owner could not open B at once (a transient shortage): A's bytes wait, untouched, until B is
 * attached; then they flow and the connect latency covers the wait. Giving up instead aborts A. */
static void test_late_attach(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_CONNECTING, CAP);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, NULL, &st, &owner, NULL);
	peer_sends(a, "early", 5);
	assert_int_equal(a->rx_off, 0);
	assert_int_equal(st.bytes_a_to_b, 0);
	clock_ns += 3000;
	xlt_session_attach(&s, &b->s);
	assert_int_equal(a->rx_off, 0); /* B still connecting */
	clock_ns += 2000;
	b->s.state = XLT_STREAM_OPEN;
	b->s.ev.on_connected(b->s.ev.arg);
	assert_int_equal(b->tx_len, 5);
	assert_memory_equal(b->tx, "early", 5);
	assert_int_equal(st.connects, 1);
	assert_int_equal(st.connect_ns_sum, 5000);
	a->s.peer_done = 1;
	b->s.peer_done = 1;
	peer_sends(a, "", 0);
	peer_sends(b, "", 0);
	closed(a, 0);
	closed(b, 0);
	assert_int_equal(done_calls, 1);
	assert_int_equal(done_reason, XLT_END_OK);
	assert_int_equal(a->releases + b->releases, 2);
	free(a);
	free(b);

	/* the owner gives up: A is aborted, the session ends with the connect failure's reason */
	a = fake_new(XLT_STREAM_OPEN, CAP);
	memset(&s, 0, sizeof(s));
	memset(&st, 0, sizeof(st));
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, NULL, &st, &owner, NULL);
	peer_sends(a, "x", 1);
	xlt_session_abort(&s, XLT_END_CONNECT_TIMEOUT);
	assert_int_equal(a->aborts, 1);
	closed(a, -ECONNABORTED);
	assert_int_equal(done_calls, 1);
	assert_int_equal(done_reason, XLT_END_CONNECT_TIMEOUT);
	assert_int_equal(st.ends[XLT_END_CONNECT_TIMEOUT], 1);
	assert_int_equal(st.sessions_active, 0);
	assert_int_equal(a->releases, 1);
	free(a);
}

/* owner->retry: a far side that fails to connect is dropped and the owner attaches another (a pool's
 * next backend); A's early bytes wait and then reach the new B intact; the session starts and ends
 * once. The owner saying no ends it with the failure's reason, as without retries. */
static int retry_calls, retry_answer, retry_err;

static bool retry(void *arg, struct xlt_session *s, int err)
{
	(void)arg;
	(void)s;
	retry_calls++;
	retry_err = err;
	return retry_answer;
}

static void test_connect_retry(void **state)
{
	static const struct xlt_session_owner owner_r = {.now_ns = now, .done = done, .retry = retry};
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b1 = fake_new(XLT_STREAM_CONNECTING, CAP),
		    *b2 = fake_new(XLT_STREAM_CONNECTING, CAP);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};

	(void)state;
	reset_globals();
	retry_calls = 0;
	retry_answer = 1;
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b1->s, &st, &owner_r, NULL);
	peer_sends(a, "early", 5);
	clock_ns += 1000;
	closed(b1, -ECONNREFUSED);
	assert_int_equal(retry_calls, 1);
	assert_int_equal(retry_err, -ECONNREFUSED);
	assert_int_equal(b1->releases, 1); /* the failed far side is gone */
	assert_int_equal(a->aborts, 0);	   /* A waits */
	assert_int_equal(a->rx_off, 0);
	assert_true(s.live);
	assert_int_equal(done_calls, 0);
	clock_ns += 2000;
	xlt_session_attach(&s, &b2->s);
	b2->s.state = XLT_STREAM_OPEN;
	b2->s.ev.on_connected(b2->s.ev.arg);
	assert_int_equal(b2->tx_len, 5);
	assert_memory_equal(b2->tx, "early", 5);
	assert_int_equal(st.connects, 1);
	assert_int_equal(st.connect_ns_sum, 3000); /* from the session's start, retries included */
	assert_int_equal(st.sessions_total, 1);
	a->s.peer_done = 1;
	b2->s.peer_done = 1;
	peer_sends(a, "", 0);
	peer_sends(b2, "", 0);
	closed(a, 0);
	closed(b2, 0);
	assert_int_equal(done_calls, 1);
	assert_int_equal(done_reason, XLT_END_OK);
	free(b1);
	free(b2);

	/* the owner has nothing left to try: the session ends refused, A aborted */
	b1 = fake_new(XLT_STREAM_CONNECTING, CAP);
	memset(a, 0, sizeof(*a));
	a->s.ops = &fake_ops;
	a->s.state = XLT_STREAM_OPEN;
	a->tx_room = CAP;
	memset(&s, 0, sizeof(s));
	memset(&st, 0, sizeof(st));
	reset_globals();
	retry_answer = 0;
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b1->s, &st, &owner_r, NULL);
	closed(b1, -ECONNREFUSED);
	assert_int_equal(a->aborts, 1);
	closed(a, -ECONNABORTED);
	assert_int_equal(done_calls, 1);
	assert_int_equal(done_reason, XLT_END_CONNECT_REFUSED);
	assert_int_equal(st.ends[XLT_END_CONNECT_REFUSED], 1);
	/* after connecting, a failure is the session's, never retried */
	retry_calls = 0;
	retry_answer = 1;
	free(b1);
	b1 = fake_new(XLT_STREAM_OPEN, CAP);
	memset(a, 0, sizeof(*a));
	a->s.ops = &fake_ops;
	a->s.state = XLT_STREAM_OPEN;
	a->tx_room = CAP;
	memset(&s, 0, sizeof(s));
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b1->s, &st, &owner_r, NULL);
	closed(b1, -ECONNRESET);
	assert_int_equal(retry_calls, 0);
	closed(a, -ECONNABORTED);
	assert_int_equal(done_reason, XLT_END_RESET);
	free(a);
	free(b1);
}

/* Backpressure time grows while a direction stays blocked (tick), and is not counted twice when
 * the episode ends. */
static void test_blocked_time_ticks(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, 0);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, NULL);
	peer_sends(a, "abc", 3);
	assert_int_equal(st.blocked_a_to_b, 1);
	assert_int_equal(st.held_a_to_b, 3); /* the backlog gauge */
	clock_ns += 1000;
	xlt_session_tick(&s, clock_ns);
	assert_int_equal(st.blocked_ns_a_to_b, 1000);
	clock_ns += 500;
	xlt_session_tick(&s, clock_ns);
	assert_int_equal(st.blocked_ns_a_to_b, 1500);
	clock_ns += 250;
	peer_drains(b, 10);
	assert_int_equal(st.blocked_ns_a_to_b, 1750);
	assert_int_equal(b->tx_len, 3);
	assert_int_equal(st.held_a_to_b, 0);
	clock_ns += 1000;
	xlt_session_tick(&s, clock_ns); /* not blocked: nothing more */
	assert_int_equal(st.blocked_ns_a_to_b, 1750);
	assert_int_equal(st.blocked_ns_b_to_a, 0);
	b->tx_room = 0;
	peer_sends(a, "defgh", 5);
	peer_drains(b, 2);
	assert_int_equal(st.held_a_to_b, 3); /* 2 of 5 moved */
	xlt_session_abort(&s, XLT_END_ABORTED);
	closed(a, -ECONNABORTED);
	closed(b, -ECONNABORTED);
	assert_int_equal(done_calls, 1);
	assert_int_equal(st.held_a_to_b, 0); /* a session's share leaves with it */
	free(a);
	free(b);
}

/* The owner's ended hook (the access log's record): called once, after the reason is final and
 * before the streams are released, with the session's own connect and blocked times. */
static int ended_calls, ended_releases;
static uint64_t ended_connect_ns, ended_blocked_ns[2];
static enum xlt_end_reason ended_reason;

static void ended(void *arg, struct xlt_session *s)
{
	(void)arg;
	ended_calls++;
	ended_releases = done_calls + ((struct fake *)s->st[0])->releases + ((struct fake *)s->st[1])->releases;
	ended_reason = s->reason;
	ended_connect_ns = s->connect_ns;
	ended_blocked_ns[0] = s->blocked_ns[0];
	ended_blocked_ns[1] = s->blocked_ns[1];
}

static void test_ended_hook(void **state)
{
	static const struct xlt_session_owner owner_ended = {.now_ns = now, .done = done, .ended = ended};
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_CONNECTING, 0);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};

	(void)state;
	reset_globals();
	ended_calls = 0;
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner_ended, NULL);
	clock_ns += 700;
	b->s.state = XLT_STREAM_OPEN;
	b->s.ev.on_connected(b->s.ev.arg);
	assert_int_equal(s.connect_ns, 700);
	peer_sends(a, "abc", 3); /* B takes nothing: A -> B blocked */
	clock_ns += 1000;
	xlt_session_tick(&s, clock_ns);
	assert_int_equal(s.blocked_ns[0], 1000);
	clock_ns += 300;
	peer_drains(b, 10);
	assert_int_equal(s.blocked_ns[0], 1300);
	assert_int_equal(s.blocked_ns[1], 0);
	a->s.peer_done = 1;
	a->s.ev.on_readable(a->s.ev.arg); /* A's end of stream goes to B */
	b->s.peer_done = 1;
	b->s.ev.on_readable(b->s.ev.arg);
	closed(a, 0);
	assert_int_equal(ended_calls, 0); /* B is still open */
	closed(b, 0);
	assert_int_equal(ended_calls, 1);
	assert_int_equal(ended_releases, 0); /* before release and done */
	assert_int_equal(ended_reason, XLT_END_OK);
	assert_int_equal(ended_connect_ns, 700);
	assert_int_equal(ended_blocked_ns[0], 1300);
	assert_int_equal(done_calls, 1);
	assert_int_equal(a->releases + b->releases, 2);
	free(a);
	free(b);
}

/* A stream that knows its whole receive backlog (more than one peek shows) reports it. */
static size_t f_backlog(struct xlt_stream *s)
{
	struct fake *f = (struct fake *)s;

	return f->rx_len - f->rx_off;
}

static const struct xlt_stream_ops fake_ops_backlog = {f_peek, f_consume, f_write, f_shutdown, f_abort, f_release,
							f_backlog};

static void test_held_uses_backlog(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, 4);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};

	(void)state;
	reset_globals();
	a->s.ops = &fake_ops_backlog;
	a->max_peek = 10; /* a chunked buffer: peek shows 10 bytes at a time */
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, NULL);
	peer_sends(a, "0123456789abcdefghijklmnopqrstuvwxyz", 36);
	assert_int_equal(b->tx_len, 4);
	assert_int_equal(st.held_a_to_b, 32); /* all of it, not the 6 left of the first peek */
	xlt_session_abort(&s, XLT_END_ABORTED);
	closed(a, -ECONNABORTED);
	closed(b, -ECONNABORTED);
	assert_int_equal(st.held_a_to_b, 0);
	free(a);
	free(b);
}

#define MS 1000000ull

/* A route tcp -> ib: a stall whose destination is A (TCP) is a zero window, B (IB) a credit stall. */
static const struct xlt_session_limits lim = {
	.idle_ns = 5000 * MS,
	.stall_ns = 2000 * MS,
	.half_closed_ns = 1000 * MS,
	.stall_reason = {XLT_END_ZERO_WINDOW_TIMEOUT, XLT_END_CREDIT_STALL_TIMEOUT},
};

/* Ticks every 100 ms (as the worker does) for MS_ milliseconds or until S aborted a stream. */
static void run_ticks(struct xlt_session *s, struct fake *a, struct fake *b, uint64_t ms_)
{
	for (uint64_t t = 0; t < ms_ && !a->aborts && !(b && b->aborts); t += 100) {
		clock_ns += 100 * MS;
		xlt_session_tick(s, clock_ns);
	}
}

static void finish_aborted(struct fake *a, struct fake *b)
{
	closed(a, -ECONNABORTED);
	if (b)
		closed(b, -ECONNABORTED);
}

/* No byte either way for idle_ns: reset, counted as idle_timeout; bytes in either direction restart
 * the count; no limit (NULL) means none. */
static void test_idle_timeout(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, CAP);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};
	uint64_t t0;

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, &lim);
	/* the worker reads its clock once per round: a session started later in that round sees a
	 * tick whose NOW is before its start (a wrapped difference once read as "idle for ever") */
	xlt_session_tick(&s, clock_ns - 1);
	assert_int_equal(a->aborts + b->aborts, 0);
	run_ticks(&s, a, b, 4000);
	peer_sends(a, "ping", 4);
	run_ticks(&s, a, b, 4000);
	peer_sends(b, "pong", 4); /* the other direction counts too */
	t0 = clock_ns;
	run_ticks(&s, a, b, 4900);
	assert_int_equal(a->aborts + b->aborts, 0);
	run_ticks(&s, a, b, 10000);
	assert_int_equal(a->aborts, 1);
	assert_int_equal(b->aborts, 1);
	assert_true(clock_ns - t0 >= lim.idle_ns && clock_ns - t0 <= lim.idle_ns + 200 * MS);
	finish_aborted(a, b);
	assert_int_equal(done_calls, 1);
	assert_int_equal(done_reason, XLT_END_IDLE_TIMEOUT);
	assert_int_equal(st.ends[XLT_END_IDLE_TIMEOUT], 1);
	free(a);
	free(b);

	/* without limits nothing ends a quiet session */
	a = fake_new(XLT_STREAM_OPEN, CAP);
	b = fake_new(XLT_STREAM_OPEN, 0);
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, NULL);
	peer_sends(a, "x", 1); /* blocked too */
	run_ticks(&s, a, b, 3600 * 1000);
	assert_int_equal(a->aborts + b->aborts, 0);
	xlt_session_abort(&s, XLT_END_ABORTED);
	finish_aborted(a, b);
	free(a);
	free(b);
}

/* A destination that takes nothing while bytes wait for it: reset after stall_ns with the reason of
 * that end's kind. One that takes any byte (even without a writable event) is slow, not stalled. */
static void test_stall_timeout(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, 0), *b = fake_new(XLT_STREAM_OPEN, 0);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, &lim);
	peer_sends(a, "0123456789", 10); /* A -> B blocked: B is the IB end here */
	assert_true(s.blocked[0]);
	run_ticks(&s, a, b, 1500);
	b->tx_room = 1; /* the peer took one byte; no writable event (engines wait for more room) */
	run_ticks(&s, a, b, 100);
	assert_int_equal(b->tx_len, 1); /* the next tick's retry moved it, with no event */
	run_ticks(&s, a, b, 1400);
	assert_int_equal(a->aborts + b->aborts, 0);
	/* the retry at 1.6 s moved a byte: the count restarted there, so the limit falls at 3.6 s */
	run_ticks(&s, a, b, 500);
	assert_int_equal(a->aborts + b->aborts, 0);
	run_ticks(&s, a, b, 1000);
	assert_int_equal(b->aborts, 1);
	finish_aborted(a, b);
	assert_int_equal(done_reason, XLT_END_CREDIT_STALL_TIMEOUT);
	assert_int_equal(st.ends[XLT_END_CREDIT_STALL_TIMEOUT], 1);
	free(a);
	free(b);

	/* B -> A blocked: A is the TCP end, a zero window */
	a = fake_new(XLT_STREAM_OPEN, 0);
	b = fake_new(XLT_STREAM_OPEN, CAP);
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, &lim);
	peer_sends(b, "0123456789", 10);
	run_ticks(&s, a, b, 10000);
	assert_int_equal(a->aborts, 1);
	finish_aborted(a, b);
	assert_int_equal(done_reason, XLT_END_ZERO_WINDOW_TIMEOUT);
	free(a);
	free(b);

	/* echo: the destination is A itself */
	a = fake_new(XLT_STREAM_OPEN, 0);
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_ECHO, &a->s, NULL, &st, &owner, &lim);
	peer_sends(a, "0123456789", 10);
	run_ticks(&s, a, NULL, 10000);
	assert_int_equal(a->aborts, 1);
	finish_aborted(a, NULL);
	assert_int_equal(done_reason, XLT_END_ZERO_WINDOW_TIMEOUT);
	assert_int_equal(st.ends[XLT_END_ZERO_WINDOW_TIMEOUT], 2);
	free(a);
}

/* A stream that reset its own stalled peer to take back memory others needed (-ETIME: the IB side's
 * copy-buffer reclaim) ends the session with that end's stall reason, as the stall limit would;
 * without limits (no stall reason) it is a reset. */
static void test_stream_ended_stall(void **state)
{
	for (unsigned i = 0; i < 3; i++) {
		struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, CAP);
		struct xlt_route_stats st = {0};
		struct xlt_session s = {0};
		enum xlt_end_reason want[] = {XLT_END_CREDIT_STALL_TIMEOUT, XLT_END_ZERO_WINDOW_TIMEOUT,
		                              XLT_END_RESET};

		(void)state;
		reset_globals();
		xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, i < 2 ? &lim : NULL);
		closed(i == 1 ? a : b, -ETIME);
		assert_int_equal((i == 1 ? b : a)->aborts, 1);
		closed(i == 1 ? b : a, -ECONNABORTED);
		assert_int_equal(done_calls, 1);
		assert_int_equal(done_reason, want[i]);
		assert_int_equal(st.ends[want[i]], 1);
		free(a);
		free(b);
	}
}

/* One direction passed its end of stream (A's peer sent FIN: B was shut down) and the other stays
 * silent: reset after half_closed_ns. Bytes the other way restart the count; a blocked live
 * direction is the stall limit's business, not this one's. */
static void test_half_closed_timeout(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, CAP);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};
	struct xlt_session_limits l = lim;

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, &lim);
	a->s.peer_done = 1;
	peer_sends(a, "request", 7);
	assert_int_equal(b->shutdowns, 1);
	run_ticks(&s, a, b, 800);
	peer_sends(b, "part", 4); /* the answer is coming: not silent */
	run_ticks(&s, a, b, 800);
	assert_int_equal(a->aborts + b->aborts, 0);
	run_ticks(&s, a, b, 2000);
	assert_int_equal(a->aborts + b->aborts, 2);
	finish_aborted(a, b);
	assert_int_equal(done_reason, XLT_END_HALF_CLOSED_TIMEOUT);
	assert_int_equal(st.ends[XLT_END_HALF_CLOSED_TIMEOUT], 1);
	free(a);
	free(b);

	/* the live direction blocked (A's peer half-closed and does not read the answer): a stall */
	a = fake_new(XLT_STREAM_OPEN, 0);
	b = fake_new(XLT_STREAM_OPEN, CAP);
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, &lim);
	a->s.peer_done = 1;
	peer_sends(a, "request", 7);
	peer_sends(b, "answer", 6);
	run_ticks(&s, a, b, 10000);
	finish_aborted(a, b);
	assert_int_equal(done_reason, XLT_END_ZERO_WINDOW_TIMEOUT);
	free(a);
	free(b);

	/* half_closed_ns = 0: only the idle limit is left */
	a = fake_new(XLT_STREAM_OPEN, CAP);
	b = fake_new(XLT_STREAM_OPEN, CAP);
	reset_globals();
	l.half_closed_ns = 0;
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, &l);
	a->s.peer_done = 1;
	peer_sends(a, "request", 7);
	run_ticks(&s, a, b, 10000);
	finish_aborted(a, b);
	assert_int_equal(done_reason, XLT_END_IDLE_TIMEOUT);
	free(a);
	free(b);
}

static size_t f_unsent(struct xlt_stream *s)
{
	return ((struct fake *)s)->unsent;
}

static const struct xlt_stream_ops fake_ops_unsent = {
    .peek = f_peek, .consume = f_consume, .write = f_write, .shutdown = f_shutdown,
    .abort = f_abort, .release = f_release, .unsent = f_unsent,
};

/* A destination that took the source's last bytes by copy and delivers them slowly (a slow reader of
 * a response whose server closed): its deliveries are progress, so the half-closed clock starts only
 * once it has delivered all, and no idle limit fires meanwhile; bytes it holds without delivering any
 * for stall_ns are a stall; without a stall limit, the half-closed limit still ends a reader that
 * stopped (counted from its last delivery). */
static void test_half_closed_slow_reader(void **state)
{
	struct fake *a, *b;
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};
	struct xlt_session_limits nostall = lim, longhalf = lim;

	(void)state;
	nostall.stall_ns = 0;
	longhalf.half_closed_ns = 4000 * MS; /* (beyond the stall limit, 2 s: which one ends it) */
	for (int stuck = 0; stuck < 3; stuck++) {
		a = fake_new(XLT_STREAM_OPEN, CAP);
		b = fake_new(XLT_STREAM_OPEN, CAP);
		b->s.ops = &fake_ops_unsent;
		reset_globals();
		xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner,
		                  stuck == 2 ? &nostall : stuck ? &longhalf : &lim);
		a->s.peer_done = 1;
		peer_sends(a, "response", 8);
		assert_int_equal(b->shutdowns, 1); /* (taken whole: its end of stream passed on) */
		b->unsent = 6100;
		/* 6 s of slow delivery: beyond half_closed (1 s) and idle (5 s) */
		for (int t = 0; t < 60; t++) {
			b->unsent -= 100;
			run_ticks(&s, a, b, 100);
		}
		assert_int_equal(a->aborts + b->aborts, 0);
		if (stuck == 2) {
			/* then none delivered, no stall limit: the half-closed one (1 s from the last) */
			run_ticks(&s, a, b, 800);
			assert_int_equal(a->aborts + b->aborts, 0);
			run_ticks(&s, a, b, 1000);
			assert_int_equal(a->aborts + b->aborts, 2);
			finish_aborted(a, b);
			assert_int_equal(done_reason, XLT_END_HALF_CLOSED_TIMEOUT);
		} else if (stuck) {
			/* then none delivered: a stall (its stall limit, 2 s), not half-closed */
			run_ticks(&s, a, b, 3000);
			assert_int_equal(a->aborts + b->aborts, 2);
			finish_aborted(a, b);
			assert_int_equal(done_reason, XLT_END_CREDIT_STALL_TIMEOUT);
		} else {
			/* all delivered: now the half-closed clock runs */
			b->unsent = 0;
			run_ticks(&s, a, b, 900);
			assert_int_equal(a->aborts + b->aborts, 0);
			run_ticks(&s, a, b, 1000);
			assert_int_equal(a->aborts + b->aborts, 2);
			finish_aborted(a, b);
			assert_int_equal(done_reason, XLT_END_HALF_CLOSED_TIMEOUT);
		}
		free(a);
		free(b);
	}
}

/* While the far side connects, only the route's connect_timeout applies; the limits count from the
 * moment it opened. */
static void test_limits_wait_for_connect(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_CONNECTING, CAP);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};
	uint64_t t0;

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, &lim);
	run_ticks(&s, a, b, 20000);
	assert_int_equal(a->aborts + b->aborts, 0);
	b->s.state = XLT_STREAM_OPEN;
	b->s.ev.on_connected(b->s.ev.arg);
	t0 = clock_ns;
	run_ticks(&s, a, b, 20000);
	assert_int_equal(a->aborts + b->aborts, 2);
	assert_true(clock_ns - t0 >= lim.idle_ns);
	finish_aborted(a, b);
	assert_int_equal(done_reason, XLT_END_IDLE_TIMEOUT);
	free(a);
	free(b);
}

/* A preamble (PROXY protocol header) reaches B first, once B is open, even when A sends nothing; a
 * destination with less room than it takes it in pieces and A's bytes wait behind it; it is not
 * counted as A's bytes; and it cannot be set once A's bytes reached B. */
static void test_preamble(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_CONNECTING, 5);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};
	static const uint8_t pre[] = "HEADER-0123456789"; /* 17 bytes and the NUL */

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, NULL);
	assert_int_equal(xlt_session_preamble(&s, pre, sizeof(pre)), 0);
	assert_int_equal(b->tx_len, 0); /* B still connecting */
	b->s.state = XLT_STREAM_OPEN;
	b->s.ev.on_connected(b->s.ev.arg);
	assert_int_equal(b->tx_len, 5); /* as much as B had room for, with nothing from A */
	assert_true(s.blocked[0]);
	peer_sends(a, "data", 4);
	assert_int_equal(b->tx_len, 5); /* A's bytes wait behind the rest of the preamble */
	assert_int_equal(a->rx_off, 0);
	peer_drains(b, 10);
	assert_int_equal(b->tx_len, 15);
	peer_drains(b, 100);
	assert_int_equal(b->tx_len, sizeof(pre) + 4);
	assert_memory_equal(b->tx, pre, sizeof(pre));
	assert_memory_equal(b->tx + sizeof(pre), "data", 4);
	assert_false(s.blocked[0]);
	/* only A's bytes count as relayed */
	assert_int_equal(st.bytes_a_to_b, 4);
	assert_int_equal(a->s.bytes_in, 4);
	assert_int_equal(b->s.bytes_out, 4);
	assert_int_equal(xlt_session_preamble(&s, pre, sizeof(pre)), -EALREADY);
	xlt_session_abort(&s, XLT_END_ABORTED);
	closed(a, -ECONNABORTED);
	closed(b, -ECONNABORTED);
	assert_int_equal(done_calls, 1);
	free(a);
	free(b);
}

/* An open B with an empty A: the preamble goes at once and A's end of stream follows it. */
static void test_preamble_then_eof(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, CAP);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};

	(void)state;
	reset_globals();
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, NULL);
	assert_int_equal(xlt_session_preamble(&s, (const uint8_t *)"PP", 2), 0);
	assert_int_equal(b->tx_len, 2);
	a->s.peer_done = 1;
	a->s.ev.on_readable(a->s.ev.arg);
	assert_int_equal(b->shutdowns, 1);
	assert_int_equal(st.bytes_a_to_b, 0);
	xlt_session_abort(&s, XLT_END_ABORTED);
	closed(a, -ECONNABORTED);
	closed(b, -ECONNABORTED);
	free(a);
	free(b);
}

/* ---- lending (zero-copy) ----
 * The same fake, lending: lend() describes RX as segments (at most max_peek bytes each) whose hold is
 * the fake itself (gets/puts counted); write_lent() "sends" by reference up to tx_room bytes (copied
 * into tx here only so that the test can check the bytes) and reports them through on_sent when the
 * test says the peer acknowledged them (peer_acks). */
static void h_get(void *hold)
{
	((struct fake *)hold)->gets++;
}

static void h_put(void *hold)
{
	((struct fake *)hold)->puts++;
}

static const struct xlt_hold_ops fake_hops = {h_get, h_put};

static unsigned f_lend(struct xlt_stream *s, size_t skip, struct xlt_seg *v, unsigned max)
{
	struct fake *f = (struct fake *)s;
	size_t off = f->rx_off + skip, step = f->max_peek ? f->max_peek : CAP;
	unsigned k = 0;

	assert_true(off <= f->rx_len);
	for (; k < max && off < f->rx_len; k++) {
		size_t n = f->rx_len - off < step ? f->rx_len - off : step;
		v[k] = (struct xlt_seg){.data = f->rx + off, .len = (uint32_t)n, .hold = f, .hops = &fake_hops};
		off += n;
	}
	return k;
}

static size_t f_write_lent(struct xlt_stream *s, const struct xlt_seg *v, unsigned n)
{
	struct fake *f = (struct fake *)s;
	size_t took = 0;

	assert_false(s->local_done);
	for (unsigned i = 0; i < n && f->tx_room; i++) {
		size_t m = v[i].len < f->tx_room ? v[i].len : f->tx_room;
		memcpy(f->tx + f->tx_len, v[i].data, m);
		f->tx_len += m;
		f->tx_room -= m;
		f->in_flight += m;
		took += m;
		v[i].hops->get(v[i].hold);
		f->held[f->n_held++] = v[i].hold; /* (put all at once when the test acks everything) */
	}
	return took;
}

static void f_consume_eof(struct xlt_stream *s, size_t n)
{
	struct fake *f = (struct fake *)s;

	f_consume(s, n);
	if (f->eof && f->rx_off == f->rx_len)
		s->peer_done = 1; /* as the engines do: end of stream once every byte was released */
}

static const struct xlt_stream_ops lend_ops = {
	.peek = f_peek,
	.consume = f_consume_eof,
	.write = f_write,
	.shutdown = f_shutdown,
	.abort = f_abort,
	.release = f_release,
	.lend = f_lend,
	.write_lent = f_write_lent,
};

/* F's peer acknowledged N bytes in flight: F reports them and its send room opens again. */
static void peer_acks(struct fake *f, size_t n)
{
	assert_true(n <= f->in_flight);
	f->in_flight -= n;
	if (!f->in_flight) {
		while (f->n_held)
			fake_hops.put(f->held[--f->n_held]);
	}
	f->tx_room += n;
	f->s.ev.on_sent(f->s.ev.arg, n);
	f->s.ev.on_writable(f->s.ev.arg);
}

/* Lent bytes keep their space at the source until the destination reports them sent; the bytes
 * arrive intact and in order; end of stream passes only after the last one was delivered; every
 * reference taken is put. */
static void test_lend_relay(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, 300);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};
	uint8_t data[3000];

	(void)state;
	reset_globals();
	a->s.ops = b->s.ops = &lend_ops;
	a->max_peek = 128;
	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + 1);
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, NULL);
	a->eof = 1; /* A's peer sends everything, then its end of stream */
	peer_sends(a, data, sizeof(data));
	/* B took 300 by reference: nothing consumed at A yet, the direction waits for B */
	assert_int_equal(b->tx_len, 300);
	assert_int_equal(a->rx_off, 0);
	assert_int_equal(s.lent[0], 300);
	assert_true(s.blocked[0]);
	assert_int_equal(st.bytes_a_to_b, 300);
	peer_acks(b, 100);
	assert_int_equal(a->rx_off, 100); /* delivered: only now released at the source */
	assert_int_equal(b->tx_len, 400);
	while (b->in_flight)
		peer_acks(b, b->in_flight < 70 ? b->in_flight : 70);
	assert_memory_equal(b->tx, data, sizeof(data));
	assert_int_equal(a->rx_off, sizeof(data));
	assert_int_equal(s.lent[0], 0);
	assert_int_equal(st.bytes_a_to_b, sizeof(data));
	assert_false(s.blocked[0]);
	assert_int_equal(b->shutdowns, 1); /* A's end of stream, after its last byte was delivered */
	assert_int_equal(a->gets, a->puts);
	assert_true(a->gets > 0);
	/* a destination that claims more than it took moves nothing it does not owe */
	b->s.ev.on_sent(b->s.ev.arg, 1000);
	assert_int_equal(a->rx_off, sizeof(data));
	xlt_session_abort(&s, XLT_END_ABORTED);
	finish_aborted(a, b);
	free(a);
	free(b);
}

/* With lending, a destination whose peer stops reading takes nothing more: the direction is blocked
 * and the stall limit ends it, as with copies. A report after the session ended touches nothing. */
static void test_lend_stall_and_late_report(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, 4);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};

	(void)state;
	reset_globals();
	a->s.ops = b->s.ops = &lend_ops;
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, &lim);
	peer_sends(a, "0123456789", 10);
	assert_int_equal(b->tx_len, 4);
	assert_true(s.blocked[0]);
	run_ticks(&s, a, b, 10000);
	assert_int_equal(b->aborts, 1);
	finish_aborted(a, b);
	assert_int_equal(done_reason, XLT_END_CREDIT_STALL_TIMEOUT);
	assert_int_equal(a->rx_off, 0);
	b->s.ev.on_sent(b->s.ev.arg, 4); /* (a buggy engine after on_closed) */
	assert_int_equal(a->rx_off, 0);
	free(a);
	free(b);
}

/* A destination that takes every lent byte (its bound above what the source holds) but delivers
 * none: the source's peer waits, the destination never refuses. The direction counts as blocked from
 * the first tick without a report (held: the lent bytes), and the stall limit ends it; one that keeps
 * delivering is never blocked. */
static void test_lend_stuck_destination(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, 100000);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};
	uint8_t data[2000];

	(void)state;
	reset_globals();
	memset(data, 7, sizeof(data));
	a->s.ops = b->s.ops = &lend_ops;
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, &lim);
	peer_sends(a, data, sizeof(data));
	assert_int_equal(s.lent[0], sizeof(data));
	assert_false(s.blocked[0]); /* took everything */
	/* delivering, a little each tick, for longer than idle_timeout: never blocked, and not idle
	 * either (deliveries are progress: the source lent all it had, it may be waiting for an answer) */
	for (unsigned i = 0; i < 60; i++) {
		peer_acks(b, 25);
		clock_ns += 100 * MS;
		xlt_session_tick(&s, clock_ns);
		assert_false(s.blocked[0]);
	}
	assert_int_equal(a->aborts + b->aborts, 0);
	assert_int_equal(done_calls, 0);
	/* then nothing more: blocked at the next tick, held = what is lent, ended by the stall limit */
	clock_ns += 100 * MS;
	xlt_session_tick(&s, clock_ns);
	assert_true(s.blocked[0]);
	assert_int_equal(st.held_a_to_b, sizeof(data) - 1500);
	assert_int_equal(st.blocked_a_to_b, 1);
	run_ticks(&s, a, b, 10000);
	assert_int_equal(b->aborts, 1);
	finish_aborted(a, b);
	assert_int_equal(done_reason, XLT_END_CREDIT_STALL_TIMEOUT);
	free(a);
	free(b);
}

/* ... and a report unblocks it at once. */
static void test_lend_stuck_then_delivers(void **state)
{
	struct fake *a = fake_new(XLT_STREAM_OPEN, CAP), *b = fake_new(XLT_STREAM_OPEN, 100000);
	struct xlt_route_stats st = {0};
	struct xlt_session s = {0};
	uint8_t data[1000];

	(void)state;
	reset_globals();
	memset(data, 9, sizeof(data));
	a->s.ops = b->s.ops = &lend_ops;
	xlt_session_start(&s, XLT_SESSION_RELAY, &a->s, &b->s, &st, &owner, &lim);
	peer_sends(a, data, sizeof(data));
	run_ticks(&s, a, b, 500);
	assert_true(s.blocked[0]);
	peer_acks(b, 1000);
	assert_false(s.blocked[0]);
	assert_int_equal(st.held_a_to_b, 0);
	assert_int_equal(a->rx_off, 1000);
	run_ticks(&s, a, b, 500);
	assert_false(s.blocked[0]);
	xlt_session_abort(&s, XLT_END_ABORTED);
	finish_aborted(a, b);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_relay_backpressure_integrity),
		cmocka_unit_test(test_half_close_both_ways),
		cmocka_unit_test(test_error_aborts_other_end),
		cmocka_unit_test(test_closed_destination_resets_source),
		cmocka_unit_test(test_connect_refused_and_timeout),
		cmocka_unit_test(test_connect_then_flush),
		cmocka_unit_test(test_echo),
		cmocka_unit_test(test_discard),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_late_attach),
		cmocka_unit_test(test_connect_retry),
		cmocka_unit_test(test_blocked_time_ticks),
		cmocka_unit_test(test_ended_hook),
		cmocka_unit_test(test_held_uses_backlog),
		cmocka_unit_test(test_idle_timeout),
		cmocka_unit_test(test_stall_timeout),
		cmocka_unit_test(test_stream_ended_stall),
		cmocka_unit_test(test_half_closed_timeout),
		cmocka_unit_test(test_half_closed_slow_reader),
		cmocka_unit_test(test_limits_wait_for_connect),
		cmocka_unit_test(test_preamble),
		cmocka_unit_test(test_preamble_then_eof),
		cmocka_unit_test(test_lend_relay),
		cmocka_unit_test(test_lend_stall_and_late_report),
		cmocka_unit_test(test_lend_stuck_destination),
		cmocka_unit_test(test_lend_stuck_then_delivers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
