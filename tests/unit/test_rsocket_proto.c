/* Unit tests of ib_side/proto.c: the rsocket protocol arithmetic, without hardware.
 *
 * Private data layout (checked byte by byte against what a stock rsocket client sends), immediate
 * data, 16-bit credit edges across wrap-around, buffer adverts alternating between the two entries of
 * the peer's target_sgl, the receive ring wrapping, the send ring splitting a write in two, and a long
 * randomized run of our send side against our receive side (the same rules on both ends, as between
 * two rsockets) that checks every byte lands where the receiver expects it. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ib_side/proto.h"

static void put_be(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

/* What rdma-core 44's rsocket client put in its connect request (rsocket-protocol.md). */
static void stock_client_pdata(uint8_t *b)
{
	memset(b, 0, IB_RS_PDATA_LEN);
	b[0] = 1;			      /* version */
	b[1] = 0x02;			      /* iomap supported, little-endian host */
	put_be(b + 2, 384, 2);		      /* credits */
	b[7] = 0;			      /* target_iomap_size */
	put_be(b + 8, 0x0000556677880000ull, 8); /* target_sgl */
	put_be(b + 16, 42, 4);
	put_be(b + 20, 2, 4);
	put_be(b + 24, 0x0000550000001000ull, 8); /* data_buf */
	put_be(b + 32, 0x10000, 4);
	put_be(b + 36, 65536, 4);
}

static void test_params_stock_client(void **state)
{
	uint8_t b[IB_RS_PDATA_LEN], again[IB_RS_PDATA_LEN];
	struct ib_rs_params p;

	(void)state;
	stock_client_pdata(b);
	assert_int_equal(ib_rs_params_parse(b, sizeof(b), &p), 0);
	assert_int_equal(p.version, 1);
	assert_int_equal(p.flags, IB_RS_FLAG_IOMAP);
	assert_int_equal(p.credits, 384);
	assert_int_equal(p.target_sgl.addr, 0x0000556677880000ull);
	assert_int_equal(p.target_sgl.key, 42);
	assert_int_equal(p.target_sgl.length, 2);
	assert_int_equal(p.data_buf.addr, 0x0000550000001000ull);
	assert_int_equal(p.data_buf.key, 0x10000);
	assert_int_equal(p.data_buf.length, 65536);
	/* and back: the same 40 bytes */
	ib_rs_params_format(&p, again);
	assert_memory_equal(b, again, sizeof(b));
}

static void test_params_rejects(void **state)
{
	uint8_t b[64];
	struct ib_rs_params p;

	(void)state;
	stock_client_pdata(b);
	assert_int_equal(ib_rs_params_parse(b, 39, &p), -EBADMSG);	   /* short */
	assert_int_equal(ib_rs_params_parse(b, 0, &p), -EBADMSG);	   /* none */
	assert_int_equal(ib_rs_params_parse(NULL, 40, &p), -EBADMSG);
	assert_int_equal(ib_rs_params_parse(b, 64, &p), 0);		   /* longer (padded by the CM) is fine */
	b[0] = 2;
	assert_int_equal(ib_rs_params_parse(b, 40, &p), -EPROTONOSUPPORT);
	assert_int_equal(ib_rs_params_parse(b, 8, &p), -EPROTONOSUPPORT); /* version first, even when short */
	b[0] = 0; /* all-zero private data (a client that sent none) */
	assert_int_equal(ib_rs_params_parse(b, 40, &p), -EPROTONOSUPPORT);
	stock_client_pdata(b);
	b[2] = b[3] = 0; /* no credits */
	assert_int_equal(ib_rs_params_parse(b, 40, &p), -EBADMSG);
	b[2] = b[3] = 0xFF; /* more credits than rsocket's deepest queue (0xFFFE) */
	assert_int_equal(ib_rs_params_parse(b, 40, &p), -EBADMSG);
	b[3] = 0xFE; /* the deepest */
	assert_int_equal(ib_rs_params_parse(b, 40, &p), 0);
	assert_int_equal(p.credits, IB_RS_QP_MAX);
	stock_client_pdata(b);
	b[23] = 3; /* a target_sgl of 3 entries */
	assert_int_equal(ib_rs_params_parse(b, 40, &p), -EBADMSG);
	stock_client_pdata(b);
	memset(b + 36, 0, 4); /* empty data buffer */
	assert_int_equal(ib_rs_params_parse(b, 40, &p), -EBADMSG);
	stock_client_pdata(b);
	b[36] = 0x40; /* data buffer of 1 GiB + 64K: more than the 29-bit length of a message */
	assert_int_equal(ib_rs_params_parse(b, 40, &p), -EBADMSG);
	stock_client_pdata(b);
	memset(b + 8, 0, 8); /* null target_sgl address */
	assert_int_equal(ib_rs_params_parse(b, 40, &p), -EBADMSG);
	/* a client that sent only 8 meaningful bytes: the CM pads with zeros */
	memset(b, 0, sizeof(b));
	b[0] = 1;
	b[3] = 16;
	assert_int_equal(ib_rs_params_parse(b, 56, &p), -EBADMSG);
}

static void test_imm(void **state)
{
	(void)state;
	assert_int_equal(ib_rs_imm(IB_RS_OP_DATA, 65536), 65536);
	assert_int_equal(ib_rs_imm(IB_RS_OP_SGL, 0x1234), 0x80001234u);
	assert_int_equal(ib_rs_imm(IB_RS_OP_CTRL, IB_RS_CTRL_SHUTDOWN), 0xE0000002u);
	assert_int_equal(ib_rs_imm_op(0xE0000002u), IB_RS_OP_CTRL);
	assert_int_equal(ib_rs_imm_val(0xE0000002u), 2);
	assert_int_equal(ib_rs_imm_op(0x9FFFFFFFu), IB_RS_OP_SGL);
	assert_int_equal(ib_rs_imm_val(0x9FFFFFFFu), 0x1FFFFFFF);
	/* a value wider than 29 bits cannot leak into the op */
	assert_int_equal(ib_rs_imm_op(ib_rs_imm(IB_RS_OP_DATA, 0xFFFFFFFF)), IB_RS_OP_DATA);
}

