/* Internal interfaces between the engine's files (eth_side only).
 *
 *   stack.c     instance life, receive demux and steering, transmit queue, event dispatch, the poll
 *   arp.c       neighbour caches (ARP and IPv6's), requests with a pending queue, replies, gratuitous ARP
 *   ipv4.c      IPv4 validation and output routing; ICMP echo
 *   ipv6.c      IPv6 validation, extension headers and output routing; ICMPv6 echo, neighbour discovery
 *   tcp_conn.c  connection blocks, table, listeners, connect, the stream ops, state bookkeeping
 *   tcp_in.c    segment arrival (RFC 9293 3.10.7 with RFC 5961, 7323, 2018, 5681, 6582), SYN cookies
 *   syncookie.c the cookies themselves (pure: encoding and checking)
 *   tcp_out.c   segment building, output decisions, resets
 *   tcp_timer.c timers, RTT estimation (RFC 6298), keepalive, persist
 *   pmtu.c      path MTU discovery: ICMP "fragmentation needed" / ICMPv6 "packet too big" for our TCP
 *   exception.c the kernel TAP's rings and rate limits (exception.h): what the engine punts to it
 * Frames handed between them always start at the IP header (the Ethernet header is stripped on
 * input and prepended by arp.c on output). Every function here runs on the instance's worker. */
#ifndef ETH_ENGINE_H
#define ETH_ENGINE_H

#include <rte_ip.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>

#include "engine-t.h"
#include "local-t.h"
#include "../translate/counter.h"
#include "../translate/ip.h"

/* A segment of connection T sent again: the instance's counter and T's own (access log) */
#define ETH_REXMIT(t)                                                                                        \
	do {                                                                                                 \
		xlt_counter_add(&(t)->st->stats.tcp_retransmits, 1);                                         \
		(t)->n_rexmit++;                                                                             \
	} while (0)

#define ETH_TCP_RTO_MIN_MS  200u   /* Linux's floor; RFC 6298 allows a lower one than its 1 s */
#define ETH_TCP_RTO_MAX_MS  60000u
#define ETH_TCP_RTO_INIT_MS 1000u  /* RFC 6298 2.1 */
#define ETH_TCP_DELACK_MS   40u
#define ETH_TCP_SYNACK_RETRIES 5
#define ETH_TCP_SYNACK_RETRIES_PRESSED 2 /* while the listener's share of half-open blocks fills */
#define ETH_TCP_PRESS_HOLD_MS 8000u	 /* ... and this long after (the 7 s of two retries, and some) */
#define ETH_TCP_INIT_CWND_SEGS 10  /* RFC 6928 */
#define ETH_TCP_CHALLENGE_PER_S 10 /* challenge ACKs per connection and second (RFC 5961 10) */
#define ETH_TCP_RST_REPLIES_PER_S 1000 /* resets to segments of no connection per worker and second */
#define ETH_ND_DAD_DEFEND_PER_S   10   /* advertisements to all nodes defending our addresses, the same */
#define ETH_NBR_RESOLVE_PER_S     1000 /* neighbours first asked for to send a reply (eth_nbr_output), the same */
#define ETH_NBR_REPLY_PER_S       1000 /* ARP replies and solicited advertisements, the same */

/* stack.c */
struct rte_mbuf *eth_pkt_alloc(struct eth_stack *st);
/* Queues a complete frame for the device; frees it (counted) when the queue is full. */
void eth_tx_frame(struct eth_stack *st, struct rte_mbuf *m);
static inline unsigned eth_tx_room(const struct eth_stack *st)
{
	return ETH_TXQ_SIZE - st->n_tx;
}
/* Whether TCP must stop producing segments until the device takes frames: the queue's frames
 * (ETH_TXQ_TCP_STOP, room kept for ACKs and resets) or their mbufs (the port's pool is shared with
 * the RX rings and every worker) */
static inline bool eth_tx_tcp_full(const struct eth_stack *st)
{
	return st->n_tx > ETH_TXQ_TCP_STOP || st->n_tx_segs > st->segs_stop;
}
/* The keyed hash of a flow from RADDR (either family, IPv4 mapped: one code path) and its ports: it
 * picks the owning worker and the table bucket, the same on every worker. */
uint64_t eth_flow_hash(const struct eth_stack *st, const struct xlt_ip *raddr, uint16_t rport,
                       uint16_t lport);
