/* Log rate limiting: a line a peer (or a shortage) can cause at will is written at most once per
 * interval, and the next one written says how many were held back meanwhile.
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

#endif
