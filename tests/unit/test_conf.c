/* Unit tests of conf/: values, units, ranges, defaults, and every bad file in tests/unit/conf-bad/.
 *
 * Each bad file states the errors it must produce in "# expect: LINE: text" comments; the test checks
 * that exactly those messages come out, each as FILE:LINE: ... , and nothing else. Run from the
 * project root (tests/run does). */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "conf/conf.h"
#include "translate/ip.h"

struct errors {
	unsigned n;
	char msg[32][512];
};

static void collect(void *arg, const char *msg)
{
	struct errors *e = arg;

	if (e->n < 32)
		snprintf(e->msg[e->n], sizeof(e->msg[0]), "%s", msg);
	e->n++;
}

static struct conf *load_str(const char *text, struct errors *e)
{
	memset(e, 0, sizeof(*e));
	return conf_load_mem("t.conf", text, strlen(text), collect, e);
}

static uint32_t ip(const char *s)
{
	struct in_addr a;

	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a.s_addr;
}

/* An address of either family as struct xlt_ip. */
static struct xlt_ip xip(const char *s)
{
	struct xlt_ip a;

	assert_int_equal(xlt_ip_parse(s, &a), 0);
	return a;
}

static bool allows(const struct conf_route *r, const char *s)
{
	struct xlt_ip a = xip(s);

	return conf_route_allows(r, &a);
}

static void test_defaults(void **state)
{
	struct errors e;
	struct conf *c = load_str("", &e);

	(void)state;
	assert_non_null(c);
	assert_int_equal(e.n, 0);
	assert_int_equal(c->gateway.workers, 1);
	assert_int_equal(c->gateway.stats.port, 9100);
	assert_int_equal(c->gateway.stats.addr.s_addr, ip("127.0.0.1"));
	assert_int_equal(c->gateway.drain_timeout_ms, 10000);
	assert_int_equal(c->gateway.memory_limit, 1ull << 30);
	assert_int_equal(c->gateway.idle_sleep_us, 100);
	assert_int_equal(c->gateway.busy_poll_us, 200);
	assert_int_equal(c->ib.rbuf_size, 128 * 1024);
	assert_int_equal(c->ib.rq_depth, 384);
	assert_int_equal(c->ib.inline_size, 64);
	assert_int_equal(c->eth.mtu, 1500);
	assert_int_equal(c->eth.time_wait_ms, 60000);
	assert_int_equal(c->eth.keepalive_ms, 0);
	assert_int_equal(c->eth.user_timeout_ms, 60000);
	assert_string_equal(c->eth.vdev, "");
	assert_int_equal(c->n_routes, 0);
	conf_free(c);
}

static void test_example_file(void **state)
{
	struct errors e = {0};
	struct conf *c = conf_load("conf/ibgw.conf", collect, &e);

	(void)state;
	for (unsigned i = 0; i < e.n && i < 32; i++)
		print_message("unexpected: %s\n", e.msg[i]);
	assert_non_null(c);
	assert_int_equal(c->n_routes, 5);
	assert_string_equal(c->routes[0].name, "web-out");
	assert_int_equal(c->routes[0].listen.kind, CONF_EP_IB);
	assert_int_equal(c->routes[0].listen.port, 8080);
	assert_int_equal(c->routes[0].connect.kind, CONF_EP_TCP);
	assert_int_equal(xlt_ip_to_v4(&c->routes[0].connect.addr), ip("198.18.0.10"));
	assert_int_equal(c->routes[0].connect.port, 80);
	assert_int_equal(c->routes[0].ib_rbuf_size, 256 * 1024);
	assert_int_equal(c->routes[0].n_backends, 1);
	assert_int_equal(c->routes[0].backends[0].weight, 1);
	assert_int_equal(c->routes[1].n_backends, 3);
	assert_int_equal(c->routes[1].backends[0].weight, 2);
	assert_int_equal(c->routes[1].backends[2].max_sessions, 100);
	assert_int_equal(c->routes[1].check_interval_ms, 2000);
	assert_int_equal(c->routes[2].n_allow, 3); /* an IPv6 net among them */
	assert_int_equal(c->routes[2].connect.kind, CONF_EP_IB);
	assert_int_equal(c->routes[0].proxy_protocol, CONF_PROXY_V2);
	/* unset per-route buffers inherit the sections' defaults */
	assert_int_equal(c->routes[3].ib_rbuf_size, c->ib.rbuf_size);
	assert_int_equal(c->routes[4].tcp_sbuf_size, c->eth.sbuf_size);
	assert_int_equal(c->routes[4].connect.kind, CONF_EP_DISCARD);
	assert_int_equal(c->routes[4].n_backends, 0);
	assert_int_equal(c->eth.address.prefix, 24);
	assert_int_equal(c->eth.gateway.s_addr, ip("198.18.0.254"));
	conf_free(c);
}

static void test_units(void **state)
{
	struct errors e;
	struct conf *c = load_str("[gateway]\n"
				  "drain_timeout = 2m\n"
				  "memory_limit = 3G\n"
				  "idle_sleep = 1ms\n"
				  "busy_poll = 0\n"
				  "[ib]\n"
				  "rbuf_size = 64KiB\n"
				  "sbuf_size = 1m\n"
				  "keepalive = 1h\n"
				  "[eth]\n"
				  "rbuf_size = 4096\n"
				  "time_wait = 500ms\n"
				  "keepalive = 30s\n",
				  &e);

	(void)state;
	assert_non_null(c);
	assert_int_equal(c->gateway.drain_timeout_ms, 120000);
	assert_int_equal(c->gateway.memory_limit, 3ull << 30);
	assert_int_equal(c->gateway.idle_sleep_us, 1000);
	assert_int_equal(c->gateway.busy_poll_us, 0);
	assert_int_equal(c->ib.rbuf_size, 64 * 1024);
	assert_int_equal(c->ib.sbuf_size, 1 << 20);
	assert_int_equal(c->ib.keepalive_ms, 3600 * 1000);
	assert_int_equal(c->eth.rbuf_size, 4096);
	assert_int_equal(c->eth.time_wait_ms, 500);
	assert_int_equal(c->eth.keepalive_ms, 30000);
	conf_free(c);
}

