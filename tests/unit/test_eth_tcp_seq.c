/* Unit tests of eth_side/tcp_seq.h: sequence arithmetic modulo 2^32 (RFC 9293 3.4) and the segment
 * acceptability test (RFC 9293 3.10.7.4, with the one deviation documented there), around zero,
 * across the wrap and at the 2^31 limit where "before" stops being meaningful. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eth_side/tcp_seq.h"

static void test_compare_plain(void **state)
{
	(void)state;
	assert_true(eth_seq_lt(1, 2));
	assert_false(eth_seq_lt(2, 2));
	assert_true(eth_seq_leq(2, 2));
	assert_true(eth_seq_gt(3, 2));
	assert_true(eth_seq_geq(2, 2));
	assert_false(eth_seq_gt(2, 2));
	assert_int_equal(eth_seq_diff(10, 3), 7);
	assert_int_equal(eth_seq_diff(3, 10), -7);
}

static void test_compare_wrap(void **state)
{
	static const uint32_t bases[] = {0, 1, 0x7fffffffu, 0x80000000u, 0xfffffff0u, 0xffffffffu};

	(void)state;
	/* 0xffffffff comes just before 0 */
	assert_true(eth_seq_lt(0xffffffffu, 0));
	assert_true(eth_seq_gt(0, 0xffffffffu));
	assert_true(eth_seq_lt(0xfffffff0u, 0x10));
	assert_int_equal(eth_seq_diff(0x10, 0xfffffff0u), 0x20);
	assert_int_equal(eth_seq_max(0xfffffff0u, 0x10), 0x10);
	assert_int_equal(eth_seq_min(0xfffffff0u, 0x10), 0xfffffff0u);
	for (unsigned i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		uint32_t a = bases[i];
		/* up to 2^31 - 1 apart, the order is a strict one, whatever the base */
		for (uint32_t d = 1; d && d < 0x80000000u; d = d * 3 + 1) {
			assert_true(eth_seq_lt(a, a + d));
			assert_false(eth_seq_lt(a + d, a));
			assert_true(eth_seq_gt(a + d, a));
			assert_true(eth_seq_leq(a, a + d));
			assert_false(eth_seq_geq(a, a + d));
			assert_int_equal(eth_seq_max(a, a + d), a + d);
			assert_int_equal(eth_seq_min(a + d, a), a);
		}
		assert_true(eth_seq_lt(a, a + 0x7fffffffu));
		/* exactly 2^31 apart each is "before" the other: the reason windows stay below 2^30 */
		assert_true(eth_seq_lt(a, a + 0x80000000u));
		assert_true(eth_seq_lt(a + 0x80000000u, a));
		/* past 2^31 the order flips: a far "later" number reads as earlier */
		assert_true(eth_seq_gt(a, a + 0x80000001u));
	}
}

static void test_in_range(void **state)
{
	(void)state;
	assert_true(eth_seq_in(5, 5, 6));
	assert_false(eth_seq_in(6, 5, 6));
	assert_false(eth_seq_in(5, 5, 5)); /* empty */
	assert_true(eth_seq_in(0, 0xfffffff0u, 0x10));
	assert_true(eth_seq_in(0xfffffff0u, 0xfffffff0u, 0x10));
	assert_false(eth_seq_in(0x10, 0xfffffff0u, 0x10));
	assert_false(eth_seq_in(0xffffffefu, 0xfffffff0u, 0x10));
}

/* The four cases of RFC 9293's acceptability table, everywhere on the circle. */
static void test_acceptable(void **state)
{
	static const uint32_t bases[] = {0, 1000, 0x7fffff00u, 0xffffff00u, 0xfffffffeu, 0xffffffffu};

	(void)state;
	for (unsigned i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		uint32_t r = bases[i], w = 1000;

		/* length 0, window 0: only SEQ = RCV.NXT */
		assert_true(eth_seq_acceptable(r, 0, r, 0));
		assert_false(eth_seq_acceptable(r + 1, 0, r, 0));
		assert_false(eth_seq_acceptable(r - 1, 0, r, 0));
		/* length 0, window > 0: RCV.NXT <= SEQ <= RCV.NXT + WND (the right edge: our deviation) */
		assert_true(eth_seq_acceptable(r, 0, r, w));
		assert_true(eth_seq_acceptable(r + w - 1, 0, r, w));
		assert_true(eth_seq_acceptable(r + w, 0, r, w));
		assert_false(eth_seq_acceptable(r + w + 1, 0, r, w));
		assert_false(eth_seq_acceptable(r - 1, 0, r, w));
		/* length > 0, window 0: never */
		assert_false(eth_seq_acceptable(r, 1, r, 0));
		assert_false(eth_seq_acceptable(r, 1000, r, 0));
		/* length > 0, window > 0: first or last byte inside */
		assert_true(eth_seq_acceptable(r, 1, r, w));
		assert_true(eth_seq_acceptable(r + w - 1, 100, r, w)); /* straddles the right edge */
		assert_false(eth_seq_acceptable(r + w, 1, r, w));
		assert_true(eth_seq_acceptable(r - 50, 100, r, w));   /* starts old, ends new */
		assert_false(eth_seq_acceptable(r - 100, 100, r, w)); /* all old: ends at r - 1 */
		assert_true(eth_seq_acceptable(r - 100, 101, r, w));
		assert_false(eth_seq_acceptable(r + (1u << 30), 100, r, w));
		assert_false(eth_seq_acceptable(r - (1u << 30), 100, r, w));
		/* a window scaled to 1 GiB (RFC 7323's largest) still works across the wrap */
		assert_true(eth_seq_acceptable(r + (1u << 30) - 1, 1, r, 1u << 30));
		assert_false(eth_seq_acceptable(r + (1u << 30), 1, r, 1u << 30));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_compare_plain),
	    cmocka_unit_test(test_compare_wrap),
	    cmocka_unit_test(test_in_range),
	    cmocka_unit_test(test_acceptable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