static void test_seq_wrap(void **state)
{
	(void)state;
	assert_true(ib_seq_before(0xFFFF, 0x0000));
	assert_false(ib_seq_before(0x0000, 0xFFFF));
	assert_true(ib_seq_before(0xFFF0, 0x0010));
	assert_false(ib_seq_before(5, 5));
	assert_true(ib_seq_before(1, 0x7FFF));
}

static void test_sge_encode(void **state)
{
	uint8_t b[16];
	struct ib_rs_sge s;

	(void)state;
	ib_rs_sge_encode(b, 0x1122334455667788ull, 0xAABBCCDD, 0x10000, false);
	memcpy(&s, b, sizeof(s));
	assert_int_equal(s.addr, 0x1122334455667788ull);
	assert_int_equal(s.key, 0xAABBCCDD);
	assert_int_equal(s.length, 0x10000);
	ib_rs_sge_encode(b, 0x1122334455667788ull, 0xAABBCCDD, 0x10000, true);
	memcpy(&s, b, sizeof(s));
	assert_int_equal(s.addr, 0x8877665544332211ull);
	assert_int_equal(s.key, 0xDDCCBBAA);
	assert_int_equal(s.length, 0x00000100);
}

/* The receive side right after connecting: the first half was given in the private data, the second
 * half is advertised at once (into entry 1 of the peer's target_sgl), then adverts alternate. */
static void test_rx_adverts_alternate(void **state)
{
	uint32_t ends[16], off = 0xdead;
	unsigned idx = 9;
	struct ib_rx rx;

	(void)state;
	ib_rx_init(&rx, 1024, 16, ends);
	assert_int_equal(rx.advertised, 512);
	assert_int_equal(ib_rx_credit_due(&rx), IB_RX_CREDIT_ADVERT);
	assert_int_equal(ib_rx_credit_sent(&rx, true, &off, &idx), 16);
	assert_int_equal(off, 512);
	assert_int_equal(idx, 1);
	assert_int_equal(ib_rx_credit_due(&rx), IB_RX_CREDIT_NONE);
	/* the peer fills the first half with two writes, we consume it: the first half comes back, idx 0 */
	assert_int_equal(ib_rx_data(&rx, 300), 0);
	assert_int_equal(ib_rx_data(&rx, 212), 0);
	ib_rx_consume(&rx, 511);
	assert_int_equal(ib_rx_credit_due(&rx), IB_RX_CREDIT_NONE); /* one byte short of a half */
	ib_rx_consume(&rx, 1);
	assert_int_equal(rx.msgs_consumed, 2);
	assert_int_equal(ib_rx_credit_due(&rx), IB_RX_CREDIT_ADVERT);
	assert_int_equal(ib_rx_credit_sent(&rx, true, &off, &idx), 2 + 16);
	assert_int_equal(off, 0);
	assert_int_equal(idx, 0);
	/* second half, then the first again: entry 1 */
	assert_int_equal(ib_rx_data(&rx, 512), 0);
	ib_rx_consume(&rx, 512);
	assert_int_equal(ib_rx_credit_sent(&rx, true, &off, &idx), 3 + 16);
	assert_int_equal(off, 512);
	assert_int_equal(idx, 1);
}

static void test_rx_checks_the_peer(void **state)
{
	uint32_t ends[4];
	struct ib_rx rx;

	(void)state;
	ib_rx_init(&rx, 1024, 4, ends);
	assert_int_equal(ib_rx_data(&rx, 513), -EPROTO); /* more than the half it was given */
	assert_int_equal(ib_rx_data(&rx, 512), 0);
	assert_int_equal(ib_rx_data(&rx, 0), 0);	 /* zero-length data: counts a credit */
	assert_int_equal(ib_rx_data(&rx, 1), -EPROTO);	 /* nothing advertised beyond the half */
	ib_rx_consume(&rx, 512);
	assert_int_equal(rx.msgs_consumed, 2); /* the empty message is consumed with the bytes before it */
	/* credits: 4 granted, 2 used; the edge stays 4 until we send credits */
	assert_int_equal(ib_rx_credit_sent(&rx, true, &(uint32_t){0}, &(unsigned){0}), 6);
	assert_int_equal(ib_rx_data(&rx, 1), 0);
	assert_int_equal(ib_rx_data(&rx, 1), 0);
	assert_int_equal(ib_rx_data(&rx, 1), 0);
	assert_int_equal(ib_rx_data(&rx, 1), 0);
	assert_int_equal(ib_rx_data(&rx, 1), -EPROTO); /* the 7th message: beyond the edge of 6 */
	rx.eof = true;
	ib_rx_consume(&rx, 4);
	assert_int_equal(ib_rx_data(&rx, 0), -EPROTO); /* after SHUTDOWN */
}

/* Small messages fill the credits long before half the ring is consumed: bare credit edges go out,
 * every depth/2 consumed messages (rsocket's rule). */
static void test_rx_bare_edges(void **state)
{
	uint32_t ends[8], off;
	unsigned idx;
	struct ib_rx rx;

	(void)state;
	ib_rx_init(&rx, 1 << 20, 8, ends);
	ib_rx_credit_sent(&rx, true, &off, &idx);
	for (int i = 0; i < 8; i++)
		assert_int_equal(ib_rx_data(&rx, 10), 0);
	assert_int_equal(ib_rx_credit_due(&rx), IB_RX_CREDIT_NONE);
	ib_rx_consume(&rx, 30);
	assert_int_equal(ib_rx_credit_due(&rx), IB_RX_CREDIT_NONE); /* 3 < 4 */
	ib_rx_consume(&rx, 10);
	assert_int_equal(ib_rx_credit_due(&rx), IB_RX_CREDIT_EDGE);
	assert_int_equal(ib_rx_credit_sent(&rx, false, &off, &idx), 4 + 8);
	assert_true(ib_rx_peer_blocked(&rx) == false);
}

