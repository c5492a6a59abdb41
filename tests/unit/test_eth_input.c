/* Engine-level tests of eth_side on crafted frames and a fake clock (tests/fuzz/fuzz_eth_harness.h:
 * a real mbuf pool, no device, listeners on 7 = echo and 9 = discard). What the host tests cannot
 * reach or time cheaply: IPv4 fragments (the af_packet PMD has the kernel reassemble them), the
 * handshake's options, a repeated SYN and its ACK in one burst, simultaneous open and close,
 * TIME_WAIT expiry and reuse, the half-open table's shares per listener and SYN cookies (with the
 * options they carry, and what they refuse), the rate limits on ACKs to invalid segments,
 * out-of-order data that expires, keepalive, the persist timer against a zero window,
 * our own zero window, fast retransmit with SACK (also on ACKs riding on data), slow start against
 * ACKs of whole bursts and a window its source holds back (RFC 7661), and a peer that
 * vanishes with data outstanding (RTO backoff, then user_timeout); and what a device with offloads
 * brings (no host link here has LRO): merged segments as mbuf chains, good and hostile, checksums
 * the device vouched for, TSO frames out; TCP over IPv6 (extension headers before TCP, neighbour
 * discovery feeding the cache, active opens waiting for a solicitation's answer). Each test checks the
 * segments on the wire and the counters, and that every mbuf returns to the pool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <rte_icmp.h>
#include <rte_udp.h>

#include "tests/fuzz/fuzz_eth_harness.h"

#include "eth_side/engine-t.h" /* (one white-box look: the challenge-ACK budget) */
#include "eth_side/engine.h"   /* (eth_frame_owner6, eth_flow_hash: steering without workers) */
#include "eth_side/exception.h"
#include "eth_side/tcp_opt.h"
#include "eth_side/tcp_seq.h"

#define PEER_ISN 0xfffff000u /* wraps during the tests */

struct out {
	uint16_t sport, dport;
	uint32_t seq, ack, len;
	uint8_t flags;
	uint16_t win;
	struct eth_tcp_opts o;
	const uint8_t *data;
	uint16_t nb_segs, tso_segsz; /* a TSO frame: its mbufs, and the segments the device cuts */
	uint64_t ol_flags;
};

/* A connection from the test's point of view (the peer). */
struct conn {
	uint16_t pport, gport;
	uint32_t pnxt; /* peer's next sequence number */
	uint32_t gnxt; /* ibgwd's next sequence number (what the peer acknowledges) */
	uint32_t iss;
	bool ts;
	uint32_t tsval;
	uint32_t tsecr; /* the last TSval ibgwd sent on it: echoed as a peer does (RFC 7323 4.3) */
	uint16_t syn_win; /* the window of ibgwd's SYN-ACK */
};

static struct eh h;

static const struct eth_stack_stats *S(void)
{
	return eth_stack_stats(h.st);
}

/* Decodes the TCP frames kept since the last eh_forget into V (up to MAX). Returns their count. The
 * payload of a chain (TSO) is copied out, valid until the next call. */
static unsigned sent(struct out *v, unsigned max)
{
	static uint8_t copies[8][65536];
	unsigned n = 0, nc = 0;

	for (unsigned i = 0; i < h.n_kept && n < max; i++) {
		const uint8_t *p = rte_pktmbuf_mtod(h.kept[i], const uint8_t *);
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(p + RTE_ETHER_HDR_LEN);
		const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)(ip + 1);
		unsigned doff;

		if (((const struct rte_ether_hdr *)p)->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
		    ip->next_proto_id != IPPROTO_TCP)
			continue;
		doff = (th->data_off >> 4) * 4u;
		v[n].sport = rte_be_to_cpu_16(th->src_port);
		v[n].dport = rte_be_to_cpu_16(th->dst_port);
		v[n].seq = rte_be_to_cpu_32(th->sent_seq);
		v[n].ack = rte_be_to_cpu_32(th->recv_ack);
		v[n].flags = th->tcp_flags;
		v[n].win = rte_be_to_cpu_16(th->rx_win);
		v[n].len = rte_be_to_cpu_16(ip->total_length) - sizeof(*ip) - doff;
		v[n].data = (const uint8_t *)th + doff;
		v[n].nb_segs = h.kept[i]->nb_segs;
		v[n].tso_segsz = h.kept[i]->tso_segsz;
		v[n].ol_flags = h.kept[i]->ol_flags;
		if (h.kept[i]->nb_segs > 1) {
			assert_true(nc < 8);
			eh_frame_read(h.kept[i], RTE_ETHER_HDR_LEN + sizeof(*ip) + doff, copies[nc], v[n].len);
			v[n].data = copies[nc++];
		}
		assert_int_equal(eth_tcp_opt_parse((const uint8_t *)(th + 1), doff - sizeof(*th),
						   th->tcp_flags & RTE_TCP_SYN_FLAG, &v[n].o),
				 0);
		n++;
	}
	return n;
}

/* The only TCP segment sent since the last eh_forget (fails unless exactly one). */
static struct out one_at(int line)
{
	struct out v[8];

	if (sent(v, 8) != 1)
		fprintf(stderr, "one() at line %d: %u segments\n", line, sent(v, 8));
	assert_int_equal(sent(v, 8), 1);
	return v[0];
}
#define one() one_at(__LINE__)

/* Learns the TSval of the newest frame ibgwd sent to C's port, if any. */
static void learn_tsecr(struct conn *c)
{
	for (unsigned i = 0; i < h.n_kept; i++) {
		const uint8_t *p = rte_pktmbuf_mtod(h.kept[i], const uint8_t *);
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(p + RTE_ETHER_HDR_LEN);
		const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)(ip + 1);
		struct eth_tcp_opts o;

		if (((const struct rte_ether_hdr *)p)->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
		    ip->next_proto_id != IPPROTO_TCP || rte_be_to_cpu_16(th->dst_port) != c->pport)
			continue;
		if (eth_tcp_opt_parse((const uint8_t *)(th + 1), (th->data_off >> 4) * 4u - sizeof(*th),
				      th->tcp_flags & RTE_TCP_SYN_FLAG, &o) == 0 &&
		    o.ts_ok)
			c->tsecr = o.tsval;
	}
}

/* Feeds one segment from the peer, as it arrives in an RX burst: what it makes the engine send waits
 * for the next eh_poll (the round's flush). */
static void feed_unpolled(struct conn *c, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t wnd,
			  const uint8_t *data, size_t len)
{
	uint8_t frame[1600], opt[12] = {1, 1, 8, 10};
	size_t ol = 0;

	if (c->ts) {
		c->tsval += 10;
		opt[4] = (uint8_t)(c->tsval >> 24);
		opt[5] = (uint8_t)(c->tsval >> 16);
		opt[6] = (uint8_t)(c->tsval >> 8);
		opt[7] = (uint8_t)c->tsval;
		opt[8] = (uint8_t)(c->tsecr >> 24);
		opt[9] = (uint8_t)(c->tsecr >> 16);
		opt[10] = (uint8_t)(c->tsecr >> 8);
		opt[11] = (uint8_t)c->tsecr;
		ol = 12;
	}
	eh_feed(&h, frame, eh_tcp_frame(frame, c->pport, c->gport, seq, ack, flags, wnd, opt, ol, data, len));
}

static void feed(struct conn *c, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t wnd, const uint8_t *data,
		 size_t len)
{
	eh_forget(&h);
	feed_unpolled(c, flags, seq, ack, wnd, data, len);
	eh_poll(&h);
	learn_tsecr(c);
}

/* Sends LEN bytes in order from the peer (acknowledging everything ibgwd sent). */
static void peer_data(struct conn *c, const uint8_t *data, size_t len, uint8_t extra)
{
	feed(c, RTE_TCP_ACK_FLAG | RTE_TCP_PSH_FLAG | extra, c->pnxt, c->gnxt, 65535, data, len);
	c->pnxt += (uint32_t)len + !!(extra & RTE_TCP_FIN_FLAG);
}

static void ack_all(struct conn *c, uint16_t wnd)
{
	feed(c, RTE_TCP_ACK_FLAG, c->pnxt, c->gnxt, wnd, NULL, 0);
}

/* Acknowledges up to ACK (below what ibgwd sent: the rest stays in flight) with window WND. */
static void ack_to(struct conn *c, uint32_t ack, uint16_t wnd)
{
	feed(c, RTE_TCP_ACK_FLAG, c->pnxt, ack, wnd, NULL, 0);
}

/* Opens a connection from the peer's PPORT to GPORT with the SYN options OPTS (OLEN bytes; TS: they
 * have a timestamp) and window WND, in the SYN and the ACK. */
static void open_conn_with(struct conn *c, uint16_t pport, uint16_t gport, const uint8_t *opts, size_t olen,
			   bool ts, uint16_t wnd)
{
	uint8_t frame[200];
	struct out o;

	*c = (struct conn){.pport = pport, .gport = gport, .pnxt = PEER_ISN, .ts = ts, .tsval = 1};
	eh_forget(&h);
	eh_feed(&h, frame, eh_tcp_frame(frame, pport, gport, c->pnxt, 0, RTE_TCP_SYN_FLAG, wnd, opts, olen, NULL, 0));
	eh_poll(&h);
	o = one();
	assert_int_equal(o.flags, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG);
	assert_int_equal(o.ack, PEER_ISN + 1);
	c->pnxt++;
	c->iss = o.seq;
	c->gnxt = o.seq + 1;
	c->tsecr = o.o.tsval;
	c->syn_win = o.win;
	ack_all(c, wnd);
}

/* Opens a connection from the peer's PPORT to GPORT, with Linux's SYN options when OPTS. */
static void open_conn(struct conn *c, uint16_t pport, uint16_t gport, bool opts)
{
	static const uint8_t syn_opts[] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7};

	open_conn_with(c, pport, gport, opts ? syn_opts : NULL, opts ? sizeof(syn_opts) : 0, opts, 65535);
}

static struct eh_session *session_of(uint16_t pport)
{
	for (unsigned i = 0; i < EH_SESSIONS; i++)
		if (h.sess[i].s && h.sess[i].s->peer_port == pport)
			return &h.sess[i];
	return NULL;
}

/* syn_backlog 8: with the two listeners, 4 half-open connections each */
static int setup(void **state)
{
	(void)state;
	return eh_start(&h, 8, 16384, 16384);
}

/* with a kernel TAP: its rings without one, where what the engine punts waits (exc_to_kernel counts it);
 * RET: the setup's before it */
static int with_exc(int ret)
{
	if (ret)
		return ret;
	h.st->c.exc = eth_exc_create_detached(100000, 1);
	return h.st->c.exc ? 0 : -ENOMEM;
}

static int setup_exc(void **state)
{
	return with_exc(setup(state));
}

/* a send buffer that holds 80 segments: the congestion window, not the buffer, bounds each flight */
static int setup_big_sbuf(void **state)
{
	(void)state;
	return eh_start(&h, 8, 16384, 256 * 1024);
}

static int setup_backlog16(void **state)
{
	(void)state;
	return eh_start(&h, 16, 16384, 16384);
}

static int teardown(void **state)
{
	(void)state;
	eh_stop(&h); /* checks that every mbuf is back */
	return 0;
}

static int teardown_exc(void **state)
{
	struct eth_exc *x = h.st->c.exc;

	h.st->c.exc = NULL;
	eth_exc_destroy(x); /* (frees what the TAP would have read) */
	return teardown(state);
}

static void test_fragments(void **state)
{
	uint8_t f[200];
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + RTE_ETHER_HDR_LEN);
	uint64_t sent0 = h.n_sent;
	size_t len;

	(void)state;
	len = eh_tcp_frame(f, 41000, EH_ECHO_PORT, 1, 0, RTE_TCP_SYN_FLAG, 65535, NULL, 0, NULL, 0);
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_MF_FLAG);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	eh_feed(&h, f, len);
	ip->fragment_offset = rte_cpu_to_be_16(100);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	eh_feed(&h, f, len);
	eh_poll(&h);
	assert_int_equal(S()->ip_fragments, 2);
	assert_int_equal(S()->tcp_segments_in, 0);
	assert_int_equal(h.n_sent, sent0); /* no SYN-ACK */
	/* a DF flag alone is no fragment */
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	eh_forget(&h);
	eh_feed(&h, f, len);
	eh_poll(&h);
	assert_int_equal(one().flags, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG);
	assert_int_equal(S()->ip_fragments, 2);
}

static void test_handshake_options(void **state)
{
	static const uint8_t syn_opts[] = {2, 4, 0x05, 0x00, 4, 2, 8, 10, 0, 0, 0x12, 0x34, 0, 0, 0, 0, 1, 3, 3, 9};
	uint8_t f[200];
	struct out o;
	struct conn c;

	(void)state;
	eh_feed(&h, f,
		eh_tcp_frame(f, 41001, EH_ECHO_PORT, 500, 0, RTE_TCP_SYN_FLAG, 65535, syn_opts, sizeof(syn_opts),
			     NULL, 0));
	eh_poll(&h);
	o = one();
	assert_true(o.o.mss_ok && o.o.sack_ok && o.o.ts_ok && o.o.ws_ok);
	assert_int_equal(o.o.mss, 1460);
	assert_int_equal(o.o.tsecr, 0x1234); /* our TSecr echoes the peer's TSval */
	assert_int_equal(o.o.wscale, 0);     /* 16 KiB buffers need no scaling */
	assert_int_equal(o.win, 16384);
	assert_int_equal(S()->tcp_syn_rcvd, 1);
	/* no options at all: no SACK, timestamps or scaling in the answer (RFC 7323, RFC 2018) */
	eh_forget(&h);
	eh_feed(&h, f, eh_tcp_frame(f, 41002, EH_ECHO_PORT, 700, 0, RTE_TCP_SYN_FLAG, 65535, NULL, 0, NULL, 0));
	eh_poll(&h);
	o = one();
	assert_true(o.o.mss_ok);
	assert_false(o.o.sack_ok || o.o.ts_ok || o.o.ws_ok);
	assert_int_equal(S()->tcp_syn_rcvd, 2);
	/* a full handshake: established, counted, the session accepted it */
	open_conn(&c, 41003, EH_ECHO_PORT, true);
	assert_int_equal(S()->tcp_active, 1);
	assert_int_equal(S()->tcp_passive_opens, 1);
	assert_non_null(session_of(41003));
}

/* Opens a connection to the peer's port C->pport: returns our SYN, whose port and ISS C learns. */
static struct out active_syn(struct conn *c)
{
	struct out o;

	eh_forget(&h);
	assert_int_equal(eh_connect(&h, c->pport), 0);
	eh_poll(&h);
	o = one();
	assert_int_equal(o.flags, RTE_TCP_SYN_FLAG);
	c->gport = o.sport;
	c->iss = o.seq;
	return o;
}

/* Both ends send a SYN at once (RFC 9293 figure 7). */
static void test_simultaneous_open(void **state)
{
	static const uint8_t msg[] = "crossing SYNs";
	struct conn c = {.pport = 80, .pnxt = 0x7ffffff0u};
	struct eh_session *se;
	struct out o;

	(void)state;
	active_syn(&c);
	assert_int_equal(S()->tcp_active_opens, 1);
	/* the peer's own SYN crosses ours: we answer SYN-ACK with the same ISS */
	feed(&c, RTE_TCP_SYN_FLAG, c.pnxt, 0, 65535, NULL, 0);
	o = one();
	assert_int_equal(o.flags, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG);
	assert_int_equal(o.seq, c.iss);
	assert_int_equal(o.ack, c.pnxt + 1);
	/* the peer's SYN-ACK (its SYN again, now acknowledging ours): established */
	feed(&c, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG, c.pnxt, c.iss + 1, 65535, NULL, 0);
	c.pnxt++;
	c.gnxt = c.iss + 1;
	assert_int_equal(S()->tcp_active, 1);
	assert_int_equal(S()->tcp_syn_rcvd, 0);
	assert_int_equal(S()->tcp_challenge_acks, 0);
	se = session_of(80);
	assert_non_null(se);
	assert_int_equal(se->s->state, XLT_STREAM_OPEN);
	/* and data flows: the session echoes it */
	peer_data(&c, msg, sizeof(msg), 0);
	o = one();
	assert_int_equal(o.len, sizeof(msg));
	assert_memory_equal(o.data, msg, sizeof(msg));
	assert_int_equal(o.seq, c.gnxt);
	assert_int_equal(o.ack, c.pnxt);
}

/* A simultaneous open whose peer offers window scaling (14, the most): its SYN-ACK's window is a
 * SYN's, never scaled (RFC 7323 2.2). Taken shifted, 1000 bytes read as 16 MB, and what the session
 * wrote went past the peer's real window at once. */
static void test_simultaneous_open_syn_window(void **state)
{
	static const uint8_t syn_opts[] = {2, 4, 0x05, 0xb4, 1, 3, 3, 14};
	static uint8_t blob[4000];
	struct conn c = {.pport = 81, .pnxt = 0x12345678u};
	struct eh_session *se;
	uint8_t frame[200];
	struct out v[8], o;
	unsigned n, got = 0;

	(void)state;
	assert_true(active_syn(&c).o.ws_ok); /* ours offers scaling: the peer's 14 applies */
	eh_forget(&h);
	eh_feed(&h, frame, eh_tcp_frame(frame, c.pport, c.gport, c.pnxt, 0, RTE_TCP_SYN_FLAG, 65535, syn_opts,
					 sizeof(syn_opts), NULL, 0));
	eh_poll(&h);
	o = one();
	assert_int_equal(o.flags, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG);
	/* its SYN-ACK offers 1000 bytes */
	feed(&c, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG, c.pnxt, c.iss + 1, 1000, NULL, 0);
	c.pnxt++;
	c.gnxt = c.iss + 1;
	assert_int_equal(S()->tcp_active, 1);
	se = session_of(81);
	assert_non_null(se);
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	n = sent(v, 8);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(v[i].seq, c.gnxt + got);
		got += v[i].len;
	}
	assert_int_equal(got, 1000);
}

/* An ACK below snd_una (old, but not so old that RFC 5961 5.2 refuses it) on a newer segment: its
 * window counts from where that ACK is, and ours from snd_una, so it updates nothing (RFC 9293
 * 3.10.7.4). Taken, it let us send past the peer's real edge by the distance between the two. */
static void test_old_ack_window(void **state)
{
	static uint8_t blob[4000];
	struct conn c;
	struct eh_session *se;
	struct out v[8];
	unsigned n;
	uint32_t una;

	(void)state;
	open_conn(&c, 41060, EH_DISCARD_PORT, true); /* (the peer scales by 7: window 32 is 4096 bytes) */
	se = session_of(41060);
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, 2000), 2000);
	eh_poll(&h);
	n = sent(v, 8);
	assert_true(n > 0);
	una = c.gnxt + 2000;
	c.gnxt = una;
	ack_all(&c, 0); /* all of it taken, and the window shut */
	assert_int_equal(S()->tcp_zero_window_rcvd, 1);
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	assert_int_equal(h.n_kept, 0);
	/* a byte of data, then another on a newer segment (the window update rule looks at it: its
	 * sequence number is past the last update's), with an ACK 3000 bytes old and a window of 4096
	 * bytes from there (taken from snd_una, room for two full segments) */
	feed(&c, RTE_TCP_ACK_FLAG | RTE_TCP_PSH_FLAG, c.pnxt, una, 0, blob, 1);
	c.pnxt++;
	feed(&c, RTE_TCP_ACK_FLAG | RTE_TCP_PSH_FLAG, c.pnxt, una - 3000, 32, blob, 1);
	c.pnxt++;
	eh_advance_ms(&h, 50); /* (the delayed ACK of that byte) */
	n = sent(v, 8);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(v[i].len, 0);
	assert_int_equal(S()->tcp_challenge_acks, 0);
	/* the window opens for real: the bytes go, from snd_una */
	ack_all(&c, 32);
	n = sent(v, 8);
	assert_true(n > 0);
	assert_int_equal(v[0].seq, una);
	assert_int_equal(S()->tcp_active, 1);
}

/* RFC 5961 3.2 on an RST whose sequence number lies outside the window though the acceptability
 * test lets the segment through (exactly at the right edge, or before rcv_nxt with data reaching
 * in): dropped, no challenge ACK; one inside the window but not exact earns one; none ends the
 * connection. */
static void test_rst_window_edges(void **state)
{
	static const uint8_t junk[20];
	struct conn c;
	uint32_t rwnd;
	uint64_t ch0, oow0;

	(void)state;
	open_conn(&c, 41061, EH_DISCARD_PORT, false); /* (no options: our window is not scaled) */
	rwnd = c.syn_win;
	ch0 = S()->tcp_challenge_acks;
	oow0 = S()->tcp_out_of_window;
	feed(&c, RTE_TCP_RST_FLAG, c.pnxt + rwnd, 0, 0, NULL, 0);
	assert_int_equal(h.n_kept, 0);
	feed(&c, RTE_TCP_RST_FLAG, c.pnxt - 10, 0, 0, junk, sizeof(junk));
	assert_int_equal(h.n_kept, 0);
	assert_int_equal(S()->tcp_challenge_acks, ch0);
	assert_int_equal(S()->tcp_out_of_window, oow0 + 2);
	feed(&c, RTE_TCP_RST_FLAG, c.pnxt + rwnd - 1, 0, 0, NULL, 0);
	assert_int_equal(S()->tcp_challenge_acks, ch0 + 1);
	assert_int_equal(one().ack, c.pnxt);
	assert_int_equal(S()->tcp_active, 1);
	assert_int_equal(S()->tcp_rsts_in, 3);
}

/* The peer lost our SYN-ACK and sends its SYN again; its ACK of the SYN-ACK that did arrive comes
 * in the same receive burst, before the SYN-ACK the repeated SYN asked for went out. Seen over a
 * lossy link (tests/eth/test_tcp_faults.sh): the connection was established with snd_nxt left on
 * the ISS, sent no data and acknowledged with a sequence number the peer discards as old: hung. */
static void test_syn_again_then_ack(void **state)
{
	static const uint8_t msg[] = "after a lost SYN-ACK";
	struct conn c = {.pport = 41005, .gport = EH_ECHO_PORT, .pnxt = PEER_ISN};
	uint8_t f[200];
	struct out o;

	(void)state;
	eh_forget(&h);
	eh_feed(&h, f, eh_tcp_frame(f, c.pport, c.gport, c.pnxt, 0, RTE_TCP_SYN_FLAG, 65535, NULL, 0, NULL, 0));
	eh_poll(&h);
	o = one(); /* lost */
	c.iss = o.seq;
	c.gnxt = o.seq + 1;
	eh_advance_ms(&h, 1000); /* our retransmission (it arrives) */
	eh_forget(&h);
	eh_feed(&h, f, eh_tcp_frame(f, c.pport, c.gport, c.pnxt, 0, RTE_TCP_SYN_FLAG, 65535, NULL, 0, NULL, 0));
	c.pnxt++;
	eh_feed(&h, f, eh_tcp_frame(f, c.pport, c.gport, c.pnxt, c.gnxt, RTE_TCP_ACK_FLAG, 65535, NULL, 0, NULL, 0));
	eh_poll(&h);
	assert_int_equal(S()->tcp_active, 1);
	assert_non_null(session_of(c.pport));
	peer_data(&c, msg, sizeof(msg), 0);
	o = one();
	assert_int_equal(o.seq, c.gnxt);
	assert_int_equal(o.ack, c.pnxt);
	assert_int_equal(o.len, sizeof(msg));
	assert_memory_equal(o.data, msg, sizeof(msg));
}

static struct conn established_echo(uint16_t pport)
{
	struct conn c;

	open_conn(&c, pport, EH_ECHO_PORT, true);
	return c;
}

/* An echo connection from PPORT whose session closed first: our FIN sent (gnxt counts it), not yet
 * acknowledged by the peer (FIN_WAIT_1). */
static struct conn closed_first(uint16_t pport)
{
	struct conn c = established_echo(pport);
	struct eh_session *se = session_of(pport);
	struct out o;

	eh_forget(&h);
	se->s->ops->shutdown(se->s);
	eh_poll(&h);
	o = one();
	assert_int_equal(o.flags & RTE_TCP_FIN_FLAG, RTE_TCP_FIN_FLAG);
	c.gnxt = o.seq + o.len + 1;
	return c;
}

/* Both ends send FIN at once: FIN_WAIT_1 -> CLOSING -> TIME_WAIT, then the block is freed after
 * time_wait (2 s here); a new SYN on the same pair reuses a TIME_WAIT block only when newer. */
static void test_simultaneous_close_time_wait(void **state)
{
	struct conn c = closed_first(41010), c2;
	uint32_t fin_seq = c.gnxt - 1;
	struct out o;
	uint8_t f[200];

	(void)state;
	/* the peer's FIN, not acknowledging ours: CLOSING, our ACK of it */
	feed(&c, RTE_TCP_FIN_FLAG | RTE_TCP_ACK_FLAG, c.pnxt, fin_seq, 65535, NULL, 0);
	c.pnxt++;
	o = one();
	assert_int_equal(o.ack, c.pnxt);
	assert_int_equal(S()->tcp_time_wait, 0);
	assert_int_equal(S()->tcp_active, 1);
	/* its ACK of our FIN: TIME_WAIT; the session saw an orderly close and released the stream */
	c.gnxt = fin_seq + 1;
	ack_all(&c, 65535);
	assert_int_equal(S()->tcp_time_wait, 1);
	assert_int_equal(S()->tcp_active, 0);
	assert_int_equal(S()->tcp_closed, 1);
	assert_null(session_of(41010));
	/* a retransmitted FIN is acknowledged again */
	feed(&c, RTE_TCP_FIN_FLAG | RTE_TCP_ACK_FLAG, c.pnxt - 1, c.gnxt, 65535, NULL, 0);
	o = one();
	assert_int_equal(o.ack, c.pnxt);
	assert_int_equal(S()->tcp_time_wait, 1);
	/* an old SYN (below what we received) does not reuse the pair: a challenge ACK */
	c.ts = false;
	eh_forget(&h);
	eh_feed(&h, f, eh_tcp_frame(f, 41010, EH_ECHO_PORT, c.pnxt - 100, 0, RTE_TCP_SYN_FLAG, 65535, NULL, 0, NULL, 0));
	eh_poll(&h);
	o = one();
	assert_int_equal(o.flags, RTE_TCP_ACK_FLAG);
	assert_int_equal(S()->tcp_tw_reuse, 0);
	/* a newer one does, with an ISS above the old connection's sequence space */
	eh_forget(&h);
	eh_feed(&h, f, eh_tcp_frame(f, 41010, EH_ECHO_PORT, c.pnxt + 1000, 0, RTE_TCP_SYN_FLAG, 65535, NULL, 0, NULL, 0));
	eh_poll(&h);
	o = one();
	assert_int_equal(o.flags, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG);
	assert_true(eth_seq_gt(o.seq, c.gnxt));
	assert_int_equal(S()->tcp_tw_reuse, 1);
	assert_int_equal(S()->tcp_time_wait, 0);
	assert_int_equal(S()->tcp_syn_rcvd, 1);
	/* a TIME_WAIT that nobody reuses ends after time_wait */
	c2 = established_echo(41011);
	peer_data(&c2, NULL, 0, RTE_TCP_FIN_FLAG); /* the peer closes first: the echo closes too */
	o = one();
	assert_int_equal(o.flags & RTE_TCP_FIN_FLAG, RTE_TCP_FIN_FLAG);
	c2.gnxt = o.seq + o.len + 1;
	ack_all(&c2, 65535); /* LAST_ACK -> CLOSED: no TIME_WAIT on the passive closer */
	assert_int_equal(S()->tcp_time_wait, 0);
	assert_int_equal(S()->tcp_active, 0);
	c2 = closed_first(41012);
	peer_data(&c2, NULL, 0, RTE_TCP_FIN_FLAG); /* acknowledges our FIN and brings its own */
	assert_int_equal(S()->tcp_time_wait, 1);
	eh_advance_ms(&h, 1900);
	assert_int_equal(S()->tcp_time_wait, 1);
	eh_advance_ms(&h, 200);
	assert_int_equal(S()->tcp_time_wait, 0);
	assert_int_equal(eth_stack_conns(h.st), 1); /* only the reused 41010 (half-open) is left */
}

/* A peer against our TIME_WAIT (we closed first). One byte at the far end of the window while in
 * FIN_WAIT_2 takes that window of the worker's chunks; the FIN right after takes the connection to
 * TIME_WAIT and the session lets go of it: the chunks go back then, not when the hole expires or
 * 2MSL ends (a peer cycling connections so drained the pool of every session on the worker). In
 * TIME_WAIT a FIN past the one taken neither moves the connection nor restarts 2MSL (a peer sent
 * one a second and kept it for ever); the retransmitted FIN is ACKed and restarts it, up to twice
 * time_wait from the start (sent again and again, it kept the connection for ever too). */
static void test_time_wait_hostile(void **state)
{
	uint64_t b0 = S()->tcp_buffer_bytes;
	struct conn c = closed_first(41030);
	uint8_t one_byte = 'x';
	struct out o;

	(void)state;
	ack_all(&c, 65535); /* FIN_WAIT_2 */
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt + 16000, c.gnxt, 65535, &one_byte, 1); /* (the window: 16 KiB) */
	assert_true(S()->tcp_buffer_bytes >= b0 + 16000);
	feed(&c, RTE_TCP_FIN_FLAG | RTE_TCP_ACK_FLAG, c.pnxt, c.gnxt, 65535, NULL, 0);
	c.pnxt++;
	o = one();
	assert_int_equal(o.ack, c.pnxt);
	assert_int_equal(S()->tcp_time_wait, 1);
	assert_null(session_of(41030));
	assert_int_equal(S()->tcp_buffer_bytes, b0);

	/* a FIN at the new rcv_nxt, 1.9 s in: ACKed at most (no state moved), 2MSL not restarted */
	eh_advance_ms(&h, 1900);
	feed(&c, RTE_TCP_FIN_FLAG | RTE_TCP_ACK_FLAG, c.pnxt, c.gnxt, 65535, NULL, 0);
	eh_advance_ms(&h, 200);
	assert_int_equal(S()->tcp_time_wait, 0);

	/* the retransmitted FIN restarts it */
	c = closed_first(41031);
	peer_data(&c, NULL, 0, RTE_TCP_FIN_FLAG);
	assert_int_equal(S()->tcp_time_wait, 1);
	eh_advance_ms(&h, 1500);
	feed(&c, RTE_TCP_FIN_FLAG | RTE_TCP_ACK_FLAG, c.pnxt - 1, c.gnxt, 65535, NULL, 0);
	o = one();
	assert_int_equal(o.ack, c.pnxt);
	eh_advance_ms(&h, 1000);
	assert_int_equal(S()->tcp_time_wait, 1);
	eh_advance_ms(&h, 1100);
	assert_int_equal(S()->tcp_time_wait, 0);

	/* but not past twice time_wait from its start, however often it comes (each ACKed) */
	c = closed_first(41032);
	peer_data(&c, NULL, 0, RTE_TCP_FIN_FLAG);
	for (unsigned i = 0; i < 2; i++) {
		eh_advance_ms(&h, 1900);
		assert_int_equal(S()->tcp_time_wait, 1);
		feed(&c, RTE_TCP_FIN_FLAG | RTE_TCP_ACK_FLAG, c.pnxt - 1, c.gnxt, 65535, NULL, 0);
		o = one();
		assert_int_equal(o.ack, c.pnxt);
	}
	eh_advance_ms(&h, 300); /* 4.1 s in: over at 4 s, not at 5.8 (the last FIN's 2 s) */
	assert_int_equal(S()->tcp_time_wait, 0);
}