static inline unsigned eth_flow_owner(const struct eth_stack *st, uint64_t h)
{
	return st->c.n_workers > 1 ? (unsigned)((h >> 32) % st->c.n_workers) : 0;
}
/* The worker owning the IPv6 frame M (at its Ethernet header; a chain too): the flow's owner for TCP,
 * else ST's own worker. (Exported for the unit test: it runs one worker.) */
unsigned eth_frame_owner6(const struct eth_stack *st, const struct rte_mbuf *m);

bool eth_ipv6_ours(const struct eth_stack *st, const uint8_t *a);
/* Whether A (either family) is ours: ETH_LOCAL_UP ([eth] address, address6 or the link-local one, or
 * on the kernel TAP), ETH_LOCAL_GONE (it left the TAP) or ETH_LOCAL_NONE. */
static inline unsigned eth_local_state_ip(const struct eth_stack *st, const struct xlt_ip *a)
{
	const struct eth_local_set *ls = st->locals;

	if (xlt_ip_is_v4(a) ? xlt_ip_to_v4(a) == st->c.addr : eth_ipv6_ours(st, a->b))
		return ETH_LOCAL_UP;
	for (uint32_t i = 0; ls && i < ls->n; i++)
		if (xlt_ip_eq(&ls->a[i].addr, a))
			return ls->a[i].state;
	return ETH_LOCAL_NONE;
}
/* The same for IPv4 ADDR (network order). */
static inline unsigned eth_local_state(const struct eth_stack *st, uint32_t addr)
{
	struct xlt_ip a = xlt_ip_v4(addr);

	if (addr == st->c.addr)
		return ETH_LOCAL_UP;
	return st->locals && st->locals->n ? eth_local_state_ip(st, &a) : ETH_LOCAL_NONE;
}

/* exception.c: hands frame M (starting at its Ethernet header; _l3: at its IP header, the Ethernet
 * header still in front) to the kernel TAP, within this worker's rate. Returns false, M untouched,
 * when there is no TAP; true when M was taken (queued, or dropped and counted). */
bool eth_exc_punt(struct eth_stack *st, struct rte_mbuf *m);
bool eth_exc_punt_l3(struct eth_stack *st, struct rte_mbuf *m);
/* exception.c: eth_exc_fill_l4_cksum for M whose IP header (IPv6: V6) comes first: a segment the
 * flow peer gets (ipv4.c, ipv6.c). */
void eth_fill_l4_cksum_ip(struct rte_mbuf *m, bool v6);

/* arp.c */
void eth_arp_input(struct eth_stack *st, struct rte_mbuf *m, bool learn_only);
/* Whether the kernel behind the TAP gets a copy of ARP frame M (Ethernet header first): not when it
 * gives [eth] gateway another MAC than the one pinned (what eth_arp_input ignores: the kernel's own
 * flows, BGP and VRRP, reach the gateway by its own ARP entry, which such a claim would re-point),
 * nor when it asks for an address the TAP does not hold (the kernel would answer for any address of
 * the host with the gateway's MAC where arp_ignore could not be set: systemd's ProtectKernelTunables);
 * a gratuitous request (a neighbour announcing itself) goes. */
bool eth_arp_for_kernel(struct eth_stack *st, const struct rte_mbuf *m);
/* The same for an ND frame M (Ethernet header first, eth_ipv6_is_nd): not an advertisement of
 * [eth] gateway6, nor a solicitation from it, that gives it another link-layer address than the one
 * pinned. */
bool eth_nd_for_kernel(struct eth_stack *st, const struct rte_mbuf *m);
/* Whether IP's entry is pinned (the gateway), resolved, and at another MAC than MAC: a claim the
 * engine ignores, which the kernel behind the TAP must not see either. */
bool eth_nbr_pinned_elsewhere(struct eth_stack *st, const struct xlt_ip *ip, const uint8_t *mac);
/* Whether IP's entry is resolved (reachable or stale) at MAC: a neighbour known before. */
bool eth_nbr_known(struct eth_stack *st, const struct xlt_ip *ip, const uint8_t *mac);
/* Whether a reply to a neighbour's request (ARP reply, solicited advertisement) may go now: always
 * to a requester KNOWN (eth_nbr_known, asked before its request taught anything: the router, the
 * clients traffic goes to), else at most ETH_NBR_REPLY_PER_S a second per worker (each is sent
 * where the requester says, whoever it claims to be). */
