/* ARP (RFC 826): the worker's neighbour cache.
 *
 * An open-addressed table of ETH_ARP_SLOTS entries, indexed by a keyed hash (SipHash with a secret
 * per instance), so that a peer choosing its source addresses cannot crowd the few slots a
 * neighbour may live in and evict it. Resolution queues packets in one FIFO per instance: at most
 * ETH_ARP_PENDING per neighbour and ETH_ARP_QUEUE in all (the oldest goes first either way, counted),
 * so SYN-ACKs to a flood of spoofed on-link sources hold a few hundred packet buffers, not
 * slots x per-neighbour of them; the request is retried every second, three times, before the
 * packets are dropped. A REACHABLE entry lasts 60 s; after that it is still used while it is re-checked
 * with unicast requests (so traffic never stalls on a healthy neighbour), and forgotten when those
 * go unanswered. We learn only from packets aimed at us (or updates of entries we already have, the
 * RFC 826 merge rule), never from a claim on our own address, so ARP garbage cannot poison the cache
 * beyond what any host on the segment could do anyway. The configured default gateway, which carries
 * every off-link flow, is pinned: asked for from the start, never evicted, never forgotten (while it
 * does not answer it is asked again every ARP_PINNED_RETRY_MS, or at once when traffic needs it or a
 * frame from its address shows it back), and its address changes only by a
 * reply to a request of ours, never by an unsolicited or gratuitous claim (counted as an error); a
 * re-check (unicast, to the address we have) is answered by that address only: another one may be an
 * attacker racing the gateway's answer, and a gateway that really moved leaves its re-checks
 * unanswered, so that it is asked for by broadcast (INCOMPLETE) again.
 *
 * The same code is IPv6's neighbour cache (RFC 4861), a second table of its own with the same bounds
 * (struct eth_nbr_cache: a flood in one family evicts nothing of the other): ipv6.c sends the
 * solicitations (eth_nd_solicit) and feeds what neighbour discovery tells: a solicitation aimed at
 * us from an on-link source creates or refreshes its sender's entry (as an ARP request to us does);
 * an advertisement only updates an entry we already have, by RFC 4861 7.2.5's rules (the solicited
 * and override flags), so unsolicited advertisements never create entries; [eth] gateway6 is pinned
 * as the IPv4 gateway is, its address changed only by a solicited advertisement we asked for. */
#include <string.h>

#include <rte_arp.h>
#include <rte_ether.h>

#include "../translate/ratelim.h"
#include "engine.h"

enum {
	ETH_ARP_FREE,
	ETH_ARP_INCOMPLETE,
	ETH_ARP_REACHABLE,
	ETH_ARP_STALE,
};

#define ARP_REACHABLE_MS 60000
#define ARP_RETRY_MS	 1000
#define ARP_TRIES	 3
#define ARP_IDLE_MS	 300000 /* unused entries are forgotten */
#define ARP_PROBE	 8	/* slots probed per lookup */
#define ARP_PINNED_RETRY_MS 10000 /* an unanswered gateway is asked again after this */

