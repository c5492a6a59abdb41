/* Types of the per-worker TCP/IP engine (see stack.h). */
#ifndef ETH_STACK_T_H
#define ETH_STACK_T_H

#include <stdbool.h>
#include <stdint.h>

#include "../translate/metric-t.h"
#include "../translate/stream-t.h"

struct eth_exc;
struct eth_stack;
struct rte_mbuf;
struct rte_mempool;

/* Sends N frames; returns how many the device took (the rest stay with the caller). */
typedef uint16_t (*eth_tx_fn)(void *arg, struct rte_mbuf **pkts, uint16_t n);

/* Offloads a port does for the engine (eth_stack_conf.offloads). The engine asks for none of them
 * from a device that lacks them (af_packet, the tests' sinks): then it checksums in software and
 * sends MTU-sized frames only. */
#define ETH_OFFLOAD_TX_CSUM 0x1u /* TCP checksum: the engine writes the pseudo-header sum only */
#define ETH_OFFLOAD_TSO	    0x2u /* TCP segmentation: one frame of up to ETH_TSO_MAX payload bytes */
#define ETH_OFFLOAD_RX_CSUM 0x4u /* the device flags received TCP checksums good (or verified) */
#define ETH_OFFLOAD_LRO	    0x8u /* received segments may arrive merged, as an mbuf chain */
#define ETH_OFFLOAD_IP_CSUM 0x10u /* IPv4 header checksum (asked for in TSO frames only) */
/* Not a device offload: frames may chain mbufs attached to memory DPDK does not know (bytes lent by
 * the IB side), since the driver reads every segment with the CPU (af_packet). Other ports get
 * those bytes copied into the frame. */
#define ETH_OFFLOAD_EXTMEM 0x20u
/* Likewise, but only for lent memory in DPDK's own heap (XLT_SEG_DEVMEM): the driver addresses
 * frames by virtual address within DPDK's memory segments (virtio_user: vhost's memory table). */
#define ETH_OFFLOAD_DEVMEM 0x40u
/* Payload of one TSO frame at most: IPv4's 64 KiB less the largest IP and TCP headers. */
#define ETH_TSO_MAX (65535u - 60u - 60u)

/* Per-connection settings: the buffers bound what the connection may hold. */
struct eth_tcp_params {
	uint32_t rbuf_size;	      /* receive buffer = the largest window advertised */
	uint32_t rbuf_start;	      /* passive opens: the part of it offered until eth_tcp_open_window
				       * (0: all; an accept_proxy connection waiting for its header) */
	uint32_t sbuf_size;	      /* send buffer: unacknowledged + queued bytes */
	/* Lending mode (0: off, copies in chunks up to sbuf_size): a session that lends nearly all
	 * it sends (write_lent) needs few copies, so its queue takes no chunk at all: its entries are in
	 * the connection block, its copies in frames of the mempool (c.pool), at most copy_size bytes
	 * of them in flight. */
	uint32_t copy_size;
	uint64_t connect_timeout_ms;  /* active opens: give up with -ETIMEDOUT after this */
};

/* The receive window of a passive open until eth_tcp_open_window. */
static inline uint32_t eth_tcp_rbuf_start(const struct eth_tcp_params *p)
{
	return p->rbuf_start && p->rbuf_start < p->rbuf_size ? p->rbuf_start : p->rbuf_size;
}

/* What one engine instance needs: created on the control thread, then used by one worker only. */
struct eth_stack_conf {
	unsigned worker;	  /* this instance's index: flows hashing to it are its own */
	unsigned n_workers;
	uint16_t port_id;	  /* DPDK port, or UINT16_MAX for none (tests: frames go to tx_fn only) */
	uint16_t queue;		  /* RX/TX queue pair of this worker */
	struct rte_mempool *pool; /* packet buffers */
	uint8_t mac[6];
	uint32_t addr;		  /* our IPv4 address, network byte order */
	uint8_t prefix;		  /* of the attached network */
	uint32_t gateway;	  /* default gateway, network byte order; 0 = none */
	uint32_t flow_peer;	  /* the other gateway of a pair (network order; 0 = none): see ipv4.c */
	uint8_t addr6[16];	  /* our IPv6 address (prefix6 0: no IPv6) */
	uint8_t prefix6;
	uint8_t gateway6[16];	  /* IPv6 default gateway; :: = none */
	uint8_t flow_peer6[16];	  /* flow_peer for IPv6 VIPs; :: = none: see ipv6.c */
	uint32_t mtu;		  /* IP MTU */
	uint32_t offloads;	  /* ETH_OFFLOAD_* the port does for us (eth_port_offloads) */
	uint64_t time_wait_ms;
	uint32_t syn_backlog;	  /* half-open connections this instance keeps at most */
	uint64_t keepalive_ms;	  /* idle time before keepalive probes; 0 = off */
	uint64_t keepalive_intvl_ms;
	uint32_t keepalive_probes;
	uint64_t user_timeout_ms; /* unacknowledged data older than this drops the connection */
	uint32_t max_conns;	  /* connection blocks (including TIME_WAIT) */
	uint64_t buffer_bytes;	  /* memory for connection buffers, reserved lazily */
	uint64_t flow_key[2];	  /* secret shared by all instances: flow steering and table hash */
	struct eth_exc *exc;      /* the exception path (exception.h), or NULL: none */
	eth_tx_fn tx;		  /* NULL: rte_eth_tx_burst on port_id/queue */
	void *tx_arg;
	/* What listeners hand to the gateway (translate/stream-t.h): accept (with cb_arg as its WARG;
	 * a refusal resets the connection) and route_put (a closed listener's USER, once its last
	 * connection is released). */
	const struct xlt_listen_hooks *hooks;
	void *cb_arg; /* the worker's argument: hooks->accept's WARG */
};

