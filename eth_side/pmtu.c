/* Path MTU discovery for the engine's TCP (RFC 1191, RFC 8201): a router that cannot forward one of
 * our segments (IPv4 with DF, which we always set; any IPv6 packet) tells us so in an ICMP
 * "fragmentation needed" or ICMPv6 "packet too big" message, and the connection's segments shrink.
 * Ignored, a path narrower than our link (a tunnel, a VPN, a PPPoE hop) whose far end does not clamp
 * the MSS is a black hole: every full segment is lost, retransmitted at the same size, lost again,
 * until the connection times out.
 *
 * The messages are trusted only as far as RFC 5927 asks: the quoted packet must be one of ours, from
 * our address to the peer of a connection we have, and its sequence number one we sent and the peer
 * has not acknowledged (an off-path attacker would have to guess it). A message can only lower a
 * connection's MTU, never below a floor (IPv4: 552 bytes, Linux's min_pmtu, so a forged message cannot
 * make us send tiny segments; IPv6: 1280, the minimum link MTU every IPv6 path carries).
 * The MTU learnt is the connection's own (no cache per destination: a gateway's connections come and
 * go with their sessions) and is never raised again (RFC 1191's periodic probes up are optional).
 * Worker only: stack.c steers such a message to the worker owning the quoted connection. */
#include <string.h>

#include <rte_icmp.h>
#include <rte_ip.h>
#include <rte_tcp.h>

#include "engine.h"
#include "tcp_seq.h"

#define ICMP_DEST_UNREACH    3
#define ICMP_FRAG_NEEDED     4 /* code of ICMP_DEST_UNREACH */
#define ICMP6_PACKET_TOO_BIG 2
#define PMTU_MIN4	     552u
#define PMTU_MIN6	     1280u

/* The ports and sequence number of a quoted TCP header: its first 8 bytes, all a router must quote. */
static void quoted_tcp(const uint8_t *p, struct eth_icmp_quote *q)
{
	const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)p;

	q->lport = rte_be_to_cpu_16(th->src_port);
	q->rport = rte_be_to_cpu_16(th->dst_port);
	q->seq = rte_be_to_cpu_32(th->sent_seq);
}

bool eth_icmp4_quote(const uint8_t *ic, uint32_t len, struct eth_icmp_quote *q)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(ic + sizeof(struct rte_icmp_hdr));
	unsigned ihl;

	if (len < sizeof(struct rte_icmp_hdr) + sizeof(*ip) || ic[0] != ICMP_DEST_UNREACH || ic[1] != ICMP_FRAG_NEEDED)
		return false;
	ihl = (ip->version_ihl & 0xf) * 4u;
	if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(*ip) || ip->next_proto_id != IPPROTO_TCP ||
	    len < sizeof(struct rte_icmp_hdr) + ihl + 8)
		return false;
	q->local = xlt_ip_v4(ip->src_addr);
	q->remote = xlt_ip_v4(ip->dst_addr);
	quoted_tcp((const uint8_t *)ip + ihl, q);
	q->mtu = (uint32_t)ic[6] << 8 | ic[7]; /* RFC 1191: the next-hop MTU */
	return true;
}

bool eth_icmp6_quote(const uint8_t *ic, uint32_t len, struct eth_icmp_quote *q)
{
	const struct rte_ipv6_hdr *ip = (const struct rte_ipv6_hdr *)(ic + 8);
	uint32_t off, plen;
	uint8_t nh;

	if (len < 8 + sizeof(*ip) || ic[0] != ICMP6_PACKET_TOO_BIG || ic[1] != 0)
		return false;
	/* the quote is as much of our packet as fits the message: its extension headers (ours carry
	 * none, but the chain is walked as input walks one) and the TCP header's first 8 bytes */
	plen = len - 8 - (uint32_t)sizeof(*ip);
	nh = ip->proto;
	if (eth_ipv6_walk((const uint8_t *)(ip + 1), plen, &nh, &off) || nh != IPPROTO_TCP || plen - off < 8)
		return false;
	memcpy(q->local.b, ip->src_addr, 16);
	memcpy(q->remote.b, ip->dst_addr, 16);
	quoted_tcp((const uint8_t *)(ip + 1) + off, q);
	q->mtu = (uint32_t)ic[4] << 24 | (uint32_t)ic[5] << 16 | (uint32_t)ic[6] << 8 | ic[7];
	return true;
}

