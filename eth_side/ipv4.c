/* IPv4 input and output, and ICMP echo.
 *
 * Input trusts nothing: version, header length, total length against the frame, the header
 * checksum, fragments (dropped and counted: TCP with a sane MSS never needs them, and reassembly
 * would be a memory sink a peer controls), martian sources. Padding beyond the total length is
 * trimmed so TCP sees exactly the datagram. Output routes on-link destinations directly and the
 * rest to the configured default gateway. */
#include <string.h>

#include <rte_icmp.h>
#include <rte_ip.h>

#include "cksum.h"
#include "engine.h"

uint32_t eth_ipv4_nexthop(const struct eth_stack *st, uint32_t dst)
{
	if (((dst ^ st->c.addr) & st->netmask) == 0)
		return dst;
	return st->c.gateway;
}

void eth_ipv4_fill(struct eth_stack *st, struct rte_ipv4_hdr *ip, uint32_t dst, uint8_t proto, uint16_t payload)
{
	eth_ipv4_fill_src(st, ip, st->c.addr, dst, proto, payload);
}

uint16_t eth_ipv4_id(struct eth_stack *st, uint32_t dst)
{
	/* A counter shared by every packet the worker sends outside a connection would tell anyone who
	 * pings twice how many went out in between: a reset sent, a challenge ACK earned by a guessed
	 * 4-tuple (RFC 7739 5.1, the side channel of CVE-2016-5696). A keyed function of the counter
	 * tells nothing, as long as the counter never comes round: a 16-bit one repeated its IDs every
	 * 65536 packets, and an attacker who recorded them read the counter again from one ping. (Every
	 * packet carries DF and none is ever fragmented: RFC 6864 asks for no uniqueness, a value that
	 * repeats only rarely is plenty.) The tag keeps these hashes apart from the key's other uses. */
	uint64_t n = st->ip_id++;

	return (uint16_t)eth_siphash_3u32(&st->isn_key, dst ^ 0x69706400u, (uint32_t)n, (uint32_t)(n >> 32));
}

void eth_ipv4_fill_src(struct eth_stack *st, struct rte_ipv4_hdr *ip, uint32_t src, uint32_t dst,
                       uint8_t proto, uint16_t payload)
{
	eth_ipv4_fill_id(ip, src, dst, proto, payload, eth_ipv4_id(st, dst));
}

void eth_ipv4_fill_id(struct rte_ipv4_hdr *ip, uint32_t src, uint32_t dst, uint8_t proto, uint16_t payload,
                      uint16_t id)
{
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(sizeof(*ip) + payload));
	ip->packet_id = rte_cpu_to_be_16(id);
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG); /* our segments fit the MTU */
	ip->time_to_live = 64;
	ip->next_proto_id = proto;
	ip->hdr_checksum = 0;
	ip->src_addr = src;
	ip->dst_addr = dst;
	ip->hdr_checksum = eth_ipv4_cksum(ip);
}

void eth_ipv4_output_src(struct eth_stack *st, struct rte_mbuf *m, uint32_t src, uint32_t dst, uint8_t proto,
                         uint16_t payload, bool reply)
{
	uint32_t nh = eth_ipv4_nexthop(st, dst);

	if (!nh) {
		xlt_counter_add(&st->stats.ip_no_route, 1);
		rte_pktmbuf_free(m);
		return;
	}
	eth_ipv4_fill_src(st, rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *), src, dst, proto, payload);
	eth_arp_output(st, m, nh, reply);
}

/* The IPv4 header's reserved bit (RFC 791), never set by a host: marks a segment a gateway of the
 * pair passed to the other, which must not pass it back. */
#define FLOW_PEER_MARK 0x8000

bool eth_ipv4_flow_peer_marked(const struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod(m, const struct rte_ipv4_hdr *)->fragment_offset & rte_cpu_to_be_16(FLOW_PEER_MARK);
}

bool eth_ipv4_to_flow_peer(struct eth_stack *st, struct rte_mbuf *m)
{
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);

	if (eth_ipv4_flow_peer_marked(m)) {
		/* the peer passed it here and it matches nothing here either: dropped, where the kernel
		 * would only reset it, and a flood of them would take its share of the TAP */
		xlt_counter_add(&st->stats.flow_peer_unmatched, 1);
		rte_pktmbuf_free(m);
		return true;
	}
	/* not a chain or a merged frame (LRO: beyond the MTU, its TCP checksum maybe left to us) */
	if (!st->c.flow_peer || ip->dst_addr == st->c.addr || m->nb_segs > 1 || (m->ol_flags & RTE_MBUF_F_RX_LRO) ||
	    rte_be_to_cpu_16(ip->total_length) > st->c.mtu)
		return false;
	/* the pair's connections moved here with the VIP: the peer that held it before may still have them */
	ip->fragment_offset |= rte_cpu_to_be_16(FLOW_PEER_MARK);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = eth_ipv4_cksum(ip);
	/* a sum the device vouched for without filling it in (a virtio peer's partial sum) goes
	 * out filled: the peer's device checks it on the wire */
	eth_fill_l4_cksum_ip(m, false);
	xlt_counter_add(&st->stats.flow_peer_out, 1);
	eth_arp_output(st, m, st->c.flow_peer, false);
	return true;
}

