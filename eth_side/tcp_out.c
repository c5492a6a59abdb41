/* TCP output: what a connection sends, and how a segment is built.
 *
 * eth_tcp_output runs from the output list once per poll round for each connection that has
 * something to say, so ACKs of a whole receive burst collapse into one and small writes made during
 * one round leave as full segments (no Nagle timer needed on top). It sends, in order: the SYN or
 * SYN-ACK; during SACK recovery, the holes the scoreboard shows and new data as long as the pipe
 * (RFC 6675's estimate of bytes in flight) is below cwnd; otherwise new data within
 * min(cwnd, peer window) with sender-side silly-window avoidance; the FIN once the send queue is
 * drained; a pure ACK if one is owed and nothing else carried it. With nothing in flight and a
 * window too small to send, the persist timer takes over.
 *
 * A segment is an mbuf of headers followed by its payload: copied out of the send queue, or, for
 * bytes a session lent (sndq.c), mbufs attached to the lender's memory, chained. The
 * checksums are computed in software (af_packet and veths offer no offload) unless the port does
 * them (ETH_OFFLOAD_TX_CSUM). On a port with TSO, new data leaves in frames of up to ETH_TSO_MAX
 * bytes (an mbuf chain) that the device cuts into segments of eth_tcp_seg_max() bytes, each with
 * the same options: one frame, one pass through the engine and the device for ~44 segments.
 * Retransmissions stay single segments. */
#include <string.h>

#include <rte_ether.h>

#include "../translate/ratelim.h"
#include "buf.h"
#include "cksum.h"
#include "engine.h"
#include "sndq.h"
#include "tcp_opt.h"
#include "tcp_seq.h"
#include "twheel.h"

uint32_t eth_tcp_tsval(const struct eth_tcb *t)
{
	return (uint32_t)t->st->now_ms + t->ts_offset;
}

/* The window field for a segment now, and its bookkeeping: the free space of the receive buffer,
 * rounded down to the window scale, and zero windows counted. Every edge ever announced lies within
 * the buffer (rcv_adv, the farthest, too: free space only shrinks by what arrives), so what a peer
 * sends up to it is always taken (tcp_in.c trims at rcv_adv). Rounding down may announce an edge up
 * to 2^wscale - 1 bytes short of one announced before (RFC 9293 3.8.6.2.2's "should not shrink"
 * gives way to RFC 7323 2.4's granularity); rounding up would promise bytes the buffer cannot take:
 * a peer that sent them saw them dropped unacknowledged and waited out backed-off retransmission
 * timeouts (a relay over a lossy link stalled on it). */
static uint16_t window_field(struct eth_tcb *t, bool syn)
{
	struct eth_stack *st = t->st;
	uint32_t free = eth_bufq_space(&t->rbuf), field;

	if (syn) {
		field = free > 65535 ? 65535 : free;
		if (t->state == ETH_TCP_SYN_RCVD)
			t->rcv_adv = t->rcv_nxt + field;
		return (uint16_t)field;
	}
	field = free >> t->rcv_wscale;
	if (field > 65535)
		field = 65535;
	if (eth_seq_gt(t->rcv_nxt + (field << t->rcv_wscale), t->rcv_adv))
		t->rcv_adv = t->rcv_nxt + (field << t->rcv_wscale);
	if (field == 0 && !t->zero_wnd_adv) {
		t->zero_wnd_adv = true;
		xlt_counter_add(&st->stats.tcp_zero_window_sent, 1);
	} else if (field && t->zero_wnd_adv) {
		t->zero_wnd_adv = false;
		eth_tcp_wupd_arm(t); /* (it opens: this update goes again if nothing comes) */
	}
	return (uint16_t)field;
}