/* A spoofed flood at a closed port gets at most ETH_TCP_RST_REPLIES_PER_S resets a second from a
 * worker (it was one each: reflected at the sources it names), the rest counted; the next second
 * resets go out again. */
static void test_rst_budget(void **state)
{
	uint64_t r0 = S()->tcp_rsts_out, l0 = S()->tcp_rsts_limited;
	uint8_t f[200];

	(void)state;
	for (unsigned i = 0; i < ETH_TCP_RST_REPLIES_PER_S + 200; i++) {
		eh_forget(&h);
		eh_feed(&h, f, eh_tcp_frame(f, (uint16_t)(20000 + i), 4444, 1000u * i, 0, RTE_TCP_SYN_FLAG, 65535, NULL, 0,
		                            NULL, 0));
	}
	assert_int_equal(S()->tcp_rsts_out - r0, ETH_TCP_RST_REPLIES_PER_S);
	assert_int_equal(S()->tcp_rsts_limited - l0, 200);
	eh_advance_ms(&h, 1000);
	eh_forget(&h);
	eh_feed(&h, f, eh_tcp_frame(f, 19999, 4444, 7, 0, RTE_TCP_SYN_FLAG, 65535, NULL, 0, NULL, 0));
	assert_int_equal(S()->tcp_rsts_out - r0, ETH_TCP_RST_REPLIES_PER_S + 1);
}

/* SYNs to PORT from ports BASE.. (no options, sequence numbers 1000 apart), in one burst. */
static void syns(uint16_t port, uint16_t base, unsigned n)
{
	uint8_t f[200];

	for (unsigned i = 0; i < n; i++)
		eh_feed(&h, f,
			eh_tcp_frame(f, (uint16_t)(base + i), port, 1000 * i, 0, RTE_TCP_SYN_FLAG, 65535, NULL, 0,
				     NULL, 0));
	eh_forget(&h);
	eh_poll(&h);
}

static void advance_s(unsigned s)
{
	for (unsigned i = 0; i < s * 10; i++)
		eh_advance_ms(&h, 100);
}

/* syn_backlog = 16 and two listeners: each keeps 8 half-open connections at most. Past its share a
 * listener answers with SYN cookies and keeps nothing, and the other listener still has its room
 * (before, one flooded port closed every listener for 63 s). A share half full retries SYN-ACKs
 * twice (7 s) instead of five times (63 s), so a flood's half-open blocks drain fast. */
static void test_syn_share(void **state)
{
	struct out v[EH_KEEP];
	struct conn c;

	(void)state;
	syns(EH_ECHO_PORT, 42000, 3); /* under half the share: the normal 5 retries */
	assert_int_equal(S()->tcp_syn_rcvd, 3);
	advance_s(8); /* retries at 1, 3 and 7 s, the next at 15 s */
	eh_advance_ms(&h, 500);
	assert_int_equal(S()->tcp_syn_rcvd, 3);
	assert_int_equal(S()->tcp_retransmits, 3 * 3);
	/* the flood: 5 more fill the share, 8 get cookies; every SYN is answered */
	syns(EH_ECHO_PORT, 42003, 13);
	assert_int_equal(sent(v, EH_KEEP), 13);
	assert_int_equal(S()->tcp_syn_rcvd, 8);
	assert_int_equal(S()->tcp_syncookies_sent, 8);
	assert_int_equal(S()->tcp_syn_drops, 0);
	/* the other listener keeps its own share, then it too answers with cookies */
	syns(EH_DISCARD_PORT, 42100, 9);
	assert_int_equal(S()->tcp_syn_rcvd, 16);
	assert_int_equal(S()->tcp_syncookies_sent, 9);
	/* under pressure every half-open block lives 7 s at most: all gone 8 s after the flood (the
	 * first three, at their retry 6.5 s after it, would have lived 63 s) */
	advance_s(6);
	assert_int_equal(S()->tcp_syn_rcvd, 16);
	advance_s(2);
	assert_int_equal(S()->tcp_syn_rcvd, 0);
	assert_int_equal(S()->tcp_retransmits, 3 * 3 + 13 * 2);
	assert_int_equal(eth_stack_conns(h.st), 0);
	/* and a handshake is stateful again */
	open_conn(&c, 42200, EH_ECHO_PORT, false);
	assert_int_equal(S()->tcp_active, 1);
	assert_int_equal(S()->tcp_syncookies_sent, 9);
	assert_int_equal(S()->tcp_syncookies_validated, 0);
}

/* Fills the echo listener's share (4: setup()'s syn_backlog 8, two listeners) from ports BASE..;
 * the next SYN to it gets a cookie. */
static void fill_echo_share(uint16_t base)
{
	uint64_t before = S()->tcp_syn_rcvd;

	syns(EH_ECHO_PORT, base, 4);
	assert_int_equal(S()->tcp_syn_rcvd, before + 4);
}

/* A cookie SYN-ACK for a SYN from PPORT with OPTS (OPTLEN bytes): checks that it is one (no state
 * kept) and returns it; C is set up as the peer of that handshake (timestamps when OPTS has them). */
static struct out cookie_syn(struct conn *c, uint16_t pport, const uint8_t *opts, size_t optlen)
{
	uint64_t cookies = S()->tcp_syncookies_sent, half = S()->tcp_syn_rcvd;
	uint8_t f[200];
	struct out o;

	eh_forget(&h);
	eh_feed(&h, f, eh_tcp_frame(f, pport, EH_ECHO_PORT, PEER_ISN, 0, RTE_TCP_SYN_FLAG, 65535, opts, optlen, NULL, 0));
	eh_poll(&h);
	o = one();
	assert_int_equal(o.flags, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG);
	assert_int_equal(o.ack, PEER_ISN + 1);
	assert_int_equal(S()->tcp_syncookies_sent, cookies + 1);
	assert_int_equal(S()->tcp_syn_rcvd, half);
	*c = (struct conn){.pport = pport, .gport = EH_ECHO_PORT, .pnxt = PEER_ISN + 1, .iss = o.seq, .gnxt = o.seq + 1,
			   .ts = o.o.ts_ok, .tsval = 0x1234, .tsecr = o.o.tsval};
	return o;
}

static uint8_t cookie_data[1460];

/* Checks that the echo of N bytes just sent by the peer came back as segments of SEG bytes (the
 * last shorter), with or without timestamps, and returns how many. */
static unsigned echoed(const struct conn *c, uint32_t n, uint32_t seg, bool ts)
{
	struct out v[EH_KEEP];
	unsigned k = sent(v, EH_KEEP), segs = 0;
	uint32_t got = 0;

	for (unsigned i = 0; i < k; i++) {
		if (v[i].dport != c->pport || !v[i].len)
			continue;
		assert_int_equal(v[i].seq, c->gnxt + got);
		assert_int_equal(v[i].len, n - got < seg ? n - got : seg);
		assert_memory_equal(v[i].data, cookie_data + got, v[i].len);
		assert_int_equal(v[i].o.ts_ok, ts);
		got += v[i].len;
		segs++;
	}
	assert_int_equal(got, n);
	return segs;
}

/* The options a cookie carries: MSS (rounded down to its table), and with timestamps the peer's
 * window scale and SACK-permitted in our TSval's low bits, which its ACK echoes. */
static void test_syncookie_options(void **state)
{
	/* MSS 1400, SACK-permitted, timestamps (TSval 0x1234), window scale 7 */
	static const uint8_t linux_opts[] = {2, 4, 0x05, 0x78, 4, 2, 8, 10, 0, 0, 0x12, 0x34, 0, 0, 0, 0, 1, 3, 3, 7};
	uint8_t f[200];
	struct out o, v[EH_KEEP];
	struct conn c;

	(void)state;
	for (unsigned i = 0; i < sizeof(cookie_data); i++)
		cookie_data[i] = (uint8_t)(i * 13 + (i >> 9));
	fill_echo_share(43000);
	o = cookie_syn(&c, 43100, linux_opts, sizeof(linux_opts));
	assert_true(o.o.mss_ok && o.o.sack_ok && o.o.ts_ok && o.o.ws_ok);
	assert_int_equal(o.o.mss, 1460);
	assert_int_equal(o.o.wscale, 0); /* ours, for 16 KiB buffers */
	assert_int_equal(o.o.tsecr, 0x1234);
	assert_int_equal(o.o.tsval & 0x3f, 7 | 0x10); /* its window scale, SACK-permitted */
	assert_int_equal(o.win, 16384);
	/* its ACK, with a window of 100 << 7: the connection is made */
	ack_all(&c, 100);
	assert_int_equal(S()->tcp_syncookies_validated, 1);
	assert_int_equal(S()->tcp_syncookies_failed, 0);
	assert_int_equal(S()->tcp_active, 1);
	assert_int_equal(S()->tcp_passive_opens, 1);
	assert_int_equal(S()->tcp_syn_rcvd, 4);
	assert_non_null(session_of(43100));
	/* 1460 bytes echoed at once (the window is 12800 only if scaled), with timestamps, in segments
	 * of the table's 1360 less 12 bytes of timestamps */
	feed(&c, RTE_TCP_ACK_FLAG | RTE_TCP_PSH_FLAG, c.pnxt, c.gnxt, 100, cookie_data, 1460);
	c.pnxt += 1460;
	assert_int_equal(echoed(&c, 1460, 1348, true), 2);
	c.gnxt += 1460;
	/* SACK was agreed: data ahead of a hole is SACKed */
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt + 1000, c.gnxt, 100, cookie_data, 100);
	o = one();
	assert_int_equal(o.ack, c.pnxt);
	assert_int_equal(o.o.n_sack, 1);
	assert_int_equal(o.o.sack[0].start, c.pnxt + 1000);

	/* no options at all: the SYN-ACK offers none but the MSS, the peer's MSS is 536 */
	o = cookie_syn(&c, 43101, NULL, 0);
	assert_true(o.o.mss_ok);
	assert_false(o.o.sack_ok || o.o.ts_ok || o.o.ws_ok);
	ack_all(&c, 65535);
	assert_int_equal(S()->tcp_syncookies_validated, 2);
	assert_int_equal(S()->tcp_active, 2);
	feed(&c, RTE_TCP_ACK_FLAG | RTE_TCP_PSH_FLAG, c.pnxt, c.gnxt, 65535, cookie_data, 1000);
	c.pnxt += 1000;
	assert_int_equal(echoed(&c, 1000, 536, false), 2);
	c.gnxt += 1000;
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt + 1000, c.gnxt, 65535, cookie_data, 100);
	o = one();
	assert_int_equal(o.o.n_sack, 0); /* no SACK without timestamps to carry it */

	/* window scale without timestamps: not offered (nothing would bring it back) */
	{
		static const uint8_t ws_only[] = {2, 4, 0x05, 0xb4, 1, 3, 3, 7};
		o = cookie_syn(&c, 43102, ws_only, sizeof(ws_only));
		assert_false(o.o.ws_ok || o.o.ts_ok || o.o.sack_ok);
		ack_all(&c, 100);
		assert_int_equal(S()->tcp_syncookies_validated, 3);
		feed(&c, RTE_TCP_ACK_FLAG | RTE_TCP_PSH_FLAG, c.pnxt, c.gnxt, 100, cookie_data, 1000);
		c.pnxt += 1000;
		assert_int_equal(sent(v, EH_KEEP), 1); /* a window of 100 bytes, unscaled */
		assert_int_equal(v[0].len, 100);
	}
	(void)f;
}

/* What a cookie does not let through: a wrong ACK number, another flow, a cookie from two slots
 * ago, an ACK without the timestamps the cookie was made with or with its option bits changed. A
 * listener that sent no cookie does not even look (a plain reset, nothing counted). */
static void test_syncookie_invalid(void **state)
{
	static const uint8_t ts_opts[] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0x12, 0x34, 0, 0, 0, 0, 1, 3, 3, 7};
	uint8_t f[200];
	struct conn c, c2;
	struct out o;

	(void)state;
	/* a stray ACK to a listener that never sent a cookie */
	eh_forget(&h);
	eh_feed(&h, f, eh_tcp_frame(f, 43300, EH_DISCARD_PORT, 5, 77, RTE_TCP_ACK_FLAG, 65535, NULL, 0, NULL, 0));
	eh_poll(&h);
	assert_int_equal(one().flags, RTE_TCP_RST_FLAG);
	assert_int_equal(S()->tcp_syncookies_failed, 0);

	fill_echo_share(43000);
	cookie_syn(&c, 43200, NULL, 0);
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt, c.gnxt + 1, 65535, NULL, 0); /* ACK number off by one */
	assert_int_equal(one().flags, RTE_TCP_RST_FLAG);
	assert_int_equal(S()->tcp_syncookies_failed, 1);
	c2 = c;
	c2.pport = 43201; /* the same cookie from another port */
	ack_all(&c2, 65535);
	assert_int_equal(one().flags, RTE_TCP_RST_FLAG);
	assert_int_equal(S()->tcp_syncookies_failed, 2);
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt + 1, c.gnxt, 65535, NULL, 0); /* another ISN than the SYN's */
	assert_int_equal(one().flags, RTE_TCP_RST_FLAG);
	assert_int_equal(S()->tcp_syncookies_failed, 3);
	assert_int_equal(S()->tcp_active, 0);
	/* a cookie is good for a slot and the next (64 to 128 s): 63 s later it still is */
	advance_s(63);
	ack_all(&c, 65535);
	assert_int_equal(S()->tcp_syncookies_validated, 1);
	assert_int_equal(S()->tcp_active, 1);

	/* 129 s later it is not, even while the listener sends cookies again */
	fill_echo_share(43010);
	cookie_syn(&c, 43202, NULL, 0);
	advance_s(129);
	eh_arp_hello(&h); /* (the peer's ARP entry aged out meanwhile) */
	fill_echo_share(43020);
	cookie_syn(&c2, 43203, NULL, 0);
	ack_all(&c, 65535);
	assert_int_equal(one().flags, RTE_TCP_RST_FLAG);
	assert_int_equal(S()->tcp_syncookies_failed, 4);
	assert_int_equal(S()->tcp_syncookies_validated, 1);

	/* made with timestamps: an ACK without them is dropped without a word (RFC 7323 3.2) */
	cookie_syn(&c, 43204, ts_opts, sizeof(ts_opts));
	c.ts = false;
	ack_all(&c, 65535);
	assert_int_equal(h.n_kept, 0);
	assert_int_equal(S()->tcp_syncookies_failed, 5);
	/* and with the option bits in TSecr changed (window scale 14 for 7), it is a forgery */
	c.ts = true;
	c.tsecr = (c.tsecr & ~0x3fu) | 14 | 0x10;
	ack_all(&c, 65535);
	assert_int_equal(one().flags, RTE_TCP_RST_FLAG);
	assert_int_equal(S()->tcp_syncookies_failed, 6);
	/* the genuine echo still works */
	c.tsecr = 0;
	o = cookie_syn(&c, 43205, ts_opts, sizeof(ts_opts));
	ack_all(&c, 65535);
	assert_int_equal(S()->tcp_syncookies_validated, 2);
	assert_non_null(session_of(43205));
	assert_int_equal(S()->tcp_active, 1); /* (the first one's keepalive gave up on its silent peer) */
	(void)o;
}

/* ACKs to invalid segments (Linux's tcp_invalid_ratelimit): one per 500 ms and connection for
 * segments without data; data is always answered; challenge ACKs share the limit, and the worker's
 * budget per second bounds them over all connections. */
static void test_invalid_ack_ratelimit(void **state)
{
	static const uint8_t junk[100];
	struct conn c = established_echo(41040), c2 = established_echo(41041), c3 = established_echo(41042);
	struct out v[16];
	uint64_t acks0;

	(void)state;
	/* five empty segments far outside the window in one burst: one ACK */
	eh_forget(&h);
	for (unsigned i = 0; i < 5; i++) {
		uint8_t f[200];
		eh_feed(&h, f, eh_tcp_frame(f, c.pport, c.gport, c.pnxt + (1u << 30), c.gnxt, RTE_TCP_ACK_FLAG, 65535,
					    NULL, 0, NULL, 0));
		eh_poll(&h);
	}
	assert_int_equal(sent(v, 16), 1);
	assert_int_equal(v[0].ack, c.pnxt);
	assert_int_equal(S()->tcp_out_of_window, 5);
	assert_int_equal(S()->tcp_acks_limited_conn, 4);
	/* still within 500 ms: none; then one again */
	eh_advance_ms(&h, 400);
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt + (1u << 30), c.gnxt, 65535, NULL, 0);
	assert_int_equal(h.n_kept, 0);
	eh_advance_ms(&h, 100);
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt + (1u << 30), c.gnxt, 65535, NULL, 0);
	assert_int_equal(one().ack, c.pnxt);
	assert_int_equal(S()->tcp_acks_limited_conn, 5);
	/* data out of the window: always answered (no ACK loop; it cost the sender as much) */
	for (unsigned i = 0; i < 3; i++) {
		feed(&c, RTE_TCP_ACK_FLAG, c.pnxt + (1u << 30), c.gnxt, 65535, junk, sizeof(junk));
		assert_int_equal(one().ack, c.pnxt);
	}
	assert_int_equal(S()->tcp_acks_limited_conn, 5);
	assert_int_equal(S()->tcp_bytes_in, 0);
	/* an ACK of what we never sent, and PAWS (an old timestamp): the same limit */
	eh_advance_ms(&h, 500);
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt, c.gnxt + 5000, 65535, NULL, 0);
	assert_int_equal(one().ack, c.pnxt);
	c.tsval -= 1000; /* (one byte into the window: an ACK at rcv_nxt would be let through) */
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt + 1, c.gnxt, 65535, NULL, 0);
	assert_int_equal(h.n_kept, 0);
	assert_int_equal(S()->tcp_paws_drops, 1);
	assert_int_equal(S()->tcp_acks_limited_conn, 6);
	c.tsval += 2000;
	/* RFC 5961: a SYN in the window earns a challenge ACK, an inexact RST right after does not */
	eh_advance_ms(&h, 500);
	acks0 = S()->tcp_challenge_acks;
	feed(&c, RTE_TCP_SYN_FLAG, c.pnxt + 10, 0, 65535, NULL, 0);
	assert_int_equal(one().ack, c.pnxt);
	feed(&c, RTE_TCP_RST_FLAG, c.pnxt + 10, 0, 65535, NULL, 0);
	assert_int_equal(h.n_kept, 0);
	assert_int_equal(S()->tcp_challenge_acks, acks0 + 1);
	assert_int_equal(S()->tcp_acks_limited_conn, 7);
	assert_int_equal(S()->tcp_active, 3);
	/* the worker's budget: with one challenge ACK left this second, the second connection's goes,
	 * the third's does not; the next second has a new budget (500 to 1499) */
	h.st->chall_sec = h.st->now_ms / 1000;
	h.st->chall_left = 1;
	feed(&c2, RTE_TCP_SYN_FLAG, c2.pnxt + 10, 0, 65535, NULL, 0);
	assert_int_equal(one().ack, c2.pnxt);
	feed(&c3, RTE_TCP_SYN_FLAG, c3.pnxt + 10, 0, 65535, NULL, 0);
	assert_int_equal(h.n_kept, 0);
	assert_int_equal(S()->tcp_acks_limited_worker, 1);
	assert_int_equal(S()->tcp_challenge_acks, acks0 + 2);
	eh_advance_ms(&h, 1000);
	feed(&c3, RTE_TCP_SYN_FLAG, c3.pnxt + 10, 0, 65535, NULL, 0);
	assert_int_equal(one().ack, c3.pnxt);
	assert_true(h.st->chall_left >= 499 && h.st->chall_left < 1499);
	/* the connections took nothing from all this: they still echo */
	peer_data(&c, junk, 10, 0);
	assert_int_equal(one().len, 10);
	assert_int_equal(S()->tcp_active, 3);
}

/* Out-of-order data does not stay forever: a byte ahead of a hole that the sender never fills is
 * dropped after 4 RTOs (2 s at least) and no longer SACKed, and the buffer it held is given back;
 * a hole that moves keeps its ranges, but never past 60 s. */
static void test_ooo_expiry(void **state)
{
	static uint8_t data[1400];
	struct conn c;
	struct out o;

	(void)state;
	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 3 + 1);
	open_conn(&c, 41050, EH_DISCARD_PORT, true);
	assert_int_equal(S()->tcp_buffer_bytes, 0);
	/* one byte 12000 bytes ahead: SACKed, and it takes the buffer's chunks up to it */
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt + 12000, c.gnxt, 65535, data, 1);
	o = one();
	assert_int_equal(o.ack, c.pnxt);
	assert_int_equal(o.o.n_sack, 1);
	assert_int_equal(o.o.sack[0].start, c.pnxt + 12000);
	assert_int_equal(S()->tcp_buffer_bytes, 2 * 8192);
	for (unsigned i = 0; i < 19; i++)
		eh_advance_ms(&h, 100); /* 1.9 s: the RTO is 200 ms here, the bound 2 s */
	assert_int_equal(S()->tcp_ooo_expired, 0);
	assert_int_equal(S()->tcp_buffer_bytes, 2 * 8192);
	eh_advance_ms(&h, 100);
	eh_advance_ms(&h, 100);
	assert_int_equal(S()->tcp_ooo_expired, 1);
	assert_int_equal(S()->tcp_buffer_bytes, 0);
	/* the byte is not taken when the hole fills (the sender sends it again), and no longer SACKed */
	for (unsigned k = 0; k < 12000 / 1200; k++) {
		feed(&c, RTE_TCP_ACK_FLAG, c.pnxt, c.gnxt, 65535, data, 1200);
		c.pnxt += 1200;
	}
	o = one(); /* (every second segment is acknowledged at once) */
	assert_int_equal(o.ack, c.pnxt);
	assert_int_equal(o.o.n_sack, 0);
	assert_int_equal(S()->tcp_bytes_in, 12000);
	peer_data(&c, data, 1, 0);
	assert_int_equal(S()->tcp_bytes_in, 12001);
	eh_advance_ms(&h, 100); /* (its delayed ACK) */

	/* a moving hole keeps its ranges: 100 bytes in order every 1.5 s, one byte 8000 ahead */
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt + 8000, c.gnxt, 65535, data, 1);
	for (unsigned k = 0; k < 39; k++) {
		for (unsigned i = 0; i < 15; i++)
			eh_advance_ms(&h, 100);
		peer_data(&c, data, 100, 0);
		o = one();
		assert_int_equal(o.o.n_sack, 1);
		assert_int_equal(o.o.sack[0].start, c.pnxt + 8000 - 100 * (k + 1));
	}
	assert_int_equal(S()->tcp_ooo_expired, 1); /* 58.5 s */
	for (unsigned i = 0; i < 20; i++)
		eh_advance_ms(&h, 100);
	assert_int_equal(S()->tcp_ooo_expired, 2); /* 60.5 s: too old, however the hole moved */
	peer_data(&c, data, 100, 0);
	eh_advance_ms(&h, 100); /* (a delayed ACK: no hole any more) */
	assert_int_equal(one().o.n_sack, 0);
	assert_int_equal(S()->tcp_active, 1);
}

/* keepalive 20 s, then probes every 2 s; 3 unanswered probes end the connection. */
static void test_keepalive(void **state)
{
	struct conn c = established_echo(41020);
	struct out o;

	(void)state;
	eh_forget(&h);
	eh_advance_ms(&h, 19000);
	assert_int_equal(h.n_kept, 0);
	eh_advance_ms(&h, 1500);
	o = one();
	assert_int_equal(o.seq, c.gnxt - 1); /* an old byte: the peer must answer */
	assert_int_equal(o.len, 0);
	assert_int_equal(S()->tcp_keepalive_probes, 1);
	ack_all(&c, 65535); /* the peer answers: idle again */
	eh_forget(&h);
	eh_advance_ms(&h, 19000);
	assert_int_equal(h.n_kept, 0);
	eh_advance_ms(&h, 1500);
	assert_int_equal(S()->tcp_keepalive_probes, 2);
	for (unsigned i = 0; i < 3; i++)
		eh_advance_ms(&h, 2100); /* the peer is gone */
	assert_int_equal(S()->tcp_keepalive_probes, 4);
	assert_int_equal(S()->tcp_timeouts, 1);
	assert_int_equal(S()->tcp_active, 0);
	assert_int_equal(S()->tcp_rsts_out, 1);
	assert_null(session_of(41020)); /* the session saw the close and released the stream */
}

/* The peer closes its window: we probe it (persist, backing off), never give up while it answers,
 * and send the data once it opens. */
static void test_persist(void **state)
{
	static uint8_t blob[5000];
	struct conn c = established_echo(41030);
	struct eh_session *se = session_of(41030);
	struct out v[16];
	unsigned n, probes = 0;
	uint32_t got = 0;

	(void)state;
	ack_all(&c, 0);
	assert_int_equal(S()->tcp_zero_window_rcvd, 1);
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	assert_int_equal(h.n_kept, 0); /* nothing fits a zero window */
	for (unsigned i = 0; i < 40; i++) {
		eh_forget(&h);
		eh_advance_ms(&h, 250);
		n = sent(v, 16);
		for (unsigned k = 0; k < n; k++) {
			assert_int_equal(v[k].len, 0); /* only probes */
			assert_int_equal(v[k].seq, c.gnxt - 1);
			probes++;
		}
		if (n)
			ack_all(&c, 0); /* still closed, but answering */
	}
	/* 10 s of probing with backoff from the 200 ms floor: 200, 400, 800, 1600, 3200 ms... */
	assert_true(probes >= 4 && probes <= 8);
	assert_int_equal(S()->tcp_active, 1);
	/* the window opens: the data goes */
	ack_all(&c, 65535);
	n = sent(v, 16);
	for (unsigned k = 0; k < n; k++) {
		assert_int_equal(v[k].seq, c.gnxt + got);
		got += v[k].len;
	}
	assert_int_equal(got, sizeof(blob));
}

/* The peer's window stays open but small (1024 bytes, after it once offered 8 MiB), its reader
 * slow: sender SWS avoidance holds the runt back and nothing is in flight, so the persist timer's
 * override (RFC 9293 3.8.6.2.1) sends what fits each time, and every byte gets there. Probing
 * alone, answered every time, never sent a byte (the bytes lent from an IB ring stayed held). */
static void test_small_window_override(void **state)
{
	static uint8_t blob[7000];
	struct conn c = established_echo(41035);
	struct eh_session *se = session_of(41035);
	struct out v[16];
	uint32_t got = 0;

	(void)state;
	for (unsigned i = 0; i < sizeof(blob); i++)
		blob[i] = (uint8_t)(i * 7 + 3);
	ack_all(&c, 8); /* 1024 bytes: the window scale is 7 */
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, 4000), 4000);
	eh_poll(&h);
	for (unsigned i = 0; i < 60 && got < 4000; i++) {
		unsigned n = sent(v, 16);
		for (unsigned k = 0; k < n; k++) {
			if (!v[k].len)
				continue; /* (a probe, not data) */
			assert_int_equal(v[k].seq, c.gnxt);
			assert_true(v[k].len <= 1024);
			assert_memory_equal(v[k].data, blob + got, v[k].len);
			got += v[k].len;
			c.gnxt += v[k].len;
		}
		eh_forget(&h);
		if (n)
			ack_all(&c, 8); /* everything taken, 1024 bytes of window again */
		eh_advance_ms(&h, 1000);
	}
	assert_int_equal(got, 4000);
	assert_int_equal(S()->tcp_active, 1);
}

/* A listener whose connections start with part of their receive buffer (rbuf_start: an accept_proxy
 * route's, while the PROXY header is awaited): the SYN-ACK offers that part, data beyond it is
 * dropped, not held (a client sending a header's start and then out-of-order data used to pin the
 * route's whole buffer), and eth_tcp_open_window offers the rest with a window update. */
static void test_start_window(void **state)
{
	static const uint8_t syn_opts[] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7};
	struct eth_tcp_params p = {
	    .rbuf_size = 1u << 20, .rbuf_start = 4096, .sbuf_size = 16384, .connect_timeout_ms = 5000};
	uint8_t ws = eth_tcp_wscale_for(p.rbuf_size);
	static uint8_t blob[1000];
	struct eh_session *se;
	struct conn c;
	struct out o;

	(void)state;
	assert_int_equal(eth_tcp_listen(h.st, 17, &p, &eh_discard_tok), 0);
	h.listener_refs++;
	open_conn_with(&c, 41500, 17, syn_opts, sizeof(syn_opts), true, 65535);
	assert_int_equal(c.syn_win, 4096);
	se = session_of(41500);
	se->paused = 1; /* (what arrives stays in the buffer) */
	/* past the first 4096 bytes: dropped; within: kept out of order */
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt + 5000, c.gnxt, 65535, blob, sizeof(blob));
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt + 1000, c.gnxt, 65535, blob, sizeof(blob));
	peer_data(&c, blob, 1000, 0);
	o = one();
	assert_int_equal(o.ack, c.pnxt + 1000); /* [1000, 2000) joined, [5000, 6000) gone */
	assert_true(((uint32_t)o.win << ws) < 4096 - 2000 + (1u << ws)); /* (rounded up: never shrunk) */
	/* the whole buffer, announced */
	eh_forget(&h);
	eth_tcp_open_window(se->s);
	eh_poll(&h);
	o = one();
	assert_int_equal(o.ack, c.pnxt + 1000);
	assert_true(((uint32_t)o.win << ws) >= (1u << 20) - 2000 - (1u << ws));
	feed(&c, RTE_TCP_ACK_FLAG, c.pnxt + 4000, c.gnxt, 65535, blob, sizeof(blob));
	c.pnxt += 1000;
	for (unsigned i = 0; i < 3; i++)
		peer_data(&c, blob, sizeof(blob), 0);
	o = one();
	assert_int_equal(o.ack, c.pnxt + 1000); /* [5000, 6000) kept this time */
	assert_int_equal(eth_tcp_unlisten(h.st, 17), 0);
}

/* A peer that fills the window in segments of odd sizes (not multiples of 2^wscale) while the
 * session does not read: every byte up to each edge announced is taken and acknowledged, down to a
 * zero window. A window rounded up past the free space used to drop the last few bytes unanswered:
 * the sender waited for its retransmission timer, backed off over a lossy link. */