/* The ring wraps: peek returns what is contiguous, the rest after the wrap. */
static void test_rx_wrap(void **state)
{
	uint32_t ends[64], off;
	unsigned idx;
	struct ib_rx rx;

	(void)state;
	ib_rx_init(&rx, 1000, 64, ends);
	ib_rx_credit_sent(&rx, true, &off, &idx);
	assert_int_equal(ib_rx_data(&rx, 500), 0);
	assert_int_equal(ib_rx_data(&rx, 400), 0);
	ib_rx_consume(&rx, 600);
	ib_rx_credit_sent(&rx, true, &off, &idx); /* first half back */
	assert_int_equal(off, 0);
	assert_int_equal(ib_rx_data(&rx, 100), 0); /* 900..1000: the end of the ring */
	assert_int_equal(ib_rx_data(&rx, 200), 0); /* 0..200 after the wrap */
	assert_int_equal(ib_rx_peek(&rx, &off), 400);
	assert_int_equal(off, 600);
	ib_rx_consume(&rx, 350);
	assert_int_equal(ib_rx_peek(&rx, &off), 50);
	assert_int_equal(off, 950);
	ib_rx_consume(&rx, 50);
	assert_int_equal(ib_rx_peek(&rx, &off), 200);
	assert_int_equal(off, 0);
	/* a write across the end of the ring is refused, even when space was advertised */
	rx.advertised += 5000;
	rx.recvd = 1990;
	rx.consumed = 1990;
	assert_int_equal(ib_rx_data(&rx, 20), -EPROTO);
}

/* Send side: entry 0 from the private data, entry 1 from the first advert, a write never crosses the
 * end of an entry, the ring splits a write in two SGEs. */
static void test_tx_entries_and_ring(void **state)
{
	struct ib_rs_sge target[2] = {{.addr = 0x1000, .key = 7, .length = 100}, {0}};
	struct ib_tx_write w;
	struct ib_tx tx;

	(void)state;
	ib_tx_init(&tx, 256, 8, 3);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_EMPTY);
	assert_int_equal(ib_tx_queue(&tx, 150), 0);
	assert_int_equal(ib_tx_space(&tx), 106);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	ib_tx_next(&tx, target, &w);
	assert_int_equal(w.len, 100); /* not across the end of entry 0 */
	assert_int_equal(w.raddr, 0x1000);
	assert_int_equal(w.rkey, 7);
	assert_int_equal(target[0].length, 0);
	assert_int_equal(tx.target_idx, 1);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_NO_TARGET);
	target[1] = (struct ib_rs_sge){.addr = 0x2000, .key = 8, .length = 100};
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	ib_tx_next(&tx, target, &w);
	assert_int_equal(w.len, 50);
	assert_int_equal(w.raddr, 0x2000);
	assert_int_equal(w.off, 100);
	assert_int_equal(target[1].addr, 0x2000 + 50);
	assert_int_equal(tx.target_idx, 1); /* entry 1 still has 50 */
	ib_tx_done(&tx, 100);
	ib_tx_done(&tx, 50);
	assert_int_equal(ib_tx_space(&tx), 256);
	/* the ring wraps: 150..256 then 0..44 */
	assert_int_equal(ib_tx_queue(&tx, 150), 150);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	ib_tx_next(&tx, target, &w);
	assert_int_equal(w.len, 50);
	ib_tx_done(&tx, 50);
	target[0] = (struct ib_rs_sge){.addr = 0x1000, .key = 7, .length = 1000};
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_NO_CREDIT); /* 3 messages sent, edge 3 */
	tx.edge = 10;
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	ib_tx_next(&tx, target, &w);
	assert_int_equal(w.off, 200);
	assert_int_equal(w.len, 100);
	assert_int_equal(w.seg0, 56);
}

/* The peer writes its adverts into our target_sgl at any time, also between ib_tx_blocked's check
 * and ib_tx_next's use: the write goes where the checked entry said, never to an absurd advert
 * that came in between (one that wraps the address space here). */
static void test_tx_entry_rewritten_after_check(void **state)
{
	struct ib_rs_sge target[2] = {{.addr = 0x1000, .key = 7, .length = 100}, {0}};
	struct ib_tx_write w;
	struct ib_tx tx;

	(void)state;
	ib_tx_init(&tx, 256, 8, 3);
	ib_tx_queue(&tx, 60);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	target[0] = (struct ib_rs_sge){.addr = UINT64_MAX - 8, .key = 9, .length = 0xFFFFFF};
	ib_tx_next(&tx, target, &w);
	assert_int_equal(w.raddr, 0x1000);
	assert_int_equal(w.rkey, 7);
	assert_int_equal(w.len, 60);
	/* the entry is what the write left of the checked one; the next check sees that */
	assert_int_equal(target[0].addr, 0x1000 + 60);
	assert_int_equal(target[0].length, 40);
}