bool eth_ipv4_subnet_bcast(const struct eth_stack *st, uint32_t a)
{
	/* a /31 is a link of two hosts (RFC 3021) and a /32 a host alone: neither has a broadcast
	 * address, the all-ones host part of a /31 is the other end (the gateway, often) */
	return st->c.prefix < 31 && (a & ~st->netmask) == ~st->netmask && ((a ^ st->c.addr) & st->netmask) == 0;
}

/* Whether DST (network order) names a group: multicast, or a broadcast address of ours. */
static bool group_dst(const struct eth_stack *st, uint32_t dst)
{
	uint32_t h = rte_be_to_cpu_32(dst);

	return (h >> 28) == 0xe || h == 0xffffffffu || eth_ipv4_subnet_bcast(st, dst);
}

static bool martian(const struct eth_stack *st, uint32_t src)
{
	uint32_t h = rte_be_to_cpu_32(src);

	/* (one of our own addresses, a VIP included, as a source: a reply would go to ourselves) */
	return h == 0 || h == 0xffffffffu || (h >> 28) >= 0xe || (h >> 24) == 127 ||
	       eth_local_state(st, src) != ETH_LOCAL_NONE || eth_ipv4_subnet_bcast(st, src);
}

/* Whether the kernel behind the TAP may see IC: the errors its own flows may be told of, and the
 * replies to its own pings. */
static bool icmp_for_kernel(const struct rte_icmp_hdr *ic)
{
	switch (ic->icmp_type) {
	case RTE_IP_ICMP_ECHO_REPLY:
	case 3:  /* destination unreachable (fragmentation needed among them) */
	case 11: /* time exceeded (traceroute) */
	case 12: /* parameter problem */
		return true;
	default:
		return false;
	}
}

static void icmp_input(struct eth_stack *st, struct rte_mbuf *m, struct rte_ipv4_hdr *ip, unsigned ihl)
{
	uint16_t len = (uint16_t)(rte_be_to_cpu_16(ip->total_length) - ihl);
	struct rte_icmp_hdr *ic = (struct rte_icmp_hdr *)((uint8_t *)ip + ihl);
	uint32_t src = ip->src_addr;

	xlt_counter_add(&st->stats.icmp_in, 1);
	if (len < sizeof(*ic) || eth_cksum(ic, len) != 0xffff) {
		xlt_counter_add(&st->stats.icmp_errors, 1);
		goto drop;
	}
	if (ic->icmp_type != RTE_IP_ICMP_ECHO_REQUEST || ic->icmp_code != 0) {
		struct eth_icmp_quote q;

		/* "fragmentation needed" for one of our connections: path MTU discovery */
		if (eth_icmp4_quote((const uint8_t *)ic, len, &q) && xlt_ip_to_v4(&q.local) == ip->dst_addr &&
		    eth_pmtu_input(st, &q, false))
			goto drop;
		/* other errors and echo replies: nothing we act on, but the kernel's own flows may (PMTU,
		 * a health check's ping); the rest would only make the kernel act for a sender it cannot
		 * trust: a redirect re-points its routes (bgpd's, keepalived's), a timestamp request is
		 * answered with its clock, router discovery and address masks are long obsolete */
		if (!icmp_for_kernel(ic)) {
			xlt_counter_add(&st->stats.icmp_refused, 1);
			goto drop;
		}
		if (eth_exc_punt_l3(st, m))
			return;
		goto drop;
	}
	/* answer in place: the same identifier, sequence and data */
	if (ihl > sizeof(*ip)) {
		/* drop the IP options: move the ICMP message up behind a plain header */
		memmove((uint8_t *)ip + sizeof(*ip), ic, len);
		rte_pktmbuf_trim(m, (uint16_t)(ihl - sizeof(*ip)));
		ic = (struct rte_icmp_hdr *)(ip + 1);
	}
	ic->icmp_type = RTE_IP_ICMP_ECHO_REPLY;
	ic->icmp_cksum = 0;
	ic->icmp_cksum = (uint16_t)~eth_cksum(ic, len);
	xlt_counter_add(&st->stats.icmp_echo_replies, 1);
	/* from the address pinged (one the kernel TAP owns, a VIP, as well as [eth] address) */
	eth_ipv4_output_src(st, m, ip->dst_addr, src, IPPROTO_ICMP, len, true);
	return;
drop:
	rte_pktmbuf_free(m);
}

