/* The TCP send queue of references (eth_side/sndq.c) on the engine bench of tests/fuzz/
 * fuzz_eth_harness.h, a port that takes lent memory (ETH_OFFLOAD_EXTMEM, as af_packet): bytes lent
 * with write_lent leave in frames whose payload mbufs point at the lender's memory (nothing copied),
 * are reported through on_sent only once the peer acknowledged them, from the dispatch (never from
 * inside an op), and keep their memory referenced until the ACK came AND no frame points at it any
 * more: a retransmission sent before the ACK and still queued (here: kept by the bench) holds its
 * own reference after the queue put its. Copies (write(), and segments without a hold) keep their
 * old path and are never reported when written with write(); an abort puts every reference and
 * reports nothing more; the queue's bound is the send buffer, as with copies. Every test ends with
 * every reference put and every mbuf back in the pool (eh_stop). On a port that sends from DPDK's
 * memory only (ETH_OFFLOAD_DEVMEM, virtio_user), only lent bytes marked XLT_SEG_DEVMEM leave by
 * reference; other lent bytes are copied into each frame.
 *
 * A lending connection (eth_tcp_params.copy_size, a route between IB and TCP: here the listener on
 * LEND_PORT) takes no chunk of the worker's pool for its send queue, whatever it sends: its entries
 * are inline (ETH_SNDQ_INLINE of them, a full ring takes nothing until an ACK), its copies go into
 * mbufs of the stack's pool, which go back once acknowledged and no frame holds them; a pool down
 * to a quarter makes a copy take nothing (the direction blocked) rather than fall back to chunks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "eth_side/engine.h"
#include "eth_side/rcvq.h"
#include "tests/fuzz/fuzz_eth_harness.h"

#define PEER_ISN  0x10000000u
#define SBUF      16384u
#define LEND_PORT 17    /* listen_lending's */
#define COPY_SIZE 8192u /* a lending route's copy area (conf.h: CONF_LENT_TCP_COPY) */

static struct eh h;

/* The lender: counts references taken and put on it. */
struct lender {
	unsigned gets, puts;
};

static void l_get(void *hold)
{
	((struct lender *)hold)->gets++;
}

static void l_put(void *hold)
{
	((struct lender *)hold)->puts++;
}

static const struct xlt_hold_ops l_hops = {l_get, l_put};

static struct lender L;
static uint8_t mem[65536]; /* the lender's memory */
static size_t reported;    /* on_sent's sum */
static unsigned n_reports, in_op;
static struct eh_session *se;

static void on_sent(void *arg, size_t n)
{
	(void)arg;
	assert_int_equal(in_op, 0); /* from the dispatch, never from inside an op */
	reported += n;
	n_reports++;
}

struct conn {
	uint16_t pport, lport;
	uint32_t pnxt, gnxt;
};

static void feed(struct conn *c, uint8_t flags, uint32_t ack, uint16_t wnd)
{
	uint8_t frame[200];

	eh_feed(&h, frame,
	        eh_tcp_frame(frame, c->pport, c->lport, c->pnxt, ack, flags, wnd, NULL, 0, NULL, 0));
	eh_poll(&h);
}

/* A connection to the bench's listener on LPORT (MSS 1460, no other option); its stream gets our
 * on_sent. */
static struct conn open_conn_to(uint16_t pport, uint16_t lport)
{
	static const uint8_t mss_opt[] = {2, 4, 0x05, 0xb4};
	uint8_t frame[200];
	struct conn c = {.pport = pport, .lport = lport, .pnxt = PEER_ISN};
	const struct rte_tcp_hdr *th;

	eh_forget(&h);
	eh_feed(&h, frame,
	        eh_tcp_frame(frame, pport, lport, c.pnxt, 0, RTE_TCP_SYN_FLAG, 65535, mss_opt,
	                     sizeof(mss_opt), NULL, 0));
	eh_poll(&h);
	assert_int_equal(h.n_kept, 1);
	th = rte_pktmbuf_mtod_offset(h.kept[0], const struct rte_tcp_hdr *, RTE_ETHER_HDR_LEN + 20);
	c.pnxt++;
	c.gnxt = rte_be_to_cpu_32(th->sent_seq) + 1;
	eh_forget(&h);
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt, 65535);
	se = NULL;
	for (unsigned i = 0; i < EH_SESSIONS; i++)
		if (h.sess[i].s && h.sess[i].s->peer_port == pport)
			se = &h.sess[i];
	assert_non_null(se);
	se->s->ev.on_sent = on_sent;
	return c;
}

/* A connection to the bench's echo listener. */
static struct conn open_conn(uint16_t pport)
{
	return open_conn_to(pport, EH_ECHO_PORT);
}

/* An echo listener on LEND_PORT whose connections lend, with a copy area of COPY bytes (as a route
 * between IB and TCP gets: eth_tcp_params.copy_size), and a connection to it. */
