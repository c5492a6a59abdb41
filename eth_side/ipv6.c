/* IPv6 input, ICMPv6 echo and neighbour discovery for the gateway's own addresses (RFC 8200,
 * RFC 4443, RFC 4861).
 *
 * The port has up to two IPv6 addresses: the configured one ([eth] address6) and the link-local one
 * derived from its MAC (modified EUI-64), which neighbour discovery needs. Both are answered for:
 * neighbour solicitations for them get a neighbour advertisement, echo requests to them an echo
 * reply; an unsolicited advertisement of the configured address goes out at start, as the
 * gratuitous ARP does for IPv4.
 *
 * Input trusts nothing: version, payload length against the frame, a source that is neither
 * multicast nor ours, and the extension-header chain: hop-by-hop (first only), destination options
 * and routing headers without segments left are skipped, at most ETH_IP6_MAX_EXT of them and
 * within the packet; a routing header with segments left, a fragment header (we do not reassemble:
 * a memory sink a peer controls) and anything unknown are dropped and counted. Neighbour discovery
 * messages are checked as RFC 4861 7.1.1 / 7.1.2 say (hop limit 255, code 0, lengths, options,
 * no source link-layer option from the unspecified address).
 *
 * Replies to echo and solicitations go back to the Ethernet source of the request (the neighbour
 * that handed it to us). TCP segments for address6 or the link-local (not for one of our multicast
 * groups: ip6_tcp_refused) go to the TCP engine, the same as IPv4's, behind the extension headers;
 * its segments leave through the IPv6 neighbour cache (arp.c), which this file feeds from neighbour
 * discovery and whose solicitations it sends (eth_nd_solicit). Every worker answers the echo and
 * neighbour discovery it receives; solicitations and advertisements are also cloned to the other
 * workers (stack.c), whose caches learn from them, and TCP is steered to its flow's owner.
 *
 * With a kernel TAP ([eth] kernel_tap, exception.c), IPv6 addresses the kernel puts on it (not its
 * link-local one, which is ours: the TAP has the port's MAC) are ours too (eth_local_state_ip):
 * neighbour discovery and echo answered while they are there, TCP served by the listeners, their
 * connections finishing once they leave. What we do not consume goes to the kernel as IPv4's does:
 * ICMPv6 we do not act on that its own flows may need (errors for them, echo replies, MLD), other next
 * headers (UDP, OSPFv3), multicast that is not ours, TCP to ports without a listener (tcp_in.c); and
 * the kernel sees a copy of every neighbour discovery message that reaches us (stack.c), as it sees
 * every ARP frame, so its neighbour cache stays right. Without address6, every IPv6 frame is the
 * kernel's. Router discovery, redirects and the other ICMPv6 types icmp6_for_kernel names never
 * are, to whatever destination: the kernel would act on them for any sender on the link. */
#include <string.h>

#include <rte_ether.h>
#include <rte_ip.h>

#include "../translate/ratelim.h"
#include "cksum.h"
#include "engine.h"

#define ICMP6_DST_UNREACH    1
#define ICMP6_PACKET_TOO_BIG 2
#define ICMP6_TIME_EXCEEDED  3
#define ICMP6_PARAM_PROB     4
#define ICMP6_ECHO_REQUEST   128
#define ICMP6_ECHO_REPLY     129
#define MLD_QUERY            130
#define MLD_REPORT           131
#define MLD_DONE             132
#define ND_ROUTER_SOLICIT    133
#define ND_ROUTER_ADVERT     134
#define ND_NEIGHBOR_SOLICIT  135
#define ND_NEIGHBOR_ADVERT   136
#define MLD2_REPORT          143
#define ND_OPT_SOURCE_LLADDR 1
#define ND_OPT_TARGET_LLADDR 2
#define NA_FLAG_SOLICITED    0x40
#define NA_FLAG_OVERRIDE     0x20

#define IP6_HOPOPTS  0
#define IP6_ROUTING  43
#define IP6_FRAGMENT 44
#define IP6_NONE     59
#define IP6_DSTOPTS  60

/* An ICMPv6 header with the first word of the body (identifier/sequence, or ND flags/reserved). */
struct icmp6 {
	uint8_t type;
	uint8_t code;
	uint16_t cksum;
	uint32_t word;
} __attribute__((packed));

/* Neighbour solicitation/advertisement: the header, then the target, then options. */
struct nd_msg {
	struct icmp6 h;
	uint8_t target[16];
} __attribute__((packed));

static const uint8_t all_nodes[16] = {0xff, 0x02, [15] = 0x01};
static const uint8_t loopback6[16] = {[15] = 0x01};
static const uint8_t mac_all_nodes[6] = {0x33, 0x33, 0, 0, 0, 1}; /* its Ethernet group (RFC 2464 7) */

static bool is_unspecified(const uint8_t *a)
{
	static const uint8_t zero[16];
	return !memcmp(a, zero, 16);
}

/* The solicited-node multicast address of A (RFC 4291 2.7.1): ff02::1:ffXX:XXXX. */
static void solicited_node(const uint8_t *a, uint8_t *out)
{
	static const uint8_t pfx[13] = {0xff, 0x02, [11] = 0x01, [12] = 0xff};
	memcpy(out, pfx, 13);
	memcpy(out + 13, a + 13, 3);
}

