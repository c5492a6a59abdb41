/* TCP segment arrival: RFC 9293 3.10.7, hardened by RFC 5961 and extended by RFC 7323 (timestamps,
 * PAWS, window scaling), RFC 2018 (SACK), RFC 5681/6582 (fast retransmit, NewReno), RFC 6298 and
 * RFC 7661 (the window grows only while it limits the sender).
 *
 * Order of the checks for a synchronized connection, as the RFCs give it: PAWS, sequence
 * acceptability (with trimming to the window), RST (exact match resets, anything else in the window
 * only earns a challenge ACK), SYN (always a challenge ACK), ACK (too new: ACK and drop; too old:
 * challenge ACK), then data and FIN. Nothing a segment carries is trusted beyond what the window
 * allows: payload is copied into the receive buffer only inside the window we advertised and only
 * as far as the buffer has room, so a peer can never make us hold more than the configured buffer.
 * Out-of-order data goes straight to its place in the receive buffer; only its range is recorded,
 * at most ETH_TCP_OOO_MAX of them (the bounded out-of-order queue). It does not stay forever: when
 * the hole before it stays open for OOO_HOLD_RTOS retransmission timeouts (2 to 60 s) or a range is
 * older than OOO_AGE_MAX_MS, all of it is dropped and no longer SACKed (reneging, which RFC 2018 8
 * allows: the sender keeps SACKed data until it is acknowledged and sends it again), so a peer that
 * sends one byte ahead of a hole cannot keep a whole buffer resident.
 *
 * Invalid segments (out of the window, failing PAWS, acknowledging what we never sent) are
 * answered with a duplicate ACK at most every 500 ms per connection unless they carry data or a FIN
 * (Linux's tcp_invalid_ratelimit and tcp_oow_rate_limited: such a segment is no part of an ACK loop
 * and costs its sender as much as the answer); RFC 5961 challenge ACKs share that limit and a budget per
 * worker and second, drawn at random around CHALLENGE_PER_WORKER each second so that a blind
 * attacker cannot count it down to learn of other connections (CVE-2016-5696).
 *
 * A SYN past its listener's share of the half-open table gets a SYN cookie (syncookie.h) and leaves
 * no state; an ACK to a listener that sent cookies recently is checked for one and, if valid,
 * becomes the connection, with the MSS, window scale and SACK the cookie carried. */
#include <errno.h>
#include <string.h>

#include "buf.h"
#include "cksum.h"
#include "engine.h"
#include "sndq.h"
#include "rcvq.h"
#include "syncookie.h"
#include "tcp_opt.h"
#include "tcp_seq.h"
#include "twheel.h"

#define PAWS_IDLE_MS (24ull * 24 * 3600 * 1000) /* RFC 7323 5.5: ts_recent older than 24 days is void */
#define OOW_ACK_MS	     500u  /* Linux's tcp_invalid_ratelimit */
#define CHALLENGE_PER_WORKER 1000u /* challenge ACKs per worker and second, on average */
#define OOO_HOLD_RTOS	     4u
#define OOO_HOLD_MIN_MS	     2000u
#define OOO_HOLD_MAX_MS	     60000u
#define OOO_AGE_MAX_MS	     60000u

/* A received segment, decoded. */
struct seg {
	uint32_t seq, ack, len, wnd;
	uint8_t flags;
	const struct rte_mbuf *m;  /* the frame: its payload starts at byte moff of the packet (a chain */
	uint32_t moff;		   /* of buffers after LRO, else one buffer) */
	struct xlt_ip src, dst;    /* the peer's address, ours (IPv4 mapped or IPv6) */
	bool v6;
	bool syn_ack; /* a simultaneous open's SYN-ACK, taken as an ACK: its window is not scaled */
	const struct rte_tcp_hdr *th;
	struct eth_tcp_opts o;
};

static bool has(const struct seg *sg, uint8_t f)
{
	return (sg->flags & f) != 0;
}

/* The window SG offers T, in bytes: scaled, but for a SYN's (RFC 7323 2.2). */
static uint32_t seg_wnd(const struct eth_tcb *t, const struct seg *sg)
{
	return sg->syn_ack ? sg->wnd : sg->wnd << t->snd_wscale;
}

static uint32_t seg_space(const struct seg *sg)
{
	return sg->len + has(sg, RTE_TCP_SYN_FLAG) + has(sg, RTE_TCP_FIN_FLAG);
}

static void reply_rst(struct eth_stack *st, const struct seg *sg)
{
	eth_tcp_reset_reply(st, &sg->src, &sg->dst, sg->th, seg_space(sg));
}

static void ack_later(struct eth_tcb *t)
{
	t->ack_now = true;
	eth_tcb_output_later(t);
}

/* Whether an ACK answering invalid segment SG may go now (Linux's tcp_oow_rate_limited): always for
 * a segment that takes sequence space (data or FIN) without SYN unless STRICT, else once per
 * OOW_ACK_MS per connection. */
static bool oow_ack_allowed(struct eth_tcb *t, const struct seg *sg, bool strict)
{
	struct eth_stack *st = t->st;

	if (!strict && seg_space(sg) && !has(sg, RTE_TCP_SYN_FLAG))
		return true;
	if (t->oow_ack_ms && st->now_ms - t->oow_ack_ms < OOW_ACK_MS) {
		xlt_counter_add(&st->stats.tcp_acks_limited_conn, 1);
		return false;
	}
	t->oow_ack_ms = st->now_ms;
	return true;
}

/* A duplicate ACK for an invalid segment (it tells a confused peer where we are). */
static void invalid_ack(struct eth_tcb *t, const struct seg *sg)
{
	if (oow_ack_allowed(t, sg, false))
		ack_later(t);
}

/* RFC 5961 challenge ACK: per connection as invalid_ack (data or not), then within this worker's
 * budget for the second. */
static void challenge_ack(struct eth_tcb *t, const struct seg *sg)
{
	struct eth_stack *st = t->st;
	uint64_t sec = st->now_ms / 1000;

	if (!oow_ack_allowed(t, sg, true))
		return;
	if (sec != st->chall_sec) {
		uint64_t r = eth_siphash_3u32(&st->isn_key, (uint32_t)sec, (uint32_t)(sec >> 32), 0x63616cu);

		st->chall_sec = sec;
		st->chall_left = CHALLENGE_PER_WORKER / 2 + (uint32_t)(r % CHALLENGE_PER_WORKER);
	}
	if (!st->chall_left) {
		xlt_counter_add(&st->stats.tcp_acks_limited_worker, 1);
		return;
	}
	st->chall_left--;
	eth_tcp_challenge_ack(t);
}

/* ---- passive open ---- */

static void take_syn_options(struct eth_tcb *t, const struct seg *sg)
{
	/* RFC 9293 3.7.1's default without the option; an MSS of 0 is no limit of the peer's either
	 * (as Linux, and the SYN cookie path, read it): not "no limit" */
	t->peer_mss = sg->o.mss_ok && sg->o.mss ? sg->o.mss : 536;
	if (sg->o.ws_ok) {
		t->ws_ok = true;
		t->snd_wscale = sg->o.wscale;
	} else {
		t->ws_ok = false;
		t->snd_wscale = t->rcv_wscale = 0;
	}
	t->sack_ok = sg->o.sack_ok;
	if (sg->o.ts_ok) {
		t->ts_ok = true;
		t->ts_recent = sg->o.tsval;
		t->ts_recent_ms = t->st->now_ms;
	}
	eth_tcb_set_mss(t);
}

/* The identity a cookie of listener L for SG's flow is bound to (SG: the SYN, or the ACK whose
 * sequence number is one past the SYN's). */