static void test_ranges_inclusive(void **state)
{
	struct errors e;
	struct conf *c;

	(void)state;
	c = load_str("[gateway]\nworkers = 64\n[ib]\nrq_depth = 16\nsq_depth = 65534\n", &e);
	assert_non_null(c);
	conf_free(c);
	c = load_str("[gateway]\nworkers = 65\n", &e);
	assert_null(c);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(e.n, 1);
	assert_string_equal(e.msg[0], "t.conf:2: workers: '65' is out of range [1, 64]");
	c = load_str("[gateway]\ndrain_timeout = 1500us\n", &e);
	assert_null(c);
	assert_non_null(strstr(e.msg[0], "t.conf:2: drain_timeout: '1500us' is finer than"));
}

static void test_comments_and_spacing(void **state)
{
	struct errors e;
	struct conf *c = load_str("; leading comment\n"
				  "# another\n"
				  "\n"
				  "  [gateway]   ; inline comment after a section\n"
				  "workers=2 ; inline comment\n"
				  "log_level   =   debug\n",
				  &e);

	(void)state;
	assert_non_null(c);
	assert_int_equal(c->gateway.workers, 2);
	assert_int_equal(c->gateway.log_level, CONF_LOG_DEBUG);
	conf_free(c);
}

static void test_allow(void **state)
{
	struct errors e;
	struct conf *c = load_str("[route r]\nlisten = ib:1\nconnect = echo\nallow = 198.18.4.0/22 198.19.0.7\n", &e);
	const struct xlt_ip none = {0};

	(void)state;
	assert_non_null(c);
	assert_int_equal(c->routes[0].n_allow, 2);
	assert_true(allows(&c->routes[0], "198.18.7.255"));
	assert_false(allows(&c->routes[0], "198.18.8.0"));
	assert_true(allows(&c->routes[0], "198.19.0.7"));
	assert_false(allows(&c->routes[0], "198.19.0.8"));
	assert_false(allows(&c->routes[0], "2001:db8::1"));
	assert_false(conf_route_allows(&c->routes[0], &none));
	assert_false(conf_route_allows_all(&c->routes[0]));
	conf_free(c);

	/* the default admits everyone: both families and a source with no IP address (AF_IB) */
	c = load_str("[route r]\nlisten = ib:1\nconnect = echo\n", &e);
	assert_non_null(c);
	assert_true(allows(&c->routes[0], "203.0.113.9"));
	assert_true(allows(&c->routes[0], "2001:db8:ffff::9"));
	assert_true(conf_route_allows(&c->routes[0], &none));
	assert_true(conf_route_allows_all(&c->routes[0]));
	conf_free(c);
}

/* A list longer than a line (inih takes 200 characters) goes on over several: the key repeated adds
 * to it, up to the 32 entries; the first occurrence replaces the default (::/0). Other keys stay
 * single: repeated, they are an error naming both lines. */
static void test_allow_lines(void **state)
{
	struct errors e;
	char text[4096];
	size_t n;
	struct conf *c = load_str("[eth]\nvdev = net_null0\naddress = 198.18.0.1/24\n[route r]\nlisten = tcp:80\nconnect = echo\n"
	                          "accept_proxy = v2\n"
	                          "allow = 198.18.4.0/22 2001:db8:1::/48\n"
	                          "allow = 198.19.0.7\n"
	                          "proxy_from = 198.18.9.1\nproxy_from = 198.18.9.2\n",
	                          &e);

	(void)state;
	assert_non_null(c);
	assert_int_equal(c->routes[0].n_allow, 3);
	assert_true(allows(&c->routes[0], "198.18.5.1"));
	assert_true(allows(&c->routes[0], "2001:db8:1::9"));
	assert_true(allows(&c->routes[0], "198.19.0.7"));
	assert_false(allows(&c->routes[0], "198.19.0.8"));
	assert_false(allows(&c->routes[0], "2001:db8:2::1")); /* (the default ::/0 is gone) */
	assert_int_equal(c->routes[0].n_proxy_from, 2);
	conf_free(c);

	/* 33 entries over three lines: too many, at the line that overflows */
	n = (size_t)snprintf(text, sizeof(text), "[route r]\nlisten = ib:1\nconnect = echo\n");
	for (unsigned l = 0; l < 3; l++) {
		n += (size_t)snprintf(text + n, sizeof(text) - n, "allow =");
		for (unsigned i = 0; i < 11; i++)
			n += (size_t)snprintf(text + n, sizeof(text) - n, " 198.18.%u.%u", l, i);
		n += (size_t)snprintf(text + n, sizeof(text) - n, "\n");
	}
	assert_null(load_str(text, &e));
	assert_true(e.n >= 1);
	assert_non_null(strstr(e.msg[0], ":6:"));
	assert_non_null(strstr(e.msg[0], "too many entries"));

	assert_null(load_str("[route r]\nlisten = ib:1\nconnect = echo\nmax_sessions = 5\nmax_sessions = 6\n", &e));
	assert_non_null(strstr(e.msg[0], ":5:"));
	assert_non_null(strstr(e.msg[0], "duplicate key 'max_sessions' (first at line 4)"));
}

