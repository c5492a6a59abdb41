/* Unit tests of eth_side/tcp_opt.c: TCP option parsing (untrusted input) and writing. A Linux SYN's
 * options, what counts only on a SYN, EOL and NOP, unknown kinds, every malformed length the RFCs
 * rule out, exhaustive short buffers (ASan watches for any read past the end), and writing then
 * parsing back every combination the engine emits (lengths within 40 bytes, multiples of 4). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eth_side/tcp_opt.h"

/* Parses a copy in a buffer of exactly LEN bytes, so ASan sees any read past it. */
static int parse(const uint8_t *p, size_t len, bool syn, struct eth_tcp_opts *o)
{
	uint8_t *b = malloc(len ? len : 1);
	int ret;

	assert_non_null(b);
	memcpy(b, p, len);
	ret = eth_tcp_opt_parse(b, len, syn, o);
	free(b);
	return ret;
}

static void test_linux_syn(void **state)
{
	/* what Linux 6.1 sends in a SYN: MSS 1460, SACK-permitted, timestamps, NOP, window scale 7 */
	static const uint8_t syn[] = {2,    4,    0x05, 0xb4, 4, 2, 8, 10, 0x11, 0x22,
	                              0x33, 0x44, 0,    0,    0, 0, 1, 3,  3,    7};
	struct eth_tcp_opts o;

	(void)state;
	assert_int_equal(parse(syn, sizeof(syn), true, &o), 0);
	assert_true(o.mss_ok && o.sack_ok && o.ts_ok && o.ws_ok);
	assert_int_equal(o.mss, 1460);
	assert_int_equal(o.wscale, 7);
	assert_int_equal(o.tsval, 0x11223344u);
	assert_int_equal(o.tsecr, 0);
	/* the same on a non-SYN: only the timestamps count (RFC 7323, RFC 2018, RFC 9293) */
	assert_int_equal(parse(syn, sizeof(syn), false, &o), 0);
	assert_false(o.mss_ok || o.sack_ok || o.ws_ok);
	assert_true(o.ts_ok);
	assert_int_equal(o.tsval, 0x11223344u);
}

static void test_wscale_clamp_and_oddities(void **state)
{
	static const uint8_t ws15[] = {3, 3, 15, 0};
	static const uint8_t eol_garbage[] = {2, 4, 0x02, 0x18, 0, 0xff, 0x00, 0x99}; /* EOL, then junk */
	static const uint8_t unknown[] = {30, 6, 1, 2, 3, 4, 1, 1, 2, 4, 0x01, 0x00}; /* kind 30 len 6 */
	static const uint8_t unknown2[] = {254, 2, 1, 0};                             /* bare, len 2 */
	static const uint8_t nops[] = {1, 1, 1, 1, 1, 1, 1, 1};
	struct eth_tcp_opts o;

	(void)state;
	assert_int_equal(parse(ws15, sizeof(ws15), true, &o), 0);
	assert_int_equal(o.wscale, 14); /* RFC 7323 2.3 */
	assert_int_equal(parse(eol_garbage, sizeof(eol_garbage), true, &o), 0);
	assert_true(o.mss_ok);
	assert_int_equal(o.mss, 536);
	assert_int_equal(parse(unknown, sizeof(unknown), true, &o), 0);
	assert_true(o.mss_ok);
	assert_int_equal(o.mss, 256);
	assert_int_equal(parse(unknown2, sizeof(unknown2), true, &o), 0);
	assert_int_equal(parse(nops, sizeof(nops), true, &o), 0);
	assert_false(o.mss_ok || o.ts_ok || o.ws_ok || o.sack_ok);
	assert_int_equal(parse(nops, 0, true, &o), 0);
}

static void test_sack_blocks(void **state)
{
	uint8_t b[40] = {1, 1, 5, 34};
	struct eth_tcp_opts o;

	(void)state;
	for (unsigned i = 0; i < 8; i++)
		for (unsigned k = 0; k < 4; k++)
			b[4 + 4 * i + k] = (uint8_t)(i * 16 + k);
	assert_int_equal(parse(b, 36, false, &o), 0);
	assert_int_equal(o.n_sack, 4);
	assert_int_equal(o.sack[0].start, 0x00010203u);
	assert_int_equal(o.sack[0].end, 0x10111213u);
	assert_int_equal(o.sack[3].end, 0x70717273u);
	b[3] = 10; /* one block */
	assert_int_equal(parse(b, 12, false, &o), 0);
	assert_int_equal(o.n_sack, 1);
	assert_int_equal(o.sack[0].end, 0x10111213u);
	/* SACK blocks count on a SYN too (the parser does not care; the engine ignores them there) */
	assert_int_equal(parse(b, 12, true, &o), 0);
	assert_int_equal(o.n_sack, 1);
}

