/* Types of the DPDK port (see port.h). */
#ifndef ETH_PORT_T_H
#define ETH_PORT_T_H

#include <stdint.h>

#include "../translate/metric-t.h"

struct eth_port;

/* A snapshot of the port's counters, read by the control thread for /metrics. */
struct eth_port_stats {
	uint64_t rx_packets;
	uint64_t tx_packets;
	uint64_t rx_bytes;
	uint64_t tx_bytes;
	uint64_t rx_errors;
	uint64_t tx_errors;
	uint64_t rx_missed;
	uint64_t rx_nombuf;
	uint64_t link_up;
	uint64_t link_speed_mbps;
	uint64_t mbufs_in_use;
};

#endif
