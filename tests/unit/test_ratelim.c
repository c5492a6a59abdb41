/* Unit tests of translate/ratelim.h, the log rate limiter: the first line goes, lines within the
 * interval are held back and counted, the next line written after it reports exactly that count
 * (then the count starts again), the interval runs from the line written (not from the held-back
 * ones), and a clock that reads 0 at the start (a fresh limiter) still lets the first line go.
 * The window count (xlt_window): MAX events pass in a window, the rest are held back and not
 * counted, and the next window starts with the first event after it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "translate/ratelim.h"

#define IV 1000u

static void test_first_goes(void **state)
{
	struct xlt_ratelim r = {0};
	uint64_t n = 99;

	(void)state;
	assert_true(xlt_ratelim_ok(&r, 0, IV, &n));
	assert_int_equal(n, 0);
	r = (struct xlt_ratelim){0};
	n = 99;
	assert_true(xlt_ratelim_ok(&r, 123456789, IV, &n));
	assert_int_equal(n, 0);
}

static void test_counts_suppressed(void **state)
{
	struct xlt_ratelim r = {0};
	uint64_t n = 0;

	(void)state;
	assert_true(xlt_ratelim_ok(&r, 5000, IV, &n));
	n = 77; /* untouched while lines are held back */
	for (unsigned i = 0; i < 7; i++)
		assert_false(xlt_ratelim_ok(&r, 5000 + i * 100, IV, &n));
	assert_int_equal(n, 77);
	assert_false(xlt_ratelim_ok(&r, 5000 + IV - 1, IV, &n)); /* one tick short */
	assert_true(xlt_ratelim_ok(&r, 5000 + IV, IV, &n));
	assert_int_equal(n, 8);
	/* the count starts again */
	assert_false(xlt_ratelim_ok(&r, 5000 + IV + 1, IV, &n));
	assert_true(xlt_ratelim_ok(&r, 5000 + 2 * IV, IV, &n));
	assert_int_equal(n, 1);
	/* a quiet spell: nothing held back, the next line says so */
	assert_true(xlt_ratelim_ok(&r, 5000 + 10 * IV, IV, &n));
	assert_int_equal(n, 0);
}

/* One line per interval at most, whatever the rate of attempts: over a long run of attempts every
 * attempt is either written or counted in the next line written. */
static void test_long_run(void **state)
{
	struct xlt_ratelim r = {0};
	uint64_t n, written = 0, reported = 0, last = 0, attempts = 0;
	bool any = false;

	(void)state;
	for (uint64_t t = 1; t <= 100 * IV; t += 7) {
		attempts++;
		if (xlt_ratelim_ok(&r, t, IV, &n)) {
			if (any)
				assert_true(t - last >= IV);
			any = true;
			last = t;
			written++;
			reported += n;
		}
	}
	assert_int_equal(written, 100);
	assert_int_equal(written + reported + r.suppressed, attempts);
}

static void test_window(void **state)
{
	struct xlt_window w = {0};

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		assert_true(xlt_window_ok(&w, 10 + i, IV, 3)); /* (a clock near 0: one window from 0) */
	assert_false(xlt_window_ok(&w, 20, IV, 3));
	assert_false(xlt_window_ok(&w, IV - 1, IV, 3));
	assert_true(xlt_window_ok(&w, IV, IV, 3)); /* a new window, from this event */
	assert_int_equal(w.start, IV);
	assert_true(xlt_window_ok(&w, 2 * IV - 1, IV, 3));
	assert_true(xlt_window_ok(&w, 2 * IV - 1, IV, 3));
	assert_false(xlt_window_ok(&w, 2 * IV - 1, IV, 3));
	assert_int_equal(w.n, 3); /* held back: not counted */
	assert_true(xlt_window_ok(&w, 5 * IV + 7, IV, 3));
	assert_int_equal(w.start, 5 * IV + 7);
	assert_int_equal(w.n, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_goes),
	    cmocka_unit_test(test_counts_suppressed),
	    cmocka_unit_test(test_long_run),
	    cmocka_unit_test(test_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
