/* Unit tests of eth_side/twheel.c, the per-worker timer wheel (1 ms slots, 4096 of them), on a fake
 * clock: exact firing ticks, timers several revolutions out sharing slots with near ones (the wheel's
 * "laps" replace cascading levels), a long stall that skips whole revolutions, cancel and re-arm,
 * callbacks that re-arm themselves or cancel a timer due in the same slot, and a randomized run that
 * checks every timer fires exactly once, in the first run that reaches its tick. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eth_side/twheel.h"

#define N 2000

struct tm {
	struct eth_timer t;
	uint64_t want; /* tick it should fire at */
	unsigned fired;
	uint64_t fired_at;
	uint64_t period; /* re-arm itself this far out (0: one-shot) */
	struct tm *kill; /* cancel this one when firing */
};

static struct eth_twheel w;
static struct tm tms[N];
static unsigned total_fired;

static void fire(void *arg, struct eth_timer *t)
{
	struct tm *m = (struct tm *)t;

	assert_ptr_equal(arg, &w);
	assert_false(eth_timer_armed(t)); /* disarmed before its call */
	m->fired++;
	m->fired_at = w.now;
	total_fired++;
	if (m->kill)
		eth_timer_cancel(&w, &m->kill->t);
	if (m->period)
		eth_timer_arm(&w, t, w.now + m->period);
}

static void reset(uint64_t now)
{
	memset(tms, 0, sizeof(tms));
	total_fired = 0;
	eth_twheel_init(&w, now);
}

static void test_exact_tick(void **state)
{
	(void)state;
	reset(1000);
	eth_timer_arm(&w, &tms[0].t, 1005);
	assert_true(eth_timer_armed(&tms[0].t));
	assert_int_equal(eth_twheel_run(&w, 1004, fire, &w), 0);
	assert_int_equal(tms[0].fired, 0);
	assert_int_equal(eth_twheel_run(&w, 1005, fire, &w), 1);
	assert_int_equal(tms[0].fired, 1);
	assert_int_equal(tms[0].fired_at, 1005);
	assert_int_equal(w.armed, 0);
	assert_int_equal(eth_twheel_run(&w, 9000, fire, &w), 0); /* one-shot */
	/* a deadline not after the clock fires at the next tick */
	eth_timer_arm(&w, &tms[1].t, 10);
	assert_int_equal(eth_twheel_run(&w, 9000, fire, &w), 0); /* same time: not yet */
	assert_int_equal(eth_twheel_run(&w, 9001, fire, &w), 1);
	assert_int_equal(tms[1].fired_at, 9001);
}

/* Timers 0..3 revolutions out in the same slot: each fires on its own lap, in order. */
static void test_laps(void **state)
{
	(void)state;
	reset(0);
	for (unsigned i = 0; i < 4; i++)
		eth_timer_arm(&w, &tms[i].t, 7 + (uint64_t)i * ETH_TWHEEL_SLOTS);
	eth_timer_arm(&w, &tms[4].t, 8);
	for (uint64_t now = 1; now <= 4 * ETH_TWHEEL_SLOTS + 10; now++)
		eth_twheel_run(&w, now, fire, &w); /* tick by tick */
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(tms[i].fired, 1);
		assert_int_equal(tms[i].fired_at, 7 + (uint64_t)i * ETH_TWHEEL_SLOTS);
	}
	assert_int_equal(tms[4].fired_at, 8);
	assert_int_equal(w.armed, 0);
}

/* The clock jumps by more than a revolution: what is due fires once, what is not stays armed. */
static void test_long_stall(void **state)
{
	(void)state;
	reset(500);
	eth_timer_arm(&w, &tms[0].t, 600);
	eth_timer_arm(&w, &tms[1].t, 500 + 3 * ETH_TWHEEL_SLOTS);
	eth_timer_arm(&w, &tms[2].t, 500 + 3 * ETH_TWHEEL_SLOTS + 1);
	eth_timer_arm(&w, &tms[3].t, 600 + 9 * ETH_TWHEEL_SLOTS); /* same slot as tms[0], 9 laps later */
	assert_int_equal(eth_twheel_run(&w, 500 + 3 * ETH_TWHEEL_SLOTS, fire, &w), 2);
	assert_int_equal(tms[0].fired, 1);
	assert_int_equal(tms[1].fired, 1);
	assert_int_equal(tms[2].fired, 0);
	assert_int_equal(tms[3].fired, 0);
	assert_int_equal(w.armed, 2);
	assert_int_equal(eth_twheel_run(&w, 500 + 3 * ETH_TWHEEL_SLOTS + 1, fire, &w), 1);
	assert_int_equal(eth_twheel_run(&w, 600 + 9 * ETH_TWHEEL_SLOTS - 1, fire, &w), 0);
	assert_int_equal(eth_twheel_run(&w, 600 + 9 * ETH_TWHEEL_SLOTS, fire, &w), 1);
	assert_int_equal(w.armed, 0);
}