static struct conn open_lending(uint16_t pport, uint32_t copy)
{
	struct eth_tcp_params p = {
	    .rbuf_size = 16384, .sbuf_size = SBUF, .copy_size = copy, .connect_timeout_ms = 5000};

	assert_int_equal(eth_tcp_listen(h.st, LEND_PORT, &p, &eh_echo_tok), 0);
	h.listener_refs++; /* (put when the bench destroys the instance) */
	return open_conn_to(pport, LEND_PORT);
}

static size_t lend_f(const uint8_t *data, size_t len, bool held, uint32_t flags)
{
	struct xlt_seg g = {.data = data,
	                    .len = (uint32_t)len,
	                    .flags = flags,
	                    .hold = held ? &L : NULL,
	                    .hops = held ? &l_hops : NULL};
	size_t n;

	in_op = 1;
	n = se->s->ops->write_lent(se->s, &g, 1);
	in_op = 0;
	return n;
}

static size_t lend(const uint8_t *data, size_t len, bool held)
{
	return lend_f(data, len, held, 0);
}

/* write(), inside an op as a session calls it. */
static size_t write_op(const uint8_t *data, size_t len)
{
	size_t n;

	in_op = 1;
	n = se->s->ops->write(se->s, data, len);
	in_op = 0;
	return n;
}

/* The payload of kept frame I (sequence number in *SEQ), copied into OUT; returns its length. */
static uint32_t payload(unsigned i, uint32_t *seq, uint8_t *out)
{
	const struct rte_ipv4_hdr *ip =
	    rte_pktmbuf_mtod_offset(h.kept[i], const struct rte_ipv4_hdr *, RTE_ETHER_HDR_LEN);
	const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)(ip + 1);
	uint32_t doff = (th->data_off >> 4) * 4u, len = rte_be_to_cpu_16(ip->total_length) - 20 - doff;

	*seq = rte_be_to_cpu_32(th->sent_seq);
	eh_frame_read(h.kept[i], RTE_ETHER_HDR_LEN + 20 + doff, out, len);
	return len;
}

/* Kept frames whose payload lies in mem (an mbuf attached to it), and whether every kept data frame
 * is such: nothing copied. */
static unsigned frames_in_mem(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < h.n_kept; i++)
		for (const struct rte_mbuf *s = h.kept[i]->next; s; s = s->next)
			if (RTE_MBUF_HAS_EXTBUF(s) && (const uint8_t *)s->buf_addr >= mem &&
			    (const uint8_t *)s->buf_addr < mem + sizeof(mem)) {
				n++;
				break;
			}
	return n;
}

static int setup_ofl(unsigned offloads)
{
	for (unsigned i = 0; i < sizeof(mem); i++)
		mem[i] = (uint8_t)(i * 7 + i / 251);
	L = (struct lender){0};
	reported = 0;
	n_reports = 0;
	return eh_start_ofl(&h, 8, 16384, SBUF, offloads);
}

static int setup(void **state)
{
	(void)state;
	return setup_ofl(ETH_OFFLOAD_EXTMEM);
}

/* A port that sends from DPDK's memory only (virtio_user). */
static int setup_devmem(void **state)
{
	(void)state;
	return setup_ofl(ETH_OFFLOAD_DEVMEM);
}

/* mbufs a test took from the pool to drain it (given back here too, should the test fail first) */
static struct rte_mbuf *drained[EH_MBUFS];
static unsigned n_drained;

static void undrain(void)
{
	if (n_drained)
		rte_pktmbuf_free_bulk(drained, n_drained);
	n_drained = 0;
}

static int teardown(void **state)
{
	(void)state;
	undrain();
	eh_stop(&h); /* every mbuf back: every frame's reference put */
	assert_int_equal(L.gets, L.puts);
	return 0;
}

/* Lent bytes leave by reference, intact; reported once acknowledged; references balance. */
static void test_lent_by_reference(void **state)
{
	struct conn c = open_conn(42001);
	uint8_t got[2000];
	uint32_t seq, n;

	(void)state;
	eh_forget(&h);
	assert_int_equal(lend(mem, 4000, true), 4000);
	assert_int_equal(L.gets, 1); /* the queue's one reference */
	eh_poll(&h);
	assert_int_equal(h.n_kept, 3); /* 1460 + 1460 + 1080 */
	assert_int_equal(frames_in_mem(), 3);
	assert_int_equal(eth_stack_stats(h.st)->copied_out, 0);
	for (unsigned i = 0, off = 0; i < 3; i++) {
		n = payload(i, &seq, got);
		assert_int_equal(seq, c.gnxt + off);
		assert_memory_equal(got, mem + off, n);
		off += n;
	}
	assert_int_equal(L.gets - L.puts, 1 + 3); /* the queue's and each frame's */
	assert_int_equal(eth_stack_stats(h.st)->tx_lent_mbufs, 3); /* one attached mbuf a frame */
	assert_int_equal(reported, 0);
	/* the peer acknowledges 2920: reported from the dispatch, the frames still hold theirs */
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + 2920, 65535);
	assert_int_equal(reported, 2920);
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + 4000, 65535);
	assert_int_equal(reported, 4000);
	assert_int_equal(L.gets - L.puts, 3); /* the queue put its; 3 frames are still queued */
	assert_int_equal(eth_stack_stats(h.st)->tx_lent_mbufs, 3);
	eh_forget(&h);                        /* the device is done with them */
	assert_int_equal(L.gets, L.puts);
	assert_int_equal(eth_stack_stats(h.st)->tx_lent_mbufs, 0); /* the free callbacks took it down */
}