void eth_ipv6_init(struct eth_stack *st)
{
	const uint8_t *mac = st->c.mac;

	if (!st->c.prefix6)
		return;
	/* fe80::/64 with the modified EUI-64 interface identifier (RFC 4291 appendix A) */
	memset(st->ll6, 0, 16);
	st->ll6[0] = 0xfe;
	st->ll6[1] = 0x80;
	st->ll6[8] = mac[0] ^ 0x02;
	st->ll6[9] = mac[1];
	st->ll6[10] = mac[2];
	st->ll6[11] = 0xff;
	st->ll6[12] = 0xfe;
	st->ll6[13] = mac[3];
	st->ll6[14] = mac[4];
	st->ll6[15] = mac[5];
	solicited_node(st->c.addr6, st->snm6[0]);
	solicited_node(st->ll6, st->snm6[1]);
}

/* Is A one of our unicast addresses? */
static bool ours(const struct eth_stack *st, const uint8_t *a)
{
	return !memcmp(a, st->c.addr6, 16) || !memcmp(a, st->ll6, 16);
}

bool eth_ipv6_ours(const struct eth_stack *st, const uint8_t *a)
{
	return st->c.prefix6 && ours(st, a);
}

/* An IPv4-mapped address (::ffff:0:0/96, RFC 4291 2.5.5.2): never on the wire (RFC 4038 4.2). */
static bool v4mapped(const uint8_t *a)
{
	static const uint8_t pfx[12] = {[10] = 0xff, [11] = 0xff};

	return !memcmp(a, pfx, sizeof(pfx));
}

/* A's state: ours (configured), on the kernel TAP, gone from it, or not ours (eth_local_state_ip,
 * where a mapped address would name an IPv4 one of ours). */
static unsigned lstate(const struct eth_stack *st, const uint8_t *a)
{
	struct xlt_ip ip;

	if (ours(st, a))
		return ETH_LOCAL_UP;
	if (!st->locals || !st->locals->n || v4mapped(a))
		return ETH_LOCAL_NONE;
	memcpy(ip.b, a, 16);
	return eth_local_state_ip(st, &ip);
}

/* Is LOW3 (the last 24 bits of a solicited-node group) that of one of our unicast addresses, ours or
 * the kernel TAP's while it has it? */
static bool snm_ours(const struct eth_stack *st, const uint8_t *low3)
{
	const struct eth_local_set *ls = st->locals;

	if (!memcmp(low3, st->snm6[0] + 13, 3) || !memcmp(low3, st->snm6[1] + 13, 3))
		return true;
	for (uint32_t i = 0; ls && i < ls->n; i++)
		if (ls->a[i].state == ETH_LOCAL_UP && !xlt_ip_is_v4(&ls->a[i].addr) &&
		    !memcmp(low3, ls->a[i].addr.b + 13, 3))
			return true;
	return false;
}

static bool link_local(const uint8_t *a)
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

/* Is A on our link: link-local, or in address6's prefix? */
static bool on_link(const struct eth_stack *st, const uint8_t *a)
{
	unsigned full = st->c.prefix6 / 8, rest = st->c.prefix6 % 8;

	if (link_local(a))
		return true;
	if (memcmp(a, st->c.addr6, full))
		return false;
	return rest == 0 || ((a[full] ^ st->c.addr6[full]) & (uint8_t)(0xff00 >> rest)) == 0;
}

bool eth_ipv6_nexthop(const struct eth_stack *st, const struct xlt_ip *dst, struct xlt_ip *nh)
{
	static const uint8_t zero[16];

	if (!st->c.prefix6)
		return false;
	if (on_link(st, dst->b)) {
		*nh = *dst;
		return true;
	}
	if (!memcmp(st->c.gateway6, zero, 16))
		return false;
	memcpy(nh->b, st->c.gateway6, 16);
	return true;
}

void eth_ipv6_src_for(const struct eth_stack *st, const struct xlt_ip *dst, struct xlt_ip *src)
{
	memcpy(src->b, link_local(dst->b) ? st->ll6 : st->c.addr6, 16);
}

void eth_ipv6_fill(struct rte_ipv6_hdr *ip, const struct xlt_ip *src, const struct xlt_ip *dst, uint8_t proto,
                   uint16_t payload, uint32_t flow)
{
	ip->vtc_flow = rte_cpu_to_be_32(6u << 28 | (flow & 0xfffffu));
	ip->payload_len = rte_cpu_to_be_16(payload);
	ip->proto = proto;
	ip->hop_limits = 64;
	memcpy(ip->src_addr, src->b, 16);
	memcpy(ip->dst_addr, dst->b, 16);
}

/* Hop limit 0: passed here by the peer already (no router forwards it, no host sends it). */
bool eth_ipv6_flow_peer_marked(const struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod(m, const struct rte_ipv6_hdr *)->hop_limits == 0;
}

