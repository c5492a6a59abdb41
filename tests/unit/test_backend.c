/* Unit tests of gateway/backend.c's passive check (eject_after): who counts as a different client of a
 * run of early resets, and the guard that never ejects a pool's last usable backend. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/conf-t.h"
#include "gateway/backend.h"
#include "gateway/gw.h"
#include "translate/ip.h"

#define EJECT_MS 10000ull

static struct gw_daemon d;
static struct gw_route *r;

/* Route "rt" with a pool of N tcp: backends 198.18.1.1..N:80, eject_after 5, eject_time 10 s. */
static void pool_of(unsigned n)
{
	memset(&d, 0, sizeof(d));
	d.n_workers = 1;
	d.workers[0].d = &d;
	r = aligned_alloc(alignof(struct gw_route), sizeof(*r));
	assert_non_null(r);
	memset(r, 0, sizeof(*r));
	strcpy(r->conf.name, "rt");
	r->conf.n_backends = n;
	for (unsigned k = 0; k < n; k++) {
		r->conf.backends[k].ep.kind = CONF_EP_TCP;
		r->conf.backends[k].ep.addr = xlt_ip_v4(htonl(0xc6120101u + k));
		r->conf.backends[k].ep.port = 80;
		r->conf.backends[k].weight = 1;
	}
	r->conf.eject_after = 5;
	r->conf.eject_time_ms = EJECT_MS;
	r->pool = gw_pool_create(&d, &r->conf);
	assert_non_null(r->pool);
	d.routes[0] = r;
	d.n_routes = 1;
}

static int teardown(void **state)
{
	(void)state;
	gw_pool_destroy(r->pool);
	gw_backends_free(&d);
	free(r);
	return 0;
}

/* Backend K meets N early resets from the client at address A. */
static void resets(unsigned k, const char *a, unsigned n)
{
	struct xlt_ip ip;

	assert_int_equal(xlt_ip_parse(a, &ip), 0);
	for (unsigned i = 0; i < n; i++)
		gw_backend_outcome(&d.workers[0], r->pool->b[k], true, false, &ip);
}

/* IPv6 clients count by /48: one site (a /48, or a /56 of it) resetting its own sessions from three of
 * its /64s is one client, and ejects nothing; three sites do. */
static void test_ipv6_site_is_one_client(void **state)
{
	struct gw_backend *b;

	(void)state;
	pool_of(2);
	b = r->pool->b[0];
	resets(0, "2001:db8:5:1::1", 2);
	resets(0, "2001:db8:5:2::1", 2);
	resets(0, "2001:db8:5:ff03::7", 2);
	gw_backends_eject(&d, 1000000000ull);
	assert_false(b->ejected);
	resets(0, "2001:db8:6::1", 1);
	gw_backends_eject(&d, 1000000000ull);
	assert_false(b->ejected); /* (two sites) */
	resets(0, "2001:db8:7:1::1", 1);
	gw_backends_eject(&d, 1000000000ull);
	assert_true(b->ejected);
}

/* Three IPv4 addresses are three clients. */
static void test_ipv4_three_clients(void **state)
{
	(void)state;
	pool_of(2);
	resets(0, "198.18.0.10", 2);
	resets(0, "198.18.0.11", 2);
	resets(0, "198.18.0.12", 1);
	gw_backends_eject(&d, 1000000000ull);
	assert_true(r->pool->b[0]->ejected);
}

/* A's ejection ends while health checks have taken it down, in the tick where B's run would eject B:
 * B is the pool's last usable backend and stays (A, lifted, still takes nothing). The guard used to
 * count A as usable again and ejected both: every session refused until the next tick. */
static void test_last_usable_after_lifted_down(void **state)
{
	struct gw_backend *a, *b;
	uint64_t t0 = 1000000000ull;

	(void)state;
	pool_of(2);
	a = r->pool->b[0];
	b = r->pool->b[1];
	resets(0, "198.18.0.10", 2);
	resets(0, "198.18.0.11", 2);
	resets(0, "198.18.0.12", 1);
	gw_backends_eject(&d, t0);
	assert_true(a->ejected);
	a->up = false; /* its checks failed meanwhile */
	resets(1, "198.18.0.20", 2);
	resets(1, "198.18.0.21", 2);
	resets(1, "198.18.0.22", 1);
	gw_backends_eject(&d, t0 + EJECT_MS * 1000000ull + 1);
	assert_false(a->ejected);
	assert_false(b->ejected);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_ipv6_site_is_one_client, teardown),
	    cmocka_unit_test_teardown(test_ipv4_three_clients, teardown),
	    cmocka_unit_test_teardown(test_last_usable_after_lifted_down, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