static void test_cancel_rearm(void **state)
{
	(void)state;
	reset(0);
	eth_timer_cancel(&w, &tms[0].t); /* never armed: harmless */
	eth_timer_arm(&w, &tms[0].t, 50);
	eth_timer_arm(&w, &tms[1].t, 50);
	eth_timer_cancel(&w, &tms[0].t);
	eth_timer_cancel(&w, &tms[0].t); /* twice: harmless */
	assert_false(eth_timer_armed(&tms[0].t));
	eth_timer_arm(&w, &tms[1].t, 70); /* re-arm moves it */
	eth_timer_arm(&w, &tms[2].t, 60);
	eth_timer_arm(&w, &tms[2].t, 40); /* earlier */
	assert_int_equal(w.armed, 2);
	assert_int_equal(eth_twheel_run(&w, 69, fire, &w), 1);
	assert_int_equal(tms[2].fired_at, 40);
	assert_int_equal(tms[0].fired, 0);
	assert_int_equal(tms[1].fired, 0);
	assert_int_equal(eth_twheel_run(&w, 70, fire, &w), 1);
	assert_int_equal(tms[1].fired_at, 70);
}

/* A callback cancels another timer due in the same slot (detached list) and a periodic one re-arms
 * itself, including with a period longer than a revolution. */
static void test_callbacks(void **state)
{
	(void)state;
	reset(0);
	eth_timer_arm(&w, &tms[0].t, 30);
	eth_timer_arm(&w, &tms[1].t, 30);
	eth_timer_arm(&w, &tms[2].t, 30);
	/* 1 is cancelled by whichever of 0 and 2 runs first (the slot is LIFO, so 2): it never fires */
	tms[2].kill = &tms[1];
	tms[0].kill = &tms[1];
	tms[3].period = 1000;
	eth_timer_arm(&w, &tms[3].t, 1000);
	tms[4].period = ETH_TWHEEL_SLOTS + 3;
	eth_timer_arm(&w, &tms[4].t, ETH_TWHEEL_SLOTS + 3);
	for (uint64_t now = 0; now <= 5 * ETH_TWHEEL_SLOTS; now += 7)
		eth_twheel_run(&w, now, fire, &w);
	assert_int_equal(tms[0].fired, 1);
	assert_int_equal(tms[2].fired, 1);
	assert_int_equal(tms[1].fired, 0);
	assert_int_equal(tms[3].fired, 5 * ETH_TWHEEL_SLOTS / 1000);
	assert_int_equal(tms[4].fired, 5 * ETH_TWHEEL_SLOTS / (ETH_TWHEEL_SLOTS + 3));
	assert_int_equal(w.armed, 2);
}

/* Random deadlines (up to 3 revolutions), random clock steps (some longer than a revolution):
 * every timer fires once, in the first run whose clock reaches its deadline. Some are re-armed or
 * cancelled along the way. */
static void test_random(void **state)
{
	uint64_t now = 12345, prev;
	unsigned armed = 0, cancelled = 0;

	(void)state;
	srand(42);
	reset(now);
	for (unsigned i = 0; i < N; i++) {
		tms[i].want = now + 1 + (uint64_t)(rand() % (3 * ETH_TWHEEL_SLOTS));
		eth_timer_arm(&w, &tms[i].t, tms[i].want);
		armed++;
	}
	while (total_fired + cancelled < armed) {
		prev = now;
		now +=
		    rand() % 10 == 0 ? (uint64_t)(rand() % (2 * ETH_TWHEEL_SLOTS)) : (uint64_t)(rand() % 50);
		/* shuffle a few pending ones */
		for (unsigned k = 0; k < 3; k++) {
			struct tm *m = &tms[rand() % N];
			if (!eth_timer_armed(&m->t))
				continue;
			if (rand() % 4 == 0) {
				eth_timer_cancel(&w, &m->t);
				m->want = 0;
				cancelled++;
			} else {
				m->want = now + 1 + (uint64_t)(rand() % ETH_TWHEEL_SLOTS);
				eth_timer_arm(&w, &m->t, m->want);
			}
		}
		eth_twheel_run(&w, now, fire, &w);
		for (unsigned i = 0; i < N; i++) {
			struct tm *m = &tms[i];
			if (!m->want)
				continue;
			if (m->want <= now) {
				assert_int_equal(m->fired, 1);
				assert_true(m->fired_at >= m->want && m->fired_at <= now);
				assert_true(prev < m->want); /* not late by a whole run */
				m->want = 0;
			} else {
				assert_int_equal(m->fired, 0);
			}
		}
		assert_int_equal(w.armed, armed - total_fired - cancelled);
	}
	for (unsigned i = 0; i < N; i++)
		assert_true(tms[i].fired <= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exact_tick), cmocka_unit_test(test_laps),
	    cmocka_unit_test(test_long_stall), cmocka_unit_test(test_cancel_rearm),
	    cmocka_unit_test(test_callbacks),  cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