static struct eth_syncookie_flow cookie_flow(const struct eth_stack *st, const struct eth_listener *l,
					     const struct seg *sg, uint32_t peer_isn)
{
	(void)st; /* the local address is the segment's: one of the instance's */
	return (struct eth_syncookie_flow){
	    .raddr = sg->src,
	    .laddr = sg->dst,
	    .rport = rte_be_to_cpu_16(sg->th->src_port),
	    .lport = rte_be_to_cpu_16(sg->th->dst_port),
	    .peer_isn = peer_isn,
	    .our_wscale = eth_tcp_wscale_for(l->params.rbuf_size),
	};
}

/* The window of a listener's SYN-ACK (never scaled). */
static uint32_t syn_window(const struct eth_listener *l)
{
	uint32_t w = eth_tcp_rbuf_start(&l->params);

	return w > 65535 ? 65535 : w;
}

/* Answers SYN SG with a SYN-ACK whose sequence number is a cookie, keeping no state. */
static void cookie_reply(struct eth_stack *st, struct eth_listener *l, const struct seg *sg)
{
	struct eth_syncookie_flow f = cookie_flow(st, l, sg, sg->seq);
	bool ts = sg->o.ts_ok;
	uint8_t bits = eth_syncookie_ts_bits(sg->o.ws_ok, sg->o.wscale, sg->o.sack_ok), opts[40];
	uint32_t cookie = eth_syncookie_make(&st->isn_key, &f, st->now_ms, sg->o.mss_ok ? sg->o.mss : 0, ts,
					     bits);
	uint32_t tsval =
	    eth_syncookie_tsval((uint32_t)st->now_ms + eth_tcp_ts_offset(st, &f.raddr, f.rport), bits);
	unsigned optlen, hlen, iph = eth_ip_hlen(sg->v6);
	struct rte_tcp_hdr *th;
	struct rte_mbuf *m;
	uint8_t *ip;

	/* without timestamps nothing would bring window scaling or SACK back: offer neither */
	optlen = eth_tcp_opt_write_syn(opts, eth_tcp_mss_for(st, sg->v6), ts && sg->o.sack_ok, ts, tsval,
	                               sg->o.tsval, ts && sg->o.ws_ok ? f.our_wscale : -1);
	hlen = iph + (unsigned)sizeof(*th) + optlen;
	l->cookie_ms = st->now_ms;
	m = eth_pkt_alloc(st);
	if (!m)
		return;
	ip = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)hlen);
	if (!ip) {
		rte_pktmbuf_free(m);
		return;
	}
	th = (struct rte_tcp_hdr *)(ip + iph);
	th->src_port = sg->th->dst_port;
	th->dst_port = sg->th->src_port;
	th->sent_seq = rte_cpu_to_be_32(cookie);
	th->recv_ack = rte_cpu_to_be_32(sg->seq + 1);
	th->data_off = (uint8_t)(((sizeof(*th) + optlen) / 4) << 4);
	th->tcp_flags = RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG;
	th->rx_win = rte_cpu_to_be_16((uint16_t)syn_window(l));
	th->cksum = 0;
	th->tcp_urp = 0;
	memcpy(th + 1, opts, optlen);
	eth_tcp_finish(st, m, th, &f.laddr, &f.raddr, (uint32_t)sizeof(*th) + optlen, 0, 0);
	xlt_counter_add(&st->stats.tcp_segments_out, 1);
	xlt_counter_add(&st->stats.tcp_syncookies_sent, 1);
	eth_ip_send(st, m, &f.raddr, true);
}

/* Passive open, either way (a SYN, or a valid cookie's ACK): T, filled in, becomes a half-open
 * connection that lookups find. */
static void half_open(struct eth_tcb *t, const struct xlt_ip *laddr, uint64_t h)
{
	t->laddr = *laddr;
	t->s.peer_addr = t->raddr;
	t->s.peer_port = t->rport;
	t->s.local_addr = *laddr;
	t->s.local_port = t->lport;
	eth_tcb_set_state(t, ETH_TCP_SYN_RCVD);
	eth_tcb_hash(t, h);
}

/* A SYN for listener L: a half-open connection within L's share of the table, else a cookie.
 * TW_REUSE (a SYN reusing a TIME_WAIT pair, the caller checked the table has room) takes a block
 * beyond the share, with an ISS of at least MIN_ISS. */
static void passive_open(struct eth_stack *st, struct eth_listener *l, const struct seg *sg, uint64_t h,
			 uint32_t min_iss, bool tw_reuse)
{
	struct eth_tcb *t = NULL;

	if (eth_listener_pressed(st, l))
		l->press_ms = st->now_ms;
	if (tw_reuse || (l->n_syn < eth_listener_share(st) && st->stats.tcp_syn_rcvd < st->syn_backlog))
		t = eth_tcb_alloc(st);
	if (!t && tw_reuse) {
		xlt_counter_add(&st->stats.tcp_syn_drops, 1);
		return;
	}
	if (!t) {
		cookie_reply(st, l, sg); /* share full, or no block left */
		return;
	}
	t->raddr = sg->src;
	t->v6 = sg->v6;
	t->rport = rte_be_to_cpu_16(sg->th->src_port);
	t->lport = rte_be_to_cpu_16(sg->th->dst_port);
	t->passive = true;
	t->lis = l;
	l->refs++;
	eth_tcb_init_params(t, &l->params);
	t->iss = eth_tcp_isn(st, &t->raddr, &sg->dst, t->rport, t->lport);
	if (tw_reuse && eth_seq_lt(t->iss, min_iss))
		t->iss = min_iss; /* TIME_WAIT reuse: stay above the old incarnation's sequence space */
	t->snd_una = t->snd_nxt = t->snd_max = t->recover = t->iss;
	t->irs = sg->seq;
	t->rcv_nxt = t->rcv_adv = sg->seq + 1;
	t->rcv_wscale = eth_tcp_wscale_for(l->params.rbuf_size);
	take_syn_options(t, sg);
	t->snd_wnd = t->max_sndwnd = sg->wnd; /* never scaled in a SYN */
	t->snd_wl1 = sg->seq;
	t->snd_wl2 = t->iss;
	half_open(t, &sg->dst, h);
	eth_tcb_output_later(t);
}

static void tcb_input(struct eth_tcb *t, struct seg *sg);

/* An ACK for listener L that may complete a cookie handshake. Returns false when it does not (then
 * it is a stray segment that earns a reset), true when it was taken: a connection made from the
 * cookie and the segment handed to it, or dropped. */
static bool cookie_ack(struct eth_stack *st, struct eth_listener *l, struct seg *sg, uint64_t h)
{
	struct eth_syncookie_flow f;
	struct eth_syncookie_opts co;
	struct eth_tcb *t;
	int ret;

	if (!l->cookie_ms || st->now_ms - l->cookie_ms >= 2ull * ETH_SYNCOOKIE_SLOT_MS)
		return false; /* no cookie of ours can be valid: not even worth a hash */
	f = cookie_flow(st, l, sg, sg->seq - 1);
	ret = eth_syncookie_check(&st->isn_key, &f, st->now_ms, sg->ack - 1, sg->o.ts_ok, sg->o.tsecr, &co);
	if (ret) {
		xlt_counter_add(&st->stats.tcp_syncookies_failed, 1);
		return ret == -EPROTO; /* RFC 7323 3.2: without the timestamps agreed on, dropped */
	}
	t = eth_tcb_alloc(st);
	if (!t) {
		xlt_counter_add(&st->stats.tcp_syn_drops, 1); /* the peer sends again */
		return true;
	}
	xlt_counter_add(&st->stats.tcp_syncookies_validated, 1);
	t->raddr = f.raddr;
	t->v6 = sg->v6;
	t->rport = f.rport;
	t->lport = f.lport;
	t->passive = true;
	t->lis = l;
	l->refs++;
	eth_tcb_init_params(t, &l->params);
	/* as if the SYN-ACK had been sent from a half-open block: tcb_input then takes the ACK */
	t->iss = sg->ack - 1;
	t->snd_una = t->recover = t->iss;
	t->snd_nxt = t->snd_max = t->iss + 1;
	t->irs = f.peer_isn;
	t->rcv_nxt = t->last_ack_sent = sg->seq;
	t->rcv_adv = t->rcv_nxt + syn_window(l);
	t->peer_mss = co.mss;
	t->ws_ok = co.ws_ok;
	t->snd_wscale = co.ws_ok ? co.wscale : 0;
	t->rcv_wscale = co.ws_ok ? f.our_wscale : 0;
	t->sack_ok = co.sack;
	t->ts_ok = co.ts;
	if (co.ts) {
		t->ts_recent = sg->o.tsval;
		t->ts_recent_ms = st->now_ms;
	}
	eth_tcb_set_mss(t);
	t->snd_wl1 = f.peer_isn;
	t->snd_wl2 = t->iss;
	half_open(t, &sg->dst, h);
	tcb_input(t, sg);
	return true;
}