/* IPv4 and IPv6 networks in one list; 0.0.0.0/0 is every IPv4 source and only those, ::/0 all. */
static void test_allow_mixed(void **state)
{
	struct errors e;
	struct conf *c = load_str("[route r]\nlisten = ib:1\nconnect = echo\n"
	                          "allow = 198.18.4.0/22, 2001:db8:100::/48 2001:db8::7\n",
	                          &e);
	const struct xlt_ip none = {0};
	char buf[128];

	(void)state;
	assert_non_null(c);
	assert_int_equal(c->routes[0].n_allow, 3);
	assert_true(allows(&c->routes[0], "198.18.5.1"));
	assert_false(allows(&c->routes[0], "198.18.8.1"));
	assert_true(allows(&c->routes[0], "2001:db8:100:ffff::1"));
	assert_false(allows(&c->routes[0], "2001:db8:101::1"));
	assert_true(allows(&c->routes[0], "2001:db8::7"));
	assert_false(allows(&c->routes[0], "2001:db8::8"));
	/* an IPv6 net never admits an IPv4 source through the mapped space, nor the other way round */
	assert_false(allows(&c->routes[0], "::ffff:198.18.8.1"));
	assert_false(conf_route_allows(&c->routes[0], &none));
	assert_false(conf_route_allows_all(&c->routes[0]));
	conf_free(c);

	c = load_str("[route r]\nlisten = ib:1\nconnect = echo\nallow = 0.0.0.0/0\n", &e);
	assert_non_null(c);
	assert_true(allows(&c->routes[0], "198.18.0.1"));
	assert_true(allows(&c->routes[0], "255.255.255.255"));
	assert_false(allows(&c->routes[0], "2001:db8::1"));
	assert_false(allows(&c->routes[0], "::1"));
	assert_false(conf_route_allows(&c->routes[0], &none)); /* AF_IB: no longer by 0.0.0.0/0 */
	assert_false(conf_route_allows_all(&c->routes[0]));
	conf_free(c);

	c = load_str("[route r]\nlisten = ib:1\nconnect = echo\nallow = ::/0\n", &e);
	assert_non_null(c);
	assert_true(allows(&c->routes[0], "198.18.0.1"));
	assert_true(allows(&c->routes[0], "2001:db8::1"));
	assert_true(conf_route_allows(&c->routes[0], &none));
	assert_true(conf_route_allows_all(&c->routes[0]));
	conf_free(c);

	/* a net that contains :: is not "everyone": a source with no address stays out */
	c = load_str("[route r]\nlisten = ib:1\nconnect = echo\nallow = ::/120\n", &e);
	assert_non_null(c);
	assert_true(allows(&c->routes[0], "::7"));
	assert_false(allows(&c->routes[0], "2001:db8::1"));
	assert_false(conf_route_allows(&c->routes[0], &none));
	conf_free(c);

	/* an IPv6 net that would hold the IPv4-mapped range (every IPv4 source) is refused, naming it */
	{
		static const char *const wide[] = {"::/1", "::/80", "::fffe:0:0/95"};
		size_t i;

		for (i = 0; i < sizeof(wide) / sizeof(wide[0]); i++) {
			snprintf(buf, sizeof(buf), "[route r]\nlisten = ib:1\nconnect = echo\nallow = %s\n", wide[i]);
			c = load_str(buf, &e);
			assert_null(c);
			assert_int_equal(e.n, 1);
			assert_non_null(strstr(e.msg[0], "t.conf:4: allow: this IPv6 net covers every IPv4 address"));
		}
		c = load_str("[route r]\nlisten = ib:1\nconnect = echo\nallow = ::/97\n", &e);
		assert_non_null(c); /* ::/97 ends before ::ffff:0:0 */
		assert_false(allows(&c->routes[0], "198.18.0.1"));
		conf_free(c);
	}

	/* the -t summary lists the nets as written */
	c = load_str("[route r]\nlisten = ib:1\nconnect = echo\nallow = 198.18.4.0/22 2001:db8:100::/48\n",
	             &e);
	assert_non_null(c);
	{
		FILE *f = fmemopen(NULL, 4096, "w+");
		char all[4096] = "";
		assert_non_null(f);
		conf_print_summary(c, f);
		rewind(f);
		(void)!fread(all, 1, sizeof(all) - 1, f);
		fclose(f);
		snprintf(buf, sizeof(buf), "allow 198.18.4.0/22 2001:db8:100::/48,");
		assert_non_null(strstr(all, buf));
	}
	conf_free(c);
}

