/* Engine instance: the worker's poll round, receive demux and steering, transmit queue, events.
 *
 * One round: receive a burst from the port queue and from the other workers' rings, run the timer
 * wheel, fire the stream events collected meanwhile, let every connection that has something to say
 * produce its segments, hand the frames to the device, and only then free the connections that were
 * released (so no list still points at them).
 *
 * Steering: a TCP frame of either family belongs to the worker picked by the keyed flow hash (over
 * the remote address, IPv4 mapped, and the ports: the same on every worker); one landing elsewhere
 * crosses an SPSC ring to its owner untouched. ARP and IPv6 neighbour discovery are learnt by every
 * worker (each keeps its own neighbour caches), so those frames are cloned to the others, which only
 * learn from them. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

#include <rte_arp.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ring.h>

#include "buf.h"
#include "engine.h"
#include "sndq.h"
#include "rcvq.h"
#include "stack.h"
#include "twheel.h"

#define ST(f) offsetof(struct eth_stack_stats, f)
const struct xlt_metric_desc eth_stack_metrics[] = {
	{"eth_frames_in_total", XLT_COUNTER, ST(frames_in), "frames received by the TCP/IP engine", NULL},
	{"eth_frames_out_total", XLT_COUNTER, ST(frames_out), "frames sent by the TCP/IP engine", NULL},
	{"eth_frames_dropped_total", XLT_COUNTER, ST(frames_dropped), "frames not for us or of an unknown type", NULL},
	{"eth_tx_drops_total", XLT_COUNTER, ST(tx_drops), "frames dropped because the device queue stayed full", NULL},
	{"eth_steered_total", XLT_COUNTER, ST(steered_out), "frames handed to the worker owning their flow", NULL},
	{"eth_steer_drops_total", XLT_COUNTER, ST(steer_drops), "frames dropped because the owner's ring was full", NULL},
	{"eth_clones_skipped_total", XLT_COUNTER, ST(clones_skipped), "ARP and neighbour discovery copies not handed to a worker whose ring was half full", NULL},
	{"eth_nombuf_total", XLT_COUNTER, ST(nombuf), "packet buffer allocation failures", NULL},
	{"arp_in_total", XLT_COUNTER, ST(arp_in), "ARP packets received", NULL},
	{"arp_out_total", XLT_COUNTER, ST(arp_out), "ARP packets sent", NULL},
	{"arp_errors_total", XLT_COUNTER, ST(arp_errors), "malformed or conflicting ARP packets", NULL},
	{"arp_unresolved_drops_total", XLT_COUNTER, ST(arp_unresolved), "packets dropped waiting for an unanswered neighbour", NULL},
	{"arp_entries", XLT_GAUGE, ST(arp_entries), "neighbour cache entries", NULL},
	{"arp_queue_drops_total", XLT_COUNTER, ST(arp_queue_drops), "packets dropped, oldest first, because the worker's queue of packets awaiting ARP resolution was full", NULL},
	{"arp_queued", XLT_GAUGE, ST(arp_queued), "packets waiting for ARP resolution", NULL},
	{"arp_learn_refused_total", XLT_COUNTER, ST(arp_learn_refused), "ARP senders that got no cache entry: its slots held neighbours in use", NULL},
	{"neighbor_resolves_limited_total", XLT_COUNTER, ST(nbr_resolves_limited), "replies to packets of no connection (echo, SYN-ACK, reset) dropped: their next hop was a new neighbour, past the per-worker budget a second of those asked for (each ARP request or solicitation goes to every host of the link)", NULL},
	{"neighbor_replies_limited_total", XLT_COUNTER, ST(nbr_replies_limited), "ARP requests and neighbour solicitations for our addresses left unanswered past the per-worker budget of replies a second", NULL},
	{"ip_packets_in_total", XLT_COUNTER, ST(ip_in), "IPv4 packets received", NULL},
	{"ip_header_errors_total", XLT_COUNTER, ST(ip_header_errors), "IPv4 packets with a bad header or length", NULL},
	{"ip_checksum_errors_total", XLT_COUNTER, ST(ip_checksum_errors), "IPv4 header checksum errors", NULL},
	{"ip_fragments_dropped_total", XLT_COUNTER, ST(ip_fragments), "IPv4 fragments dropped (no reassembly)", NULL},
	{"ip_not_for_us_total", XLT_COUNTER, ST(ip_not_for_us), "IPv4 packets addressed elsewhere", NULL},
	{"ip_link_broadcast_dropped_total", XLT_COUNTER, ST(ip_link_bcast), "IP packets to a unicast address that came in a link-layer broadcast or multicast frame, dropped (RFC 1122 3.3.6)", NULL},
	{"ip_no_route_total", XLT_COUNTER, ST(ip_no_route), "packets with no route to their destination", NULL},
	{"ip_unknown_protocol_total", XLT_COUNTER, ST(ip_unknown_proto), "IPv4 packets of a protocol we do not serve", NULL},
	{"icmp_in_total", XLT_COUNTER, ST(icmp_in), "ICMP messages received", NULL},
	{"icmp_echo_replies_total", XLT_COUNTER, ST(icmp_echo_replies), "ICMP echo replies sent", NULL},
	{"icmp_errors_total", XLT_COUNTER, ST(icmp_errors), "malformed ICMP messages", NULL},
	{"icmp_refused_total", XLT_COUNTER, ST(icmp_refused), "ICMP and ICMPv6 messages neither answered nor passed to the kernel TAP: redirects, router discovery, timestamp and address mask requests, echo requests with a nonzero code, other types (IPv4: to a unicast address; ICMPv6: to any)", NULL},
	{"icmp_too_big_total", XLT_COUNTER, ST(icmp_too_big_in), "ICMP fragmentation-needed and ICMPv6 packet-too-big messages quoting one of our TCP connections", NULL},
	{"icmp_too_big_ignored_total", XLT_COUNTER, ST(icmp_too_big_ignored), "... of which ignored: a sequence number we did not send or the peer acknowledged (RFC 5927), or an MTU no lower than the connection's", NULL},
	{"tcp_pmtu_lowered_total", XLT_COUNTER, ST(tcp_pmtu_lowered), "connections whose segments shrank to a smaller path MTU (path MTU discovery)", NULL},
	{"ip6_packets_in_total", XLT_COUNTER, ST(ip6_in), "IPv6 packets received", NULL},
	{"ip6_header_errors_total", XLT_COUNTER, ST(ip6_header_errors), "IPv6 packets with a bad header, length or extension-header chain", NULL},
	{"ip6_not_for_us_total", XLT_COUNTER, ST(ip6_not_for_us), "IPv6 packets addressed elsewhere (or no IPv6 configured)", NULL},
	{"ip6_martians_total", XLT_COUNTER, ST(ip6_martians), "IPv6 packets from a multicast source or from our own address", NULL},
	{"ip6_extension_drops_total", XLT_COUNTER, ST(ip6_ext_dropped), "IPv6 fragments and routing headers with segments left, dropped", NULL},
	{"ip6_unknown_protocol_total", XLT_COUNTER, ST(ip6_unknown_proto), "IPv6 packets of a protocol we do not serve", NULL},
	{"ip6_tcp_refused_total", XLT_COUNTER, ST(ip6_tcp_refused), "TCP segments over IPv6 to one of our multicast groups (not a unicast address of ours), dropped", NULL},
	{"icmp6_in_total", XLT_COUNTER, ST(icmp6_in), "ICMPv6 messages received", NULL},
	{"icmp6_errors_total", XLT_COUNTER, ST(icmp6_errors), "malformed ICMPv6 messages (short, bad checksum)", NULL},
	{"icmp6_echo_replies_total", XLT_COUNTER, ST(icmp6_echo_replies), "ICMPv6 echo replies sent", NULL},
	{"nd_solicitations_total", XLT_COUNTER, ST(nd_ns_in), "IPv6 neighbour solicitations", "dir=in"},
	{"nd_solicitations_total", XLT_COUNTER, ST(nd_ns_out), "IPv6 neighbour solicitations", "dir=out"},
	{"nd_advertisements_total", XLT_COUNTER, ST(nd_na_in), "IPv6 neighbour advertisements", "dir=in"},
	{"nd_advertisements_total", XLT_COUNTER, ST(nd_na_out), "IPv6 neighbour advertisements", "dir=out"},
	{"nd_unresolved_drops_total", XLT_COUNTER, ST(nd_unresolved), "packets dropped waiting for an unanswered IPv6 neighbour", NULL},
	{"nd_entries", XLT_GAUGE, ST(nd_entries), "IPv6 neighbour cache entries", NULL},
	{"nd_queue_drops_total", XLT_COUNTER, ST(nd_queue_drops), "packets dropped, oldest first, because the worker's queue of packets awaiting IPv6 neighbour resolution was full", NULL},
	{"nd_queued", XLT_GAUGE, ST(nd_queued), "packets waiting for IPv6 neighbour resolution", NULL},
	{"nd_errors_total", XLT_COUNTER, ST(nd_errors), "neighbour discovery messages failing RFC 4861's checks", NULL},
	{"nd_conflicts_total", XLT_COUNTER, ST(nd_conflicts), "advertisements of one of our IPv6 addresses by another node", NULL},
	{"nd_dad_defended_total", XLT_COUNTER, ST(nd_dad_defended), "duplicate address probes for one of our IPv6 addresses, answered", NULL},
	{"nd_dad_rate_limited_total", XLT_COUNTER, ST(nd_dad_limited), "duplicate address probes for one of our IPv6 addresses not answered: over the worker's budget of 10 a second", NULL},
	{"nd_learn_refused_total", XLT_COUNTER, ST(nd_learn_refused), "IPv6 neighbour solicitations whose sender got no cache entry: its slots held neighbours in use", NULL},
	{"tcp_segments_in_total", XLT_COUNTER, ST(tcp_segments_in), "valid TCP segments received", NULL},
	{"tcp_segments_out_total", XLT_COUNTER, ST(tcp_segments_out), "TCP segments sent", NULL},
	{"tcp_bytes_in_total", XLT_COUNTER, ST(tcp_bytes_in), "TCP payload bytes received in order", NULL},
	{"tcp_bytes_out_total", XLT_COUNTER, ST(tcp_bytes_out), "TCP payload bytes sent (retransmissions included)", NULL},
	{"tcp_retransmits_total", XLT_COUNTER, ST(tcp_retransmits), "TCP segments retransmitted", NULL},
	{"tcp_fast_retransmits_total", XLT_COUNTER, ST(tcp_fast_retransmits), "fast retransmits (loss recovery entered)", NULL},
	{"tcp_rto_expiries_total", XLT_COUNTER, ST(tcp_rto_expiries), "retransmission timeouts", NULL},
	{"tcp_rsts_in_total", XLT_COUNTER, ST(tcp_rsts_in), "TCP resets received", NULL},
	{"tcp_rsts_out_total", XLT_COUNTER, ST(tcp_rsts_out), "TCP resets sent", NULL},
	{"tcp_rsts_rate_limited_total", XLT_COUNTER, ST(tcp_rsts_limited), "TCP resets not sent in reply to segments of no connection: over the worker's budget of 1000 a second", NULL},
	{"tcp_checksum_errors_total", XLT_COUNTER, ST(tcp_checksum_errors), "TCP segments with a bad checksum", NULL},
	{"tcp_header_errors_total", XLT_COUNTER, ST(tcp_header_errors), "TCP segments with a bad header, flags or options", NULL},
	{"tcp_connections_opened_total", XLT_COUNTER, ST(tcp_passive_opens), "TCP connections opened", "dir=passive"},
	{"tcp_connections_opened_total", XLT_COUNTER, ST(tcp_active_opens), "TCP connections opened", "dir=active"},
	{"tcp_connect_failures_total", XLT_COUNTER, ST(tcp_connects_failed), "active opens that failed", NULL},
	{"tcp_connections_closed_total", XLT_COUNTER, ST(tcp_closed), "TCP connections closed", NULL},
	{"tcp_connections_reset_total", XLT_COUNTER, ST(tcp_resets), "TCP connections ended by a reset", NULL},
	{"tcp_connections_timed_out_total", XLT_COUNTER, ST(tcp_timeouts), "TCP connections dropped because the peer stopped answering", NULL},
	{"tcp_connections_active", XLT_GAUGE, ST(tcp_active), "TCP connections established or closing", NULL},
	{"tcp_connections_time_wait", XLT_GAUGE, ST(tcp_time_wait), "TCP connections in TIME_WAIT", NULL},
	{"tcp_connections_syn_received", XLT_GAUGE, ST(tcp_syn_rcvd), "half-open TCP connections", NULL},
	{"tcp_syn_backlog_drops_total", XLT_COUNTER, ST(tcp_syn_drops), "SYNs dropped (no connection block, or a TIME_WAIT reuse with the half-open table full)", NULL},
	{"tcp_syncookies_sent_total", XLT_COUNTER, ST(tcp_syncookies_sent), "SYN-ACKs sent with a SYN cookie (the listener's share of the half-open table was full)", NULL},
	{"tcp_syncookies_validated_total", XLT_COUNTER, ST(tcp_syncookies_validated), "TCP connections made from a valid SYN cookie", NULL},
	{"tcp_syncookies_failed_total", XLT_COUNTER, ST(tcp_syncookies_failed), "ACKs to a listener sending SYN cookies whose cookie was invalid or expired", NULL},
	{"tcp_accept_rejects_total", XLT_COUNTER, ST(tcp_accept_rejects), "TCP connections refused by the session layer", NULL},
	{"tcp_zero_window_total", XLT_COUNTER, ST(tcp_zero_window_sent), "zero-window events", "dir=sent"},
	{"tcp_zero_window_total", XLT_COUNTER, ST(tcp_zero_window_rcvd), "zero-window events", "dir=received"},
	{"tcp_challenge_acks_total", XLT_COUNTER, ST(tcp_challenge_acks), "RFC 5961 challenge ACKs sent", NULL},
	{"tcp_acks_rate_limited_total", XLT_COUNTER, ST(tcp_acks_limited_conn), "ACKs to invalid segments and challenge ACKs not sent: 500 ms per connection, a budget per worker and second", "limit=connection"},
	{"tcp_acks_rate_limited_total", XLT_COUNTER, ST(tcp_acks_limited_worker), "ACKs to invalid segments and challenge ACKs not sent: 500 ms per connection, a budget per worker and second", "limit=worker"},
	{"tcp_paws_drops_total", XLT_COUNTER, ST(tcp_paws_drops), "segments dropped by PAWS (RFC 7323)", NULL},
	{"tcp_out_of_window_total", XLT_COUNTER, ST(tcp_out_of_window), "segments outside the receive window", NULL},
	{"tcp_out_of_order_segments_total", XLT_COUNTER, ST(tcp_ooo_segments), "segments queued out of order", NULL},
	{"tcp_out_of_order_drops_total", XLT_COUNTER, ST(tcp_ooo_drops), "out-of-order segments dropped (queue full)", NULL},
	{"tcp_out_of_order_expired_total", XLT_COUNTER, ST(tcp_ooo_expired), "times a connection dropped its out-of-order data because the hole before it stayed open too long", NULL},
	{"tcp_time_wait_reuse_total", XLT_COUNTER, ST(tcp_tw_reuse), "TIME_WAIT connections reused by a new SYN", NULL},
	{"tcp_keepalive_probes_total", XLT_COUNTER, ST(tcp_keepalive_probes), "keepalive probes sent", NULL},
	{"tcp_buffer_bytes", XLT_GAUGE, ST(tcp_buffer_bytes), "memory held by TCP connection buffers", NULL},
	{"exception_frames_total", XLT_COUNTER, ST(exc_to_kernel), "frames handed to the kernel TAP's ring by the worker, or sent out the port from it (worker 0)", "dir=to_kernel"},
	{"exception_frames_total", XLT_COUNTER, ST(exc_from_kernel), "frames handed to the kernel TAP's ring by the worker, or sent out the port from it (worker 0)", "dir=from_kernel"},
	{"exception_drops_total", XLT_COUNTER, ST(exc_rate_drops), "frames for the kernel TAP the worker dropped: over its share of kernel_tap_rate, the ring full, or of an EtherType the kernel is not given (besides IP and ARP only LLDP is; a VLAN tag never)", "reason=rate"},
	{"exception_drops_total", XLT_COUNTER, ST(exc_ring_drops), "frames for the kernel TAP the worker dropped: over its share of kernel_tap_rate, the ring full, or of an EtherType the kernel is not given (besides IP and ARP only LLDP is; a VLAN tag never)", "reason=ring"},
	{"exception_drops_total", XLT_COUNTER, ST(exc_type_drops), "frames for the kernel TAP the worker dropped: over its share of kernel_tap_rate, the ring full, or of an EtherType the kernel is not given (besides IP and ARP only LLDP is; a VLAN tag never)", "reason=ethertype"},
	{"exception_routing_frames_total", XLT_COUNTER, ST(exc_routing_to_kernel), "of the frames the worker handed to the kernel TAP's ring, those of routing protocols (VRRP, BGP, OSPF, BFD), which have a kernel_tap_rate of their own", NULL},
	{"exception_routing_drops_total", XLT_COUNTER, ST(exc_routing_rate_drops), "frames of routing protocols for the kernel TAP the worker dropped over its share of their own kernel_tap_rate", NULL},
	{"tcp_flow_peer_segments_total", XLT_COUNTER, ST(flow_peer_out), "TCP segments for a VIP that matched no connection here, passed to [eth] flow_peer (the gateway that held the VIP before)", NULL},
	{"tcp_flow_peer_unmatched_total", XLT_COUNTER, ST(flow_peer_unmatched), "TCP segments the other gateway passed here that matched no connection here either, dropped", NULL},
	{"tcp_local_address_resets_total", XLT_COUNTER, ST(local_addr_resets), "TCP connections reset because their local address left the kernel TAP (removed_addr_reset = 1)", NULL},
	{"tcp_rx_mbufs_pinned", XLT_GAUGE, ST(rx_pinned), "packet buffers TCP receive queues hold (payload kept in its frame)", NULL},
	{"tcp_rx_pin_copies_total", XLT_COUNTER, ST(rx_pin_copies), "in-order segments copied into chunks instead of kept in their frame", NULL},
	{"tcp_send_lent_bytes", XLT_GAUGE, ST(tx_lent_bytes), "bytes TCP send queues hold by reference in lent memory (the IB receive ring), not acknowledged yet", NULL},
	{"tcp_tx_mbufs_lent", XLT_GAUGE, ST(tx_lent_mbufs), "packet buffers of sent or queued frames that point into lent memory (the IB receive ring) and were not freed yet", NULL},
};
#undef ST
const unsigned eth_stack_n_metrics = sizeof(eth_stack_metrics) / sizeof(eth_stack_metrics[0]);

static const uint8_t bcast_mac[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static void *reserve(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

struct eth_stack *eth_stack_create(const struct eth_stack_conf *c)
{
	struct eth_stack *st;
	uint64_t rnd[5];
	uint32_t buckets = 1024;
	int ret;

	if (!c->pool || !c->addr || c->prefix > 32 || !c->n_workers || c->worker >= c->n_workers ||
	    c->n_workers > ETH_MAX_WORKERS || c->max_conns == 0 || c->mtu < 576 || !c->hooks ||
	    !c->hooks->accept || !c->hooks->route_put) {
		errno = EINVAL;
		return NULL;
	}
	st = aligned_alloc(alignof(struct eth_stack), sizeof(*st));
	if (!st)
		return NULL;
	memset(st, 0, sizeof(*st));
	STAILQ_INIT(&st->ev);
	STAILQ_INIT(&st->out);
	TAILQ_INIT(&st->tw);
	st->c = *c;
	st->netmask = c->prefix ? htonl(~0u << (32 - c->prefix)) : 0;
	st->flow_key.k0 = c->flow_key[0];
	st->flow_key.k1 = c->flow_key[1];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		ret = -EIO;
		goto err;
	}
	st->isn_key.k0 = rnd[0];
	st->isn_key.k1 = rnd[1];
	st->next_port = (uint16_t)(32768 + rnd[2] % 28232);
	st->ip_id = rnd[2] >> 32;
	st->arp_key.k0 = rnd[3];
	st->arp_key.k1 = rnd[4];
	st->syn_backlog = (c->syn_backlog + c->n_workers - 1) / c->n_workers;
	st->segs_stop = c->pool->size / (4 * c->n_workers);
	if (st->segs_stop > ETH_TXQ_SEGS_STOP)
		st->segs_stop = ETH_TXQ_SEGS_STOP;
	st->garp_pending = c->worker == 0;
	st->nd.v6 = true;
	eth_ipv6_init(st);
	eth_twheel_init(&st->wheel, 0);
	/* the configured buffers, plus what chunk rounding can add: up to two chunks per queue */
	ret = eth_chunk_pool_init(&st->chunks, (c->buffer_bytes ? c->buffer_bytes : 64ull << 20) +
						       (uint64_t)c->max_conns * 4 * ETH_CHUNK_SIZE);
	if (ret)
		goto err;
	st->tcbs_bytes = (size_t)c->max_conns * sizeof(struct eth_tcb);
	st->tcbs = reserve(st->tcbs_bytes);
	while (buckets < c->max_conns && buckets < (1u << 24))
		buckets <<= 1;
	st->htab_bytes = buckets * sizeof(st->htab[0]); /* zeroed: every chain empty */
	st->htab = reserve(st->htab_bytes);
	if (!st->tcbs || !st->htab) {
		ret = -ENOMEM;
		goto err;
	}
	st->hmask = buckets - 1;
	return st;