/* Returns true when the segment is the kernel's (exception path): the caller hands it over. */
static bool no_connection(struct eth_stack *st, struct seg *sg, uint64_t h)
{
	struct eth_listener *l;

	if (has(sg, RTE_TCP_RST_FLAG)) {
		xlt_counter_add(&st->stats.tcp_rsts_in, 1);
		return st->c.exc != NULL; /* a kernel connection's (BGP, ssh) */
	}
	l = eth_listener_find(st, rte_be_to_cpu_16(sg->th->dst_port));
	if (l && eth_local_state_ip(st, &sg->dst) != ETH_LOCAL_UP)
		l = NULL; /* an address that left the kernel TAP takes no new connection */
	if (l && (sg->flags & (RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG | RTE_TCP_FIN_FLAG)) == RTE_TCP_SYN_FLAG) {
		passive_open(st, l, sg, h, 0, false);
		return false;
	}
	if (l && (sg->flags & (RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG)) == RTE_TCP_ACK_FLAG &&
	    cookie_ack(st, l, sg, h))
		return false;
	if (st->c.exc)
		return true; /* a port of the kernel's (its listener answers, or it resets) */
	reply_rst(st, sg); /* closed port, or a stray segment for a listener */
	return false;
}

/* A SYN for a connection in TIME_WAIT (RFC 9293 3.10.7.4 and RFC 6191): reuse the pair when the
 * SYN is provably newer, by timestamp when both sides use them, else by sequence number. */
static void time_wait_syn(struct eth_tcb *t, const struct seg *sg, uint64_t h)
{
	struct eth_stack *st = t->st;
	struct eth_listener *l = eth_listener_find(st, t->lport);
	bool newer = t->ts_ok && sg->o.ts_ok ? eth_seq_gt(sg->o.tsval, t->ts_recent) : eth_seq_gt(sg->seq, t->rcv_nxt);
	uint32_t min_iss = t->snd_max + (1u << 17);

	if (!newer || !l) {
		challenge_ack(t, sg);
		return;
	}
	if (st->stats.tcp_syn_rcvd >= st->syn_backlog) {
		/* no block for it: the TIME_WAIT stays, the peer's next SYN may find room */
		xlt_counter_add(&st->stats.tcp_syn_drops, 1);
		return;
	}
	xlt_counter_add(&st->stats.tcp_tw_reuse, 1);
	if (t->released)
		eth_tcb_free(t);
	else
		eth_tcb_detach(t); /* the session still holds the (closed) stream */
	passive_open(st, l, sg, h, min_iss, true);
}

/* ---- synchronized states ---- */

static void establish(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;

	t->cwnd = ETH_TCP_INIT_CWND_SEGS * (uint32_t)t->mss;
	t->ssthresh = UINT32_MAX / 2;
	t->backoff = 0;
	t->first_rexmit_ms = 0;
	/* A SYN or SYN-ACK to send again (the retransmission timer, or the peer's repeated SYN) sets
	 * snd_nxt back to the ISS until the output pass sends it; the ACK that establishes us can be
	 * taken first (same receive burst, or the output was put off by a full device). It acknowledges
	 * that SYN: left on the ISS, snd_nxt would make the connection send nothing ever again. */
	if (eth_seq_lt(t->snd_nxt, t->snd_una))
		t->snd_nxt = t->snd_una;
	eth_tcb_set_state(t, ETH_TCP_ESTABLISHED);
	t->s.state = XLT_STREAM_OPEN;
	eth_tcp_keepalive_reset(t);
	if (t->fin_queued)
		eth_tcb_set_state(t, ETH_TCP_FIN_WAIT_1);
	if (t->passive) {
		xlt_counter_add(&st->stats.tcp_passive_opens, 1);
		if (!t->lis || !t->lis->open) {
			/* the listener closed during the handshake */
			eth_tcp_send_rst(t);
			eth_tcb_close(t, -ECONNABORTED);
			return;
		}
		eth_tcb_event(t, ETH_EV_ACCEPT);
	} else {
		eth_tcb_event(t, ETH_EV_CONNECTED);
	}
	if (eth_sndq_len(t) || t->fin_queued)
		eth_tcb_output_later(t);
}

static void enter_time_wait(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;

	eth_tcb_set_state(t, ETH_TCP_TIME_WAIT);
	t->t_rexmit = t->t_delack = t->t_wupd = 0;
	t->t_keep = st->now_ms + (st->c.time_wait_ms ? st->c.time_wait_ms : 1);
	t->tw_last_ms = t->t_keep + st->c.time_wait_ms;
	eth_sndq_free(t, false); /* (all acknowledged: reports still due go out) */
	t->n_sacked = 0;
	eth_tcb_check_done(t);
}

/* Merges the peer's SACK blocks into the scoreboard (sorted, disjoint, within (snd_una, snd_max]).
 * Returns whether the scoreboard learnt anything. */
static bool sack_update(struct eth_tcb *t, const struct seg *sg)
{
	uint32_t before = 0, after = 0;

	for (unsigned i = 0; i < t->n_sacked; i++)
		before += t->sacked[i].end - t->sacked[i].start;
	for (unsigned b = 0; b < sg->o.n_sack; b++) {
		uint32_t s = sg->o.sack[b].start, e = sg->o.sack[b].end;
		unsigned i, j;

		if (!eth_seq_lt(s, e) || !eth_seq_gt(s, t->snd_una) || eth_seq_gt(e, t->snd_max))
			continue; /* D-SACK, stale or bogus */
		/* find the first range that ends at or after s */
		for (i = 0; i < t->n_sacked && eth_seq_lt(t->sacked[i].end, s); i++)
			;
		/* ranges i..j-1 overlap or touch [s, e]: merge them */
		for (j = i; j < t->n_sacked && eth_seq_leq(t->sacked[j].start, e); j++) {
			s = eth_seq_min(s, t->sacked[j].start);
			e = eth_seq_max(e, t->sacked[j].end);
		}
		if (j > i) {
			t->sacked[i].start = s;
			t->sacked[i].end = e;
			memmove(&t->sacked[i + 1], &t->sacked[j], (t->n_sacked - j) * sizeof(t->sacked[0]));
			t->n_sacked = (uint8_t)(t->n_sacked - (j - i - 1));
			continue;
		}
		if (t->n_sacked == ETH_TCP_SACK_MAX) {
			if (i == ETH_TCP_SACK_MAX)
				continue; /* beyond all we keep: the highest ranges matter least */
			t->n_sacked--;
		}
		memmove(&t->sacked[i + 1], &t->sacked[i], (t->n_sacked - i) * sizeof(t->sacked[0]));
		t->sacked[i].start = s;
		t->sacked[i].end = e;
		t->n_sacked++;
	}
	for (unsigned i = 0; i < t->n_sacked; i++)
		after += t->sacked[i].end - t->sacked[i].start;
	return after != before;
}