/* Destinations of both families: brackets for IPv6, and what a connect cannot reach refused. */
static void test_connect_v6(void **state)
{
	static const char head[] =
	    "[eth]\nvdev = net_null0\naddress = 198.18.0.1/24\naddress6 = 2001:db8::1/64\n"
	    "[route r]\nlisten = tcp:1\n";
	static const struct {
		const char *connect, *err; /* NULL: accepted */
	} cases[] = {
	    {"tcp:[2001:db8::10]:80", NULL},
	    {"tcp:[2001:DB8:0:0::10]:8080 weight=2, tcp:198.18.0.2:80", NULL},
	    {"tcp:[fd00:db8::1]:1", NULL},
	    {"tcp:2001:db8::10:80", "connect: an IPv6 destination needs brackets: [2001:db8::10]:80"},
	    {"tcp:[2001:db8::10]", "connect: expected [IPv6]:PORT, such as [2001:db8::10]:80"},
	    {"tcp:[2001:db8::10]80", "connect: expected [IPv6]:PORT, such as [2001:db8::10]:80"},
	    {"tcp:[2001:db8::10:80", "connect: expected [IPv6]:PORT, such as [2001:db8::10]:80"},
	    {"tcp:[2001:db8::10]:0", "connect: expected a port number from 1 to 65535 after the host"},
	    {"tcp:[2001:db8::10]:65536", "connect: expected a port number from 1 to 65535 after the host"},
	    {"tcp:[]:80", "connect: expected [IPv6]:PORT with an IPv6 address in the brackets"},
	    {"tcp:[198.18.0.2]:80", "connect: expected [IPv6]:PORT with an IPv6 address in the brackets"},
	    {"tcp:[2001:db8::zz]:80", "connect: expected [IPv6]:PORT with an IPv6 address in the brackets"},
	    {"tcp:[fe80::1%eth0]:80",
	     "connect: IPv6 zones (%...) are not supported: the Ethernet side has one port"},
	    {"tcp:[fe80::1]:80", "connect: link-local IPv6 destinations are not supported (use a global or "
	                         "unique local address)"},
	    {"tcp:[ff02::1]:80",
	     "connect: destination host must be a unicast IPv6 address (not ::, ::1 or multicast)"},
	    {"tcp:[::]:80",
	     "connect: destination host must be a unicast IPv6 address (not ::, ::1 or multicast)"},
	    {"tcp:[::1]:80",
	     "connect: destination host must be a unicast IPv6 address (not ::, ::1 or multicast)"},
	    {"tcp:[::ffff:198.18.0.2]:80",
	     "connect: an IPv4-mapped address: write an IPv4 destination as a.b.c.d:PORT"},
	    {"tcp:224.0.0.1:80", "connect: destination host must be a unicast IPv4 address (not 0.0.0.0, "
	                         "broadcast or multicast)"},
	    {"tcp:[2001:db8::10]:80, tcp:[2001:db8::0:10]:80",
	     "connect: backend tcp:[2001:db8::0:10]:80 listed twice"},
	    {"ib:[2001:db8::10]:7000",
	     "connect: ib: destinations are IPv4 only (rdma_cm connects from [ib] bind, an IPv4 address)"},
	};
	char text[512], buf[CONF_EP_STRLEN];
	struct errors e;

	(void)state;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conf *c;

		snprintf(text, sizeof(text), "%sconnect = %s\n", head, cases[i].connect);
		c = load_str(text, &e);
		if (!cases[i].err) {
			for (unsigned k = 0; k < e.n && k < 32; k++)
				print_message("%s: unexpected: %s\n", cases[i].connect, e.msg[k]);
			assert_non_null(c);
			conf_free(c);
			continue;
		}
		assert_null(c);
		assert_int_equal(e.n, 1);
		snprintf(text, sizeof(text), "t.conf:7: %s", cases[i].err);
		if (strcmp(e.msg[0], text))
			print_message("%s: got '%s'\n", cases[i].connect, e.msg[0]);
		assert_string_equal(e.msg[0], text);
	}

	snprintf(text, sizeof(text), "%sconnect = tcp:[2001:db8::10]:80 weight=2, tcp:198.18.0.2:80\n", head);
	{
		struct conf *c = load_str(text, &e);
		struct xlt_ip want = xip("2001:db8::10");
		assert_non_null(c);
		assert_int_equal(c->routes[0].n_backends, 2);
		assert_true(xlt_ip_eq(&c->routes[0].connect.addr, &want));
		assert_int_equal(c->routes[0].connect.port, 80);
		assert_int_equal(c->routes[0].backends[0].weight, 2);
		assert_int_equal(xlt_ip_to_v4(&c->routes[0].backends[1].ep.addr), ip("198.18.0.2"));
		assert_string_equal(conf_endpoint_str(&c->routes[0].connect, buf, sizeof(buf)),
		                    "tcp:[2001:db8::10]:80");
		conf_free(c);
	}
	/* the longest destination text fits CONF_EP_STRLEN */
	snprintf(text, sizeof(text), "%sconnect = tcp:[2001:db8:1111:2222:3333:4444:5555:6666]:65535\n",
	         head);
	{
		struct conf *c = load_str(text, &e);
		assert_non_null(c);
		assert_string_equal(conf_endpoint_str(&c->routes[0].connect, buf, sizeof(buf)),
		                    "tcp:[2001:db8:1111:2222:3333:4444:5555:6666]:65535");
		conf_free(c);
	}
	/* an IPv6 destination needs [eth] address6: the port has no IPv6 source otherwise */
	{
		struct conf *c = load_str(
		    "[eth]\nvdev = net_null0\naddress = 198.18.0.1/24\n"
		    "[route r]\nlisten = tcp:1\nconnect = tcp:198.18.0.2:80, tcp:[2001:db8::10]:80\n",
		    &e);
		assert_null(c);
		assert_int_equal(e.n, 1);
		assert_string_equal(
		    e.msg[0],
		    "t.conf:6: route 'r': backend tcp:[2001:db8::10]:80 is IPv6 but [eth] has no address6");
	}
}

/* Per-route IB queue depths: derived from the buffers (one entry per KiB, within 16 .. [ib]'s) unless
 * set; buffers of whole pages only. */
static void test_ib_route_queues(void **state)
{
	struct errors e;
	struct conf *c = load_str("[ib]\nrq_depth = 300\n"
				  "[route small]\nlisten = ib:1\nconnect = echo\nib_rbuf = 4K\nib_sbuf = 8K\n"
				  "[route dflt]\nlisten = ib:2\nconnect = echo\n"
				  "[route big]\nlisten = ib:3\nconnect = echo\nib_rbuf = 8M\nib_sbuf = 1M\nmax_sessions = 4\n"
				  "[route set]\nlisten = ib:4\nconnect = echo\nib_rq_depth = 300\nib_sq_depth = 17\n",
				  &e);

	(void)state;
	assert_non_null(c);
	assert_int_equal(c->routes[0].ib_rq_depth, 16);
	assert_int_equal(c->routes[0].ib_sq_depth, 16);
	assert_int_equal(c->routes[1].ib_rq_depth, 128); /* 128K default buffers */
	assert_int_equal(c->routes[1].ib_sq_depth, 128);
	assert_int_equal(c->routes[2].ib_rq_depth, 300); /* [ib] rq_depth caps it */
	assert_int_equal(c->routes[2].ib_sq_depth, 384);
	assert_int_equal(c->routes[3].ib_rq_depth, 300);
	assert_int_equal(c->routes[3].ib_sq_depth, 17);
	assert_false(conf_route_equal(&c->routes[1], &c->routes[3]));
	conf_free(c);

	c = load_str("[ib]\nrbuf_size = 12K\n[route r]\nlisten = ib:1\nconnect = echo\nib_sbuf = 4100\n", &e);
	assert_null(c);
	assert_int_equal(e.n, 1);
	assert_string_equal(e.msg[0], "t.conf:6: route 'r': ib_sbuf must be a multiple of 4K");
}

/* What a session is budgeted (conf.h): between IB and TCP its two receive buffers and nothing else
 * (its copies go into frames of the port's pool, the IB ones no more than ib_sbuf in flight); echo,
 * discard and tcp -> tcp routes their full copying buffers. The memory_limit check counts the same. */