bool eth_nbr_reply_ok(struct eth_stack *st, bool known);
/* Sends M (starting at the IP header) to the neighbour NEXTHOP (IPv4 or IPv6: the family's cache),
 * resolving it first if needed. REPLY: M answers a packet that opened nothing of ours (an echo, a
 * SYN-ACK or a reset to a segment that came in), whose source a peer chooses: a reply that needs a
 * neighbour asked for anew takes one of ETH_NBR_RESOLVE_PER_S a second, or is dropped (counted). */
void eth_nbr_output(struct eth_stack *st, struct rte_mbuf *m, const struct xlt_ip *nexthop, bool reply);
void eth_arp_output(struct eth_stack *st, struct rte_mbuf *m, uint32_t nexthop, bool reply);
/* Neighbour discovery feeding the IPv6 cache (ipv6.c calls them with checked messages): a
 * solicitation to us from on-link SRC with its link-layer address SLL makes or refreshes SRC's entry;
 * an advertisement of TARGET updates an existing entry only (RFC 4861 7.2.5; TLL may be NULL).
 * The latter returns false for an unsolicited claim on the pinned gateway6 (ignored: an error). */
void eth_nd_learn_solicit(struct eth_stack *st, const uint8_t *src, const uint8_t *sll, bool learn_only);
bool eth_nd_learn_advert(struct eth_stack *st, const uint8_t *target, const uint8_t *tll, bool solicited,
                         bool override, bool learn_only);
void eth_arp_tick(struct eth_stack *st);
void eth_arp_announce(struct eth_stack *st);
/* Gratuitous ARP for ADDR, one of ours (an address the kernel TAP gained). */
void eth_arp_announce_addr(struct eth_stack *st, uint32_t addr);
void eth_arp_flush(struct eth_stack *st);

/* ipv4.c */
void eth_ipv4_input(struct eth_stack *st, struct rte_mbuf *m, bool l2_group);
/* An IPv4 frame M (Ethernet header first) to a link-layer group that is not ours (VRRP, OSPF): to the
 * kernel TAP when it is to an IPv4 group or broadcast address, else dropped and counted (unicast in a
 * group frame, RFC 1122 3.3.6). Returns whether M was taken (false: no TAP; M is still the caller's). */
bool eth_ipv4_group_punt(struct eth_stack *st, struct rte_mbuf *m);
/* Passes M (at its IP header), a TCP segment for one of the kernel TAP's addresses that has no
 * connection here, to [eth] flow_peer, marked so that the peer never passes it back; one the peer
 * passed here (marked) is dropped and counted. Returns whether M was taken; false (M untouched) when
 * it is not for the peer: no peer, the primary address, a chain or a frame past the MTU. */
bool eth_ipv4_to_flow_peer(struct eth_stack *st, struct rte_mbuf *m);
/* Whether M (at its IPv4 header) is marked as passed here by the flow peer. */
bool eth_ipv4_flow_peer_marked(const struct rte_mbuf *m);
/* Whether frame M (at its Ethernet header) is IPv6 to a unicast address in a link-layer group or
 * broadcast frame: as IPv4's (RFC 1122 3.3.6), dropped, counted here (one frame reaching every
 * host of the segment, or both gateways of a pair, addressed to one; the kernel behind the TAP
 * would take it past every check). */
bool eth_ipv6_unicast_in_group(struct eth_stack *st, const struct rte_mbuf *m);
/* The same for IPv6 (M starts at the IPv6 header), to [eth] flow_peer6. */
bool eth_ipv6_to_flow_peer(struct eth_stack *st, struct rte_mbuf *m);
bool eth_ipv6_flow_peer_marked(const struct rte_mbuf *m);
/* IPv6 (ipv6.c): M starts at its Ethernet header. LEARN_ONLY: a neighbour discovery message cloned
 * from the worker that received it (stack.c): only the neighbour cache takes it, nothing is answered
 * or counted. */
#define ETH_IP6_MAX_EXT 8 /* extension headers one packet may carry before its payload */
void eth_ipv6_init(struct eth_stack *st);
void eth_ipv6_input(struct eth_stack *st, struct rte_mbuf *m, bool learn_only);
/* Walks the extension-header chain of the IPv6 payload P (PLEN bytes, first header NH) as input
 * does: returns 0 with *NH the upper-layer protocol at *OFF, or -1 (a chain input drops). */
int eth_ipv6_walk(const uint8_t *p, uint32_t plen, uint8_t *nh, uint32_t *off);
/* Whether the IPv6 frame M (at its Ethernet header, one buffer) is a neighbour solicitation or
 * advertisement every worker's cache should see. */
