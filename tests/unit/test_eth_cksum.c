/* The software checksum (eth_side/cksum.c) against DPDK's rte_raw_cksum, the reference it replaces:
 * every length from 0 to past a jumbo segment at every alignment of 8, over random bytes and the
 * edge patterns (all zero: the only input whose sum is 0; all 0xff; sums that carry at every fold);
 * the chain sum over the same bytes cut into segments at every odd and even point; and a frame's
 * TCP checksum field against rte_ipv4_udptcp_cksum; an IPv4 header's checksum and pseudo-header sum
 * against rte_ipv4_cksum and rte_ipv4_phdr_cksum, an IPv6 pseudo-header's against rte_ipv6_phdr_cksum. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "eth_side/cksum.h"
#include "tests/fuzz/fuzz_eth_harness.h"

#define MAXLEN 9100u

static uint8_t buf[MAXLEN + 8];

static void fill_random(uint8_t *p, size_t n, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rand();
}

static void check_all_lengths(void)
{
	for (unsigned align = 0; align < 8; align++)
		for (unsigned len = 0; len <= MAXLEN; len += (len < 300 ? 1 : 37))
			assert_int_equal(eth_cksum(buf + align, len), rte_raw_cksum(buf + align, len));
}

static void test_random(void **state)
{
	(void)state;
	for (unsigned seed = 1; seed <= 3; seed++) {
		fill_random(buf, sizeof(buf), seed);
		check_all_lengths();
	}
}

static void test_patterns(void **state)
{
	(void)state;
	memset(buf, 0, sizeof(buf));
	check_all_lengths();
	for (unsigned len = 0; len <= 64; len++)
		assert_int_equal(eth_cksum(buf, len), 0);
	memset(buf, 0xff, sizeof(buf));
	check_all_lengths();
	for (unsigned len = 2; len <= 64; len += 2)
		assert_int_equal(eth_cksum(buf, len), 0xffff); /* nonzero words never sum to 0 */
	for (size_t i = 0; i < sizeof(buf); i++) /* 0xfffe, 0x0001 alternating: carries at every fold */
		buf[i] = (uint8_t)((i % 4) < 2 ? (i % 2 ? 0xfe : 0xff) : (i % 2 ? 0x01 : 0x00));
	check_all_lengths();
	/* the largest single buffer (64 KiB) */
	static uint8_t big[65536];
	memset(big, 0xff, sizeof(big));
	assert_int_equal(eth_cksum(big, sizeof(big)), rte_raw_cksum(big, sizeof(big)));
	fill_random(big, sizeof(big), 7);
	assert_int_equal(eth_cksum(big, sizeof(big)), rte_raw_cksum(big, sizeof(big)));
}

/* LEN bytes of SRC as a chain of segments cut at CUT1 and CUT2 (offsets into SRC), after HEAD bytes
 * of something else in the first segment. */
static struct rte_mbuf *chain_of(const uint8_t *src, unsigned head, unsigned len, unsigned cut1, unsigned cut2)
{
	unsigned cuts[] = {0, cut1, cut2, len};
	struct rte_mbuf *m = NULL, *last = NULL;

	for (unsigned i = 0; i < 3; i++) {
		struct rte_mbuf *s = rte_pktmbuf_alloc(eh_pool);
		unsigned n = cuts[i + 1] - cuts[i], h = i ? 0 : head;
		uint8_t *d;

		assert_non_null(s);
		d = (uint8_t *)rte_pktmbuf_append(s, (uint16_t)(h + n));
		assert_non_null(d);
		memset(d, 0xa5, h);
		memcpy(d + h, src + cuts[i], n);
		if (!m) {
			m = last = s;
		} else {
			last->next = s;
			last = s;
			m->nb_segs++;
			m->pkt_len += s->data_len;
		}
	}
	return m;
}

static void test_chain(void **state)
{
	(void)state;
	fill_random(buf, sizeof(buf), 11);
	for (unsigned len = 1; len <= 61; len += 6)
		for (unsigned head = 0; head <= 3; head++)
			for (unsigned c1 = 0; c1 <= len; c1++)
				for (unsigned c2 = c1; c2 <= len; c2 += 5) {
					struct rte_mbuf *m = chain_of(buf, head, len, c1, c2);
					uint16_t sum = 0;

					assert_true(eth_cksum_chain(m, head, len, &sum));
					assert_int_equal(sum, rte_raw_cksum(buf, len));
					/* shorter than asked: false */
					assert_false(eth_cksum_chain(m, head, len + 1, &sum));
					rte_pktmbuf_free(m);
				}
	assert_int_equal(rte_mempool_avail_count(eh_pool), EH_MBUFS);
}