/* eth_tcp_finish with ID the IPv4 identification. */
static void finish(struct eth_stack *st, struct rte_mbuf *m, struct rte_tcp_hdr *th, const struct xlt_ip *laddr,
                   const struct xlt_ip *raddr, uint32_t tcplen, uint32_t flow, uint16_t id, uint16_t tso_segsz)
{
	bool v6 = !xlt_ip_is_v4(raddr);
	void *l3 = rte_pktmbuf_mtod(m, void *);
	struct rte_ipv4_hdr *ip = l3;
	struct rte_ipv6_hdr *ip6 = l3;
	uint32_t phdr;

	if (v6)
		eth_ipv6_fill(ip6, laddr, raddr, IPPROTO_TCP, (uint16_t)tcplen, flow);
	else
		eth_ipv4_fill_id(ip, xlt_ip_to_v4(laddr), xlt_ip_to_v4(raddr), IPPROTO_TCP, (uint16_t)tcplen, id);
	th->cksum = 0;
	if (st->c.offloads & ETH_OFFLOAD_TX_CSUM) {
		m->l2_len = RTE_ETHER_HDR_LEN;
		m->l3_len = eth_ip_hlen(v6);
		m->l4_len = (uint8_t)((th->data_off >> 4) * 4u);
		m->ol_flags |= (v6 ? RTE_MBUF_F_TX_IPV6 : RTE_MBUF_F_TX_IPV4) | RTE_MBUF_F_TX_TCP_CKSUM;
		if (tso_segsz) { /* only with tso_on(): send_data keeps len <= segsz otherwise */
			m->ol_flags |= RTE_MBUF_F_TX_TCP_SEG;
			m->tso_segsz = tso_segsz;
			if (!v6 && (st->c.offloads & ETH_OFFLOAD_IP_CSUM)) {
				m->ol_flags |=
				    RTE_MBUF_F_TX_IP_CKSUM; /* each segment's header is the device's */
				ip->hdr_checksum = 0;
			}
		}
		th->cksum = v6 ? rte_ipv6_phdr_cksum(ip6, m->ol_flags) : rte_ipv4_phdr_cksum(ip, m->ol_flags);
	} else {
		/* in software, over the chain (lent bytes ride in mbufs of their own: sndq.c) */
		phdr = v6 ? eth_ipv6_phdr_cksum(ip6, rte_be_to_cpu_16(ip6->payload_len), ip6->proto)
			   : eth_ipv4_phdr_cksum(ip);
		th->cksum = eth_cksum_l4(m, phdr, (uint32_t)((uint8_t *)th - (uint8_t *)l3));
	}
}

void eth_tcp_finish(struct eth_stack *st, struct rte_mbuf *m, struct rte_tcp_hdr *th,
                    const struct xlt_ip *laddr, const struct xlt_ip *raddr, uint32_t tcplen, uint32_t flow,
                    uint16_t tso_segsz)
{
	finish(st, m, th, laddr, raddr, tcplen, flow,
	       xlt_ip_is_v4(raddr) ? eth_ipv4_id(st, xlt_ip_to_v4(raddr)) : 0, tso_segsz);
}

/* TCP option bytes of a synchronized segment with timestamps (TS) and N_SACK SACK blocks. */
static unsigned opt_bytes(bool ts, unsigned n_sack)
{
	return (ts ? 12u : 0u) + (n_sack ? 4u + 8u * n_sack : 0u);
}

static unsigned sack_blocks(const struct eth_tcb *t)
{
	unsigned n = t->sack_ok ? t->n_ooo : 0, max = t->ts_ok ? 3 : 4;

	return n < max ? n : max;
}

uint32_t eth_tcp_seg_max(const struct eth_tcb *t)
{
	unsigned sack = opt_bytes(false, sack_blocks(t));

	/* t->mss already leaves room for timestamps; the SACK blocks riding along take theirs from the
	 * payload (as Linux's tcp_current_mss), or a full segment would outgrow the MTU */
	return t->mss > sack + 16 ? t->mss - sack : 16;
}

