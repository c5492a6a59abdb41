/* Timer wheel (design in twheel.h).
 *
 * Running a slot first detaches its whole list, then pops timers one at a time: a timer that is not
 * due yet (a later lap) goes back, a due one is fired. Because the detached list keeps proper back
 * links, a callback may cancel any other timer still waiting in it, and re-arming can never put a
 * timer back into the slot being run (arm clamps to now + 1). */
#include <stddef.h>

#include "twheel.h"

void eth_twheel_init(struct eth_twheel *w, uint64_t now)
{
	for (unsigned i = 0; i < ETH_TWHEEL_SLOTS; i++)
		LIST_INIT(&w->slots[i]);
	w->now = now;
	w->armed = 0;
}

static void unlink_timer(struct eth_timer *t)
{
	LIST_REMOVE(t, link);
	t->link.le_next = NULL;
	t->link.le_prev = NULL; /* not armed (eth_timer_armed) */
}

void eth_timer_cancel(struct eth_twheel *w, struct eth_timer *t)
{
	if (!eth_timer_armed(t))
		return;
	unlink_timer(t);
	w->armed--;
}

void eth_timer_arm(struct eth_twheel *w, struct eth_timer *t, uint64_t when)
{
	eth_timer_cancel(w, t);
	if (when <= w->now)
		when = w->now + 1;
	t->when = when;
	LIST_INSERT_HEAD(&w->slots[when % ETH_TWHEEL_SLOTS], t, link);
	w->armed++;
}

/* Fires the due timers of slot S (the clock already reads w->now). */
static unsigned run_slot(struct eth_twheel *w, unsigned s, eth_timer_fn fn, void *arg)
{
	struct eth_timer_list pending = w->slots[s];
	struct eth_timer *t;
	unsigned fired = 0;

	if (LIST_EMPTY(&pending))
		return 0;
	/* the list moves to PENDING: its first timer's back link follows (glibc's sys/queue.h has no
	 * LIST_SWAP) */
	LIST_FIRST(&pending)->link.le_prev = &LIST_FIRST(&pending);
	LIST_INIT(&w->slots[s]);
	while ((t = LIST_FIRST(&pending))) {
		unlink_timer(t);
		if (t->when > w->now) {
			LIST_INSERT_HEAD(&w->slots[s], t, link); /* a later lap */
			continue;
		}
		w->armed--;
		fired++;
		fn(arg, t);
	}
	return fired;
}

unsigned eth_twheel_run(struct eth_twheel *w, uint64_t now, eth_timer_fn fn, void *arg)
{
	unsigned fired = 0;

	if (now <= w->now || !w->armed) {
		if (now > w->now)
			w->now = now;
		return 0;
	}
	if (now - w->now >= ETH_TWHEEL_SLOTS) {
		/* a long stall: every slot may hold due timers, visit each once at the new time */
		w->now = now;
		for (unsigned s = 0; s < ETH_TWHEEL_SLOTS && w->armed; s++)
			fired += run_slot(w, s, fn, arg);
		return fired;
	}
	while (w->now < now) {
		if (!w->armed) {
			w->now = now;
			break;
		}
		w->now++;
		fired += run_slot(w, (unsigned)(w->now % ETH_TWHEEL_SLOTS), fn, arg);
	}
	return fired;
}