bool eth_ipv6_to_flow_peer(struct eth_stack *st, struct rte_mbuf *m)
{
	struct rte_ipv6_hdr *ip = rte_pktmbuf_mtod(m, struct rte_ipv6_hdr *);
	struct xlt_ip peer;

	/* so it never goes back, and it matches nothing here either: dropped, as IPv4's (ipv4.c) */
	if (eth_ipv6_flow_peer_marked(m)) {
		xlt_counter_add(&st->stats.flow_peer_unmatched, 1);
		rte_pktmbuf_free(m);
		return true;
	}
	/* not for address6 or the link-local address (no VIP), not a chain or a merged frame (LRO:
	 * beyond the MTU, its TCP checksum maybe left to us) */
	if (is_unspecified(st->c.flow_peer6) || ours(st, ip->dst_addr) || m->nb_segs > 1 ||
	    (m->ol_flags & RTE_MBUF_F_RX_LRO) || sizeof(*ip) + rte_be_to_cpu_16(ip->payload_len) > st->c.mtu)
		return false;
	/* (a sum left unfilled behind extension headers: not filled below, the peer would drop it) */
	if ((m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_NONE && ip->proto != IPPROTO_TCP)
		return false;
	ip->hop_limits = 0;
	/* a sum the device vouched for without filling it in (a virtio peer's partial sum) goes
	 * out filled: the peer's device checks it on the wire */
	eth_fill_l4_cksum_ip(m, true);
	xlt_counter_add(&st->stats.flow_peer_out, 1);
	memcpy(peer.b, st->c.flow_peer6, 16);
	eth_nbr_output(st, m, &peer, false);
	return true;
}

void eth_ip_send(struct eth_stack *st, struct rte_mbuf *m, const struct xlt_ip *dst, bool reply)
{
	struct xlt_ip nh;

	if (xlt_ip_is_v4(dst)) {
		nh = xlt_ip_v4(eth_ipv4_nexthop(st, xlt_ip_to_v4(dst)));
		if (xlt_ip_to_v4(&nh))
			goto send;
	} else if (eth_ipv6_nexthop(st, dst, &nh)) {
		goto send;
	}
	xlt_counter_add(&st->stats.ip_no_route, 1);
	rte_pktmbuf_free(m);
	return;
send:
	eth_nbr_output(st, m, &nh, reply);
}

/* Does a packet to A reach us (our unicast, their solicited-node groups, all-nodes)? */
static bool for_us(const struct eth_stack *st, const uint8_t *a)
{
	static const uint8_t snm_pfx[13] = {0xff, 0x02, [11] = 0x01, [12] = 0xff};

	return lstate(st, a) != ETH_LOCAL_NONE || (!memcmp(a, snm_pfx, 13) && snm_ours(st, a + 13)) ||
	       !memcmp(a, all_nodes, 16);
}

/* The Ethernet multicast address IPv6 multicast A maps to (RFC 2464 7): 33:33 + its last 32 bits. */
bool eth_ipv6_mcast_mac_ours(const struct eth_stack *st, const uint8_t *mac)
{
	if (!st->c.prefix6 || mac[0] != 0x33 || mac[1] != 0x33)
		return false;
	if (!memcmp(mac + 2, all_nodes + 12, 4))
		return true;
	return mac[2] == 0xff && snm_ours(st, mac + 3);
}

/* The ICMPv6 checksum over the pseudo-header (RFC 8200 8.1) and LEN bytes at L4. */
static uint16_t cksum6(const struct rte_ipv6_hdr *ip, const void *l4, uint32_t len)
{
	return (uint16_t)~eth_cksum_add(eth_ipv6_phdr_cksum(ip, len, IPPROTO_ICMPV6), eth_cksum(l4, len));
}

/* Builds a frame of SRC -> DST (Ethernet destination DMAC) with an ICMPv6 message of LEN bytes
 * copied from MSG, checksummed, and queues it. HLIM: 255 for neighbour discovery, 64 else. */
static void icmp6_send(struct eth_stack *st, const uint8_t *dmac, const uint8_t *src, const uint8_t *dst,
                       const void *msg, uint16_t len, uint8_t hlim)
{
	struct rte_mbuf *m = eth_pkt_alloc(st);
	struct rte_ether_hdr *eh;
	struct rte_ipv6_hdr *ip;
	struct icmp6 *ic;

	if (!m)
		return;
	eh = (struct rte_ether_hdr *)rte_pktmbuf_append(m, (uint16_t)(sizeof(*eh) + sizeof(*ip) + len));
	if (!eh) {
		rte_pktmbuf_free(m);
		return;
	}
	ip = (struct rte_ipv6_hdr *)(eh + 1);
	ic = (struct icmp6 *)(ip + 1);
	memcpy(eh->dst_addr.addr_bytes, dmac, 6);
	memcpy(eh->src_addr.addr_bytes, st->c.mac, 6);
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
	ip->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip->payload_len = rte_cpu_to_be_16(len);
	ip->proto = IPPROTO_ICMPV6;
	ip->hop_limits = hlim;
	memcpy(ip->src_addr, src, 16);
	memcpy(ip->dst_addr, dst, 16);
	memmove(ic, msg, len); /* (MSG may lie in the request's own buffer) */
	ic->cksum = 0;
	ic->cksum = cksum6(ip, ic, len);
	eth_tx_frame(st, m);
}

/* A neighbour advertisement for TARGET (one of ours) to DST via DMAC. */
static void send_na(struct eth_stack *st, const uint8_t *dmac, const uint8_t *dst, const uint8_t *target,
                    bool solicited)
{
	struct {
		struct nd_msg nd;
		uint8_t opt[8];
	} __attribute__((packed)) na = {
	    .nd.h = {.type = ND_NEIGHBOR_ADVERT,
	             .word = rte_cpu_to_be_32(
	                 (uint32_t)((solicited ? NA_FLAG_SOLICITED : 0) | NA_FLAG_OVERRIDE) << 24)},
	    .opt = {ND_OPT_TARGET_LLADDR, 1},
	};

	memcpy(na.nd.target, target, 16);
	memcpy(na.opt + 2, st->c.mac, 6);
	xlt_counter_add(&st->stats.nd_na_out, 1);
	icmp6_send(st, dmac, target, dst, &na, sizeof(na), 255);
}

void eth_nd_solicit(struct eth_stack *st, const uint8_t *target, const uint8_t *dmac)
{
	struct {
		struct nd_msg nd;
		uint8_t opt[8];
	} __attribute__((packed)) ns = {
	    .nd.h = {.type = ND_NEIGHBOR_SOLICIT},
	    .opt = {ND_OPT_SOURCE_LLADDR, 1},
	};
	uint8_t dst[16], snm_mac[6] = {0x33, 0x33};
	struct xlt_ip t, src;

	memcpy(t.b, target, 16);
	eth_ipv6_src_for(st, &t, &src);
	memcpy(ns.nd.target, target, 16);
	memcpy(ns.opt + 2, st->c.mac, 6);
	if (dmac) {
		memcpy(dst, target, 16); /* a re-check: unicast (RFC 4861 7.3.3, PROBE) */
	} else {
		solicited_node(target, dst);
		memcpy(snm_mac + 2, dst + 12, 4);
		dmac = snm_mac;
	}
	xlt_counter_add(&st->stats.nd_ns_out, 1);
	icmp6_send(st, dmac, src.b, dst, &ns, sizeof(ns), 255);
}

void eth_ipv6_announce_addr(struct eth_stack *st, const uint8_t *a)
{
	if (st->c.prefix6)
		send_na(st, mac_all_nodes, all_nodes, a, false);
}

void eth_ipv6_announce(struct eth_stack *st)
{
	/* RFC 4861 7.2.6: an unsolicited advertisement to all-nodes, so neighbours that had us (or a
	 * previous owner of the address) update their caches */
	if (st->c.prefix6)
		send_na(st, mac_all_nodes, all_nodes, st->c.addr6, false);
}

/* Checks the options of a neighbour discovery message (RFC 4861 4.6: every option has a non-zero
 * length and lies within the message) and returns the link-layer address of type WANT, if any. */
static int nd_options(const uint8_t *p, uint32_t len, uint8_t want, const uint8_t **lladdr)
{
	*lladdr = NULL;
	while (len) {
		uint32_t olen;
		if (len < 2 || p[1] == 0 || (olen = p[1] * 8u) > len)
			return -1;
		if (p[0] == want && olen >= 8)
			*lladdr = p + 2;
		p += olen;
		len -= olen;
	}
	return 0;
}

bool eth_ipv6_nd_learnable(const struct eth_stack *st, const struct rte_mbuf *m)
{
	const struct rte_ipv6_hdr *ip =
	    rte_pktmbuf_mtod_offset(m, const struct rte_ipv6_hdr *, RTE_ETHER_HDR_LEN);
	const struct nd_msg *nd = (const struct nd_msg *)(ip + 1);
	const uint8_t *ll;
	uint32_t plen;

	/* (the checks icmp6_input, nd_solicit and nd_advert make before a cache learns anything) */
	if (m->nb_segs > 1 || !eth_ipv6_is_nd(m))
		return false;
	plen = rte_be_to_cpu_16(ip->payload_len);
	if (RTE_ETHER_HDR_LEN + sizeof(*ip) + plen > m->data_len || plen < sizeof(*nd) ||
	    ip->hop_limits != 255 || nd->h.code != 0 || nd->target[0] == 0xff || cksum6(ip, nd, plen) != 0)
		return false;
	if (nd->h.type == ND_NEIGHBOR_SOLICIT)
		return !is_unspecified(ip->src_addr) && on_link(st, ip->src_addr) &&
		       lstate(st, nd->target) == ETH_LOCAL_UP &&
		       !nd_options((const uint8_t *)(nd + 1), plen - (uint32_t)sizeof(*nd),
		                   ND_OPT_SOURCE_LLADDR, &ll) &&
		       ll;
	return lstate(st, nd->target) == ETH_LOCAL_NONE &&
	       !nd_options((const uint8_t *)(nd + 1), plen - (uint32_t)sizeof(*nd), ND_OPT_TARGET_LLADDR,
	                   &ll) &&
	       ll;
}

/* Whether the ICMPv6 message MSG (LEN bytes) from SRC is neighbour discovery that gives [eth]
 * gateway6 another link-layer address than the pinned one: an advertisement of it, or a
 * solicitation from it (what the kernel behind the TAP must not hear: eth_nd_for_kernel). */
static bool nd_gateway6_elsewhere(struct eth_stack *st, const uint8_t *src, const uint8_t *msg, uint32_t len)
{
	const struct nd_msg *nd = (const struct nd_msg *)msg;
	const uint8_t *who, *ll;
	struct xlt_ip gw;
	bool na;

	memcpy(gw.b, st->c.gateway6, 16);
	if (xlt_ip_is_any(&gw) || len < sizeof(*nd) ||
	    (nd->h.type != ND_NEIGHBOR_ADVERT && nd->h.type != ND_NEIGHBOR_SOLICIT))
		return false;
	na = nd->h.type == ND_NEIGHBOR_ADVERT;
	who = na ? nd->target : src;
	if (memcmp(who, gw.b, 16) || nd_options(msg + sizeof(*nd), len - (uint32_t)sizeof(*nd),
	                                        na ? ND_OPT_TARGET_LLADDR : ND_OPT_SOURCE_LLADDR, &ll) ||
	    !ll)
		return false;
	return eth_nbr_pinned_elsewhere(st, &gw, ll);
}

bool eth_nd_for_kernel(struct eth_stack *st, const struct rte_mbuf *m)
{
	const struct rte_ipv6_hdr *ip =
	    rte_pktmbuf_mtod_offset(m, const struct rte_ipv6_hdr *, RTE_ETHER_HDR_LEN);
	uint32_t plen = rte_be_to_cpu_16(ip->payload_len);

	if (m->nb_segs > 1 || RTE_ETHER_HDR_LEN + sizeof(*ip) + plen > m->data_len)
		return true; /* (malformed: the kernel judges its copy, as ARP's) */
	return !nd_gateway6_elsewhere(st, ip->src_addr, (const uint8_t *)(ip + 1), plen);
}

/* Could MAC be a neighbour's link-layer address: no group, zero or our own one (as ARP's sender). */
static bool lladdr_ok(const struct eth_stack *st, const uint8_t *mac)
{
	static const uint8_t zero[6];

	return !(mac[0] & 1) && memcmp(mac, zero, 6) && memcmp(mac, st->c.mac, 6);
}

/* LO: learn only (a clone from another worker: it answered and counted). */
static void nd_solicit(struct eth_stack *st, const struct rte_ether_hdr *eh, const struct rte_ipv6_hdr *ip,
                       const struct nd_msg *ns, uint32_t len, bool lo)
{
	const uint8_t *sll;
	bool dad = is_unspecified(ip->src_addr), known;
	struct xlt_ip src;

	if (!lo)
		xlt_counter_add(&st->stats.nd_ns_in, 1);
	if (len < sizeof(*ns) || ns->target[0] == 0xff ||
	    nd_options((const uint8_t *)(ns + 1), len - (uint32_t)sizeof(*ns), ND_OPT_SOURCE_LLADDR, &sll))
		goto bad;
	/* duplicate address detection comes from :: to the solicited-node group and carries no
	 * source link-layer address (RFC 4861 7.1.1) */
	if (dad && (sll || ip->dst_addr[0] != 0xff))
		goto bad;
	/* our answer goes to SLL: a group address would make one unicast solicitation a broadcast
	 * (IEEE 802: no station has one), a zero or our own one is no neighbour's either */
	if (sll && !lladdr_ok(st, sll))
		goto bad;
	if (lstate(st, ns->target) != ETH_LOCAL_UP)
		return; /* someone else's (or one that left the kernel TAP): not ours to answer */
	/* (before the solicitation teaches anything: eth_nbr_reply_ok) */
	memcpy(src.b, ip->src_addr, 16);
	known = !dad && eth_nbr_known(st, &src, sll ? sll : eh->src_addr.addr_bytes);
	/* the solicitor's address, as RFC 4861 7.2.3 says: it is about to talk to us (an on-link
	 * source only; nothing from a duplicate address probe) */
	if (!dad && sll && on_link(st, ip->src_addr))
		eth_nd_learn_solicit(st, ip->src_addr, sll, lo);
	if (lo)
		return;
	if (dad) {
		/* another node wants our address: defend it (RFC 4862 5.4.3) by advertising to all; each
		 * answer reaches every host of the link, so a flood of probes (unicast to our MAC) gets
		 * ETH_ND_DAD_DEFEND_PER_S a second (a real newcomer probes once or a few times) */
		if (!xlt_window_ok(&st->dad_defends, st->now_ms, 1000, ETH_ND_DAD_DEFEND_PER_S)) {
			xlt_counter_add(&st->stats.nd_dad_limited, 1);
			return;
		}
		xlt_counter_add(&st->stats.nd_dad_defended, 1);
		send_na(st, mac_all_nodes, all_nodes, ns->target, false);
		return;
	}
	/* to the solicitor, at the address it gave (else the frame's source, which sent it) */
	if (eth_nbr_reply_ok(st, known))
		send_na(st, sll ? sll : eh->src_addr.addr_bytes, ip->src_addr, ns->target, true);
	return;
bad:
	if (!lo)
		xlt_counter_add(&st->stats.nd_errors, 1);
}

static void nd_advert(struct eth_stack *st, const struct rte_ipv6_hdr *ip, const struct nd_msg *na,
                      uint32_t len, bool lo)
{
	uint8_t flags = (uint8_t)(rte_be_to_cpu_32(na->h.word) >> 24);
	const uint8_t *tll;

	if (!lo)
		xlt_counter_add(&st->stats.nd_na_in, 1);
	if (len < sizeof(*na) || na->target[0] == 0xff ||
	    nd_options((const uint8_t *)(na + 1), len - (uint32_t)sizeof(*na), ND_OPT_TARGET_LLADDR, &tll) ||
	    (ip->dst_addr[0] == 0xff && (flags & NA_FLAG_SOLICITED))) {
		if (!lo)
			xlt_counter_add(&st->stats.nd_errors, 1);
		return;
	}
	if (lstate(st, na->target) == ETH_LOCAL_UP) {
		if (!(tll && !memcmp(tll, st->c.mac, 6)) && !lo)
			/* another node claims one of our addresses */
			xlt_counter_add(&st->stats.nd_conflicts, 1);
		return;
	}
	if (tll && !lladdr_ok(st, tll)) {
		if (!lo)
			/* a group, zero or our own MAC for a neighbour */
			xlt_counter_add(&st->stats.nd_errors, 1);
		return;
	}
	/* updates an entry we have (7.2.5); an unsolicited claim on gateway6 is not taken */
	if (!eth_nd_learn_advert(st, na->target, tll, flags & NA_FLAG_SOLICITED, flags & NA_FLAG_OVERRIDE, lo) &&
	    !lo)
		xlt_counter_add(&st->stats.nd_errors, 1);
}

/* Whether the kernel behind the TAP may see an ICMPv6 message of TYPE and CODE from the wire: the
 * errors its own flows may be told of (packet too big among them: its TCP's path MTU discovery), the
 * replies to its own pings and the echo requests ibgwd leaves to it (all of them without address6),
 * neighbour solicitations and advertisements (its neighbour cache and duplicate address detection;
 * without address6 its addresses are its own to answer for), and MLD (a query makes it report the
 * groups it joined, VRRPv3's among them, to the switches that snoop; reports for a multicast router
 * it may run). Not router advertisements: ibgwd's IPv6 is configured (address6, gateway6), never
 * taken from what anyone on the link may send, and so must be the kernel's routes on the TAP, which
 * carry bgpd's and keepalived's packets: an advertisement would give it a default router, a prefix,
 * an MTU or a hop limit of the sender's choosing. Not router solicitations (for the segment's
 * routers; the gateway is none), not redirects (they re-point the kernel's route to a destination
 * for any on-link sender that names itself the first hop), nor what only routers, mobile nodes or
 * experiments use (renumbering, node information, inverse discovery, mobile prefixes, multicast
 * router discovery, extended echo), nor unassigned types. */
static bool icmp6_for_kernel(uint8_t type, uint8_t code)
{
	switch (type) {
	case ICMP6_DST_UNREACH:
	case ICMP6_PACKET_TOO_BIG:
	case ICMP6_TIME_EXCEEDED:
	case ICMP6_PARAM_PROB:
	case ICMP6_ECHO_REPLY:
	case MLD_QUERY:
	case MLD_REPORT:
	case MLD_DONE:
	case MLD2_REPORT:
	case ND_NEIGHBOR_SOLICIT:
	case ND_NEIGHBOR_ADVERT:
		return true;
	case ICMP6_ECHO_REQUEST:
		return code == 0;
	default:
		return false;
	}
}

/* Whether frame M (at its Ethernet header), for the kernel whole, carries ICMPv6 it must not get,
 * or extension headers we cannot walk in its first buffer; counted. */
static bool kernel_refused(struct eth_stack *st, const struct rte_mbuf *m)
{
	const struct rte_ipv6_hdr *ip;
	const uint8_t *p;
	uint32_t len, off;
	uint8_t nh;

	if (m->data_len < RTE_ETHER_HDR_LEN + sizeof(*ip))
		return false; /* (no IPv6 header: the kernel drops it) */
	ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv6_hdr *, RTE_ETHER_HDR_LEN);
	p = (const uint8_t *)(ip + 1);
	len = m->data_len - (uint32_t)(RTE_ETHER_HDR_LEN + sizeof(*ip));
	if (rte_be_to_cpu_16(ip->payload_len) < len)
		len = rte_be_to_cpu_16(ip->payload_len);
	nh = ip->proto;
	/* a chain we cannot walk hides its upper layer from us, not from the kernel, which walks longer
	 * ones: what it carries is not passed unread */
	if (eth_ipv6_walk(p, len, &nh, &off)) {
		xlt_counter_add(&st->stats.ip6_header_errors, 1);
		return true;
	}
	if (nh == IPPROTO_FRAGMENT && len - off >= 8 && !((p[off + 2] << 8 | p[off + 3]) >> 3)) {
		/* a first fragment carries the upper layer's header: judged as the whole message is (the
		 * kernel reassembles the rest with it, or drops them without it); later fragments carry
		 * nothing to judge */
		uint32_t off2;

		nh = p[off];
		if (eth_ipv6_walk(p + off + 8, len - off - 8, &nh, &off2)) {
			xlt_counter_add(&st->stats.ip6_header_errors, 1);
			return true;
		}
		off += 8 + off2;
	}
	/* (neighbour discovery to a group of the kernel's alone comes this way, not by exc_mirror) */
	if (nh != IPPROTO_ICMPV6 || (len - off >= 2 && icmp6_for_kernel(p[off], p[off + 1]) &&
	                             !nd_gateway6_elsewhere(st, ip->src_addr, p + off, len - off)))
		return false;
	xlt_counter_add(&st->stats.icmp_refused, 1);
	return true;
}