static void sack_trim(struct eth_tcb *t)
{
	unsigned i = 0;

	while (i < t->n_sacked && eth_seq_leq(t->sacked[i].end, t->snd_una))
		i++;
	if (i) {
		memmove(t->sacked, t->sacked + i, (t->n_sacked - i) * sizeof(t->sacked[0]));
		t->n_sacked = (uint8_t)(t->n_sacked - i);
	}
	if (t->n_sacked && eth_seq_lt(t->sacked[0].start, t->snd_una))
		t->sacked[0].start = t->snd_una;
}

/* The retransmission at snd_una: one segment of what was sent (never bytes beyond snd_max, which the
 * peer's window may not have room for, nor the FIN). */
static uint32_t rexmit_len(const struct eth_tcb *t)
{
	uint32_t len = t->snd_max - t->snd_una, seg = eth_tcp_seg_max(t);

	if (len > eth_sndq_len(t))
		len = eth_sndq_len(t);
	return len < seg ? len : seg;
}

static void enter_recovery(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;
	uint32_t flight = t->snd_max - t->snd_una, len;

	xlt_counter_add(&st->stats.tcp_fast_retransmits, 1);
	t->ssthresh = flight / 2 > 2u * t->mss ? flight / 2 : 2u * t->mss;
	t->recover = t->snd_max;
	t->in_recovery = true;
	t->rto_slow_start = false; /* a new loss: fast recovery takes over */
	t->rtt_timing = false; /* Karn */
	/* the first lost segment goes now, SACK or not (RFC 5681 3.2 step 3) */
	len = rexmit_len(t);
	if (len && eth_tcp_xmit(t, t->snd_una, len, RTE_TCP_ACK_FLAG) == 0)
		ETH_REXMIT(t);
	t->high_rxt = t->snd_una + len;
	t->cwnd = t->sack_ok ? t->ssthresh : t->ssthresh + 3u * t->mss;
	eth_tcp_rexmit_arm(t);
}

/* Processes the ACK field. Returns false when the segment must be dropped (or the connection
 * ended). */
static bool ack_input(struct eth_tcb *t, const struct seg *sg)
{
	struct eth_stack *st = t->st;
	uint32_t ack = sg->ack, wnd = seg_wnd(t, sg);
	bool fin_acked = false, sack_news = false;

	if (eth_seq_gt(ack, t->snd_max)) {
		invalid_ack(t, sg); /* acknowledges what we never sent */
		return false;
	}
	if (eth_seq_lt(ack, t->snd_una - (t->max_sndwnd > t->mss ? t->max_sndwnd : t->mss))) {
		challenge_ack(t, sg); /* RFC 5961 5.2: too old to be genuine */
		return false;
	}
	if (t->sack_ok && sg->o.n_sack)
		sack_news = sack_update(t, sg);
	if (eth_seq_gt(ack, t->snd_una)) {
		uint32_t acked = ack - t->snd_una, data;

		if (t->ts_ok && sg->o.ts_ok && sg->o.tsecr) {
			uint32_t rtt = eth_tcp_tsval(t) - sg->o.tsecr;
			if (rtt < 60000)
				eth_tcp_rtt_sample(t, rtt * 1000);
			t->rtt_timing = false;
		} else if (t->rtt_timing && eth_seq_gt(ack, t->rtseq)) {
			eth_tcp_rtt_sample(t, (uint32_t)(st->now_ms - t->rttime_ms) * 1000);
			t->rtt_timing = false;
		}
		fin_acked = t->fin_sent && ack == t->snd_max;
		data = acked - fin_acked;
		eth_sndq_ack(t, data); /* lent bytes: their references go, their report is queued */
		t->snd_una = ack;
		if (eth_seq_lt(t->snd_nxt, t->snd_una))
			t->snd_nxt = t->snd_una;
		t->backoff = 0;
		t->first_rexmit_ms = 0;
		sack_trim(t);
		if (t->in_recovery) {
			if (eth_seq_geq(ack, t->recover)) {
				uint32_t flight = t->snd_max - t->snd_una;
				t->in_recovery = false;
				t->dupacks = 0;
				t->cwnd = t->sack_ok || flight + t->mss > t->ssthresh ? t->ssthresh : flight + t->mss;
			} else {
				/* partial ACK (RFC 6582 3.2 step 3): the next hole goes now */
				if (eth_seq_lt(t->high_rxt, t->snd_una))
					t->high_rxt = t->snd_una;
				if (!t->sack_ok || !t->n_sacked) {
					uint32_t len = rexmit_len(t);
					if (len && eth_tcp_xmit(t, t->snd_una, len, RTE_TCP_ACK_FLAG) == 0) {
						ETH_REXMIT(t);
						t->high_rxt = t->snd_una + len;
					}
					t->cwnd = t->cwnd > acked ? t->cwnd - acked + t->mss : t->mss;
				}
			}
		} else {
			t->dupacks = 0;
			/* The window grows only while it is what limits the sender (RFC 7661; Linux's
			 * tcp_is_cwnd_limited): a flow held back by its source (IB credits) or by the
			 * peer's window keeps the window it has shown it uses, instead of one it never
			 * tried that would then go out as one burst. The measure is the largest flight
			 * of the last round trip (tcp_out.c), not the flight as each ACK finds it: ACKs
			 * handled together in one RX burst would otherwise see the flight shrink ACK by
			 * ACK before anything new could go, and stop the growth after a third of it.
			 * Slow start counts every byte acknowledged (as Linux does): RFC 3465's L = 2
			 * segments per ACK makes it linear against receivers that coalesce segments (GRO,
			 * LRO) and acknowledge up to 64 KiB at once; but after a timeout, while the
			 * retransmissions fill the hole, L = 1 segment (RFC 3465 2.3): one ACK may then
			 * cover all the peer held beyond the hole, and the window would jump to ssthresh
			 * and go out as one burst. Congestion avoidance counts bytes (RFC 3465 2.1). */
			bool after_rto = t->rto_slow_start; /* (the ACK that fills the hole counts as such) */

			if (after_rto && eth_seq_geq(ack, t->recover))
				t->rto_slow_start = false;
			if (t->cwnd <= 2u * t->cwnd_use) {
				uint32_t inc = after_rto && acked > t->mss ? t->mss : acked;

				if (t->cwnd < t->ssthresh)
					t->cwnd = t->ssthresh - t->cwnd > inc ? t->cwnd + inc : t->ssthresh;
				else if ((t->bytes_acked += acked) >= t->cwnd) {
					t->bytes_acked -= t->cwnd;
					t->cwnd += t->mss;
				}
			}
			if (t->cwnd > (1u << 30))
				t->cwnd = 1u << 30;
		}
		if (t->snd_una == t->snd_max)
			t->t_rexmit = 0;
		else
			eth_tcp_rexmit_arm(t);
		if (t->want_writable && eth_sndq_space(t) >= t->sbuf.cap / 4) {
			t->want_writable = false;
			eth_tcb_event(t, ETH_EV_WRITABLE);
		}
		eth_tcb_output_later(t);
	} else if (ack == t->snd_una) {
		/* A duplicate is RFC 5681's (no data, same window) or, with SACK, RFC 6675's: any
		 * segment that SACKs something new, even one carrying data or another window. A peer that
		 * sends too (an echo client, a relay) piggybacks its ACKs on data while its window moves:
		 * under RFC 5681's rule alone its losses waited for the retransmission timer. After a
		 * timeout (until the ACKs reach recover: rto_slow_start, a flag, since a recover left
		 * behind by 2^31 bytes would read as ahead) only duplicates with new SACK information
		 * count: they prove a loss among the data sent again, where plain duplicates may just
		 * answer our own go-back-N copies (RFC 6582's reason to ignore them). */
		bool after_rto = !t->in_recovery && t->rto_slow_start;
		bool plain = sg->len == 0 && !has(sg, RTE_TCP_SYN_FLAG | RTE_TCP_FIN_FLAG) && wnd == t->snd_wnd;
		if (t->snd_max != t->snd_una && (sack_news || (plain && !after_rto))) {
			t->dupacks++;
			if (t->in_recovery) {
				if (!t->sack_ok && t->cwnd < (1u << 30))
					t->cwnd += t->mss; /* inflation */
				eth_tcb_output_later(t);
			} else if (t->dupacks == 3) {
				enter_recovery(t);
				eth_tcb_output_later(t);
			}
		}
	}
	/* window update (RFC 9293 3.10.7.4), only from an ACK at snd_una or beyond: the window is
	 * measured from snd_una, so an older ACK's would reach past the peer's real edge */
	if (eth_seq_geq(ack, t->snd_una) &&
	    (eth_seq_lt(t->snd_wl1, sg->seq) || (t->snd_wl1 == sg->seq && eth_seq_leq(t->snd_wl2, ack)))) {
		if (wnd == 0 && t->snd_wnd != 0)
			xlt_counter_add(&st->stats.tcp_zero_window_rcvd, 1);
		if (wnd > t->snd_wnd) {
			if (t->snd_una == t->snd_max) {
				t->t_rexmit = 0; /* leaves persist */
				t->backoff = 0;
			} else if (t->snd_wnd < t->mss && (!t->snd_wnd || wnd >= t->mss) && t->backoff) {
				/* it opens over data in flight it had shut or shrunk below a segment (to a
				 * segment at least: a window growing by crumbs below one is no opening):
				 * what the timeouts held back goes now (snd_nxt went back), timed from now
				 * at the path's RTO, as Linux leaves probe0: the backed-off interval was
				 * the window's, and one loss of what goes now would otherwise wait it out
				 * (up to a third of user_timeout, then longer) */
				t->backoff = 0;
				eth_tcp_rexmit_arm(t);
			}
			eth_tcb_output_later(t);
		}
		t->snd_wnd = wnd;
		t->snd_wl1 = sg->seq;
		t->snd_wl2 = ack;
		if (wnd > t->max_sndwnd)
			t->max_sndwnd = wnd;
	}
	/* a peer that answers our probes is alive: in persist (nothing in flight), or with its window
	 * shrunk to zero over data in flight (an ACK that moved snd_una cleared it above) */
	if (ack == t->snd_una && (t->snd_una == t->snd_max || !t->snd_wnd))
		t->first_rexmit_ms = 0;
	if (!fin_acked)
		return true;
	switch (t->state) {
	case ETH_TCP_FIN_WAIT_1:
		eth_tcb_set_state(t, ETH_TCP_FIN_WAIT_2);
		break;
	case ETH_TCP_CLOSING:
		enter_time_wait(t);
		break;
	case ETH_TCP_LAST_ACK:
		eth_tcb_detach(t);
		eth_tcb_check_done(t);
		return false;
	default:
		break;
	}
	return true;
}