bool eth_ipv6_is_nd(const struct rte_mbuf *m);
/* eth_exc_punt for the IPv6 frame M (at its Ethernet header) the kernel TAP gets whole (a group of
 * the kernel's, all IPv6 without address6), less ICMPv6 the kernel must not take from the wire
 * (ipv6.c: icmp6_for_kernel: router discovery, redirects...), counted in icmp_refused, and extension
 * headers we cannot walk in its first buffer (ip6_header_errors): those are freed. False: no TAP. */
bool eth_ipv6_exc_punt(struct eth_stack *st, struct rte_mbuf *m);
/* Whether that message (M, one buffer) would teach a neighbour cache: it passes RFC 4861's checks
 * (hop limit 255, code 0, checksum), a solicitation is for one of our addresses from an on-link source
 * with its link-layer address, an advertisement of another node's address carries the target's. Only
 * such a message is worth a copy for every other worker (stack.c). */
bool eth_ipv6_nd_learnable(const struct eth_stack *st, const struct rte_mbuf *m);
/* The neighbour carrying traffic to DST: on-link (link-local or address6's prefix) DST itself, else
 * [eth] gateway6. False: no route (no IPv6, or off-link without gateway6). */
bool eth_ipv6_nexthop(const struct eth_stack *st, const struct xlt_ip *dst, struct xlt_ip *nh);
/* Our source address for DST: the link-local one for a link-local DST, else address6. */
void eth_ipv6_src_for(const struct eth_stack *st, const struct xlt_ip *dst, struct xlt_ip *src);
/* Whether A is one of our unicast IPv6 addresses (address6, the link-local). */
bool eth_ipv6_ours(const struct eth_stack *st, const uint8_t *a);
/* Fills the IPv6 header IP for PAYLOAD bytes of PROTO from SRC to DST, hop limit 64, FLOW the label. */
void eth_ipv6_fill(struct rte_ipv6_hdr *ip, const struct xlt_ip *src, const struct xlt_ip *dst, uint8_t proto,
                   uint16_t payload, uint32_t flow);
/* A neighbour solicitation for TARGET: to its solicited-node group, or (DMAC not NULL) unicast to
 * DMAC (a re-check of a known neighbour). */
void eth_nd_solicit(struct eth_stack *st, const uint8_t *target, const uint8_t *dmac);
/* Routes the IP packet M (either family, at its IP header) to DST's next hop; no route: dropped and
 * counted (ip_no_route). REPLY: as eth_nbr_output's. */
void eth_ip_send(struct eth_stack *st, struct rte_mbuf *m, const struct xlt_ip *dst, bool reply);
bool eth_ipv6_mcast_mac_ours(const struct eth_stack *st, const uint8_t *mac);
void eth_ipv6_announce(struct eth_stack *st);
/* An unsolicited neighbour advertisement of A (an address the kernel TAP gained) to all-nodes. */
void eth_ipv6_announce_addr(struct eth_stack *st, const uint8_t *a);
/* Whether A (network order) is the broadcast address of [eth] address's subnet (a /31 or a /32
 * has none). */
bool eth_ipv4_subnet_bcast(const struct eth_stack *st, uint32_t a);
/* The neighbour that carries traffic to DST (network order), or 0 when unreachable. */
uint32_t eth_ipv4_nexthop(const struct eth_stack *st, uint32_t dst);
/* Fills the IPv4 header at the start of M for PAYLOAD bytes of PROTO from SRC (one of ours) to DST
 * and sends it (REPLY: as eth_nbr_output's). */
void eth_ipv4_output_src(struct eth_stack *st, struct rte_mbuf *m, uint32_t src, uint32_t dst, uint8_t proto,
                         uint16_t payload, bool reply);
void eth_ipv4_fill(struct eth_stack *st, struct rte_ipv4_hdr *ip, uint32_t dst, uint8_t proto, uint16_t payload);
/* The same from source address SRC (one of ours), for a packet of no connection. */
void eth_ipv4_fill_src(struct eth_stack *st, struct rte_ipv4_hdr *ip, uint32_t src, uint32_t dst,
                       uint8_t proto, uint16_t payload);
/* The same with identification ID (a connection's own: eth_tcb.ip_id). */
void eth_ipv4_fill_id(struct rte_ipv4_hdr *ip, uint32_t src, uint32_t dst, uint8_t proto, uint16_t payload,
                      uint16_t id);
/* The identification of a packet to DST outside any connection: it reveals nothing of the
 * worker's other traffic. */
uint16_t eth_ipv4_id(struct eth_stack *st, uint32_t dst);

