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
		w->slots[i] = NULL;
	w->now = now;
	w->armed = 0;
}

static void link_at(struct eth_timer **head, struct eth_timer *t)
{
	t->next = *head;
	if (t->next)
		t->next->pprev = &t->next;
	t->pprev = head;
	*head = t;
}

static void unlink_timer(struct eth_timer *t)
{
	*t->pprev = t->next;
	if (t->next)
		t->next->pprev = t->pprev;
	t->next = NULL;
	t->pprev = NULL;
}

void eth_timer_cancel(struct eth_twheel *w, struct eth_timer *t)
{
	if (!t->pprev)
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
	link_at(&w->slots[when % ETH_TWHEEL_SLOTS], t);
	w->armed++;
}

/* Fires the due timers of slot S (the clock already reads w->now). */
static unsigned run_slot(struct eth_twheel *w, unsigned s, eth_timer_fn fn, void *arg)
{
	struct eth_timer *pending = w->slots[s], *t;
	unsigned fired = 0;

	if (!pending)
		return 0;
	w->slots[s] = NULL;
	pending->pprev = &pending;
	while ((t = pending)) {
		unlink_timer(t);
		if (t->when > w->now) {
			link_at(&w->slots[s], t); /* a later lap */
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