static void test_window_edge_fits(void **state)
{
	static const uint8_t syn_opts[] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7};
	struct eth_tcp_params p = {.rbuf_size = 256u << 10, .sbuf_size = 16384, .connect_timeout_ms = 5000};
	uint8_t ws = eth_tcp_wscale_for(p.rbuf_size);
	static uint8_t blob[1001];
	struct eh_session *se;
	struct conn c;
	uint32_t edge, end, sent_bytes = 0;
	unsigned rounds = 0;

	(void)state;
	assert_true(ws >= 2); /* (else every size is a multiple of the scale) */
	assert_int_equal(eth_tcp_listen(h.st, 18, &p, &eh_discard_tok), 0);
	h.listener_refs++;
	open_conn_with(&c, 41510, 18, syn_opts, sizeof(syn_opts), true, 65535);
	se = session_of(41510);
	se->paused = 1;
	edge = c.pnxt + c.syn_win;
	end = c.pnxt + (256u << 10); /* (the buffer's end: nothing is read) */
	for (;;) {
		struct out v[8];
		unsigned n;
		uint32_t len = edge - c.pnxt < sizeof(blob) ? edge - c.pnxt : sizeof(blob);

		if (!len)
			break;
		peer_data(&c, blob, len, 0);
		sent_bytes += len;
		eh_advance_ms(&h, 50); /* (a delayed ACK) */
		n = sent(v, 8);
		if (n) {
			/* an edge may come back by less than the scale, never move past what it took */
			assert_true(eth_seq_leq(v[n - 1].ack + ((uint32_t)v[n - 1].win << ws), end));
			if (eth_seq_gt(v[n - 1].ack + ((uint32_t)v[n - 1].win << ws), edge))
				edge = v[n - 1].ack + ((uint32_t)v[n - 1].win << ws);
			assert_int_equal(v[n - 1].ack, c.pnxt); /* all of it taken */
		}
		assert_true(++rounds < 1000);
	}
	assert_int_equal(S()->tcp_bytes_in, sent_bytes);
	assert_true(sent_bytes > (256u << 10) - (1u << ws)); /* the whole buffer, to the scale */
	assert_int_equal(eth_tcp_unlisten(h.st, 18), 0);
}

/* The peer sends N bytes in order, in segments of 1400 at most. */
static void peer_sends(struct conn *c, unsigned n)
{
	static uint8_t blob[1400];

	for (unsigned done = 0; done < n;) {
		size_t len = n - done < sizeof(blob) ? n - done : sizeof(blob);
		peer_data(c, blob, len, 0);
		done += (unsigned)len;
	}
}

/* Paused session SE reads again and takes what it holds; the frames sent from then on are kept. */
static void session_resumes(struct eh_session *se)
{
	se->paused = 0;
	eh_forget(&h);
	se->s->ops->consume(se->s, 0);
	eh_on_readable(se);
	eh_poll(&h);
}

/* A session that stops reading: the advertised window closes (counted once), and opens again. */
static void test_zero_window_sent(void **state)
{
	static uint8_t blob[1400];
	struct conn c = established_echo(41040);
	struct eh_session *se = session_of(41040);
	struct out o = {0};

	(void)state;
	se->paused = 1;
	peer_sends(&c, 16384);
	eh_advance_ms(&h, 50); /* a delayed ACK, if one was owed */
	{
		struct out v[8];
		unsigned n = sent(v, 8); /* since the last segment fed */
		assert_true(n > 0);
		o = v[n - 1];
	}
	assert_int_equal(o.win, 0);
	assert_int_equal(o.ack, c.pnxt);
	assert_int_equal(S()->tcp_zero_window_sent, 1);
	/* a byte beyond the window is not taken */
	peer_data(&c, blob, 1, 0);
	c.pnxt--;
	assert_int_equal(S()->tcp_bytes_in, 16384);
	/* the session reads: a window update goes out at once */
	session_resumes(se);
	{
		struct out v[32];
		unsigned n = sent(v, 32);
		assert_true(n > 0);
		assert_true(v[n - 1].win > 0);
	}
	assert_int_equal(S()->tcp_zero_window_sent, 1);
}


/* The window update that opens a shut window is lost: it goes again after an RTO, then twice more,
 * doubled; once the peer sends, no more. (The old code sent it once: the peer waited for its next
 * zero-window probe, backed off while the window was shut.) */
static void test_window_update_again(void **state)
{
	static const uint8_t syn_opts[] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7};
	struct eth_tcp_params p = {.rbuf_size = 16384, .sbuf_size = 16384, .connect_timeout_ms = 5000};
	static uint8_t blob[1400];
	struct eh_session *se;
	struct conn c;
	struct out v[8];
	unsigned n, at[4], k = 0;

	(void)state;
	/* (a discard session: it sends nothing, so the update is a bare ACK) */
	assert_int_equal(eth_tcp_listen(h.st, 19, &p, &eh_discard_tok), 0);
	h.listener_refs++;
	open_conn_with(&c, 41042, 19, syn_opts, sizeof(syn_opts), true, 65535);
	se = session_of(41042);
	se->paused = 1;
	peer_sends(&c, 16384);
	eh_advance_ms(&h, 50);
	assert_int_equal(S()->tcp_zero_window_sent, 1);
	session_resumes(se);
	n = sent(v, 8);
	assert_true(n > 0 && v[n - 1].win > 0); /* the update, lost */
	for (unsigned ms = 0; ms < 10000; ms += 10) {
		eh_forget(&h);
		eh_advance_ms(&h, 10);
		n = sent(v, 8);
		for (unsigned i = 0; i < n; i++)
			if (!v[i].len && v[i].win > 0 && v[i].ack == c.pnxt && k < 4)
				at[k++] = ms + 10;
	}
	assert_int_equal(k, 3); /* (the RTO: 200 ms, the floor, from the handshake's round trip) */
	assert_true(at[0] >= 200 && at[0] <= 300);
	assert_true(at[1] - at[0] >= 400 && at[1] - at[0] <= 500);
	assert_true(at[2] - at[1] >= 800 && at[2] - at[1] <= 900);
	/* shut and opened again, and the peer sends at once: nothing more */
	se->paused = 1;
	peer_sends(&c, 16384);
	eh_advance_ms(&h, 50);
	assert_int_equal(S()->tcp_zero_window_sent, 2);
	session_resumes(se);
	peer_data(&c, blob, 100, 0);
	eh_advance_ms(&h, 50);
	eh_forget(&h);
	for (unsigned ms = 0; ms < 10000; ms += 100) {
		eh_advance_ms(&h, 100);
		assert_int_equal(sent(v, 8), 0);
	}
	assert_int_equal(eth_tcp_unlisten(h.st, 19), 0);
}

/* OPT (timestamps + one SACK block, 24 bytes): the I-th timestamp, SACK [S, E). */
static void sack_opt(uint8_t opt[24], unsigned i, uint32_t s, uint32_t e)
{
	opt[16] = (uint8_t)(s >> 24), opt[17] = (uint8_t)(s >> 16), opt[18] = (uint8_t)(s >> 8), opt[19] = (uint8_t)s;
	opt[20] = (uint8_t)(e >> 24), opt[21] = (uint8_t)(e >> 16), opt[22] = (uint8_t)(e >> 8), opt[23] = (uint8_t)e;
	opt[7] = (uint8_t)(10 + i);
}

/* Three duplicate ACKs with SACK: fast retransmit of the first segment, then the next hole. */
static void test_fast_retransmit_sack(void **state)
{
	static uint8_t blob[8 * 1448];
	struct conn c = established_echo(41050);
	struct eh_session *se = session_of(41050);
	uint8_t f[200], opt[12 + 12] = {1, 1, 8, 10, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 5, 10};
	struct out o, v[16];
	unsigned n;

	(void)state;
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	n = sent(v, 16);
	assert_int_equal(n, 8); /* the initial window holds all of it */
	for (unsigned i = 0; i < 3; i++) {
		/* segment 0 lost: SACK [1, 1 + i] */
		sack_opt(opt, i, c.gnxt + 1448, c.gnxt + 1448 * (2 + i));
		eh_forget(&h);
		eh_feed(&h, f, eh_tcp_frame(f, c.pport, c.gport, c.pnxt, c.gnxt, RTE_TCP_ACK_FLAG, 65535, opt, 24, NULL, 0));
		eh_poll(&h);
	}
	assert_int_equal(S()->tcp_fast_retransmits, 1);
	o = one();
	assert_int_equal(o.seq, c.gnxt);
	assert_int_equal(o.len, 1448);
	assert_int_equal(S()->tcp_retransmits, 1);
	assert_int_equal(S()->tcp_rto_expiries, 0);
	/* everything acknowledged: recovery over, nothing left in flight */
	c.gnxt += sizeof(blob);
	ack_all(&c, 65535);
	eh_forget(&h);
	eh_advance_ms(&h, 5000);
	assert_int_equal(S()->tcp_rto_expiries, 0);
}

/* The same loss while the peer sends too (an echo client): its ACKs ride on data and its window
 * moves, yet each SACKs something new, so they count as duplicates (RFC 6675) and the hole goes
 * at once instead of after a retransmission timeout. */
static void test_fast_retransmit_sack_on_data(void **state)
{
	static uint8_t blob[8 * 1448], msg[100];
	struct conn c;
	struct eh_session *se;
	uint8_t f[400], opt[12 + 12] = {1, 1, 8, 10, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 5, 10};
	struct out v[16];
	unsigned n, resent = 0;

	(void)state;
	open_conn(&c, 41051, EH_DISCARD_PORT, true);
	se = session_of(41051);
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	assert_int_equal(sent(v, 16), 8);
	for (unsigned i = 0; i < 3; i++) {
		/* segment 0 lost: SACK [1, 1 + i], on 100 bytes of data, the window one larger each time */
		sack_opt(opt, i, c.gnxt + 1448, c.gnxt + 1448 * (2 + i));
		eh_forget(&h);
		eh_feed(&h, f,
			eh_tcp_frame(f, c.pport, c.gport, c.pnxt, c.gnxt, RTE_TCP_ACK_FLAG | RTE_TCP_PSH_FLAG,
				     (uint16_t)(60000 + i), opt, 24, msg, sizeof(msg)));
		c.pnxt += sizeof(msg);
		eh_poll(&h);
	}
	assert_int_equal(S()->tcp_fast_retransmits, 1);
	n = sent(v, 16);
	for (unsigned i = 0; i < n; i++)
		resent += v[i].seq == c.gnxt && v[i].len == 1448;
	assert_int_equal(resent, 1);
	assert_int_equal(S()->tcp_rto_expiries, 0);
}

/* The data segments kept since the last eh_forget: their count, each checked to follow the last
 * from *SEQ (advanced past them) with a full segment of SEG bytes. */
static unsigned data_frames(uint32_t *seq, uint32_t seg)
{
	static struct out v[EH_KEEP];
	unsigned n = 0, k = sent(v, EH_KEEP);

	for (unsigned i = 0; i < k; i++) {
		if (!v[i].len)
			continue;
		assert_int_equal(v[i].seq, *seq);
		assert_int_equal(v[i].len, seg);
		*seq += v[i].len;
		n++;
	}
	return n;
}

/* An echo connection from PPORT whose session writes 80 segments at once: the first flight (the
 * initial window, 10) is checked, *SEQ follows it. */
static struct conn bulk_flight(uint16_t pport, uint32_t *seq)
{
	static uint8_t blob[80 * 1448];
	struct conn c = established_echo(pport);
	struct eh_session *se = session_of(pport);

	*seq = c.gnxt;
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	assert_int_equal(data_frames(seq, 1448), 10);
	return c;
}

/* Slow start against a receiver that coalesces segments (GRO, LRO: Linux then acknowledges a whole
 * burst at once): every byte acknowledged counts, so the window doubles each round trip, 10, 20, 40
 * segments; RFC 3465's L = 2 would give 10, 12, 14. */
static void test_slow_start_stretch_acks(void **state)
{
	uint32_t seq;
	struct conn c = bulk_flight(41060, &seq);

	(void)state;
	for (unsigned want = 20; want <= 40; want *= 2) {
		c.gnxt = seq;
		ack_all(&c, 65535); /* one ACK for the whole flight: the next one goes at once */
		assert_int_equal(data_frames(&seq, 1448), want);
	}
	c.gnxt = seq;
	ack_all(&c, 65535);
	assert_int_equal(data_frames(&seq, 1448), 10); /* what was left */
	c.gnxt = seq;
	ack_all(&c, 65535);
	assert_int_equal(S()->tcp_retransmits, 0);
}

/* A sender its source holds back (here one segment at a time: the IB side's credits, on a gateway)
 * keeps its initial window, however many ACKs come (RFC 7661): when the source then has plenty, 10
 * segments go, not the 40 that counting each ACK of the slow phase would have allowed at once. */
static void test_cwnd_app_limited(void **state)
{
	static uint8_t blob[40 * 1448];
	struct conn c = established_echo(41061);
	struct eh_session *se = session_of(41061);
	uint32_t seq = c.gnxt;

	(void)state;
	for (unsigned i = 0; i < 30; i++) {
		eh_forget(&h);
		assert_int_equal(se->s->ops->write(se->s, blob, 1448), 1448);
		eh_poll(&h);
		assert_int_equal(data_frames(&seq, 1448), 1);
		c.gnxt = seq;
		ack_all(&c, 65535);
	}
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	assert_int_equal(data_frames(&seq, 1448), 10);
	/* and it grows from there once the window is what limits it */
	c.gnxt = seq;
	ack_all(&c, 65535);
	assert_int_equal(data_frames(&seq, 1448), 20);
	c.gnxt = seq;
	ack_all(&c, 65535);
	assert_int_equal(data_frames(&seq, 1448), 10);
	c.gnxt = seq;
	ack_all(&c, 65535);
}

/* The delayed ACKs of a whole flight handled in one RX burst (the worker napped, or they came back
 * to back): nothing can go out between them, so the flight each finds shrinks, yet the window was
 * what limited the sender: it still doubles (10, then 20 segments; measured by the flight as each
 * ACK found it, it grew to 14). */
static void test_slow_start_batched_acks(void **state)
{
	uint32_t seq;
	struct conn c = bulk_flight(41063, &seq);

	(void)state;
	eh_forget(&h);
	for (unsigned i = 1; i <= 5; i++)
		feed_unpolled(&c, RTE_TCP_ACK_FLAG, c.pnxt, c.gnxt + i * 2 * 1448, 65535, NULL, 0);
	eh_poll(&h);
	c.gnxt = seq;
	assert_int_equal(data_frames(&seq, 1448), 20);
	c.gnxt = seq;
	ack_all(&c, 65535);
	assert_int_equal(data_frames(&seq, 1448), 40);
	assert_int_equal(S()->tcp_retransmits, 0);
}

/* After a timeout the retransmitted first segment may be all the peer lacked: its ACK then covers
 * the whole flight. Slow start grows one segment for that ACK (RFC 3465 2.3), so 2 segments follow,
 * not the 5 (ssthresh, half the flight) that counting every byte acknowledged would send at once;
 * once past the hole, every byte counts again (2, then 4). */
static void test_slow_start_after_rto(void **state)
{
	uint32_t seq;
	struct conn c = bulk_flight(41064, &seq);
	uint32_t first = seq - 10 * 1448;
	struct out v[4];

	(void)state;
	eh_forget(&h);
	eh_advance_ms(&h, 3000);
	assert_int_equal(S()->tcp_rto_expiries, 1);
	assert_int_equal(sent(v, 4), 1);
	assert_int_equal(v[0].seq, first);
	assert_int_equal(v[0].len, 1448);
	c.gnxt = seq; /* the peer held segments 2 to 10: all of it is acknowledged at once */
	ack_all(&c, 65535);
	assert_int_equal(data_frames(&seq, 1448), 2);
	c.gnxt = seq;
	ack_all(&c, 65535);
	assert_int_equal(data_frames(&seq, 1448), 4);
}

/* Feeds a SYN (sequence number SEQ) from SRC:SPORT to DST:DPORT (IPv4, network order) and polls. */
/* A segment (FLAGS, SEQ, ACK; the IPv4 header's fragment field FRAG) from SRC:SPORT to DST:DPORT. */
static void feed_seg_between(uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport, uint32_t seq, uint32_t ack,
                             uint8_t flags, uint16_t frag)
{
	uint8_t f[200];
	size_t n = eh_tcp_frame(f, sport, dport, seq, ack, flags, 65535, NULL, 0, NULL, 0);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + RTE_ETHER_HDR_LEN);
	struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)(ip + 1);

	ip->src_addr = src;
	ip->dst_addr = dst;
	ip->fragment_offset = rte_cpu_to_be_16(frag);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	th->cksum = 0;
	th->cksum = rte_ipv4_udptcp_cksum(ip, th);
	eh_forget(&h);
	eh_feed(&h, f, n);
	eh_poll(&h);
}

static void feed_syn_between(uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport, uint32_t seq)
{
	feed_seg_between(src, sport, dst, dport, seq, 0, RTE_TCP_SYN_FLAG, 0);
}

/* A segment the other gateway of a pair passed here (marked: the IPv4 header's reserved bit) for a VIP
 * that left this gateway, matching no connection here either: dropped and counted, not punted to
 * the kernel behind the TAP (which would only reset it; a flood of them took the kernel's share). An
 * unmarked one is punted as before (no flow peer here to pass it to). */
static void test_flow_peer_unmatched(void **state)
{
	struct eth_local_set ls = {.gen = 1, .n = 1};
	uint64_t k0 = S()->exc_to_kernel;

	(void)state;
	ls.a[0].addr = xlt_ip_v4(EH_GW_IP2); /* a VIP that left the TAP (GONE) */
	ls.a[0].state = ETH_LOCAL_GONE;
	eth_stack_set_locals(h.st, &ls);
	for (int marked = 1; marked >= 0; marked--) {
		feed_seg_between(EH_PEER_IP, 40777, EH_GW_IP2, EH_ECHO_PORT, 1000, 2000, RTE_TCP_ACK_FLAG,
		                 marked ? 0x8000 : 0);
		assert_int_equal(S()->flow_peer_unmatched, 1);
		assert_int_equal(S()->exc_to_kernel, k0 + !marked);
	}
	/* the same on a port nobody listens on, as every port of a draining gateway (it closed its
	 * listeners; the segments were punted to its kernel), and a marked reset */
	feed_seg_between(EH_PEER_IP, 40778, EH_GW_IP2, 4444, 1000, 2000, RTE_TCP_ACK_FLAG, 0x8000);
	feed_seg_between(EH_PEER_IP, 40779, EH_GW_IP2, 4444, 1000, 2000, RTE_TCP_RST_FLAG | RTE_TCP_ACK_FLAG,
	                 0x8000);
	assert_int_equal(S()->flow_peer_unmatched, 3);
	assert_int_equal(S()->exc_to_kernel, k0 + 1);
	assert_int_equal(h.n_kept, 0);
	eth_stack_set_locals(h.st, NULL);
}

/* A half-open connection on a VIP with a flow peer (one spoofed SYN with the 4-tuple of a connection
 * the other gateway still drains) does not take that connection's segments: one that is no part of
 * its handshake goes on to the flow peer (it stalled the connection: the half-open one answered
 * with duplicate ACKs and dropped it); the handshake's own ACK completes it as before. */
static void test_flow_peer_syn_rcvd(void **state)
{
	struct eth_local_set ls = {.gen = 1, .n = 1};
	struct out o;
	uint32_t iss;

	(void)state;
	ls.a[0].addr = xlt_ip_v4(EH_GW_IP2); /* the VIP, here now */
	ls.a[0].state = ETH_LOCAL_UP;
	eth_stack_set_locals(h.st, &ls);
	h.st->c.flow_peer = RTE_BE32(0xc6120003u); /* 198.18.0.3 */
	feed_syn_between(EH_PEER_IP, 41900, EH_GW_IP2, EH_ECHO_PORT, 5000);
	o = one();
	assert_int_equal(o.flags, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG);
	iss = o.seq;
	assert_int_equal(S()->tcp_syn_rcvd, 1);
	/* (a segment of no connection here at all goes there too) */
	feed_seg_between(EH_PEER_IP, 41901, EH_GW_IP2, EH_ECHO_PORT, 1000, 2000, RTE_TCP_ACK_FLAG, 0);
	assert_int_equal(S()->flow_peer_out, 1);
	for (int own = 0; own < 2; own++) {
		/* the drained connection's segment (other sequence numbers), then the handshake's ACK */
		feed_seg_between(EH_PEER_IP, 41900, EH_GW_IP2, EH_ECHO_PORT, own ? 5001 : 900000,
		                 own ? iss + 1 : 700000, RTE_TCP_ACK_FLAG, 0);
		assert_int_equal(S()->flow_peer_out, 2);
		assert_int_equal(S()->tcp_syn_rcvd, !own);
	}
	eh_forget(&h);
	h.st->c.flow_peer = 0;
	eth_stack_set_locals(h.st, NULL);
}

/* A SYN from a peer's address and port to another of our addresses, on the same port, is another
 * connection: it must not hide the one the peer has with our first address (the lookup once matched
 * on ports and the peer's address only, and the new block, first in its chain, then swallowed every
 * segment of the old one, which got resets). Spoofing that SYN takes no sequence number. */
static void test_syn_to_other_address(void **state)
{
	static const uint8_t msg[] = "still mine";
	struct eth_local_set ls = {.gen = 1, .n = 1};
	struct conn c = established_echo(41065);
	struct out o;

	(void)state;
	ls.a[0].addr = xlt_ip_v4(EH_GW_IP2); /* a second address of ours */
	ls.a[0].state = ETH_LOCAL_UP;
	eth_stack_set_locals(h.st, &ls);
	/* the spoofed SYN: the peer's address and port, to 198.18.0.9:7 */
	feed_syn_between(EH_PEER_IP, c.pport, EH_GW_IP2, c.gport, 12345);
	o = one();
	assert_int_equal(o.flags, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG); /* (from 198.18.0.9) */
	assert_int_equal(o.ack, 12346);
	/* the first connection still echoes */
	peer_data(&c, msg, sizeof(msg), 0);
	o = one();
	assert_int_equal(o.flags & RTE_TCP_RST_FLAG, 0);
	assert_int_equal(o.len, sizeof(msg));
	assert_memory_equal(o.data, msg, sizeof(msg));
	eth_stack_set_locals(h.st, NULL);
}

/* A peer announcing an MSS below 12 with timestamps gets the smallest segments (64 bytes), not an
 * MSS wrapped past 65000 (frames far beyond the MTU, their IP length wrapped). */
static void test_tiny_mss_with_timestamps(void **state)
{
	static const uint8_t syn_opts[] = {2, 4, 0, 5, 1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0};
	static uint8_t blob[1000];
	struct conn c;
	struct out v[16];
	unsigned n;

	(void)state;
	open_conn_with(&c, 41066, EH_ECHO_PORT, syn_opts, sizeof(syn_opts), true, 65535);
	eh_forget(&h);
	assert_int_equal(session_of(41066)->s->ops->write(session_of(41066)->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	n = sent(v, 16);
	assert_true(n >= 1);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(v[i].len, 64);
}

/* An MSS option of 0 limits the segments to the default 536 bytes, as no option does (and as the SYN
 * cookie path reads it), not to the MTU. */
static void test_zero_mss(void **state)
{
	static const uint8_t syn_opts[] = {2, 4, 0, 0};
	static uint8_t blob[3000];
	struct conn c;
	struct out v[16];
	unsigned n;

	(void)state;
	open_conn_with(&c, 41067, EH_ECHO_PORT, syn_opts, sizeof(syn_opts), true, 65535);
	eh_forget(&h);
	assert_int_equal(session_of(41067)->s->ops->write(session_of(41067)->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	n = sent(v, 16);
	assert_true(n >= 2);
	for (unsigned i = 0; i < n; i++)
		assert_true(v[i].len <= 536);
}

/* Fast retransmit resends what was sent, never bytes beyond snd_max: here the peer's window held
 * 100 bytes, 10000 wait, and three duplicate ACKs bring the 100 again, not a full segment that
 * reaches past the window (and whose ACK, above snd_max, would then be dropped). */
static void test_fast_rexmit_within_sent(void **state)
{
	static uint8_t blob[10000];
	struct conn c;
	struct eh_session *se;
	struct out o;

	(void)state;
	open_conn_with(&c, 41067, EH_ECHO_PORT, NULL, 0, false, 100);
	se = session_of(41067);
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	o = one();
	assert_int_equal(o.len, 100);
	for (unsigned i = 0; i < 3; i++)
		ack_all(&c, 100); /* (c.gnxt still at snd_una: duplicates, the window unchanged) */
	assert_int_equal(S()->tcp_fast_retransmits, 1);
	o = one();
	assert_int_equal(o.seq, c.gnxt);
	assert_int_equal(o.len, 100);
}

/* An ARP reply from IP with sender MAC SHA, to us. */
static void arp_reply(uint32_t ip, const uint8_t *sha)
{
	eh_arp(&h, RTE_ARP_OP_REPLY, sha, ip);
	eh_poll(&h);
}

/* A SYN to the echo port from the off-link SRC:PORT; returns the Ethernet destination of the SYN-ACK
 * (the gateway's MAC as the engine knows it) in DST. */
static void offlink_syn(uint32_t src, uint16_t port, uint8_t *dst)
{
	unsigned found = 0;

	feed_syn_between(src, port, EH_GW_IP, EH_ECHO_PORT, 777);
	for (unsigned i = 0; i < h.n_kept; i++) {
		const struct rte_ether_hdr *e = rte_pktmbuf_mtod(h.kept[i], const struct rte_ether_hdr *);
		if (e->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4)) {
			memcpy(dst, e->dst_addr.addr_bytes, 6);
			found++;
		}
	}
	assert_int_equal(found, 1);
}

static int setup_gateway(void **state)
{
	int ret;

	(void)state;
	eh_gateway = EH_PEER_IP; /* (on-link: the peer answers for it) */
	ret = eh_start(&h, 8, 16384, 16384);
	eh_gateway = 0;
	return ret;
}

static int setup_wide(void **state)
{
	int ret;

	(void)state;
	eh_prefix = 16; /* (room for thousands of on-link sources) */
	ret = eh_start(&h, 8, 16384, 16384);
	eh_prefix = 0;
	return ret;
}

/* ARP requests for IP among the frames kept since the last eh_forget. */
static unsigned arp_requests_for(uint32_t ip)
{
	unsigned n = 0;

	for (unsigned i = 0; i < h.n_kept; i++) {
		const struct rte_ether_hdr *e = rte_pktmbuf_mtod(h.kept[i], const struct rte_ether_hdr *);
		const struct rte_arp_hdr *a = (const struct rte_arp_hdr *)(e + 1);

		if (e->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP) &&
		    a->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REQUEST) && a->arp_data.arp_tip == ip)
			n++;
	}
	return n;
}

/* The peer's bytes echoed straight to its MAC, without asking for it (its entry survived). */
static void echo_without_asking(struct conn *c, uint8_t tag)
{
	struct out o;

	peer_data(c, &tag, 1, 0);
	assert_int_equal(arp_requests_for(EH_PEER_IP), 0);
	o = one();
	assert_int_equal(o.len, 1);
	assert_int_equal(o.data[0], tag);
	assert_int_equal(h.n_kept, 1); /* (sent, not queued for ARP: one() saw its frame) */
	assert_memory_equal(rte_pktmbuf_mtod(h.kept[0], const struct rte_ether_hdr *)->dst_addr.addr_bytes,
	                    eh_peer_mac, 6);
	c->gnxt += 1;
}

/* 198.18.1.0/24 onwards: sources in the wide subnet, none of them the peer's or ours. */
static uint32_t spoofed(unsigned i)
{
	return rte_cpu_to_be_32(0xc6120000u | ((1u + i / 250u) << 8) | (1u + i % 250u));
}

/* N ARP requests for our address from spoofed(0..N-1), each from its own MAC (TAG in it); PACED: a
 * second passes after every 512 (under ETH_NBR_REPLY_PER_S: every one answered). */
static void arp_flood(unsigned n, uint8_t tag, bool paced)
{
	for (unsigned i = 0; i < n; i++) {
		eh_arp(&h, RTE_ARP_OP_REQUEST, (const uint8_t[6]){0x02, 0, 0, tag, (uint8_t)(i >> 8), (uint8_t)i},
		       spoofed(i));
		if (i % 32 == 31) {
			eh_poll(&h);
			eh_forget(&h);
		}
		if (paced && i % 512 == 511)
			eh_advance_ms(&h, 1000);
	}
	eh_poll(&h);
	eh_forget(&h);
}

/* The neighbour traffic goes to keeps its entry through floods from spoofed on-link sources (it used
 * to be the least recently used of its slots, evicted and asked for again, its packets held):
 *  - ARP requests for our address from 2048 senders (each would be a new entry): they take free
 *    slots and each other's, never an entry output uses, and every one is answered;
 *  - SYNs from 2048 other senders that never answer ARP: the first ETH_NBR_RESOLVE_PER_S SYN-ACKs
 *    wait for an entry that stays INCOMPLETE (the rest are dropped: test_nbr_budgets), and those
 *    evict one another, not a neighbour that answered. */
static void test_arp_flood_keeps_used(void **state)
{
	struct conn c = established_echo(40200);
	uint64_t replies;

	(void)state;
	eh_advance_ms(&h, 1000); /* (the floods' entries are newer: a plain LRU would take the peer's) */
	eh_forget(&h);
	replies = S()->arp_out;
	arp_flood(8 * 256, 2, true);
	assert_int_equal(S()->arp_out - replies, 8 * 256); /* every request answered */
	assert_int_equal(S()->arp_learn_refused, 0); /* (one entry in use: the others were the flood's) */
	assert_true(S()->arp_entries <= ETH_ARP_SLOTS);
	echo_without_asking(&c, 0x5a);
	ack_all(&c, 65535);

	eh_advance_ms(&h, 1000);
	for (unsigned i = 0; i < 8 * 256; i++)
		feed_syn_between(spoofed(8 * 256 + i), (uint16_t)(1024 + i), EH_GW_IP, EH_ECHO_PORT, 777);
	eh_forget(&h);
	assert_true(S()->arp_entries <= ETH_ARP_SLOTS);
	echo_without_asking(&c, 0xa5);
	/* every slot taken by a neighbour asked for (the SYN-ACKs'): a request from yet another
	 * sender is answered without an entry, and counted */
	replies = S()->arp_out;
	eh_arp(&h, RTE_ARP_OP_REQUEST, (const uint8_t[6]){0x02, 0, 0, 3, 0, 1}, spoofed(4 * 8 * 256));
	eh_poll(&h);
	assert_int_equal(S()->arp_learn_refused, 1);
	assert_int_equal(S()->arp_out, replies + 1);
}

#define P2P_US   RTE_BE32(0xc6120004u) /* 198.18.0.4/31 */
#define P2P_PEER RTE_BE32(0xc6120005u) /* the other end, our gateway */

static int setup_p2p(void **state)
{
	int ret;

	(void)state;
	eh_addr = P2P_US;
	eh_prefix = 31;
	eh_gateway = P2P_PEER;
	ret = eh_start(&h, 8, 16384, 16384);
	eh_addr = 0;
	eh_prefix = 0;
	eh_gateway = 0;
	return ret;
}

/* The only frame kept, of ethertype TYPE to the peer's MAC: its L3 header. */
static const void *only_to_peer(uint16_t type)
{
	const struct rte_ether_hdr *e;

	assert_int_equal(h.n_kept, 1);
	e = rte_pktmbuf_mtod(h.kept[0], const struct rte_ether_hdr *);
	assert_int_equal(e->ether_type, rte_cpu_to_be_16(type));
	assert_memory_equal(e->dst_addr.addr_bytes, eh_peer_mac, 6);
	return e + 1;
}

/* An echo request of 64 bytes (its header, then zeros) into F (200 bytes at least), from SRC to DST
 * (both 0: from the peer to the gateway, as eh_ip_frame makes it); returns the frame's length. */
static size_t echo_frame(uint8_t *f, rte_be32_t src, rte_be32_t dst)
{
	uint8_t msg[64] = {0};
	struct rte_icmp_hdr *ic = (struct rte_icmp_hdr *)msg;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + RTE_ETHER_HDR_LEN);
	size_t len;

	ic->icmp_type = RTE_IP_ICMP_ECHO_REQUEST;
	ic->icmp_cksum = (uint16_t)~rte_raw_cksum(msg, sizeof(msg));
	len = eh_ip_frame(f, IPPROTO_ICMP, msg, sizeof(msg), 0);
	if (src || dst) {
		ip->src_addr = src;
		ip->dst_addr = dst;
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	return len;
}

/* On a /31 (RFC 3021: a link of two hosts, no broadcast address) the other end is a host, here the
 * gateway: its ARP reply is taken, its request answered, its echo request answered, and an off-link
 * host is reached through it. Its address, the all-ones host part, used to be taken for the
 * subnet's broadcast: a martian, its ARP refused, nothing off-link reachable. */
static void test_p2p_31(void **state)
{
	uint8_t f[200];
	const struct rte_arp_hdr *a;
	const struct rte_ipv4_hdr *r;
	uint64_t err0;

	(void)state;
	eh_advance_ms(&h, 10);
	assert_int_equal(arp_requests_for(P2P_PEER), 1); /* (the gateway, asked for since the start) */
	err0 = S()->arp_errors;
	arp_reply(P2P_PEER, eh_peer_mac);
	eh_forget(&h);
	eh_arp(&h, RTE_ARP_OP_REQUEST, eh_peer_mac, P2P_PEER);
	eh_poll(&h);
	a = only_to_peer(RTE_ETHER_TYPE_ARP);
	assert_int_equal(a->arp_opcode, rte_cpu_to_be_16(RTE_ARP_OP_REPLY));
	assert_int_equal(a->arp_data.arp_sip, P2P_US);
	assert_int_equal(a->arp_data.arp_tip, P2P_PEER);
	assert_int_equal(S()->arp_errors, err0);
	/* its echo request */
	eh_forget(&h);
	eh_feed(&h, f, echo_frame(f, P2P_PEER, P2P_US));
	eh_poll(&h);
	r = only_to_peer(RTE_ETHER_TYPE_IPV4);
	assert_int_equal(r->next_proto_id, IPPROTO_ICMP);
	assert_int_equal(r->dst_addr, P2P_PEER);
	assert_int_equal(S()->icmp_echo_replies, 1);
	/* an off-link host (198.51.100.7) through it */
	feed_syn_between(RTE_BE32(0xc6336407u), 40100, P2P_US, EH_ECHO_PORT, 777);
	r = only_to_peer(RTE_ETHER_TYPE_IPV4);
	assert_int_equal(r->next_proto_id, IPPROTO_TCP);
	assert_int_equal(r->dst_addr, RTE_BE32(0xc6336407u));
	assert_int_equal(S()->ip_header_errors, 0);
}

/* The pinned gateway's entry, re-checked once it aged (a unicast request to the address we have), is
 * confirmed by that address only: an attacker's reply racing the gateway's answer is ignored and
 * counted, and off-link traffic keeps going to the real gateway (it used to take the first reply). */
static void test_gateway_recheck_spoofed(void **state)
{
	static const uint8_t evil[6] = {0x02, 0x66, 0, 0, 0, 0x66};
	uint8_t dst[6];
	uint64_t err0;

	(void)state;
	eh_advance_ms(&h, 10); /* the gateway is asked for */
	arp_reply(EH_PEER_IP, eh_peer_mac);
	offlink_syn(RTE_BE32(0xc6120107u), 40001, dst); /* 198.18.1.7 */
	assert_memory_equal(dst, eh_peer_mac, 6);
	eh_advance_ms(&h, 61000); /* the entry ages: its next use re-checks it */
	offlink_syn(RTE_BE32(0xc6120108u), 40002, dst);
	assert_memory_equal(dst, eh_peer_mac, 6);
	err0 = S()->arp_errors;
	arp_reply(EH_PEER_IP, evil);
	assert_int_equal(S()->arp_errors, err0 + 1);
	offlink_syn(RTE_BE32(0xc6120109u), 40003, dst);
	assert_memory_equal(dst, eh_peer_mac, 6);
	/* the gateway's own answer confirms it */
	arp_reply(EH_PEER_IP, eh_peer_mac);
	assert_int_equal(S()->arp_errors, err0 + 1);
	offlink_syn(RTE_BE32(0xc612010au), 40004, dst);
	assert_memory_equal(dst, eh_peer_mac, 6);
}

/* The destination MAC of the frame eth_arp_output sends to NEXTHOP now (NULL: none went, queued). */
static const uint8_t *output_mac(uint32_t nexthop)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(eh_pool);
	struct rte_ipv4_hdr *ip;

	assert_non_null(m);
	assert_non_null(ip = (struct rte_ipv4_hdr *)rte_pktmbuf_append(m, sizeof(*ip) + 8));
	memset(ip, 0, sizeof(*ip) + 8); /* (an ICMP message: what the harness lets out besides TCP) */
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16(sizeof(*ip) + 8);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_ICMP;
	ip->src_addr = EH_GW_IP;
	ip->dst_addr = nexthop;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	eh_forget(&h);
	eth_arp_output(h.st, m, nexthop, false);
	eh_poll(&h); /* (frames leave at the end of the round) */
	for (unsigned i = 0; i < h.n_kept; i++) {
		const struct rte_ether_hdr *e = rte_pktmbuf_mtod(h.kept[i], const struct rte_ether_hdr *);
		if (e->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4))
			return e->dst_addr.addr_bytes;
	}
	return NULL;
}