bool eth_ipv6_unicast_in_group(struct eth_stack *st, const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct rte_ipv6_hdr *ip;

	if (!(eh->dst_addr.addr_bytes[0] & 1) || eh->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6) ||
	    m->data_len < RTE_ETHER_HDR_LEN + sizeof(*ip))
		return false;
	ip = (const struct rte_ipv6_hdr *)(eh + 1);
	if (ip->dst_addr[0] == 0xff)
		return false;
	xlt_counter_add(&st->stats.ip_link_bcast, 1);
	return true;
}

bool eth_ipv6_exc_punt(struct eth_stack *st, struct rte_mbuf *m)
{
	if (!st->c.exc)
		return false;
	if (kernel_refused(st, m)) {
		rte_pktmbuf_free(m);
		return true;
	}
	return eth_exc_punt(st, m);
}

static void icmp6_input(struct eth_stack *st, struct rte_mbuf *m, struct rte_ipv6_hdr *ip, uint8_t *l4,
                        uint32_t len, bool lo)
{
	const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	struct icmp6 *ic = (struct icmp6 *)l4;

	if (!lo)
		xlt_counter_add(&st->stats.icmp6_in, 1);
	if (len < sizeof(*ic) || cksum6(ip, ic, len) != 0) {
		if (!lo)
			xlt_counter_add(&st->stats.icmp6_errors, 1);
		goto drop;
	}
	switch (ic->type) {
	case ICMP6_ECHO_REQUEST:
		if (ic->code != 0) {
			xlt_counter_add(&st->stats.icmp_refused, 1); /* (no echo request: as IPv4's) */
			goto drop;
		}
		if (lo || lstate(st, ip->dst_addr) != ETH_LOCAL_UP || is_unspecified(ip->src_addr))
			goto drop; /* (echo to a multicast group: not answered, as a gateway need not; from
			            * ::, no one to answer) */
		ic->type = ICMP6_ECHO_REPLY;
		xlt_counter_add(&st->stats.icmp6_echo_replies, 1);
		icmp6_send(st, eh->src_addr.addr_bytes, ip->dst_addr, ip->src_addr, ic, (uint16_t)len, 64);
		break;
	case ND_NEIGHBOR_SOLICIT:
	case ND_NEIGHBOR_ADVERT:
		/* a hop limit of 255 proves the message was not forwarded by a router (RFC 4861 7.1) */
		if (ip->hop_limits != 255 || ic->code != 0) {
			if (!lo)
				xlt_counter_add(&st->stats.nd_errors, 1);
			goto drop;
		}
		if (ic->type == ND_NEIGHBOR_SOLICIT)
			nd_solicit(st, eh, ip, (const struct nd_msg *)ic, len, lo);
		else
			nd_advert(st, ip, (const struct nd_msg *)ic, len, lo);
		break;
	default: {
		struct eth_icmp_quote q;

		/* "packet too big" for one of our connections: path MTU discovery */
		if (!lo && eth_icmp6_quote(l4, len, &q) && !memcmp(q.local.b, ip->dst_addr, 16) &&
		    eth_pmtu_input(st, &q, true))
			break;
		/* other errors, echo replies, MLD: nothing we act on; the kernel's, when it has a TAP
		 * (its flows' errors, its pings, its groups). Not router advertisements or redirects,
		 * nor the rest icmp6_for_kernel turns away: the kernel would act on them for any
		 * on-link sender */
		if (lo || lstate(st, ip->dst_addr) == ETH_LOCAL_GONE)
			break;
		if (!icmp6_for_kernel(ic->type, ic->code)) {
			xlt_counter_add(&st->stats.icmp_refused, 1);
			break;
		}
		if (eth_exc_punt(st, m))
			return;
		break;
	}
	}
drop:
	rte_pktmbuf_free(m);
}

