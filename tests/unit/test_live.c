/* Unit tests of gateway/live.c: a replaced snapshot is freed only once every worker has passed its
 * quiescent point since, snapshots are capped at the sizes fixed at start, and a worker thread reading
 * snapshots while the control thread publishes and sweeps 20,000 of them never reads freed memory
 * (the ASan build reports any use after free). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/conf-t.h"
#include "gateway/gw.h"

static struct gw_daemon d;
static struct conf c;

static void setup_daemon(unsigned n_workers, uint32_t cap)
{
	memset(&d, 0, sizeof(d));
	d.n_workers = n_workers;
	d.cap_sessions = cap;
	for (unsigned i = 0; i < n_workers; i++)
		d.workers[i].d = &d;
}

static unsigned n_retired(void)
{
	unsigned n = 0;

	for (struct gw_live *l = SLIST_FIRST(&d.live_retired); l; l = SLIST_NEXT(l, retired_link))
		n++;
	return n;
}

static struct gw_live *make(uint32_t max_sessions, uint64_t idle)
{
	struct gw_live *l;

	c.gateway.max_sessions = max_sessions;
	c.gateway.idle_sleep_us = idle;
	l = gw_live_make(&d, &c);
	assert_non_null(l);
	return l;
}

static void test_grace_period(void **state)
{
	struct gw_live *a, *b;

	(void)state;
	setup_daemon(2, 100);
	a = make(10, 5);
	gw_live_publish(&d, a);
	assert_int_equal(n_retired(), 0);
	assert_ptr_equal(gw_live_enter(&d.workers[0]), a);
	assert_ptr_equal(gw_live_enter(&d.workers[1]), a);

	b = make(20, 5);
	gw_live_publish(&d, b);
	gw_live_sweep(&d);
	assert_int_equal(n_retired(), 1); /* nobody has moved on yet: A stays */
	assert_ptr_equal(gw_live_enter(&d.workers[0]), b);
	gw_live_sweep(&d);
	assert_int_equal(n_retired(), 1); /* worker 1 may still read A */
	assert_int_equal(d.workers[1].live->max_sessions, 10);
	assert_ptr_equal(gw_live_enter(&d.workers[1]), b);
	gw_live_sweep(&d);
	assert_int_equal(n_retired(), 0);
	gw_live_fini(&d);
	assert_null(d.live);
}

static void test_stuck_worker_holds_every_retired(void **state)
{
	(void)state;
	setup_daemon(3, 100);
	gw_live_publish(&d, make(1, 0));
	for (unsigned i = 0; i < 3; i++)
		gw_live_enter(&d.workers[i]);
	for (unsigned k = 0; k < 10; k++) {
		gw_live_publish(&d, make(2 + k, 0));
		gw_live_enter(&d.workers[0]);
		gw_live_enter(&d.workers[1]); /* worker 2 never comes back */
		gw_live_sweep(&d);
	}
	assert_int_equal(n_retired(), 10);
	gw_live_enter(&d.workers[2]);
	gw_live_sweep(&d);
	assert_int_equal(n_retired(), 0);
	assert_int_equal(d.live->max_sessions, 11);
	gw_live_fini(&d); /* the leak check of the ASan build covers the rest */
}

static void test_capped_at_start_size(void **state)
{
	struct gw_live *l;

	(void)state;
	setup_daemon(1, 16);
	l = make(1000000, 7);
	assert_int_equal(l->max_sessions, 16);
	assert_int_equal(l->idle_sleep_us, 7);
	free(l);
	l = make(4, 7);
	assert_int_equal(l->max_sessions, 4);
	free(l);
}

static int stop;

static void *worker(void *arg)
{
	struct gw_worker *w = arg;
	uint64_t sum = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		const struct gw_live *l = gw_live_enter(w);
		/* read the snapshot a while, as a round would */
		for (unsigned i = 0; i < 50; i++)
			sum += __atomic_load_n(&l->max_sessions, __ATOMIC_RELAXED) + l->idle_sleep_us;
	}
	return (void *)(uintptr_t)sum;
}

static void test_concurrent_publish(void **state)
{
	pthread_t t[2];

	(void)state;
	setup_daemon(2, 1000000);
	stop = 0;
	gw_live_publish(&d, make(1, 1));
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, &d.workers[i]), 0);
	for (unsigned k = 0; k < 20000; k++) {
		gw_live_publish(&d, make(k + 2, k));
		gw_live_sweep(&d);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		gw_live_enter(&d.workers[i]); /* one more quiescent point, after the last publication */
	}
	gw_live_sweep(&d);
	assert_int_equal(n_retired(), 0);
	assert_int_equal(d.live->max_sessions, 20001);
	gw_live_fini(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grace_period),
		cmocka_unit_test(test_stuck_worker_holds_every_retired),
		cmocka_unit_test(test_capped_at_start_size),
		cmocka_unit_test(test_concurrent_publish),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