static size_t frame6(uint8_t *out, const uint8_t *src, const uint8_t *dst, uint8_t first, const uint8_t *ext,
                     size_t extlen, uint8_t proto, const void *l4, size_t l4len, uint8_t hlim);

/* N solicitations for our address from as many sources of 2001:db8::NET:0:0/96 (each its own MAC);
 * PACED: a second passes after every 512 (under ETH_NBR_REPLY_PER_S: every one answered). */
static void ns_flood(unsigned n, uint8_t net, bool paced)
{
	for (unsigned i = 0; i < n; i++) {
		uint8_t m[32] = {135}, src[16] = {0x20, 0x01, 0x0d, 0xb8, [11] = net}, f[200];
		uint8_t mac[6] = {0x02, 0, net, 6, (uint8_t)(i >> 8), (uint8_t)i};

		src[14] = (uint8_t)(i >> 8), src[15] = (uint8_t)i;
		memcpy(m + 8, eh_gw_ip6, 16);
		m[24] = 1, m[25] = 1;
		memcpy(m + 26, mac, 6);
		eh_feed(&h, f, frame6(f, src, NULL, 0, NULL, 0, IPPROTO_ICMPV6, m, sizeof(m), 255));
		if (i % 32 == 31) {
			eh_poll(&h);
			eh_forget(&h);
		}
		if (paced && i % 512 == 511)
			eh_advance_ms(&h, 1000);
	}
	eh_poll(&h);
	eh_forget(&h);
}

/* What spoofed on-link sources make us send is budgeted per second: ARP replies and solicited
 * advertisements (each goes where the request says), but never to a neighbour known before (the
 * router, a client traffic goes to); and the requests to every host of the link for a new neighbour
 * that a reply needs (a SYN-ACK to a SYN from a source that never spoke ARP: three broadcasts for
 * one frame). Our own output to a new neighbour is not budgeted: a backend is asked for all the
 * same. */
static void test_nbr_budgets(void **state)
{
	const unsigned over = 300;
	uint64_t out0, lim0;

	(void)state;
	established_echo(40210); /* (the peer's entry in use: no flood's entry takes its slot) */
	eh_advance_ms(&h, 1000);
	eh_forget(&h);
	out0 = S()->arp_out;
	arp_flood(ETH_NBR_REPLY_PER_S + over, 4, false);
	assert_int_equal(S()->arp_out - out0, ETH_NBR_REPLY_PER_S);
	assert_int_equal(S()->nbr_replies_limited, over);
	/* in the same second: the peer, known before, is answered; solicitations share the budget */
	eh_arp(&h, RTE_ARP_OP_REQUEST, eh_peer_mac, EH_PEER_IP);
	eh_poll(&h);
	eh_forget(&h);
	assert_int_equal(S()->arp_out - out0, ETH_NBR_REPLY_PER_S + 1);
	out0 = S()->nd_na_out;
	ns_flood(over, 4, false);
	assert_int_equal(S()->nd_na_out, out0);
	assert_int_equal(S()->nbr_replies_limited, 2 * over);
	/* the next second's */
	eh_advance_ms(&h, 1000);
	eh_forget(&h);
	ns_flood(ETH_NBR_REPLY_PER_S + over, 5, false);
	assert_int_equal(S()->nd_na_out - out0, ETH_NBR_REPLY_PER_S);
	assert_int_equal(S()->nbr_replies_limited, 3 * over);
	/* SYNs from sources that never spoke ARP (the listener's backlog is full at once: cookies) */
	eh_advance_ms(&h, 1000);
	eh_forget(&h);
	out0 = S()->arp_out;
	lim0 = S()->nbr_resolves_limited;
	for (unsigned i = 0; i < ETH_NBR_RESOLVE_PER_S + over; i++) {
		feed_syn_between(spoofed(5000 + i), (uint16_t)(1024 + i), EH_GW_IP, EH_ECHO_PORT, 777);
		if (i % 32 == 31)
			eh_forget(&h);
	}
	eh_forget(&h);
	assert_int_equal(S()->arp_out - out0, ETH_NBR_RESOLVE_PER_S); /* one request each, no more */
	assert_int_equal(S()->nbr_resolves_limited - lim0, over);
	/* in the same second, our own output to a new neighbour is asked for */
	out0 = S()->arp_out;
	assert_null(output_mac(spoofed(9000)));
	assert_int_equal(S()->arp_out, out0 + 1);
	assert_int_equal(S()->nbr_resolves_limited - lim0, over);
}

/* [eth] flow_peer's entry is pinned as the gateway's is: it gets every segment of the connections a
 * VIP left behind, and any on-link host could re-point it with one ARP frame (a request made a
 * passive entry with its MAC even before the first hand-off). Only the answer to our own request
 * sets it; a later claim, a request or a gratuitous reply, changes nothing (counted). */
static void test_flow_peer_pinned(void **state)
{
	static const uint8_t evil[6] = {0x02, 0x66, 0, 0, 0, 0x66}, good[6] = {0x02, 0x11, 0, 0, 0, 0x03};
	const uint32_t fp = RTE_BE32(0xc6120003u); /* 198.18.0.3 */
	uint64_t err0;
	const uint8_t *mac;

	(void)state;
	h.st->c.flow_peer = fp;
	eh_arp(&h, RTE_ARP_OP_REQUEST, evil, fp); /* before any use: no entry made from it */
	eh_poll(&h);
	assert_null(output_mac(fp)); /* asked for, the frame waits */
	assert_int_equal(arp_requests_for(fp), 1);
	arp_reply(fp, good);
	assert_non_null(mac = output_mac(fp));
	assert_memory_equal(mac, good, 6);
	err0 = S()->arp_errors;
	eh_arp(&h, RTE_ARP_OP_REQUEST, evil, fp);
	eh_poll(&h);
	arp_reply(fp, evil);
	assert_int_equal(S()->arp_errors, err0 + 2);
	assert_non_null(mac = output_mac(fp));
	assert_memory_equal(mac, good, 6);
	eh_forget(&h);
}

/* The flow peer went silent (a failover killed it: its re-checks went unanswered, and a pinned entry
 * is then asked for only every 10 s while idle) and is back. The next hand-off's traffic asks for it at
 * once, and so does a claim from its address (which still sets nothing: the answer does); each used
 * to wait for the 10 s retry, and the hand-off's segments, the VIP's connections on the restarted
 * peer, were dropped unresolved meanwhile (test_ha_vrrp's stray segments, on CI). A reply while
 * nothing is asked is no answer (it was taken: anyone could re-point the entry in its hold-down). */
static void test_flow_peer_back(void **state)
{
	static const uint8_t good[6] = {0x02, 0x11, 0, 0, 0, 0x03}, evil[6] = {0x02, 0x66, 0, 0, 0, 0x66};
	const uint32_t fp = RTE_BE32(0xc6120003u); /* 198.18.0.3 */
	const uint8_t *mac;
	uint64_t err0;

	(void)state;
	h.st->c.flow_peer = fp;
	assert_null(output_mac(fp));
	arp_reply(fp, good);
	assert_non_null(output_mac(fp));
	eh_advance_ms(&h, 61000);
	assert_non_null(output_mac(fp)); /* aged: re-checked (unicast), used meanwhile */
	for (int i = 0; i < 8; i++)   /* 3 re-checks, then 3 broadcasts, all unanswered */
		eh_advance_ms(&h, 1100);
	eh_forget(&h);
	eh_advance_ms(&h, 1100);
	assert_int_equal(arp_requests_for(fp), 0); /* idle: not asked for now */
	/* traffic for it: asked for at once */
	assert_null(output_mac(fp));
	assert_int_equal(arp_requests_for(fp), 1);
	assert_null(output_mac(fp));
	assert_int_equal(arp_requests_for(fp), 0); /* (not twice in a second) */
	for (int i = 0; i < 4; i++)
		eh_advance_ms(&h, 1100);
	/* a reply while nothing is asked (its hold-down) is no answer: not learnt, counted; it asks */
	err0 = S()->arp_errors;
	eh_forget(&h);
	arp_reply(fp, evil);
	assert_int_equal(S()->arp_errors, err0 + 1);
	assert_int_equal(arp_requests_for(fp), 1);
	assert_null(output_mac(fp));
	arp_reply(fp, good);
	assert_non_null(mac = output_mac(fp));
	assert_memory_equal(mac, good, 6);
	/* silent again */
	eh_advance_ms(&h, 61000);
	assert_non_null(output_mac(fp));
	for (int i = 0; i < 8; i++)
		eh_advance_ms(&h, 1100);
	/* its claim: asked for at once, nothing learnt from the claim itself */
	eh_forget(&h);
	eh_arp(&h, RTE_ARP_OP_REQUEST, good, fp);
	eh_poll(&h);
	assert_int_equal(arp_requests_for(fp), 1);
	assert_null(output_mac(fp));
	arp_reply(fp, good);
	assert_non_null(mac = output_mac(fp));
	assert_memory_equal(mac, good, 6);
}

/* with the pinned gateway and a kernel TAP */
static int setup_gateway_exc(void **state)
{
	return with_exc(setup_gateway(state));
}

/* ARP is mirrored to the kernel behind the TAP, but not a claim giving the pinned gateway another
 * MAC, which ibgwd ignores: the kernel's own flows (BGP, VRRP) reach the gateway by its own ARP entry,
 * which the claim would have re-pointed at the claimant. The gateway's own answers still reach it. */
static void test_gateway_claim_not_mirrored(void **state)
{
	static const uint8_t evil[6] = {0x02, 0x66, 0, 0, 0, 0x66};
	uint64_t k0, err0;

	(void)state;
	eh_advance_ms(&h, 10); /* the gateway is asked for */
	k0 = S()->exc_to_kernel;
	arp_reply(EH_PEER_IP, eh_peer_mac);
	assert_int_equal(S()->exc_to_kernel, k0 + 1);
	err0 = S()->arp_errors;
	arp_reply(EH_PEER_IP, evil);
	assert_int_equal(S()->arp_errors, err0 + 1);
	assert_int_equal(S()->exc_to_kernel, k0 + 1);
	arp_reply(EH_PEER_IP, eh_peer_mac);
	assert_int_equal(S()->exc_to_kernel, k0 + 2);
}

/* An ICMP "fragmentation needed" (RFC 1191) from a router on the path, quoting a segment from our
 * port GPORT to the peer's PPORT with sequence number SEQ, reporting next-hop MTU. */
static void feed_frag_needed(uint16_t pport, uint16_t gport, uint32_t seq, uint16_t mtu)
{
	uint8_t msg[8 + 20 + 8] = {3, 4}, f[100];
	struct rte_icmp_hdr *ic = (struct rte_icmp_hdr *)msg;
	struct rte_ipv4_hdr *q = (struct rte_ipv4_hdr *)(msg + 8);
	uint8_t *tcp = msg + 28;

	msg[6] = (uint8_t)(mtu >> 8), msg[7] = (uint8_t)mtu;
	q->version_ihl = RTE_IPV4_VHL_DEF;
	q->total_length = rte_cpu_to_be_16(1500);
	q->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	q->time_to_live = 63;
	q->next_proto_id = IPPROTO_TCP;
	q->src_addr = EH_GW_IP;
	q->dst_addr = EH_PEER_IP;
	q->hdr_checksum = rte_ipv4_cksum(q);
	tcp[0] = (uint8_t)(gport >> 8), tcp[1] = (uint8_t)gport, tcp[2] = (uint8_t)(pport >> 8), tcp[3] = (uint8_t)pport;
	tcp[4] = (uint8_t)(seq >> 24), tcp[5] = (uint8_t)(seq >> 16), tcp[6] = (uint8_t)(seq >> 8), tcp[7] = (uint8_t)seq;
	ic->icmp_cksum = 0;
	ic->icmp_cksum = (uint16_t)~rte_raw_cksum(msg, sizeof(msg));
	eh_forget(&h);
	eh_feed(&h, f, eh_ip_frame(f, IPPROTO_ICMP, msg, sizeof(msg), 0));
	eh_poll(&h);
}

/* Checks the N segments in V: back to back from SEQ, each of LEN bytes but the last (at most LEN). */
static void check_resent(const struct out *v, unsigned n, uint32_t seq, uint32_t len, uint32_t total)
{
	uint32_t sum = 0;

	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(v[i].seq, seq + sum);
		assert_true(v[i].len == len || (i == n - 1 && v[i].len < len));
		sum += v[i].len;
	}
	assert_int_equal(sum, total);
}

/* Path MTU discovery: a "fragmentation needed" quoting a segment in flight shrinks the connection's
 * segments to the path's MTU (less 40 bytes of headers and 12 of timestamps) and sends what was in
 * flight again at once; one quoting a sequence number we never sent or the peer acknowledged
 * (RFC 5927: an off-path attacker's guess) or an MTU no lower is ignored; an MTU below 552 is taken
 * as 552 (a forged one cannot make us send tiny segments); one about no connection of ours is not
 * counted (the kernel's flows may have sent it: punted where a TAP is). */
static void test_pmtu_frag_needed(void **state)
{
	static uint8_t blob[8 * 1448];
	struct conn c = established_echo(41070);
	struct eh_session *se = session_of(41070);
	struct out v[32];
	unsigned n;

	(void)state;
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	n = sent(v, 32);
	check_resent(v, n, c.gnxt, 1448, sizeof(blob));
	feed_frag_needed(41071, EH_ECHO_PORT, c.gnxt, 1400);
	assert_int_equal(S()->icmp_too_big_in, 0);
	feed_frag_needed(41070, EH_ECHO_PORT, c.gnxt + sizeof(blob) + 5000, 1400);
	feed_frag_needed(41070, EH_ECHO_PORT, c.gnxt - 1, 1400);
	assert_int_equal(S()->icmp_too_big_in, 2);
	assert_int_equal(S()->icmp_too_big_ignored, 2);
	assert_int_equal(S()->tcp_pmtu_lowered, 0);
	assert_int_equal(sent(v, 32), 0);
	/* the router's: every byte in flight again, in segments of 1400 - 52 */
	feed_frag_needed(41070, EH_ECHO_PORT, c.gnxt + 1448, 1400);
	assert_int_equal(S()->tcp_pmtu_lowered, 1);
	check_resent(v, sent(v, 32), c.gnxt, 1348, sizeof(blob));
	/* the same again (a second router's copy): no lower, ignored, nothing sent */
	feed_frag_needed(41070, EH_ECHO_PORT, c.gnxt, 1400);
	assert_int_equal(S()->icmp_too_big_ignored, 3);
	assert_int_equal(sent(v, 32), 0);
	/* a tiny MTU: 552 */
	feed_frag_needed(41070, EH_ECHO_PORT, c.gnxt, 296);
	assert_int_equal(S()->tcp_pmtu_lowered, 2);
	check_resent(v, sent(v, 32), c.gnxt, 500, sizeof(blob));
	/* RFC 791's 68 is the least an MTU may be: below it, the message is bogus */
	feed_frag_needed(41070, EH_ECHO_PORT, c.gnxt, 40);
	assert_int_equal(S()->icmp_too_big_ignored, 4);
	/* acknowledged: nothing left to send, no timeout fires later */
	c.gnxt += sizeof(blob);
	ack_all(&c, 65535);
	eh_forget(&h);
	eh_advance_ms(&h, 5000);
	assert_int_equal(S()->tcp_rto_expiries, 0);
	assert_int_equal(sent(v, 32), 0);
}


/* A storm of "fragmentation needed" messages, each quoting a segment in flight and lowering the MTU
 * by a byte, within half a round trip: each lowers the segment size, but only the first sends the
 * flight again (each did: a flight per message); a message a round trip later sends it again, at
 * the last size. */
static void test_pmtu_storm(void **state)
{
	static const uint8_t syn_opts[] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7};
	static uint8_t blob[8 * 1448];
	struct conn c = {.pport = 41090, .gport = EH_ECHO_PORT, .pnxt = PEER_ISN, .ts = true, .tsval = 1};
	struct eh_session *se;
	uint8_t f[200];
	struct out v[32], o;
	uint64_t out0;

	(void)state;
	/* the handshake takes 100 ms: the round trip measured */
	eh_forget(&h);
	eh_feed(&h, f, eh_tcp_frame(f, c.pport, c.gport, c.pnxt, 0, RTE_TCP_SYN_FLAG, 65535, syn_opts,
	                            sizeof(syn_opts), NULL, 0));
	eh_poll(&h);
	o = one();
	c.pnxt++;
	c.gnxt = o.seq + 1;
	c.tsecr = o.o.tsval;
	eh_advance_ms(&h, 100);
	ack_all(&c, 65535);
	se = session_of(c.pport);
	assert_non_null(se);
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	check_resent(v, sent(v, 32), c.gnxt, 1448, sizeof(blob));
	out0 = S()->tcp_bytes_out;
	for (unsigned i = 0; i < 100; i++) {
		feed_frag_needed(c.pport, c.gport, c.gnxt + 1448, (uint16_t)(1499 - i));
		if (i == 0)
			check_resent(v, sent(v, 32), c.gnxt, 1499 - 52, sizeof(blob));
		else
			assert_int_equal(sent(v, 32), 0);
		eh_advance_ms(&h, i % 2); /* (half a round trip in all) */
	}
	assert_int_equal(S()->tcp_pmtu_lowered, 100);
	assert_int_equal(S()->icmp_too_big_ignored, 0);
	assert_int_equal(S()->tcp_bytes_out - out0, sizeof(blob));
	/* the round trip over: the resend held back goes, once, at the last size (a second, narrower
	 * hop's message comes within that round trip: it used to wait for a retransmission timeout) */
	eh_forget(&h);
	eh_advance_ms(&h, 49);
	assert_int_equal(sent(v, 32), 0);
	eh_advance_ms(&h, 1);
	check_resent(v, sent(v, 32), c.gnxt, 1400 - 52, sizeof(blob));
	assert_int_equal(S()->tcp_bytes_out - out0, 2 * sizeof(blob));
	eh_forget(&h);
	eh_advance_ms(&h, 50);
	assert_int_equal(sent(v, 32), 0);
	/* a round trip after the last time: every byte in flight again at once, at the new size */
	eh_advance_ms(&h, 60);
	feed_frag_needed(c.pport, c.gport, c.gnxt, 1399);
	check_resent(v, sent(v, 32), c.gnxt, 1399 - 52, sizeof(blob));
	c.gnxt += sizeof(blob);
	ack_all(&c, 65535);
}

/* One connection whose peer takes all it sends fills the device queue (here with 64-byte segments, as
 * a bulk flow fills a NIC's with full ones); another connection's data, written meanwhile, gets into
 * the queue in the first round the device takes frames again, behind what the bulk connection had
 * queued, not behind everything it had to send (on the old code: 4096 segments first). White box:
 * the bulk connection's congestion window is set as a long transfer would have grown it. */
