/* Unit tests of gateway/metrics: how a sample's value is printed, in both formats. A counter that
 * grows past the range where doubles hold every integer (2^53) must read back as exactly the value
 * it had and never print smaller than before (a scraper takes a smaller counter for a reset); a
 * value that is not whole reads back as the same double. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "gateway/metrics.h"

#define P53 9007199254740992.0 /* 2^53 */

/* Renders VALUES[N] as samples of one counter (with the table writer: uint64 counters, when U64 is
 * set) and returns the text (to free). */
static char *render(enum gw_metrics_format f, const double *values, unsigned n, const uint64_t *u64)
{
	struct evbuffer *out = evbuffer_new();
	struct gw_metrics m;
	char *text;
	size_t len;

	assert_non_null(out);
	gw_metrics_begin(&m, out, f);
	if (u64) {
		static const struct xlt_metric_desc desc = {"test_bytes_total", XLT_COUNTER, 0, "bytes",
		                                            NULL};
		const void *bases[8];
		const char *labels[8] = {"0", "1", "2", "3", "4", "5", "6", "7"};
		assert_true(n <= 8);
		for (unsigned i = 0; i < n; i++)
			bases[i] = &u64[i];
		gw_metrics_table(&m, &desc, 1, bases, n, "i", labels);
	} else {
		gw_metrics_family(&m, "test_bytes_total", XLT_COUNTER, "bytes");
		for (unsigned i = 0; i < n; i++)
			gw_metrics_sample(&m, values[i], NULL);
	}
	gw_metrics_end(&m);
	len = evbuffer_get_length(out);
	text = malloc(len + 1);
	assert_non_null(text);
	assert_int_equal(evbuffer_remove(out, text, len), (int)len);
	text[len] = 0;
	evbuffer_free(out);
	return text;
}

/* The values printed in TEXT, in order: after "} " or the family name and a space (Prometheus), after
 * "\"value\":" (JSON). Returns how many. */
static unsigned values_of(enum gw_metrics_format f, char *text, double *v, unsigned max)
{
	unsigned n = 0;
	char *p = text, *end;

	if (f == GW_METRICS_PROMETHEUS) {
		for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
			if (line[0] == '#')
				continue;
			p = strrchr(line, ' ');
			assert_non_null(p);
			assert_true(n < max);
			v[n++] = strtod(p + 1, &end);
			assert_true(end > p + 1 && *end == 0); /* the whole field is the number */
		}
		return n;
	}
	while ((p = strstr(p, "\"value\":"))) {
		p += 8;
		assert_true(n < max);
		v[n++] = strtod(p, &end);
		assert_true(end > p && *end == '}');
		p = end;
	}
	return n;
}

static void check(enum gw_metrics_format f, const double *in, unsigned n, const uint64_t *u64)
{
	char *text = render(f, in, n, u64);
	double out[8];
	unsigned got = values_of(f, text, out, 8);

	free(text);
	assert_int_equal(got, n);
	for (unsigned i = 0; i < n; i++) {
		if (out[i] != in[i])
			fail_msg("sample %u: printed as %.17g, was %.17g", i, out[i], in[i]);
		if (i && out[i] < out[i - 1])
			fail_msg("sample %u: %.17g printed after %.17g (a counter reset to a scraper)", i,
			         out[i], out[i - 1]);
	}
}

/* A byte counter crossing 2^53, as gw_metrics_sample gets it (a double) and as the table writer
 * reads it (a uint64 counter): printed exactly, never decreasing. */
static void test_counter_past_2p53(void **state)
{
	const double in[] = {P53 - 2, P53, P53 + 4e6, 1e19, 18446744073709549568.0};
	const uint64_t u64[] = {(1ull << 53) - 2, 1ull << 53, (1ull << 53) + 4000000, 10000000000000000000ull,
	                        18446744073709549568ull};
	const unsigned n = sizeof(in) / sizeof(in[0]);

	(void)state;
	check(GW_METRICS_PROMETHEUS, in, n, NULL);
	check(GW_METRICS_JSON, in, n, NULL);
	check(GW_METRICS_PROMETHEUS, in, n, u64);
	check(GW_METRICS_JSON, in, n, u64);
}

/* Values that are not whole (durations in seconds, a fraction) read back as the same double. */
static void test_fraction_round_trip(void **state)
{
	const double in[] = {2.5e-9, 0.1, 1.0 / 3, 12.000000001, 123456789.123456789, P53 / 2 - 0.5};

	(void)state;
	check(GW_METRICS_PROMETHEUS, in, sizeof(in) / sizeof(in[0]), NULL);
	check(GW_METRICS_JSON, in, sizeof(in) / sizeof(in[0]), NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counter_past_2p53),
	    cmocka_unit_test(test_fraction_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
