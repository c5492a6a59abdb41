/* Timer wheel: one per worker, for all of its TCP connections' timers.
 *
 * A hashed wheel of 1 ms slots. A timer sits in slot (when % SLOTS) and keeps its absolute tick,
 * so timers further away than one revolution simply wait in their slot for later laps: arming and
 * cancelling are O(1), and each tick visits one slot. Time is whatever the caller passes in
 * (milliseconds of the worker's clock), which makes the wheel testable with a fake clock.
 * Not thread-safe: owned by one worker. */
#ifndef ETH_TWHEEL_H
#define ETH_TWHEEL_H

#include <stdbool.h>

#include "twheel-t.h"

typedef void (*eth_timer_fn)(void *arg, struct eth_timer *t);

/* Starts an empty wheel whose clock reads NOW. */
void eth_twheel_init(struct eth_twheel *w, uint64_t now);

/* Arms T to fire at tick WHEN (re-arms it if armed). A time not after the wheel's clock fires at
 * the next run. */
void eth_timer_arm(struct eth_twheel *w, struct eth_timer *t, uint64_t when);

/* Disarms T; harmless when it is not armed. */
void eth_timer_cancel(struct eth_twheel *w, struct eth_timer *t);

static inline bool eth_timer_armed(const struct eth_timer *t)
{
	return t->link.le_prev != NULL;
}

/* Advances the clock to NOW and calls FN(ARG, timer) for every timer due, each disarmed before
 * its call; FN may arm or cancel any timer, this one included. Returns the number fired. */
unsigned eth_twheel_run(struct eth_twheel *w, uint64_t now, eth_timer_fn fn, void *arg);

#endif
