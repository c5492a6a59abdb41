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
 * does not answer it is asked again every ARP_PINNED_RETRY_MS), and its address changes only by a
 * reply to a request of ours, never by an unsolicited or gratuitous claim (counted as an error). */
#include <string.h>

#include <rte_arp.h>
#include <rte_ether.h>

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

static unsigned slot_of(const struct eth_stack *st, uint32_t ip)
{
	return (unsigned)eth_siphash_3u32(&st->arp_key, ip, 0, 0) % ETH_ARP_SLOTS;
}

static struct eth_arp_entry *lookup(struct eth_stack *st, uint32_t ip)
{
	unsigned s;

	if (st->arp_last && st->arp_last->ip == ip)
		return st->arp_last;
	s = slot_of(st, ip);
	for (unsigned i = 0; i < ARP_PROBE; i++) {
		struct eth_arp_entry *e = &st->arp[(s + i) % ETH_ARP_SLOTS];
		if (e->ip == ip) {
			st->arp_last = e;
			return e;
		}
	}
	return NULL;
}

static void emit(struct eth_stack *st, struct rte_mbuf *m, const uint8_t *mac);

/* Takes E's packets out of the queue, in their order: sends them to MAC, or frees them (MAC NULL). */
static void queue_take(struct eth_stack *st, struct eth_arp_entry *e, const uint8_t *mac)
{
	unsigned k = 0;

	if (!e->n_pending)
		return;
	for (unsigned i = 0; i < st->arp_q_len; i++) {
		struct eth_arp_queued q = st->arp_q[i];
		if (q.e != e)
			st->arp_q[k++] = q;
		else if (mac)
			emit(st, q.m, mac);
		else
			rte_pktmbuf_free(q.m);
	}
	st->arp_q_len = k;
	e->n_pending = 0;
	ETH_SET(st, arp_queued, k);
}

/* Drops the I-th queued packet. */
static void queue_drop(struct eth_stack *st, unsigned i)
{
	st->arp_q[i].e->n_pending--;
	rte_pktmbuf_free(st->arp_q[i].m);
	st->arp_q_len--;
	memmove(st->arp_q + i, st->arp_q + i + 1, (st->arp_q_len - i) * sizeof(st->arp_q[0]));
}

/* Queues M for E, making room first: E's own oldest when E has its share, else the oldest of all. */
static void queue_add(struct eth_stack *st, struct eth_arp_entry *e, struct rte_mbuf *m)
{
	if (e->n_pending == ETH_ARP_PENDING) {
		/* keep the newest: TCP will retransmit the old ones anyway */
		unsigned i = 0;
		while (st->arp_q[i].e != e)
			i++;
		queue_drop(st, i);
		ETH_INC(st, arp_unresolved);
	} else if (st->arp_q_len == ETH_ARP_QUEUE) {
		queue_drop(st, 0);
		ETH_INC(st, arp_queue_drops);
	}
	st->arp_q[st->arp_q_len++] = (struct eth_arp_queued){.m = m, .e = e};
	e->n_pending++;
	ETH_SET(st, arp_queued, st->arp_q_len);
}

static void entry_drop_pending(struct eth_stack *st, struct eth_arp_entry *e)
{
	ETH_ADD(st, arp_unresolved, e->n_pending);
	queue_take(st, e, NULL);
}

static void entry_free(struct eth_stack *st, struct eth_arp_entry *e)
{
	entry_drop_pending(st, e);
	if (st->arp_last == e)
		st->arp_last = NULL;
	memset(e, 0, sizeof(*e));
	ETH_DEC(st, arp_entries);
}

/* A slot for IP: a free one among the probed, else the least recently used, never the pinned
 * gateway (it occupies one of the ARP_PROBE slots at most, so there is always another). */
static struct eth_arp_entry *insert(struct eth_stack *st, uint32_t ip)
{
	unsigned s = slot_of(st, ip);
	struct eth_arp_entry *victim = NULL;

	for (unsigned i = 0; i < ARP_PROBE; i++) {
		struct eth_arp_entry *e = &st->arp[(s + i) % ETH_ARP_SLOTS];
		if (e->state == ETH_ARP_FREE) {
			victim = e;
			break;
		}
		if (!e->pinned && (!victim || e->used_ms < victim->used_ms))
			victim = e;
	}
	if (victim->state != ETH_ARP_FREE)
		entry_free(st, victim);
	victim->ip = ip;
	victim->pinned = st->c.gateway && ip == st->c.gateway;
	victim->used_ms = st->now_ms;
	ETH_INC(st, arp_entries);
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
	ETH_INC(st, arp_out);
	eth_tx_frame(st, m);
}

static void send_arp(struct eth_stack *st, uint16_t op, const uint8_t *dst_mac, const uint8_t *tha,
                     uint32_t tip)
{
	send_arp_from(st, op, dst_mac, tha, st->c.addr, tip);
}

static const uint8_t zero_mac[6];
static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static void request(struct eth_stack *st, struct eth_arp_entry *e)
{
	if (e->state == ETH_ARP_STALE)
		send_arp(st, RTE_ARP_OP_REQUEST, e->mac, zero_mac, e->ip); /* unicast re-check */
	else
		send_arp(st, RTE_ARP_OP_REQUEST, bcast, zero_mac, e->ip);
	e->tries++;
	e->expire_ms = st->now_ms + ARP_RETRY_MS;
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

static void emit(struct eth_stack *st, struct rte_mbuf *m, const uint8_t *mac)
{
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)rte_pktmbuf_prepend(m, sizeof(*eh));

	if (!eh) {
		rte_pktmbuf_free(m);
		return;
	}
	memcpy(eh->dst_addr.addr_bytes, mac, 6);
	memcpy(eh->src_addr.addr_bytes, st->c.mac, 6);
	eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	eth_tx_frame(st, m);
}