static void test_output_turns(void **state)
{
	static const uint8_t syn_opts[] = {2, 4, 0, 76, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7};
	static uint8_t blob[256 * 1024];
	struct conn a, b;
	struct eh_session *sa, *sb;
	struct out v[64];
	unsigned polls = 0, bulk = 0;
	bool b_out = false;

	(void)state;
	open_conn_with(&a, 41070, EH_ECHO_PORT, syn_opts, sizeof(syn_opts), true, 65535);
	b = established_echo(41071);
	sa = session_of(41070);
	sb = session_of(41071);
	eth_tcb_of(sa->s)->cwnd = 1u << 22;
	h.tx_stalled = true;
	eh_forget(&h);
	assert_int_equal(sa->s->ops->write(sa->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	assert_int_equal(sb->s->ops->write(sb->s, blob, 1000), 1000);
	eh_poll(&h);
	assert_int_equal(h.n_kept, 0);
	h.tx_stalled = false;
	h.tx_cap = 8;
	while (!b_out && polls++ < 400) {
		unsigned n;

		eh_forget(&h);
		eh_poll(&h);
		n = sent(v, 64);
		for (unsigned k = 0; k < n; k++) {
			if (v[k].dport == b.pport && v[k].len)
				b_out = true;
			else if (v[k].dport == a.pport && v[k].len)
				bulk++;
		}
	}
	assert_true(b_out);
	assert_in_range(bulk, 400, 600);
}

/* The peer vanishes with data outstanding: retransmission timeouts back off, and after
 * user_timeout (30 s here) the connection is reset and freed with its buffers. */
static void test_vanished_peer(void **state)
{
	static uint8_t blob[3000];
	struct conn c = established_echo(41060);
	struct eh_session *se = session_of(41060);
	struct out o;
	uint64_t t0;
	unsigned rto = 0;

	(void)state;
	se->s->ops->write(se->s, blob, sizeof(blob));
	eh_poll(&h);
	assert_true(S()->tcp_buffer_bytes > 0);
	t0 = h.now_ns;
	while (S()->tcp_active && h.now_ns - t0 < 120ull * 1000000000ull) {
		eh_forget(&h);
		eh_advance_ms(&h, 100);
		if (S()->tcp_rto_expiries != rto) {
			o = one();
			assert_int_equal(o.seq, c.gnxt); /* go back to the first unacknowledged byte */
			rto = (unsigned)S()->tcp_rto_expiries;
		}
	}
	/* the reset at the highest sequence number sent, not at the rewound snd_nxt: a peer that
	 * received it all (only its ACKs were lost) takes nothing below its window (RFC 5961 3.2) */
	o = one();
	assert_int_equal(o.flags, RTE_TCP_RST_FLAG | RTE_TCP_ACK_FLAG);
	assert_int_equal(o.seq, c.gnxt + sizeof(blob));
	/* 200 ms doubling: 0.2 + 0.4 + ... + 12.8 = 25.4 s, the next expiry passes 30 s */
	assert_true(rto >= 6 && rto <= 9);
	assert_true(h.now_ns - t0 >= 30ull * 1000000000ull && h.now_ns - t0 <= 60ull * 1000000000ull);
	assert_int_equal(S()->tcp_timeouts, 1);
	assert_int_equal(S()->tcp_active, 0);
	assert_int_equal(S()->tcp_buffer_bytes, 0);
	assert_null(session_of(41060));
	assert_int_equal(eth_stack_conns(h.st), 0);
}

/* The peer of C, for T ms in steps of 100: answers ARP, and every segment of ours with an ACK of
 * C->gnxt and window WND, but for those sent in [DROP_FROM, DROP_TO) ms (lost on the way); no
 * segment of ours is a reset. Returns the window probes it saw (empty segments at gnxt - 1). */
static unsigned peer_holds_window(struct conn *c, uint16_t wnd, unsigned t, unsigned drop_from, unsigned drop_to)
{
	struct out v[16];
	unsigned probes = 0;

	for (unsigned ms = 0; ms < t; ms += 100) {
		unsigned n;

		eh_forget(&h);
		eh_advance_ms(&h, 100);
		if (arp_requests_for(EH_PEER_IP))
			arp_reply(EH_PEER_IP, eh_peer_mac);
		n = sent(v, 16);
		for (unsigned k = 0; k < n; k++) {
			assert_int_equal(v[k].flags & RTE_TCP_RST_FLAG, 0);
			probes += v[k].len == 0 && v[k].seq == c->gnxt - 1;
		}
		if (n && (ms < drop_from || ms >= drop_to)) {
			learn_tsecr(c); /* (echoes what it just got, as a peer does) */
			ack_to(c, c->gnxt, wnd);
		}
	}
	return probes;
}

/* Connection PPORT with LEN bytes of BLOB (filled from MUL) written and in flight, acknowledged by
 * nothing while its peer's window becomes WND. */
static struct conn in_flight_then_window(uint16_t pport, uint8_t *blob, size_t len, uint8_t mul, uint16_t wnd)
{
	struct conn c = established_echo(pport);
	struct eh_session *se = session_of(pport);
	struct out v[16];

	for (size_t i = 0; i < len; i++)
		blob[i] = (uint8_t)(i * mul + 5);
	se->s->ops->write(se->s, blob, len);
	eh_poll(&h);
	assert_true(sent(v, 16) > 0); /* in flight */
	ack_to(&c, c.gnxt, wnd);
	return c;
}

/* The segments just sent that carry C's bytes from C->gnxt + GOT on, checked against BLOB (each at
 * most MAX_LEN), none a reset. Returns GOT moved on. */
static uint32_t take_in_order(const struct conn *c, const uint8_t *blob, uint32_t got, uint32_t max_len)
{
	struct out v[16];
	unsigned n = sent(v, 16);

	for (unsigned k = 0; k < n; k++) {
		assert_int_equal(v[k].flags & RTE_TCP_RST_FLAG, 0);
		if (!v[k].len || v[k].seq != c->gnxt + got)
			continue;
		assert_true(v[k].len <= max_len);
		assert_memory_equal(v[k].data, blob + got, v[k].len);
		got += v[k].len;
	}
	return got;
}

/* A peer shrinks its window to zero over data in flight and keeps answering with that window: the
 * retransmission timeouts probe it (RFC 1122 4.2.2.16: the window must be probed, the connection
 * not timed out), its answers keep the connection past user_timeout (30 s here), even where a probe
 * is lost once the timeouts have backed off to their longest, and once it opens the data goes again
 * from the first unacknowledged byte, every byte as written. */
static void test_shrunk_window(void **state)
{
	static uint8_t blob[3000];
	struct conn c = in_flight_then_window(41061, blob, sizeof(blob), 11, 0);
	uint32_t got = 0;

	(void)state;
	/* 0.2 s doubling: from 25 s on the probes are 10 s apart (a third of user_timeout); the one
	 * sent between 50 and 60 s is lost. (Backed off to 51 s apart, a probe lost there left 51 s of
	 * silence, and the next timeout reset the connection.) */
	assert_true(peer_holds_window(&c, 0, 120000, 50000, 60000) >= 8);
	assert_int_equal(S()->tcp_active, 1);
	assert_int_equal(S()->tcp_timeouts, 0);
	/* it opens: everything again, from the first byte */
	eh_forget(&h);
	ack_to(&c, c.gnxt, 65535);
	for (unsigned i = 0; i < 40 && got < sizeof(blob); i++) {
		got = take_in_order(&c, blob, got, 65535);
		eh_forget(&h);
		ack_to(&c, c.gnxt + got, 65535);
		eh_advance_ms(&h, 200);
	}
	assert_int_equal(got, sizeof(blob));
	c.gnxt += sizeof(blob);
	assert_int_equal(S()->tcp_active, 1);
}

/* The same peer, its window shut for 30 s (the timeouts backed off to probes 6.4 s apart), opens it
 * and loses what goes at once: it goes again after the path's RTO, not after the probes' backed-off
 * interval (which left a relay over a lossy link silent for a third of user_timeout, then longer). */
static void test_shrunk_window_reopen_lost(void **state)
{
	static uint8_t blob[3000];
	struct conn c = in_flight_then_window(41064, blob, sizeof(blob), 7, 0);
	unsigned ms;
	uint32_t got = 0;

	(void)state;
	assert_true(peer_holds_window(&c, 0, 30000, 0, 0) >= 5);
	eh_forget(&h);
	ack_to(&c, c.gnxt, 65535); /* it opens: the data goes, and is lost */
	assert_true(take_in_order(&c, blob, 0, 65535) > 0); /* (a segment: cwnd went down at the timeouts) */
	for (ms = 0; ms < 10000 && !got; ms += 100) {
		eh_forget(&h);
		eh_advance_ms(&h, 100);
		got = take_in_order(&c, blob, 0, 65535);
	}
	assert_true(got > 0);
	assert_true(ms <= 1000); /* (the initial RTO, 1 s: no RTT sample was taken) */
	assert_int_equal(S()->tcp_active, 1);
}

/* The same peer shrinks its window to 512 bytes instead (below a segment, and below half the largest
 * it offered): the timeouts send what fits (sender SWS avoidance alone would send nothing), and each
 * stretch it acknowledges moves on, all 3000 bytes delivered in order, nothing reset. */
static void test_shrunk_window_small(void **state)
{
	static uint8_t blob[3000];
	struct conn c = in_flight_then_window(41062, blob, sizeof(blob), 13, 4); /* 4 << 7: 512 bytes */
	uint32_t got = 0;

	(void)state;
	for (unsigned i = 0; i < 200 && got < sizeof(blob); i++) {
		uint32_t was = got;

		eh_forget(&h);
		eh_advance_ms(&h, 100);
		if (arp_requests_for(EH_PEER_IP))
			arp_reply(EH_PEER_IP, eh_peer_mac);
		got = take_in_order(&c, blob, got, 512);
		if (got != was) {
			learn_tsecr(&c);
			ack_to(&c, c.gnxt + got, 4);
		}
	}
	assert_int_equal(got, sizeof(blob));
	assert_int_equal(S()->tcp_timeouts, 0);
	assert_int_equal(S()->tcp_active, 1);
}

/* ---- device offloads: LRO chains in, TSO frames out, checksums the device vouched for ---- */

/* A TSO frame built from a send buffer's copies spans 30-40 of the port's mbufs: while the device
 * is behind, the frames TCP queues stop at ETH_TXQ_SEGS_STOP mbufs or a quarter of the pool's share
 * (here 1023 of 4095), not at 448 frames (14000 mbufs at 1500 bytes, more than the pool, which the
 * RX ring and every connection share); the connections held back send once the device takes frames.
 * White box: the queue's mbuf count, and windows set as long transfers would have grown them. */
static void test_output_mbuf_bound(void **state)
{
	static uint8_t blob[256 * 1024];
	uint64_t out0;
	unsigned most = 0;

	(void)state;
	for (unsigned i = 0; i < 12; i++) {
		struct conn c = established_echo((uint16_t)(41080 + i));
		eth_tcb_of(session_of(c.pport)->s)->cwnd = 1u << 22;
	}
	h.tx_stalled = true;
	eh_forget(&h);
	out0 = S()->tcp_bytes_out;
	for (unsigned i = 0; i < 12; i++) {
		struct eh_session *se = session_of((uint16_t)(41080 + i));
		assert_int_equal(se->s->ops->write(se->s, blob, sizeof(blob)), sizeof(blob));
		eh_poll(&h);
		most = h.st->n_tx_segs > most ? h.st->n_tx_segs : most;
	}
	assert_true(most > 900 && most <= h.st->segs_stop + 64); /* (one frame past the limit at most) */
	h.tx_stalled = false;
	for (unsigned i = 0; i < 50 && S()->tcp_bytes_out - out0 < 12 * sizeof(blob); i++) {
		eh_forget(&h);
		eh_poll(&h);
	}
	assert_int_equal(S()->tcp_bytes_out - out0, 12 * sizeof(blob));
	assert_int_equal(h.st->n_tx_segs, 0);
}

#define LRO_LEN 4000 /* a payload LRO merged from 3 segments */
#define TS_HDR	(RTE_ETHER_HDR_LEN + 20 + 32) /* Ethernet, IPv4, TCP with timestamps */

static uint8_t payload[LRO_LEN];

static int setup_ofl(void **state)
{
	(void)state;
	for (unsigned i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + (i >> 8));
	return eh_start_ofl(&h, 4, 16384, 16384, EH_OFFLOADS_ALL);
}

/* with offloads and a send buffer of four TSO frames */
static int setup_ofl_big_sbuf(void **state)
{
	(void)state;
	return eh_start_ofl(&h, 4, 16384, 256 * 1024, EH_OFFLOADS_ALL);
}

/* with offloads and a kernel TAP (a gateway of an HA pair) */
static int setup_ofl_exc(void **state)
{
	return with_exc(setup_ofl(state));
}

static int setup_plain(void **state)
{
	(void)state;
	for (unsigned i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + (i >> 8));
	return eh_start(&h, 4, 16384, 16384);
}

/* Builds the peer's next in-order segment of C with LEN bytes of DATA (timestamps as feed does) in
 * F (EH_FRAME_MAX bytes). Returns the frame length. */
static size_t data_frame(struct conn *c, uint8_t *f, const uint8_t *data, size_t len)
{
	uint8_t opt[12] = {1, 1, 8, 10};

	c->tsval += 10;
	opt[4] = (uint8_t)(c->tsval >> 24);
	opt[5] = (uint8_t)(c->tsval >> 16);
	opt[6] = (uint8_t)(c->tsval >> 8);
	opt[7] = (uint8_t)c->tsval;
	return eh_tcp_frame_big(f, c->pport, c->gport, c->pnxt, c->gnxt, RTE_TCP_ACK_FLAG | RTE_TCP_PSH_FLAG, 65535,
				opt, sizeof(opt), data, len);
}

/* Feeds FRAME (LEN bytes) as RX says and polls. */
static void feed_rx(const uint8_t *frame, size_t len, const struct eh_rx *rx)
{
	eh_forget(&h);
	eh_feed_rx(&h, frame, len, rx);
	eh_poll(&h);
}

/* with offloads and a kernel TAP whose path carries 1000 frames a second (a burst of 50) */
static int setup_ofl_exc_1000(void **state)
{
	int ret = setup_ofl(state);

	if (ret)
		return ret;
	h.st->c.exc = eth_exc_create_detached(1000, 1);
	return h.st->c.exc ? 0 : -ENOMEM;
}

/* kernel_tap_rate counts the frames the TAP gets: a 4000-byte payload LRO merged, for a port with no
 * ibgwd listener (the kernel's), is three 1514-byte frames there, and takes three frames' worth of the
 * rate. Counted as one, a flood of 64 KiB merged frames went to the kernel at about 44 times the
 * rate, and kept the control thread writing to the TAP. */
static void test_exc_rate_counts_tap_frames(void **state)
{
	static uint8_t f[EH_FRAME_MAX];
	const struct eh_rx rx = {.n_cuts = 2,
				 .cuts = {TS_HDR + 1400, TS_HDR + 2700},
				 .ol_flags = RTE_MBUF_F_RX_LRO | RTE_MBUF_F_RX_L4_CKSUM_GOOD,
				 .tso_segsz = 1448};
	struct conn c = {.pport = 40600, .gport = 22, .pnxt = 5000, .gnxt = 1, .ts = true, .tsval = 100};
	uint64_t k0 = S()->exc_to_kernel, d0 = S()->exc_rate_drops, k;

	(void)state;
	for (unsigned i = 0; i < 60; i++) {
		feed_rx(f, data_frame(&c, f, payload, LRO_LEN), &rx);
		c.pnxt += LRO_LEN;
	}
	k = S()->exc_to_kernel - k0;
	/* the burst (50 ms at 1000/s: 50 frames) holds 17 of these, the first when the bucket is empty */
	assert_true(k >= 16 && k <= 18);
	assert_int_equal(k + S()->exc_rate_drops - d0, 60);
}

/* A 4000-byte payload merged by LRO (3 segments of a chain, flagged good) reaches the echo intact,
 * counts as the 3 segments it was, and goes back as ONE TSO frame that the device cuts in segments
 * of an MSS. */
static void test_lro_chain_echo_tso(void **state)
{
	static uint8_t f[EH_FRAME_MAX];
	struct conn c = established_echo(41100);
	const struct eh_rx rx = {.n_cuts = 2,
				 .cuts = {TS_HDR + 1400, TS_HDR + 2700},
				 .ol_flags = RTE_MBUF_F_RX_LRO | RTE_MBUF_F_RX_L4_CKSUM_GOOD,
				 .tso_segsz = 1448};
	uint64_t seg_in = S()->tcp_segments_in, seg_out = S()->tcp_segments_out;
	size_t len = data_frame(&c, f, payload, LRO_LEN);
	struct out o;

	(void)state;
	assert_int_equal(len, TS_HDR + LRO_LEN);
	feed_rx(f, len, &rx);
	c.pnxt += LRO_LEN;
	assert_int_equal(S()->tcp_bytes_in, LRO_LEN);
	assert_int_equal(S()->tcp_segments_in - seg_in, 3);
	assert_int_equal(S()->tcp_header_errors + S()->ip_header_errors + S()->tcp_checksum_errors, 0);
	o = one();
	assert_int_equal(o.seq, c.gnxt);
	assert_int_equal(o.ack, c.pnxt);
	assert_int_equal(o.len, LRO_LEN);
	assert_memory_equal(o.data, payload, LRO_LEN);
	assert_true(o.nb_segs >= 2); /* 4000 bytes outgrow one buffer */
	assert_true(o.ol_flags & RTE_MBUF_F_TX_TCP_SEG);
	assert_int_equal(o.tso_segsz, 1448); /* MSS 1460 less the timestamps */
	assert_int_equal(S()->tcp_segments_out - seg_out, 3);
	assert_int_equal(S()->tcp_bytes_out, LRO_LEN);
	/* the peer acknowledges: nothing left in flight, nothing resent */
	c.gnxt += LRO_LEN;
	ack_all(&c, 65535);
	eh_forget(&h);
	eh_advance_ms(&h, 3000);
	assert_int_equal(S()->tcp_retransmits, 0);
	assert_int_equal(h.n_kept, 0);
}

/* Without offloads, an LRO chain's checksum is verified in software over the segments, whatever
 * their boundaries, and the echo goes back in MSS-sized single-buffer frames. */
static void check_chain_sw_echo(uint32_t cut1, uint32_t cut2, uint16_t pport)
{
	static uint8_t f[EH_FRAME_MAX];
	struct conn c = established_echo(pport);
	const struct eh_rx rx = {.n_cuts = 2, .cuts = {cut1, cut2}};
	uint64_t bytes_in = S()->tcp_bytes_in;
	struct out v[8];
	uint32_t got = 0;
	unsigned n;

	feed_rx(f, data_frame(&c, f, payload, LRO_LEN), &rx);
	c.pnxt += LRO_LEN;
	assert_int_equal(S()->tcp_checksum_errors, 0);
	assert_int_equal(S()->tcp_bytes_in - bytes_in, LRO_LEN);
	n = sent(v, 8);
	assert_int_equal(n, 3);
	for (unsigned k = 0; k < n; k++) {
		assert_int_equal(v[k].nb_segs, 1);
		assert_int_equal(v[k].ol_flags & RTE_MBUF_F_TX_OFFLOAD_MASK, 0);
		assert_int_equal(v[k].seq, c.gnxt + got);
		assert_true(v[k].len <= 1448);
		assert_memory_equal(v[k].data, payload + got, v[k].len);
		got += v[k].len;
	}
	assert_int_equal(got, LRO_LEN);
}

static void test_lro_chain_sw_checksum(void **state)
{
	(void)state;
	check_chain_sw_echo(TS_HDR + 1400, TS_HDR + 2700, 41105); /* even boundaries */
}

/* A chain whose headers do not all lie in its first segment is dropped and counted, offload flags
 * or not; the connection is unharmed and takes the same bytes once they come whole. */
static void test_chain_split_headers(void **state)
{
	static uint8_t f[EH_FRAME_MAX];
	struct conn c = established_echo(41110);
	struct eh_rx rx = {.n_cuts = 2,
			   .cuts = {0, TS_HDR + 2000},
			   .ol_flags = RTE_MBUF_F_RX_LRO | RTE_MBUF_F_RX_L4_CKSUM_GOOD,
			   .tso_segsz = 1448};
	size_t len;

	(void)state;
	len = data_frame(&c, f, payload, LRO_LEN);
	/* the TCP header's first 13 bytes (its data offset) in the first segment, the rest not */
	rx.cuts[0] = RTE_ETHER_HDR_LEN + 20 + 13;
	feed_rx(f, len, &rx);
	assert_int_equal(S()->tcp_header_errors, 1);
	/* the fixed header in, the options (timestamps) split */
	rx.cuts[0] = TS_HDR - 5;
	feed_rx(f, len, &rx);
	assert_int_equal(S()->tcp_header_errors, 2);
	/* the IPv4 header split */
	rx.cuts[0] = RTE_ETHER_HDR_LEN + 10;
	feed_rx(f, len, &rx);
	assert_int_equal(S()->ip_header_errors, 1);
	/* the same with every segment's data at its buffer's end (nothing to read past) */
	rx.tight = true;
	rx.cuts[0] = TS_HDR - 1;
	feed_rx(f, len, &rx);
	assert_int_equal(S()->tcp_header_errors, 3);
	assert_int_equal(S()->tcp_bytes_in, 0);
	assert_int_equal(h.n_kept, 0);
	assert_int_equal(S()->tcp_active, 1);
	/* headers whole in the first segment (and the first buffer full): taken */
	rx.cuts[0] = TS_HDR;
	feed_rx(f, len, &rx);
	assert_int_equal(S()->tcp_bytes_in, LRO_LEN);
	assert_int_equal(S()->tcp_header_errors, 3);
	c.pnxt += LRO_LEN;
	assert_int_equal(one().ack, c.pnxt);
}

/* A chain is never padded: an IP total length short of the chain's length (or past it) drops it,
 * while a single buffer's Ethernet padding is trimmed. */
static void test_chain_ip_length(void **state)
{
	static uint8_t f[EH_FRAME_MAX + 100];
	struct conn c = established_echo(41120);
	const struct eh_rx rx = {.n_cuts = 2, .cuts = {TS_HDR + 1400, TS_HDR + 2700}};
	size_t len;
	struct out o;

	(void)state;
	len = data_frame(&c, f, payload, LRO_LEN);
	memset(f + len, 0, 100);
	feed_rx(f, len + 100, &rx); /* 100 bytes past the IP packet */
	assert_int_equal(S()->ip_header_errors, 1);
	feed_rx(f, len + 1, &rx);
	assert_int_equal(S()->ip_header_errors, 2);
	feed_rx(f, len - 1, &rx); /* a byte short */
	assert_int_equal(S()->ip_header_errors, 3);
	assert_int_equal(S()->tcp_bytes_in, 0);
	assert_int_equal(h.n_kept, 0);
	/* one buffer with padding: the padding is cut, the data taken */
	len = data_frame(&c, f, payload, 100);
	memset(f + len, 0, 20);
	feed_rx(f, len + 20, NULL);
	c.pnxt += 100;
	assert_int_equal(S()->ip_header_errors, 3);
	assert_int_equal(S()->tcp_bytes_in, 100);
	o = one();
	assert_int_equal(o.len, 100);
	assert_memory_equal(o.data, payload, 100);
}

/* Feeds the peer's next segment of C with a wrong TCP checksum, flagged FLAGS by the device, as one
 * buffer or (CHAIN) an LRO chain. Returns whether the engine took it. */
static bool feed_bad_sum(struct conn *c, uint64_t flags, bool chain, size_t len)
{
	static uint8_t f[EH_FRAME_MAX];
	const struct eh_rx rx = {.n_cuts = chain ? 2 : 0, .cuts = {TS_HDR + 1000, TS_HDR + 2000}, .ol_flags = flags};
	size_t flen = data_frame(c, f, payload, len);
	uint64_t in = S()->tcp_bytes_in;

	f[RTE_ETHER_HDR_LEN + 20 + 16] ^= 0x5a; /* the checksum field */
	feed_rx(f, flen, &rx);
	if (S()->tcp_bytes_in == in)
		return false;
	assert_int_equal(S()->tcp_bytes_in - in, len);
	c->pnxt += (uint32_t)len;
	return true;
}

/* With RX_CSUM the engine believes the device: GOOD (or NONE: verified, field not filled) frames are
 * taken unchecked, single or chained; BAD and UNKNOWN are verified in software. */
static void test_rx_csum_trusted(void **state)
{
	struct conn c = established_echo(41130);
	struct out o;

	(void)state;
	assert_true(feed_bad_sum(&c, RTE_MBUF_F_RX_L4_CKSUM_GOOD, false, 100));
	o = one();
	assert_int_equal(o.len, 100);
	assert_memory_equal(o.data, payload, 100);
	c.gnxt += 100;
	assert_true(feed_bad_sum(&c, RTE_MBUF_F_RX_L4_CKSUM_NONE, false, 200));
	c.gnxt += 200;
	assert_true(feed_bad_sum(&c, RTE_MBUF_F_RX_L4_CKSUM_GOOD | RTE_MBUF_F_RX_LRO, true, LRO_LEN));
	c.gnxt += LRO_LEN;
	assert_int_equal(S()->tcp_checksum_errors, 0);
	assert_false(feed_bad_sum(&c, RTE_MBUF_F_RX_L4_CKSUM_BAD, false, 100));
	assert_false(feed_bad_sum(&c, RTE_MBUF_F_RX_L4_CKSUM_UNKNOWN, false, 100));
	assert_false(feed_bad_sum(&c, RTE_MBUF_F_RX_L4_CKSUM_UNKNOWN | RTE_MBUF_F_RX_LRO, true, LRO_LEN));
	assert_int_equal(S()->tcp_checksum_errors, 3);
	assert_int_equal(S()->tcp_bytes_in, 100 + 200 + LRO_LEN);
}

/* Without RX_CSUM a device's GOOD means nothing: the wrong checksum is found and counted. */
static void test_rx_csum_not_trusted(void **state)
{
	struct conn c = established_echo(41140);

	(void)state;
	assert_false(feed_bad_sum(&c, RTE_MBUF_F_RX_L4_CKSUM_GOOD, false, 100));
	assert_false(feed_bad_sum(&c, RTE_MBUF_F_RX_L4_CKSUM_NONE, false, 100));
	assert_false(feed_bad_sum(&c, RTE_MBUF_F_RX_L4_CKSUM_GOOD | RTE_MBUF_F_RX_LRO, true, LRO_LEN));
	assert_int_equal(S()->tcp_checksum_errors, 3);
	assert_int_equal(S()->tcp_bytes_in, 0);
	assert_int_equal(h.n_kept, 0);
}

/* An echo request to an address of the kernel TAP's (a VIP) is answered from that address, not from
 * [eth] address: a pinger (a VIP's health check, conntrack) takes no reply from another. */
static void test_echo_from_address_pinged(void **state)
{
	uint8_t msg[64] = {0}, f[200];
	struct rte_icmp_hdr *ic = (struct rte_icmp_hdr *)msg;
	struct eth_local_set ls = {.gen = 1, .n = 1};
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + RTE_ETHER_HDR_LEN);
	size_t len;

	(void)state;
	ls.a[0].addr = xlt_ip_v4(EH_GW_IP2);
	ls.a[0].state = ETH_LOCAL_UP;
	eth_stack_set_locals(h.st, &ls);
	eh_poll(&h); /* (the new address announced) */
	ic->icmp_type = RTE_IP_ICMP_ECHO_REQUEST;
	ic->icmp_ident = rte_cpu_to_be_16(9);
	ic->icmp_cksum = (uint16_t)~rte_raw_cksum(msg, sizeof(msg));
	for (unsigned k = 0; k < 2; k++) {
		uint32_t to = k ? EH_GW_IP2 : EH_GW_IP;
		const struct rte_ipv4_hdr *r;

		len = eh_ip_frame(f, IPPROTO_ICMP, msg, sizeof(msg), 0);
		ip->dst_addr = to;
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		feed_rx(f, len, NULL);
		assert_int_equal(h.n_kept, 1);
		r = rte_pktmbuf_mtod_offset(h.kept[0], const struct rte_ipv4_hdr *, RTE_ETHER_HDR_LEN);
		assert_int_equal(r->src_addr, to);
		assert_int_equal(r->dst_addr, EH_PEER_IP);
	}
	assert_int_equal(S()->icmp_echo_replies, 2);
	eth_stack_set_locals(h.st, NULL);
}

/* ICMP that ibgwd does not answer goes to the kernel only when the kernel's own flows may need it
 * (errors, echo replies); a redirect (which would re-point the kernel's routes), a timestamp request
 * (answered with its clock), an echo request with a nonzero code are refused and counted. */
static void test_icmp_refused(void **state)
{
	static const struct {
		uint8_t type, code;
		bool refused;
	} v[] = {{5, 1, true}, {13, 0, true}, {17, 0, true}, {9, 0, true}, {8, 1, true}, {44, 0, true},
	         {3, 1, false}, {11, 0, false}, {0, 0, false}};
	uint8_t msg[64] = {0}, f[200];
	struct rte_icmp_hdr *ic = (struct rte_icmp_hdr *)msg;

	(void)state;
	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint64_t r0 = S()->icmp_refused, e0 = S()->icmp_errors;

		ic->icmp_type = v[i].type;
		ic->icmp_code = v[i].code;
		ic->icmp_cksum = 0;
		ic->icmp_cksum = (uint16_t)~rte_raw_cksum(msg, sizeof(msg));
		feed_rx(f, eh_ip_frame(f, IPPROTO_ICMP, msg, sizeof(msg), 0), NULL);
		assert_int_equal(S()->icmp_refused - r0, v[i].refused);
		assert_int_equal(S()->icmp_errors, e0);
		assert_int_equal(h.n_kept, 0); /* (no answer either way) */
	}
}

static size_t tcp6(uint8_t *out, const uint8_t *ext, size_t extlen, uint16_t sport, uint16_t dport,
                   uint32_t seq, uint32_t ack, uint8_t flags, const uint8_t *opt, size_t optlen,
                   const void *data, size_t len);

static size_t frame6(uint8_t *out, const uint8_t *src, const uint8_t *dst, uint8_t first, const uint8_t *ext,
                     size_t extlen, uint8_t proto, const void *l4, size_t l4len, uint8_t hlim);

/* Feeds the ICMPv6 message MSG (LEN bytes; behind the EXTLEN bytes of extension headers EXT, the first
 * of type FIRST, when EXT is not NULL) from SRC to DST with hop limit HLIM, in a frame to the Ethernet
 * group of DST when GROUP_MAC, else to the gateway's MAC. Checks that it drew no answer, that REFUSED
 * of it was refused (0 or 1), PUNTED handed to the kernel TAP. */
static void feed_icmp6_kernel_at(int line, const uint8_t *src, const uint8_t *dst, uint8_t first,
                                 const uint8_t *ext, size_t extlen, const void *msg, size_t len, uint8_t hlim,
                                 bool group_mac, unsigned refused, unsigned punted)
{
	uint64_t r0 = S()->icmp_refused, k0 = S()->exc_to_kernel;
	uint8_t f[400];
	size_t n = frame6(f, src, dst, first, ext, extlen, IPPROTO_ICMPV6, msg, len, hlim);

	if (group_mac) {
		f[0] = 0x33, f[1] = 0x33;
		memcpy(f + 2, dst + 12, 4);
	}
	feed_rx(f, n, NULL);
	if (S()->icmp_refused - r0 != refused || S()->exc_to_kernel - k0 != punted)
		fprintf(stderr, "feed_icmp6_kernel() at line %d: %u refused, %u to the kernel\n", line,
		        (unsigned)(S()->icmp_refused - r0), (unsigned)(S()->exc_to_kernel - k0));
	assert_int_equal(S()->icmp_refused - r0, refused);
	assert_int_equal(S()->exc_to_kernel - k0, punted);
	assert_int_equal(h.n_kept, 0);
}
#define feed_icmp6_kernel(...) feed_icmp6_kernel_at(__LINE__, __VA_ARGS__)

/* ICMPv6 that ibgwd does not answer goes to the kernel TAP only when the kernel's own flows may need
 * it, as ICMP does: a redirect and a router advertisement from an on-link router (hop limit 255),
 * which would re-point the kernel's routes or give it a default router, are refused and counted, to
 * our address, to all-nodes, to a group the kernel joined (in the port's group or ours, behind an
 * extension header) and without address6 alike; so are a router solicitation and an echo request
 * with a nonzero code, and an advertisement behind more extension headers than we walk. An echo
 * reply, a "packet too big" and a "port unreachable" for one of the kernel's connections (none of
 * ours) and an MLD query reach the TAP. */
static void test_icmp6_refused(void **state)
{
	static const uint8_t router[16] = {0xfe, 0x80, [15] = 0x99}, all_nodes[16] = {0xff, 0x02, [15] = 1},
	                     vrrp6[16] = {0xff, 0x02, [15] = 0x12};
	/* destination options (padding alone) and hop-by-hop with MLD's router alert, before ICMPv6 */
	static const uint8_t dstopt[8] = {IPPROTO_ICMPV6, 0, 1, 4},
	                     alert[8] = {IPPROTO_ICMPV6, 0, 5, 2, 0, 0, 1, 0};
	uint8_t redirect[40] = {137}, ra[16] = {134, 0, 0, 0, 64, 0, 0x07, 0x08}, rs[8] = {133},
	        echo1[16] = {128, 1}, reply[16] = {129, 0, 0, 0, 0, 9, 0, 1}, query[24] = {130},
	        ptb[8 + 40 + 20] = {2}, unreach[8 + 40 + 8] = {1, 4}, deep[9 * 8];
	struct rte_ipv6_hdr *q = (struct rte_ipv6_hdr *)(ptb + 8);
	uint64_t e0;

	(void)state;
	/* the redirect names the better first hop (the target) for the destination */
	memcpy(redirect + 8, router, 16);
	memcpy(redirect + 24, eh_peer_ip6, 16);
	feed_icmp6_kernel(router, eh_gw_ip6, 0, NULL, 0, redirect, sizeof(redirect), 255, false, 1, 0);
	feed_icmp6_kernel(router, all_nodes, 0, NULL, 0, ra, sizeof(ra), 255, true, 1, 0);
	feed_icmp6_kernel(router, eh_gw_ip6, 0, NULL, 0, ra, sizeof(ra), 255, false, 1, 0);
	feed_icmp6_kernel(router, vrrp6, 0, NULL, 0, ra, sizeof(ra), 255, true, 1, 0);
	feed_icmp6_kernel(router, vrrp6, 60, dstopt, 8, ra, sizeof(ra), 255, false, 1, 0);
	feed_icmp6_kernel(eh_peer_ip6, eh_gw_ip6, 0, NULL, 0, rs, sizeof(rs), 255, false, 1, 0);
	feed_icmp6_kernel(eh_peer_ip6, eh_gw_ip6, 0, NULL, 0, echo1, sizeof(echo1), 64, false, 1, 0);
	/* one destination options header more than input walks: what it hides is not passed unread */
	for (unsigned i = 0; i < 9; i++) {
		memcpy(deep + i * 8, dstopt, 8);
		deep[i * 8] = i < 8 ? 60 : IPPROTO_ICMPV6;
	}
	e0 = S()->ip6_header_errors;
	feed_icmp6_kernel(router, vrrp6, 60, deep, sizeof(deep), ra, sizeof(ra), 255, true, 0, 0);
	assert_int_equal(S()->ip6_header_errors, e0 + 1);
	/* an advertisement in a first fragment (behind the fragment header, and behind destination
	 * options after it) to a group the kernel joined is judged as a whole one; a later fragment
	 * carries nothing to judge (fragments to our own groups ibgwd drops itself) */
	{
		const uint8_t frag1[8] = {IPPROTO_ICMPV6, 0, 0, 1, 0, 0, 0, 7}, /* offset 0, more fragments */
		              frag1d[16] = {60, 0, 0, 1, 0, 0, 0, 8, IPPROTO_ICMPV6, 0, 1, 4},
		              frag2[8] = {IPPROTO_ICMPV6, 0, 0, 8, 0, 0, 0, 7}; /* offset 8 bytes */
		feed_icmp6_kernel(router, vrrp6, 44, frag1, 8, ra, sizeof(ra), 255, true, 1, 0);
		feed_icmp6_kernel(router, vrrp6, 44, frag1d, 16, ra, sizeof(ra), 255, true, 1, 0);
		feed_icmp6_kernel(router, vrrp6, 44, frag2, 8, ra, sizeof(ra), 255, true, 0, 1);
	}

	/* what the kernel's own flows need: the reply to its ping, errors for its connection from port
	 * 2222 (packet too big: its path MTU discovery), a query for the groups it joined */
	feed_icmp6_kernel(eh_peer_ip6, eh_gw_ip6, 0, NULL, 0, reply, sizeof(reply), 64, false, 0, 1);
	q->vtc_flow = rte_cpu_to_be_32(6u << 28);
	q->payload_len = rte_cpu_to_be_16(1460);
	q->proto = IPPROTO_TCP;
	q->hop_limits = 64;
	memcpy(q->src_addr, eh_gw_ip6, 16);
	memcpy(q->dst_addr, eh_peer_ip6, 16);
	ptb[48] = 2222 >> 8, ptb[49] = 2222 & 0xff, ptb[50] = 40500 >> 8, ptb[51] = 40500 & 0xff;
	ptb[6] = 0x05; /* (MTU 1280) */
	feed_icmp6_kernel(router, eh_gw_ip6, 0, NULL, 0, ptb, sizeof(ptb), 63, false, 0, 1);
	assert_int_equal(S()->icmp_too_big_in, 0); /* (not ours to act on) */
	memcpy(unreach + 8, ptb + 8, 40 + 8);
	unreach[8 + 6] = IPPROTO_UDP;
	feed_icmp6_kernel(eh_peer_ip6, eh_gw_ip6, 0, NULL, 0, unreach, sizeof(unreach), 64, false, 0, 1);
	feed_icmp6_kernel(router, all_nodes, 0, alert, 8, query, sizeof(query), 1, true, 0, 1);

	/* without address6 all IPv6 is the kernel's, its echo requests too; still no advertisement or
	 * redirect */
	h.st->c.prefix6 = 0;
	feed_icmp6_kernel(router, all_nodes, 0, NULL, 0, ra, sizeof(ra), 255, true, 1, 0);
	feed_icmp6_kernel(router, eh_gw_ip6, 0, NULL, 0, redirect, sizeof(redirect), 255, false, 1, 0);
	reply[0] = 128;
	feed_icmp6_kernel(eh_peer_ip6, eh_gw_ip6, 0, NULL, 0, reply, sizeof(reply), 64, false, 0, 1);
	h.st->c.prefix6 = 64;
}

