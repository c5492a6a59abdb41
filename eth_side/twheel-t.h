/* Types of the timer wheel (see twheel.h). */
#ifndef ETH_TWHEEL_T_H
#define ETH_TWHEEL_T_H

#include <stdint.h>
#include <sys/queue.h>

#define ETH_TWHEEL_SLOTS 4096u /* 1 ms ticks: one revolution is 4.096 s */

/* A timer, embedded in its owner (a TCP connection has exactly one). Zeroed = not armed. */
struct eth_timer {
	LIST_ENTRY(eth_timer) link; /* its slot; link.le_prev is NULL when not armed */
	uint64_t when;		  /* tick it fires at */
};

struct eth_twheel {
	uint64_t now;	 /* last tick processed */
	uint64_t armed;	 /* timers armed */
	LIST_HEAD(eth_timer_list, eth_timer) slots[ETH_TWHEEL_SLOTS];
};

#endif