err:
	if (st->htab)
		munmap(st->htab, st->htab_bytes);
	if (st->tcbs)
		munmap(st->tcbs, st->tcbs_bytes);
	eth_chunk_pool_fini(&st->chunks);
	free(st);
	errno = -ret;
	return NULL;
}

static void drain_ring(struct rte_ring *r)
{
	void *m;

	while (rte_ring_sc_dequeue(r, &m) == 0)
		rte_pktmbuf_free(m);
}

void eth_stack_destroy(struct eth_stack *st)
{
	if (!st)
		return;
	for (uint32_t i = 0; i < st->tcb_carved; i++) {
		struct eth_tcb *t = &st->tcbs[i];
		/* buffers live in the pool that goes away below; frames a receive queue holds go back to
		 * the mempool (rcvq.c), which outlives the engine; references lent to a send queue go back */
		eth_rcvq_free(t);
		t->lis = NULL;
		if (t->s.ops)
			eth_sndq_free(t, true);
	}
	for (unsigned i = 0; i < ETH_MAX_LISTENERS; i++)
		if (st->listeners[i].port)
			eth_listener_user_put(st, st->listeners[i].user);
	eth_arp_flush(st);
	for (unsigned i = 0; i < ETH_MAX_WORKERS; i++) {
		if (st->from[i])
			drain_ring(st->from[i]);
		if (st->to[i]) {
			drain_ring(st->to[i]);
			rte_ring_free(st->to[i]);
		}
	}
	if (st->n_tx)
		rte_pktmbuf_free_bulk(st->txq, st->n_tx);
	munmap(st->htab, st->htab_bytes);
	munmap(st->tcbs, st->tcbs_bytes);
	eth_chunk_pool_fini(&st->chunks);
	/* frames pointing into lent memory may still sit in the port's TX ring, which is freed after
	 * the engines (main.c): their free callbacks count on st->stats, so the last of them frees st */
	st->destroyed = true;
	if (!xlt_counter_read(&st->stats.tx_lent_mbufs))
		free(st);
}