/* A TCP/IPv6 frame of PLEN bytes (pattern i * 7 + 3), flags FLAGS, its checksum right, as a chain of
 * mbufs of 1000 bytes each (what an LRO port or a jumbo af_packet frame brings); NEXT the IPv6 next
 * header (TCP, or an extension header that then opens the plen). */
static struct rte_mbuf *split6_frame(uint32_t plen, uint8_t flags, uint8_t next)
{
	static uint8_t f[16384];
	const uint32_t hdr = RTE_ETHER_HDR_LEN + 40 + 32, len = hdr + plen;
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(f + RTE_ETHER_HDR_LEN);
	struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)(ip + 1);
	struct rte_mbuf *head = NULL;

	memset(f, 0, hdr);
	f[12] = 0x86, f[13] = 0xdd;
	ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16((uint16_t)(32 + plen));
	ip->proto = next;
	ip->hop_limits = 64;
	memcpy(ip->src_addr, eh_peer_ip6, 16);
	memcpy(ip->dst_addr, eh_gw_ip6, 16);
	th->src_port = rte_cpu_to_be_16(40000);
	th->dst_port = rte_cpu_to_be_16(2222);
	th->sent_seq = rte_cpu_to_be_32(0xfffff000u); /* (wraps within the frame) */
	th->recv_ack = rte_cpu_to_be_32(77);
	th->data_off = 8 << 4; /* 12 bytes of options: NOP NOP timestamps */
	th->tcp_flags = flags;
	th->rx_win = rte_cpu_to_be_16(1000);
	((uint8_t *)(th + 1))[0] = 1, ((uint8_t *)(th + 1))[1] = 1, ((uint8_t *)(th + 1))[2] = 8,
	((uint8_t *)(th + 1))[3] = 10;
	for (uint32_t i = 0; i < plen; i++)
		f[hdr + i] = (uint8_t)(i * 7 + 3);
	th->cksum = rte_ipv6_udptcp_cksum(ip, th);
	for (uint32_t off = 0; off < len; off += 1000) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(eh_pool);
		uint32_t n = RTE_MIN(1000u, len - off);

		assert_non_null(m);
		memcpy(rte_pktmbuf_append(m, (uint16_t)n), f + off, n);
		if (!head)
			head = m;
		else
			assert_int_equal(rte_pktmbuf_chain(head, m), 0);
	}
	return head;
}

/* Long TCP over IPv6 for the kernel TAP (eth_exc_split_tcp6): cut into frames the TAP carries, each
 * with its headers, sequence number, flags (CWR on the first only, FIN and PSH on the last only) and a
 * right checksum, their payloads the frame's in order; LRO's segment size kept where smaller. Left as
 * they are (and the caller's): a frame whose checksum is wrong (its segments would carry sums nobody
 * checked), one with urgent data, one with an extension header before TCP, one short enough, one
 * that would need more frames than OUT holds, and a bare header in a padded frame. Every mbuf returns
 * to the pool. */
static void test_exc_split_tcp6(void **state)
{
	const uint32_t plen = 6000, hdr = RTE_ETHER_HDR_LEN + 40 + 32;
	const uint8_t all = RTE_TCP_CWR_FLAG | RTE_TCP_ACK_FLAG | RTE_TCP_PSH_FLAG | RTE_TCP_FIN_FLAG;
	unsigned base = rte_mempool_in_use_count(eh_pool);
	struct rte_mbuf *out[64], *m;
	unsigned n;

	(void)state;
	for (int lro = 0; lro < 2; lro++) {
		uint32_t mss = lro ? 1000 : 1514 - hdr, got = 0;

		m = split6_frame(plen, all, IPPROTO_TCP);
		if (lro) {
			m->ol_flags |= RTE_MBUF_F_RX_LRO;
			m->tso_segsz = 1000;
		}
		n = eth_exc_split_tcp6(eh_pool, m, 1514, out, 64);
		assert_int_equal(n, (plen + mss - 1) / mss);
		for (unsigned i = 0; i < n; i++) {
			const uint8_t *p = rte_pktmbuf_mtod(out[i], const uint8_t *);
			const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(p + RTE_ETHER_HDR_LEN);
			const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)(ip + 1);
			uint32_t len = RTE_MIN(mss, plen - got);
			uint8_t tmp[1600];
			struct rte_tcp_hdr *t2 = (struct rte_tcp_hdr *)(tmp + RTE_ETHER_HDR_LEN + 40);

			assert_int_equal(out[i]->nb_segs, 1);
			assert_true(out[i]->pkt_len <= 1514);
			assert_int_equal(out[i]->pkt_len, hdr + len);
			assert_int_equal(rte_be_to_cpu_16(ip->payload_len), 32 + len);
			assert_int_equal(rte_be_to_cpu_32(th->sent_seq), (uint32_t)(0xfffff000u + got));
			assert_int_equal(rte_be_to_cpu_32(th->recv_ack), 77);
			assert_int_equal(th->tcp_flags & RTE_TCP_CWR_FLAG, i == 0 ? RTE_TCP_CWR_FLAG : 0);
			assert_int_equal(th->tcp_flags & (RTE_TCP_FIN_FLAG | RTE_TCP_PSH_FLAG),
			                 i == n - 1 ? RTE_TCP_FIN_FLAG | RTE_TCP_PSH_FLAG : 0);
			assert_true(th->tcp_flags & RTE_TCP_ACK_FLAG);
			assert_int_equal(p[RTE_ETHER_HDR_LEN + 40 + 20 + 2], 8); /* the options came along */
			memcpy(tmp, p, out[i]->pkt_len); /* the sum computed anew over a copy must be the one it carries */
			t2->cksum = 0;
			assert_int_equal(rte_ipv6_udptcp_cksum((const struct rte_ipv6_hdr *)(tmp + RTE_ETHER_HDR_LEN), t2),
			                 th->cksum);
			for (uint32_t k = 0; k < len; k++)
				if (p[hdr + k] != (uint8_t)((got + k) * 7 + 3))
					fail_msg("segment %u byte %u differs", i, k);
			got += len;
		}
		assert_int_equal(got, plen);
		rte_pktmbuf_free_bulk(out, n);
		assert_int_equal(rte_mempool_in_use_count(eh_pool), base); /* (the frame was freed) */
	}
	/* left as they are */
	m = split6_frame(plen, RTE_TCP_ACK_FLAG, IPPROTO_TCP);
	*rte_pktmbuf_mtod_offset(rte_pktmbuf_lastseg(m), uint8_t *, 10) ^= 1; /* a flipped bit */
	assert_int_equal(eth_exc_split_tcp6(eh_pool, m, 1514, out, 64), 0);
	m->ol_flags |= RTE_MBUF_F_RX_L4_CKSUM_BAD; /* (the device said so) */
	assert_int_equal(eth_exc_split_tcp6(eh_pool, m, 1514, out, 64), 0);
	rte_pktmbuf_free(m);
	m = split6_frame(plen, RTE_TCP_ACK_FLAG | RTE_TCP_URG_FLAG, IPPROTO_TCP);
	assert_int_equal(eth_exc_split_tcp6(eh_pool, m, 1514, out, 64), 0);
	rte_pktmbuf_free(m);
	m = split6_frame(plen, RTE_TCP_ACK_FLAG, 60);
	assert_int_equal(eth_exc_split_tcp6(eh_pool, m, 1514, out, 64), 0);
	rte_pktmbuf_free(m);
	m = split6_frame(1400, RTE_TCP_ACK_FLAG, IPPROTO_TCP);
	assert_int_equal(eth_exc_split_tcp6(eh_pool, m, 1514, out, 64), 0);
	rte_pktmbuf_free(m);
	/* a bare header padded past what the TAP carries: nothing to cut, the frame still the caller's
	 * (it was freed, then sent and freed again by the caller: a double free into the port's pool) */
	m = split6_frame(0, RTE_TCP_ACK_FLAG, IPPROTO_TCP);
	assert_non_null(rte_pktmbuf_append(m, 1500));
	assert_int_equal(eth_exc_split_tcp6(eh_pool, m, 1514, out, 64), 0);
	assert_int_equal(rte_mempool_in_use_count(eh_pool), base + 1);
	rte_pktmbuf_free(m);
	m = split6_frame(plen, RTE_TCP_ACK_FLAG, IPPROTO_TCP);
	assert_int_equal(eth_exc_split_tcp6(eh_pool, m, 1514, out, 4), 0);
	rte_pktmbuf_free(m);
	assert_int_equal(rte_mempool_in_use_count(eh_pool), base);
}

/* Frame F (LEN bytes) in an mbuf flagged RX_L4_CKSUM_NONE (the device vouched for its data without
 * filling its TCP/UDP sum: a virtio peer's partial sum), its sum field at AT scrambled, given to the
 * exception path's filler: the sum it writes must be the one F had. */
static void check_fill(const uint8_t *f, size_t len, size_t at)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(eh_pool);
	uint8_t *p;

	assert_non_null(m);
	p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)len);
	memcpy(p, f, len);
	p[at] ^= 0x5a, p[at + 1] ^= 0xa5;
	m->ol_flags = RTE_MBUF_F_RX_L4_CKSUM_GOOD;
	eth_exc_fill_l4_cksum(m); /* (vouched for and filled: left alone) */
	assert_int_not_equal(memcmp(p + at, f + at, 2), 0);
	m->ol_flags = RTE_MBUF_F_RX_L4_CKSUM_NONE;
	eth_exc_fill_l4_cksum(m);
	assert_memory_equal(p + at, f + at, 2);
	assert_int_equal(m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK, RTE_MBUF_F_RX_L4_CKSUM_GOOD);
	rte_pktmbuf_free(m);
}

/* Frames punted to the kernel TAP get the TCP/UDP sum the device left unfilled: the TAP tells the
 * kernel nothing of offloads, which dropped them as corrupt (ssh or BGP behind a virtio port). */
static void test_exc_fill_l4_cksum(void **state)
{
	static const uint8_t data[333] = {1, 2, 3};
	uint8_t f[1600], udp[8 + 5] = {0x12, 0x34, 0x56, 0x78, 0, 13, 0, 0, 'h', 'e', 'l', 'l', 'o'};
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + RTE_ETHER_HDR_LEN);
	size_t n;

	(void)state;
	n = eh_tcp_frame(f, 40000, 22, 1, 2, RTE_TCP_ACK_FLAG, 1000, NULL, 0, data, sizeof(data));
	check_fill(f, n, RTE_ETHER_HDR_LEN + 20 + 16);
	n = eh_ip_frame(f, IPPROTO_UDP, udp, sizeof(udp), 0);
	((struct rte_udp_hdr *)(ip + 1))->dgram_cksum = rte_ipv4_udptcp_cksum(ip, ip + 1);
	check_fill(f, n, RTE_ETHER_HDR_LEN + 20 + 6);
	n = tcp6(f, NULL, 0, 40001, 22, 7, 8, RTE_TCP_ACK_FLAG, NULL, 0, data, 77);
	check_fill(f, n, RTE_ETHER_HDR_LEN + 40 + 16);
}

/* A segment for the VIP that matches nothing here goes to the flow peer (the gateway that held the VIP
 * before) with its TCP sum filled where the device vouched for it unfilled (RX_L4_CKSUM_NONE: a virtio
 * peer's partial sum): the other gateway's device checks it on the wire, and dropped every such
 * segment of the connections it drains (it went out as it came, the field holding the partial sum). */
static void test_flow_peer_partial_cksum(void **state)
{
	static const uint8_t fp_mac[6] = {0x02, 0x11, 0, 0, 0, 0x03};
	static const uint8_t data[100] = {9, 8, 7};
	const uint32_t fp = RTE_BE32(0xc6120003u); /* 198.18.0.3 */
	const struct eh_rx rx = {.ol_flags = RTE_MBUF_F_RX_L4_CKSUM_NONE};
	struct eth_local_set ls = {.gen = 1, .n = 1};
	uint8_t f[400];
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + RTE_ETHER_HDR_LEN);
	struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)(ip + 1);
	unsigned found = 0;
	size_t n;

	(void)state;
	ls.a[0].addr = xlt_ip_v4(EH_GW_IP2); /* the VIP, here now */
	ls.a[0].state = ETH_LOCAL_UP;
	eth_stack_set_locals(h.st, &ls);
	h.st->c.flow_peer = fp;
	h.flow_peer_out = true;
	n = eh_tcp_frame(f, 41950, EH_ECHO_PORT, 1000, 2000, RTE_TCP_ACK_FLAG, 65535, NULL, 0, data, sizeof(data));
	ip->dst_addr = EH_GW_IP2;
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	th->cksum = rte_ipv4_phdr_cksum(ip, 0); /* a partial sum, as a virtio sender leaves it */
	feed_rx(f, n, &rx);
	assert_int_equal(S()->flow_peer_out, 1);
	arp_reply(fp, fp_mac); /* (it waited for the peer's address) */
	for (unsigned i = 0; i < h.n_kept; i++) {
		const struct rte_ether_hdr *e = rte_pktmbuf_mtod(h.kept[i], const struct rte_ether_hdr *);
		uint8_t c[sizeof(f)];
		struct rte_ipv4_hdr *o = (struct rte_ipv4_hdr *)c;
		struct rte_tcp_hdr *ot = (struct rte_tcp_hdr *)(o + 1);
		uint16_t sum;
		if (e->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4))
			continue;
		assert_memory_equal(e->dst_addr.addr_bytes, fp_mac, 6);
		assert_int_equal(h.kept[i]->data_len, RTE_ETHER_HDR_LEN + 20 + 20 + sizeof(data));
		memcpy(c, e + 1, 20 + 20 + sizeof(data));
		sum = ot->cksum;
		ot->cksum = 0;
		assert_int_equal(sum, rte_ipv4_udptcp_cksum(o, ot));
		found++;
	}
	assert_int_equal(found, 1);
	h.flow_peer_out = false;
	h.st->c.flow_peer = 0;
	eth_stack_set_locals(h.st, NULL);
}

/* A frame whose sender is a group address (multicast, broadcast) is dropped: no station sends one,
 * and an answer to it (an echo reply, a neighbour advertisement) would reach every host; the same
 * for the zero address. */
static void test_group_source_dropped(void **state)
{
	uint8_t f[200];
	struct rte_ether_hdr *e = (struct rte_ether_hdr *)f;
	uint64_t drops0 = S()->frames_dropped;
	size_t len;

	(void)state;
	len = echo_frame(f, 0, 0);
	feed_rx(f, len, NULL);
	assert_int_equal(h.n_kept, 1); /* (answered from a unicast sender) */
	memset(e->src_addr.addr_bytes, 0xff, 6);
	feed_rx(f, len, NULL);
	assert_int_equal(h.n_kept, 0);
	memset(e->src_addr.addr_bytes, 0, 6); /* (nor the zero address) */
	feed_rx(f, len, NULL);
	assert_int_equal(h.n_kept, 0);
	assert_int_equal(S()->frames_dropped, drops0 + 2);
	assert_int_equal(S()->icmp_echo_replies, 1);
}

/* A datagram to our unicast address in a link-layer broadcast is dropped and counted (RFC 1122
 * 3.3.6): an echo request and a SYN get no answer; the same frames to our MAC do. */
static void test_link_broadcast_unicast_dropped(void **state)
{
	uint8_t f[200], s[200];
	size_t len, slen;

	(void)state;
	len = echo_frame(f, 0, 0);
	slen = eh_tcp_frame(s, 40300, EH_ECHO_PORT, 777, 0, RTE_TCP_SYN_FLAG, 65535, NULL, 0, NULL, 0);
	memset(((struct rte_ether_hdr *)f)->dst_addr.addr_bytes, 0xff, 6);
	memset(((struct rte_ether_hdr *)s)->dst_addr.addr_bytes, 0xff, 6);
	feed_rx(f, len, NULL);
	assert_int_equal(h.n_kept, 0);
	feed_rx(s, slen, NULL);
	assert_int_equal(h.n_kept, 0);
	assert_int_equal(S()->ip_link_bcast, 2);
	assert_int_equal(S()->icmp_in, 0);
	assert_int_equal(S()->tcp_syn_rcvd, 0);
	memcpy(((struct rte_ether_hdr *)f)->dst_addr.addr_bytes, eh_gw_mac, 6);
	memcpy(((struct rte_ether_hdr *)s)->dst_addr.addr_bytes, eh_gw_mac, 6);
	feed_rx(f, len, NULL);
	assert_int_equal(h.n_kept, 1);
	assert_int_equal(S()->icmp_echo_replies, 1);
	feed_rx(s, slen, NULL);
	assert_int_equal(one().flags, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG);
	assert_int_equal(S()->ip_link_bcast, 2);
}

static size_t frame6(uint8_t *out, const uint8_t *src, const uint8_t *dst, uint8_t first, const uint8_t *ext,
                     size_t extlen, uint8_t proto, const void *l4, size_t l4len, uint8_t hlim);

/* ARP request from SHA/SIP for TIP, broadcast. */
static void arp_request_for(const uint8_t *sha, uint32_t sip, uint32_t tip)
{
	eh_arp_for(&h, RTE_ARP_OP_REQUEST, sha, sip, tip);
	eh_poll(&h);
}

/* The kernel behind the TAP gets a copy of an ARP request for one of the TAP's addresses, and of a
 * gratuitous one (a neighbour announcing itself), not of a request for another address: it would
 * answer for any address of the host (its management address) with the gateway's MAC where
 * arp_ignore could not be set (systemd's ProtectKernelTunables makes /proc/sys read-only). */
static void test_arp_mirror_targets(void **state)
{
	const uint8_t mac[6] = {0x02, 0, 0, 5, 0, 1};
	const uint32_t other = RTE_BE32(0xc6120063u); /* 198.18.0.99: not ours */
	uint64_t k0 = S()->exc_to_kernel;

	(void)state;
	arp_request_for(mac, EH_PEER_IP, other);
	assert_int_equal(S()->exc_to_kernel, k0);
	arp_request_for(mac, EH_PEER_IP, EH_GW_IP);
	assert_int_equal(S()->exc_to_kernel, k0 + 1);
	arp_request_for(mac, EH_PEER_IP, EH_PEER_IP);
	assert_int_equal(S()->exc_to_kernel, k0 + 2);
	arp_reply(EH_PEER_IP, eh_peer_mac);
	assert_int_equal(S()->exc_to_kernel, k0 + 3);
}

/* Of EtherTypes other than IPv4, IPv6 and ARP only LLDP goes to the kernel: a VLAN tag (802.1Q, 802.1ad,
 * the old QinQ) never, to our MAC or to broadcast. A kernel takes a priority tag (VLAN 0) off and
 * handles what it carries as untagged: an echo request wrapped in one reached it past every check of
 * the exception path. Dropped and counted (reason "ethertype"); ibgwd answers none of them either. */
static void test_exc_other_ethertypes(void **state)
{
	static const uint16_t tags[3] = {0x8100, 0x88a8, 0x9100};
	static const uint8_t lldp_mac[6] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e};
	uint8_t f[200], g[204];
	uint64_t k0 = S()->exc_to_kernel;
	size_t len = echo_frame(f, 0, 0);

	(void)state;
	for (unsigned i = 0; i < 3; i++) {
		memcpy(g, f, 12);
		g[12] = (uint8_t)(tags[i] >> 8), g[13] = (uint8_t)tags[i], g[14] = 0, g[15] = 0;
		memcpy(g + 16, f + 12, len - 12);
		feed_rx(g, len + 4, NULL);
		assert_int_equal(h.n_kept, 0);
		memset(g, 0xff, 6);
		feed_rx(g, len + 4, NULL);
		assert_int_equal(h.n_kept, 0);
	}
	assert_int_equal(S()->exc_to_kernel, k0);
	assert_int_equal(S()->exc_type_drops, 6);
	assert_int_equal(S()->icmp_echo_replies, 0);
	memset(g, 0, sizeof(g));
	memcpy(g, lldp_mac, 6);
	memcpy(g + 6, eh_peer_mac, 6);
	g[12] = 0x88, g[13] = 0xcc;
	feed_rx(g, 60, NULL);
	assert_int_equal(S()->exc_to_kernel, k0 + 1);
	assert_int_equal(S()->exc_type_drops, 6);
}

/* The same in a link-layer multicast frame, with a kernel TAP: an echo request to our address in a
 * frame to an IPv4 group MAC (which went to the kernel unchecked: Linux takes unicast IP in an L2
 * multicast frame, a redirect from a spoofed gateway among it) or to IPv6's all-nodes group is
 * dropped and counted, not punted, not answered; a datagram to an IPv4 group (VRRP) in such a frame
 * still reaches the kernel. */
static void test_link_group_unicast_dropped(void **state)
{
	static const uint8_t v4_group[6] = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01},
	                     all_nodes6[6] = {0x33, 0x33, 0x00, 0x00, 0x00, 0x01},
	                     vrrp_mac[6] = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x12};
	uint8_t f[200], vrrp[40] = {0};
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + RTE_ETHER_HDR_LEN);
	uint64_t k0 = S()->exc_to_kernel;
	size_t len;

	(void)state;
	len = echo_frame(f, 0, 0);
	memcpy(((struct rte_ether_hdr *)f)->dst_addr.addr_bytes, v4_group, 6);
	feed_rx(f, len, NULL);
	memcpy(((struct rte_ether_hdr *)f)->dst_addr.addr_bytes, all_nodes6, 6);
	feed_rx(f, len, NULL);
	assert_int_equal(h.n_kept, 0);
	assert_int_equal(S()->ip_link_bcast, 2);
	assert_int_equal(S()->exc_to_kernel, k0);
	assert_int_equal(S()->icmp_echo_replies, 0);
	/* VRRP to 224.0.0.18 in its group's frame: the kernel's */
	len = eh_ip_frame(f, 112, vrrp, sizeof(vrrp), 0);
	ip->dst_addr = rte_cpu_to_be_32(0xe0000012);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	memcpy(((struct rte_ether_hdr *)f)->dst_addr.addr_bytes, vrrp_mac, 6);
	feed_rx(f, len, NULL);
	assert_int_equal(S()->exc_to_kernel, k0 + 1);
	assert_int_equal(S()->ip_link_bcast, 2);
	/* IPv6 the same: an echo request to our address6 in a broadcast, all-nodes or other group's
	 * frame is dropped, not answered, not punted */
	{
		static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		                     other6[6] = {0x33, 0x33, 0x00, 0x00, 0x00, 0x12};
		const uint8_t *macs[3] = {bcast, all_nodes6, other6};
		uint8_t echo6[16] = {128};

		len = frame6(f, NULL, NULL, 0, NULL, 0, IPPROTO_ICMPV6, echo6, sizeof(echo6), 64);
		for (unsigned i = 0; i < 3; i++) {
			memcpy(((struct rte_ether_hdr *)f)->dst_addr.addr_bytes, macs[i], 6);
			feed_rx(f, len, NULL);
		}
		assert_int_equal(h.n_kept, 0);
		assert_int_equal(S()->ip_link_bcast, 5);
		assert_int_equal(S()->exc_to_kernel, k0 + 1);
		assert_int_equal(S()->icmp6_echo_replies, 0);
		memcpy(((struct rte_ether_hdr *)f)->dst_addr.addr_bytes, eh_gw_mac, 6);
		feed_rx(f, len, NULL);
		assert_int_equal(S()->icmp6_echo_replies, 1); /* (to our MAC: answered) */
		eh_forget(&h);
	}
}

/* The IPv4 identification of kept frame I. */
static uint16_t ip_id_of(unsigned i)
{
	return rte_be_to_cpu_16(
	    rte_pktmbuf_mtod_offset(h.kept[i], const struct rte_ipv4_hdr *, RTE_ETHER_HDR_LEN)->packet_id);
}

/* An echo request from the peer; returns the ID of its reply. */
static uint16_t ping_id(void)
{
	uint8_t f[200];

	feed_rx(f, echo_frame(f, 0, 0), NULL);
	assert_int_equal(h.n_kept, 1);
	return ip_id_of(0);
}

/* A reset in C's window but not at its edge: a challenge ACK (RFC 5961 3.2). Returns its ID. */
static uint16_t challenged(struct conn *c)
{
	struct out o;

	feed(c, RTE_TCP_RST_FLAG, c->pnxt + 10, 0, 65535, NULL, 0);
	o = one();
	assert_int_equal(o.flags, RTE_TCP_ACK_FLAG);
	assert_int_equal(o.ack, c->pnxt);
	return ip_id_of(0);
}

/* IPv4 IDs tell an off-path host nothing of the worker's other traffic (RFC 7739 5.1). One counter
 * for every packet let it ping, send a reset for a guessed 4-tuple and ping again: replies 2 apart
 * meant a challenge ACK went out between them, so the guess named a connection (CVE-2016-5696's
 * inference). A connection's segments count their own; the host's own connection sees its count
 * move by one per segment whatever the others send; echo replies take IDs that show no count. */
static void test_ip_id_private(void **state)
{
	static const uint8_t tag = 0x42;
	struct conn c = established_echo(41080), spy = established_echo(41081);
	unsigned apart2 = 0, apart1 = 0;
	uint64_t acks0 = S()->tcp_challenge_acks;
	uint16_t a, id, p_first[4];

	(void)state;
	peer_data(&spy, &tag, 1, 0);
	a = ip_id_of(0);
	spy.gnxt += 1;
	ack_all(&spy, 65535); /* (no retransmission later) */
	eh_advance_ms(&h, 600);
	id = challenged(&c);
	peer_data(&c, &tag, 1, 0); /* (the victim's next segment: the next of its own count) */
	assert_int_equal(one().len, 1);
	assert_int_equal(ip_id_of(0), (uint16_t)(id + 1));
	c.gnxt += 1;
	ack_all(&c, 65535);
	peer_data(&spy, &tag, 1, 0);
	assert_int_equal(one().len, 1);
	assert_int_equal(ip_id_of(0), (uint16_t)(a + 1));
	/* ping, challenge ACK, ping; then ping, ping: the gaps follow no count either way */
	for (unsigned i = 0; i < 16; i++) {
		uint16_t p1, p2;

		eh_advance_ms(&h, 600); /* (past the challenge-ACK limits) */
		p1 = ping_id();
		challenged(&c);
		p2 = ping_id();
		apart2 += (uint16_t)(p2 - p1) == 2;
		p1 = ping_id();
		apart1 += (uint16_t)(p1 - p2) == 1;
	}
	assert_int_equal(S()->tcp_challenge_acks, acks0 + 17);
	assert_true(apart2 < 4);
	assert_true(apart1 < 4);
	/* the IDs never come round: 65536 packets later the same count gives another ID (a 16-bit
	 * counter repeated them, so that a host that recorded a cycle read the count off one ping) */
	{
		unsigned same = 0;

		for (unsigned i = 0; i < 4; i++) {
			uint64_t n = h.st->ip_id;

			p_first[i] = ping_id();
			h.st->ip_id = n + 65536; /* (65536 packets of no connection later) */
			same += ping_id() == p_first[i];
		}
		assert_true(same < 2);
	}
}

/* A packet from one of our own addresses (a VIP on the kernel TAP as much as [eth] address) is a
 * martian: an answer would go to ourselves (on-link: ARP requests for our own address). */
static void test_own_source_martian(void **state)
{
	uint8_t f[200];
	struct eth_local_set ls = {.gen = 1, .n = 1};
	uint64_t e0;
	size_t len;

	(void)state;
	ls.a[0].addr = xlt_ip_v4(EH_GW_IP2);
	ls.a[0].state = ETH_LOCAL_UP;
	eth_stack_set_locals(h.st, &ls);
	eh_poll(&h);
	eh_forget(&h);
	for (unsigned k = 0; k < 2; k++) {
		len = echo_frame(f, k ? EH_GW_IP : EH_GW_IP2, k ? EH_GW_IP2 : EH_GW_IP);
		e0 = S()->ip_header_errors;
		feed_rx(f, len, NULL);
		assert_int_equal(h.n_kept, 0);
		assert_int_equal(S()->ip_header_errors, e0 + 1);
	}
	assert_int_equal(S()->icmp_echo_replies, 0);
	eth_stack_set_locals(h.st, NULL);
}

/* An ICMP echo request in one buffer is answered; as a chain the engine keeps (it does not fit its
 * first buffer, or that buffer is full) it is dropped and counted; one that fits is made one. */
static void test_chain_icmp(void **state)
{
	static uint8_t f[EH_FRAME_MAX], msg[3000];
	struct rte_icmp_hdr *ic = (struct rte_icmp_hdr *)msg;
	struct eh_rx rx = {.n_cuts = 1, .cuts = {1500}};
	size_t len;

	(void)state;
	memcpy(msg + sizeof(*ic), payload, sizeof(msg) - sizeof(*ic));
	ic->icmp_type = RTE_IP_ICMP_ECHO_REQUEST;
	ic->icmp_ident = rte_cpu_to_be_16(7);
	ic->icmp_seq_nb = rte_cpu_to_be_16(1);
	ic->icmp_cksum = (uint16_t)~rte_raw_cksum(msg, sizeof(msg));
	len = eh_ip_frame(f, IPPROTO_ICMP, msg, sizeof(msg), 0);
	feed_rx(f, len, &rx); /* 3034 bytes, cut at 1500 */
	assert_int_equal(S()->ip_header_errors, 1);
	assert_int_equal(S()->icmp_in, 0);
	assert_int_equal(h.n_kept, 0);
	/* a small one, cut: made one buffer and answered */
	ic->icmp_cksum = 0;
	ic->icmp_cksum = (uint16_t)~rte_raw_cksum(msg, 64);
	len = eh_ip_frame(f, IPPROTO_ICMP, msg, 64, 0);
	rx.cuts[0] = 60;
	feed_rx(f, len, &rx);
	assert_int_equal(S()->icmp_echo_replies, 1);
	assert_int_equal(h.n_kept, 1);
	/* the same with the first buffer full: a chain, dropped */
	rx.tight = true;
	feed_rx(f, len, &rx);
	assert_int_equal(S()->ip_header_errors, 2);
	assert_int_equal(S()->icmp_echo_replies, 1);
	assert_int_equal(h.n_kept, 0);
	/* and whole */
	feed_rx(f, len, NULL);
	assert_int_equal(S()->icmp_echo_replies, 2);
	assert_int_equal(h.n_kept, 1);
}

/* A valid LRO chain is taken whatever the parity of its segment boundaries. (DPDK 22.11's
 * rte_raw_cksum_mbuf, which eth_tcp_input uses to verify a chain in software, truncates the partial
 * sum of a segment that starts at an odd offset of the checksummed bytes, rte_ip.h:279, so such a
 * chain fails its checksum.) */
static void test_lro_chain_odd_boundary(void **state)
{
	(void)state;
	check_chain_sw_echo(TS_HDR + 1401, TS_HDR + 2700, 41107); /* TCP bytes in segment 1: 33 + 1401 */
}

