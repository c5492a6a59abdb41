/* Publication of the values a reload may change, read by the workers without locks.
 *
 * Quiescent-state based reclamation, as DPDK's rte_rcu_qsbr does it, on one pointer: the control
 * thread stores the new struct gw_live, then bumps live_epoch; each worker, at the top of every round
 * (where it holds no snapshot), loads the epoch, then the pointer, and reports the epoch it loaded.
 * A replaced snapshot waits in live_retired with the epoch of its replacement and is freed once
 * every worker has reported that epoch or a later one: by then each of them has taken a newer
 * snapshot and finished every read of the old one. A worker that sleeps still starts a round
 * every idle_sleep at most, so the grace period is short; the sweep runs every second.
 * (rte_rcu_qsbr would add a variable sized per-thread array and thread registration for the same
 * one-writer case; this is the few lines it needs here.) */
#include <errno.h>
#include <stdlib.h>

#include "../conf/conf.h"
#include "backend.h"
#include "gw.h"

struct gw_live *gw_live_make(const struct gw_daemon *d, const struct conf *c)
{
	struct gw_live *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->max_sessions =
	    c->gateway.max_sessions < d->cap_sessions ? c->gateway.max_sessions : d->cap_sessions;
	l->idle_sleep_us = c->gateway.idle_sleep_us;
	l->busy_poll_ns = c->gateway.busy_poll_us * 1000;
	gw_backends_fill(d, l);
	l->alog_on = c->gateway.access_log[0] != 0;
	l->alog_interval_ns = c->gateway.access_log_interval_ms * 1000000ull;
	l->locals = d->locals;
	return l;
}

void gw_live_publish(struct gw_daemon *d, struct gw_live *l)
{
	struct gw_live *old = d->live;
	uint64_t e = d->live_epoch + 1;

	atomic_store_explicit(&d->live, l, memory_order_release);
	atomic_store_explicit(&d->live_epoch, e, memory_order_release);
	if (old) {
		old->retired_epoch = e;
		SLIST_INSERT_HEAD(&d->live_retired, old, retired_link);
	}
}

uint64_t gw_live_seen(const struct gw_daemon *d)
{
	uint64_t seen = UINT64_MAX;

	for (unsigned i = 0; i < d->n_workers; i++) {
		uint64_t e = atomic_load_explicit(&d->workers[i].qs_epoch, memory_order_acquire);
		if (e < seen)
			seen = e;
	}
	return seen;
}

void gw_live_sweep(struct gw_daemon *d)
{
	/* (a pointer to the link to unlink through: glibc's sys/queue.h has no SLIST_REMOVE_AFTER) */
	struct gw_live **pp = &SLIST_FIRST(&d->live_retired);
	uint64_t seen = gw_live_seen(d);

	while (*pp) {
		struct gw_live *l = *pp;
		if (l->retired_epoch <= seen) {
			*pp = SLIST_NEXT(l, retired_link);
			free(l);
		} else {
			pp = &SLIST_NEXT(l, retired_link);
		}
	}
}

void gw_live_fini(struct gw_daemon *d)
{
	while (!SLIST_EMPTY(&d->live_retired)) {
		struct gw_live *l = SLIST_FIRST(&d->live_retired);
		SLIST_REMOVE_HEAD(&d->live_retired, retired_link);
		free(l);
	}
	free(d->live);
	d->live = NULL;
}