int eth_ipv6_walk(const uint8_t *p, uint32_t plen, uint8_t *nhp, uint32_t *offp)
{
	uint32_t off = 0, ext = 0, hlen;
	uint8_t nh = *nhp;

	for (;;) {
		switch (nh) {
		case IP6_HOPOPTS:
			if (ext)
				return -1; /* only right after the IPv6 header (RFC 8200 4.3) */
			                   /* fallthrough */
		case IP6_DSTOPTS:
		case IP6_ROUTING:
			if (++ext > ETH_IP6_MAX_EXT || plen - off < 8)
				return -1;
			hlen = (p[off + 1] + 1u) * 8;
			if (hlen > plen - off)
				return -1;
			if (nh == IP6_ROUTING && p[off + 3] != 0) {
				*nhp = IP6_ROUTING; /* segments left: the caller drops it */
				*offp = off;
				return 0;
			}
			/* (options are skipped whatever their type: nothing here needs one, and the
			 * "discard if unknown" codes only ask for what we do anyway, or for an ICMP error
			 * we choose not to send to a peer that built such a packet) */
			nh = p[off];
			off += hlen;
			continue;
		default:
			*nhp = nh;
			*offp = off;
			return 0;
		}
	}
}

bool eth_ipv6_is_nd(const struct rte_mbuf *m)
{
	const struct rte_ipv6_hdr *ip =
	    rte_pktmbuf_mtod_offset(m, const struct rte_ipv6_hdr *, RTE_ETHER_HDR_LEN);
	uint8_t type;

	if (m->data_len < RTE_ETHER_HDR_LEN + sizeof(*ip) + sizeof(struct icmp6) ||
	    ip->proto != IPPROTO_ICMPV6)
		return false;
	type = *((const uint8_t *)(ip + 1));
	return type == ND_NEIGHBOR_SOLICIT || type == ND_NEIGHBOR_ADVERT;
}

