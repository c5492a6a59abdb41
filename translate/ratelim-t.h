/* Types of the rate limiters (see ratelim.h). */
#ifndef XLT_RATELIM_T_H
#define XLT_RATELIM_T_H

#include <stdint.h>

/* One kind of log line's limiter. Zeroed: the next line may be written. One thread's (its owner's). */
struct xlt_ratelim {
	uint64_t next_ns;    /* no line before this time */
	uint64_t suppressed; /* lines held back since the last one written */
};

/* A count of events in one window of time. Zeroed: the next event starts one. */
struct xlt_window {
	uint64_t start; /* when the window began (the caller's clock and unit) */
	uint32_t n;     /* events let through in it */
};

#endif