int eth_stack_link(struct eth_stack **stacks, unsigned n)
{
	/* the ring names' group number: written and read by whichever thread links a set of stacks (the
	 * control thread at start); atomic, so that no two links ever share ring names */
	static _Atomic unsigned group;
	unsigned g = atomic_fetch_add_explicit(&group, 1, memory_order_relaxed);
	char name[RTE_RING_NAMESIZE];

	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < n; j++) {
			struct rte_ring *r;

			if (i == j)
				continue;
			snprintf(name, sizeof(name), "eth%u_%u_%u", g, i, j);
			r = rte_ring_create(name, 1024, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
			if (!r)
				return -rte_errno;
			stacks[i]->to[j] = r;
			stacks[j]->from[i] = r;
		}
	return 0;
}

const struct eth_stack_stats *eth_stack_stats(const struct eth_stack *st)
{
	return &st->stats;
}

unsigned eth_stack_conns(const struct eth_stack *st)
{
	return st->n_conns;
}

struct rte_mbuf *eth_pkt_alloc(struct eth_stack *st)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(st->c.pool);

	if (!m)
		xlt_counter_add(&st->stats.nombuf, 1);
	return m;
}

/* IB copy buffers (eth_stack_copy_buf) count in their stack's copy_bufs until their last reference
 * goes, from whichever thread: the stack rides in the buffer's last bytes, which the copy is not
 * given. (The IB side puts every buffer before the engines are destroyed: gateway/daemon.c stops it
 * first.) */