static void test_tx_limits(void **state)
{
	struct ib_rs_sge target[2] = {{.addr = 0x1000, .key = 7, .length = 1 << 20}, {0}};
	struct ib_tx_write w;
	struct ib_tx tx;

	(void)state;
	ib_tx_init(&tx, 1 << 20, 2, 100);
	ib_tx_queue(&tx, 300000);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	ib_tx_next(&tx, target, &w);
	assert_int_equal(w.len, IB_RS_MAX_XFER);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	ib_tx_next(&tx, target, &w);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_NO_WR); /* 2 work requests in flight */
	ib_tx_done(&tx, IB_RS_MAX_XFER);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	/* credits across the 16-bit wrap */
	tx.msgs_sent = 0xFFFF;
	tx.edge = 0x0001;
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	ib_tx_next(&tx, target, &w);
	assert_int_equal(tx.msgs_sent, 0);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_NO_WR);
	ib_tx_done(&tx, w.len);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	ib_tx_next(&tx, target, &w);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_NO_WR);
	ib_tx_done(&tx, w.len);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_NO_CREDIT);
}

/* Our send side against our receive side, with random sizes and random consumption, over many laps
 * of both rings and several wraps of the 16-bit message counters. Each write must land exactly at the
 * receiver's next ring offset, and the receiver's checks must accept every message. */
static void test_end_to_end_random(void **state)
{
	enum { RSIZE = 4096, SSIZE = 3000, DEPTH = 16, BASE = 0x100000 };
	uint32_t ends[DEPTH];
	struct ib_rs_sge target[2] = {{.addr = BASE, .key = 1, .length = RSIZE / 2}, {0}};
	struct ib_rx rx;
	struct ib_tx tx;
	struct {
		uint64_t raddr;
		uint32_t len;
	} wire[64];
	unsigned head = 0, count = 0;
	uint64_t sent_total = 0, msgs = 0;
	uint32_t seed = 12345;

	/* the other halves of the two ends (not exercised: one direction only) */
	uint32_t pends[DEPTH];
	struct ib_rx prx;
	struct ib_tx ptx;

	(void)state;
	ib_rx_init(&rx, RSIZE, DEPTH, ends);
	ib_tx_init(&tx, SSIZE, 8, DEPTH);
	assert_int_equal(ib_tx_peer(&tx, DEPTH, RSIZE / 2, DEPTH), 0);
	ib_rx_init(&prx, RSIZE, DEPTH, pends);
	ib_tx_init(&ptx, SSIZE, 8, DEPTH);
	for (long step = 0; step < 2000000; step++) {
		uint32_t r;
		seed = seed * 1103515245 + 12345;
		r = seed >> 8;
		switch (r % 4) {
		case 0: { /* the application writes */
			uint32_t n = r % 700 + 1;
			if (n > ib_tx_space(&tx))
				n = ib_tx_space(&tx);
			ib_tx_queue(&tx, n);
			break;
		}
		case 1: /* the sender posts */
			while (ib_tx_blocked(&tx, target) == IB_TX_OK && count < 64) {
				struct ib_tx_write w;
				assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
				ib_tx_next(&tx, target, &w);
				assert_true(w.len > 0 && w.len <= RSIZE / 2);
				assert_true(w.seg0 <= w.len);
				wire[(head + count++) % 64].raddr = w.raddr;
				wire[(head + count - 1) % 64].len = w.len;
				sent_total += w.len;
				msgs++;
			}
			break;
		case 2: /* messages arrive and complete */
			while (count) {
				uint64_t expect = BASE + rx.recvd % RSIZE;
				struct ib_rs_wc wc = {true, ib_rs_imm(IB_RS_OP_DATA, wire[head].len),
				                      wire[head].len};
				enum ib_violation why;
				assert_int_equal(wire[head].raddr, expect);
				assert_int_equal(ib_rs_recv(&rx, &ptx, &wc, &why), IB_RS_MSG_DATA);
				ib_tx_done(&tx, wire[head].len);
				head = (head + 1) % 64;
				count--;
			}
			break;
		case 3: { /* the receiver consumes some and sends what credits are due */
			uint32_t off, n = ib_rx_peek(&rx, &off);
			enum ib_rx_credit c;
			unsigned idx;
			if (n)
				ib_rx_consume(&rx, r % n + 1);
			while ((c = ib_rx_credit_due(&rx)) != IB_RX_CREDIT_NONE) {
				uint16_t edge = ib_rx_credit_sent(&rx, c == IB_RX_CREDIT_ADVERT, &off, &idx);
				/* rsocket computes the edge in int: up to 17 bits on the wire */
				uint32_t val = edge + (r & 1 ? 0x10000u : 0);
				struct ib_rs_wc wc = {true, ib_rs_imm(IB_RS_OP_SGL, val), 0};
				enum ib_violation why;
				if (c == IB_RX_CREDIT_ADVERT) {
					/* the peer only re-advertises an entry we are done with */
					assert_int_equal(target[idx].length, 0);
					target[idx] = (struct ib_rs_sge){
					    .addr = BASE + off, .key = 1, .length = RSIZE / 2};
					wc.byte_len = sizeof(struct ib_rs_sge);
				}
				assert_int_equal(ib_rs_recv(&prx, &tx, &wc, &why), IB_RS_MSG_CREDIT);
				assert_int_equal(tx.edge, edge);
				assert_true(ib_tx_advert_earned(&tx)); /* never charged as costless */
			}
			break;
		}
		}
	}
	assert_true(tx.adverts > 20ull * 2);
	assert_true(sent_total > 20ull * RSIZE);
	assert_true(msgs > 3 * 65536ull); /* the 16-bit counters wrapped several times */
	assert_int_equal(rx.msgs_recvd, (uint16_t)(msgs - count));
}

static enum ib_rs_msg recv(struct ib_rx *rx, struct ib_tx *tx, struct ib_rs_sge *target, bool with_imm,
			   unsigned op, uint32_t val, uint32_t byte_len, enum ib_violation *why)
{
	struct ib_rs_wc wc = {with_imm, ib_rs_imm(op, val), byte_len};

	(void)target;
	*why = IB_VIOL_COUNT;
	return ib_rs_recv(rx, tx, &wc, why);
}