int eth_tcp_xmit(struct eth_tcb *t, uint32_t seq, uint32_t len, uint8_t flags)
{
	struct eth_stack *st = t->st;
	uint32_t segsz = eth_tcp_seg_max(t), wire = len < segsz ? len : segsz;
	uint8_t opts[40];
	unsigned optlen, hlen, iph = eth_ip_hlen(t->v6);
	struct rte_tcp_hdr *th;
	struct rte_mbuf *m;
	uint8_t *ip;
	bool syn = flags & RTE_TCP_SYN_FLAG;

	if (syn)
		optlen =
		    eth_tcp_opt_write_syn(opts, eth_tcp_mss_for(st, t->v6), t->passive ? t->sack_ok : true,
		                          t->passive ? t->ts_ok : true, eth_tcp_tsval(t), t->ts_recent,
		                          t->passive && !t->ws_ok ? -1 : t->rcv_wscale);
	else if (flags & RTE_TCP_RST_FLAG)
		optlen = 0;
	else {
		unsigned n_sack = sack_blocks(t);

		/* never past the MTU: SACK blocks that do not fit beside a segment's bytes are left out */
		while (n_sack && iph + sizeof(*th) + opt_bytes(t->ts_ok, n_sack) + wire > st->c.mtu)
			n_sack--;
		optlen = eth_tcp_opt_write(opts, t->ts_ok, eth_tcp_tsval(t), t->ts_recent, t->ooo, n_sack);
	}
	hlen = iph + (unsigned)sizeof(*th) + optlen;
	m = eth_pkt_alloc(st);
	if (!m)
		return -ENOMEM;
	ip = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)hlen);
	if (!ip || eth_sndq_payload(t, m, seq - t->snd_una, len)) {
		rte_pktmbuf_free(m);
		return ip ? -ENOMEM : -EMSGSIZE;
	}
	th = (struct rte_tcp_hdr *)(ip + iph);
	th->src_port = rte_cpu_to_be_16(t->lport);
	th->dst_port = rte_cpu_to_be_16(t->rport);
	th->sent_seq = rte_cpu_to_be_32(seq);
	th->recv_ack = flags & RTE_TCP_ACK_FLAG ? rte_cpu_to_be_32(t->rcv_nxt) : 0;
	th->data_off = (uint8_t)(((sizeof(*th) + optlen) / 4) << 4);
	th->tcp_flags = flags;
	th->rx_win = flags & RTE_TCP_RST_FLAG ? 0 : rte_cpu_to_be_16(window_field(t, syn));
	th->cksum = 0;
	th->tcp_urp = 0;
	memcpy(th + 1, opts, optlen);
	/* (IPv6: the flow label is the connection's own, stable for its life; never the table hash) */
	finish(st, m, th, &t->laddr, &t->raddr, (uint32_t)(sizeof(*th) + optlen + len), t->flow_label, t->ip_id,
	       len > segsz ? (uint16_t)segsz : 0);
	t->ip_id += len > segsz ? (uint16_t)((len + segsz - 1) / segsz) : 1; /* (TSO: the device counts on) */
	if (flags & RTE_TCP_ACK_FLAG) {
		t->last_ack_sent = t->rcv_nxt;
		t->ack_now = false;
		t->unacked_segs = 0;
		t->t_delack = 0;
	}
	xlt_counter_add(&st->stats.tcp_segments_out, len > segsz ? (len + segsz - 1) / segsz : 1);
	xlt_counter_add(&st->stats.tcp_bytes_out, len);
	if (flags & RTE_TCP_RST_FLAG)
		xlt_counter_add(&st->stats.tcp_rsts_out, 1);
	/* (a passive open's SYN-ACKs answer a SYN whose source the peer chose) */
	eth_ip_send(st, m, &t->raddr, t->passive && t->state == ETH_TCP_SYN_RCVD);
	return 0;
}

void eth_tcp_send_ack(struct eth_tcb *t)
{
	eth_tcp_xmit(t, t->snd_nxt, 0, RTE_TCP_ACK_FLAG);
}

void eth_tcp_send_rst(struct eth_tcb *t)
{
	/* at snd_max, not snd_nxt: after a timeout snd_nxt went back to the first unacknowledged byte,
	 * and a peer that got more (only its ACKs were lost) drops a reset below its window without a
	 * word (RFC 5961 3.2); at snd_max it matches, or earns a challenge ACK that we reset again.
	 * BSD's tcp_output does the same for any segment without data. */
	eth_tcp_xmit(t, t->snd_max, 0, RTE_TCP_RST_FLAG | RTE_TCP_ACK_FLAG);
}