/* A retransmission reads the same memory; one still queued when the ACK arrives keeps its memory
 * referenced after the queue gave its own up (and the lender its space). */
static void test_retransmit_after_ack(void **state)
{
	struct conn c = open_conn(42002);
	uint8_t got[2000];
	uint32_t seq, n;

	(void)state;
	eh_forget(&h);
	assert_int_equal(lend(mem + 100, 2920, true), 2920);
	eh_poll(&h);
	assert_int_equal(h.n_kept, 2);
	eh_forget(&h); /* "lost" on the wire */
	assert_int_equal(L.gets - L.puts, 1);
	eh_advance_ms(&h, 1100); /* RTO: the first segment again, from the same memory */
	assert_int_equal(h.n_kept, 1);
	assert_int_equal(frames_in_mem(), 1);
	n = payload(0, &seq, got);
	assert_int_equal(seq, c.gnxt);
	assert_int_equal(n, 1460);
	assert_memory_equal(got, mem + 100, n);
	assert_true(eth_stack_stats(h.st)->tcp_retransmits >= 1);
	/* the original arrived after all: everything acknowledged while the copy is still queued */
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + 2920, 65535);
	assert_int_equal(reported, 2920);
	assert_true(L.gets - L.puts >= 1); /* the queued retransmission's reference */
	assert_int_equal(eth_stack_stats(h.st)->copied_out, 0);
	eh_forget(&h);
	assert_int_equal(L.gets, L.puts);
}

/* write()'s bytes (a preamble) are copies and never reported; a segment without a hold is copied
 * and reported; order is kept. */
static void test_mixed_copies(void **state)
{
	struct conn c = open_conn(42003);
	static const uint8_t pre[] = "PROXY preamble\r\n";
	uint8_t got[1500], all[1500];
	uint32_t seq, n, off = 0;

	(void)state;
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, pre, sizeof(pre) - 1), sizeof(pre) - 1);
	assert_int_equal(lend(mem, 300, true), 300);
	assert_int_equal(lend(mem + 300, 200, false), 200); /* valid only during the call: copied */
	assert_int_equal(lend(mem + 500, 100, true), 100);
	eh_poll(&h);
	assert_int_equal(h.n_kept, 1);
	n = payload(0, &seq, got);
	assert_int_equal(n, sizeof(pre) - 1 + 600);
	memcpy(all, pre, sizeof(pre) - 1);
	memcpy(all + sizeof(pre) - 1, mem, 600);
	assert_memory_equal(got, all, n);
	off = sizeof(pre) - 1;
	/* copied: the preamble and the 200 without a hold, once into the queue, once into the frame */
	assert_int_equal(eth_stack_stats(h.st)->copied_out, 2 * (off + 200));
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + n, 65535);
	assert_int_equal(reported, 600); /* not the preamble */
	eh_forget(&h);
}

/* Acknowledges everything in the kept frames (they are forgotten), window open. */
static void ack_kept(struct conn *c)
{
	uint8_t got[2000];
	uint32_t end = c->gnxt;

	for (unsigned i = 0; i < h.n_kept; i++) {
		uint32_t seq, n = payload(i, &seq, got);

		if ((int32_t)(seq + n - end) > 0)
			end = seq + n;
	}
	eh_forget(&h);
	feed(c, RTE_TCP_ACK_FLAG, end, 65535);
}

/* The bound is the send buffer, lent or copied: a full queue takes nothing; the ACK's report and
 * room come back. */
static void test_bound(void **state)
{
	struct conn c = open_conn(42004);

	(void)state;
	eh_forget(&h);
	assert_int_equal(lend(mem, 20000, true), SBUF);
	assert_int_equal(lend(mem + SBUF, 100, true), 0);
	eh_poll(&h);
	/* the peer reads one segment and closes its window: room for 1460 more, no more */
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + 1460, 0);
	assert_int_equal(reported, 1460);
	assert_int_equal(lend(mem + SBUF, 2000, true), 1460);
	for (unsigned i = 0; i < 20 && reported < SBUF + 1460; i++) {
		ack_kept(&c);
		eh_advance_ms(&h, 300); /* the persist timer or the next round sends the rest */
	}
	assert_int_equal(reported, SBUF + 1460);
	eh_forget(&h);
}

