/* SYN cookies (eth_side/syncookie.c): what a cookie carries comes back intact, every field of the
 * flow and of the cookie is bound by its MAC, and its life is one to two 64 s slots. Pure functions:
 * no engine, no DPDK. (test_eth_input.c drives cookies through the engine.) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eth_side/syncookie.h"

static const struct eth_siphash_key key = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
/* 198.18.0.2 -> 198.18.0.1, IPv4-mapped */
static const struct eth_syncookie_flow flow = {.raddr = {.b = {[10] = 0xff, [11] = 0xff, 198, 18, 0, 2}},
                                               .laddr = {.b = {[10] = 0xff, [11] = 0xff, 198, 18, 0, 1}},
                                               .rport = 40000,
                                               .lport = 80,
                                               .peer_isn = 0xfffffff0u,
                                               .our_wscale = 7};
#define T0 (1000ull * ETH_SYNCOOKIE_SLOT_MS + 1234) /* some time inside a slot */

static void test_roundtrip_mss(void **state)
{
	static const struct {
		uint16_t offered, got;
	} cases[] = {{0, 536},     {1, 64},      {100, 64},    {535, 64},    {536, 536},   {1219, 536},
	             {1220, 1220}, {1400, 1360}, {1440, 1440}, {1459, 1440}, {1460, 1460}, {4035, 1460},
	             {4036, 4036}, {8960, 8960}, {9000, 8960}, {65535, 8960}};
	struct eth_syncookie_opts o;

	(void)state;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t c = eth_syncookie_make(&key, &flow, T0, cases[i].offered, false, 0);

		assert_int_equal(eth_syncookie_check(&key, &flow, T0, c, false, 0, &o), 0);
		assert_int_equal(o.mss, cases[i].got);
		assert_false(o.ts || o.ws_ok || o.sack);
		/* an ACK that carries timestamps anyway changes nothing */
		assert_int_equal(eth_syncookie_check(&key, &flow, T0, c, true, 12345, &o), 0);
		assert_false(o.ts || o.ws_ok || o.sack);
	}
}

/* With timestamps: window scale 0..14 or none, SACK or not, through our TSval's low 6 bits. */
static void test_roundtrip_ts_options(void **state)
{
	struct eth_syncookie_opts o;

	(void)state;
	for (int ws = -1; ws <= 14; ws++)
		for (int sack = 0; sack < 2; sack++) {
			uint8_t bits = eth_syncookie_ts_bits(ws >= 0, ws >= 0 ? (uint8_t)ws : 0, sack);
			uint32_t c = eth_syncookie_make(&key, &flow, T0, 1460, true, bits);
			uint32_t tsval = eth_syncookie_tsval(0x12345678u, bits);

			assert_int_equal(tsval & 0x3f, bits);
			assert_int_equal(eth_syncookie_check(&key, &flow, T0, c, true, tsval, &o), 0);
			assert_true(o.ts);
			assert_int_equal(o.mss, 1460);
			assert_int_equal(o.sack, sack);
			assert_int_equal(o.ws_ok, ws >= 0);
			if (ws >= 0)
				assert_int_equal(o.wscale, ws);
			/* without the timestamp in the ACK: refused as RFC 7323 3.2 wants */
			assert_int_equal(eth_syncookie_check(&key, &flow, T0, c, false, 0, &o), -EPROTO);
			/* other option bits in the echo: a forgery */
			for (uint32_t other = 0; other < 64; other++)
				if (other != bits)
					assert_int_equal(eth_syncookie_check(&key, &flow, T0, c, true,
					                                     (tsval & ~0x3fu) | other, &o),
					                 -EINVAL);
		}
}

/* Our TSval keeps the option bits and is never ahead of the clock, nor more than 63 ticks behind. */
static void test_tsval(void **state)
{
	static const uint32_t clocks[] = {0, 1, 63, 64, 100, 0x12345678u, 0xffffffc0u, 0xffffffffu};

	(void)state;
	for (unsigned i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++)
		for (uint8_t bits = 0; bits < 64; bits++) {
			uint32_t ts = eth_syncookie_tsval(clocks[i], bits);

			assert_int_equal(ts & 0x3f, bits);
			assert_true((uint32_t)(clocks[i] - ts) <
			            64); /* (modulo 2^32, as TCP compares them) */
		}
}