void eth_tcp_challenge_ack(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;

	if (!xlt_window_ok(&t->chall, st->now_ms, 1000, ETH_TCP_CHALLENGE_PER_S))
		return;
	xlt_counter_add(&st->stats.tcp_challenge_acks, 1);
	eth_tcp_send_ack(t);
}

void eth_tcp_reset_reply(struct eth_stack *st, const struct xlt_ip *src, const struct xlt_ip *dst,
                         const struct rte_tcp_hdr *th, uint32_t seg_len)
{
	unsigned iph = eth_ip_hlen(!xlt_ip_is_v4(src));
	struct rte_tcp_hdr *oth;
	struct rte_mbuf *m;
	uint8_t *oip;

	if (th->tcp_flags & RTE_TCP_RST_FLAG)
		return;
	/* a spoofed flood at closed ports (or at a listener's bad ACKs) is reflected at the sources it
	 * names one for one: at most ETH_TCP_RST_REPLIES_PER_S a second, as BSD's badport_bandlim does
	 * too; a peer whose reset was held back tries again and gets a later one */
	if (!xlt_window_ok(&st->rst_replies, st->now_ms, 1000, ETH_TCP_RST_REPLIES_PER_S)) {
		xlt_counter_add(&st->stats.tcp_rsts_limited, 1);
		return;
	}
	m = eth_pkt_alloc(st);
	if (!m)
		return;
	oip = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(iph + sizeof(*oth)));
	if (!oip) {
		rte_pktmbuf_free(m);
		return;
	}
	oth = (struct rte_tcp_hdr *)(oip + iph);
	memset(oth, 0, sizeof(*oth));
	oth->src_port = th->dst_port;
	oth->dst_port = th->src_port;
	if (th->tcp_flags & RTE_TCP_ACK_FLAG) {
		oth->sent_seq = th->recv_ack;
		oth->tcp_flags = RTE_TCP_RST_FLAG;
	} else {
		oth->recv_ack = rte_cpu_to_be_32(rte_be_to_cpu_32(th->sent_seq) + seg_len);
		oth->tcp_flags = RTE_TCP_RST_FLAG | RTE_TCP_ACK_FLAG;
	}
	oth->data_off = (sizeof(*oth) / 4) << 4;
	eth_tcp_finish(st, m, oth, dst, src, sizeof(*oth), 0, 0);
	xlt_counter_add(&st->stats.tcp_segments_out, 1);
	xlt_counter_add(&st->stats.tcp_rsts_out, 1);
	eth_ip_send(st, m, src, true);
}

/* TSO frames carry the pseudo-header sum only: TSO without the checksum offload is not used. */
static bool tso_on(const struct eth_stack *st)
{
	return (st->c.offloads & (ETH_OFFLOAD_TSO | ETH_OFFLOAD_TX_CSUM)) == (ETH_OFFLOAD_TSO | ETH_OFFLOAD_TX_CSUM);
}

/* Bytes of the send queue not sent yet (from snd_nxt). */
static uint32_t unsent(const struct eth_tcb *t)
{
	uint32_t off = t->snd_nxt - t->snd_una;

	return off < eth_sndq_len(t) ? eth_sndq_len(t) - off : 0;
}

/* Whether a segment of LEN bytes at snd_nxt ends the data we will ever send, so it carries the FIN
 * (sent once the application shut down, whatever the window: the FIN holds no data). */
static bool may_send_fin(const struct eth_tcb *t, uint32_t len)
{
	return t->fin_queued && t->snd_nxt + len == t->snd_una + eth_sndq_len(t) &&
	       (t->state == ETH_TCP_FIN_WAIT_1 || t->state == ETH_TCP_CLOSING || t->state == ETH_TCP_LAST_ACK);
}