/* A connection that lends (a route between IB and TCP: eth_tcp_params.copy_size) copies within its
 * copy cap, while references still fill the whole send buffer; acknowledged copies give the room
 * back. Its copies are in mbufs, none in chunks. */
static void test_copy_cap(void **state)
{
	struct conn c = open_lending(42008, 1000);
	struct eth_tcb *t = eth_tcb_of(se->s);

	(void)state;
	eh_forget(&h);
	assert_int_equal(write_op(mem, 600), 600);
	assert_int_equal(lend(mem + 600, 300, true), 300);
	assert_int_equal(lend(mem + 900, 600, false), 400); /* copied: up to the cap */
	assert_int_equal(write_op(mem, 10), 0);
	assert_int_equal(lend(mem + 1300, 100, false), 0);
	assert_int_equal(t->sndq.copied, 1000);
	assert_int_equal(t->sbuf.len, 0);
	assert_int_equal(lend(mem + 1300, SBUF, true), SBUF - 1300); /* references: the rest of sbuf */
	assert_int_equal(lend(mem, 1, true), 0);
	for (unsigned i = 0; i < 20 && reported < SBUF - 600; i++) {
		eh_poll(&h);
		ack_kept(&c);
		eh_advance_ms(&h, 300);
	}
	assert_int_equal(reported, SBUF - 600); /* all but write()'s 600 */
	assert_int_equal(t->sndq.copied, 0);
	assert_int_equal(lend(mem, 2000, false), 1000);
	eh_poll(&h);
	ack_kept(&c);
	eh_forget(&h);
	assert_int_equal(h.st->chunks.n_carved, 0);
}

/* An abort with references in flight: the queue puts its, reports nothing more; queued frames hold
 * theirs until freed. */
static void test_abort_in_flight(void **state)
{
	struct conn c = open_conn(42005);

	(void)state;
	eh_forget(&h);
	assert_int_equal(lend(mem, 5000, true), 5000);
	eh_poll(&h);
	assert_true(h.n_kept >= 3);
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + 1460, 65535);
	assert_int_equal(reported, 1460);
	in_op = 1;
	se->s->ops->abort(se->s);
	in_op = 0;
	eh_poll(&h); /* on_closed: the bench releases the stream */
	assert_int_equal(reported, 1460);
	assert_true(L.gets - L.puts >= 1); /* frames still queued */
	eh_forget(&h);
	assert_int_equal(L.gets, L.puts);
}

/* The peer resets while lent bytes are in flight: the same, from the input side. */
static void test_peer_reset_in_flight(void **state)
{
	struct conn c = open_conn(42006);

	(void)state;
	eh_forget(&h);
	assert_int_equal(lend(mem, 3000, true), 3000);
	eh_poll(&h);
	feed(&c, RTE_TCP_RST_FLAG | RTE_TCP_ACK_FLAG, c.gnxt, 0);
	assert_int_equal(reported, 0);
	assert_null(se->s); /* closed and released */
	eh_forget(&h);
	assert_int_equal(L.gets, L.puts);
}

/* Checks every kept frame's payload against WANT (the queue's bytes from c->gnxt on) and forgets
 * them; returns the highest sequence offset they reached (at least HI). */
static uint32_t check_kept(const struct conn *c, const uint8_t *want, size_t total, uint32_t hi)
{
	uint8_t got[2000];

	for (unsigned i = 0; i < h.n_kept; i++) {
		uint32_t seq, n = payload(i, &seq, got), off = seq - c->gnxt;

		if (!n)
			continue;
		assert_true(off + n <= total);
		assert_memory_equal(got, want + off, n);
		if (off + n > hi)
			hi = off + n;
	}
	eh_forget(&h);
	return hi;
}

/* Whether the queue's cursor (where the last frame ended) is in use, and then that it names the
 * right place: its entry's start, in bytes and in sbuf's bytes, counted from the queue's head. */
static bool cursor_checked(const struct eth_tcb *t)
{
	const struct eth_sndq *q = &t->sndq;
	const struct eth_sndq_ent *e = (const struct eth_sndq_ent *)(const void *)q->ring->data;
	uint64_t pos = 0, soff = 0;

	if (q->at_ent <= q->popped || q->at_ent - q->popped >= q->n)
		return false;
	for (unsigned i = 0; i < q->at_ent - q->popped; i++) {
		const struct eth_sndq_ent *x = &e[(q->head + i) % ETH_SNDQ_ENTS];
		pos += x->len;
		if (!x->data)
			soff += x->len;
	}
	assert_int_equal(q->at_pos - q->acked, pos);
	assert_int_equal(q->at_soff - q->sbuf_acked, soff);
	return true;
}

/* A queue of many entries (stretches of different memory, copies among them): each frame starts
 * where the last one ended rather than walking the queue from its head (sndq.c's cursor), while
 * acknowledgements cut entries in two and pop them and a retransmission goes back to the oldest
 * bytes; every frame carries the right bytes, and everything is reported once. */
