/* Unit tests of gateway/stats.c's request head scanner (gw_http_head_scan): the head ends at its
 * first empty line, written "\r\n\r\n", "\n\n" or "\n\r\n"; the bytes after it are not the head's;
 * anything short of that is not an end. Fed in pieces (every split into two and three reads, a byte
 * at a time: the terminator split across reads included), it finds the same end as in one read, and
 * each byte is looked at once (what a read scans is what it brought). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/gw.h"

/* The head length S has in one read (0: not complete). */
static size_t whole(const char *s, size_t n)
{
	struct gw_http_head h = {0};

	return gw_http_head_scan(&h, s, n) ? h.len : 0;
}

/* Every split of S into reads of the pieces [0, i), [i, j), [j, n) finds the head as one read does;
 * a read after the end adds nothing. */
static void check_splits(const char *s, size_t want)
{
	size_t n = strlen(s);

	assert_int_equal(whole(s, n), want);
	for (size_t i = 0; i <= n; i++) {
		for (size_t j = i; j <= n; j++) {
			struct gw_http_head h = {0};
			bool done = gw_http_head_scan(&h, s, i);
			size_t before = h.len;

			/* scanned: exactly the bytes fed, up to the end */
			assert_int_equal(before, done ? want : i);
			done = gw_http_head_scan(&h, s + i, j - i);
			assert_true(h.len >= before && h.len <= j);
			done = gw_http_head_scan(&h, s + j, n - j);
			assert_int_equal(done, want != 0);
			assert_int_equal(done ? h.len : 0, want);
		}
	}
	/* a byte at a time */
	struct gw_http_head h = {0};
	size_t k;
	for (k = 0; k < n && !gw_http_head_scan(&h, s + k, 1); k++)
		assert_int_equal(h.len, k + 1);
	assert_int_equal(h.complete ? h.len : 0, want);
}

static void test_ends(void **state)
{
	static const char crlf[] = "GET /metrics HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n";
	static const char lf[] = "GET /metrics HTTP/1.0\nHost: a\n\n";
	static const char mixed[] = "GET /health HTTP/1.1\nHost: a\n\r\n";

	(void)state;
	check_splits(crlf, strlen(crlf));
	check_splits(lf, strlen(lf));
	check_splits(mixed, strlen(mixed));
	/* the bytes after the head (a body, a second request) are not scanned as its */
	check_splits("POST /backends/r/b?state=drain HTTP/1.1\r\n\r\nbody\r\n\r\n",
	             strlen("POST /backends/r/b?state=drain HTTP/1.1\r\n\r\n"));
	check_splits("GET / HTTP/1.1\n\nGET / HTTP/1.1\n\n", strlen("GET / HTTP/1.1\n\n"));
	/* a request line alone, then its empty line */
	check_splits("GET / HTTP/1.0\r\n\r\n", 18);
}

static void test_not_ends(void **state)
{
	(void)state;
	check_splits("GET /metrics HTTP/1.1\r\nHost: a\r\n", 0);
	check_splits("GET /metrics HTTP/1.1\r\nHost: a\r\n\r", 0);
	check_splits("GET /metrics HTTP/1.1\r\nHost: a\r\r\n", 0); /* a line "\r", not empty */
	check_splits("GET /metrics HTTP/1.1\n\r\r\nHost: a\r\n", 0);
	check_splits("GET /metrics HTTP/1.1\r\nX: \r\r\r\n", 0);
	check_splits("", 0);
	/* the end comes later */
	check_splits("GET / HTTP/1.1\r\nX: \r\r\nY: \n\r\n", strlen("GET / HTTP/1.1\r\nX: \r\r\nY: \n\r\n"));
}

/* A head of STATS_MAX_HEAD (8 KiB) a byte a read: found once, at its end, every byte scanned once. */
static void test_dribble(void **state)
{
	static char buf[8192 + 4];
	struct gw_http_head h = {0};
	size_t n = sizeof(buf) - 4;

	(void)state;
	memcpy(buf, "GET /metrics HTTP/1.1\r\nX-Pad: ", 30);
	memset(buf + 30, 'a', n - 30);
	memcpy(buf + n, "\r\n\r\n", 4);
	for (size_t k = 0; k < sizeof(buf); k++) {
		bool done = gw_http_head_scan(&h, buf + k, 1);
		assert_int_equal(h.len, k + 1);
		assert_int_equal(done, k == sizeof(buf) - 1);
	}
	assert_true(h.complete);
	assert_int_equal(h.len, sizeof(buf));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ends),
	    cmocka_unit_test(test_not_ends),
	    cmocka_unit_test(test_dribble),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