/* Every field of the flow is bound: another address, port, ISN or window scale fails. */
static void test_flow_bound(void **state)
{
	uint32_t c = eth_syncookie_make(&key, &flow, T0, 1460, true, eth_syncookie_ts_bits(true, 7, true));
	uint32_t tsecr = eth_syncookie_tsval(99999, eth_syncookie_ts_bits(true, 7, true));
	struct eth_siphash_key other_key = key;
	struct eth_syncookie_opts o;
	struct eth_syncookie_flow f;

	(void)state;
	assert_int_equal(eth_syncookie_check(&key, &flow, T0, c, true, tsecr, &o), 0);
	f = flow, f.raddr.b[15] ^= 1;
	assert_int_equal(eth_syncookie_check(&key, &f, T0, c, true, tsecr, &o), -EINVAL);
	f = flow, f.laddr.b[12] ^= 1;
	assert_int_equal(eth_syncookie_check(&key, &f, T0, c, true, tsecr, &o), -EINVAL);
	/* IPv6: every byte of the addresses is bound, not only the last four */
	f = flow, f.raddr.b[0] = 0x20, f.raddr.b[10] = 0;
	assert_int_equal(eth_syncookie_check(&key, &f, T0, c, true, tsecr, &o), -EINVAL);
	f = flow, f.laddr.b[3] ^= 0x80;
	assert_int_equal(eth_syncookie_check(&key, &f, T0, c, true, tsecr, &o), -EINVAL);
	{
		/* a v6 flow's cookie round-trips, and a v6 flow differing in a middle byte fails */
		struct eth_syncookie_flow g = flow;
		uint32_t c6;

		memset(g.raddr.b, 0, 16);
		memset(g.laddr.b, 0, 16);
		g.raddr.b[0] = g.laddr.b[0] = 0x20, g.raddr.b[1] = g.laddr.b[1] = 0x01;
		g.raddr.b[15] = 2, g.laddr.b[15] = 1;
		c6 = eth_syncookie_make(&key, &g, T0, 1440, true, eth_syncookie_ts_bits(true, 7, true));
		assert_int_equal(eth_syncookie_check(&key, &g, T0, c6, true, tsecr, &o), 0);
		assert_int_equal(o.mss, 1440);
		g.raddr.b[7] ^= 4;
		assert_int_equal(eth_syncookie_check(&key, &g, T0, c6, true, tsecr, &o), -EINVAL);
	}
	f = flow, f.rport++;
	assert_int_equal(eth_syncookie_check(&key, &f, T0, c, true, tsecr, &o), -EINVAL);
	f = flow, f.lport++;
	assert_int_equal(eth_syncookie_check(&key, &f, T0, c, true, tsecr, &o), -EINVAL);
	f = flow, f.peer_isn++;
	assert_int_equal(eth_syncookie_check(&key, &f, T0, c, true, tsecr, &o), -EINVAL);
	f = flow, f.our_wscale = 6;
	assert_int_equal(eth_syncookie_check(&key, &f, T0, c, true, tsecr, &o), -EINVAL);
	other_key.k1 ^= 1;
	assert_int_equal(eth_syncookie_check(&other_key, &flow, T0, c, true, tsecr, &o), -EINVAL);
	/* and every bit of the cookie itself */
	for (unsigned b = 0; b < 32; b++)
		assert_int_equal(eth_syncookie_check(&key, &flow, T0, c ^ (1u << b), true, tsecr, &o),
		                 -EINVAL);
}

/* A cookie lives in its slot and the next one: at least 64 s, less than 128 s. */
static void test_lifetime(void **state)
{
	uint64_t start = 1000ull * ETH_SYNCOOKIE_SLOT_MS, end = start + ETH_SYNCOOKIE_SLOT_MS - 1;
	struct eth_syncookie_opts o;
	uint32_t c;

	(void)state;
	/* made at the start of a slot: good until the end of the next */
	c = eth_syncookie_make(&key, &flow, start, 1460, false, 0);
	assert_int_equal(eth_syncookie_check(&key, &flow, start, c, false, 0, &o), 0);
	assert_int_equal(
	    eth_syncookie_check(&key, &flow, start + 2 * ETH_SYNCOOKIE_SLOT_MS - 1, c, false, 0, &o), 0);
	assert_int_equal(eth_syncookie_check(&key, &flow, start + 2 * ETH_SYNCOOKIE_SLOT_MS, c, false, 0, &o),
	                 -EINVAL);
	/* made at the end of a slot: still 64 s */
	c = eth_syncookie_make(&key, &flow, end, 1460, false, 0);
	assert_int_equal(eth_syncookie_check(&key, &flow, end + ETH_SYNCOOKIE_SLOT_MS, c, false, 0, &o), 0);
	assert_int_equal(eth_syncookie_check(&key, &flow, end + ETH_SYNCOOKIE_SLOT_MS + 1, c, false, 0, &o),
	                 -EINVAL);
	/* never again: slots that alias the parity do not revive it */
	for (uint64_t k = 2; k < 40; k++)
		assert_int_equal(
		    eth_syncookie_check(&key, &flow, start + k * ETH_SYNCOOKIE_SLOT_MS, c, false, 0, &o),
		    -EINVAL);
	/* nor one from the future (a clock cannot go back, but the check must not care) */
	c = eth_syncookie_make(&key, &flow, start + 3 * ETH_SYNCOOKIE_SLOT_MS, 1460, false, 0);
	assert_int_equal(eth_syncookie_check(&key, &flow, start, c, false, 0, &o), -EINVAL);
	/* the first slot of a clock has no previous one */
	c = eth_syncookie_make(&key, &flow, 5, 1460, false, 0);
	assert_int_equal(eth_syncookie_check(&key, &flow, 5, c, false, 0, &o), 0);
}

/* Blind guesses for one flow: 2^-27 each, so 200000 of them find nothing (2^-27 x 200000 = 0.0015). */
static void test_guessing(void **state)
{
	struct eth_syncookie_opts o;
	uint32_t x = 0x9e3779b9u, hits = 0;

	(void)state;
	for (unsigned i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		hits += eth_syncookie_check(&key, &flow, T0, x, true, x * 2654435761u, &o) == 0;
	}
	assert_int_equal(hits, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip_mss), cmocka_unit_test(test_roundtrip_ts_options),
	    cmocka_unit_test(test_tsval),         cmocka_unit_test(test_flow_bound),
	    cmocka_unit_test(test_lifetime),      cmocka_unit_test(test_guessing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
