/* Internal types of the engine (eth_side only; others see struct eth_stack as opaque). */
#ifndef ETH_ENGINE_T_H
#define ETH_ENGINE_T_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "../translate/ratelim-t.h"
#include "buf-t.h"
#include "siphash.h"
#include "sndq-t.h"
#include "stack-t.h"
#include "tcp_opt-t.h"
#include "twheel-t.h"
#include "../translate/ip-t.h"

struct rte_mbuf;
struct rte_ring;

#define ETH_MAX_WORKERS	  64
#define ETH_RX_BURST	  32
#define ETH_TXQ_SIZE	  512 /* frames waiting for the device */
#define ETH_TXQ_TCP_STOP  448 /* TCP stops producing segments above this (NIC backpressure) */
#define ETH_TXQ_SEGS_STOP 2048 /* ... or above this many mbufs in those frames (a TSO frame copied into
                                * mbufs takes 30-40: 448 of them were more than the port's pool) */
#define ETH_MAX_LISTENERS 256
#define ETH_TCP_OOO_MAX	  16 /* out-of-order ranges a receiver keeps (the bounded OOO queue) */
#define ETH_TCP_SACK_MAX  16 /* SACKed ranges a sender remembers */
#define ETH_ARP_SLOTS	  256
#define ETH_ARP_PENDING	  4 /* packets queued per unresolved neighbour */
#define ETH_ARP_QUEUE	  256 /* packets queued for all unresolved neighbours of an instance */

enum eth_tcp_state {
	ETH_TCP_CLOSED,
	ETH_TCP_SYN_SENT,
	ETH_TCP_SYN_RCVD,
	ETH_TCP_ESTABLISHED,
	ETH_TCP_FIN_WAIT_1,
	ETH_TCP_FIN_WAIT_2,
	ETH_TCP_CLOSE_WAIT,
	ETH_TCP_CLOSING,
	ETH_TCP_LAST_ACK,
	ETH_TCP_TIME_WAIT,
};

/* Stream events waiting for the next dispatch. */
enum {
	ETH_EV_ACCEPT = 1 << 0,
	ETH_EV_CONNECTED = 1 << 1,
	ETH_EV_READABLE = 1 << 2,
	ETH_EV_WRITABLE = 1 << 3,
	ETH_EV_CLOSED = 1 << 4,
	ETH_EV_SENT = 1 << 5, /* lent bytes acknowledged: on_sent (sndq.c) */
};

struct eth_listener {
	uint16_t port;	 /* 0: free slot */
	bool open;
	uint32_t refs;	 /* the table while open + connections accepted through it */
	uint32_t n_syn;	 /* its half-open connections (SYN_RCVD) */
	uint64_t cookie_ms; /* when it last answered with a SYN cookie (0: never): ACKs are checked for
			     * cookies only while some may be out there */
	uint64_t press_ms;  /* when a SYN last found its share half full (0: never) */
	struct eth_tcp_params params;
	void *user;
};

/* One run of received in-order payload (rcvq.c): a piece kept in its mbuf, or (M NULL) the next LEN
 * bytes of rbuf's chunks. The receive queue's bytes are a list of these, then rbuf's bytes that no
 * entry covers. */
struct eth_rseg {
	union {
		STAILQ_ENTRY(eth_rseg) link;     /* on its connection's receive queue */
		SLIST_ENTRY(eth_rseg) free_link; /* or on the stack's free list */
	};
	struct rte_mbuf *m; /* one buffer of the frame (a reference of its own), or NULL: chunk bytes */
	const uint8_t *data;
	uint32_t len;
};

/* Pieces one worker's receive queues may pin at most (the stack's node array); the mempool bounds
 * them lower (rcvq.c). */
#define ETH_RSEG_MAX 8192

struct eth_tcb;
SLIST_HEAD(eth_tcb_chain, eth_tcb); /* a hash bucket */

