/* translate/ip.c: both families in one 16-byte form, prefix matching across the byte boundary,
 * text forms, and the parser's refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <arpa/inet.h>
#include <cmocka.h>

#include "translate/ip.h"

static struct xlt_ip ip_of(const char *s)
{
	struct xlt_ip ip;

	assert_int_equal(xlt_ip_parse(s, &ip), 0);
	return ip;
}

static void test_v4_mapped(void **state)
{
	struct xlt_ip a = ip_of("198.18.0.1"), b = xlt_ip_v4(inet_addr("198.18.0.1"));
	char buf[XLT_IP_STRLEN];

	(void)state;
	assert_true(xlt_ip_is_v4(&a));
	assert_true(xlt_ip_eq(&a, &b));
	assert_int_equal(xlt_ip_to_v4(&a), inet_addr("198.18.0.1"));
	assert_string_equal(xlt_ip_fmt(&a, buf), "198.18.0.1");
	/* the literal mapped form is the same address */
	b = ip_of("::ffff:198.18.0.1");
	assert_true(xlt_ip_eq(&a, &b));
}

static void test_v6(void **state)
{
	struct xlt_ip a = ip_of("2001:DB8:0:0:0:0:0:1");
	char buf[XLT_IP_STRLEN];

	(void)state;
	assert_false(xlt_ip_is_v4(&a));
	assert_int_equal(xlt_ip_to_v4(&a), 0);
	assert_string_equal(xlt_ip_fmt(&a, buf), "2001:db8::1");
	a = ip_of("::");
	assert_true(xlt_ip_is_any(&a));
	a = ip_of("0.0.0.0");
	assert_true(xlt_ip_is_any(&a));
	a = ip_of("::1");
	assert_false(xlt_ip_is_any(&a));
}

static void test_cidr(void **state)
{
	struct xlt_cidr c;
	struct xlt_ip in = ip_of("198.18.7.200"), out = ip_of("198.19.0.1"), v6 = ip_of("2001:db8::1");
	char buf[XLT_IP_STRLEN];

	(void)state;
	assert_int_equal(xlt_cidr_parse("198.18.0.0/15", &c), 0);
	assert_int_equal(c.prefix, 96 + 15);
	assert_true(xlt_cidr_match(&c, &in));
	assert_true(xlt_cidr_match(&c, &out));
	out = ip_of("198.20.0.1");
	assert_false(xlt_cidr_match(&c, &out));
	assert_false(xlt_cidr_match(&c, &v6)); /* an IPv4 network never holds an IPv6 address */

	assert_int_equal(xlt_cidr_parse("198.18.7.9/24", &c), 0); /* host bits cleared */
	assert_string_equal(xlt_ip_fmt(&c.net, buf), "198.18.7.0");

	assert_int_equal(xlt_cidr_parse("2001:db8:ab::/45", &c), 0);
	assert_int_equal(c.prefix, 45);
	assert_string_equal(xlt_ip_fmt(&c.net, buf), "2001:db8:a8::");
	in = ip_of("2001:db8:af::1");
	assert_true(xlt_cidr_match(&c, &in)); /* 0x00af and 0x00a8 agree in their high 13 bits */
	in = ip_of("2001:db8:b0::1");
	assert_false(xlt_cidr_match(&c, &in));
	assert_false(xlt_cidr_match(&c, &out));

	assert_int_equal(xlt_cidr_parse("0.0.0.0/0", &c), 0); /* every IPv4 address, no IPv6 one */
	assert_true(xlt_cidr_match(&c, &out));
	assert_false(xlt_cidr_match(&c, &v6));
	assert_int_equal(xlt_cidr_parse("::/0", &c), 0); /* everything */
	assert_true(xlt_cidr_match(&c, &out));
	assert_true(xlt_cidr_match(&c, &v6));

	assert_int_equal(xlt_cidr_parse("2001:db8::1", &c), 0);
	assert_int_equal(c.prefix, 128);
}

static void test_refusals(void **state)
{
	static const char *const bad[] = {
	    "",
	    "/8",
	    "198.18.0.0/33",
	    "2001:db8::/129",
	    "198.18.0.0/",
	    "198.18.0.0/-1",
	    "198.18.0.0/8x",
	    "[2001:db8::1]",
	    "2001:db8::1%eth0",
	    "198.18.0",
	    "host.example",
	    "198.18.0.0/ 8",
	};
	struct xlt_cidr c;
	struct xlt_ip ip;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(xlt_cidr_parse(bad[i], &c), -EINVAL);
	assert_int_equal(xlt_ip_parse("198.18.0.1/32", &ip), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_v4_mapped),
	    cmocka_unit_test(test_v6),
	    cmocka_unit_test(test_cidr),
	    cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
