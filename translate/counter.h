/* Counters with one writer: the one way every module bumps and reads its statistics.
 *
 * A counter (or gauge) of a stats struct is written by exactly one thread, its owner (a worker for
 * per-worker and per-route-per-worker structs, the control thread for its own), and read by the
 * control thread while it renders /metrics and /stats. With one writer no read-modify-write atomic is
 * needed: the owner loads and stores relaxed (no lock prefix, no fence on the datapath), and since an
 * aligned 64-bit store is single-copy atomic, a reader loading relaxed sees either the old or the new
 * value, never a torn one. Every access from another thread than the owner goes through
 * xlt_counter_read; the owner may read through it too. Counters that several threads add to (route
 * admission, backend sessions) are not counters of this kind: they use atomic read-modify-writes
 * where they are. */
#ifndef XLT_COUNTER_H
#define XLT_COUNTER_H

#include <stdint.h>

/* Owner: adds N to *C (a gauge goes down by adding (uint64_t)-N: the sum wraps to the difference). */
static inline void xlt_counter_add(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* Owner: sets gauge *C to V. */
static inline void xlt_counter_set(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, v, __ATOMIC_RELAXED);
}

/* Any thread: the value of *C (whole: as of the owner's last store or a later one). */
static inline uint64_t xlt_counter_read(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

#endif