static void ooo_remove(struct eth_tcb *t, unsigned i)
{
	memmove(&t->ooo[i], &t->ooo[i + 1], (t->n_ooo - i - 1) * sizeof(t->ooo[0]));
	memmove(&t->ooo_born[i], &t->ooo_born[i + 1], (t->n_ooo - i - 1) * sizeof(t->ooo_born[0]));
	t->n_ooo--;
}

/* Adds [s, e) to the out-of-order ranges, most recent first (a merged range keeps the age of its
 * oldest part). Returns false when no slot is left. */
static bool ooo_add(struct eth_tcb *t, uint32_t s, uint32_t e)
{
	struct eth_sack_block nb = {s, e};
	uint32_t now = (uint32_t)t->st->now_ms, born = now;
	unsigned i = 0;

	while (i < t->n_ooo) {
		struct eth_sack_block *r = &t->ooo[i];
		if (eth_seq_leq(r->start, nb.end) && eth_seq_leq(nb.start, r->end)) {
			nb.start = eth_seq_min(nb.start, r->start);
			nb.end = eth_seq_max(nb.end, r->end);
			if (now - t->ooo_born[i] > now - born)
				born = t->ooo_born[i];
			ooo_remove(t, i);
			continue;
		}
		i++;
	}
	if (t->n_ooo == ETH_TCP_OOO_MAX)
		return false;
	memmove(&t->ooo[1], &t->ooo[0], t->n_ooo * sizeof(t->ooo[0]));
	memmove(&t->ooo_born[1], &t->ooo_born[0], t->n_ooo * sizeof(t->ooo_born[0]));
	t->ooo[0] = nb;
	t->ooo_born[0] = born;
	t->n_ooo++;
	return true;
}

/* How long the hole before out-of-order data may stay open: a few of our retransmission timeouts
 * (the sender's is alike), within [OOO_HOLD_MIN_MS, OOO_HOLD_MAX_MS]. */
static uint64_t ooo_hold_ms(const struct eth_tcb *t)
{
	uint64_t ms = (uint64_t)OOO_HOLD_RTOS * t->rto_ms;

	return ms < OOO_HOLD_MIN_MS ? OOO_HOLD_MIN_MS : ms > OOO_HOLD_MAX_MS ? OOO_HOLD_MAX_MS : ms;
}

/* The out-of-order deadline: the hole's, or the oldest range's if that comes first. */
static void ooo_arm(struct eth_tcb *t)
{
	uint32_t now = (uint32_t)t->st->now_ms, oldest = 0;
	uint64_t due = t->ooo_hole_ms + ooo_hold_ms(t), age_due;

	for (unsigned i = 0; i < t->n_ooo; i++)
		if (now - t->ooo_born[i] > oldest)
			oldest = now - t->ooo_born[i];
	age_due = t->st->now_ms - oldest + OOO_AGE_MAX_MS;
	t->t_ooo = age_due < due ? age_due : due;
}

void eth_tcp_ooo_expire(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;

	if (!t->n_ooo) {
		t->t_ooo = 0;
		return;
	}
	ooo_arm(t);
	if (t->t_ooo > st->now_ms)
		return; /* the hole moved since the deadline was set: not yet */
	/* renege: forget the ranges (no SACK for them any more) and give their chunks back */
	xlt_counter_add(&st->stats.tcp_ooo_expired, 1);
	t->n_ooo = 0;
	t->ooo_fin = false;
	t->t_ooo = 0;
	eth_bufq_trim(&st->chunks, &t->rbuf);
	eth_buf_gauge(st);
}

/* Moves rcv_nxt over out-of-order ranges that became contiguous. */
static void ooo_merge(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;
	bool again = true;

	while (again) {
		again = false;
		for (unsigned i = 0; i < t->n_ooo; i++) {
			struct eth_sack_block *r = &t->ooo[i];
			if (eth_seq_gt(r->start, t->rcv_nxt))
				continue;
			if (eth_seq_gt(r->end, t->rcv_nxt)) {
				uint32_t ext = r->end - t->rcv_nxt;
				eth_bufq_extend(&t->rbuf, ext);
				t->rcv_nxt = r->end;
				xlt_counter_add(&st->stats.tcp_bytes_in, ext);
			}
			ooo_remove(t, i);
			again = true;
			break;
		}
	}
}

/* Stores the segment's payload at offset OFF of queue Q (eth_bufq_write_at's contract), buffer by
 * buffer of the frame. */
static int seg_write(struct eth_stack *st, struct eth_bufq *q, uint32_t off, const struct seg *sg)
{
	uint32_t skip = sg->moff, left = sg->len;

	for (const struct rte_mbuf *s = sg->m; s && left; s = s->next) {
		uint32_t n;
		int ret;

		if (skip >= s->data_len) {
			skip -= s->data_len;
			continue;
		}
		n = s->data_len - skip < left ? s->data_len - skip : left;
		ret = eth_bufq_write_at(&st->chunks, q, off, rte_pktmbuf_mtod_offset(s, const uint8_t *, skip), n);
		if (ret)
			return ret;
		xlt_counter_add(&st->stats.copied_in, n);
		off += n;
		left -= n;
		skip = 0;
	}
	return left ? -EINVAL : 0;
}