/* A first segment that ends inside the TCP header's first 13 bytes (its data offset included) is
 * dropped without reading past it (eth_tcp_input read th->data_off first, tcp_in.c:762: ASan
 * reports a read of the poisoned tailroom). */
static void test_chain_tcp_doff_split(void **state)
{
	static uint8_t f[EH_FRAME_MAX];
	struct conn c = established_echo(41115);
	struct eh_rx rx = {.n_cuts = 2, .cuts = {0, TS_HDR + 2000}};
	size_t len;

	(void)state;
	len = data_frame(&c, f, payload, LRO_LEN);
	for (unsigned k = 0; k <= 12; k++) {
		rx.cuts[0] = RTE_ETHER_HDR_LEN + 20 + k;
		feed_rx(f, len, &rx);
		assert_int_equal(S()->tcp_header_errors, k + 1);
	}
	assert_int_equal(S()->tcp_bytes_in, 0);
	assert_int_equal(h.n_kept, 0);
}

/* Frames held where no count of the engine sees them (an IB write in flight keeps its reference past
 * consume: here mbufs taken from the pool) down to a quarter of the pool: a segment is copied, not
 * kept in its frame, so the RX ring still finds mbufs; once they come back, frames are kept again. */
static void test_lend_pool_low(void **state)
{
	static uint8_t blob[1400];
	static struct rte_mbuf *held[EH_MBUFS];
	struct conn c = established_echo(41210);
	struct eh_session *se = session_of(41210);
	uint64_t pc0 = S()->rx_pin_copies;
	unsigned n = 0;

	(void)state;
	se->paused = 1;
	while (rte_mempool_avail_count(eh_pool) >= EH_MBUFS / 4 - 8)
		assert_non_null(held[n++] = rte_pktmbuf_alloc(eh_pool));
	peer_data(&c, blob, sizeof(blob), 0);
	assert_int_equal(S()->rx_pin_copies - pc0, 1);
	assert_int_equal(S()->rx_pinned, 0);
	rte_pktmbuf_free_bulk(held, n);
	eh_advance_ms(&h, 1); /* (the count is read once a millisecond) */
	peer_data(&c, blob, sizeof(blob), 0);
	assert_int_equal(S()->rx_pin_copies - pc0, 1);
	assert_int_equal(S()->rx_pinned, 2); /* the frame and the entry standing for the copy before it */
	assert_int_equal(se->s->ops->backlog(se->s), 2800);
	se->s->ops->consume(se->s, 2800);
	assert_int_equal(S()->rx_pinned, 0);
	eh_poll(&h);
	eh_forget(&h);
}

/* Ethernet -> IB without copies (issue #14, eth_side/rcvq.c): in-order payload stays in its frame and
 * lend() shows it there with a hold (the mbuf) that a destination keeps past consume(): the frame
 * goes back to the pool at the last put. A small segment is copied, and so are the in-order bytes
 * behind it until the copies are consumed; then frames are kept again. (test_zero_window_sent covers
 * the window over bytes held in frames.) */
static void test_lend_frames(void **state)
{
	static uint8_t blob[1400];
	static const uint8_t tiny[1] = {7};
	struct conn c = established_echo(41200);
	struct eh_session *se = session_of(41200);
	struct xlt_stream *s = se->s;
	struct xlt_seg v[XLT_LEND_MAX];
	uint64_t copied0 = S()->copied_in, pc0;
	unsigned base, k;

	(void)state;
	for (unsigned i = 0; i < sizeof(blob); i++)
		blob[i] = (uint8_t)(i * 7 + 1);
	se->paused = 1;
	eh_forget(&h);
	base = rte_mempool_in_use_count(eh_pool);
	peer_data(&c, blob, sizeof(blob), 0);
	peer_data(&c, blob, sizeof(blob), 0);
	eh_forget(&h);
	assert_int_equal(S()->rx_pinned, 2);
	assert_int_equal(S()->copied_in, copied0);
	assert_int_equal(rte_mempool_in_use_count(eh_pool), base + 2);
	assert_int_equal(s->ops->backlog(s), 2800);
	k = s->ops->lend(s, 1000, v, XLT_LEND_MAX);
	assert_int_equal(k, 2);
	assert_int_equal(v[0].len, 400);
	assert_memory_equal(v[0].data, blob + 1000, 400);
	assert_int_equal(v[1].len, 1400);
	k = s->ops->lend(s, 0, v, XLT_LEND_MAX);
	assert_int_equal(k, 2);
	assert_memory_equal(v[0].data, blob, 1400);
	assert_non_null(v[0].hold);
	assert_non_null(v[0].hops);
	assert_int_equal(v[0].flags & XLT_SEG_EXTMEM, 0); /* this pool is nobody's external memory */
	/* a destination's reference outlives the queue's */
	v[0].hops->get(v[0].hold);
	s->ops->consume(s, 1400);
	eh_poll(&h);
	eh_forget(&h);
	assert_int_equal(S()->rx_pinned, 1);
	assert_int_equal(rte_mempool_in_use_count(eh_pool), base + 2);
	assert_memory_equal(v[0].data, blob, 1400);
	v[0].hops->put(v[0].hold);
	assert_int_equal(rte_mempool_in_use_count(eh_pool), base + 1);
	s->ops->consume(s, 1400);
	assert_int_equal(S()->rx_pinned, 0);
	assert_int_equal(rte_mempool_in_use_count(eh_pool), base);
	/* a 1-byte segment is copied; the full one behind it stays in its frame, in order */
	pc0 = S()->rx_pin_copies;
	peer_data(&c, tiny, 1, 0);
	peer_data(&c, blob, sizeof(blob), 0);
	peer_data(&c, tiny, 1, 0);
	assert_int_equal(S()->rx_pin_copies - pc0, 2);
	assert_int_equal(S()->copied_in - copied0, 2);
	assert_int_equal(S()->rx_pinned, 2); /* the frame and the entry standing for the first copy */
	assert_int_equal(s->ops->backlog(s), 1402);
	k = s->ops->lend(s, 0, v, XLT_LEND_MAX);
	assert_int_equal(k, 3);
	assert_int_equal(v[0].len, 1);
	assert_null(v[0].hold); /* valid until consumed only: a destination copies */
	assert_int_equal(v[0].data[0], 7);
	assert_int_equal(v[1].len, 1400);
	assert_non_null(v[1].hold);
	assert_memory_equal(v[1].data, blob, 1400);
	assert_int_equal(v[2].len, 1);
	assert_int_equal(v[2].data[0], 7);
	k = s->ops->lend(s, 1401, v, XLT_LEND_MAX);
	assert_int_equal(k, 1);
	assert_int_equal(v[0].len, 1);
	assert_int_equal(v[0].data[0], 7);
	{
		const uint8_t *p;
		assert_int_equal(s->ops->peek(s, &p), 1);
		assert_int_equal(p[0], 7);
	}
	s->ops->consume(s, 700);
	k = s->ops->lend(s, 0, v, XLT_LEND_MAX);
	assert_int_equal(k, 2);
	assert_int_equal(v[0].len, 701);
	assert_memory_equal(v[0].data, blob + 699, 701);
	s->ops->consume(s, 702);
	assert_int_equal(S()->rx_pinned, 0);
	assert_int_equal(s->ops->backlog(s), 0);
	eh_poll(&h);
	eh_forget(&h); /* (the frames sent meanwhile) */
	assert_int_equal(rte_mempool_in_use_count(eh_pool), base);
	se->paused = 0;
}

/* lend() with a growing skip resumes where its last walk passed instead of walking the queue from its
 * head each time (rcvq.c's cursor); consumes (whole entries and parts of one), new arrivals and a
 * cursor whose entry was consumed and reused must all still yield the stream's bytes in order. */
static size_t lent_matches(struct xlt_stream *s, size_t skip, const uint8_t *want, size_t n)
{
	size_t off = 0;

	/* one lend() yields up to XLT_LEND_MAX segments: ask again past them */
	while (off < n) {
		struct xlt_seg v[XLT_LEND_MAX];
		unsigned k = s->ops->lend(s, skip + off, v, XLT_LEND_MAX);

		if (!k)
			break;
		for (unsigned i = 0; i < k && off < n; i++) {
			size_t m = v[i].len < n - off ? v[i].len : n - off;
			assert_memory_equal(v[i].data, want + off, m);
			off += m;
		}
	}
	return off;
}

/* Frames of 1400 bytes, every third a small segment that is copied (an entry of rbuf's bytes). */
static size_t send_mixed(struct conn *c, const uint8_t *data, unsigned frames)
{
	size_t n = 0;

	for (unsigned f = 0; f < frames; f++) {
		size_t len = f % 3 ? 1400 : 300;
		peer_data(c, data + n, len, 0);
		n += len;
	}
	eh_forget(&h);
	return n;
}

static void test_lend_cursor(void **state)
{
	static uint8_t stream[2 * 11 * 1400]; /* (two batches of 11000 bytes: the harness's window is 16 KiB) */
	struct conn c = established_echo(41201);
	struct eh_session *se = session_of(41201);
	struct xlt_stream *s = se->s;
	uint64_t copied0 = S()->copied_in;
	size_t sent = 0, gone = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(stream); i++)
		stream[i] = (uint8_t)(i * 131 + i / 251);
	se->paused = 1;
	sent += send_mixed(&c, stream, 11);
	assert_int_equal(sent, 11000);
	assert_int_equal(S()->copied_in - copied0, 4 * 300);
	assert_int_equal(s->ops->backlog(s), sent);
	/* skips growing by less than, then more than, an entry */
	for (size_t skip = 0; skip < sent - gone; skip += 333)
		assert_int_equal(lent_matches(s, skip, stream + gone + skip, sent - gone - skip), sent - gone - skip);
	for (size_t skip = 0; skip < sent - gone; skip += 2900)
		assert_int_equal(lent_matches(s, skip, stream + gone + skip, sent - gone - skip), sent - gone - skip);
	/* the cursor sits deep in the queue, copies after it; consume part of the first copied entry, then
	 * lend straight past the cursor, before any walk from the head: its positions must count the
	 * consume, in bytes and in rbuf's bytes */
	assert_int_equal(lent_matches(s, 9000, stream + 9000, 1), 1);
	s->ops->consume(s, 150);
	gone += 150;
	assert_int_equal(lent_matches(s, 8900, stream + gone + 8900, sent - gone - 8900), sent - gone - 8900);
	for (size_t skip = 0; skip < sent - gone; skip += 1111)
		assert_int_equal(lent_matches(s, skip, stream + gone + skip, sent - gone - skip), sent - gone - skip);
	s->ops->consume(s, sent - gone - 200);
	gone = sent - 200;
	eh_poll(&h); /* (the window update: the peer may send again) */
	eh_forget(&h);
	/* the consumed entries go back to the free list and carry the new arrivals */
	sent += send_mixed(&c, stream + sent, 11);
	assert_int_equal(s->ops->backlog(s), sent - gone);
	/* (the cursor's entry was consumed and may carry a new arrival: a walk from the head) */
	assert_int_equal(lent_matches(s, 5000, stream + gone + 5000, 1), 1);
	for (size_t skip = 0; skip < sent - gone; skip += 777)
		assert_int_equal(lent_matches(s, skip, stream + gone + skip, sent - gone - skip), sent - gone - skip);
	assert_int_equal(lent_matches(s, 0, stream + gone, sent - gone), sent - gone);
	s->ops->consume(s, sent - gone);
	assert_int_equal(s->ops->backlog(s), 0);
	assert_int_equal(S()->rx_pinned, 0);
	eh_poll(&h);
	eh_forget(&h);
	se->paused = 0;
}

/* ---- TCP over IPv6 (issue #16) ---- */

#define peer_ip6 eh_peer_ip6

/* An Ethernet + IPv6 frame from SRC (the peer's when NULL) to the gateway's address6, with EXTLEN
 * bytes of extension headers EXT (the first one's type FIRST; NULL: none) before the upper-layer
 * message L4 (L4LEN bytes of protocol PROTO), whose TCP/ICMPv6 checksum is computed. */
static size_t frame6(uint8_t *out, const uint8_t *src, const uint8_t *dst, uint8_t first, const uint8_t *ext,
                     size_t extlen, uint8_t proto, const void *l4, size_t l4len, uint8_t hlim)
{
	struct rte_ether_hdr *e = (struct rte_ether_hdr *)out;
	struct rte_ipv6_hdr *ip = (struct rte_ipv6_hdr *)(e + 1);
	uint8_t *p = (uint8_t *)(ip + 1);
	uint32_t be[2] = {rte_cpu_to_be_32((uint32_t)l4len), rte_cpu_to_be_32(proto)}, sum;
	uint16_t *ck;

	memcpy(e->dst_addr.addr_bytes, eh_gw_mac, 6);
	memcpy(e->src_addr.addr_bytes, eh_peer_mac, 6);
	e->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
	memset(ip, 0, sizeof(*ip));
	ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16((uint16_t)(extlen + l4len));
	ip->proto = ext ? first : proto;
	ip->hop_limits = hlim;
	memcpy(ip->src_addr, src ? src : peer_ip6, 16);
	memcpy(ip->dst_addr, dst ? dst : eh_gw_ip6, 16);
	if (extlen)
		memcpy(p, ext, extlen);
	memcpy(p + extlen, l4, l4len);
	ck = (uint16_t *)(p + extlen + (proto == IPPROTO_TCP ? 16 : 2));
	*ck = 0;
	sum = (uint32_t)rte_raw_cksum(ip->src_addr, 32) + rte_raw_cksum(be, 8) +
	      rte_raw_cksum(p + extlen, l4len);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	*ck = (uint16_t)~sum;
	return sizeof(*e) + sizeof(*ip) + extlen + l4len;
}

/* A TCP segment from the peer over IPv6 (behind EXT when not NULL). */
static size_t tcp6(uint8_t *out, const uint8_t *ext, size_t extlen, uint16_t sport, uint16_t dport,
                   uint32_t seq, uint32_t ack, uint8_t flags, const uint8_t *opt, size_t optlen,
                   const void *data, size_t len)
{
	uint8_t seg[1500];
	struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)seg;

	memset(th, 0, sizeof(*th));
	th->src_port = rte_cpu_to_be_16(sport);
	th->dst_port = rte_cpu_to_be_16(dport);
	th->sent_seq = rte_cpu_to_be_32(seq);
	th->recv_ack = rte_cpu_to_be_32(ack);
	th->data_off = (uint8_t)(((sizeof(*th) + optlen) / 4) << 4);
	th->tcp_flags = flags;
	th->rx_win = rte_cpu_to_be_16(65535);
	if (optlen)
		memcpy(th + 1, opt, optlen);
	if (len)
		memcpy(seg + sizeof(*th) + optlen, data, len);
	return frame6(out, NULL, NULL, 60, ext, extlen, IPPROTO_TCP, seg, sizeof(*th) + optlen + len, 64);
}

/* The IPv6 TCP segments sent since the last eh_forget, decoded into V (up to MAX). */
static unsigned sent6(struct out *v, const struct rte_ipv6_hdr **ips, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = 0; i < h.n_kept && n < max; i++) {
		const uint8_t *p = rte_pktmbuf_mtod(h.kept[i], const uint8_t *);
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(p + RTE_ETHER_HDR_LEN);
		const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)(ip + 1);
		unsigned doff;

		if (((const struct rte_ether_hdr *)p)->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6) ||
		    ip->proto != IPPROTO_TCP)
			continue;
		assert_memory_equal(((const struct rte_ether_hdr *)p)->dst_addr.addr_bytes, eh_peer_mac, 6);
		doff = (th->data_off >> 4) * 4u;
		v[n] = (struct out){.sport = rte_be_to_cpu_16(th->src_port),
		                    .dport = rte_be_to_cpu_16(th->dst_port),
		                    .seq = rte_be_to_cpu_32(th->sent_seq),
		                    .ack = rte_be_to_cpu_32(th->recv_ack),
		                    .flags = th->tcp_flags,
		                    .len = rte_be_to_cpu_16(ip->payload_len) - doff,
		                    .data = (const uint8_t *)th + doff,
		                    .nb_segs = h.kept[i]->nb_segs,
		                    .tso_segsz = h.kept[i]->tso_segsz,
		                    .ol_flags = h.kept[i]->ol_flags};
		if (h.kept[i]->nb_segs > 1) {
			static uint8_t copies[4][65536];

			eh_frame_read(h.kept[i], RTE_ETHER_HDR_LEN + sizeof(*ip) + doff, copies[n % 4],
			              v[n].len);
			v[n].data = copies[n % 4];
		}
		assert_int_equal(eth_tcp_opt_parse((const uint8_t *)(th + 1), doff - sizeof(*th),
		                                   th->tcp_flags & RTE_TCP_SYN_FLAG, &v[n].o),
		                 0);
		if (ips)
			ips[n] = ip;
		n++;
	}
	return n;
}

/* The number of neighbour solicitations for TARGET sent since the last eh_forget (checked: to its
 * solicited-node group, or unicast to the peer's MAC, hop limit 255, our MAC as the source option). */
static unsigned solicitations(const uint8_t *target)
{
	unsigned n = 0;

	for (unsigned i = 0; i < h.n_kept; i++) {
		const uint8_t *p = rte_pktmbuf_mtod(h.kept[i], const uint8_t *);
		const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(p + RTE_ETHER_HDR_LEN);
		const uint8_t *ic = (const uint8_t *)(ip + 1);

		if (((const struct rte_ether_hdr *)p)->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6) ||
		    ip->proto != IPPROTO_ICMPV6 || ic[0] != 135 || memcmp(ic + 8, target, 16))
			continue;
		assert_int_equal(ip->hop_limits, 255);
		assert_true((ip->dst_addr[0] == 0xff && ip->dst_addr[11] == 1 && ip->dst_addr[12] == 0xff &&
		             !memcmp(ip->dst_addr + 13, target + 13, 3) && p[0] == 0x33 && p[1] == 0x33) ||
		            !memcmp(ip->dst_addr, target, 16));
		assert_int_equal(ic[24], 1); /* source link-layer address */
		assert_memory_equal(ic + 26, eh_gw_mac, 6);
		n++;
	}
	return n;
}

/* A neighbour message from the peer: a solicitation for our address6 (with its MAC), or an
 * advertisement of TARGET (FLAGS: 0x40 solicited, 0x20 override) with MAC. */
static void nd_ns_from_peer(void)
{
	uint8_t m[32] = {135}, f[200];

	memcpy(m + 8, eh_gw_ip6, 16);
	m[24] = 1, m[25] = 1;
	memcpy(m + 26, eh_peer_mac, 6);
	eh_feed(&h, f, frame6(f, NULL, NULL, 0, NULL, 0, IPPROTO_ICMPV6, m, sizeof(m), 255));
}

static void nd_na_from(const uint8_t *target, uint8_t flags, const uint8_t *mac)
{
	uint8_t m[32] = {136, 0, 0, 0, flags}, f[200];

	memcpy(m + 8, target, 16);
	m[24] = 2, m[25] = 1;
	memcpy(m + 26, mac, 6);
	eh_feed(&h, f, frame6(f, target, NULL, 0, NULL, 0, IPPROTO_ICMPV6, m, sizeof(m), 255));
}

/* Opens an IPv6 connection from the peer's PPORT to the echo service, the peer's neighbour entry made
 * from its solicitation first; OPT: the SYN's options (OPTLEN bytes, a multiple of 4). *PSEQ is the
 * SYN's sequence number, moved past it. With ACK the handshake ends, else the connection is left in
 * SYN_RCVD. Returns our next sequence number. */
static uint32_t open6(uint16_t pport, const uint8_t *opt, size_t optlen, uint32_t *pseq, bool ack)
{
	uint8_t f[200];
	struct out v[4];
	uint32_t gseq;

	nd_ns_from_peer();
	eh_poll(&h);
	eh_forget(&h);
	eh_feed(&h, f,
	        tcp6(f, NULL, 0, pport, EH_ECHO_PORT, *pseq, 0, RTE_TCP_SYN_FLAG, opt, optlen, NULL, 0));
	eh_poll(&h);
	assert_int_equal(sent6(v, NULL, 4), 1);
	gseq = v[0].seq + 1;
	(*pseq)++;
	if (ack) {
		eh_feed(
		    &h, f,
		    tcp6(f, NULL, 0, pport, EH_ECHO_PORT, *pseq, gseq, RTE_TCP_ACK_FLAG, NULL, 0, NULL, 0));
		eh_poll(&h);
	}
	return gseq;
}

/* A SYN over IPv6 behind a destination-options header: the SYN-ACK from address6 with an MSS of
 * MTU - 60, to the MAC neighbour discovery taught; data echoed; a bad checksum and a closed port. */
static void test_tcp6_echo(void **state)
{
	static const uint8_t syn_opts[] = {2, 4, 0x05, 0xa0, 4, 2, 1, 3, 3, 7};
	static const uint8_t dstopts[8] = {IPPROTO_TCP, 0, 1, 4, 0, 0, 0, 0}; /* PadN */
	uint8_t f[1600], opt[12] = {0};
	const struct rte_ipv6_hdr *ip[4];
	struct out v[4];
	uint32_t gseq, pseq = 1000, label;
	uint64_t ck0;

	(void)state;
	nd_ns_from_peer(); /* (the peer asks for us first: its entry is made from its solicitation) */
	eh_poll(&h);
	assert_int_equal(S()->nd_entries, 1);
	eh_forget(&h);
	memcpy(opt, syn_opts, sizeof(syn_opts));
	eh_feed(&h, f,
	        tcp6(f, dstopts, sizeof(dstopts), 40000, EH_ECHO_PORT, pseq, 0, RTE_TCP_SYN_FLAG, opt, 12,
	             NULL, 0));
	eh_poll(&h);
	assert_int_equal(sent6(v, ip, 4), 1);
	assert_int_equal(v[0].flags, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG);
	assert_int_equal(v[0].ack, pseq + 1);
	assert_true(v[0].o.mss_ok);
	assert_int_equal(v[0].o.mss, EH_MTU - 60);
	assert_memory_equal(ip[0]->src_addr, eh_gw_ip6, 16);
	assert_memory_equal(ip[0]->dst_addr, peer_ip6, 16);
	assert_int_equal(ip[0]->hop_limits, 64);
	/* the flow label is no bits of the keyed table hash (a peer would aim at one bucket) */
	{
		struct xlt_ip peer;

		memcpy(peer.b, peer_ip6, 16);
		label = rte_be_to_cpu_32(ip[0]->vtc_flow) & 0xfffffu;
		assert_int_not_equal(label,
		                     (uint32_t)eth_flow_hash(h.st, &peer, 40000, EH_ECHO_PORT) & 0xfffffu);
		assert_int_not_equal(label, 0);
	}
	gseq = v[0].seq + 1;
	pseq++;
	eh_forget(&h);
	eh_feed(&h, f,
	        tcp6(f, NULL, 0, 40000, EH_ECHO_PORT, pseq, gseq, RTE_TCP_ACK_FLAG | RTE_TCP_PSH_FLAG, NULL,
	             0, "hello, v6", 9));
	eh_poll(&h);
	eh_advance_ms(&h, 50);
	assert_int_equal(sent6(v, ip, 4), 1);
	assert_int_equal(rte_be_to_cpu_32(ip[0]->vtc_flow) & 0xfffffu, label); /* (the connection's own) */
	assert_int_equal(v[0].len, 9);
	assert_memory_equal(v[0].data, "hello, v6", 9);
	assert_int_equal(v[0].ack, pseq + 9);
	assert_non_null(session_of(40000));
	assert_true(session_of(40000)->s->peer_addr.b[0] == 0x20 &&
	            session_of(40000)->s->peer_addr.b[15] == 2);
	/* a bad checksum: counted, not answered */
	ck0 = S()->tcp_checksum_errors;
	eh_forget(&h);
	{
		size_t n = tcp6(f, NULL, 0, 40000, EH_ECHO_PORT, pseq + 9, gseq + 9, RTE_TCP_ACK_FLAG, NULL,
		                0, "x", 1);
		f[n - 1] ^= 0x55;
		eh_feed(&h, f, n);
	}
	eh_poll(&h);
	assert_int_equal(S()->tcp_checksum_errors, ck0 + 1);
	assert_int_equal(sent6(v, NULL, 4), 0);
	/* a closed port: RST+ACK from the address the SYN went to */
	eh_feed(&h, f, tcp6(f, NULL, 0, 40001, 4242, 77, 0, RTE_TCP_SYN_FLAG, NULL, 0, NULL, 0));
	eh_poll(&h);
	assert_int_equal(sent6(v, ip, 4), 1);
	assert_int_equal(v[0].flags, RTE_TCP_RST_FLAG | RTE_TCP_ACK_FLAG);
	assert_int_equal(v[0].ack, 78);
	assert_memory_equal(ip[0]->src_addr, eh_gw_ip6, 16);
	/* to a multicast group of ours: refused */
	{
		static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 1};
		uint8_t seg[20] = {0x9c, 0x42, 0, 7, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, RTE_TCP_SYN_FLAG,
		                   0xff, 0xff};
		uint64_t r0 = S()->ip6_tcp_refused;

		eh_forget(&h);
		eh_feed(&h, f, frame6(f, NULL, all_nodes, 0, NULL, 0, IPPROTO_TCP, seg, sizeof(seg), 64));
		eh_poll(&h);
		assert_int_equal(S()->ip6_tcp_refused, r0 + 1);
		assert_int_equal(sent6(v, NULL, 4), 0);
	}
	/* the peer ends it */
	eh_feed(
	    &h, f,
	    tcp6(f, NULL, 0, 40000, EH_ECHO_PORT, pseq + 9, gseq + 9, RTE_TCP_RST_FLAG, NULL, 0, NULL, 0));
	eh_poll(&h);
	eh_forget(&h);
}

/* Path MTU discovery over IPv6: an ICMPv6 "packet too big" quoting a segment in flight shrinks the
 * connection's segments; an MTU below 1280 is taken as 1280, the least every IPv6 link carries
 * (RFC 8200 5). The peer sent no timestamps: segments of MTU - 60. */
static void test_pmtu_too_big6(void **state)
{
	static const uint8_t syn_opts[12] = {2, 4, 0x05, 0xa0, 4, 2, 1, 3, 3, 7};
	static uint8_t blob[4 * 1440];
	uint8_t f[1600], msg[8 + 40 + 20] = {2, 0};
	struct rte_ipv6_hdr *q = (struct rte_ipv6_hdr *)(msg + 8);
	struct eh_session *se;
	const struct rte_ipv6_hdr *ip[16];
	struct out v[16];
	uint32_t gseq, pseq = 5000;
	unsigned n;

	(void)state;
	gseq = open6(40100, syn_opts, sizeof(syn_opts), &pseq, true);
	se = session_of(40100);
	assert_non_null(se);
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	n = sent6(v, ip, 16);
	check_resent(v, n, gseq, 1440, sizeof(blob));
	/* the router quotes what it could not forward: our IPv6 header and the TCP header */
	q->vtc_flow = rte_cpu_to_be_32(6u << 28);
	q->payload_len = rte_cpu_to_be_16(1460);
	q->proto = IPPROTO_TCP;
	q->hop_limits = 63;
	memcpy(q->src_addr, eh_gw_ip6, 16);
	memcpy(q->dst_addr, peer_ip6, 16);
	memcpy(msg + 48, ip[1] + 1, 20);
	msg[4] = 0, msg[5] = 0, msg[6] = 0x03, msg[7] = 0xe8; /* MTU 1000: below IPv6's minimum */
	eh_forget(&h);
	eh_feed(&h, f, frame6(f, NULL, NULL, 0, NULL, 0, IPPROTO_ICMPV6, msg, sizeof(msg), 64));
	eh_poll(&h);
	assert_int_equal(S()->icmp_too_big_in, 1);
	assert_int_equal(S()->tcp_pmtu_lowered, 1);
	check_resent(v, sent6(v, ip, 16), gseq, 1280 - 60, sizeof(blob));
	eh_feed(&h, f,
	        tcp6(f, NULL, 0, 40100, EH_ECHO_PORT, pseq, gseq + sizeof(blob), RTE_TCP_RST_FLAG, NULL, 0, NULL, 0));
	eh_poll(&h);
	eh_forget(&h);
}

/* An ICMPv6 "packet too big" reporting MTU, quoting our segment QUOTED (its IPv6 and TCP headers). */
static void feed_too_big6(const struct rte_ipv6_hdr *quoted, uint32_t mtu)
{
	uint8_t f[200], msg[8 + 40 + 20] = {2, 0};

	msg[4] = (uint8_t)(mtu >> 24), msg[5] = (uint8_t)(mtu >> 16);
	msg[6] = (uint8_t)(mtu >> 8), msg[7] = (uint8_t)mtu;
	memcpy(msg + 8, quoted, 40 + 20);
	eh_forget(&h);
	eh_feed(&h, f, frame6(f, NULL, NULL, 0, NULL, 0, IPPROTO_ICMPV6, msg, sizeof(msg), 64));
	eh_poll(&h);
}

/* IPv6's "packet too big" takes IPv4's path and its limit: a storm of them within a round trip
 * lowers the segment size each time but sends the flight again only for the first. */
static void test_pmtu_storm6(void **state)
{
	static const uint8_t syn_opts[12] = {2, 4, 0x05, 0xa0, 4, 2, 1, 3, 3, 7};
	static uint8_t blob[4 * 1440];
	static uint8_t quoted[40 + 20];
	struct eh_session *se;
	const struct rte_ipv6_hdr *ip[16];
	struct out v[16];
	uint32_t gseq, pseq = 5000;
	uint8_t f[200];

	(void)state;
	gseq = open6(40110, syn_opts, sizeof(syn_opts), &pseq, true);
	se = session_of(40110);
	assert_non_null(se);
	eh_forget(&h);
	assert_int_equal(se->s->ops->write(se->s, blob, sizeof(blob)), sizeof(blob));
	eh_poll(&h);
	assert_int_equal(sent6(v, ip, 16), 4);
	memcpy(quoted, ip[1], sizeof(quoted));
	feed_too_big6((const struct rte_ipv6_hdr *)quoted, 1400);
	check_resent(v, sent6(v, ip, 16), gseq, 1400 - 60, sizeof(blob));
	for (uint32_t mtu = 1399; mtu >= 1300; mtu--) {
		feed_too_big6((const struct rte_ipv6_hdr *)quoted, mtu);
		assert_int_equal(sent6(v, ip, 16), 0);
	}
	assert_int_equal(S()->tcp_pmtu_lowered, 101);
	eh_feed(&h, f,
	        tcp6(f, NULL, 0, 40110, EH_ECHO_PORT, pseq, gseq + sizeof(blob), RTE_TCP_RST_FLAG, NULL, 0, NULL, 0));
	eh_poll(&h);
	eh_forget(&h);
}

/* A device with TSO: three segments received at once come back as one IPv6 TSO frame (segments of
 * MTU - 60 bytes, the device's checksum over the IPv6 pseudo-header: eh_check_frame). */