/* A TCP connection block. The stream comes first: sessions hold a struct xlt_stream *. */
struct eth_tcb {
	struct xlt_stream s;
	struct eth_stack *st;
	SLIST_ENTRY(eth_tcb) hlink;    /* hash chain, or the free list */
	STAILQ_ENTRY(eth_tcb) evlink;  /* event list (while on_ev) */
	STAILQ_ENTRY(eth_tcb) outlink; /* output list (while on_out) */
	TAILQ_ENTRY(eth_tcb) twlink;   /* TIME_WAIT list, oldest first */
	SLIST_ENTRY(eth_tcb) reaplink; /* released, waiting to be freed */
	struct eth_listener *lis; /* passive opens: a reference */
	struct eth_timer timer;
	uint32_t hash;
	uint32_t flow_label;    /* IPv6: keyed apart from HASH, which must not leak (it picks the bucket) */
	struct xlt_ip raddr;    /* either family (IPv4 held mapped: one compare, one hash) */
	struct xlt_ip laddr;    /* ours: [eth] address, a kernel TAP address, address6 or the link-local */
	uint16_t rport, lport;	/* host order */
	uint8_t state;		/* enum eth_tcp_state */
	uint8_t ev;		/* ETH_EV_* pending */
	bool v6;                /* raddr is IPv6 (cached: output picks its header by it) */
	bool hashed, on_ev, on_out, released, accepted, passive;
	bool fin_rcvd, fin_queued, fin_sent, ooo_fin, rst_rcvd;
	bool ts_ok, sack_ok, ws_ok;
	bool ack_now, in_recovery, rtt_timing, want_writable, zero_wnd_adv;
	bool eof_told; /* on_readable fired with peer_done set */
	bool sws_override; /* the persist timer found the window open but too small: send into it */
	uint8_t snd_wscale, rcv_wscale;
	uint8_t n_ooo, n_sacked;
	uint8_t dupacks, backoff, probes;
	int close_err;		/* on_closed's argument */

	/* send side (RFC 9293 names) */
	uint32_t iss, snd_una, snd_nxt, snd_max, snd_wnd, snd_wl1, snd_wl2, max_sndwnd;
	uint32_t cwnd, ssthresh, recover, high_rxt, bytes_acked;
	/* whether the window limits the sender (RFC 7661; Linux's max_packets_out): the largest flight
	 * since snd_una passed cwnd_use_seq, where the measure restarts about once a round trip */
	uint32_t cwnd_use, cwnd_use_seq;
	bool rto_slow_start;	/* slow start after a timeout, until snd_una reaches recover */
	uint16_t mss;		/* payload per segment (options excluded) */
	uint16_t peer_mss;
	uint16_t pmtu;		/* path MTU an ICMP error taught us (pmtu.c); 0: the link's */
	uint16_t ip_id;		/* IPv4 identification of the next segment: the connection's own count */
	uint16_t pmtu_rxt_mss;	/* the MSS a lowered MTU last sent the flight again at (0: never) */
	uint64_t pmtu_rxt_ms;	/* ... and when */
	uint32_t rtseq;		/* segment being timed (no timestamps) */
	uint64_t rttime_ms;
	uint32_t srtt_us, rttvar_us, rto_ms;
	uint32_t n_rexmit;	/* segments of this connection sent again (xlt_stream_info) */
	uint32_t ts_offset;	/* added to our clock in TSval (RFC 7323 5.4: per connection) */

	/* receive side */
	uint32_t irs, rcv_nxt, rcv_adv, last_ack_sent, ooo_fin_seq, unacked_segs;
	uint32_t ts_recent;
	uint64_t ts_recent_ms;	/* when ts_recent was set (PAWS 24-day rule) */

	/* deadlines in ms (0 = off); the timer is armed at the earliest */
	uint64_t t_rexmit;	/* retransmission, SYN/SYN-ACK retry or persist */
	uint64_t t_delack;
	uint64_t t_keep;	/* keepalive, connection-establishment limit or TIME_WAIT end */
	uint64_t tw_last_ms;	/* TIME_WAIT: the latest end a retransmitted FIN may move t_keep to */
	uint64_t first_rexmit_ms; /* when the oldest unanswered retransmission/probe went out */
	uint64_t last_rcv_ms;
	struct xlt_window chall; /* challenge ACKs in the second (ms) */
	uint64_t oow_ack_ms;	/* last ACK to an invalid segment or challenge ACK (500 ms apart) */
	uint64_t t_ooo;		/* out-of-order data expires (the fourth deadline of the timer) */
	uint64_t t_pmtu;	/* a resend a lowered MTU held back is due (pmtu.c: eth_pmtu_resend_due) */
	uint64_t t_wupd;	/* the window update that opened a zero window goes again (tcp_timer.c) */
	uint32_t wupd_rcv;	/* ... unless rcv_nxt moved from this meanwhile */
	uint8_t wupd_tries;
	uint64_t ooo_hole_ms;	/* since when the hole before the out-of-order ranges stays open */
	uint64_t connect_deadline_ms;