bool eth_ipv4_group_punt(struct eth_stack *st, struct rte_mbuf *m)
{
	const struct rte_ipv4_hdr *ip;

	if (!st->c.exc)
		return false;
	if (m->data_len < RTE_ETHER_HDR_LEN + sizeof(*ip)) {
		xlt_counter_add(&st->stats.ip_header_errors, 1);
		goto drop;
	}
	ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *, RTE_ETHER_HDR_LEN);
	if ((ip->version_ihl >> 4) != 4) {
		xlt_counter_add(&st->stats.ip_header_errors, 1);
		goto drop;
	}
	if (!group_dst(st, ip->dst_addr)) {
		/* RFC 1122 3.3.6, as for our MAC's groups: Linux would take it as unicast
		 * (drop_unicast_in_l2_multicast is off by default), past every check eth_ipv4_input
		 * makes of what comes to our MAC (a redirect from a spoofed gateway among them) */
		xlt_counter_add(&st->stats.ip_link_bcast, 1);
		goto drop;
	}
	return eth_exc_punt(st, m);
drop:
	rte_pktmbuf_free(m);
	return true;
}

void eth_ipv4_input(struct eth_stack *st, struct rte_mbuf *m, bool l2_group)
{
	struct rte_ipv4_hdr *ip;
	unsigned ihl, tot, lstate;

	xlt_counter_add(&st->stats.ip_in, 1);
	if (m->data_len < sizeof(*ip))
		goto hdr_err;
	ip = rte_pktmbuf_mtod(m, struct rte_ipv4_hdr *);
	ihl = (ip->version_ihl & 0xf) * 4u;
	tot = rte_be_to_cpu_16(ip->total_length);
	if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(*ip) || ihl > m->data_len || tot < ihl || tot > m->pkt_len)
		goto hdr_err;
	if (eth_cksum(ip, ihl) != 0xffff) {
		xlt_counter_add(&st->stats.ip_checksum_errors, 1);
		goto drop;
	}
	if (l2_group && !group_dst(st, ip->dst_addr)) {
		/* RFC 1122 3.3.6: a unicast datagram in a link-layer broadcast is discarded (or in a
		 * link-layer group: the IPv6 groups our MAC answers to bring no IPv4 of ours). Its sender
		 * did not address our station: a confused neighbour (ARP would teach it our MAC), or
		 * one that reaches every host of the segment at once with a frame meant for one */
		xlt_counter_add(&st->stats.ip_link_bcast, 1);
		goto drop;
	}
	lstate = eth_local_state(st, ip->dst_addr);
	if (lstate == ETH_LOCAL_NONE) {
		/* multicast and broadcast (VRRP advertisements, routing protocols): the kernel's; our
		 * network's broadcast only (another's x.x.x.255 is someone's unicast, not for the kernel
		 * to route) */
		if (group_dst(st, ip->dst_addr) && eth_exc_punt_l3(st, m))
			return;
		xlt_counter_add(&st->stats.ip_not_for_us, 1);
		goto drop;
	}
	if (lstate == ETH_LOCAL_GONE && ip->next_proto_id != IPPROTO_TCP) {
		xlt_counter_add(&st->stats.ip_not_for_us, 1); /* only its TCP connections still finish */
		goto drop;
	}
	if (martian(st, ip->src_addr))
		goto hdr_err;
	if (ip->fragment_offset & rte_cpu_to_be_16(RTE_IPV4_HDR_OFFSET_MASK | RTE_IPV4_HDR_MF_FLAG)) {
		xlt_counter_add(&st->stats.ip_fragments, 1);
		goto drop;
	}
	if (tot < m->pkt_len) {
		if (m->nb_segs > 1)
			goto hdr_err; /* a chain (LRO) is never padded */
		rte_pktmbuf_trim(m, (uint16_t)(m->pkt_len - tot)); /* Ethernet padding */
	}
	switch (ip->next_proto_id) {
	case IPPROTO_TCP:
		eth_tcp_input(st, m, ip);
		return;
	case IPPROTO_ICMP:
		if (m->nb_segs > 1)
			goto hdr_err; /* an echo request is never merged; its checks read one buffer */
		icmp_input(st, m, ip, ihl);
		return;
	default:
		if (eth_exc_punt_l3(st, m)) /* UDP, VRRP, GRE...: the kernel's, if it has a door */
			return;
		xlt_counter_add(&st->stats.ip_unknown_proto, 1);
		goto drop;
	}
hdr_err:
	xlt_counter_add(&st->stats.ip_header_errors, 1);
drop:
	rte_pktmbuf_free(m);
}