#define VIOLATES(call, reason)                                                                               \
	do {                                                                                                 \
		assert_int_equal(call, IB_RS_MSG_VIOLATION);                                                 \
		assert_int_equal(why, reason);                                                               \
	} while (0)

/* What the receive completions a peer controls may say, and what they may not: byte_len against
 * the immediate (a zero-length write claiming a full buffer would hand out whatever the ring held),
 * data against space and credits, sends and unknown operations, credit edges against the peer's
 * depth, adverts against sanity. A violation leaves the state as it was. */
static void test_recv_checks_the_peer(void **state)
{
	struct ib_rs_sge target[2] = {{.addr = 0x1000, .key = 7, .length = 512}, {0}};
	enum ib_violation why;
	uint32_t ends[4];
	struct ib_rx rx, before;
	struct ib_tx tx;

	(void)state;
	ib_rx_init(&rx, 1024, 4, ends);
	ib_tx_init(&tx, 1024, 8, 0);
	assert_int_equal(ib_tx_peer(&tx, 16, 512, 16), 0);
	/* data */
	before = rx;
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_DATA, 512, 0, &why), IB_VIOL_LENGTH);
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_DATA, 100, 99, &why), IB_VIOL_LENGTH);
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_DATA, 100, 101, &why), IB_VIOL_LENGTH);
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_DATA, 513, 513, &why), IB_VIOL_SPACE);
	VIOLATES(recv(&rx, &tx, target, false, IB_RS_OP_DATA, 100, 100, &why), IB_VIOL_MESSAGE);
	assert_memory_equal(&rx, &before, sizeof(rx));
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_DATA, 500, 500, &why), IB_RS_MSG_DATA);
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_DATA, 13, 13, &why), IB_VIOL_SPACE);
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_DATA, 12, 12, &why), IB_RS_MSG_DATA);
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_DATA, 0, 0, &why), IB_RS_MSG_DATA);
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_DATA, 0, 0, &why), IB_RS_MSG_DATA);
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_DATA, 0, 0, &why), IB_VIOL_CREDIT); /* 5th of 4 */
	assert_int_equal(rx.recvd, 512);
	/* other operations and control values */
	for (unsigned op = 1; op < 8; op++)
		if (op != IB_RS_OP_SGL && op != IB_RS_OP_CTRL)
			VIOLATES(recv(&rx, &tx, target, true, op, 0, 0, &why), IB_VIOL_MESSAGE);
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_CTRL, 3, 0, &why), IB_VIOL_MESSAGE);
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_CTRL, IB_RS_CTRL_SHUTDOWN, 1, &why), IB_VIOL_LENGTH);
	assert_false(rx.eof);
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_CTRL, IB_RS_CTRL_KEEPALIVE, 0, &why),
	                 IB_RS_MSG_KEEPALIVE);
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_CTRL, IB_RS_CTRL_SHUTDOWN, 0, &why),
	                 IB_RS_MSG_SHUTDOWN);
	assert_true(rx.eof);
	ib_rx_consume(&rx, 512);
	ib_rx_credit_sent(&rx, true, &(uint32_t){0}, &(unsigned){0});
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_DATA, 1, 1, &why),
	         IB_VIOL_MESSAGE); /* after its end */
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_CTRL, IB_RS_CTRL_DISCONNECT, 0, &why),
	                 IB_RS_MSG_DISCONNECT);

	/* credit edges: 16 ahead at most (the peer's depth), never back */
	tx.msgs_sent = 10;
	tx.edge = 20;
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 27, 0, &why), IB_VIOL_CREDIT);
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 19, 0, &why), IB_VIOL_CREDIT);
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 9, 0, &why), IB_VIOL_CREDIT);
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 0xFFFF, 0, &why), IB_VIOL_CREDIT);
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 24, 8, &why), IB_VIOL_LENGTH);
	assert_int_equal(tx.edge, 20);
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 20, 0, &why), IB_RS_MSG_CREDIT);
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 0x10000 + 26, 0, &why), IB_RS_MSG_CREDIT);
	assert_int_equal(tx.edge, 26); /* rsocket's 17-bit edges: the low 16 bits count */
	/* across the 16-bit wrap */
	tx.msgs_sent = 0xFFF8;
	tx.edge = 0xFFFA;
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 0x0007, 0, &why), IB_RS_MSG_CREDIT);
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 0x0009, 0, &why), IB_VIOL_CREDIT);
	tx.msgs_sent = 10;
	tx.edge = 20;

	/* an advert payload is 16 bytes: other lengths are no rsocket message */
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 21, 15, &why), IB_VIOL_LENGTH);
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 21, 32, &why), IB_VIOL_LENGTH);
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 21, 16, &why), IB_RS_MSG_CREDIT);
}

/* The peer's depth is known only once its private data is: an active open may see an SGL message
 * first, which is checked again then. */
static void test_tx_peer_depth(void **state)
{
	struct ib_tx tx;

	(void)state;
	ib_tx_init(&tx, 1024, 8, 0);
	assert_int_equal(ib_tx_credit(&tx, 300), 0); /* before the private data: any sane edge */
	assert_int_equal(ib_tx_peer(&tx, 384, 65536, 384), 0);
	assert_int_equal(tx.edge, 300); /* the SGL message came later than the private data's credits */
	ib_tx_init(&tx, 1024, 8, 0);
	assert_int_equal(ib_tx_credit(&tx, 300), 0);
	assert_int_equal(ib_tx_peer(&tx, 64, 65536, 64), -EPROTO);
	ib_tx_init(&tx, 1024, 8, 0);
	assert_int_equal(ib_tx_peer(&tx, 64, 65536, 64), 0);
	assert_int_equal(tx.edge, 64);
	assert_int_equal(ib_tx_credit(&tx, 63), -EPROTO);
}

/* The peer writes adverts into our target_sgl when it likes, and they are used before their
 * completion comes: an absurd one is refused when it is about to be used. */