static void test_many_entries(void **state)
{
	static uint8_t want[SBUF];
	struct conn c = open_conn(42009);
	struct eth_tcb *t = eth_tcb_of(se->s);
	uint32_t n = 0, hi = 0, acked = 0;
	unsigned cursor_used = 0, round;

	(void)state;
	eh_forget(&h);
	for (unsigned i = 0; i < 100; i++) {
		const uint8_t *src = mem + i * 300; /* (gaps: no entry merges into the one before) */

		assert_int_equal(lend(src, 150, i % 7 != 3), 150); /* every 7th: copied */
		memcpy(want + n, src, 150);
		n += 150;
	}
	assert_true(t->sndq.n >= 90);
	for (round = 0; round < 200 && acked < n; round++) {
		eh_poll(&h);
		hi = check_kept(&c, want, n, hi);
		if (t->sndq.ring && cursor_checked(t))
			cursor_used++;
		if (round == 3) {
			/* frames lost: the retransmission timer sends the oldest bytes again */
			uint64_t rtx = eth_stack_stats(h.st)->tcp_retransmits;
			eh_advance_ms(&h, 1100);
			assert_true(eth_stack_stats(h.st)->tcp_retransmits > rtx);
			hi = check_kept(&c, want, n, hi);
		}
		/* the peer acknowledges 1100 bytes a round: entries cut in two, popped */
		acked = hi < acked + 1100 ? hi : acked + 1100;
		feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + acked, 65535);
		hi = check_kept(&c, want, n, hi);
		if (t->sndq.ring && cursor_checked(t))
			cursor_used++;
		eh_advance_ms(&h, 50);
	}
	assert_true(round > 5);
	assert_true(cursor_used >= round / 2);
	assert_int_equal(acked, n);
	assert_int_equal(reported, n);
	eh_forget(&h);
}

/* On a port that sends from DPDK's memory only (ETH_OFFLOAD_DEVMEM, as virtio_user): bytes lent as
 * XLT_SEG_DEVMEM (an IB buffer set in DPDK's heap) leave by reference, a retransmission too; lent
 * bytes without it (a set in pages of its own) are copied into each frame, even right after the
 * others under the same hold (never merged into their entry); all in order, intact, reported once
 * acknowledged, references balanced. */
static void test_devmem_port(void **state)
{
	struct conn c = open_conn(42007);
	uint8_t got[2000];
	uint32_t seq, n;

	(void)state;
	eh_forget(&h);
	assert_int_equal(lend_f(mem, 2920, true, XLT_SEG_DEVMEM), 2920);
	assert_int_equal(lend_f(mem + 2920, 1460, true, 0), 1460);
	assert_int_equal(L.gets, 2); /* two entries: the second was not merged into the first */
	eh_poll(&h);
	assert_int_equal(h.n_kept, 3);
	assert_int_equal(frames_in_mem(), 2);
	assert_int_equal(eth_stack_stats(h.st)->copied_out, 1460);
	for (unsigned i = 0, off = 0; i < 3; i++) {
		n = payload(i, &seq, got);
		assert_int_equal(seq, c.gnxt + off);
		assert_int_equal(n, 1460);
		assert_memory_equal(got, mem + off, n);
		off += n;
	}
	eh_forget(&h);           /* all three "lost" */
	eh_advance_ms(&h, 1100); /* RTO: the first again, by reference */
	assert_int_equal(h.n_kept, 1);
	assert_int_equal(frames_in_mem(), 1);
	n = payload(0, &seq, got);
	assert_int_equal(seq, c.gnxt);
	assert_memory_equal(got, mem, n);
	assert_int_equal(eth_stack_stats(h.st)->copied_out, 1460);
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + 4380, 65535);
	assert_int_equal(reported, 4380);
	eh_forget(&h);
	assert_int_equal(L.gets, L.puts);
}

/* ---- lending mode ---- */

static const uint8_t proxy_hdr[] = "PROXY TCP4 198.18.0.2 198.18.0.1 42010 17\r\n";
#define NP ((uint32_t)sizeof(proxy_hdr) - 1u)

/* The worker's chunk pool never gave a chunk out (a fresh instance per test, no data received). */
static void no_chunks(void)
{
	assert_int_equal(h.st->chunks.n_used, 0);
	assert_int_equal(h.st->chunks.n_carved, 0);
}

/* Checks that the kept data frames carry WANT's bytes from offset OFF on, back to back in sequence,
 * and forgets them; returns the offset after the last byte. */
static uint32_t check_in_order(const struct conn *c, const uint8_t *want, uint32_t off)
{
	uint8_t got[2000];

	for (unsigned i = 0; i < h.n_kept; i++) {
		uint32_t seq, n = payload(i, &seq, got);

		if (!n)
			continue;
		assert_int_equal(seq, c->gnxt + off);
		assert_memory_equal(got, want + off, n);
		off += n;
	}
	eh_forget(&h);
	return off;
}

