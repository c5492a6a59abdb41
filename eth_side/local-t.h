/* Types of the engine's local address set (see stack.h, eth_stack_set_locals). */
#ifndef ETH_LOCAL_T_H
#define ETH_LOCAL_T_H

#include <stdint.h>

#include "../translate/ip-t.h"

/* Addresses an instance owns besides its configured ones ([eth] address, address6), at most this many,
 * of both families together. */
#define ETH_LOCAL_MAX 16

enum {
	ETH_LOCAL_NONE = 0, /* not ours */
	ETH_LOCAL_UP,       /* ours: ARP / neighbour solicitations answered, new connections accepted */
	ETH_LOCAL_GONE,     /* left the kernel interface: its connections go on (or are reset), no new ones */
};

/* The addresses the kernel put on the exception TAP (gateway/kernel.c), published by the control
 * thread inside its live snapshot: immutable once published, read by every worker. */
struct eth_local_set {
	uint32_t gen; /* changes with every new set: worker 0 announces new addresses */
	uint32_t n;
	uint8_t reset_gone; /* connections to a GONE address are reset at their next segment */
	struct {
		struct xlt_ip addr; /* either family (IPv4 mapped), never link-local */
		uint8_t state; /* ETH_LOCAL_UP or ETH_LOCAL_GONE */
	} a[ETH_LOCAL_MAX];
};

#endif