static void test_tx_bad_target(void **state)
{
	struct ib_rs_sge target[2] = {{.addr = 0x1000, .key = 7, .length = 100}, {0}};
	struct ib_tx_write w;
	struct ib_tx tx;

	(void)state;
	ib_tx_init(&tx, 1024, 8, 10);
	ib_tx_queue(&tx, 500);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	ib_tx_next(&tx, target, &w);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_NO_TARGET); /* entry 1: nothing yet */
	target[1] = (struct ib_rs_sge){.addr = 0x2000, .key = 7, .length = IB_RS_IMM_MASK + 1};
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_BAD_TARGET);
	target[1] = (struct ib_rs_sge){.addr = UINT64_MAX - 100, .key = 7, .length = 200};
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_BAD_TARGET);
	target[1] = (struct ib_rs_sge){.addr = UINT64_MAX - 100, .key = 7, .length = 100};
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK); /* up to the last byte */
	target[1] = (struct ib_rs_sge){.addr = 0x2000, .key = 7, .length = IB_RS_IMM_MASK};
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
}

/* A peer of any depth up to rsocket's deepest queue: edges compared by how far they lie ahead of the
 * messages sent. At depth 0xFFFE the edge of the private data is as far ahead as any can be, so
 * nothing the peer sends moves it before we send: a signed 16-bit compare of the edges let each jump
 * of 32767 or less pass as "forward" while wrapping the edge round (edge + 2 for ever, each a credit
 * update no costless window counted), and called a legitimate jump of more than 32767 "back". */
static void test_tx_credit_deep_peer(void **state)
{
	struct ib_tx tx;
	unsigned moved = 0;

	(void)state;
	ib_tx_init(&tx, 1024, 8, IB_RS_QP_MAX);
	assert_int_equal(ib_tx_peer(&tx, IB_RS_QP_MAX, 65536, IB_RS_QP_MAX), 0);
	for (uint32_t jump = 1; jump < 65536; jump++)
		assert_int_equal(ib_tx_credit(&tx, (uint16_t)(IB_RS_QP_MAX + jump)), -EPROTO);
	assert_int_equal(ib_tx_credit(&tx, IB_RS_QP_MAX), 0); /* the same edge again */
	for (uint16_t e = IB_RS_QP_MAX, i = 0; i < 100; i++) {
		e = (uint16_t)(e + 2);
		assert_int_equal(ib_tx_credit(&tx, e), -EPROTO);
	}
	assert_int_equal(tx.edge, IB_RS_QP_MAX);
	/* each message we send lets the edge move once more at most, whatever the peer tries */
	for (unsigned s = 0; s < 300; s++) {
		tx.msgs_sent++;
		while (!ib_tx_credit(&tx, (uint16_t)(tx.edge + 1)))
			moved++;
		for (uint32_t jump = 1; jump < 65536; jump += 97)
			assert_int_equal(ib_tx_credit(&tx, (uint16_t)(tx.edge + jump)), -EPROTO);
	}
	assert_int_equal(moved, 300);
	/* 40000 messages sent, all consumed: the edge jumps 40000 (past 32767), to msgs_sent + depth */
	tx.msgs_sent = 40000;
	tx.edge = (uint16_t)(0 + IB_RS_QP_MAX);
	assert_int_equal(ib_tx_credit(&tx, (uint16_t)(33000 + IB_RS_QP_MAX)), 0); /* 33000 of them first */
	assert_int_equal(ib_tx_credit(&tx, (uint16_t)(40000 + IB_RS_QP_MAX)), 0);
	assert_int_equal(tx.edge, (uint16_t)(40000 + IB_RS_QP_MAX));
	assert_int_equal(ib_tx_credit(&tx, (uint16_t)(33000 + IB_RS_QP_MAX)), -EPROTO); /* back */
	/* depth 32768 (half the sequence space): a jump of 32768 is legitimate too */
	ib_tx_init(&tx, 1024, 8, 32768);
	assert_int_equal(ib_tx_peer(&tx, 32768, 65536, 32768), 0);
	tx.msgs_sent = 32768;
	assert_int_equal(ib_tx_credit(&tx, (uint16_t)(32768 + 32768)), 0);
	assert_int_equal(ib_tx_credit(&tx, (uint16_t)(32768 + 32768 + 1)), -EPROTO);
}

/* Buffer adverts: the first comes at once, each later one only once the peer consumed another half of
 * what we sent (its data_buf length); more than that is a message that cost it nothing. */