/* A plain port (no offload): frames carry copies of the queue's bytes. */
static int setup_plain(void **state)
{
	(void)state;
	return setup_ofl(0);
}

/* A lending connection sends a PROXY header written with write(), then lent bytes, a copy of a
 * segment without a hold and more lent bytes: the worker's chunk pool gives nothing, through the
 * frames, a retransmission and the ACK; the frames carry every byte in order; the copies leave by
 * reference to their mbufs (copied once: into the queue). */
static void test_lending_no_chunks(void **state)
{
	static uint8_t want[NP + 4200];
	struct conn c = open_lending(42010, COPY_SIZE);
	struct eth_tcb *t = eth_tcb_of(se->s);

	(void)state;
	eh_forget(&h);
	assert_int_equal(write_op(proxy_hdr, NP), NP);
	assert_int_equal(lend(mem, 3000, true), 3000);
	assert_int_equal(lend(mem + 3000, 200, false), 200);
	assert_int_equal(lend(mem + 3200, 1000, true), 1000);
	memcpy(want, proxy_hdr, NP);
	memcpy(want + NP, mem, 4200);
	no_chunks();
	eh_poll(&h);
	assert_int_equal(check_in_order(&c, want, 0), NP + 4200);
	no_chunks();
	assert_int_equal(eth_stack_stats(h.st)->copied_out, NP + 200);
	eh_advance_ms(&h, 1100); /* all "lost": the RTO sends the first segment again */
	assert_int_equal(h.n_kept, 1);
	assert_int_equal(check_in_order(&c, want, 0), 1460);
	no_chunks();
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + NP + 4200, 65535);
	assert_int_equal(reported, 4200); /* not the header */
	assert_int_equal(t->sndq.n, 0);
	assert_int_equal(t->sndq.copied, 0);
	assert_int_equal(t->sndq.lent, 0);
	assert_int_equal(eth_stack_stats(h.st)->copied_out, NP + 200);
	no_chunks();
	eh_forget(&h);
	assert_int_equal(L.gets, L.puts);
}

/* A lending connection's copies fill one mbuf while it has room (write()'s bytes and a copy that
 * write_lent reports are entries of their own in it), which goes back to the pool once the ACK came
 * and the last frame pointing at it was freed; copies longer than an mbuf take several. */
static void test_lending_copy_mbuf(void **state)
{
	struct conn c = open_lending(42011, COPY_SIZE);
	struct eth_tcb *t = eth_tcb_of(se->s);
	uint32_t off = 0;
	unsigned avail;

	(void)state;
	eh_forget(&h);
	avail = rte_mempool_avail_count(eh_pool);
	assert_int_equal(write_op(mem, 100), 100);
	assert_int_equal(lend(mem + 100, 200, false), 200);
	assert_int_equal(write_op(mem + 300, 50), 50);
	assert_int_equal(rte_mempool_avail_count(eh_pool), avail - 1); /* one mbuf holds them */
	assert_int_equal(t->sndq.n, 3);
	assert_int_equal(t->sndq.copied, 350);
	eh_poll(&h);
	assert_int_equal(h.n_kept, 1);
	assert_int_equal(check_in_order(&c, mem, 0), 350);
	eh_advance_ms(&h, 1100); /* a retransmission: a frame pointing at the mbuf, kept */
	assert_int_equal(h.n_kept, 1);
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + 350, 65535);
	assert_int_equal(reported, 200);
	assert_int_equal(t->sndq.n, 0);
	assert_true(rte_mempool_avail_count(eh_pool) < avail); /* the kept frame still holds it */
	eh_forget(&h);
	assert_int_equal(rte_mempool_avail_count(eh_pool), avail);

	c.gnxt += 350;
	assert_int_equal(write_op(mem, 5000), 5000);
	assert_true(avail - rte_mempool_avail_count(eh_pool) >= 3);
	for (unsigned i = 0; i < 20 && off < 5000; i++) {
		/* (a segment a round trip: the timeout cut the congestion window) */
		eh_poll(&h);
		off = check_in_order(&c, mem, off);
		feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + off, 65535);
	}
	assert_int_equal(off, 5000);
	assert_int_equal(t->sndq.n, 0);
	eh_forget(&h);
	assert_int_equal(rte_mempool_avail_count(eh_pool), avail);
	no_chunks();
}

/* Takes mbufs of the pool until fewer than LEFT are free (undrain gives them back). */
static void drain_to(unsigned left)
{
	while (rte_mempool_avail_count(eh_pool) >= left) {
		drained[n_drained] = rte_pktmbuf_alloc(eh_pool);
		assert_non_null(drained[n_drained]);
		n_drained++;
	}
	eh_advance_ms(&h, 1); /* (the pool's level is read once a millisecond) */
}

/* Down to a quarter of the mempool (frames are no longer kept), a lending connection's copies still
 * take mbufs; down to a sixteenth a copy takes nothing and marks the direction blocked (never chunks
 * instead); lent bytes still go in; once mbufs are back, the copy is taken. */