/* Counters of one engine instance: written by its worker only, read by the control thread. */
struct eth_stack_stats {
	uint64_t frames_in;
	uint64_t frames_out;
	uint64_t frames_dropped;    /* not for us, unknown ethertype, runt, a group address as sender */
	uint64_t tx_drops;	    /* the device queue stayed full */
	uint64_t steered_out;	    /* handed to the owning worker */
	uint64_t steer_drops;	    /* the owner's ring was full */
	uint64_t nombuf;	    /* packet buffer allocation failures */
	uint64_t arp_in;
	uint64_t arp_out;
	uint64_t arp_errors;	    /* malformed or not for us */
	uint64_t arp_unresolved;    /* packets dropped waiting for a neighbour that never answered */
	uint64_t arp_entries;	    /* gauge */
	uint64_t arp_queue_drops;   /* packets dropped because the instance's ARP queue was full */
	uint64_t arp_queued;	    /* gauge: packets waiting for a neighbour's address */
	uint64_t arp_learn_refused; /* ARP senders that got no entry (arp.c: insert) */
	uint64_t nbr_resolves_limited; /* packets dropped: their neighbour was new, over ETH_NBR_RESOLVE_PER_S */
	uint64_t nbr_replies_limited;  /* ARP requests and solicitations not answered: over ETH_NBR_REPLY_PER_S */
	uint64_t ip_in;
	uint64_t ip_header_errors;
	uint64_t ip_checksum_errors;
	uint64_t ip_fragments;	    /* dropped: we do not reassemble */
	uint64_t ip_not_for_us;
	uint64_t ip_link_bcast;	    /* dropped: to a unicast address in a link-layer broadcast */
	uint64_t ip_no_route;
	uint64_t ip_unknown_proto;
	uint64_t icmp_in;
	uint64_t icmp_echo_replies;
	uint64_t icmp_errors;
	uint64_t icmp_refused;	    /* neither answered nor for the kernel (ipv4.c, ipv6.c: icmp*_for_kernel) */
	uint64_t icmp_too_big_in;      /* ICMP(v6) "too big" quoting a connection of ours (pmtu.c) */
	uint64_t icmp_too_big_ignored; /* ... failing RFC 5927's checks, or not lowering the MTU */
	uint64_t tcp_pmtu_lowered;     /* connections whose segments shrank after one */
	uint64_t ip6_in;
	uint64_t ip6_header_errors; /* bad version/length, extension-header chain too long or cut */
	uint64_t ip6_not_for_us;
	uint64_t ip6_martians;	    /* multicast or our own source */
	uint64_t ip6_ext_dropped;   /* fragments, routing headers with segments left */
	uint64_t ip6_unknown_proto;
	uint64_t ip6_tcp_refused;   /* TCP over IPv6 to one of our multicast groups, not a unicast address */
	uint64_t icmp6_in;
	uint64_t icmp6_errors;	    /* short or bad checksum */
	uint64_t icmp6_echo_replies;
	uint64_t nd_ns_in;
	uint64_t nd_na_in;
	uint64_t nd_na_out;
	uint64_t nd_ns_out;	    /* solicitations for neighbours we send to */
	uint64_t nd_unresolved;	    /* as arp_unresolved, for IPv6 neighbours */
	uint64_t nd_entries;	    /* gauge */
	uint64_t nd_queue_drops;
	uint64_t nd_queued;	    /* gauge */
	uint64_t nd_errors;	    /* neighbour discovery messages that fail RFC 4861's checks */
	uint64_t nd_conflicts;	    /* advertisements of one of our addresses by another node */
	uint64_t nd_dad_defended;   /* duplicate address probes for one of our addresses, answered */
	uint64_t nd_dad_limited;    /* and not answered: over ETH_ND_DAD_DEFEND_PER_S */
	uint64_t nd_learn_refused;  /* solicitations whose sender got no entry (arp.c: insert) */
	uint64_t clones_skipped;    /* ARP/ND copies not given to a worker whose ring was half full */
	uint64_t tcp_segments_in;
	uint64_t tcp_segments_out;
	uint64_t tcp_bytes_in;	    /* payload accepted in order */
	uint64_t tcp_bytes_out;	    /* payload sent, retransmissions included */
	uint64_t tcp_retransmits;   /* segments sent again */
	uint64_t tcp_fast_retransmits;
	uint64_t tcp_rto_expiries;
	uint64_t tcp_rsts_in;
	uint64_t tcp_rsts_out;
	uint64_t tcp_checksum_errors;
	uint64_t tcp_header_errors;
	uint64_t tcp_passive_opens;
	uint64_t tcp_active_opens;
	uint64_t tcp_connects_failed;
	uint64_t tcp_closed;	    /* connections that reached CLOSED */
	uint64_t tcp_resets;	    /* ... of which by RST (either way) */
	uint64_t tcp_timeouts;	    /* ... of which because the peer stopped answering */
	uint64_t tcp_active;	    /* gauge: connections past SYN and not closed */
	uint64_t tcp_time_wait;	    /* gauge */
	uint64_t tcp_syn_rcvd;	    /* gauge: half-open */
	uint64_t tcp_syn_drops;	    /* SYNs dropped: no block, or TIME_WAIT reuse with a full table */
	uint64_t tcp_syncookies_sent;	   /* SYN-ACKs with a cookie (the listener's share was full) */
	uint64_t tcp_syncookies_validated; /* connections made from a valid cookie */
	uint64_t tcp_syncookies_failed;	   /* ACKs to a listener sending cookies, with a bad cookie */
	uint64_t tcp_accept_rejects; /* connections the session layer refused */
	uint64_t tcp_zero_window_sent;
	uint64_t tcp_zero_window_rcvd;
	uint64_t tcp_challenge_acks;
	uint64_t tcp_acks_limited_conn;	  /* ACKs to invalid segments held back (per connection) */
	uint64_t tcp_acks_limited_worker; /* challenge ACKs held back: this instance's budget per second */
	uint64_t tcp_rsts_limited;	  /* resets to segments of no connection held back: the same */
	uint64_t tcp_paws_drops;
	uint64_t tcp_out_of_window;
	uint64_t tcp_ooo_segments;
	uint64_t tcp_ooo_drops;
	uint64_t tcp_ooo_expired;   /* out-of-order data dropped: its hole stayed open too long */
	uint64_t tcp_tw_reuse;
	uint64_t tcp_keepalive_probes;
	uint64_t tcp_buffer_bytes;  /* gauge: bytes of chunks held by connection buffers */
	uint64_t copied_in;	    /* payload bytes copied from frames into receive queues */
	uint64_t copied_out;	    /* ... into send queues (the write op) and from them into frames */
	uint64_t exc_to_kernel;     /* frames punted to the exception path's ring */
	uint64_t exc_rate_drops;    /* ... dropped instead: this worker's share of kernel_tap_rate */
	uint64_t exc_ring_drops;    /* ... dropped instead: the ring to the control thread was full */
	uint64_t exc_type_drops;    /* frames of an EtherType the kernel is not given (stack.c other_punt) */
	uint64_t exc_from_kernel;   /* frames from the kernel TAP sent out the port (worker 0) */
	uint64_t exc_routing_to_kernel;  /* of exc_to_kernel: routing protocols (a bucket of their own) */
	uint64_t exc_routing_rate_drops; /* of exc_rate_drops: the same */
	uint64_t local_addr_resets; /* connections reset because their address left the TAP */
	uint64_t flow_peer_out;	    /* segments of unknown flows passed to the flow peer */
	uint64_t flow_peer_unmatched; /* segments the flow peer passed here matching nothing either */
	uint64_t rx_pinned;	    /* gauge: frame buffers receive queues hold (payload kept in its mbuf) */
	uint64_t rx_pin_copies;	    /* in-order segments copied instead (small, a queue behind chunks, no
				     * budget left) */
	uint64_t tx_lent_mbufs;     /* gauge: mbufs of frames pointing into lent memory (or a lending
	                             * send queue's copies), not freed yet (queued, or kept by the
	                             * device's TX ring until it cleans it) */
	uint64_t tx_lent_bytes;     /* gauge: lent bytes the send queues hold, not acknowledged yet */
};

#endif