static void test_session_bytes(void **state)
{
	struct errors e;
	char buf[96];
	struct conf *c = load_str("[eth]\nvdev = net_null0\naddress = 198.18.0.1/24\n"
	                          "[route i2e]\nlisten = ib:1\nconnect = tcp:198.18.0.2:80\n"
	                          "[route e2i]\nlisten = tcp:2\nconnect = ib:198.19.0.2:7000\nib_sbuf = 8K\n"
	                          "[route echo]\nlisten = ib:3\nconnect = echo\n"
	                          "[route disc]\nlisten = tcp:4\nconnect = discard\n"
	                          "[route e2e]\nlisten = tcp:5\nconnect = tcp:198.18.0.2:80\n",
	                          &e);
	const struct conf_route *r;

	(void)state;
	assert_non_null(c);
	r = &c->routes[0]; /* defaults: ib 128K/128K, tcp 256K/256K */
	assert_true(conf_route_lends(r));
	assert_int_equal(conf_route_ib_copy_bytes(r), 0);
	assert_int_equal(conf_route_ib_copy_limit(r), CONF_LENT_IB_COPY);
	assert_int_equal(conf_route_session_bytes(r), 128 * 1024 + 256 * 1024);
	assert_string_equal(conf_route_relay_str(r, buf, sizeof(buf)),
	                    "relays by reference (copies in frames: ib 16K, tcp 8K at most)");
	r = &c->routes[1]; /* an ib_sbuf below the copy limit bounds it */
	assert_true(conf_route_lends(r));
	assert_int_equal(conf_route_ib_copy_bytes(r), 0);
	assert_int_equal(conf_route_ib_copy_limit(r), 8 * 1024);
	assert_int_equal(conf_route_session_bytes(r), 128 * 1024 + 256 * 1024);
	assert_string_equal(conf_route_relay_str(r, buf, sizeof(buf)),
	                    "relays by reference (copies in frames: ib 8K, tcp 8K at most)");
	r = &c->routes[2];
	assert_false(conf_route_lends(r));
	assert_int_equal(conf_route_ib_copy_bytes(r), 128 * 1024);
	assert_int_equal(conf_route_ib_copy_limit(r), 0);
	assert_int_equal(conf_route_session_bytes(r), 256 * 1024);
	assert_string_equal(conf_route_relay_str(r, buf, sizeof(buf)), "relays by copy (echo)");
	r = &c->routes[3];
	assert_false(conf_route_lends(r));
	assert_int_equal(conf_route_ib_copy_bytes(r), 0);
	assert_int_equal(conf_route_session_bytes(r), 512 * 1024);
	assert_string_equal(conf_route_relay_str(r, buf, sizeof(buf)), "relays by copy (discard)");
	r = &c->routes[4];
	assert_false(conf_route_lends(r));
	assert_int_equal(conf_route_session_bytes(r), 2 * 512 * 1024);
	assert_string_equal(conf_route_relay_str(r, buf, sizeof(buf)), "relays by copy (tcp -> tcp)");
	conf_free(c);

	/* 1024 lending sessions fit 384 MiB exactly (half of the 768 copying buffers would need) */
	c = load_str("[gateway]\nmemory_limit = 384M\n[eth]\nvdev = net_null0\naddress = 198.18.0.1/24\n"
	             "[route r]\nlisten = ib:1\nconnect = tcp:198.18.0.2:80\nmax_sessions = 1024\n",
	             &e);
	assert_non_null(c);
	conf_free(c);
	c = load_str("[gateway]\nmemory_limit = 383M\n[eth]\nvdev = net_null0\naddress = 198.18.0.1/24\n"
	             "[route r]\nlisten = ib:1\nconnect = tcp:198.18.0.2:80\nmax_sessions = 1024\n",
	             &e);
	assert_null(c);
	assert_int_equal(e.n, 1);
	assert_string_equal(e.msg[0],
	                    "t.conf:2: routes need up to 384 MiB of buffers (max_sessions x buffers), "
	                    "above memory_limit 383 MiB");
}

/* connect = a pool: backends of one kind with their options; the route's balance and checks. */
static void test_pools(void **state)
{
	struct errors e;
	struct conf *c = load_str("[eth]\nvdev = net_null0\naddress = 198.18.0.1/24\n"
				  "[route p]\nlisten = ib:1\n"
				  "connect = tcp:198.18.0.2:80 weight=3 max=7, tcp:198.18.0.3:80 state=drain,"
				  "tcp:198.18.0.4:81 state=maint\n"
				  "balance = source\ncheck_interval = 2s\ncheck_timeout = 500ms\nrise = 4\nfall = 5\n"
				  "check_send = GET / HTTP/1.0\\r\\n\\r\\n\ncheck_expect = HTTP/1.\\x30\n"
				  "[route q]\nlisten = tcp:2\nconnect = ib:198.19.0.2:7000,ib:198.19.0.3:7000\n"
				  "balance = leastconn\n",
				  &e);
	const struct conf_route *r;

	(void)state;
	for (unsigned i = 0; i < e.n && i < 32; i++)
		print_message("unexpected: %s\n", e.msg[i]);
	assert_non_null(c);
	r = &c->routes[0];
	assert_int_equal(r->n_backends, 3);
	assert_int_equal(xlt_ip_to_v4(&r->connect.addr), ip("198.18.0.2"));
	assert_int_equal(r->backends[0].weight, 3);
	assert_int_equal(r->backends[0].max_sessions, 7);
	assert_int_equal(r->backends[0].state, CONF_BACKEND_READY);
	assert_int_equal(r->backends[1].weight, 1);
	assert_int_equal(r->backends[1].state, CONF_BACKEND_DRAIN);
	assert_int_equal(r->backends[2].state, CONF_BACKEND_MAINT);
	assert_int_equal(r->backends[2].ep.port, 81);
	assert_int_equal(r->balance, CONF_BALANCE_SOURCE);
	assert_int_equal(r->check_interval_ms, 2000);
	assert_int_equal(r->check_timeout_ms, 500);
	assert_int_equal(r->rise, 4);
	assert_int_equal(r->fall, 5);
	assert_int_equal(r->check_send.len, 18);
	assert_memory_equal(r->check_send.b, "GET / HTTP/1.0\r\n\r\n", 18);
	assert_int_equal(r->check_expect.len, 8);
	assert_memory_equal(r->check_expect.b, "HTTP/1.0", 8);
	r = &c->routes[1];
	assert_int_equal(r->n_backends, 2);
	assert_int_equal(r->connect.kind, CONF_EP_IB);
	assert_int_equal(xlt_ip_to_v4(&r->backends[1].ep.addr), ip("198.19.0.3"));
	assert_int_equal(r->balance, CONF_BALANCE_LEASTCONN);
	assert_int_equal(r->check_interval_ms, 0); /* default: no checks */
	assert_int_equal(r->check_timeout_ms, 1000);
	assert_int_equal(r->rise, 2);
	assert_int_equal(r->fall, 3);
	/* the default check_timeout yields to a shorter interval */
	{
		struct conf *d = load_str("[route q]\nlisten = ib:2\nconnect = echo\ncheck_interval = 300ms\n", &e);
		assert_non_null(d);
		assert_int_equal(d->routes[0].check_timeout_ms, 300);
		conf_free(d);
	}
	/* a pool longer than a line: the key again adds its backends (16 IPv6 backends with options
	 * take some 700 characters; the line reader refuses more than 198) */
	{
		char text[2048];
		int n = snprintf(text, sizeof(text), "[eth]\nvdev = net_null0\naddress = 198.18.0.1/24\n"
						     "address6 = 2001:db8::1/64\n[route big]\nlisten = ib:9\n");
		for (unsigned i = 0; i < CONF_MAX_BACKENDS; i++)
			n += snprintf(text + n, sizeof(text) - (size_t)n, "%stcp:[2001:db8::%x]:8080 weight=%u max=1000%s",
				      i % 4 ? ", " : "connect = ", 0x100 + i, i + 1, i % 4 == 3 ? "\n" : "");
		struct conf *d = load_str(text, &e);
		for (unsigned i = 0; i < e.n && i < 32; i++)
			print_message("unexpected: %s\n", e.msg[i]);
		assert_non_null(d);
		assert_int_equal(d->routes[0].n_backends, CONF_MAX_BACKENDS);
		for (unsigned i = 0; i < CONF_MAX_BACKENDS; i++) {
			assert_int_equal(d->routes[0].backends[i].weight, i + 1);
			assert_int_equal(d->routes[0].backends[i].ep.port, 8080);
			assert_int_equal(d->routes[0].backends[i].ep.addr.b[15], i & 0xff);
		}
		assert_memory_equal(&d->routes[0].connect, &d->routes[0].backends[0].ep, sizeof(d->routes[0].connect));
		conf_free(d);
	}
	/* a pool is part of the route: changing it makes a different route for reloads */
	{
		struct conf *d = load_str("[eth]\nvdev = net_null0\naddress = 198.18.0.1/24\n"
					  "[route q]\nlisten = tcp:2\nconnect = ib:198.19.0.2:7000, ib:198.19.0.3:7000 weight=2\n"
					  "balance = leastconn\n",
					  &e);
		assert_non_null(d);
		assert_false(conf_route_equal(&c->routes[1], &d->routes[0]));
		d->routes[0].backends[1].weight = 1;
		assert_true(conf_route_equal(&c->routes[1], &d->routes[0]));
		conf_free(d);
	}
	conf_free(c);
}