	struct eth_bufq rbuf, sbuf;
	uint32_t rbuf_held; /* of the configured rbuf, what is not offered yet (eth_tcp_open_window) */
	struct eth_sndq sndq; /* the send queue's entries (sbuf: its copies, unless it lends) */
	struct eth_sack_block ooo[ETH_TCP_OOO_MAX];	/* received ahead, most recent first */
	uint32_t ooo_born[ETH_TCP_OOO_MAX];		/* when each range's oldest bytes came (ms) */
	struct eth_sack_block sacked[ETH_TCP_SACK_MAX]; /* peer's SACKs, sorted, disjoint */

	/* in-order received bytes still in their mbufs (rcvq.c), in a list with runs of rbuf's bytes;
	 * rbuf.cap is the configured buffer less rq_len (the bytes in frames), so every window
	 * computation stays as it was */
	STAILQ_HEAD(, eth_rseg) rq;
	uint32_t rq_len;   /* bytes in frames */
	uint32_t rq_chunk; /* bytes of rbuf that entries cover (the rest of rbuf.len follows them) */
	/* where the last lend() walk passed (rcvq.c): a lend skips the bytes lent before, so with deep
	 * queues a walk from the head each time would cost the queue's length per call. Positions are
	 * counted from the stream's start (consume() advances the _dropped ones), so they survive the
	 * consumes; the entry is still queued while its end lies past rq_dropped. */
	struct eth_rseg *lend_at;
	uint64_t lend_at_end;  /* position after lend_at's last byte */
	uint64_t lend_at_cend; /* the same in rbuf's bytes that entries cover */
	uint64_t rq_dropped;   /* bytes consume() dropped from entries */
	uint64_t chunk_dropped; /* of which rbuf's bytes */
};

/* A neighbour of either family (arp.c: one cache code for ARP and IPv6 neighbour discovery). */
struct eth_arp_entry {
	struct xlt_ip ip; /* meaningful while state is not free */
	uint8_t mac[6];
	uint8_t state;	   /* ETH_ARP_* (arp.c) */
	uint8_t tries;
	uint8_t n_pending;  /* of the instance's arp_q */
	bool pinned;	    /* the configured gateway: never evicted, changed only by replies we asked for */
	bool passive;       /* made by a peer's ARP request or solicitation, not used by output yet (arp.c: insert) */
	uint64_t expire_ms; /* REACHABLE until / next retry at */
	uint64_t used_ms;
};

/* A packet waiting for its neighbour's address (arp.c). */
struct eth_arp_queued {
	struct rte_mbuf *m;
	struct eth_arp_entry *e;
};

/* One family's neighbour cache (arp.c): the same bounds for IPv4 (ARP) and IPv6 (neighbour
 * discovery), each its own, so that a flood in one family cannot evict the other's neighbours. */
struct eth_nbr_cache {
	bool v6;
	struct eth_arp_entry e[ETH_ARP_SLOTS];
	struct eth_arp_entry *last;             /* one-entry lookup cache */
	struct eth_arp_queued q[ETH_ARP_QUEUE]; /* oldest first */
	unsigned q_len;
};