void eth_arp_output(struct eth_stack *st, struct rte_mbuf *m, uint32_t nexthop)
{
	struct eth_arp_entry *e = lookup(st, nexthop);

	if (e && (e->state == ETH_ARP_REACHABLE || e->state == ETH_ARP_STALE)) {
		e->used_ms = st->now_ms;
		if (e->state == ETH_ARP_REACHABLE && st->now_ms >= e->expire_ms) {
			e->state = ETH_ARP_STALE;
			e->tries = 0;
			request(st, e);
		}
		emit(st, m, e->mac);
		return;
	}
	if (!e) {
		e = insert(st, nexthop);
		e->state = ETH_ARP_INCOMPLETE;
		e->tries = 0;
		request(st, e);
	}
	e->used_ms = st->now_ms;
	queue_add(st, e, m);
}

static void learn(struct eth_stack *st, struct eth_arp_entry *e, const uint8_t *mac)
{
	memcpy(e->mac, mac, 6);
	e->state = ETH_ARP_REACHABLE;
	e->tries = 0;
	e->expire_ms = st->now_ms + ARP_REACHABLE_MS;
	queue_take(st, e, e->mac);
}

static bool bad_sender_ip(const struct eth_stack *st, uint32_t ip)
{
	uint32_t h = rte_be_to_cpu_32(ip);

	return h == 0 || h == 0xffffffffu || (h >> 28) == 0xe || (h >> 24) == 127 ||
	       (st->netmask && (ip & ~st->netmask) == ~st->netmask); /* the subnet's broadcast */
}

void eth_arp_input(struct eth_stack *st, struct rte_mbuf *m, bool learn_only)
{
	const struct rte_arp_hdr *a;
	const uint8_t *sha;
	struct eth_arp_entry *e;
	uint32_t sip, tip;
	uint16_t op;

	if (!learn_only)
		ETH_INC(st, arp_in); /* a clone from another worker was counted there */
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
		if (!learn_only && op == RTE_ARP_OP_REQUEST && eth_local_state(st, tip) == ETH_LOCAL_UP)
			send_arp_from(st, RTE_ARP_OP_REPLY, sha, sha, tip, 0);
		goto done;
	}
	if (eth_local_state(st, sip) != ETH_LOCAL_NONE || bad_sender_ip(st, sip) ||
	    ((sip ^ st->c.addr) & st->netmask))
		goto bad; /* a claim on our address, a martian, or off-link */
	e = lookup(st, sip);
	if (e && e->pinned) {
		/* the gateway: only the answer to a question we asked (a re-check, or while unknown) */
		if (op == RTE_ARP_OP_REPLY && tip == st->c.addr &&
		    (e->state == ETH_ARP_INCOMPLETE || e->state == ETH_ARP_STALE))
			learn(st, e, sha);
		else if ((e->state == ETH_ARP_INCOMPLETE || memcmp(sha, e->mac, 6)) && !learn_only)
			ETH_INC(st, arp_errors); /* an unsolicited claim on the gateway's address: ignored */
	} else if (e) {
		learn(st, e, sha); /* merge: refresh what we know */
	}
	if (eth_local_state(st, tip) != ETH_LOCAL_UP)
		goto done;
	if (!e && !(st->c.gateway && sip == st->c.gateway)) {
		/* (the gateway's entry is made and asked for by eth_arp_tick, pinned) */
		e = insert(st, sip);
		learn(st, e, sha);
	}
	if (op == RTE_ARP_OP_REQUEST && !learn_only)
		send_arp_from(st, RTE_ARP_OP_REPLY, sha, sha, tip, sip);
done:
	rte_pktmbuf_free(m);
	return;
bad:
	if (!learn_only)
		ETH_INC(st, arp_errors);
	rte_pktmbuf_free(m);
}

void eth_arp_tick(struct eth_stack *st)
{
	if (st->c.gateway && !lookup(st, st->c.gateway)) {
		/* resolve the gateway before traffic needs it, and hold its entry for good */
		struct eth_arp_entry *g = insert(st, st->c.gateway);
		g->state = ETH_ARP_INCOMPLETE;
		g->tries = 0;
		request(st, g);
	}
	for (unsigned i = 0; i < ETH_ARP_SLOTS; i++) {
		struct eth_arp_entry *e = &st->arp[i];

		switch (e->state) {
		case ETH_ARP_INCOMPLETE:
		case ETH_ARP_STALE:
			if (st->now_ms < e->expire_ms)
				break;
			if (e->tries < ARP_TRIES) {
				request(st, e);
			} else if (e->pinned) {
				/* unanswered: its packets go, the entry stays; a gateway that left its old
				 * address (failover) is asked for by broadcast at once, one that answers
				 * nothing again later */
				bool was_stale = e->state == ETH_ARP_STALE;
				entry_drop_pending(st, e);
				e->state = ETH_ARP_INCOMPLETE;
				e->tries = 0;
				if (was_stale)
					request(st, e);
				else
					e->expire_ms = st->now_ms + ARP_PINNED_RETRY_MS;
			} else {
				entry_free(st, e);
			}
			break;
		case ETH_ARP_REACHABLE:
			if (!e->pinned && st->now_ms - e->used_ms > ARP_IDLE_MS)
				entry_free(st, e);
			break;
		default:
			break;
		}
	}
}

void eth_arp_flush(struct eth_stack *st)
{
	for (unsigned i = 0; i < ETH_ARP_SLOTS; i++)
		if (st->arp[i].state != ETH_ARP_FREE)
			entry_free(st, &st->arp[i]);
}