/* conf_where: the line a key or route of a file that was read is on, for later messages. */
static void test_where(void **state)
{
	struct errors e;
	struct conf *c = load_str("[gateway]\nworkers = 1\nmemory_limit = 2G\n[ib]\n\n[route r]\nlisten = ib:1\n"
				  "connect = echo\n",
				  &e);
	char buf[64];

	(void)state;
	assert_non_null(c);
	assert_string_equal(conf_where(c, NULL, "gateway", "memory_limit", buf, sizeof(buf)), "t.conf:3");
	assert_string_equal(conf_where(c, NULL, "gateway", "access_log", buf, sizeof(buf)), "t.conf");
	assert_string_equal(conf_where(c, NULL, "ib", "rbuf_size", buf, sizeof(buf)), "t.conf");
	assert_string_equal(conf_where(c, &c->routes[0], NULL, NULL, buf, sizeof(buf)), "t.conf:6");
	conf_free(c);
}

static void test_endpoint_str(void **state)
{
	struct errors e;
	struct conf *c = load_str("[eth]\nvdev=net_null0\naddress=198.18.0.1/24\n"
				  "[route r]\nlisten = tcp:9000\nconnect = ib:198.19.0.2:7000\n",
				  &e);
	char buf[64];

	(void)state;
	assert_non_null(c);
	assert_string_equal(conf_endpoint_str(&c->routes[0].listen, buf, sizeof(buf)), "tcp:9000");
	assert_string_equal(conf_endpoint_str(&c->routes[0].connect, buf, sizeof(buf)), "ib:198.19.0.2:7000");
	conf_free(c);
}

static void test_route_equal(void **state)
{
	struct errors e;
	struct conf *a = load_str("[route r]\nlisten = ib:1\nconnect = echo\n", &e);
	struct conf *b = load_str("[route r]\nlisten = ib:1\nconnect = echo\nmax_sessions = 5\n", &e);

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_true(conf_route_equal(&a->routes[0], &a->routes[0]));
	assert_false(conf_route_equal(&a->routes[0], &b->routes[0]));
	conf_free(a);
	conf_free(b);
}

/* PROXY protocol keys: off by default, v2 where a TCP peer is on that side, and part of a route's
 * identity (a reload that turns one on changes the route). The refusals are in conf-bad/38-proxy.conf. */
static void test_proxy_keys(void **state)
{
	struct errors e;
	static const char *const head = "[eth]\nvdev = net_null0\naddress = 198.18.0.1/24\n";
	char text[512];
	struct conf *a, *b;

	(void)state;
	snprintf(text, sizeof(text), "%s[route r]\nlisten = tcp:1\nconnect = tcp:198.18.0.2:1\n", head);
	a = load_str(text, &e);
	snprintf(text, sizeof(text),
		 "%s[route r]\nlisten = tcp:1\nconnect = tcp:198.18.0.2:1\nproxy_protocol = v2\naccept_proxy = v2\n", head);
	b = load_str(text, &e);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->routes[0].proxy_protocol, CONF_PROXY_OFF);
	assert_int_equal(a->routes[0].accept_proxy, CONF_PROXY_OFF);
	assert_int_equal(b->routes[0].proxy_protocol, CONF_PROXY_V2);
	assert_int_equal(b->routes[0].accept_proxy, CONF_PROXY_V2);
	assert_false(conf_route_equal(&a->routes[0], &b->routes[0]));
	conf_free(a);
	conf_free(b);
}

/* proxy_from: the real peers whose PROXY header is believed. Unset: any peer, and conf_warn says so
 * (file:line of the route); set: both families in one list, as allow, and part of the route's
 * identity. The refusals are in conf-bad/42-proxy-from.conf. */