/* tcp_conn.c */
struct eth_tcb *eth_tcb_alloc(struct eth_stack *st);
void eth_tcb_free(struct eth_tcb *t);
/* The connection of the 4-tuple (LADDR: one of our addresses, NULL: any of them), H its flow hash
 * (eth_flow_hash: of the other three, so one chain holds the tuple on each of our addresses). */
struct eth_tcb *eth_tcb_lookup(struct eth_stack *st, const struct xlt_ip *laddr, const struct xlt_ip *raddr,
                               uint16_t rport, uint16_t lport, uint64_t h);
void eth_tcb_hash(struct eth_tcb *t, uint64_t h);
void eth_tcb_set_state(struct eth_tcb *t, enum eth_tcp_state s);
/* Leaves the table and the timers, state CLOSED (the stream is untouched). */
void eth_tcb_detach(struct eth_tcb *t);
/* Ends the connection now with ERR for on_closed (after a reset, a timeout or an abort). */
void eth_tcb_close(struct eth_tcb *t, int err);
/* The orderly end: fires on_closed(0) once both directions are done and all data was consumed. */
void eth_tcb_check_done(struct eth_tcb *t);
void eth_tcb_event(struct eth_tcb *t, unsigned ev);
void eth_tcb_output_later(struct eth_tcb *t);
struct eth_listener *eth_listener_find(struct eth_stack *st, uint16_t port);
void eth_listener_put(struct eth_stack *st, struct eth_listener *l);
/* Gives back USER, a listener's route reference (hooks->route_put). */
void eth_listener_user_put(struct eth_stack *st, void *user);
/* Half-open connections one open listener may keep (its share of the instance's syn_backlog). */
uint32_t eth_listener_share(const struct eth_stack *st);
/* Whether L's share (or the instance's table) is half full now: its SYN-ACKs are retried less. */
bool eth_listener_pressed(const struct eth_stack *st, const struct eth_listener *l);
/* How many times the SYN-ACK of half-open T is sent again before T is given up. */
unsigned eth_tcp_synack_retries(const struct eth_tcb *t);
/* RFC 6528 over the full addresses of either family and the ports. */
uint32_t eth_tcp_isn(struct eth_stack *st, const struct xlt_ip *raddr, const struct xlt_ip *laddr,
                     uint16_t rport, uint16_t lport);
/* What a connection with RADDR:RPORT adds to our clock in its TSval (a cookie SYN-ACK too). */
uint32_t eth_tcp_ts_offset(const struct eth_stack *st, const struct xlt_ip *raddr, uint16_t rport);
uint8_t eth_tcp_wscale_for(uint32_t rbuf);
void eth_tcb_init_params(struct eth_tcb *t, const struct eth_tcp_params *p);
void eth_tcb_set_mss(struct eth_tcb *t);

/* What an ICMP error quotes of a TCP segment we sent (pmtu.c): our end, the peer's, its sequence
 * number, and the MTU the message reports. */
struct eth_icmp_quote {
	struct xlt_ip local, remote;
	uint16_t lport, rport;
	uint32_t seq;
	uint32_t mtu;
};
/* Reads an ICMP "fragmentation needed" (IC: the ICMP header, LEN bytes of message) or an ICMPv6
 * "packet too big" quoting TCP into Q. Returns false for any other message or a quote too short. */
bool eth_icmp4_quote(const uint8_t *ic, uint32_t len, struct eth_icmp_quote *q);
bool eth_icmp6_quote(const uint8_t *ic, uint32_t len, struct eth_icmp_quote *q);
/* Q's connection learns the smaller path MTU, when the message passes RFC 5927's checks. Returns
 * false when Q matches no connection of ours (the message may be the kernel's), true when it was
 * taken or ignored. */
bool eth_pmtu_input(struct eth_stack *st, const struct eth_icmp_quote *q, bool v6);
/* T's t_pmtu came: the flight goes again at the MSS lowered since it last went, if bytes are still in
 * flight (tcp_timer.c). */
void eth_pmtu_resend_due(struct eth_tcb *t);
extern const struct xlt_stream_ops eth_tcp_stream_ops;

/* tcp_in.c */
/* A TCP segment over IPv4 (M at its IP header, checked) ... */
void eth_tcp_input(struct eth_stack *st, struct rte_mbuf *m, struct rte_ipv4_hdr *ip);
/* ... or over IPv6: M at its IPv6 header IP, the TCP header L4OFF bytes into M (past the extension
 * headers), TLEN bytes of TCP; for address6 or the link-local only. */