/* Payload of an acceptable segment, already trimmed to start at or after rcv_nxt and to end inside
 * the window. Returns false when it could not be kept (then a FIN it carries is not taken either). */
static bool data_input(struct eth_tcb *t, struct seg *sg)
{
	struct eth_stack *st = t->st;
	uint32_t off = sg->seq - t->rcv_nxt, space = eth_bufq_space(&t->rbuf);

	/* (past rcv_adv was trimmed: this is past a buffer that shrank, which window_field never lets
	 * happen; the peer hears where it ends at once, not from its retransmission timer) */
	if (off >= space) {
		t->ack_now = true;
		return false;
	}
	if (sg->len > space - off) {
		sg->len = space - off;
		sg->flags &= (uint8_t)~RTE_TCP_FIN_FLAG;
		t->ack_now = true;
	}
	if (off == 0) {
		/* kept in the frame where it can be (rcvq.c), else copied behind what rbuf holds */
		if (!eth_rcvq_take(t, sg->m, sg->moff, sg->len)) {
			if (seg_write(st, &t->rbuf, t->rbuf.len, sg)) {
				/* the buffer pool is dry: as if lost */
				xlt_counter_add(&st->stats.tcp_ooo_drops, 1);
				ack_later(t);
				return false;
			}
			eth_bufq_extend(&t->rbuf, sg->len);
		}
		t->rcv_nxt += sg->len;
		xlt_counter_add(&st->stats.tcp_bytes_in, sg->len);
		if (t->n_ooo) {
			ooo_merge(t);
			t->ack_now = true; /* a hole filled: tell the sender at once (RFC 5681 4.2) */
			t->ooo_hole_ms = st->now_ms; /* progress: what waits now waits for a newer hole */
			if (t->n_ooo)
				ooo_arm(t);
			else
				t->t_ooo = 0;
		} else if (++t->unacked_segs >= 2 || sg->len > t->mss) { /* merged (LRO) = several segments */
			t->ack_now = true;
		} else if (!t->t_delack) {
			t->t_delack = st->now_ms + ETH_TCP_DELACK_MS;
		}
		eth_tcb_event(t, ETH_EV_READABLE);
	} else {
		xlt_counter_add(&st->stats.tcp_ooo_segments, 1);
		if (!t->n_ooo)
			t->ooo_hole_ms = st->now_ms;
		if (seg_write(st, &t->rbuf, t->rbuf.len + off, sg) ||
		    !ooo_add(t, sg->seq, sg->seq + sg->len)) {
			xlt_counter_add(&st->stats.tcp_ooo_drops, 1);
			ack_later(t);
			return false;
		}
		if (!t->t_ooo)
			ooo_arm(t);
		eth_buf_gauge(st);
		t->ack_now = true; /* duplicate ACK carrying SACK */
		if (has(sg, RTE_TCP_FIN_FLAG)) {
			t->ooo_fin = true;
			t->ooo_fin_seq = sg->seq + sg->len;
		}
		return false; /* a FIN here is not in order yet */
	}
	eth_buf_gauge(st);
	return true;
}

static void fin_input(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;

	t->rcv_nxt++;
	t->fin_rcvd = true;
	t->ooo_fin = false;
	t->ack_now = true;
	if (t->n_ooo) {
		/* ranges past the peer's end of stream never come in order: their chunks go back now, not
		 * when the hole expires (a connection the session already let go of, in TIME_WAIT, would
		 * hold up to a window of the worker's pool until then) */
		t->n_ooo = 0;
		t->t_ooo = 0;
		eth_bufq_trim(&st->chunks, &t->rbuf);
		eth_buf_gauge(st);
	}
	switch (t->state) {
	case ETH_TCP_SYN_RCVD:
	case ETH_TCP_ESTABLISHED:
		eth_tcb_set_state(t, ETH_TCP_CLOSE_WAIT);
		break;
	case ETH_TCP_FIN_WAIT_1:
		if (t->fin_sent && t->snd_una == t->snd_max)
			enter_time_wait(t);
		else
			eth_tcb_set_state(t, ETH_TCP_CLOSING); /* simultaneous close */
		break;
	case ETH_TCP_FIN_WAIT_2:
		enter_time_wait(t);
		break;
	default:
		break;
	}
	eth_tcb_check_done(t);
}

static void syn_sent_input(struct eth_tcb *t, const struct seg *sg)
{
	struct eth_stack *st = t->st;
	bool ack = has(sg, RTE_TCP_ACK_FLAG);

	if (ack && (eth_seq_leq(sg->ack, t->iss) || eth_seq_gt(sg->ack, t->snd_max))) {
		if (!has(sg, RTE_TCP_RST_FLAG))
			reply_rst(st, sg);
		return;
	}
	if (has(sg, RTE_TCP_RST_FLAG)) {
		xlt_counter_add(&st->stats.tcp_rsts_in, 1);
		if (ack)
			eth_tcb_close(t, -ECONNREFUSED); /* RFC 5961 3.2: only with an acceptable ACK */
		return;
	}
	if (!has(sg, RTE_TCP_SYN_FLAG))
		return;
	t->irs = sg->seq;
	t->rcv_nxt = sg->seq + 1;
	/* what our SYN offered, unscaled */
	t->rcv_adv = t->rcv_nxt + (eth_bufq_space(&t->rbuf) > 65535 ? 65535 : eth_bufq_space(&t->rbuf));
	take_syn_options(t, sg);
	if (!t->ws_ok)
		t->rcv_wscale = 0;
	t->snd_wnd = t->max_sndwnd = sg->wnd; /* not scaled in a SYN-ACK (RFC 7323 2.2) */
	t->snd_wl1 = sg->seq;
	t->snd_wl2 = sg->ack;
	if (!ack) {
		/* simultaneous open: answer with SYN-ACK for the same ISS */
		eth_tcb_set_state(t, ETH_TCP_SYN_RCVD);
		t->snd_nxt = t->iss;
		eth_tcb_output_later(t);
		return;
	}
	if (t->rtt_timing && t->backoff == 0)
		eth_tcp_rtt_sample(t, (uint32_t)(st->now_ms - t->rttime_ms) * 1000);
	t->rtt_timing = false;
	t->snd_una = sg->ack;
	t->t_rexmit = 0;
	t->t_keep = 0;
	establish(t);
	ack_later(t);
	eth_tcb_timer_update(t);
}

/* TIME_WAIT (RFC 9293 3.10.7.4): the only segment it expects is the peer's FIN again, our ACK of it
 * lost: ACKed again and 2MSL restarted, but never past twice time_wait from its start (a peer that
 * sent it again every time_wait less a little kept the connection for ever). Anything else, a FIN
 * past the one taken among them (which moved rcv_nxt and restarted the timer at the peer's will),
 * gets the duplicate ACK once per OOW_ACK_MS and changes nothing. RSTs and SYNs are tcb_input's (RFC 1337; reuse by a newer SYN). */
static void time_wait_input(struct eth_tcb *t, const struct seg *sg)
{
	struct eth_stack *st = t->st;

	if (has(sg, RTE_TCP_FIN_FLAG) && has(sg, RTE_TCP_ACK_FLAG) && sg->seq + sg->len + 1 == t->rcv_nxt &&
	    sg->ack == t->snd_max) {
		t->t_keep = st->now_ms + (st->c.time_wait_ms ? st->c.time_wait_ms : 1);
		if (t->t_keep > t->tw_last_ms)
			t->t_keep = t->tw_last_ms;
		eth_tcb_timer_update(t);
		ack_later(t); /* (each time, as Linux's tcp_timewait_state_process: one for one) */
	} else if (oow_ack_allowed(t, sg, true)) {
		ack_later(t);
	}
}

