/* Datapath worker loop.
 *
 * Each worker polls only what it owns (its port queue; later its TCP engine and IB completion queue),
 * so the hot path takes no locks. When a whole round finds nothing to do the worker naps with an
 * exponential back-off capped at [gateway] idle_sleep: on a shared 2-core box a busy-polling worker
 * would starve the peers it serves; idle_sleep = 0 gives classic DPDK busy polling. */
#include <time.h>

#include "gw.h"

const struct xlt_metric_desc gw_worker_metrics[] = {
	{"worker_loop_iterations_total", XLT_COUNTER, offsetof(struct gw_worker_stats, loops),
	 "iterations of the worker's poll loop", NULL},
	{"worker_busy_iterations_total", XLT_COUNTER, offsetof(struct gw_worker_stats, busy_loops),
	 "poll loop iterations that found work", NULL},
	{"worker_idle_sleeps_total", XLT_COUNTER, offsetof(struct gw_worker_stats, idle_sleeps),
	 "naps taken by an idle worker", NULL},
	{"worker_rx_packets_total", XLT_COUNTER, offsetof(struct gw_worker_stats, rx_packets),
	 "packets taken from the worker's RX queue", NULL},
	{"worker_sessions_active", XLT_GAUGE, offsetof(struct gw_worker_stats, sessions_active),
	 "sessions owned by the worker", NULL},
};
const unsigned gw_worker_n_metrics = sizeof(gw_worker_metrics) / sizeof(gw_worker_metrics[0]);

int gw_worker_main(void *arg)
{
	struct gw_worker *w = arg;
	uint64_t nap_us = 0;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		uint64_t now = gw_now_ns();

		if (__atomic_load_n(&w->abort_all, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&w->abort_all, false, __ATOMIC_RELAXED);
			gw_session_abort_all(w);
		}
		unsigned work = gw_eth_poll(w, now) + gw_ib_poll(w, now) + gw_sessions_poll(w, now);

		gw_bump(&w->st.loops, 1);
		if (work) {
			gw_bump(&w->st.busy_loops, 1);
			nap_us = 0;
			continue;
		}
		if (!w->idle_sleep_us)
			continue;
		nap_us = nap_us ? nap_us * 2 : 1;
		if (nap_us > w->idle_sleep_us)
			nap_us = w->idle_sleep_us;
		nanosleep(&(struct timespec){.tv_nsec = (long)nap_us * 1000}, NULL);
		gw_bump(&w->st.idle_sleeps, 1);
	}
	return 0;
}