/* Sends one new (or, after a timeout, resent) segment at snd_nxt. */
static int send_at_nxt(struct eth_tcb *t, uint32_t len, bool fin)
{
	struct eth_stack *st = t->st;
	uint8_t flags = RTE_TCP_ACK_FLAG;
	int ret;

	if (len && len == unsent(t))
		flags |= RTE_TCP_PSH_FLAG;
	if (fin)
		flags |= RTE_TCP_FIN_FLAG;
	ret = eth_tcp_xmit(t, t->snd_nxt, len, flags);
	if (ret)
		return ret;
	if (eth_seq_lt(t->snd_nxt, t->snd_max)) {
		ETH_REXMIT(t);
	} else if (!t->rtt_timing && len) {
		t->rtt_timing = true;
		t->rtseq = t->snd_nxt;
		t->rttime_ms = st->now_ms;
	}
	t->snd_nxt += len + fin;
	/* the largest flight of the round trip, which the window's growth asks about (tcp_in.c): a new
	 * measure once what was in flight at the last restart has been acknowledged */
	if (eth_seq_geq(t->snd_una, t->cwnd_use_seq) || t->snd_nxt - t->snd_una > t->cwnd_use) {
		t->cwnd_use = t->snd_nxt - t->snd_una;
		t->cwnd_use_seq = t->snd_nxt;
	}
	if (fin)
		t->fin_sent = true;
	if (eth_seq_gt(t->snd_nxt, t->snd_max))
		t->snd_max = t->snd_nxt;
	if (!t->t_rexmit)
		eth_tcp_rexmit_arm(t);
	return 0;
}

/* The normal path: new data within min(cwnd, peer window). Returns whether anything went. */
static bool send_data(struct eth_tcb *t)
{
	bool any = false;

	for (;;) {
		uint32_t avail = unsent(t), flight = t->snd_nxt - t->snd_una;
		uint32_t wnd = t->snd_wnd < t->cwnd ? t->snd_wnd : t->cwnd;
		uint32_t usable = wnd > flight ? wnd - flight : 0;
		uint32_t seg = eth_tcp_seg_max(t), most = tso_on(t->st) ? ETH_TSO_MAX : seg;
		uint32_t len = avail < most ? avail : most;
		bool fin;

		if (eth_tx_tcp_full(t->st)) {
			eth_tcb_output_later(t);
			break;
		}
		if (len > usable)
			len = usable;
		/* sender SWS avoidance (RFC 9293 3.8.6.2.1): a runt only if it is all we have, or the
		 * window is at least half the largest the peer ever offered, or the persist timer said
		 * so (the override timeout) */
		if (len && len < seg && len < avail && usable < t->max_sndwnd / 2 && !t->sws_override)
			len = 0;
		t->sws_override = false;
		/* a TSO frame short of the data ends on a whole segment: no runt in the middle of a stream */
		if (len > seg && len < avail)
			len -= len % seg;
		fin = may_send_fin(t, len);
		if (!len && !fin)
			break;
		if (send_at_nxt(t, len, fin))
			break;
		any = true;
		if (fin)
			break;
	}
	return any;
}

/* The first stretch not SACKed at or after FROM and below the highest SACK: sets *LEN. */
static bool next_hole(const struct eth_tcb *t, uint32_t from, uint32_t *start, uint32_t *len)
{
	uint32_t s = from;

	for (unsigned i = 0; i < t->n_sacked; i++) {
		const struct eth_sack_block *b = &t->sacked[i];
		if (eth_seq_leq(b->end, s))
			continue;
		if (eth_seq_lt(s, b->start)) {
			*start = s;
			*len = b->start - s;
			return true;
		}
		s = b->end;
	}
	return false;
}

/* RFC 6675 pipe: data sent above the highest SACK, plus retransmitted holes, are in flight;
 * holes below the highest SACK not retransmitted yet are taken as lost. */