static void test_proxy_from(void **state)
{
	struct errors e, w;
	static const char *const head = "[eth]\nvdev = net_null0\naddress = 198.18.0.1/24\n";
	char text[512];
	struct conf *a, *b, *c;
	struct xlt_ip p, none = {0};

	(void)state;
	snprintf(text, sizeof(text),
	         "%s[route r]\nlisten = tcp:1\nconnect = tcp:198.18.0.2:1\naccept_proxy = v2\n", head);
	a = load_str(text, &e);
	assert_non_null(a);
	assert_int_equal(a->routes[0].n_proxy_from, 0);
	p = xip("2001:db8::66");
	assert_true(conf_route_proxy_from(&a->routes[0], &p)); /* unset: any peer... */
	memset(&w, 0, sizeof(w));
	conf_warn(a, collect, &w); /* ...with a warning naming the route's line */
	assert_int_equal(w.n, 1);
	assert_non_null(strstr(w.msg[0], "t.conf:4: warning: route 'r': accept_proxy without proxy_from"));

	snprintf(text, sizeof(text),
	         "%s[route r]\nlisten = tcp:1\nconnect = tcp:198.18.0.2:1\naccept_proxy = v2\n"
	         "proxy_from = 198.18.0.8/29, 2001:db8:1::/48 2001:db8::5\n",
	         head);
	b = load_str(text, &e);
	assert_int_equal(e.n, 0);
	assert_non_null(b);
	assert_int_equal(b->routes[0].n_proxy_from, 3);
	assert_int_equal(b->routes[0].n_allow, 1); /* allow keeps its own list (::/0) */
	p = xip("198.18.0.15");
	assert_true(conf_route_proxy_from(&b->routes[0], &p));
	p = xip("198.18.0.16");
	assert_false(conf_route_proxy_from(&b->routes[0], &p));
	p = xip("198.18.0.7");
	assert_false(conf_route_proxy_from(&b->routes[0], &p));
	p = xip("2001:db8:1:ffff::1");
	assert_true(conf_route_proxy_from(&b->routes[0], &p));
	p = xip("2001:db8::5");
	assert_true(conf_route_proxy_from(&b->routes[0], &p));
	p = xip("2001:db8::6");
	assert_false(conf_route_proxy_from(&b->routes[0], &p));
	p = xip("::ffff:198.18.0.16");
	assert_false(conf_route_proxy_from(&b->routes[0], &p));
	assert_false(conf_route_proxy_from(&b->routes[0], &none));
	memset(&w, 0, sizeof(w));
	conf_warn(b, collect, &w);
	assert_int_equal(w.n, 0);
	assert_false(
	    conf_route_equal(&a->routes[0], &b->routes[0])); /* a reload that sets it changes the route */

	/* ::/0 on purpose: any peer, no warning */
	snprintf(
	    text, sizeof(text),
	    "%s[route r]\nlisten = tcp:1\nconnect = tcp:198.18.0.2:1\naccept_proxy = v2\nproxy_from = ::/0\n",
	    head);
	c = load_str(text, &e);
	assert_non_null(c);
	p = xip("2001:db8::66");
	assert_true(conf_route_proxy_from(&c->routes[0], &p));
	p = xip("198.18.0.99");
	assert_true(conf_route_proxy_from(&c->routes[0], &p));
	memset(&w, 0, sizeof(w));
	conf_warn(c, collect, &w);
	assert_int_equal(w.n, 0);
	conf_free(a);
	conf_free(b);
	conf_free(c);
}

static void test_missing_file(void **state)
{
	(void)state;
	assert_null(conf_load("/nonexistent/ibgw.conf", NULL, NULL));
	assert_int_equal(errno, ENOENT);
}

/* Every file in conf-bad/ must be rejected with exactly its "# expect: LINE: text" messages. */
static void test_bad_files(void **state)
{
	const char *dir = "tests/unit/conf-bad";
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned files = 0;

	(void)state;
	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[300], line[256], expect[16][600];
		unsigned n_expect = 0;
		struct errors e = {0};
		struct conf *c;
		FILE *f;

		if (!strstr(de->d_name, ".conf"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "r");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			char *x = strstr(line, "# expect: ");
			if (!x)
				continue;
			x += strlen("# expect: ");
			x[strcspn(x, "\n")] = 0;
			assert_true(n_expect < 16);
			snprintf(expect[n_expect++], sizeof(expect[0]), "%s:%s", path, x);
		}
		fclose(f);
		assert_true(n_expect > 0);
		c = conf_load(path, collect, &e);
		if (c || e.n != n_expect) {
			print_message("%s: %u error(s), expected %u\n", path, e.n, n_expect);
			for (unsigned i = 0; i < e.n && i < 32; i++)
				print_message("  got: %s\n", e.msg[i]);
		}
		assert_null(c);
		assert_int_equal(errno, EINVAL);
		assert_int_equal(e.n, n_expect);
		for (unsigned i = 0; i < n_expect; i++) {
			bool found = false;
			for (unsigned j = 0; j < e.n && !found; j++)
				found = !strncmp(e.msg[j], expect[i], strlen(expect[i]));
			if (!found)
				print_message("%s: missing message '%s'\n", path, expect[i]);
			assert_true(found);
		}
		files++;
	}
	closedir(d);
	assert_true(files >= 25);
}

/* The file decides what runs as root: refused when its group or others may write it, or when it
 * belongs to someone other than root or whoever runs ibgwd; the message names the file. */
static void test_file_trust(void **state)
{
	char path[] = "/tmp/ibgw-trust-XXXXXX";
	const char *text = "[gateway]\nworkers = 1\n";
	struct errors e = {0};
	struct conf *c;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);

	assert_int_equal(chmod(path, 0644), 0);
	c = conf_load(path, collect, &e);
	assert_non_null(c);
	assert_int_equal(e.n, 0);
	conf_free(c);

	assert_int_equal(chmod(path, 0666), 0);
	c = conf_load(path, collect, &e);
	assert_null(c);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(e.n, 1);
	assert_true(!strncmp(e.msg[0], path, strlen(path)) && e.msg[0][strlen(path)] == ':');
	assert_non_null(strstr(e.msg[0], "writable by others (mode 0666)"));

	memset(&e, 0, sizeof(e));
	assert_int_equal(chmod(path, 0620), 0);
	assert_null(conf_load(path, collect, &e));
	assert_int_equal(e.n, 1);
	assert_non_null(strstr(e.msg[0], "writable by its group (mode 0620)"));

	if (geteuid() == 0) { /* only root can give the file away */
		memset(&e, 0, sizeof(e));
		assert_int_equal(chmod(path, 0644), 0);
		assert_int_equal(chown(path, 12345, 0), 0);
		assert_null(conf_load(path, collect, &e));
		assert_int_equal(errno, EINVAL);
		assert_int_equal(e.n, 1);
		assert_non_null(strstr(e.msg[0], "owned by uid 12345"));
	}
	unlink(path);
}