/* A round trip of T (the timer's value until one was measured). */
static uint32_t rtt_ms_of(const struct eth_tcb *t)
{
	return t->srtt_us ? (t->srtt_us + 999) / 1000 : t->rto_ms;
}

/* Whether T's segments, just made smaller, may all go again now. Every message of a storm lowering
 * the MTU a byte at a time is believed (each quotes a sequence number in flight), and each used to
 * send the whole flight again. Now once a round trip, or sooner when the segments shrank by a good
 * part since (few such steps from the link's MTU to the floor, so they bound a storm too). A resend
 * held back goes when the round trip is over (t_pmtu), at the size the messages left: a second,
 * narrower hop, whose message about the resent flight comes back within that round trip, costs
 * that wait, not a retransmission timeout with the window collapsed. */
static bool resend_ok(const struct eth_tcb *t)
{
	return !t->pmtu_rxt_mss || t->st->now_ms - t->pmtu_rxt_ms >= rtt_ms_of(t) ||
	       t->mss <= t->pmtu_rxt_mss - t->pmtu_rxt_mss / 4;
}

/* Everything in flight goes again at T's (smaller) MSS, now. They were dropped for their size, not
 * for congestion: the window and the timer's back-off stay as they are (Linux's
 * tcp_simple_retransmit). */
static void resend_flight(struct eth_tcb *t)
{
	t->pmtu_rxt_mss = t->mss;
	t->pmtu_rxt_ms = t->st->now_ms;
	t->t_pmtu = 0;
	t->snd_nxt = t->snd_una;
	t->high_rxt = t->snd_una;
	t->rtt_timing = false; /* Karn: what comes back next may answer either copy */
	eth_tcb_output_later(t);
}

static bool in_flight(const struct eth_tcb *t)
{
	return t->snd_una != t->snd_max && t->state != ETH_TCP_SYN_SENT && t->state != ETH_TCP_SYN_RCVD &&
	       t->state != ETH_TCP_CLOSED && t->state != ETH_TCP_TIME_WAIT;
}

void eth_pmtu_resend_due(struct eth_tcb *t)
{
	if (in_flight(t) && t->mss < t->pmtu_rxt_mss)
		resend_flight(t);
}

bool eth_pmtu_input(struct eth_stack *st, const struct eth_icmp_quote *q, bool v6)
{
	uint32_t floor = v6 ? PMTU_MIN6 : PMTU_MIN4, cur, mtu = q->mtu;
	struct eth_tcb *t;
	uint16_t old;

	t = eth_tcb_lookup(st, &q->local, &q->remote, q->rport, q->lport,
	                   eth_flow_hash(st, &q->remote, q->rport, q->lport));
	if (!t)
		return false; /* not a connection of ours: the kernel's, perhaps (the caller punts it) */
	xlt_counter_add(&st->stats.icmp_too_big_in, 1);
	if (t->state == ETH_TCP_CLOSED || t->state == ETH_TCP_TIME_WAIT ||
	    eth_seq_lt(q->seq, t->snd_una) || eth_seq_geq(q->seq, t->snd_max) ||
	    (!v6 && mtu < 68)) { /* (68: RFC 791's minimum; 0 is an old router's "unknown") */
		xlt_counter_add(&st->stats.icmp_too_big_ignored, 1);
		return true;
	}
	if (mtu < floor)
		mtu = floor;
	cur = t->pmtu ? t->pmtu : st->c.mtu;
	if (mtu >= cur) {
		/* it would not lower the MTU: nothing to learn */
		xlt_counter_add(&st->stats.icmp_too_big_ignored, 1);
		return true;
	}
	t->pmtu = (uint16_t)mtu;
	old = t->mss;
	eth_tcb_set_mss(t);
	if (t->mss >= old)
		return true; /* the peer's MSS was below the path's already */
	xlt_counter_add(&st->stats.tcp_pmtu_lowered, 1);
	/* Segments in flight were too big: send them again at the new size now, not at the next
	 * timeout (RFC 1191 6.3), or once this round trip is over (resend_ok) */
	if (!in_flight(t))
		return true;
	if (resend_ok(t)) {
		resend_flight(t);
	} else if (!t->t_pmtu) {
		t->t_pmtu = t->pmtu_rxt_ms + rtt_ms_of(t);
		eth_tcb_timer_update(t);
	}
	return true;
}