static struct eth_stack **copybuf_stack(struct rte_mbuf *m)
{
	return (struct eth_stack **)((uint8_t *)m->buf_addr + m->buf_len - sizeof(struct eth_stack *));
}

static void copybuf_put(void *hold)
{
	struct rte_mbuf *m = hold;

	if (rte_mbuf_refcnt_read(m) == 1 || rte_mbuf_refcnt_update(m, -1) == 0) {
		atomic_fetch_sub_explicit(&(*copybuf_stack(m))->copy_bufs, 1, memory_order_relaxed);
		rte_mbuf_refcnt_set(m, 1);
		rte_pktmbuf_free_seg(m);
	}
}

static void copybuf_get(void *hold)
{
	rte_mbuf_refcnt_update(hold, 1);
}

static const struct xlt_hold_ops copybuf_hops = {.get = copybuf_get, .put = copybuf_put};

int eth_stack_copy_buf(struct eth_stack *st, struct xlt_seg *seg)
{
	struct rte_mbuf *m;

	/* at most an eighth of the pool among the workers, whatever the copies' peers do (frames kept
	 * by receive queues: half), and none once the pool is scarce */
	if (!st->copy_bufs_max) {
		uint32_t n = st->c.pool->size / (8 * st->c.n_workers);
		st->copy_bufs_max = n ? n : 1;
	}
	if (atomic_load_explicit(&st->copy_bufs, memory_order_relaxed) >= st->copy_bufs_max)
		return -ENOBUFS;
	if (eth_pool_scarce(st) || !(m = eth_pkt_alloc(st)))
		return -ENOMEM;
	atomic_fetch_add_explicit(&st->copy_bufs, 1, memory_order_relaxed);
	*copybuf_stack(m) = st;
	*seg = (struct xlt_seg){
	    .data = m->buf_addr,
	    .len = m->buf_len - (uint32_t)sizeof(struct eth_stack *),
	    .flags = XLT_SEG_DEVMEM | (st->rx_extmem ? XLT_SEG_EXTMEM : 0),
	    .hold = m,
	    .hops = &copybuf_hops,
	};
	return 0;
}