static void test_tx_adverts_earned(void **state)
{
	struct ib_rs_sge target[2] = {{.addr = 0x1000, .key = 7, .length = 65536}, {0}};
	enum ib_violation why;
	uint32_t ends[16];
	struct ib_rx rx;
	struct ib_tx tx;

	(void)state;
	ib_rx_init(&rx, 1024, 16, ends);
	/* an active open: adverts before the peer's private data reached the worker */
	ib_tx_init(&tx, 1 << 20, 8, 0);
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 16, 16, &why), IB_RS_MSG_CREDIT);
	assert_true(ib_tx_advert_earned(&tx));
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 16, 16, &why), IB_RS_MSG_CREDIT);
	assert_false(ib_tx_advert_earned(&tx));

	ib_tx_init(&tx, 1 << 20, 8, 16);
	assert_int_equal(ib_tx_peer(&tx, 16, 65536, 16), 0);
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 16, 0, &why), IB_RS_MSG_CREDIT);
	assert_int_equal(tx.adverts, 0); /* a bare edge is no advert */
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 16, 16, &why), IB_RS_MSG_CREDIT);
	assert_true(ib_tx_advert_earned(&tx)); /* the one of the start */
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 16, 16, &why), IB_RS_MSG_CREDIT);
	assert_false(ib_tx_advert_earned(&tx)); /* the same edge, nothing sent: a flood's */
	tx.posted = 65535;
	assert_false(ib_tx_advert_earned(&tx));
	tx.posted = 65536;
	tx.exhausted = 1; /* (as ib_tx_next counts them: the data_buf of its private data used up) */
	assert_true(ib_tx_advert_earned(&tx)); /* a half of ours consumed */
	assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 16, 16, &why), IB_RS_MSG_CREDIT);
	assert_false(ib_tx_advert_earned(&tx));
	tx.posted = 2 * 65536;
	tx.exhausted = 2;
	assert_true(ib_tx_advert_earned(&tx));
	/* a refused message counts nothing */
	VIOLATES(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 1000, 16, &why), IB_VIOL_CREDIT);
	assert_int_equal(tx.adverts, 3);
	/* adverts smaller than the half they should be earn no faster: the bytes we can post into them
	 * are what count (a flood of one-byte adverts gets two through, then the window) */
	ib_tx_init(&tx, 1 << 20, 8, 16);
	assert_int_equal(ib_tx_peer(&tx, 16, 65536, 16), 0);
	tx.posted = 65536; /* the data_buf of its private data used up */
	tx.exhausted = 1;
	for (unsigned n = 1; n <= 10; n++) {
		assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 16, 16, &why), IB_RS_MSG_CREDIT);
		assert_true(ib_tx_advert_earned(&tx) == (n <= 2));
		tx.posted += 1; /* one byte into it */
	}
	/* a peer whose private data claims a one-byte half earns no advert per byte we sent it: only
	 * per entry of its adverts our writes used up */
	ib_tx_init(&tx, 1 << 20, 8, 16);
	assert_int_equal(ib_tx_peer(&tx, 16, 1, 16), 0);
	tx.posted = 1u << 20;
	tx.exhausted = 3;
	for (unsigned n = 1; n <= 10; n++) {
		assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_SGL, 16, 16, &why), IB_RS_MSG_CREDIT);
		assert_true(ib_tx_advert_earned(&tx) == (n <= 4));
	}
}

/* What ib_tx_next counts as an entry used up: a write that reaches its end, not one short of it. */
static void test_tx_exhausted(void **state)
{
	struct ib_rs_sge target[2] = {{.addr = 0x1000, .key = 7, .length = 3000}, {.addr = 0x9000, .key = 7, .length = 1000}};
	struct ib_tx_write wr;
	struct ib_tx tx;

	(void)state;
	ib_tx_init(&tx, 1 << 20, 8, 16);
	assert_int_equal(ib_tx_peer(&tx, 16, 3000, 16), 0);
	ib_tx_queue(&tx, 2999);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	ib_tx_next(&tx, target, &wr);
	assert_int_equal(wr.len, 2999);
	assert_int_equal(tx.exhausted, 0);
	ib_tx_queue(&tx, 1500);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	ib_tx_next(&tx, target, &wr);
	assert_int_equal(wr.len, 1); /* to the entry's end */
	assert_int_equal(tx.exhausted, 1);
	assert_int_equal(ib_tx_blocked(&tx, target), IB_TX_OK);
	ib_tx_next(&tx, target, &wr);
	assert_int_equal(wr.len, 1000);
	assert_int_equal(tx.exhausted, 2);
}

/* rsocket's receive side (librdmacm/rsocket.c: rs_give_credits, rs_send_credits, rrecv), modelled
 * as far as credits and adverts go, against our send side: whatever the ring size and depth, every
 * credit edge and every advert it sends is accepted, and no advert is ever charged as costless. Its
 * credit messages reach us late (at most 4 in flight, in order), the consumer takes random amounts. */
struct stock_rx {
	uint32_t rbuf_size;
	uint16_t rq_size, rseq_no, rseq_comp;
	int64_t bytes_avail; /* rbuf_bytes_avail */
	uint32_t free_offset;
	unsigned remote_sge;
	uint32_t *rmsg; /* data messages' unconsumed bytes, a ring of rq_size + 1 */
	uint32_t rmsg_head, rmsg_tail;
	uint64_t pending;
	struct {
		uint32_t val;
		bool advert;
		struct ib_rs_sge sge;
	} ctrl[4];
	unsigned ctrl_head, ctrl_n;
};

static void stock_update_credits(struct stock_rx *r, uint64_t base)
{
	uint32_t half = r->rbuf_size >> 1;

	while (r->ctrl_n < 4 &&
	       (r->bytes_avail >= half || (short)((short)r->rseq_no - (short)r->rseq_comp) >= 0)) {
		unsigned i = (r->ctrl_head + r->ctrl_n++) % 4;

		r->rseq_comp = (uint16_t)(r->rseq_no + (r->rq_size >> 1));
		r->ctrl[i].val = (uint32_t)r->rseq_no + r->rq_size; /* an int: up to 17 bits */
		r->ctrl[i].advert = r->bytes_avail >= half;
		if (r->ctrl[i].advert) {
			r->ctrl[i].sge =
			    (struct ib_rs_sge){.addr = base + r->free_offset, .key = 5, .length = half};
			r->bytes_avail -= half;
			r->free_offset += half;
			if (r->free_offset >= r->rbuf_size)
				r->free_offset = 0;
		}
	}
}

/* Messages of 1..MAX_MSG bytes; its application reads in one round of SLOW (1: every round).
 * Returns the largest jump of the credit edge seen. */