static void test_lending_pool_low(void **state)
{
	static uint8_t want[1000 + 2 * NP];
	size_t n_want = 0;
	struct conn c = open_lending(42012, COPY_SIZE);
	struct eth_tcb *t = eth_tcb_of(se->s);

	(void)state;
	eh_forget(&h);
	drain_to(EH_MBUFS / 4);
	assert_true(eth_pool_low(h.st));
	assert_int_equal(write_op(proxy_hdr, NP), NP);
	assert_int_equal(t->sndq.copied, NP);
	drain_to(EH_MBUFS / 16);
	assert_int_equal(lend(mem, 1000, true), 1000); /* no mbuf of the queue's */
	t->want_writable = false; /* (a copy now needs an mbuf of its own: the last entry is lent) */
	assert_int_equal(write_op(proxy_hdr, NP), 0);
	assert_true(t->want_writable);
	t->want_writable = false;
	assert_int_equal(lend(mem, 100, false), 0);
	assert_true(t->want_writable);
	assert_int_equal(t->sndq.copied, NP);
	assert_int_equal(t->sbuf.len, 0);
	no_chunks();
	undrain();
	eh_advance_ms(&h, 1); /* (sends the lent bytes) */
	assert_int_equal(write_op(proxy_hdr, NP), NP);
	assert_int_equal(t->sndq.copied, 2 * NP);
	eh_poll(&h);
	memcpy(want, proxy_hdr, NP), n_want += NP;
	memcpy(want + n_want, mem, 1000), n_want += 1000;
	memcpy(want + n_want, proxy_hdr, NP), n_want += NP;
	assert_int_equal(check_in_order(&c, want, 0), n_want);
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + n_want, 65535);
	assert_int_equal(reported, 1000);
	no_chunks();
	eh_forget(&h);
}

/* A lending connection's ring is inline: write_lent of more segments than it holds, none of which
 * merges into the one before, takes those that fit and marks the direction blocked; a copy, which
 * needs an entry too, takes nothing; an ACK that frees entries makes room for more. */
static void test_lending_ring_full(void **state)
{
	struct xlt_seg g[ETH_SNDQ_INLINE + 4];
	static uint8_t want[(ETH_SNDQ_INLINE + 4) * 100];
	struct conn c = open_lending(42013, COPY_SIZE);
	struct eth_tcb *t = eth_tcb_of(se->s);
	const unsigned full = ETH_SNDQ_INLINE * 100, all = (ETH_SNDQ_INLINE + 4) * 100;
	size_t n;

	(void)state;
	eh_forget(&h);
	for (unsigned i = 0; i < ETH_SNDQ_INLINE + 4; i++) {
		/* (gaps: no segment continues the one before) */
		g[i] = (struct xlt_seg){.data = mem + i * 300, .len = 100, .hold = &L, .hops = &l_hops};
		memcpy(want + i * 100, mem + i * 300, 100);
	}
	t->want_writable = false;
	in_op = 1;
	n = se->s->ops->write_lent(se->s, g, ETH_SNDQ_INLINE + 4);
	in_op = 0;
	assert_int_equal(n, full);
	assert_int_equal(t->sndq.n, ETH_SNDQ_INLINE);
	assert_true(t->want_writable);
	assert_int_equal(lend(mem + 10000, 10, false), 0);
	assert_int_equal(write_op(mem, 10), 0);
	no_chunks();
	eh_poll(&h);
	assert_int_equal(check_in_order(&c, want, 0), full);
	/* the peer acknowledges two entries and half of the third */
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + 250, 65535);
	assert_int_equal(reported, 250);
	assert_int_equal(t->sndq.n, ETH_SNDQ_INLINE - 2);
	in_op = 1;
	n = se->s->ops->write_lent(se->s, g + ETH_SNDQ_INLINE, 4);
	in_op = 0;
	assert_int_equal(n, 200);
	eh_poll(&h);
	assert_int_equal(check_in_order(&c, want, full), full + 200);
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + full + 200, 65535);
	in_op = 1;
	n = se->s->ops->write_lent(se->s, g + ETH_SNDQ_INLINE + 2, 2);
	in_op = 0;
	assert_int_equal(n, 200);
	eh_poll(&h);
	assert_int_equal(check_in_order(&c, want, full + 200), all);
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + all, 65535);
	assert_int_equal(reported, all);
	assert_int_equal(t->sndq.n, 0);
	no_chunks();
	eh_forget(&h);
	assert_int_equal(L.gets, L.puts);
}

/* An abort with copies and lent bytes in flight, some acknowledged: the queue puts every reference
 * (the lender's, its copies' mbufs), reports nothing more; once the frames are freed, every mbuf is
 * back in the pool. */