/* eal_args reach rte_eal_init as root: what loads code, adds devices, writes files or joins another
 * DPDK process is refused, abbreviations (getopt_long) and clustered short options included. */
static void test_eal_args(void **state)
{
	static const char *const good[] = {
		"--no-pci --in-memory", "--no-pci --no-huge -m 256", "-l 0-3 --file-prefix=ibgw_1",
		"--proc-type=primary", "--proc-type primary", "--no-telemetry", "-a 0000:01:00.0 -n 4",
		"--huge-dir /dev/hugepages --iova-mode=va", "-v --log-level=eal:debug", "",
	};
	static const char *const bad[] = {
		"-d /tmp/x.so", "-d/tmp/x.so", "--no-pci -vd/tmp/x.so", "-hd x", "--driver-path=/tmp", "--driver /tmp",
		"--vdev=net_ring0", "--vd net_ring0", "--trace=.*", "--trace-dir=/etc", "--create-uio-dev", "--telemetry",
		"--tele", "--proc-type=secondary", "--proc-type auto", "--proc-type", "--file-prefix=../x",
		"--file-prefix /etc/x", "--file-prefix=.hidden", "--log-file=/etc/x",
	};
	char text[600];
	struct errors e;
	struct conf *c;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "[eth]\neal_args = %s\n", good[i]);
		c = load_str(text, &e);
		if (!c)
			print_message("refused: '%s': %s\n", good[i], e.msg[0]);
		assert_non_null(c);
		assert_string_equal(c->eth.eal_args, good[i]);
		conf_free(c);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "[eth]\neal_args = %s\n", bad[i]);
		c = load_str(text, &e);
		if (c)
			print_message("accepted: '%s'\n", bad[i]);
		assert_null(c);
		assert_int_equal(e.n, 1);
		assert_true(!strncmp(e.msg[0], "t.conf:2: eal_args: ", 20));
	}
}

static void test_vdev(void **state)
{
	struct errors e;
	struct conf *c;

	(void)state;
	c = load_str("[eth]\nvdev = virtio_user0,path=/dev/vhost-net,queues=2\naddress = 198.18.0.1/24\n", &e);
	assert_non_null(c);
	conf_free(c);
	assert_null(load_str("[eth]\nvdev = net_pcap0,rx_pcap=/etc/shadow\naddress = 198.18.0.1/24\n", &e));
	assert_non_null(strstr(e.msg[0], "t.conf:2: vdev: 'rx_pcap'"));
	assert_null(load_str("[eth]\nvdev = net_softnic0,firmware=/tmp/x.cli\naddress = 198.18.0.1/24\n", &e));
	assert_non_null(strstr(e.msg[0], "t.conf:2: vdev: 'firmware'"));
}

/* access_log: a path with a ".." component is refused (the daemon follows links for /dev/stdout,
 * /dev/stderr and /dev/fd/N only, by their names: "/dev/../" must not pass for one); dots within a
 * name are fine. conf-bad/45-access-log-dotdot.conf has the message in a file. */
static void test_access_log_path(void **state)
{
	static const char *const good[] = {"/var/log/ibgw/access.log", "/var/log/ibgw/a..b.log",
	                                   "/var/log/..hidden", "/var/log/hidden..", "/dev/stdout",
	                                   "/dev/fd/1", "syslog", "syslog:/run/x/log", ""};
	static const char *const bad[] = {"/dev/../var/log/x.log", "/var/log/ibgw/..", "/../x.log",
	                                  "/var/log/../log/x.log", "/dev/fd/../fd/1", "/dev//../x"};
	char text[200];
	struct errors e;
	struct conf *c;

	(void)state;
	for (unsigned i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(text, sizeof(text), "[gateway]\naccess_log = %s\n", good[i]);
		c = load_str(text, &e);
		if (!c)
			fail_msg("access_log = %s refused: %s", good[i], e.msg[0]);
		assert_string_equal(c->gateway.access_log, good[i]);
		conf_free(c);
	}
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "[gateway]\naccess_log = %s\n", bad[i]);
		c = load_str(text, &e);
		if (c)
			fail_msg("access_log = %s accepted", bad[i]);
		assert_int_equal(e.n, 1);
		assert_string_equal(e.msg[0],
		                    "t.conf:2: access_log: a path with a '..' component (name the file by its direct path)");
	}
}

static void test_reference_lists_every_key(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	conf_print_reference(f);
	fclose(f);
	assert_non_null(strstr(buf, "### [gateway]"));
	assert_non_null(strstr(buf, "### [route NAME]"));
	assert_non_null(strstr(buf, "| `drain_timeout` | duration |"));
	assert_non_null(strstr(buf, "| `listen` | listener |  | (required) |"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_example_file),
	    cmocka_unit_test(test_units),
	    cmocka_unit_test(test_ranges_inclusive),
	    cmocka_unit_test(test_comments_and_spacing),
	    cmocka_unit_test(test_allow),
	    cmocka_unit_test(test_allow_mixed),
	    cmocka_unit_test(test_allow_lines),
	    cmocka_unit_test(test_proxy_from),
	    cmocka_unit_test(test_connect_v6),
	    cmocka_unit_test(test_ib_route_queues),
	    cmocka_unit_test(test_session_bytes),
	    cmocka_unit_test(test_endpoint_str),
	    cmocka_unit_test(test_route_equal),
	    cmocka_unit_test(test_proxy_keys),
	    cmocka_unit_test(test_missing_file),
	    cmocka_unit_test(test_pools),
	    cmocka_unit_test(test_where),
	    cmocka_unit_test(test_bad_files),
	    cmocka_unit_test(test_reference_lists_every_key),
	    cmocka_unit_test(test_file_trust),
	    cmocka_unit_test(test_eal_args),
	    cmocka_unit_test(test_vdev),
	    cmocka_unit_test(test_access_log_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