/* M starts at the Ethernet header (kept: replies go back to its source). */
void eth_ipv6_input(struct eth_stack *st, struct rte_mbuf *m, bool learn_only)
{
	struct rte_ipv6_hdr *ip;
	uint32_t plen, off, head;
	uint8_t nh, *p;

	if (!st->c.prefix6) {
		/* no IPv6 of ours: all of it is the kernel's, less the ICMPv6 no kernel may take from
		 * the wire through us */
		if (!learn_only && eth_ipv6_exc_punt(st, m))
			return;
		xlt_counter_add(&st->stats.ip6_not_for_us, 1);
		goto drop;
	}
	/* the headers lie in the first buffer; a chain (merged TCP segments) is for TCP only */
	if (m->data_len < RTE_ETHER_HDR_LEN + sizeof(*ip))
		goto hdr_err;
	ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv6_hdr *, RTE_ETHER_HDR_LEN);
	plen = rte_be_to_cpu_16(ip->payload_len);
	if ((rte_be_to_cpu_32(ip->vtc_flow) >> 28) != 6 ||
	    RTE_ETHER_HDR_LEN + sizeof(*ip) + plen > m->pkt_len)
		goto hdr_err;
	if (ip->src_addr[0] == 0xff || v4mapped(ip->src_addr) || !memcmp(ip->src_addr, loopback6, 16) ||
	    lstate(st, ip->src_addr) != ETH_LOCAL_NONE) {
		xlt_counter_add(&st->stats.ip6_martians, 1);
		goto drop;
	}
	if (!for_us(st, ip->dst_addr)) {
		/* another multicast group (one the kernel joined): its, when it has a TAP, its ICMPv6
		 * judged as ours is (the kernel takes a router advertisement sent to any group it
		 * joined, VRRPv3's among them) */
		if (ip->dst_addr[0] == 0xff && !learn_only && eth_ipv6_exc_punt(st, m))
			return;
		xlt_counter_add(&st->stats.ip6_not_for_us, 1);
		goto drop;
	}
	if (m->pkt_len > RTE_ETHER_HDR_LEN + sizeof(*ip) + plen) {
		if (m->nb_segs > 1)
			goto hdr_err; /* a chain (LRO) is never padded */
		rte_pktmbuf_trim(
		    m, (uint16_t)(m->pkt_len - (RTE_ETHER_HDR_LEN + sizeof(*ip) + plen))); /* padding */
	}
	p = (uint8_t *)(ip + 1);
	head =
	    m->data_len - (uint32_t)(RTE_ETHER_HDR_LEN + sizeof(*ip)); /* payload bytes in the first buffer */
	nh = ip->proto;
	if (eth_ipv6_walk(p, head < plen ? head : plen, &nh, &off))
		goto hdr_err;
	switch (nh) {
	case IP6_ROUTING:
	case IP6_FRAGMENT:
		/* segments left (we are no router), or no reassembly */
		xlt_counter_add(&st->stats.ip6_ext_dropped, 1);
		goto drop;
	case IPPROTO_ICMPV6:
		if (m->nb_segs > 1)
			goto hdr_err; /* never merged: its checks read one buffer */
		icmp6_input(st, m, ip, p + off, plen - off, learn_only);
		return;
	case IPPROTO_TCP:
		if (lstate(st, ip->dst_addr) == ETH_LOCAL_NONE) {
			xlt_counter_add(&st->stats.ip6_tcp_refused, 1); /* to a multicast group of ours */
			goto drop;
		}
		rte_pktmbuf_adj(m, RTE_ETHER_HDR_LEN);
		eth_tcp_input6(st, m, ip, (uint32_t)sizeof(*ip) + off, plen - off);
		return;
	case IP6_NONE:
		goto drop;
	default:
		/* UDP, OSPFv3, VRRPv3...: the kernel's, if it has a door (not to an address that left it) */
		if (!learn_only && lstate(st, ip->dst_addr) != ETH_LOCAL_GONE && eth_exc_punt(st, m))
			return;
		xlt_counter_add(&st->stats.ip6_unknown_proto, 1);
		goto drop;
	}
hdr_err:
	xlt_counter_add(&st->stats.ip6_header_errors, 1);
drop:
	rte_pktmbuf_free(m);
}