void eth_tx_frame(struct eth_stack *st, struct rte_mbuf *m)
{
	if (st->n_tx == ETH_TXQ_SIZE) {
		xlt_counter_add(&st->stats.tx_drops, 1);
		rte_pktmbuf_free(m);
		return;
	}
	st->txq_segs[st->n_tx] = m->nb_segs;
	st->n_tx_segs += m->nb_segs;
	st->txq[st->n_tx++] = m;
}

static void tx_flush(struct eth_stack *st)
{
	uint16_t sent;

	if (!st->n_tx)
		return;
	if (st->c.tx)
		sent = st->c.tx(st->c.tx_arg, st->txq, (uint16_t)st->n_tx);
	else if (st->c.port_id != UINT16_MAX)
		sent = rte_eth_tx_burst(st->c.port_id, st->c.queue, st->txq, (uint16_t)st->n_tx);
	else
		sent = 0;
	if (st->c.port_id == UINT16_MAX && !st->c.tx) {
		rte_pktmbuf_free_bulk(st->txq, st->n_tx); /* nowhere to send: a test without a sink */
		sent = (uint16_t)st->n_tx;
	}
	xlt_counter_add(&st->stats.frames_out, sent);
	for (unsigned i = 0; i < sent; i++)
		st->n_tx_segs -= st->txq_segs[i];
	st->n_tx -= sent;
	if (st->n_tx) {
		memmove(st->txq, st->txq + sent, st->n_tx * sizeof(st->txq[0]));
		memmove(st->txq_segs, st->txq_segs + sent, st->n_tx * sizeof(st->txq_segs[0]));
	}
}

uint64_t eth_flow_hash(const struct eth_stack *st, const struct xlt_ip *raddr, uint16_t rport, uint16_t lport)
{
	uint8_t w[sizeof(raddr->b) + 4];

	memcpy(w, raddr->b, sizeof(raddr->b));
	w[16] = (uint8_t)(rport >> 8);
	w[17] = (uint8_t)rport;
	w[18] = (uint8_t)(lport >> 8);
	w[19] = (uint8_t)lport;
	return eth_siphash(&st->flow_key, w, sizeof(w));
}

static void steer(struct eth_stack *st, unsigned owner, struct rte_mbuf *m);