/* An IPv4 header's checksum and its pseudo-header's sum, against DPDK's, over random headers (with
 * options too) and a header whose sum is all ones (its checksum field 0, as DPDK's). */
static void test_ipv4(void **state)
{
	uint8_t raw[60];
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)raw;

	(void)state;
	for (unsigned seed = 1; seed <= 2000; seed++) {
		unsigned ihl = 5 + seed % 11;

		fill_random(raw, sizeof(raw), seed);
		ip->version_ihl = (uint8_t)(0x40 | ihl);
		ip->total_length = rte_cpu_to_be_16((uint16_t)(ihl * 4 + seed % 9000));
		ip->hdr_checksum = 0;
		assert_int_equal(eth_ipv4_cksum(ip), rte_ipv4_cksum(ip));
		assert_int_equal(eth_ipv4_phdr_cksum(ip), rte_ipv4_phdr_cksum(ip, 0));
		ip->hdr_checksum = eth_ipv4_cksum(ip);
		assert_int_equal(eth_cksum(ip, ihl * 4), 0xffff); /* what input verifies */
	}
	memset(raw, 0, sizeof(raw));
	ip->version_ihl = 0x45;
	{
		uint16_t first, rest; /* (the sum takes host-order words) */
		memcpy(&first, raw, 2);
		rest = (uint16_t)(0xffff - first);
		memcpy(&ip->total_length, &rest, 2);
	}
	assert_int_equal(rte_raw_cksum(ip, 20), 0xffff);
	assert_int_equal(eth_ipv4_cksum(ip), 0);
	assert_int_equal(eth_ipv4_cksum(ip), rte_ipv4_cksum(ip));
}

/* An IPv6 pseudo-header's sum against DPDK's, over random addresses, lengths and protocols. */
static void test_ipv6_phdr(void **state)
{
	struct rte_ipv6_hdr ip;

	(void)state;
	for (unsigned seed = 1; seed <= 2000; seed++) {
		fill_random((uint8_t *)&ip, sizeof(ip), seed);
		ip.payload_len = rte_cpu_to_be_16((uint16_t)(seed * 37));
		ip.proto &= 0x7f; /* (DPDK shifts the protocol into an int's sign bit from 128 on) */
		assert_int_equal(eth_ipv6_phdr_cksum(&ip, seed * 37 % 65536, ip.proto), rte_ipv6_phdr_cksum(&ip, 0));
	}
}

/* A TCP frame's checksum field, as one buffer and as a chain, against DPDK's. */
static void test_l4(void **state)
{
	(void)state;
	for (unsigned plen = 0; plen <= 1460; plen += 73) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(eh_pool);
		unsigned tl = (unsigned)sizeof(struct rte_tcp_hdr) + plen;
		struct rte_ipv4_hdr *ip;
		struct rte_tcp_hdr *th;
		uint16_t want, got;

		assert_non_null(m);
		ip = (struct rte_ipv4_hdr *)rte_pktmbuf_append(m, (uint16_t)(sizeof(*ip) + tl));
		assert_non_null(ip);
		memset(ip, 0, sizeof(*ip));
		ip->version_ihl = 0x45;
		ip->total_length = rte_cpu_to_be_16((uint16_t)(sizeof(*ip) + tl));
		ip->next_proto_id = IPPROTO_TCP;
		ip->src_addr = EH_PEER_IP;
		ip->dst_addr = EH_GW_IP;
		th = (struct rte_tcp_hdr *)(ip + 1);
		fill_random((uint8_t *)th, tl, plen);
		th->cksum = 0;
		want = rte_ipv4_udptcp_cksum(ip, th);
		got = eth_cksum_l4(m, rte_ipv4_phdr_cksum(ip, 0), sizeof(*ip));
		/* equal, up to the two encodings of zero (DPDK's UDP rule turns 0 into 0xffff) */
		assert_int_equal(got == 0 ? 0xffff : got, want);
		rte_pktmbuf_free(m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random),
	    cmocka_unit_test(test_patterns),
	    cmocka_unit_test(test_chain),
	    cmocka_unit_test(test_l4),
	    cmocka_unit_test(test_ipv4),
	    cmocka_unit_test(test_ipv6_phdr),
	};

	if (eh_eal_init()) {
		fprintf(stderr, "cannot start the EAL\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