static void tcb_input(struct eth_tcb *t, struct seg *sg)
{
	struct eth_stack *st = t->st;
	uint32_t rwnd, lim;

	if (t->state == ETH_TCP_SYN_SENT) {
		syn_sent_input(t, sg);
		return;
	}
	if (has(sg, RTE_TCP_RST_FLAG))
		xlt_counter_add(&st->stats.tcp_rsts_in, 1);
	/* PAWS (RFC 7323 5.3) */
	if (t->ts_ok && sg->o.ts_ok && !has(sg, RTE_TCP_RST_FLAG) && eth_seq_lt(sg->o.tsval, t->ts_recent) &&
	    st->now_ms - t->ts_recent_ms < PAWS_IDLE_MS &&
	    !(seg_space(sg) == 0 && sg->seq == t->rcv_nxt)) {
		/* (a pure ACK in sequence carries no data that could be old: like Linux's
		 * tcp_disordered_ack, let reordered ACKs through, RFC 5961 still checks their ACK) */
		xlt_counter_add(&st->stats.tcp_paws_drops, 1);
		invalid_ack(t, sg);
		return;
	}
	if (t->state == ETH_TCP_SYN_RCVD && !t->passive && sg->seq == t->irs && sg->ack == t->snd_max &&
	    (sg->flags & (RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG | RTE_TCP_RST_FLAG)) == (RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG)) {
		/* simultaneous open (RFC 9293 figure 7): the peer's SYN-ACK repeats the SYN we already
		 * took; what is new is its ACK of our SYN, so it counts as that ACK (as Linux does). Its
		 * window is a SYN's, never scaled (RFC 7323 2.2): taken as it is below, not shifted. */
		sg->seq++;
		sg->flags &= (uint8_t)~RTE_TCP_SYN_FLAG;
		sg->syn_ack = true;
	}
	if (t->state == ETH_TCP_TIME_WAIT && !has(sg, RTE_TCP_RST_FLAG | RTE_TCP_SYN_FLAG)) {
		time_wait_input(t, sg);
		return;
	}
	rwnd = eth_seq_gt(t->rcv_adv, t->rcv_nxt) ? t->rcv_adv - t->rcv_nxt : 0;
	/* as Linux does, a segment starting exactly at rcv_nxt is looked at even with a zero window:
	 * its ACK, window and FIN count, its data is trimmed below */
	if (!eth_seq_acceptable(sg->seq, seg_space(sg), t->rcv_nxt, rwnd) && sg->seq != t->rcv_nxt) {
		if (t->state == ETH_TCP_SYN_RCVD && has(sg, RTE_TCP_SYN_FLAG) && sg->seq == t->irs &&
		    !has(sg, RTE_TCP_ACK_FLAG | RTE_TCP_RST_FLAG)) {
			/* the peer lost our SYN-ACK: send it again (500 ms apart: a spoofer repeating
			 * the SYN gets no more SYN-ACKs than the timer sends) */
			if (oow_ack_allowed(t, sg, true)) {
				t->snd_nxt = t->iss;
				eth_tcb_output_later(t);
			}
			return;
		}
		xlt_counter_add(&st->stats.tcp_out_of_window, 1);
		if (has(sg, RTE_TCP_SYN_FLAG) && !has(sg, RTE_TCP_RST_FLAG))
			challenge_ack(t, sg); /* RFC 5961 4.2: a SYN, whatever its sequence number */
		else if (!has(sg, RTE_TCP_RST_FLAG))
			invalid_ack(t, sg);
		return;
	}
	if (has(sg, RTE_TCP_RST_FLAG)) {
		if (sg->seq != t->rcv_nxt) {
			/* RFC 5961 3.2: a sequence number in the window but not exact earns a challenge
			 * ACK; one outside it (at the right edge, or before it with data reaching in, which
			 * the test above lets through) is dropped */
			if (eth_seq_in(sg->seq, t->rcv_nxt, t->rcv_nxt + rwnd))
				challenge_ack(t, sg);
			else
				xlt_counter_add(&st->stats.tcp_out_of_window, 1);
			return;
		}
		if (t->state == ETH_TCP_TIME_WAIT)
			return; /* RFC 1337: no TIME_WAIT assassination */
		eth_tcb_close(t, -ECONNRESET);
		return;
	}
	if (has(sg, RTE_TCP_SYN_FLAG)) {
		challenge_ack(t, sg); /* RFC 5961 4.2 */
		return;
	}
	/* trim to the window: what we already have, and what does not fit */
	if (eth_seq_lt(sg->seq, t->rcv_nxt)) {
		uint32_t d = t->rcv_nxt - sg->seq;
		if (d > sg->len) {
			d = sg->len;
			sg->flags &= (uint8_t)~RTE_TCP_FIN_FLAG; /* a duplicate FIN */
		}
		sg->moff += d;
		sg->len -= d;
		sg->seq += d;
		t->ack_now = true; /* duplicates are acknowledged at once */
	}
	lim = rwnd;
	if (sg->seq - t->rcv_nxt + sg->len > lim) {
		uint32_t off = sg->seq - t->rcv_nxt;
		sg->len = off < lim ? lim - off : 0;
		sg->flags &= (uint8_t)~RTE_TCP_FIN_FLAG;
		t->ack_now = true; /* tell the sender where the window ends (zero-window probes) */
	}
	if (!has(sg, RTE_TCP_ACK_FLAG))
		return;
	if (t->state == ETH_TCP_SYN_RCVD) {
		if (!eth_seq_gt(sg->ack, t->snd_una) || eth_seq_gt(sg->ack, t->snd_max)) {
			reply_rst(st, sg);
			return;
		}
		if (t->rtt_timing && t->backoff == 0)
			eth_tcp_rtt_sample(t, (uint32_t)(st->now_ms - t->rttime_ms) * 1000);
		t->rtt_timing = false;
		t->snd_una = sg->ack;
		t->t_rexmit = 0;
		t->snd_wnd = seg_wnd(t, sg);
		t->max_sndwnd = t->snd_wnd;
		t->snd_wl1 = sg->seq;
		t->snd_wl2 = sg->ack;
		establish(t);
		if (t->state == ETH_TCP_CLOSED)
			return;
	}
	if (!ack_input(t, sg))
		goto out;
	if (t->ts_ok && sg->o.ts_ok && eth_seq_geq(sg->o.tsval, t->ts_recent) &&
	    eth_seq_leq(sg->seq, t->last_ack_sent)) {
		t->ts_recent = sg->o.tsval; /* RFC 7323 4.3 */
		t->ts_recent_ms = st->now_ms;
	}
	t->last_rcv_ms = st->now_ms;
	t->probes = 0;
	if (sg->len) {
		if (!eth_tcb_rcv_open(t))
			goto out; /* data after the peer's FIN: ignore */
		if (!data_input(t, sg))
			goto out;
	}
	if (has(sg, RTE_TCP_FIN_FLAG) && sg->seq + sg->len == t->rcv_nxt && !t->fin_rcvd)
		fin_input(t);
	else if (t->ooo_fin && t->rcv_nxt == t->ooo_fin_seq && !t->fin_rcvd)
		fin_input(t);
out:
	if (t->state != ETH_TCP_CLOSED) {
		if (t->ack_now)
			eth_tcb_output_later(t);
		eth_tcb_timer_update(t);
	}
}

/* Whether the device vouched for the TCP checksum: GOOD, or NONE (a merged or locally sent segment
 * whose sum field is not filled in but whose data the device verified). */
static bool rx_csum_ok(const struct eth_stack *st, const struct rte_mbuf *m)
{
	uint64_t f = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;

	return (st->c.offloads & ETH_OFFLOAD_RX_CSUM) &&
	       (f == RTE_MBUF_F_RX_L4_CKSUM_GOOD || f == RTE_MBUF_F_RX_L4_CKSUM_NONE);
}