static void test_tcp6_tso(void **state)
{
	static const uint8_t mss[4] = {2, 4, 0x05, 0xa0}; /* 1440 */
	uint8_t f[1600];
	struct out v[4];
	uint32_t gseq, pseq = 500;

	(void)state;
	gseq = open6(40020, mss, sizeof(mss), &pseq, false); /* (the data's ACK ends the handshake) */
	eh_forget(&h);
	for (unsigned k = 0; k < 3; k++)
		eh_feed(&h, f,
		        tcp6(f, NULL, 0, 40020, EH_ECHO_PORT, pseq + 1300 * k, gseq, RTE_TCP_ACK_FLAG, NULL,
		             0, payload + 1300 * k, 1300));
	eh_poll(&h);
	assert_int_equal(sent6(v, NULL, 4), 1);
	assert_int_equal(v[0].len, 3900);
	assert_memory_equal(v[0].data, payload, 3900);
	assert_true(v[0].ol_flags & RTE_MBUF_F_TX_TCP_SEG);
	assert_true(v[0].ol_flags & RTE_MBUF_F_TX_IPV6);
	assert_int_equal(v[0].tso_segsz, EH_MTU - 60); /* (its MSS, no timestamps) */
	eh_feed(&h, f,
	        tcp6(f, NULL, 0, 40020, EH_ECHO_PORT, pseq + 3900, gseq + 3900, RTE_TCP_RST_FLAG, NULL, 0,
	             NULL, 0));
	eh_poll(&h);
	eh_forget(&h);
}

/* Solicitations from a flood of on-link sources (a /64 has endless ones) take free slots and each
 * other's, never the entry of a neighbour output uses: the connection's segments still go straight to
 * the peer, nothing asked again; the refusals are counted. */
static void test_nd_flood_keeps_used(void **state)
{
	static const uint8_t tag[] = {0x0a, 0x0b};
	uint8_t f[1600];
	struct out v[4];
	uint32_t gseq, pseq = 700;

	(void)state;
	gseq = open6(40030, NULL, 0, &pseq, true);
	eh_advance_ms(&h, 1000); /* (the flood's entries are newer: a plain LRU would take the peer's) */
	eh_forget(&h);
	ns_flood(8 * 256, 1, true);
	assert_int_equal(S()->nd_learn_refused, 0); /* (one entry in use: the others were the flood's) */
	assert_true(S()->nd_entries <= 256);
	eh_feed(&h, f,
	        tcp6(f, NULL, 0, 40030, EH_ECHO_PORT, pseq, gseq, RTE_TCP_ACK_FLAG | RTE_TCP_PSH_FLAG, NULL,
	             0, tag, sizeof(tag)));
	eh_poll(&h);
	eh_advance_ms(&h, 50);
	assert_int_equal(solicitations(peer_ip6), 0);
	assert_int_equal(sent6(v, NULL, 4), 1); /* (to the peer's MAC: sent6 checks it) */
	assert_int_equal(v[0].len, sizeof(tag));
	assert_memory_equal(v[0].data, tag, sizeof(tag));
	eh_feed(
	    &h, f,
	    tcp6(f, NULL, 0, 40030, EH_ECHO_PORT, pseq + 2, gseq + 2, RTE_TCP_RST_FLAG, NULL, 0, NULL, 0));
	eh_poll(&h);
	eh_forget(&h);
	/* output to many on-link neighbours fills every slot (entries in use, being asked for): a
	 * solicitation from yet another source is refused, counted, and answered all the same */
	for (unsigned i = 0; i < 2 * 256; i++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(eh_pool);
		struct rte_ipv6_hdr *ip;
		struct xlt_ip dst = {.b = {0x20, 0x01, 0x0d, 0xb8, [11] = 2}}, src;

		assert_non_null(m);
		dst.b[14] = (uint8_t)(i >> 8), dst.b[15] = (uint8_t)i;
		memcpy(src.b, eh_gw_ip6, 16);
		ip = (struct rte_ipv6_hdr *)rte_pktmbuf_append(m, sizeof(*ip));
		eth_ipv6_fill(ip, &src, &dst, 59 /* no next header */, 0, 0);
		eth_nbr_output(h.st, m, &dst, false);
		if (i % 32 == 31) {
			eh_poll(&h);
			eh_forget(&h);
		}
	}
	eh_poll(&h);
	eh_forget(&h);
	assert_int_equal(S()->nd_entries, 256);
	{
		uint8_t m[32] = {135}, src[16] = {0x20, 0x01, 0x0d, 0xb8, [11] = 3, [15] = 1};
		uint64_t ns0 = S()->nd_na_out;

		memcpy(m + 8, eh_gw_ip6, 16);
		m[24] = 1, m[25] = 1;
		memcpy(m + 26, eh_peer_mac, 6);
		eh_feed(&h, f, frame6(f, src, NULL, 0, NULL, 0, IPPROTO_ICMPV6, m, sizeof(m), 255));
		eh_poll(&h);
		assert_int_equal(S()->nd_learn_refused, 1);
		assert_int_equal(S()->nd_na_out, ns0 + 1);
	}
	eh_forget(&h);
}

/* Whether a frame is worth a copy for every other worker: eth_ipv6_nd_learnable on one buffer. */
static bool learnable(const uint8_t *frame, size_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(eh_pool);
	bool r;

	assert_non_null(m);
	memcpy(rte_pktmbuf_append(m, (uint16_t)len), frame, len);
	r = eth_ipv6_nd_learnable(h.st, m);
	rte_pktmbuf_free(m);
	return r;
}

/* Duplicate address probes for our address (from ::, to its solicited-node group, here in frames to
 * our MAC as a flooder sends them): each answer goes to every host of the link, so a worker sends
 * ETH_ND_DAD_DEFEND_PER_S a second at most, the rest counted; the next second it defends again. */
static void test_dad_budget(void **state)
{
	static const uint8_t any[16] = {0}, snm[16] = {0xff, 0x02, [11] = 1, [12] = 0xff, [15] = 1};
	uint8_t ns[24] = {135}, f[200];
	size_t n;

	(void)state;
	memcpy(ns + 8, eh_gw_ip6, 16);
	n = frame6(f, any, snm, 0, NULL, 0, IPPROTO_ICMPV6, ns, sizeof(ns), 255);
	for (unsigned i = 0; i < ETH_ND_DAD_DEFEND_PER_S + 5; i++) {
		eh_forget(&h);
		feed_rx(f, n, NULL);
	}
	assert_int_equal(S()->nd_dad_defended, ETH_ND_DAD_DEFEND_PER_S);
	assert_int_equal(S()->nd_dad_limited, 5);
	eh_advance_ms(&h, 1000);
	eh_forget(&h);
	feed_rx(f, n, NULL);
	assert_int_equal(S()->nd_dad_defended, ETH_ND_DAD_DEFEND_PER_S + 1);
	assert_int_equal(h.n_kept, 1); /* the advertisement */
	eh_forget(&h);
}

/* with the peer as [eth] gateway6 and a kernel TAP */
static int setup_gateway6_exc(void **state)
{
	int ret;

	(void)state;
	memcpy(eh_gateway6, eh_peer_ip6, 16);
	ret = eh_start(&h, 8, 16384, 16384);
	memset(eh_gateway6, 0, 16);
	return with_exc(ret);
}

/* Feeds an ND message of TYPE (135 solicitation, 136 advertisement with FLAGS) from SRC about TARGET,
 * its link-layer option (source for a solicitation, target for an advertisement) MAC. */
static void feed_nd(uint8_t type, uint8_t flags, const uint8_t *src, const uint8_t *target, const uint8_t *mac)
{
	uint8_t m[32] = {type}, f[200];

	m[4] = flags;
	memcpy(m + 8, target, 16);
	m[24] = type == 135 ? 1 : 2, m[25] = 1;
	memcpy(m + 26, mac, 6);
	eh_feed(&h, f, frame6(f, src, NULL, 0, NULL, 0, IPPROTO_ICMPV6, m, sizeof(m), 255));
	eh_poll(&h);
}

/* As test_gateway_claim_not_mirrored, for IPv6: neighbour discovery is mirrored to the kernel
 * behind the TAP, but not an advertisement of the pinned gateway6, nor a solicitation from it, that
 * gives it another link-layer address: ibgwd ignores them, and the kernel would have re-pointed its
 * own entry (its BGP and VRRP flows) at the claimant. The gateway's own answers still reach it. */
static void test_gateway6_claim_not_mirrored(void **state)
{
	static const uint8_t evil[6] = {0x02, 0x66, 0, 0, 0, 0x66};
	uint64_t k0, err0;

	(void)state;
	eh_advance_ms(&h, 10); /* gateway6 is asked for */
	k0 = S()->exc_to_kernel;
	feed_nd(136, 0x60, eh_peer_ip6, eh_peer_ip6, eh_peer_mac); /* solicited, override */
	assert_int_equal(S()->exc_to_kernel, k0 + 1);
	err0 = S()->nd_errors;
	feed_nd(136, 0x20, eh_peer_ip6, eh_peer_ip6, evil); /* unsolicited, override */
	assert_int_equal(S()->nd_errors, err0 + 1);
	assert_int_equal(S()->exc_to_kernel, k0 + 1);
	feed_nd(135, 0, eh_peer_ip6, eh_gw_ip6, evil); /* from gateway6, its address another MAC */
	assert_int_equal(S()->exc_to_kernel, k0 + 1);
	feed_nd(135, 0, eh_peer_ip6, eh_gw_ip6, eh_peer_mac);
	assert_int_equal(S()->exc_to_kernel, k0 + 2);
	feed_nd(136, 0x60, eh_peer_ip6, eh_peer_ip6, eh_peer_mac);
	assert_int_equal(S()->exc_to_kernel, k0 + 3);
}

/* Neighbour discovery is cloned to the other workers only when it passes RFC 4861's checks and
 * would teach a cache something. */
static void test_nd_clone_checks(void **state)
{
	static const uint8_t other[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 0x44};
	static const uint8_t far[16] = {0x20, 0x01, 0x0d, 0xb9, [15] = 0x44};
	uint8_t ns[32] = {135}, na[32] = {136, 0, 0, 0, 0x60}, f[200];
	size_t n;

	(void)state;
	memcpy(ns + 8, eh_gw_ip6, 16);
	ns[24] = 1, ns[25] = 1;
	memcpy(ns + 26, eh_peer_mac, 6);
	memcpy(na + 8, other, 16);
	na[24] = 2, na[25] = 1;
	memcpy(na + 26, eh_peer_mac, 6);
	assert_true(learnable(f, frame6(f, NULL, NULL, 0, NULL, 0, IPPROTO_ICMPV6, ns, sizeof(ns), 255)));
	assert_true(learnable(f, frame6(f, other, NULL, 0, NULL, 0, IPPROTO_ICMPV6, na, sizeof(na), 255)));
	/* forwarded (hop limit), a bad checksum, a code */
	assert_false(learnable(f, frame6(f, NULL, NULL, 0, NULL, 0, IPPROTO_ICMPV6, ns, sizeof(ns), 254)));
	n = frame6(f, NULL, NULL, 0, NULL, 0, IPPROTO_ICMPV6, ns, sizeof(ns), 255);
	f[n - 1] ^= 1;
	assert_false(learnable(f, n));
	ns[1] = 1;
	assert_false(learnable(f, frame6(f, NULL, NULL, 0, NULL, 0, IPPROTO_ICMPV6, ns, sizeof(ns), 255)));
	ns[1] = 0;
	/* a solicitation without the sender's address, for another node, from off-link, from :: */
	assert_false(learnable(f, frame6(f, NULL, NULL, 0, NULL, 0, IPPROTO_ICMPV6, ns, 24, 255)));
	memcpy(ns + 8, other, 16);
	assert_false(learnable(f, frame6(f, NULL, NULL, 0, NULL, 0, IPPROTO_ICMPV6, ns, sizeof(ns), 255)));
	memcpy(ns + 8, eh_gw_ip6, 16);
	assert_false(learnable(f, frame6(f, far, NULL, 0, NULL, 0, IPPROTO_ICMPV6, ns, sizeof(ns), 255)));
	assert_false(learnable(
	    f, frame6(f, (const uint8_t[16]){0}, NULL, 0, NULL, 0, IPPROTO_ICMPV6, ns, sizeof(ns), 255)));
	/* an advertisement without the target's address, of one of ours; a truncated option */
	assert_false(learnable(f, frame6(f, other, NULL, 0, NULL, 0, IPPROTO_ICMPV6, na, 24, 255)));
	memcpy(na + 8, eh_gw_ip6, 16);
	assert_false(learnable(f, frame6(f, other, NULL, 0, NULL, 0, IPPROTO_ICMPV6, na, sizeof(na), 255)));
	memcpy(na + 8, other, 16);
	na[25] = 2;
	assert_false(learnable(f, frame6(f, other, NULL, 0, NULL, 0, IPPROTO_ICMPV6, na, sizeof(na), 255)));
	/* an echo request is no neighbour discovery */
	{
		uint8_t echo[8] = {128};

		assert_false(learnable(f, frame6(f, NULL, NULL, 0, NULL, 0, IPPROTO_ICMPV6, echo, 8, 64)));
	}
}

/* The owner eth_frame_owner6 gives the IPv6 frame FRAME (LEN bytes) as a chain cut at CUT (0: one
 * buffer). */
static unsigned owner_cut(const uint8_t *frame, size_t len, size_t cut)
{
	struct rte_mbuf *a = rte_pktmbuf_alloc(eh_pool), *b;
	unsigned o;

	assert_non_null(a);
	if (!cut)
		cut = len;
	memcpy(rte_pktmbuf_append(a, (uint16_t)cut), frame, cut);
	if (cut < len) {
		b = rte_pktmbuf_alloc(eh_pool);
		assert_non_null(b);
		memcpy(rte_pktmbuf_append(b, (uint16_t)(len - cut)), frame + cut, len - cut);
		assert_int_equal(rte_pktmbuf_chain(a, b), 0);
	}
	o = eth_frame_owner6(h.st, a);
	rte_pktmbuf_free(a);
	return o;
}

/* Steering with four workers (the instance's count changed in place: only the owner is computed): an
 * IPv6 TCP frame goes to its flow's owner whether it is one buffer or a chain (LRO), behind extension
 * headers too; a chain whose ports lie past its first buffer stays (input drops it). */
static void test_tcp6_owner_chain(void **state)
{
	static const uint8_t dstopts[8] = {IPPROTO_TCP, 0, 1, 4, 0, 0, 0, 0};
	static uint8_t f[1600];
	struct xlt_ip peer;
	unsigned want = 0, n_workers = h.st->c.n_workers;
	uint16_t port;
	size_t len;

	(void)state;
	memcpy(peer.b, peer_ip6, 16);
	h.st->c.n_workers = 4;
	for (port = 41000; port < 41100 && !want; port++)
		want = eth_flow_owner(h.st, eth_flow_hash(h.st, &peer, port, EH_ECHO_PORT));
	port--;
	assert_int_not_equal(want, 0); /* (a flow some other worker owns) */
	len = tcp6(f, dstopts, sizeof(dstopts), port, EH_ECHO_PORT, 1, 1, RTE_TCP_ACK_FLAG, NULL, 0, payload,
	           1200);
	assert_int_equal(owner_cut(f, len, 0), want);
	/* an LRO chain: headers in the first buffer */
	assert_int_equal(owner_cut(f, len, RTE_ETHER_HDR_LEN + 40 + 8 + 20), want);
	/* the ports just in the first buffer, then just not */
	assert_int_equal(owner_cut(f, len, RTE_ETHER_HDR_LEN + 40 + 8 + 4), want);
	assert_int_equal(owner_cut(f, len, RTE_ETHER_HDR_LEN + 40 + 8 + 3), 0);
	/* the extension header cut: not walked past the first buffer */
	assert_int_equal(owner_cut(f, len, RTE_ETHER_HDR_LEN + 40 + 4), 0);
	/* a payload length past the chain: bad, stays */
	f[RTE_ETHER_HDR_LEN + 4] = (uint8_t)((len - RTE_ETHER_HDR_LEN - 40 + 1) >> 8);
	f[RTE_ETHER_HDR_LEN + 5] = (uint8_t)(len - RTE_ETHER_HDR_LEN - 40 + 1);
	assert_int_equal(owner_cut(f, len, RTE_ETHER_HDR_LEN + 40 + 8 + 20), 0);
	h.st->c.n_workers = n_workers;
}

/* RFC 4861 7.2.5 for an entry we have: an advertisement without the override flag does not change
 * the neighbour's address (segments still go to the MAC its solicitation gave), and one that is
 * solicited is needed to confirm it again. */
static void test_nd_no_override(void **state)
{
	static const uint8_t stranger_mac[6] = {0x02, 0, 0, 0, 0, 0x66};
	struct out v[4];
	uint8_t f[200];

	(void)state;
	nd_ns_from_peer();
	eh_poll(&h);
	nd_na_from(peer_ip6, 0, stranger_mac); /* unsolicited, no override, another MAC */
	eh_poll(&h);
	assert_int_equal(S()->nd_entries, 1);
	eh_forget(&h);
	eh_feed(&h, f, tcp6(f, NULL, 0, 40010, EH_ECHO_PORT, 1, 0, RTE_TCP_SYN_FLAG, NULL, 0, NULL, 0));
	eh_poll(&h);
	assert_int_equal(sent6(v, NULL, 4), 1); /* (sent6 checks the Ethernet destination: the peer's) */
	assert_int_equal(v[0].flags, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG);
	/* the entry in doubt is checked: a unicast solicitation to the MAC we keep */
	eh_forget(&h);
	eh_advance_ms(&h, 200);
	assert_true(solicitations(peer_ip6) >= 1);
	nd_na_from(peer_ip6, 0x40, eh_peer_mac); /* the solicited answer */
	eh_poll(&h);
	eh_feed(&h, f,
	        tcp6(f, NULL, 0, 40010, EH_ECHO_PORT, 2, v[0].seq + 1, RTE_TCP_RST_FLAG | RTE_TCP_ACK_FLAG,
	             NULL, 0, NULL, 0));
	eh_poll(&h);
	eh_forget(&h);
}

/* A solicitation that names a group, zero or our own MAC as its source link-layer address is an
 * error: not answered (the answer goes to that address: one unicast solicitation would make a
 * broadcast) and not learnt; an advertisement naming a zero MAC for a neighbour changes nothing. */
static void test_nd_bad_lladdr(void **state)
{
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, zero[6];
	const uint8_t *bad[3] = {bcast, zero, eh_gw_mac};
	uint8_t m[32] = {135}, f[200];
	struct out v[4];
	uint64_t e0;

	(void)state;
	for (unsigned k = 0; k < 3; k++) {
		memcpy(m + 8, eh_gw_ip6, 16);
		m[24] = 1, m[25] = 1;
		memcpy(m + 26, bad[k], 6);
		e0 = S()->nd_errors;
		eh_forget(&h);
		eh_feed(&h, f, frame6(f, NULL, NULL, 0, NULL, 0, IPPROTO_ICMPV6, m, sizeof(m), 255));
		eh_poll(&h);
		assert_int_equal(h.n_kept, 0);
		assert_int_equal(S()->nd_errors, e0 + 1);
		assert_int_equal(S()->nd_entries, 0);
	}
	nd_ns_from_peer(); /* (the same with the peer's own MAC: answered, learnt) */
	eh_poll(&h);
	assert_int_equal(h.n_kept, 1);
	assert_int_equal(S()->nd_entries, 1);
	e0 = S()->nd_errors;
	nd_na_from(peer_ip6, 0x60, zero); /* solicited, override: to no MAC at all */
	eh_poll(&h);
	assert_int_equal(S()->nd_errors, e0 + 1);
	eh_forget(&h);
	eh_feed(&h, f, tcp6(f, NULL, 0, 40020, EH_ECHO_PORT, 1, 0, RTE_TCP_SYN_FLAG, NULL, 0, NULL, 0));
	eh_poll(&h);
	assert_int_equal(sent6(v, NULL, 4), 1); /* (sent6 checks the Ethernet destination: the peer's) */
	eh_feed(&h, f,
	        tcp6(f, NULL, 0, 40020, EH_ECHO_PORT, 2, v[0].seq + 1, RTE_TCP_RST_FLAG | RTE_TCP_ACK_FLAG,
	             NULL, 0, NULL, 0));
	eh_poll(&h);
	eh_forget(&h);
}

/* A SYN over IPv6 from SRC to DST (NULL: the peer's, address6), to the echo port from port 40030. */
static void feed_syn6_between(const uint8_t *src, const uint8_t *dst)
{
	uint8_t seg[20] = {0x9c, 0x5e, 0, EH_ECHO_PORT, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, RTE_TCP_SYN_FLAG, 0xff, 0xff};
	uint8_t f[200];

	eh_feed(&h, f, frame6(f, src, dst, 0, NULL, 0, IPPROTO_TCP, seg, sizeof(seg), 64));
	eh_poll(&h);
}

/* IPv4-mapped addresses never appear on the wire (RFC 4038): to one that names our IPv4 address, not
 * for us (no SYN-ACK from ::ffff:a.b.c.d); from one, or from ::1, a martian. An echo request from ::
 * has no one to answer. */
static void test_ipv6_mapped_loopback(void **state)
{
	static const uint8_t loop[16] = {[15] = 1}, unspec[16];
	uint8_t mapped_gw[16] = {[10] = 0xff, [11] = 0xff}, mapped_peer[16] = {[10] = 0xff, [11] = 0xff};
	uint8_t echo[16] = {128, 0, 0, 0, 0, 9, 0, 1}, f[200];
	struct eth_local_set ls = {.gen = 1, .n = 1};
	uint64_t nf0 = S()->ip6_not_for_us, m0 = S()->ip6_martians, r0 = S()->icmp6_echo_replies;
	uint32_t gw = EH_GW_IP, peer = EH_PEER_IP;

	(void)state;
	memcpy(mapped_gw + 12, &gw, 4);
	memcpy(mapped_peer + 12, &peer, 4);
	ls.a[0].addr = xlt_ip_v4(EH_GW_IP2); /* (a VIP: the kernel's addresses are looked up too) */
	ls.a[0].state = ETH_LOCAL_UP;
	eth_stack_set_locals(h.st, &ls);
	nd_ns_from_peer();
	eh_poll(&h);
	eh_forget(&h);
	feed_syn6_between(NULL, mapped_gw);
	assert_int_equal(h.n_kept, 0);
	assert_int_equal(S()->ip6_not_for_us, nf0 + 1);
	feed_syn6_between(loop, NULL);
	feed_syn6_between(mapped_peer, NULL);
	assert_int_equal(h.n_kept, 0);
	assert_int_equal(S()->ip6_martians, m0 + 2);
	eh_feed(&h, f, frame6(f, unspec, NULL, 0, NULL, 0, IPPROTO_ICMPV6, echo, sizeof(echo), 64));
	eh_poll(&h);
	assert_int_equal(h.n_kept, 0);
	eh_feed(&h, f, frame6(f, NULL, NULL, 0, NULL, 0, IPPROTO_ICMPV6, echo, sizeof(echo), 64));
	eh_poll(&h);
	assert_int_equal(h.n_kept, 1); /* (from the peer: answered) */
	assert_int_equal(S()->icmp6_echo_replies, r0 + 1);
	eth_stack_set_locals(h.st, NULL);
	eh_forget(&h);
}

/* Active opens over IPv6: a solicitation for an unknown on-link neighbour (the SYN waits), an
 * unsolicited advertisement of another address makes no entry, the solicited one releases the SYN;
 * off-link without gateway6 fails at once. */
static void test_tcp6_connect(void **state)
{
	static const uint8_t other[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 0x44};
	static const uint8_t stranger_mac[6] = {0x02, 0, 0, 0, 0, 0x66};
	struct xlt_ip dst, far;
	struct xlt_stream *s;
	struct eth_tcp_params p = {.rbuf_size = 65536, .sbuf_size = 65536, .connect_timeout_ms = 3000};
	const struct rte_ipv6_hdr *ip[4];
	struct out v[4];
	uint8_t f[200];
	int err = 0;

	(void)state;
	memcpy(dst.b, peer_ip6, 16);
	memset(far.b, 0, 16);
	far.b[0] = 0x20, far.b[1] = 0x01, far.b[2] = 0x0d, far.b[3] = 0xb9, far.b[15] = 1;
	assert_null(eth_tcp_connect(h.st, &far, 80, &p, &err));
	assert_int_equal(err, -ENETUNREACH);
	eh_forget(&h);
	s = eth_tcp_connect(h.st, &dst, 80, &p, &err);
	assert_non_null(s);
	eh_poll(&h);
	assert_int_equal(solicitations(peer_ip6), 1);
	assert_int_equal(S()->nd_ns_out, 1);
	assert_int_equal(sent6(v, NULL, 4), 0); /* the SYN waits for the neighbour */
	assert_int_equal(S()->nd_queued, 1);
	/* an unsolicited advertisement of an address we never asked for: no entry */
	nd_na_from(other, 0x20, stranger_mac);
	eh_poll(&h);
	assert_int_equal(S()->nd_entries, 1);
	/* the solicited answer for the one we asked for sends the SYN on */
	eh_forget(&h);
	nd_na_from(peer_ip6, 0x40 | 0x20, eh_peer_mac);
	eh_poll(&h);
	assert_int_equal(S()->nd_queued, 0);
	assert_int_equal(sent6(v, ip, 4), 1);
	assert_int_equal(v[0].flags, RTE_TCP_SYN_FLAG);
	assert_int_equal(v[0].dport, 80);
	assert_int_equal(v[0].o.mss, EH_MTU - 60);
	assert_memory_equal(ip[0]->src_addr, eh_gw_ip6, 16);
	assert_memory_equal(ip[0]->dst_addr, peer_ip6, 16);
	/* the peer answers: connected */
	{
		uint8_t f2[200];
		uint16_t lport = v[0].sport;
		uint32_t gseq = v[0].seq + 1;

		eh_forget(&h);
		eh_feed(&h, f2,
		        tcp6(f2, NULL, 0, 80, lport, 5000, gseq, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG, NULL, 0,
		             NULL, 0));
		eh_poll(&h);
		assert_int_equal(s->state, XLT_STREAM_OPEN);
		assert_int_equal(sent6(v, NULL, 4), 1);
		assert_int_equal(v[0].flags, RTE_TCP_ACK_FLAG);
		assert_int_equal(v[0].ack, 5001);
		s->ops->abort(s);
		s->ops->release(s);
		eh_poll(&h);
	}
	(void)f;
	eh_forget(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_fragments, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_handshake_options, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_simultaneous_open, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_simultaneous_open_syn_window, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_old_ack_window, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rst_window_edges, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_syn_again_then_ack, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_simultaneous_close_time_wait, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_time_wait_hostile, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_rst_budget, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_syn_share, setup_backlog16, teardown),
	    cmocka_unit_test_setup_teardown(test_syncookie_options, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_syncookie_invalid, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_invalid_ack_ratelimit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ooo_expiry, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keepalive, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_persist, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_small_window_override, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_start_window, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_window_edge_fits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_zero_window_sent, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_window_update_again, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fast_retransmit_sack, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fast_retransmit_sack_on_data, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_slow_start_stretch_acks, setup_big_sbuf, teardown),
	    cmocka_unit_test_setup_teardown(test_cwnd_app_limited, setup_big_sbuf, teardown),
	    cmocka_unit_test_setup_teardown(test_slow_start_batched_acks, setup_big_sbuf, teardown),
	    cmocka_unit_test_setup_teardown(test_slow_start_after_rto, setup_big_sbuf, teardown),
	    cmocka_unit_test_setup_teardown(test_syn_to_other_address, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tiny_mss_with_timestamps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_zero_mss, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fast_rexmit_within_sent, setup_big_sbuf, teardown),
	    cmocka_unit_test_setup_teardown(test_arp_flood_keeps_used, setup_wide, teardown),
	    cmocka_unit_test_setup_teardown(test_nbr_budgets, setup_wide, teardown),
	    cmocka_unit_test_setup_teardown(test_gateway_recheck_spoofed, setup_gateway, teardown),
	    cmocka_unit_test_setup_teardown(test_gateway_claim_not_mirrored, setup_gateway_exc, teardown_exc),
	    cmocka_unit_test_setup_teardown(test_gateway6_claim_not_mirrored, setup_gateway6_exc, teardown_exc),
	    cmocka_unit_test_setup_teardown(test_flow_peer_pinned, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flow_peer_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_p2p_31, setup_p2p, teardown),
	    cmocka_unit_test_setup_teardown(test_icmp_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_link_group_unicast_dropped, setup_exc, teardown_exc),
	    cmocka_unit_test_setup_teardown(test_exc_other_ethertypes, setup_exc, teardown_exc),
	    cmocka_unit_test_setup_teardown(test_arp_mirror_targets, setup_exc, teardown_exc),

	    cmocka_unit_test_setup_teardown(test_icmp6_refused, setup_exc, teardown_exc),
	    cmocka_unit_test_setup_teardown(test_exc_fill_l4_cksum, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flow_peer_partial_cksum, setup_ofl_exc, teardown_exc),
	    cmocka_unit_test_setup_teardown(test_exc_split_tcp6, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_echo_from_address_pinged, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_group_source_dropped, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_own_source_martian, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_link_broadcast_unicast_dropped, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ip_id_private, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_vanished_peer, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shrunk_window, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shrunk_window_reopen_lost, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shrunk_window_small, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_output_turns, setup_big_sbuf, teardown),
	    cmocka_unit_test_setup_teardown(test_output_mbuf_bound, setup_ofl_big_sbuf, teardown),
	    cmocka_unit_test_setup_teardown(test_pmtu_frag_needed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pmtu_storm, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lend_frames, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lend_pool_low, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lend_cursor, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lro_chain_echo_tso, setup_ofl, teardown),
	    cmocka_unit_test_setup_teardown(test_exc_rate_counts_tap_frames, setup_ofl_exc_1000, teardown_exc),
	    cmocka_unit_test_setup_teardown(test_lro_chain_sw_checksum, setup_plain, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_split_headers, setup_ofl, teardown),
	    cmocka_unit_test_setup_teardown(test_lro_chain_odd_boundary, setup_plain, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_ip_length, setup_ofl, teardown),
	    cmocka_unit_test_setup_teardown(test_rx_csum_trusted, setup_ofl, teardown),
	    cmocka_unit_test_setup_teardown(test_rx_csum_not_trusted, setup_plain, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_icmp, setup_ofl, teardown),
	    cmocka_unit_test_setup_teardown(test_tcp6_echo, setup, teardown),
	    /* (the same with the device's checksums) */
	    cmocka_unit_test_setup_teardown(test_tcp6_echo, setup_ofl, teardown),
	    cmocka_unit_test_setup_teardown(test_tcp6_tso, setup_ofl, teardown),
	    cmocka_unit_test_setup_teardown(test_pmtu_too_big6, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pmtu_storm6, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tcp6_connect, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nd_no_override, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nd_bad_lladdr, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ipv6_mapped_loopback, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tcp6_owner_chain, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nd_flood_keeps_used, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nd_clone_checks, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dad_budget, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flow_peer_unmatched, setup_exc, teardown_exc),
	    cmocka_unit_test_setup_teardown(test_flow_peer_syn_rcvd, setup_exc, teardown_exc),
	    /* last: until tcp_in.c checks the header's length first, ASan ends the run here */
	    cmocka_unit_test_setup_teardown(test_chain_tcp_doff_split, setup_ofl, teardown),
	};

	if (eh_eal_init()) {
		fprintf(stderr, "cannot start the DPDK EAL\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
