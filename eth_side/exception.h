/* The exception path: a kernel TAP beside the DPDK port, for what ibgwd does not serve itself.
 *
 * The control thread creates the TAP (DPDK's net_tap, with the port's MAC) and services it: frames
 * the workers punt (eth_exc_punt in the engine, both families alike: ARP and neighbour discovery
 * copies, other IP protocols or next headers such as VRRP, TCP and UDP ports without a listener,
 * multicast, ICMP and ICMPv6 ibgwd does not act on) wait on one multi-producer ring and are written to the
 * TAP; frames the kernel writes to the TAP are read, rate-limited and passed over a second ring to
 * worker 0, which sends them out its port queue. A worker therefore only enqueues (and worker 0 only
 * dequeues): no system call, lock or wait on a datapath. Both directions are token buckets of
 * [eth] kernel_tap_rate frames per second, one per class (exception.c: routing protocols only an
 * on-link sender makes, those anyone can send, the rest); what exceeds them or finds a ring full is
 * dropped and counted. */
#ifndef ETH_EXCEPTION_H
#define ETH_EXCEPTION_H

#include <stddef.h>
#include <stdint.h>

#include "../translate/metric-t.h"

struct rte_mbuf;
struct eth_exc;
struct rte_mempool;

/* Counters of the control thread's half (the workers' half is in struct eth_stack_stats). */
struct eth_exc_stats {
	uint64_t to_kernel;           /* frames written to the TAP */
	uint64_t to_kernel_tap_drops; /* ... refused by the TAP (the kernel's queue was full) */
	uint64_t from_kernel;         /* frames read from the TAP and handed to worker 0 */
	uint64_t from_kernel_rate_drops;
	uint64_t from_kernel_ring_drops;
	uint64_t from_kernel_routing;            /* of from_kernel: routing protocols (their own bucket) */
	uint64_t from_kernel_routing_rate_drops; /* of from_kernel_rate_drops: the same */
};

/* Creates the TAP IFNAME with MAC, its queue fed from POOL, carrying RATE frames/s each way, for
 * N_WORKERS punting workers. Control thread, after rte_eal_init. NULL with errno and a reason in ERR.
 * The TAP carries frames of 1500 bytes at most (net_tap's limit, whatever [eth] mtu is). */
struct eth_exc *eth_exc_create(const char *ifname, const uint8_t mac[6], struct rte_mempool *pool,
                               uint32_t rate, unsigned n_workers, char *err, size_t errlen);
/* The same without a TAP: what the workers punt waits on the ring (counted in their exc_to_kernel)
 * until eth_exc_destroy frees it, and eth_exc_service must not be called. For the unit tests, which
 * check what the engine hands the kernel; as if the TAP were net_tap's (1500 bytes, TSO). */
struct eth_exc *eth_exc_create_detached(uint32_t rate, unsigned n_workers);
/* Fills the TCP or UDP checksum of frame M (Ethernet header first) when the device vouched for its
 * data without filling it in (RX_L4_CKSUM_NONE); anything else is left as it is. */
void eth_exc_fill_l4_cksum(struct rte_mbuf *m);
/* Cuts M, a TCP/IPv6 frame (Ethernet header first) longer than FRAME_MAX, into frames of at most
 * FRAME_MAX from POOL (exception.c says which frames and how). Returns how many it put in OUT (at most
 * MAX), M then freed; 0: M left as it is, still the caller's. */
unsigned eth_exc_split_tcp6(struct rte_mempool *pool, struct rte_mbuf *m, uint32_t frame_max,
                            struct rte_mbuf **out, unsigned max);
/* Removes the TAP and frees what waits in the rings (the workers have stopped). */
void eth_exc_destroy(struct eth_exc *x);
/* The kernel's index of the TAP. */
unsigned eth_exc_ifindex(const struct eth_exc *x);
/* Moves what waits each way; control thread. Returns the frames moved. */
unsigned eth_exc_service(struct eth_exc *x, uint64_t now_ns);
const struct eth_exc_stats *eth_exc_stats(const struct eth_exc *x);

extern const struct xlt_metric_desc eth_exc_metrics[];
extern const unsigned eth_exc_n_metrics;

#endif