/* The worker owning the connection an ICMP(v6) "too big" message quotes (IC: LEN bytes of the
 * message in the frame's first buffer); ours for any other message. (Its checks are pmtu.c's, on
 * the owner.) */
static unsigned quote_owner(const struct eth_stack *st, const uint8_t *ic, uint32_t len, bool v6)
{
	struct eth_icmp_quote q;

	if (v6 ? !eth_icmp6_quote(ic, len, &q) : !eth_icmp4_quote(ic, len, &q))
		return st->c.worker;
	return eth_flow_owner(st, eth_flow_hash(st, &q.remote, q.rport, q.lport));
}

/* The worker owning the frame's flow (ours for anything that is not a plain TCP packet, or an ICMP
 * error about one). */
static unsigned frame_owner(const struct eth_stack *st, const struct rte_mbuf *m)
{
	const struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *, RTE_ETHER_HDR_LEN);
	const struct rte_tcp_hdr *th;
	struct xlt_ip src;
	unsigned ihl;

	if (m->data_len < RTE_ETHER_HDR_LEN + sizeof(*ip) ||
	    (ip->next_proto_id != IPPROTO_TCP && ip->next_proto_id != IPPROTO_ICMP))
		return st->c.worker;
	ihl = (ip->version_ihl & 0xf) * 4u;
	if (ihl < sizeof(*ip) || m->data_len < RTE_ETHER_HDR_LEN + ihl + 4 ||
	    (ip->fragment_offset & rte_cpu_to_be_16(RTE_IPV4_HDR_OFFSET_MASK | RTE_IPV4_HDR_MF_FLAG)))
		return st->c.worker;
	if (ip->next_proto_id == IPPROTO_ICMP)
		return quote_owner(st, (const uint8_t *)ip + ihl, m->data_len - RTE_ETHER_HDR_LEN - ihl, false);
	th = (const struct rte_tcp_hdr *)((const uint8_t *)ip + ihl);
	src = xlt_ip_v4(ip->src_addr);
	return eth_flow_owner(st, eth_flow_hash(st, &src, rte_be_to_cpu_16(th->src_port),
						rte_be_to_cpu_16(th->dst_port)));
}

/* The same for an IPv6 frame: TCP behind the extension headers input skips. A chain (LRO: merged
 * segments) is steered like IPv4's: input takes one whose headers lie in its first buffer, so the
 * walk reads that buffer only, as input's does. */
unsigned eth_frame_owner6(const struct eth_stack *st, const struct rte_mbuf *m)
{
	const struct rte_ipv6_hdr *ip =
	    rte_pktmbuf_mtod_offset(m, const struct rte_ipv6_hdr *, RTE_ETHER_HDR_LEN);
	const struct rte_tcp_hdr *th;
	struct xlt_ip src;
	uint32_t plen, head, off;
	uint8_t nh;

	if (m->data_len < RTE_ETHER_HDR_LEN + sizeof(*ip))
		return st->c.worker;
	plen = rte_be_to_cpu_16(ip->payload_len);
	if (RTE_ETHER_HDR_LEN + sizeof(*ip) + plen > m->pkt_len)
		return st->c.worker; /* (bad: the input drops it) */
	head = m->data_len - (uint32_t)(RTE_ETHER_HDR_LEN + sizeof(*ip));
	if (head > plen)
		head = plen;
	nh = ip->proto;
	/* (the ports at OFF + 4 must lie in the first buffer too) */
	if (eth_ipv6_walk((const uint8_t *)(ip + 1), head, &nh, &off) || head - off < 4)
		return st->c.worker;
	if (nh == IPPROTO_ICMPV6)
		return quote_owner(st, (const uint8_t *)(ip + 1) + off, head - off, true);
	if (nh != IPPROTO_TCP)
		return st->c.worker;
	th = (const struct rte_tcp_hdr *)((const uint8_t *)(ip + 1) + off);
	memcpy(src.b, ip->src_addr, 16);
	return eth_flow_owner(st, eth_flow_hash(st, &src, rte_be_to_cpu_16(th->src_port),
						rte_be_to_cpu_16(th->dst_port)));
}

/* Hands a copy of M (not steered: received here) to every other worker, which learns from it only;
 * not to one whose ring is half full: it shares the ring with steered TCP, which matters more than a
 * neighbour message (that worker asks for the neighbour itself when it needs it). */
static void clone_to_others(struct eth_stack *st, struct rte_mbuf *m)
{
	for (unsigned i = 0; i < st->c.n_workers; i++) {
		struct rte_mbuf *c;
		if (i == st->c.worker)
			continue;
		if (rte_ring_free_count(st->to[i]) < rte_ring_get_capacity(st->to[i]) / 2) {
			xlt_counter_add(&st->stats.clones_skipped, 1);
			continue;
		}
		c = rte_pktmbuf_clone(m, st->c.pool);
		if (c)
			steer(st, i, c);
		else
			xlt_counter_add(&st->stats.nombuf, 1);
	}
}

static void steer(struct eth_stack *st, unsigned owner, struct rte_mbuf *m)
{
	if (rte_ring_sp_enqueue(st->to[owner], m)) {
		xlt_counter_add(&st->stats.steer_drops, 1);
		rte_pktmbuf_free(m);
		return;
	}
	xlt_counter_add(&st->stats.steered_out, 1);
}

/* The kernel keeps its own neighbour tables and answers for what it alone owns: with a TAP, it gets
 * a copy of every ARP and neighbour discovery frame that reaches us (ours answered here as well,
 * with the same MAC). */
static void exc_mirror(struct eth_stack *st, const struct rte_mbuf *m)
{
	struct rte_mbuf *c;

	if (!st->c.exc)
		return;
	c = rte_pktmbuf_copy(m, st->c.pool, 0, UINT32_MAX);
	if (!c)
		xlt_counter_add(&st->stats.nombuf, 1);
	else
		eth_exc_punt(st, c);
}