/* The counters of cache C's family. */
#define NB_ADD(st, c, f, n)                                                                                  \
	do {                                                                                                 \
		if ((c)->v6)                                                                                 \
			xlt_counter_add(&st->stats.nd_##f, n);                                               \
		else                                                                                         \
			xlt_counter_add(&st->stats.arp_##f, n);                                              \
	} while (0)
#define NB_SET(st, c, f, v)                                                                                  \
	do {                                                                                                 \
		if ((c)->v6)                                                                                 \
			xlt_counter_set(&st->stats.nd_##f, v);                                               \
		else                                                                                         \
			xlt_counter_set(&st->stats.arp_##f, v);                                              \
	} while (0)
#define NB_DEC(st, c, f)                                                                                     \
	do {                                                                                                 \
		if ((c)->v6)                                                                                 \
			xlt_counter_add(&st->stats.nd_##f, (uint64_t)-1);                                    \
		else                                                                                         \
			xlt_counter_add(&st->stats.arp_##f, (uint64_t)-1);                                   \
	} while (0)

static unsigned slot_of(const struct eth_stack *st, const struct xlt_ip *ip)
{
	return (unsigned)eth_siphash(&st->arp_key, ip->b, sizeof(ip->b)) % ETH_ARP_SLOTS;
}

/* The cache of IP's family: ARP's for IPv4, neighbour discovery's for IPv6. */
static struct eth_nbr_cache *cache_of(struct eth_stack *st, const struct xlt_ip *ip)
{
	return xlt_ip_is_v4(ip) ? &st->arp : &st->nd;
}

static struct eth_arp_entry *lookup(struct eth_stack *st, struct eth_nbr_cache *c, const struct xlt_ip *ip)
{
	unsigned s;

	if (c->last && xlt_ip_eq(&c->last->ip, ip))
		return c->last;
	s = slot_of(st, ip);
	for (unsigned i = 0; i < ARP_PROBE; i++) {
		struct eth_arp_entry *e = &c->e[(s + i) % ETH_ARP_SLOTS];
		if (e->state != ETH_ARP_FREE && xlt_ip_eq(&e->ip, ip)) {
			c->last = e;
			return e;
		}
	}
	return NULL;
}

static void emit(struct eth_stack *st, struct rte_mbuf *m, const uint8_t *mac, bool v6);

/* Takes E's packets out of C's queue, in their order: sends them to MAC, or frees them (MAC NULL). */
static void queue_take(struct eth_stack *st, struct eth_nbr_cache *c, struct eth_arp_entry *e,
                       const uint8_t *mac)
{
	unsigned k = 0;

	if (!e->n_pending)
		return;
	for (unsigned i = 0; i < c->q_len; i++) {
		struct eth_arp_queued q = c->q[i];
		if (q.e != e)
			c->q[k++] = q;
		else if (mac)
			emit(st, q.m, mac, c->v6);
		else
			rte_pktmbuf_free(q.m);
	}
	c->q_len = k;
	e->n_pending = 0;
	NB_SET(st, c, queued, k);
}

/* Drops the I-th queued packet. */
static void queue_drop(struct eth_nbr_cache *c, unsigned i)
{
	c->q[i].e->n_pending--;
	rte_pktmbuf_free(c->q[i].m);
	c->q_len--;
	memmove(c->q + i, c->q + i + 1, (c->q_len - i) * sizeof(c->q[0]));
}

/* Queues M for E, making room first: E's own oldest when E has its share, else the oldest of all. */
static void queue_add(struct eth_stack *st, struct eth_nbr_cache *c, struct eth_arp_entry *e,
                      struct rte_mbuf *m)
{
	if (e->n_pending == ETH_ARP_PENDING) {
		/* keep the newest: TCP will retransmit the old ones anyway */
		unsigned i = 0;
		while (c->q[i].e != e)
			i++;
		queue_drop(c, i);
		NB_ADD(st, c, unresolved, 1);
	} else if (c->q_len == ETH_ARP_QUEUE) {
		queue_drop(c, 0);
		NB_ADD(st, c, queue_drops, 1);
	}
	c->q[c->q_len++] = (struct eth_arp_queued){.m = m, .e = e};
	e->n_pending++;
	NB_SET(st, c, queued, c->q_len);
}

static void entry_drop_pending(struct eth_stack *st, struct eth_nbr_cache *c, struct eth_arp_entry *e)
{
	NB_ADD(st, c, unresolved, e->n_pending);
	queue_take(st, c, e, NULL);
}

static void entry_free(struct eth_stack *st, struct eth_nbr_cache *c, struct eth_arp_entry *e)
{
	entry_drop_pending(st, c, e);
	if (c->last == e)
		c->last = NULL;
	memset(e, 0, sizeof(*e));
	NB_DEC(st, c, entries);
}

/* The configured gateway of C's family, or NULL: none. */
static const struct xlt_ip *gateway_of(const struct eth_stack *st, const struct eth_nbr_cache *c,
                                       struct xlt_ip *buf)
{
	if (c->v6) {
		memcpy(buf->b, st->c.gateway6, 16);
		return st->c.prefix6 && !xlt_ip_is_any(buf) ? buf : NULL;
	}
	*buf = xlt_ip_v4(st->c.gateway);
	return st->c.gateway ? buf : NULL;
}

/* Whether IP's entry is pinned: the configured gateway of C's family, or the flow peer (the other
 * gateway of a pair, [eth] flow_peer/flow_peer6), which gets every segment of the connections the
 * VIP left behind: a claim that re-pointed it would hand them all to the claimant. */
static bool is_pinned(const struct eth_stack *st, const struct eth_nbr_cache *c, const struct xlt_ip *ip)
{
	struct xlt_ip buf;
	const struct xlt_ip *g = gateway_of(st, c, &buf);

	if (g && xlt_ip_eq(g, ip))
		return true;
	if (c->v6) {
		memcpy(buf.b, st->c.flow_peer6, 16);
		return !xlt_ip_is_any(&buf) && xlt_ip_eq(&buf, ip);
	}
	return st->c.flow_peer && xlt_ip_to_v4(ip) == st->c.flow_peer;
}

/* Whether E has not shown itself worth keeping: made by a peer's request (passive) and not used
 * since, or never answered (INCOMPLETE: a spoofed source our SYN-ACK waits for is one). */
static bool unproven(const struct eth_arp_entry *e)
{
	return e->passive || e->state == ETH_ARP_INCOMPLETE;
}

/* A slot for IP: a free one among the probed, else, never the pinned gateway (it occupies one of the
 * ARP_PROBE slots at most, so there is always another), the least recently used of the unproven
 * entries, and only when there is none of those the least recently used of the rest: SYNs from
 * spoofed on-link sources make output wait for neighbours that never answer, and those entries must
 * not evict the neighbours traffic goes to (their packets dropped, asked for again); a spoofer
 * that answers for all its sources is a host of the segment, which can do worse anyway.
 * PASSIVE: for the sender of an ARP request or neighbour solicitation aimed at us (or of a reply we
 * did not ask for), which takes only a free slot or one another such sender got and output never
 * used: in a /64 (or a wide IPv4 subnet) a peer has endless sources. NULL then when there is none. */
static struct eth_arp_entry *insert(struct eth_stack *st, struct eth_nbr_cache *c, const struct xlt_ip *ip,
                                    bool passive)
{
	unsigned s = slot_of(st, ip);
	struct eth_arp_entry *victim = NULL;

	for (unsigned i = 0; i < ARP_PROBE; i++) {
		struct eth_arp_entry *e = &c->e[(s + i) % ETH_ARP_SLOTS];
		if (e->state == ETH_ARP_FREE) {
			victim = e;
			break;
		}
		if (e->pinned || (passive && !e->passive))
			continue;
		if (!victim || unproven(e) > unproven(victim) ||
		    (unproven(e) == unproven(victim) && e->used_ms < victim->used_ms))
			victim = e;
	}
	if (!victim)
		return NULL;
	if (victim->state != ETH_ARP_FREE)
		entry_free(st, c, victim);
	victim->ip = *ip;
	victim->pinned = is_pinned(st, c, ip);
	victim->passive = passive;
	victim->used_ms = st->now_ms;
	NB_ADD(st, c, entries, 1);
	return victim;
}

/* SIP: which of our addresses speaks (the one asked for, or [eth] address). */
static void send_arp_from(struct eth_stack *st, uint16_t op, const uint8_t *dst_mac, const uint8_t *tha,
                          uint32_t sip, uint32_t tip)
{
	struct rte_mbuf *m = eth_pkt_alloc(st);
	struct rte_ether_hdr *eh;
	struct rte_arp_hdr *a;

	if (!m)
		return;
	eh = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eh) + sizeof(*a));
	if (!eh) {
		rte_pktmbuf_free(m);
		return;
	}
	a = (struct rte_arp_hdr *)(eh + 1);
	memcpy(eh->dst_addr.addr_bytes, dst_mac, 6);
	memcpy(eh->src_addr.addr_bytes, st->c.mac, 6);
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	a->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	a->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	a->arp_hlen = 6;
	a->arp_plen = 4;
	a->arp_opcode = rte_cpu_to_be_16(op);
	memcpy(a->arp_data.arp_sha.addr_bytes, st->c.mac, 6);
	a->arp_data.arp_sip = sip;
	memcpy(a->arp_data.arp_tha.addr_bytes, tha, 6);
	a->arp_data.arp_tip = tip;
	xlt_counter_add(&st->stats.arp_out, 1);
	eth_tx_frame(st, m);
}

static void send_arp(struct eth_stack *st, uint16_t op, const uint8_t *dst_mac, const uint8_t *tha,
                     uint32_t tip)
{
	send_arp_from(st, op, dst_mac, tha, st->c.addr, tip);
}

static const uint8_t zero_mac[6];
static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static void request(struct eth_stack *st, struct eth_nbr_cache *c, struct eth_arp_entry *e)
{
	bool stale = e->state == ETH_ARP_STALE; /* a re-check goes unicast */

	if (c->v6)
		eth_nd_solicit(st, e->ip.b, stale ? e->mac : NULL);
	else
		send_arp(st, RTE_ARP_OP_REQUEST, stale ? e->mac : bcast, zero_mac, xlt_ip_to_v4(&e->ip));
	e->tries++;
	e->expire_ms = st->now_ms + ARP_RETRY_MS;
}

/* A pinned entry that answered nothing is asked for again every ARP_PINNED_RETRY_MS while nothing
 * needs it. Traffic that needs it, or a sign of life from its address (a claim, which sets nothing:
 * only the answer does), asks again at once, and again each second while that goes unanswered: the
 * flow peer back from a restart gets the VIP's connections at the next hand-off within a round
 * trip, not after seconds of its segments dropped unresolved. */
static void ask_again(struct eth_stack *st, struct eth_nbr_cache *c, struct eth_arp_entry *e)
{
	if (e->pinned && e->state == ETH_ARP_INCOMPLETE && e->tries == 0)
		request(st, c, e);
}

void eth_arp_announce(struct eth_stack *st)
{
	/* gratuitous ARP (RFC 5227 announcement): a request for our own address */
	send_arp(st, RTE_ARP_OP_REQUEST, bcast, zero_mac, st->c.addr);
}

void eth_arp_announce_addr(struct eth_stack *st, uint32_t addr)
{
	send_arp_from(st, RTE_ARP_OP_REQUEST, bcast, zero_mac, addr, addr);
}

static void emit(struct eth_stack *st, struct rte_mbuf *m, const uint8_t *mac, bool v6)
{
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)rte_pktmbuf_prepend(m, sizeof(*eh));

	if (!eh) {
		rte_pktmbuf_free(m);
		return;
	}
	memcpy(eh->dst_addr.addr_bytes, mac, 6);
	memcpy(eh->src_addr.addr_bytes, st->c.mac, 6);
	eh->ether_type = rte_cpu_to_be_16(v6 ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4);
	eth_tx_frame(st, m);
}

void eth_nbr_output(struct eth_stack *st, struct rte_mbuf *m, const struct xlt_ip *nexthop, bool reply)
{
	struct eth_nbr_cache *c = cache_of(st, nexthop);
	struct eth_arp_entry *e = lookup(st, c, nexthop);

	if (e && (e->state == ETH_ARP_REACHABLE || e->state == ETH_ARP_STALE)) {
		e->used_ms = st->now_ms;
		e->passive = false; /* in use: no request or solicitation evicts it now */
		if (e->state == ETH_ARP_REACHABLE && st->now_ms >= e->expire_ms) {
			e->state = ETH_ARP_STALE;
			e->tries = 0;
			request(st, c, e);
		}
		emit(st, m, e->mac, c->v6);
		return;
	}
	if (!e) {
		/* a neighbour not asked for yet costs a request to every host of the link (three with the
		 * retries), and a reply's is the source of a ping, a SYN or a segment of no connection,
		 * which a peer may spoof on-link: at most ETH_NBR_RESOLVE_PER_S such a second (the
		 * gateway and the flow peer always); past it the reply is dropped and nothing is kept */
		if (reply && !is_pinned(st, c, nexthop) &&
		    !xlt_window_ok(&st->nbr_resolves, st->now_ms, 1000, ETH_NBR_RESOLVE_PER_S)) {
			xlt_counter_add(&st->stats.nbr_resolves_limited, 1);
			rte_pktmbuf_free(m);
			return;
		}
		e = insert(st, c, nexthop, false);
		e->state = ETH_ARP_INCOMPLETE;
		e->tries = 0;
		request(st, c, e);
	} else {
		ask_again(st, c, e);
	}
	e->used_ms = st->now_ms;
	queue_add(st, c, e, m);
}

void eth_arp_output(struct eth_stack *st, struct rte_mbuf *m, uint32_t nexthop, bool reply)
{
	struct xlt_ip nh = xlt_ip_v4(nexthop);

	eth_nbr_output(st, m, &nh, reply);
}

static void learn(struct eth_stack *st, struct eth_nbr_cache *c, struct eth_arp_entry *e, const uint8_t *mac)
{
	memcpy(e->mac, mac, 6);
	e->state = ETH_ARP_REACHABLE;
	e->tries = 0;
	e->expire_ms = st->now_ms + ARP_REACHABLE_MS;
	queue_take(st, c, e, e->mac);
}

static bool bad_sender_ip(const struct eth_stack *st, uint32_t ip)
{
	uint32_t h = rte_be_to_cpu_32(ip);

	return h == 0 || h == 0xffffffffu || (h >> 28) == 0xe || (h >> 24) == 127 || eth_ipv4_subnet_bcast(st, ip);
}

bool eth_nbr_pinned_elsewhere(struct eth_stack *st, const struct xlt_ip *ip, const uint8_t *mac)
{
	struct eth_arp_entry *e = lookup(st, cache_of(st, ip), ip);

	return e && e->pinned && e->state != ETH_ARP_INCOMPLETE && memcmp(mac, e->mac, 6);
}

bool eth_nbr_known(struct eth_stack *st, const struct xlt_ip *ip, const uint8_t *mac)
{
	struct eth_arp_entry *e = lookup(st, cache_of(st, ip), ip);

	return e && (e->state == ETH_ARP_REACHABLE || e->state == ETH_ARP_STALE) && !memcmp(mac, e->mac, 6);
}

bool eth_nbr_reply_ok(struct eth_stack *st, bool known)
{
	if (known || xlt_window_ok(&st->nbr_replies, st->now_ms, 1000, ETH_NBR_REPLY_PER_S))
		return true;
	xlt_counter_add(&st->stats.nbr_replies_limited, 1);
	return false;
}

bool eth_arp_for_kernel(struct eth_stack *st, const struct rte_mbuf *m)
{
	const struct rte_arp_hdr *a;
	struct xlt_ip sip;

	if (m->data_len < RTE_ETHER_HDR_LEN + sizeof(*a))
		return true; /* (eth_arp_input counts it malformed; the kernel judges its copy) */
	a = rte_pktmbuf_mtod_offset(m, const struct rte_arp_hdr *, RTE_ETHER_HDR_LEN);
	if (a->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REQUEST) && a->arp_data.arp_sip != a->arp_data.arp_tip &&
	    eth_local_state(st, a->arp_data.arp_tip) != ETH_LOCAL_UP)
		return false;
	if (!st->c.gateway || a->arp_data.arp_sip != st->c.gateway)
		return true;
	sip = xlt_ip_v4(st->c.gateway);
	return !eth_nbr_pinned_elsewhere(st, &sip, a->arp_data.arp_sha.addr_bytes);
}

void eth_arp_input(struct eth_stack *st, struct rte_mbuf *m, bool learn_only)
{
	struct eth_nbr_cache *c = &st->arp;
	const struct rte_arp_hdr *a;
	const uint8_t *sha;
	struct eth_arp_entry *e;
	struct xlt_ip sip6;
	uint32_t sip, tip;
	uint16_t op;
	bool known;

	if (!learn_only)
		xlt_counter_add(&st->stats.arp_in, 1); /* a clone from another worker was counted there */
	if (m->data_len < sizeof(*a))
		goto bad;
	a = rte_pktmbuf_mtod(m, const struct rte_arp_hdr *);
	op = rte_be_to_cpu_16(a->arp_opcode);
	if (a->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    a->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) || a->arp_hlen != 6 || a->arp_plen != 4 ||
	    (op != RTE_ARP_OP_REQUEST && op != RTE_ARP_OP_REPLY))
		goto bad;
	sha = a->arp_data.arp_sha.addr_bytes;
	sip = a->arp_data.arp_sip;
	tip = a->arp_data.arp_tip;
	if (sha[0] & 1 || !memcmp(sha, zero_mac, 6) || !memcmp(sha, st->c.mac, 6))
		goto bad; /* multicast, zero or our own MAC as a sender */
	if (sip == 0) {
		/* RFC 5227 probe: defend our address, learn nothing */
		if (!learn_only && op == RTE_ARP_OP_REQUEST && eth_local_state(st, tip) == ETH_LOCAL_UP &&
		    eth_nbr_reply_ok(st, false))
			send_arp_from(st, RTE_ARP_OP_REPLY, sha, sha, tip, 0);
		goto done;
	}
	if (eth_local_state(st, sip) != ETH_LOCAL_NONE || bad_sender_ip(st, sip) ||
	    ((sip ^ st->c.addr) & st->netmask))
		goto bad; /* a claim on our address, a martian, or off-link */
	sip6 = xlt_ip_v4(sip);
	known = eth_nbr_known(st, &sip6, sha); /* (before this frame teaches anything) */
	e = lookup(st, c, &sip6);
	if (e && e->pinned) {
		/* the gateway: only the answer to a question we asked (a re-check, or while unknown) */
		if (op == RTE_ARP_OP_REPLY && tip == st->c.addr &&
		    ((e->state == ETH_ARP_INCOMPLETE && e->tries) || (e->state == ETH_ARP_STALE && !memcmp(sha, e->mac, 6))))
			learn(st, c, e, sha); /* (INCOMPLETE and no try: its hold-down, nothing asked) */
		else if ((e->state == ETH_ARP_INCOMPLETE || memcmp(sha, e->mac, 6)) && !learn_only) {
			/* an unsolicited claim on the gateway's address: ignored (but one that went
			 * unanswered is asked for now) */
			xlt_counter_add(&st->stats.arp_errors, 1);
			ask_again(st, c, e);
		}
	} else if (e) {
		learn(st, c, e, sha); /* merge: refresh what we know */
	}
	if (eth_local_state(st, tip) != ETH_LOCAL_UP)
		goto done;
	if (!e && !is_pinned(st, c, &sip6)) {
		/* (the gateway's entry is made and asked for by eth_arp_tick, the flow peer's by our first
		 * output to it: pinned, learnt from the answers to what we asked) */
		e = insert(st, c, &sip6, true);
		if (e)
			learn(st, c, e, sha);
		else if (!learn_only)
			xlt_counter_add(&st->stats.arp_learn_refused, 1); /* (answered all the same) */
	}
	if (op == RTE_ARP_OP_REQUEST && !learn_only && eth_nbr_reply_ok(st, known))
		send_arp_from(st, RTE_ARP_OP_REPLY, sha, sha, tip, sip);
done:
	rte_pktmbuf_free(m);
	return;
bad:
	if (!learn_only)
		xlt_counter_add(&st->stats.arp_errors, 1);
	rte_pktmbuf_free(m);
}

void eth_nd_learn_solicit(struct eth_stack *st, const uint8_t *src, const uint8_t *sll, bool learn_only)
{
	struct eth_nbr_cache *c = &st->nd;
	struct xlt_ip ip;
	struct eth_arp_entry *e;

	memcpy(ip.b, src, 16);
	e = lookup(st, c, &ip);
	if (e && e->pinned) {
		/* the gateway changes only by an advertisement we asked for (a clone: the worker that
		 * got the frame asks) */
		if (!learn_only)
			ask_again(st, c, e);
		return;
	}
	if (!e) {
		if (is_pinned(st, c, &ip))
			return; /* (made by eth_arp_tick or our first output to it, pinned: by what we asked) */
		e = insert(st, c, &ip, true);
		if (!e) {
			/* (answered all the same: it learns ours) */
			xlt_counter_add(&st->stats.nd_learn_refused, 1);
			return;
		}
	}
	learn(st, c, e, sll);
}

bool eth_nd_learn_advert(struct eth_stack *st, const uint8_t *target, const uint8_t *tll, bool solicited,
                         bool override, bool learn_only)
{
	struct eth_nbr_cache *c = &st->nd;
	struct xlt_ip ip;
	struct eth_arp_entry *e;

	memcpy(ip.b, target, 16);
	e = lookup(st, c, &ip);
	if (!e)
		return true; /* RFC 4861 7.2.5: no entry, none made (a spoofer cannot fill the table) */
	if (e->state == ETH_ARP_INCOMPLETE) {
		if (!tll)
			return true; /* nothing to learn */
		/* a pinned entry takes only the answer to a question of ours: one outstanding (tries),
		 * not a "solicited" advertisement while nothing was asked (its hold-down) */
		if (e->pinned && (!solicited || !e->tries)) {
			if (!learn_only)
				ask_again(st, c, e);
			return false;
		}
		if (solicited) {
			learn(st, c, e, tll);
		} else {
			/* known but not confirmed reachable: send what waits, check it at once */
			memcpy(e->mac, tll, 6);
			e->state = ETH_ARP_STALE;
			e->tries = 0;
			e->expire_ms = st->now_ms;
			queue_take(st, c, e, e->mac);
		}
		return true;
	}
	/* an unsolicited claim on the gateway, or an answer to its re-check from another address:
	 * ignored (see above) */
	if (e->pinned && (!solicited || e->state != ETH_ARP_STALE || (tll && memcmp(tll, e->mac, 6))))
		return !(tll && memcmp(tll, e->mac, 6));
	if (!override && tll && memcmp(tll, e->mac, 6)) {
		/* another address without the override flag: not taken; what we have is in doubt */
		if (e->state == ETH_ARP_REACHABLE) {
			e->state = ETH_ARP_STALE;
			e->tries = 0;
			e->expire_ms = st->now_ms;
		}
		return true;
	}
	if (solicited) {
		learn(st, c, e, tll ? tll : e->mac);
	} else if (tll && memcmp(tll, e->mac, 6)) {
		memcpy(e->mac, tll, 6);
		e->state = ETH_ARP_STALE;
		e->tries = 0;
		e->expire_ms = st->now_ms;
	}
	return true;
}

static void tick_cache(struct eth_stack *st, struct eth_nbr_cache *c)
{
	struct xlt_ip buf;
	const struct xlt_ip *gw = gateway_of(st, c, &buf);

	if (gw && !lookup(st, c, gw)) {
		/* resolve the gateway before traffic needs it, and hold its entry for good */
		struct eth_arp_entry *g = insert(st, c, gw, false);
		g->state = ETH_ARP_INCOMPLETE;
		g->tries = 0;
		request(st, c, g);
	}
	for (unsigned i = 0; i < ETH_ARP_SLOTS; i++) {
		struct eth_arp_entry *e = &c->e[i];

		switch (e->state) {
		case ETH_ARP_INCOMPLETE:
		case ETH_ARP_STALE:
			if (st->now_ms < e->expire_ms)
				break;
			if (e->tries < ARP_TRIES) {
				request(st, c, e);
			} else if (e->pinned) {
				/* unanswered: its packets go, the entry stays; a gateway that left its old
				 * address (failover) is asked for by broadcast at once, one that answers
				 * nothing again later */
				bool was_stale = e->state == ETH_ARP_STALE;
				entry_drop_pending(st, c, e);
				e->state = ETH_ARP_INCOMPLETE;
				e->tries = 0;
				if (was_stale)
					request(st, c, e);
				else
					e->expire_ms = st->now_ms + ARP_PINNED_RETRY_MS;
			} else {
				entry_free(st, c, e);
			}
			break;
		case ETH_ARP_REACHABLE:
			if (!e->pinned && st->now_ms - e->used_ms > ARP_IDLE_MS)
				entry_free(st, c, e);
			break;
		default:
			break;
		}
	}
}

void eth_arp_tick(struct eth_stack *st)
{
	tick_cache(st, &st->arp);
	if (st->c.prefix6)
		tick_cache(st, &st->nd);
}

void eth_arp_flush(struct eth_stack *st)
{
	struct eth_nbr_cache *cs[2] = {&st->arp, &st->nd};

	for (unsigned k = 0; k < 2; k++)
		for (unsigned i = 0; i < ETH_ARP_SLOTS; i++)
			if (cs[k]->e[i].state != ETH_ARP_FREE)
				entry_free(st, cs[k], &cs[k]->e[i]);
}