static uint16_t stock_run(uint32_t rbuf_size, uint16_t depth, uint32_t max_msg, unsigned slow, unsigned steps)
{
	enum { BASE = 0x10000 };
	uint32_t half = rbuf_size >> 1, seed = rbuf_size ^ depth;
	struct ib_rs_sge target[2] = {{.addr = BASE, .key = 5, .length = half}, {0}};
	struct stock_rx r = {.rbuf_size = rbuf_size,
	                     .rq_size = depth,
	                     .rseq_comp = (uint16_t)(depth >> 1),
	                     .bytes_avail = half,
	                     .free_offset = half,
	                     .remote_sge = 1};
	uint32_t ends[16];
	struct ib_rx rx; /* (ours: not used by the SGL messages) */
	struct ib_tx tx;
	uint64_t landed = 0, adverts = 0;
	uint16_t max_jump = 0, last_edge = depth;

	r.rmsg = calloc((size_t)depth + 1, sizeof(*r.rmsg));
	assert_non_null(r.rmsg);
	ib_rx_init(&rx, 1024, 16, ends);
	ib_tx_init(&tx, 1 << 20, 1 << 20, depth); /* the private data's credits */
	assert_int_equal(ib_tx_peer(&tx, depth, half, depth), 0);
	stock_update_credits(&r, BASE); /* the advert of the second half, at once */
	for (unsigned step = 0; step < steps; step++) {
		uint32_t x;

		seed = seed * 1103515245 + 12345;
		x = seed >> 8;
		if (x % 3 == 0) { /* we write, a burst of messages; each lands in order */
			for (unsigned k = x % 64 + 1; k; k--) {
				struct ib_tx_write w;

				seed = seed * 1103515245 + 12345;
				ib_tx_queue(&tx, (seed >> 8) % max_msg + 1);
				while (ib_tx_blocked(&tx, target) == IB_TX_OK) {
					ib_tx_next(&tx, target, &w);
					assert_int_equal(w.raddr, BASE + landed % (2ull * half));
					landed += w.len;
					r.rmsg[r.rmsg_tail] = w.len;
					if (++r.rmsg_tail == (uint32_t)depth + 1)
						r.rmsg_tail = 0;
					r.pending += w.len;
					ib_tx_done(&tx, w.len);
				}
			}
		} else if (x % 3 == 1) { /* its application reads (rrecv) */
			if ((x >> 8) % slow)
				continue;
			uint64_t left = r.pending ? (x % 4 ? (x >> 2) % r.pending + 1 : r.pending) : 0;

			r.pending -= left;
			r.bytes_avail += (int64_t)left;
			while (left) {
				uint32_t *m = &r.rmsg[r.rmsg_head];
				if (left < *m) {
					*m -= (uint32_t)left;
					break;
				}
				left -= *m;
				r.rseq_no++;
				if (++r.rmsg_head == (uint32_t)depth + 1)
					r.rmsg_head = 0;
			}
			stock_update_credits(&r, BASE);
		} else { /* its credit messages reach us, in order */
			for (unsigned k = x % 5; k && r.ctrl_n;
			     k--, r.ctrl_n--, r.ctrl_head = (r.ctrl_head + 1) % 4) {
				enum ib_violation why;
				unsigned i = r.ctrl_head;
				uint16_t jump;

				if (r.ctrl[i].advert) {
					/* an entry we are done with, written before its completion comes */
					assert_int_equal(target[r.remote_sge].length, 0);
					target[r.remote_sge] = r.ctrl[i].sge;
					r.remote_sge ^= 1;
				}
				assert_int_equal(recv(&rx, &tx, target, true, IB_RS_OP_SGL, r.ctrl[i].val,
				                      r.ctrl[i].advert ? 16 : 0, &why),
				                 IB_RS_MSG_CREDIT);
				assert_true(ib_tx_advert_earned(&tx));
				jump = (uint16_t)(tx.edge - last_edge);
				last_edge = tx.edge;
				if (jump > max_jump)
					max_jump = jump;
				adverts += r.ctrl[i].advert;
			}
		}
	}
	free(r.rmsg);
	assert_int_equal(tx.adverts, adverts);
	assert_true(adverts > 2);
	return max_jump;
}

static void test_stock_receiver(void **state)
{
	static const uint32_t sizes[] = {2, 4096, 131072, 1u << 22};
	static const uint16_t depths[] = {16, 384, 32768, 40000, IB_RS_QP_MAX};

	(void)state;
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (unsigned j = 0; j < sizeof(depths) / sizeof(depths[0]); j++)
			stock_run(sizes[i], depths[j], sizes[i] < 700 ? sizes[i] : 700, 1, 50000);
	/* tiny messages into a large ring: the consumed-message threshold (depth / 2) gives the
	 * credits, jumps of more than 32767 at the deepest queues (what a signed compare of the edges
	 * refused) */
	assert_true(stock_run(1u << 22, 40000, 16, 2000, 200000) > 32768);
	assert_true(stock_run(1u << 22, IB_RS_QP_MAX, 8, 2000, 200000) > 32768);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_params_stock_client),
	    cmocka_unit_test(test_params_rejects),
	    cmocka_unit_test(test_imm),
	    cmocka_unit_test(test_seq_wrap),
	    cmocka_unit_test(test_sge_encode),
	    cmocka_unit_test(test_rx_adverts_alternate),
	    cmocka_unit_test(test_rx_checks_the_peer),
	    cmocka_unit_test(test_rx_bare_edges),
	    cmocka_unit_test(test_rx_wrap),
	    cmocka_unit_test(test_tx_entries_and_ring),
	    cmocka_unit_test(test_tx_entry_rewritten_after_check),
	    cmocka_unit_test(test_tx_limits),
	    cmocka_unit_test(test_end_to_end_random),
	    cmocka_unit_test(test_recv_checks_the_peer),
	    cmocka_unit_test(test_tx_peer_depth),
	    cmocka_unit_test(test_tx_bad_target),
	    cmocka_unit_test(test_tx_credit_deep_peer),
	    cmocka_unit_test(test_tx_adverts_earned),
	    cmocka_unit_test(test_tx_exhausted),
	    cmocka_unit_test(test_stock_receiver),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
