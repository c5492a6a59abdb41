/* The Ethernet side's TCP/IP engine: one instance per worker (ARP, IPv4, ICMP echo, IPv6 with neighbour
 * discovery and ICMPv6 echo, TCP over both families).
 *
 * An instance owns its port queue pair, its connection table, its timer wheel and its buffer pool;
 * only its worker touches it, so nothing is locked. Flows are steered by a keyed hash of the remote
 * address and both ports: a frame that lands on another worker's queue is handed to its owner over
 * an SPSC ring, and active opens pick a local port that hashes back to the opener.
 *
 * TCP connections are xlt_streams (translate/stream-t.h): the receive window advertised is the free
 * space of the connection's bounded receive buffer, which grows only when the session consumes, so
 * a slow consumer closes the peer's window; write() takes only what fits the send buffer. Stream
 * events fire from eth_stack_poll (eth_stack_relay) only. */
#ifndef ETH_STACK_H
#define ETH_STACK_H

#include "local-t.h"
#include "stack-t.h"
#include "../translate/ip-t.h"

/* Creates an instance from C (copied). Control thread, after rte_eal_init. Returns NULL with errno. */
struct eth_stack *eth_stack_create(const struct eth_stack_conf *c);

/* The addresses the instance owns besides [eth] address, for this round: LS (or NULL: none) must stay
 * valid until the next call. The worker calls it at the top of each round with its live snapshot's set.
 * When the set changed, worker 0 announces the new addresses (gratuitous ARP). */
void eth_stack_set_locals(struct eth_stack *st, const struct eth_local_set *ls);

/* Moves what the kernel sent on the exception TAP to the port's transmit queue (worker 0 only; the
 * others return 0). Returns the frames taken. eth_stack_rx calls it. */
unsigned eth_exc_worker_rx(struct eth_stack *st);

/* Frees an instance and everything it holds, without firing events (its worker has stopped). */
void eth_stack_destroy(struct eth_stack *st);

/* Joins N instances (indexed by worker) with the SPSC rings that carry steered frames between
 * them. Control thread, before the workers start. Returns 0 or -errno. */
int eth_stack_link(struct eth_stack **stacks, unsigned n);

/* One round of the worker: receive, run timers, fire stream events, send. NOW_NS is the worker's
 * monotonic clock. Returns the amount of work done (0: idle). It is the three phases below in
 * order; a worker that drives other engines too calls them itself, interleaved with theirs:
 *  - eth_stack_rx: the RX burst (port queue, frames steered from other workers), the timers, ARP.
 *    Frames are processed, segments that answer them are queued; no stream event fires.
 *  - eth_stack_relay: fires the stream events collected so far (sessions move data now; the ops
 *    they call only queue output).
 *  - eth_stack_flush: every connection with something to send builds its segments, the TX burst
 *    hands them to the device, released connections are freed. Returns nonzero while events wait
 *    (queued after the relay phase): the next round must not be slept away. */
unsigned eth_stack_poll(struct eth_stack *st, uint64_t now_ns);
unsigned eth_stack_rx(struct eth_stack *st, uint64_t now_ns);
unsigned eth_stack_relay(struct eth_stack *st);
unsigned eth_stack_flush(struct eth_stack *st);

/* Feeds N received frames to the instance (it owns them from now on). For tests and the fuzzer;
 * eth_stack_poll reads its queue itself. Frames are processed at once; their replies go out with
 * the next poll. */
void eth_stack_input(struct eth_stack *st, struct rte_mbuf **pkts, unsigned n);

/* The instance's counters (read them relaxed from another thread). */
const struct eth_stack_stats *eth_stack_stats(const struct eth_stack *st);

/* Control thread, before the workers run: ON says the engine's mempool (eth_stack_conf.pool) is
 * registered with the IB side as external memory, so received payload lent from it carries
 * XLT_SEG_EXTMEM (an IB destination writes straight from the frames). */
void eth_stack_rx_extmem(struct eth_stack *st, bool on);

/* Worker: a frame buffer of the instance's mempool for another side's copies (an IB connection's
 * copies of what it cannot send from where it lies): SEG gets its data room, writable, with
 * XLT_SEG_DEVMEM (and XLT_SEG_EXTMEM where eth_stack_rx_extmem said the pool is registered) and one
 * reference (hold, hops: put from any thread frees it). Returns 0, -ENOBUFS while the instance's
 * buffers out reach its share of an eighth of the pool, or -ENOMEM while the pool is down to a
 * sixteenth (the RX ring comes first) or empty. */
int eth_stack_copy_buf(struct eth_stack *st, struct xlt_seg *seg);

/* Descriptors of struct eth_stack_stats for the stats endpoint. */
extern const struct xlt_metric_desc eth_stack_metrics[];
extern const unsigned eth_stack_n_metrics;

/* Opens a listener on PORT, or gives the open one new settings and a new USER in place (the port never
 * closes, so a handshake in progress completes; connections keep the settings they started with).
 * USER (a route reference the listener adopts) is handed to hooks->accept for each connection and to
 * hooks->route_put once the listener is closed
 * and its last connection is released, or at once when a second call replaces it. Returns 0 or
 * -ENOSPC when the table is full. */
int eth_tcp_listen(struct eth_stack *st, uint16_t port, const struct eth_tcp_params *p, void *user);

/* Closes the listener on PORT (its established connections go on). Returns 0 or -ENOENT. */
int eth_tcp_unlisten(struct eth_stack *st, uint16_t port);

/* Closes every listener (drain). */
void eth_tcp_unlisten_all(struct eth_stack *st);

/* Active open to ADDR:PORT, IPv4 (held mapped) or IPv6 (from address6, or the link-local address for a
 * link-local ADDR). Returns a CONNECTING stream whose on_connected or on_closed(-ECONNREFUSED,
 * -ETIMEDOUT, -EHOSTUNREACH) fires later, or NULL with *ERR set (-ENOMEM: no connection block,
 * -EADDRNOTAVAIL: no local port, -EHOSTUNREACH: no route over IPv4, or an address we cannot reach
 * (ours, multicast, unspecified), -ENETUNREACH: no IPv6 on the port, or off-link without gateway6). */
struct xlt_stream *eth_tcp_connect(struct eth_stack *st, const struct xlt_ip *addr, uint16_t port,
                                   const struct eth_tcp_params *p, int *err);

/* Offers an accepted connection the whole of its receive buffer (eth_tcp_params.rbuf_start held
 * part of it back), with a window update. */
void eth_tcp_open_window(struct xlt_stream *s);

/* Refuses an accepted connection: resets it and frees it at once (no events follow). A refusal by
 * hooks->accept does this itself. */
void eth_tcp_reject(struct xlt_stream *s);

/* Connections of the instance that are not yet CLOSED (TIME_WAIT excluded). */
unsigned eth_stack_conns(const struct eth_stack *st);

#endif