static void test_lending_abort(void **state)
{
	struct conn c = open_lending(42014, COPY_SIZE);
	unsigned avail;

	(void)state;
	eh_forget(&h);
	avail = rte_mempool_avail_count(eh_pool);
	assert_int_equal(write_op(proxy_hdr, NP), NP);
	assert_int_equal(lend(mem, 3000, true), 3000);
	assert_int_equal(lend(mem + 3000, 200, false), 200);
	assert_int_equal(write_op(mem + 3200, 3000), 3000); /* the copy mbuf's room, then new ones */
	assert_true(avail - rte_mempool_avail_count(eh_pool) >= 3);
	no_chunks();
	eh_poll(&h);
	assert_true(h.n_kept >= 3);
	assert_int_equal(eth_stack_stats(h.st)->tx_lent_bytes, 3000); /* (the 200 without a hold: copied) */
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + 1460, 65535);
	assert_int_equal(reported, 1460 - NP);
	assert_int_equal(eth_stack_stats(h.st)->tx_lent_bytes, 3000 - (1460 - NP));
	in_op = 1;
	se->s->ops->abort(se->s);
	in_op = 0;
	eh_poll(&h); /* on_closed: the bench releases the stream */
	assert_null(se->s);
	assert_int_equal(reported, 1460 - NP);
	assert_int_equal(eth_stack_stats(h.st)->tx_lent_bytes, 0);
	assert_true(L.gets - L.puts >= 1); /* frames still queued */
	no_chunks();
	eh_forget(&h);
	assert_int_equal(L.gets, L.puts);
	assert_int_equal(rte_mempool_avail_count(eh_pool), avail);
}

/* On a port that takes no attached mbuf, a lending connection's copies and lent bytes are copied
 * into each frame, intact and in order, and still no chunk is taken. */
static void test_lending_plain_port(void **state)
{
	static uint8_t want[NP + 2000];
	struct conn c = open_lending(42015, COPY_SIZE);

	(void)state;
	eh_forget(&h);
	assert_int_equal(write_op(proxy_hdr, NP), NP);
	assert_int_equal(lend(mem, 2000, true), 2000);
	memcpy(want, proxy_hdr, NP);
	memcpy(want + NP, mem, 2000);
	eh_poll(&h);
	assert_int_equal(frames_in_mem(), 0);
	assert_int_equal(check_in_order(&c, want, 0), NP + 2000);
	assert_int_equal(eth_stack_stats(h.st)->copied_out, 2 * NP + 2000);
	feed(&c, RTE_TCP_ACK_FLAG, c.gnxt + NP + 2000, 65535);
	assert_int_equal(reported, 2000);
	no_chunks();
	eh_forget(&h);
}

/* eth_stack_copy_buf (an IB connection's copy buffers): writable frame buffers with one reference
 * each, an eighth of the pool at most among the workers whatever their holders do, none once the
 * pool is down to a sixteenth; a buffer counts until its last reference goes, from any holder. */
static void test_copy_buf_budget(void **state)
{
	static struct xlt_seg g[EH_MBUFS];
	unsigned avail = rte_mempool_avail_count(eh_pool), n = 0, max = EH_MBUFS / 8;

	(void)state;
	while (eth_stack_copy_buf(h.st, &g[n]) == 0) {
		assert_true(g[n].len > 1024);
		memset((void *)(uintptr_t)g[n].data, 0x5a, g[n].len); /* all of it is the copy's */
		n++;
		assert_true(n <= max);
	}
	assert_int_equal(n, max);
	assert_int_equal(avail - rte_mempool_avail_count(eh_pool), max);
	/* a second reference (taken and put) keeps the buffer out; its last put gives the slot back */
	g[0].hops->get(g[0].hold);
	g[0].hops->put(g[0].hold);
	assert_int_not_equal(eth_stack_copy_buf(h.st, &g[max]), 0);
	g[0].hops->put(g[0].hold);
	assert_int_equal(eth_stack_copy_buf(h.st, &g[0]), 0);
	for (unsigned i = 0; i < n; i++)
		g[i].hops->put(g[i].hold);
	assert_int_equal(rte_mempool_avail_count(eh_pool), avail);
	/* the pool down to a sixteenth: none, with the budget untouched */
	drain_to(EH_MBUFS / 16);
	assert_int_not_equal(eth_stack_copy_buf(h.st, &g[0]), 0);
	undrain();
	eh_advance_ms(&h, 1);
	assert_int_equal(eth_stack_copy_buf(h.st, &g[0]), 0);
	g[0].hops->put(g[0].hold);
	assert_int_equal(rte_mempool_avail_count(eh_pool), avail);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_lent_by_reference, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_retransmit_after_ack, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_mixed_copies, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_bound, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_copy_cap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_abort_in_flight, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_peer_reset_in_flight, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many_entries, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_devmem_port, setup_devmem, teardown),
	    cmocka_unit_test_setup_teardown(test_lending_no_chunks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lending_copy_mbuf, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lending_pool_low, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lending_ring_full, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lending_abort, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_copy_buf_budget, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lending_plain_port, setup_plain, teardown),
	};

	if (eh_eal_init())
		return 77;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