/* A segment of either family: TH (TLEN bytes of TCP) in M from SRC to DST (one of ours); PHDR the
 * folded pseudo-header sum; IP4: the IPv4 header (for the flow peer and the exception path), or NULL. */
static void tcp_input(struct eth_stack *st, struct rte_mbuf *m, struct rte_tcp_hdr *th, unsigned tlen,
                      const struct xlt_ip *src, const struct xlt_ip *dst, uint32_t phdr, bool v4)
{
	const uint8_t *end = rte_pktmbuf_mtod_offset(m, const uint8_t *, m->data_len); /* of the first buffer */
	struct eth_tcb *t;
	struct seg sg;
	uint32_t sum;
	unsigned doff;
	uint64_t h;

	/* the headers of a chain must lie in its first buffer: nothing is read before that holds */
	if (tlen < sizeof(*th) || (uint8_t *)(th + 1) > end)
		goto hdr_err;
	doff = (th->data_off >> 4) * 4u;
	if (doff < sizeof(*th) || doff > tlen || (uint8_t *)th + doff > end)
		goto hdr_err;
	if (!rx_csum_ok(st, m)) {
		uint16_t raw = 0;

		if (m->nb_segs == 1)
			raw = eth_cksum(th, tlen);
		else if (!eth_cksum_chain(m, (uint32_t)((uint8_t *)th - rte_pktmbuf_mtod(m, uint8_t *)), tlen, &raw))
			goto hdr_err;
		sum = eth_cksum_add(raw, phdr);
		if (sum != 0xffff) {
			xlt_counter_add(&st->stats.tcp_checksum_errors, 1);
			goto drop;
		}
	}
	sg.flags = th->tcp_flags;
	if ((sg.flags & RTE_TCP_SYN_FLAG) && (sg.flags & (RTE_TCP_RST_FLAG | RTE_TCP_FIN_FLAG)))
		goto hdr_err;
	if (th->src_port == 0 || th->dst_port == 0)
		goto hdr_err;
	if (eth_tcp_opt_parse((const uint8_t *)(th + 1), doff - sizeof(*th), sg.flags & RTE_TCP_SYN_FLAG, &sg.o))
		goto hdr_err;
	sg.seq = rte_be_to_cpu_32(th->sent_seq);
	sg.ack = rte_be_to_cpu_32(th->recv_ack);
	sg.wnd = rte_be_to_cpu_16(th->rx_win);
	sg.m = m;
	sg.moff = (uint32_t)((const uint8_t *)th + doff - rte_pktmbuf_mtod(m, const uint8_t *));
	sg.len = tlen - doff;
	sg.src = *src;
	sg.dst = *dst;
	sg.v6 = !v4;
	sg.syn_ack = false;
	sg.th = th;
	/* an LRO frame counts as the segments it merged */
	xlt_counter_add(&st->stats.tcp_segments_in, (m->ol_flags & RTE_MBUF_F_RX_LRO) && m->tso_segsz
	                                                ? (sg.len + m->tso_segsz - 1u) / m->tso_segsz
	                                                : 1u);
	h = eth_flow_hash(st, src, rte_be_to_cpu_16(th->src_port), rte_be_to_cpu_16(th->dst_port));
	/* (the same ports on another of our addresses are another connection: a SYN there must not
	 * shadow this one) */
	t = eth_tcb_lookup(st, dst, src, rte_be_to_cpu_16(th->src_port), rte_be_to_cpu_16(th->dst_port), h);
	if (t && st->locals && st->locals->reset_gone &&
	    eth_local_state_ip(st, &t->laddr) == ETH_LOCAL_GONE && t->state != ETH_TCP_TIME_WAIT) {
		/* removed_addr_reset: its address moved away. Our own abort, not the peer's reset: the
		 * session ends "aborted", and a backend is not charged with it (passive ejection) */
		xlt_counter_add(&st->stats.local_addr_resets, 1);
		xlt_counter_add(&st->stats.tcp_resets, 1); /* (ended by a reset, ours) */
		eth_tcp_send_rst(t);
		eth_tcb_close(t, -ECONNABORTED);
		t = NULL;
		goto drop;
	}
	if (!t && (v4 ? eth_ipv4_flow_peer_marked(m) : eth_ipv6_flow_peer_marked(m))) {
		/* the flow peer passed it here and it matches nothing here either: dropped (to_flow_peer),
		 * before any listener is looked at (a draining gateway closed its listeners, and would
		 * have punted it to its kernel, or reset it) */
		if (v4 ? eth_ipv4_to_flow_peer(st, m) : eth_ipv6_to_flow_peer(st, m))
			return;
	} else if (!t) {
		if (no_connection(st, &sg, h) && ((!has(&sg, RTE_TCP_SYN_FLAG) &&
		                                   eth_listener_find(st, rte_be_to_cpu_16(th->dst_port)) &&
		                                   (v4 ? eth_ipv4_to_flow_peer(st, m) : eth_ipv6_to_flow_peer(st, m))) ||
		                                  eth_exc_punt_l3(st, m)))
			return;
	} else if (t->state == ETH_TCP_TIME_WAIT &&
	           (sg.flags & (RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG | RTE_TCP_RST_FLAG)) == RTE_TCP_SYN_FLAG) {
		time_wait_syn(t, &sg, h);
	} else if (t->state == ETH_TCP_SYN_RCVD && t->passive && !has(&sg, RTE_TCP_SYN_FLAG | RTE_TCP_RST_FLAG) &&
	           (!has(&sg, RTE_TCP_ACK_FLAG) || sg.ack != t->snd_max || sg.seq != t->rcv_nxt) &&
	           (v4 ? eth_ipv4_to_flow_peer(st, m) : eth_ipv6_to_flow_peer(st, m))) {
		/* a half-open connection on a VIP with a flow peer, and a segment that is no part of its
		 * handshake: the connection the other gateway still holds for this 4-tuple (one spoofed
		 * SYN made this half-open one, which would otherwise take that connection's segments
		 * and stall it: without the pair, the SYN would have met it and got a challenge ACK) */
		return;
	} else {
		tcb_input(t, &sg);
	}
	rte_pktmbuf_free(m);
	return;
hdr_err:
	xlt_counter_add(&st->stats.tcp_header_errors, 1);
drop:
	rte_pktmbuf_free(m);
}

void eth_tcp_input(struct eth_stack *st, struct rte_mbuf *m, struct rte_ipv4_hdr *ip)
{
	unsigned ihl = (ip->version_ihl & 0xf) * 4u;
	struct xlt_ip src = xlt_ip_v4(ip->src_addr), dst = xlt_ip_v4(ip->dst_addr);

	tcp_input(st, m, (struct rte_tcp_hdr *)((uint8_t *)ip + ihl),
	          rte_be_to_cpu_16(ip->total_length) - ihl, &src, &dst, eth_ipv4_phdr_cksum(ip), true);
}

void eth_tcp_input6(struct eth_stack *st, struct rte_mbuf *m, const struct rte_ipv6_hdr *ip, uint32_t l4off,
                    uint32_t tlen)
{
	struct xlt_ip src, dst;

	memcpy(src.b, ip->src_addr, 16);
	memcpy(dst.b, ip->dst_addr, 16);
	if (xlt_ip_is_v4(&src) || xlt_ip_is_any(&src)) {
		/* (an IPv4-mapped source would alias an IPv4 flow in the table) */
		xlt_counter_add(&st->stats.ip6_martians, 1);
		rte_pktmbuf_free(m);
		return;
	}
	/* the upper-layer length and next header, whatever extension headers came first */
	tcp_input(st, m, rte_pktmbuf_mtod_offset(m, struct rte_tcp_hdr *, l4off), tlen, &src, &dst,
	          eth_ipv6_phdr_cksum(ip, tlen, IPPROTO_TCP), false);
}
