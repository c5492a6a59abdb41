/* DPDK Ethernet port: mempool, queues and link bring-up, and its hardware counters.
 *
 * One port, one RX/TX queue pair per worker (queue i belongs to worker i: no locks on the datapath).
 * Created by the control thread after rte_eal_init(), before the workers start. */
#ifndef ETH_PORT_H
#define ETH_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include "../conf/conf-t.h"
#include "port-t.h"

struct rte_mbuf;
struct rte_mempool;

/* Probes the port named by C (its vdev was given to EAL), configures N_QUEUES queue pairs, starts it.
 * Returns NULL with errno set and a reason in ERRBUF. */
struct eth_port *eth_port_create(const struct conf_eth *c, unsigned n_queues, char *errbuf, size_t errlen);
void eth_port_destroy(struct eth_port *p);

uint16_t eth_port_id(const struct eth_port *p);
struct rte_mempool *eth_port_pool(const struct eth_port *p);
/* Port MAC address (6 bytes). */
const uint8_t *eth_port_mac(const struct eth_port *p);
unsigned eth_port_queues(const struct eth_port *p);
/* A file descriptor that polls readable (POLLIN) when RX queue Q has a frame, or -1 when the PMD
 * offers none: af_packet's ring socket, or the RX interrupt eventfd of a device that has them
 * (virtio_user). The worker of Q may sleep on it. */
int eth_port_rx_fd(const struct eth_port *p, unsigned q);
/* Before sleeping on eth_port_rx_fd(Q): make the fd signal the next frame (a device with RX
 * interrupts; af_packet's ring socket needs nothing). After the sleep, and before polling again:
 * eth_port_rx_disarm (interrupts off while polling; the eventfd cleared). */
void eth_port_rx_arm(const struct eth_port *p, unsigned q);
void eth_port_rx_disarm(const struct eth_port *p, unsigned q);
/* Whether eth_port_rx_fd is a device RX interrupt (whose wake-up passes through a kernel thread:
 * vhost-net's), not a socket the kernel fills directly. */
bool eth_port_rx_intr(const struct eth_port *p);
/* Worker of queue Q, idle: has the device free the frames it sent on Q and no longer needs, which
 * some keep in their TX ring until a later burst (virtio_user): frames pointing into lent memory
 * keep it from its pool meanwhile. Through the PMD's tx_done_cleanup where it has one; on
 * virtio_user, whose TX burst is its only cleanup, by sending one frame nobody takes (an ECTP
 * loopback frame to the port's own MAC, as Ethernet keepalives are): the burst frees what the device
 * used once more than 4 descriptors wait (port.c: tx_free_thresh), so repeated calls get there.
 * Nothing on a port that frees frames as it sends them (af_packet). Costs a frame: the caller
 * bounds its rate. */
void eth_port_tx_reclaim(const struct eth_port *p, unsigned q);
/* ETH_OFFLOAD_* flags (stack-t.h) the port was configured with. */
unsigned eth_port_offloads(const struct eth_port *p);

/* Reads the hardware/PMD counters and link state; control thread. Returns 0 or -errno. */
int eth_port_stats(const struct eth_port *p, struct eth_port_stats *st);

/* Descriptors of struct eth_port_stats for the stats endpoint. */
extern const struct xlt_metric_desc eth_port_metrics[];
extern const unsigned eth_port_n_metrics;

#endif