/* EtherTypes other than IPv4, IPv6 and ARP: the kernel gets LLDP (lldpd on the TAP) and nothing else.
 * Not a VLAN tag above all (802.1Q, 802.1ad, the old QinQ): a kernel without a device for VLAN 0 takes
 * a priority-tagged frame's tag off and handles what it carries as untagged, so an IP packet wrapped
 * in one would reach the kernel past every check the exception path makes (the router advertisements
 * and redirects it never passes, sources it refuses, the host's other addresses). Returns whether M
 * was taken (punted, or dropped by the path's limits). */
static bool other_punt(struct eth_stack *st, struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);

	if (!st->c.exc)
		return false;
	if (eh->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_LLDP)) {
		xlt_counter_add(&st->stats.exc_type_drops, 1);
		rte_pktmbuf_free(m);
		return true;
	}
	return eth_exc_punt(st, m);
}

/* STEERED: the frame came from another worker (already classified; ARP: learn only). */
static void rx_frame(struct eth_stack *st, struct rte_mbuf *m, bool steered)
{
	const struct rte_ether_hdr *eh;
	uint16_t type;
	bool l2_group;

	if (!steered)
		xlt_counter_add(&st->stats.frames_in, 1);
	/* a chain that fits its first buffer is made one; a bigger one (LRO: merged TCP segments) is kept
	 * as it is, with the headers checked to lie in the first segment */
	if (m->nb_segs > 1 && rte_pktmbuf_tailroom(m) >= m->pkt_len - m->data_len && rte_pktmbuf_linearize(m))
		goto drop;
	if (m->data_len < RTE_ETHER_HDR_LEN)
		goto drop;
	eh = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	if ((eh->src_addr.addr_bytes[0] & 1) || rte_is_zero_ether_addr(&eh->src_addr))
		goto drop; /* a group address as a sender (IEEE 802): no station sends that, and a reply to it
		            * would reach every host of the segment; nor the zero one, which no switch learns
		            * (a reply to it floods) */
	if (memcmp(eh->dst_addr.addr_bytes, st->c.mac, 6) && memcmp(eh->dst_addr.addr_bytes, bcast_mac, 6) &&
	    !eth_ipv6_mcast_mac_ours(st, eh->dst_addr.addr_bytes)) {
		/* other multicast (VRRP, OSPF): the kernel's, when it has a door (IPv6's checked as
		 * ipv6.c checks a group's: not every ICMPv6; IPv4's to a group address only) */
		if ((eh->dst_addr.addr_bytes[0] & 1) && !steered && !eth_ipv6_unicast_in_group(st, m) &&
		    (eh->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6)   ? eth_ipv6_exc_punt(st, m)
		     : eh->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ? eth_ipv4_group_punt(st, m)
		                                                               : other_punt(st, m)))
			return;
		goto drop;
	}
	type = rte_be_to_cpu_16(eh->ether_type);
	if (type == RTE_ETHER_TYPE_IPV6) {
		/* (counted where it came in: a steered frame is TCP for its owner, or a clone of
		 * neighbour discovery) */
		bool nd = st->c.prefix6 && eth_ipv6_is_nd(m);

		if (!steered)
			xlt_counter_add(&st->stats.ip6_in, 1);
		if (!steered && eth_ipv6_unicast_in_group(st, m))
			goto drop;
		if (!steered && nd && eth_nd_for_kernel(st, m))
			exc_mirror(st, m);
		if (!steered && st->c.n_workers > 1 && st->c.prefix6) {
			unsigned owner;

			if (nd) {
				/* every worker's neighbour cache learns, from what passes the checks only */
				if (eth_ipv6_nd_learnable(st, m))
					clone_to_others(st, m);
			} else if ((owner = eth_frame_owner6(st, m)) != st->c.worker) {
				steer(st, owner, m);
				return;
			}
		}
		/* (echo and the answers to neighbour discovery: by whichever worker got the request) */
		eth_ipv6_input(st, m, steered && nd);
		return;
	}
	if (type == RTE_ETHER_TYPE_ARP) {
		if (!steered && eth_arp_for_kernel(st, m))
			exc_mirror(st, m);
		if (!steered && st->c.n_workers > 1)
			clone_to_others(st, m);
		rte_pktmbuf_adj(m, RTE_ETHER_HDR_LEN);
		eth_arp_input(st, m, steered);
		return;
	}
	if (type != RTE_ETHER_TYPE_IPV4) {
		if (!steered && other_punt(st, m))
			return;
		goto drop;
	}
	if (!steered && st->c.n_workers > 1) {
		unsigned owner = frame_owner(st, m);
		if (owner != st->c.worker) {
			steer(st, owner, m);
			return;
		}
	}
	l2_group = eh->dst_addr.addr_bytes[0] & 1; /* (the broadcast, or one of our IPv6 groups) */
	rte_pktmbuf_adj(m, RTE_ETHER_HDR_LEN);
	eth_ipv4_input(st, m, l2_group);
	return;
drop:
	xlt_counter_add(&st->stats.frames_dropped, 1);
	rte_pktmbuf_free(m);
}

void eth_stack_set_locals(struct eth_stack *st, const struct eth_local_set *ls)
{
	st->locals = ls;
	if (st->c.worker != 0 || !ls || ls->gen == st->locals_gen)
		return;
	/* a new set: tell the segment where its addresses are now (RFC 5227 announcements) */
	st->locals_gen = ls->gen;
	for (uint32_t i = 0; i < ls->n; i++)
		if (ls->a[i].state != ETH_LOCAL_UP)
			continue;
		else if (xlt_ip_is_v4(&ls->a[i].addr))
			eth_arp_announce_addr(st, xlt_ip_to_v4(&ls->a[i].addr));
		else
			eth_ipv6_announce_addr(st, ls->a[i].addr.b);
}

void eth_stack_input(struct eth_stack *st, struct rte_mbuf **pkts, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		rx_frame(st, pkts[i], false);
}

/* Fires the events collected since the last round. Callbacks may call any stream op, which can
 * queue more events (handled in this same loop) or release a connection (freed after the round). */