struct eth_stack {
	/* one worker's: cache line aligned, so no line holds two workers' state (stats included) */
	alignas(64) struct eth_stack_conf c;
	/* set by eth_stack_destroy while frames of lent memory are still out (the port frees its TX
	 * ring after the engines): the last of them frees the stack (sndq.c extref_free) */
	bool destroyed;
	const struct eth_local_set *locals; /* this round's (eth_stack_set_locals); NULL: none */
	uint32_t locals_gen;                /* the set last announced (worker 0) */
	uint32_t netmask;	   /* network order */
	struct eth_siphash_key flow_key, isn_key;
	uint64_t now_ns, now_ms, started_ms;
	uint64_t next_arp_tick_ms;
	bool garp_pending;
	uint8_t ll6[16];	   /* IPv6 link-local address from the MAC (with [eth] address6 only) */
	uint8_t snm6[2][16];	   /* solicited-node groups of addr6 and ll6 */
	uint64_t ip_id;		   /* counts packets of no connection; their IDs are a keyed hash of it */
	uint16_t next_port;
	uint32_t syn_backlog;	   /* this instance's share of [eth] syn_backlog: its half-open table */
	unsigned n_listen_open;	   /* open listeners: each may fill syn_backlog / n_listen_open */
	uint64_t chall_sec;	   /* the second the global challenge-ACK budget is for */
	uint32_t chall_left;	   /* challenge ACKs this instance may still send in that second */
	struct xlt_window rst_replies; /* resets to segments of no connection this second (tcp_out.c) */
	struct xlt_window dad_defends; /* advertisements defending our IPv6 addresses this second */
	struct xlt_window nbr_resolves; /* neighbours first asked for this second (arp.c) */
	struct xlt_window nbr_replies;  /* ARP replies and solicited advertisements this second */

	struct eth_twheel wheel;
	struct eth_chunk_pool chunks;

	/* connections */
	struct eth_tcb *tcbs;	   /* max_conns blocks, reserved lazily */
	size_t tcbs_bytes;
	SLIST_HEAD(, eth_tcb) tcb_free;
	uint32_t tcb_carved;
	uint32_t n_conns;	   /* not CLOSED and not in TIME_WAIT */
	struct eth_tcb_chain *htab;
	size_t htab_bytes;
	uint32_t hmask;
	STAILQ_HEAD(, eth_tcb) ev, out; /* connections with events due; with segments to send */
	TAILQ_HEAD(, eth_tcb) tw;       /* in TIME_WAIT, oldest first */
	SLIST_HEAD(, eth_tcb) reap;     /* released, freed at the end of the poll */
	struct eth_listener listeners[ETH_MAX_LISTENERS];
	unsigned n_listeners;	   /* slots used (open or draining) */

	/* neighbours */
	struct eth_nbr_cache arp, nd;   /* IPv4 (ARP), IPv6 (neighbour discovery) */
	struct eth_siphash_key arp_key; /* slot hash: a remote peer cannot aim at one slot */

	/* steering: to[i] carries frames from us to worker i, from[i] from worker i to us */
	struct rte_ring *to[ETH_MAX_WORKERS];
	struct rte_ring *from[ETH_MAX_WORKERS];

	struct rte_mbuf *txq[ETH_TXQ_SIZE];
	uint16_t txq_segs[ETH_TXQ_SIZE]; /* each frame's mbufs, read at enqueue (a sent frame is the PMD's) */
	unsigned n_tx;
	unsigned n_tx_segs;  /* their sum */
	unsigned segs_stop;  /* ETH_TXQ_SEGS_STOP, or a quarter of the pool's share per worker if less */

	struct eth_stack_stats stats;

	/* receive queues' mbuf pieces (rcvq.c): carved from the array as needed, then a free list */
	SLIST_HEAD(, eth_rseg) rseg_free;
	uint32_t rseg_carved, rseg_used;
	uint32_t rseg_limit; /* pieces pinned at most: a share of the mempool (0: not computed yet) */
	uint32_t pool_avail;    /* the mempool's free mbufs at pool_avail_ms (rcvq.c eth_pool_low) */
	uint64_t pool_avail_ms;
	/* IB copy buffers out (eth_stack_copy_buf): taken by the worker, given back by any thread (the
	 * control thread puts those of a connection it destroys) */
	_Atomic uint32_t copy_bufs;
	uint32_t copy_bufs_max; /* a share of the mempool (0: not computed yet) */
	bool rx_extmem;	     /* the mempool is registered with the IB side (eth_stack_rx_extmem) */
	struct eth_rseg rsegs[ETH_RSEG_MAX];
};

#endif
