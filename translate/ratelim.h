/* Rate limiting. xlt_ratelim: a log line a peer (or a shortage) can cause at will is written at most
 * once per interval, and the next one written says how many were held back meanwhile.
 * xlt_window: at most MAX events per window of time (a peer's challenge ACKs, its keepalives).
 *
 * Pure logic: the caller passes its clock's current time (the time it read already), so the check
 * makes no system call and allocates nothing, and a worker may use it on its datapath. Not
 * thread-safe: a limiter belongs to one thread. */
#ifndef XLT_RATELIM_H
#define XLT_RATELIM_H

#include <stdbool.h>
#include <stdint.h>

#include "ratelim-t.h"

/* True when a line may be written at NOW_NS (then none is allowed before NOW_NS + INTERVAL_NS), and
 * *SUPPRESSED is the number of lines held back since the last one written; false when the line is
 * to be held back (counted). */
static inline bool xlt_ratelim_ok(struct xlt_ratelim *r, uint64_t now_ns, uint64_t interval_ns,
                                  uint64_t *suppressed)
{
	if (now_ns < r->next_ns) {
		r->suppressed++;
		return false;
	}
	*suppressed = r->suppressed;
	r->suppressed = 0;
	r->next_ns = now_ns + interval_ns;
	return true;
}

/* True when the event at NOW may pass: at most MAX in the window of length LEN (NOW's unit) that
 * began with the first event after the last window ended. An event held back is not counted. */
static inline bool xlt_window_ok(struct xlt_window *w, uint64_t now, uint64_t len, uint32_t max)
{
	if (now - w->start >= len) {
		w->start = now;
		w->n = 0;
	}
	if (w->n >= max)
		return false;
	w->n++;
	return true;
}

#endif