static unsigned dispatch(struct eth_stack *st)
{
	struct eth_tcb *t;
	unsigned n = 0;

	while ((t = STAILQ_FIRST(&st->ev))) {
		struct xlt_stream_events *ev = &t->s.ev;
		unsigned e = t->ev;

		STAILQ_REMOVE_HEAD(&st->ev, evlink);
		t->on_ev = false;
		t->ev = 0;
		n++;
		if (t->released)
			continue;
		if (e & ETH_EV_ACCEPT) {
			t->accepted = true;
			if (st->c.hooks->accept(st->c.cb_arg, t->lis->user, &t->s))
				eth_tcp_reject(&t->s);
			if (t->released)
				continue;
			if (eth_rcvq_len(t) || t->fin_rcvd)
				e |= ETH_EV_READABLE; /* data that came with or after the handshake */
		}
		if ((t->passive && !t->accepted))
			continue;
		if ((e & ETH_EV_CONNECTED) && ev->on_connected)
			ev->on_connected(ev->arg);
		if (t->released)
			continue;
		if ((e & ETH_EV_READABLE) && ev->on_readable)
			ev->on_readable(ev->arg);
		if (t->released)
			continue;
		if (t->s.peer_done && !t->eof_told) {
			t->eof_told = true;
			eth_tcb_check_done(t); /* may queue on_closed, handled later in this loop */
		}
		if ((e & ETH_EV_SENT) && t->sndq.sent_due) {
			/* lent bytes acknowledged (sndq.c): their space goes back at the source now */
			size_t sent = t->sndq.sent_due;

			t->sndq.sent_due = 0;
			if (ev->on_sent)
				ev->on_sent(ev->arg, sent);
			if (t->released)
				continue;
		}
		if ((e & ETH_EV_WRITABLE) && ev->on_writable && !t->s.local_done)
			ev->on_writable(ev->arg);
		if (t->released)
			continue;
		if ((e & ETH_EV_CLOSED) && ev->on_closed)
			ev->on_closed(ev->arg, t->close_err);
	}
	return n;
}

/* Lets every connection waiting to send produce its segments while the device queue has room. One
 * that fills it lists itself again (tcp_out.c); those the device had no room for this time go first
 * next round, ahead of it: a connection whose peer takes all it sends would otherwise fill the queue
 * first round after round, and the others on the worker would send nothing, not even their
 * retransmissions, until their timeouts gave up. */
static unsigned flush_output(struct eth_stack *st)
{
	STAILQ_HEAD(, eth_tcb) waiting = STAILQ_HEAD_INITIALIZER(waiting);
	struct eth_tcb *list = STAILQ_FIRST(&st->out), *t;
	unsigned n = 0;

	STAILQ_INIT(&st->out);
	while ((t = list)) {
		list = STAILQ_NEXT(t, outlink);
		t->on_out = false;
		if (t->state == ETH_TCP_CLOSED)
			continue;
		if (eth_tx_tcp_full(st)) {
			t->on_out = true; /* the device is behind: first next round */
			STAILQ_INSERT_TAIL(&waiting, t, outlink);
			continue;
		}
		eth_tcp_output(t);
		n++;
	}
	STAILQ_CONCAT(&waiting, &st->out);
	STAILQ_CONCAT(&st->out, &waiting);
	return n;
}

static void reap(struct eth_stack *st)
{
	struct eth_tcb *t;

	while ((t = SLIST_FIRST(&st->reap))) {
		SLIST_REMOVE_HEAD(&st->reap, reaplink);
		eth_tcb_free(t);
	}
}

unsigned eth_stack_rx(struct eth_stack *st, uint64_t now_ns)
{
	struct rte_mbuf *pkts[ETH_RX_BURST];
	unsigned work = 0;
	uint16_t n;

	st->now_ns = now_ns;
	st->now_ms = now_ns / 1000000;
	if (!st->started_ms) {
		st->started_ms = st->now_ms;
		st->wheel.now = st->now_ms;
		st->next_arp_tick_ms = st->now_ms;
	}
	if (st->c.port_id != UINT16_MAX) {
		n = rte_eth_rx_burst(st->c.port_id, st->c.queue, pkts, ETH_RX_BURST);
		for (uint16_t i = 0; i < n; i++)
			rx_frame(st, pkts[i], false);
		work += n;
	}
	for (unsigned w = 0; w < st->c.n_workers; w++) {
		if (!st->from[w])
			continue;
		n = (uint16_t)rte_ring_sc_dequeue_burst(st->from[w], (void **)pkts, ETH_RX_BURST, NULL);
		for (uint16_t i = 0; i < n; i++)
			rx_frame(st, pkts[i], true);
		work += n;
	}
	work += eth_exc_worker_rx(st);
	work += eth_twheel_run(&st->wheel, st->now_ms, eth_tcp_timer_fire, st);
	if (st->now_ms >= st->next_arp_tick_ms) {
		st->next_arp_tick_ms = st->now_ms + 100;
		eth_arp_tick(st);
	}
	if (st->garp_pending) {
		st->garp_pending = false;
		eth_arp_announce(st);
		eth_ipv6_announce(st);
	}
	return work;
}

unsigned eth_stack_relay(struct eth_stack *st)
{
	return dispatch(st);
}

unsigned eth_stack_flush(struct eth_stack *st)
{
	unsigned work = 0;

	for (int round = 0; round < 4 && (!STAILQ_EMPTY(&st->out) || st->n_tx); round++) {
		work += flush_output(st);
		tx_flush(st);
		if (eth_tx_tcp_full(st))
			break; /* the device is behind: try again next round */
	}
	reap(st);
	/* events queued after this round's relay (another engine's session aborted or closed one of
	 * ours) fire in the next round: no sleep before it */
	return work + !STAILQ_EMPTY(&st->ev);
}

unsigned eth_stack_poll(struct eth_stack *st, uint64_t now_ns)
{
	unsigned work = eth_stack_rx(st, now_ns);

	work += eth_stack_relay(st);
	return work + eth_stack_flush(st);
}