/* Every malformed list RFC 9293/7323/2018 rules out returns -EBADMSG. */
static void test_malformed(void **state)
{
	static const struct {
		uint8_t b[16];
		size_t len;
	} bad[] = {
	    {{2, 0, 5, 0xb4}, 4},                 /* length 0 */
	    {{2, 1, 5, 0xb4}, 4},                 /* length 1 */
	    {{2, 3, 5, 0}, 4},                    /* MSS of 3 */
	    {{2, 5, 5, 0xb4, 0}, 5},              /* MSS of 5 */
	    {{2, 4, 5}, 3},                       /* MSS cut short */
	    {{2}, 1},                             /* a kind with no length byte */
	    {{1, 1, 1, 2}, 4},                    /* the same after NOPs */
	    {{3, 2, 0, 0}, 4},                    /* window scale of 2 */
	    {{3, 4, 7, 0}, 4},                    /* window scale of 4 */
	    {{4, 3, 0, 0}, 4},                    /* SACK-permitted of 3 */
	    {{8, 9, 0, 0, 0, 0, 0, 0, 0, 0}, 10}, /* timestamps of 9 */
	    {{8, 11, 0}, 12},                     /* timestamps of 11 */
	    {{8, 10, 0, 0, 0, 0}, 6},             /* timestamps cut short */
	    {{5, 2, 0, 0}, 4},                    /* SACK with no block */
	    {{5, 9, 0}, 12},                      /* SACK of 9 */
	    {{5, 11, 0}, 12},                     /* SACK of 11 */
	    {{5, 18, 0}, 12},                     /* SACK of 2 blocks in 12 bytes */
	    {{30, 40, 0, 0}, 4},                  /* unknown kind running past the end */
	    {{30, 255, 0, 0}, 4},
	    {{1, 30, 5, 0}, 4}, /* unknown kind of length 5 in 3 bytes */
	};
	struct eth_tcp_opts o;

	(void)state;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i].b, bad[i].len, true, &o), -EBADMSG);
		assert_int_equal(parse(bad[i].b, bad[i].len, false, &o), -EBADMSG);
	}
}

/* Every 1-, 2- and 3-byte list, and random 40-byte ones: a clean answer, never a read past the end. */
static void test_exhaustive_short(void **state)
{
	struct eth_tcp_opts o;
	uint8_t b[40];
	int ret;

	(void)state;
	for (unsigned v = 0; v < 1u << 24; v += v < 1u << 16 ? 1 : 251) {
		b[0] = (uint8_t)v;
		b[1] = (uint8_t)(v >> 8);
		b[2] = (uint8_t)(v >> 16);
		for (size_t len = 1; len <= 3; len++) {
			ret = parse(b, len, (v & 1) != 0, &o);
			assert_true(ret == 0 || ret == -EBADMSG);
			assert_true(o.n_sack <= ETH_TCP_MAX_SACK && o.wscale <= ETH_TCP_MAX_WSCALE);
		}
	}
	srand(7);
	for (unsigned i = 0; i < 200000; i++) {
		size_t len = (size_t)(rand() % 41);
		for (size_t k = 0; k < len; k++)
			b[k] = (uint8_t)(rand() % 4 ? rand() % 12 : rand());
		ret = parse(b, len, rand() & 1, &o);
		assert_true(ret == 0 || ret == -EBADMSG);
		assert_true(o.n_sack <= ETH_TCP_MAX_SACK && o.wscale <= ETH_TCP_MAX_WSCALE);
	}
}

static void test_write_syn_roundtrip(void **state)
{
	uint8_t b[40];
	struct eth_tcp_opts o;

	(void)state;
	for (unsigned sack = 0; sack < 2; sack++)
		for (unsigned ts = 0; ts < 2; ts++)
			for (int ws = -1; ws <= 14; ws += 5) {
				unsigned n =
				    eth_tcp_opt_write_syn(b, 1448, sack, ts, 0xdeadbeefu, 0x01020304u, ws);
				assert_true(n <= 20 && n % 4 == 0);
				assert_int_equal(parse(b, n, true, &o), 0);
				assert_true(o.mss_ok);
				assert_int_equal(o.mss, 1448);
				assert_int_equal(o.sack_ok, sack);
				assert_int_equal(o.ts_ok, ts);
				if (ts) {
					assert_int_equal(o.tsval, 0xdeadbeefu);
					assert_int_equal(o.tsecr, 0x01020304u);
				}
				assert_int_equal(o.ws_ok, ws >= 0);
				if (ws >= 0)
					assert_int_equal(o.wscale, ws);
			}
}

static void test_write_roundtrip(void **state)
{
	struct eth_sack_block blk[6];
	struct eth_tcp_opts o;
	uint8_t b[48];

	(void)state;
	for (unsigned i = 0; i < 6; i++) {
		blk[i].start = 0xfffff000u + i * 3000; /* across the wrap */
		blk[i].end = blk[i].start + 1000;
	}
	for (unsigned ts = 0; ts < 2; ts++)
		for (unsigned n = 0; n <= 6; n++) {
			unsigned len = eth_tcp_opt_write(b, ts, 7, 8, blk, n),
			         want = n < (ts ? 3u : 4u) ? n : (ts ? 3u : 4u);
			assert_true(len <= 40 && len % 4 == 0);
			assert_int_equal(parse(b, len, false, &o), 0);
			assert_int_equal(o.ts_ok, ts);
			assert_int_equal(o.n_sack, want);
			for (unsigned i = 0; i < want; i++) {
				assert_int_equal(o.sack[i].start, blk[i].start);
				assert_int_equal(o.sack[i].end, blk[i].end);
			}
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_linux_syn),        cmocka_unit_test(test_wscale_clamp_and_oddities),
	    cmocka_unit_test(test_sack_blocks),      cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_exhaustive_short), cmocka_unit_test(test_write_syn_roundtrip),
	    cmocka_unit_test(test_write_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