void eth_tcp_input6(struct eth_stack *st, struct rte_mbuf *m, const struct rte_ipv6_hdr *ip, uint32_t l4off,
                    uint32_t tlen);
/* The out-of-order deadline (t_ooo) passed: drops T's out-of-order data if its hole is still open. */
void eth_tcp_ooo_expire(struct eth_tcb *t);

/* tcp_out.c */
/* Sends what the connection owes: handshake, data within the windows, FIN, ACKs, probes. */
void eth_tcp_output(struct eth_tcb *t);
/* One segment of T: SEQ, LEN payload bytes from the send queue, FLAGS (RTE_TCP_*_FLAG). */
int eth_tcp_xmit(struct eth_tcb *t, uint32_t seq, uint32_t len, uint8_t flags);
/* A RST answering a segment from SRC to DST (one of ours) that has no connection (RFC 9293 3.10.7.1). */
void eth_tcp_reset_reply(struct eth_stack *st, const struct xlt_ip *src, const struct xlt_ip *dst,
                         const struct rte_tcp_hdr *th, uint32_t seg_len);
/* Bytes of the IP header of a segment over IPv6 (V6) or IPv4. */
static inline unsigned eth_ip_hlen(bool v6)
{
	return v6 ? sizeof(struct rte_ipv6_hdr) : sizeof(struct rte_ipv4_hdr);
}
/* The gauge of bytes in connection buffers, after chunks were taken or given back. */
static inline void eth_buf_gauge(struct eth_stack *st)
{
	xlt_counter_set(&st->stats.tcp_buffer_bytes, (uint64_t)st->chunks.n_used * ETH_CHUNK_SIZE);
}
/* The MSS we announce over IPv6 or IPv4: the link MTU less both headers. */
static inline uint16_t eth_tcp_mss_for(const struct eth_stack *st, bool v6)
{
	return (uint16_t)(st->c.mtu - eth_ip_hlen(v6) - sizeof(struct rte_tcp_hdr));
}
/* Fills the IP header at the start of M, in front of the TCP header TH of a segment of TCPLEN bytes
 * (header included) from LADDR to RADDR, and the TCP checksum: in software, or the pseudo-header
 * sum for the device (with TSO: TSO_SEGSZ, else 0). FLOW: the IPv6 flow label. For a segment of no
 * connection (a reset, a SYN cookie's SYN-ACK): its IPv4 ID is eth_ipv4_id's. */
void eth_tcp_finish(struct eth_stack *st, struct rte_mbuf *m, struct rte_tcp_hdr *th,
                    const struct xlt_ip *laddr, const struct xlt_ip *raddr, uint32_t tcplen, uint32_t flow,
                    uint16_t tso_segsz);
/* Payload bytes one segment may carry now (the MSS less the SACK blocks that go with it). */
uint32_t eth_tcp_seg_max(const struct eth_tcb *t);
void eth_tcp_send_rst(struct eth_tcb *t);
void eth_tcp_send_ack(struct eth_tcb *t);
/* RFC 5961 challenge ACK, rate-limited per connection. */
void eth_tcp_challenge_ack(struct eth_tcb *t);
uint32_t eth_tcp_tsval(const struct eth_tcb *t);

/* tcp_timer.c */
void eth_tcb_timer_update(struct eth_tcb *t);
void eth_tcp_timer_fire(void *arg, struct eth_timer *tm);
void eth_tcp_rtt_sample(struct eth_tcb *t, uint32_t rtt_us);
uint32_t eth_tcp_rto_backed_off(const struct eth_tcb *t);
/* (Re)starts the retransmission timer from now. */
void eth_tcp_rexmit_arm(struct eth_tcb *t);
void eth_tcp_wupd_arm(struct eth_tcb *t);
void eth_tcp_keepalive_reset(struct eth_tcb *t);

/* Whether T's peer may still send data: a window of ours means something to it (RFC 9293's
 * ESTABLISHED, FIN_WAIT_1, FIN_WAIT_2). */
static inline bool eth_tcb_rcv_open(const struct eth_tcb *t)
{
	return t->state == ETH_TCP_ESTABLISHED || t->state == ETH_TCP_FIN_WAIT_1 || t->state == ETH_TCP_FIN_WAIT_2;
}

static inline struct eth_tcb *eth_tcb_of(struct xlt_stream *s)
{
	return (struct eth_tcb *)s; /* the stream is the first member */
}

#endif