static uint32_t pipe_estimate(const struct eth_tcb *t)
{
	/* above the highest SACK, what was sent since the last timeout (snd_nxt: after a timeout, data
	 * up to snd_max is presumed lost and sent again) */
	uint32_t high = t->n_sacked ? t->sacked[t->n_sacked - 1].end : t->snd_una;
	uint32_t pipe = eth_seq_gt(t->snd_nxt, high) ? t->snd_nxt - high : 0;
	uint32_t rx_end = eth_seq_lt(t->high_rxt, high) ? t->high_rxt : high;

	if (eth_seq_gt(rx_end, t->snd_una)) {
		uint32_t holes = rx_end - t->snd_una;
		for (unsigned i = 0; i < t->n_sacked; i++) {
			const struct eth_sack_block *b = &t->sacked[i];
			uint32_t s = eth_seq_max(b->start, t->snd_una), e = eth_seq_min(b->end, rx_end);
			if (eth_seq_lt(s, e))
				holes -= e - s;
		}
		pipe += holes;
	}
	return pipe;
}

static bool send_sack_recovery(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;
	uint32_t pipe = pipe_estimate(t);
	bool any = false;

	while (pipe < t->cwnd) {
		uint32_t start, len, from = eth_seq_max(t->high_rxt, t->snd_una);

		if (eth_tx_tcp_full(st)) {
			eth_tcb_output_later(t);
			break;
		}
		if (next_hole(t, from, &start, &len)) {
			uint32_t end_data = t->snd_una + eth_sndq_len(t);
			if (len > eth_tcp_seg_max(t))
				len = eth_tcp_seg_max(t);
			if (eth_seq_gt(start + len, end_data))
				len = eth_seq_gt(end_data, start) ? end_data - start : 0;
			if (!len)
				break;
			if (eth_tcp_xmit(t, start, len, RTE_TCP_ACK_FLAG))
				break;
			ETH_REXMIT(t);
			t->high_rxt = start + len;
			pipe += len;
			any = true;
			continue;
		}
		/* no hole left to repair: data above the highest SACK (new, or sent again after a
		 * timeout), within the peer's window */
		{
			uint32_t high = t->n_sacked ? t->sacked[t->n_sacked - 1].end : t->snd_una;
			uint32_t avail, flight, usable;
			if (eth_seq_lt(t->snd_nxt, high))
				t->snd_nxt = high; /* what lies below is SACKed or a hole handled above */
			avail = unsent(t);
			flight = t->snd_nxt - t->snd_una;
			usable = t->snd_wnd > flight ? t->snd_wnd - flight : 0;
			len = avail < eth_tcp_seg_max(t) ? avail : eth_tcp_seg_max(t);
			if (len > usable)
				len = usable;
			if (!len || send_at_nxt(t, len, may_send_fin(t, len)))
				break;
			pipe += len;
			any = true;
		}
	}
	return any;
}

void eth_tcp_output(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;
	bool sent = false;

	switch (t->state) {
	case ETH_TCP_CLOSED:
		return;
	case ETH_TCP_SYN_SENT:
	case ETH_TCP_SYN_RCVD:
		if (t->snd_nxt == t->iss) {
			uint8_t f = RTE_TCP_SYN_FLAG | (t->state == ETH_TCP_SYN_RCVD ? RTE_TCP_ACK_FLAG : 0);
			if (eth_tcp_xmit(t, t->iss, 0, f) == 0) {
				t->snd_nxt = t->snd_max = t->iss + 1;
				if (!t->rtt_timing && t->backoff == 0) {
					t->rtt_timing = true;
					t->rtseq = t->iss;
					t->rttime_ms = st->now_ms;
				}
			}
			if (!t->t_rexmit)
				eth_tcp_rexmit_arm(t); /* also retries when the SYN could not be built */
		}
		eth_tcb_timer_update(t);
		return;
	case ETH_TCP_TIME_WAIT:
		if (t->ack_now)
			eth_tcp_send_ack(t);
		return;
	default:
		break;
	}
	if (t->in_recovery && t->sack_ok)
		sent = send_sack_recovery(t);
	if (!t->in_recovery || !t->sack_ok)
		sent |= send_data(t);
	if (t->ack_now && !sent)
		eth_tcp_send_ack(t);
	/* persist (RFC 9293 3.8.6.1): data waiting, nothing in flight, no window to send it in */
	if (t->snd_una == t->snd_max && unsent(t) && !t->t_rexmit)
		eth_tcp_rexmit_arm(t);
	eth_tcb_timer_update(t);
}
