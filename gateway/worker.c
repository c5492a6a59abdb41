/* Datapath worker loop.
 *
 * A round has three phases, as DPDK datapaths do, written out in order in gw_worker_main:
 *  - receive: the Ethernet RX burst and the IB completions. Engines update their state and collect
 *    stream events; nothing is handed to a session yet.
 *  - relay: the events fire (Ethernet side, then IB side), and sessions move bytes between their
 *    streams. A stream op only queues: TCP output waits on the engine's output list, IB work
 *    (credits, data, end of stream, aborts) on the connection's work list.
 *  - flush: TCP builds its segments and the TX burst hands them to the device; then every IB
 *    connection with work posts it as one chain of work requests, one doorbell (ibv_post_send).
 *    Bytes the relay queued for an IB peer during the whole round leave as few RDMA writes as the
 *    peer's advertised space allows (up to 64 KiB each, rsocket's largest), not one per write op.
 * What a phase queues for an earlier phase (an event raised while flushing) is taken by the next
 * round, which then does not sleep.
 *
 * Each worker polls only what it owns (its port queue, its TCP engine, its IB completion queues), so
 * the hot path takes no locks. When a whole round finds nothing to do the worker sleeps, for at most
 * [gateway] idle_sleep: on a shared box a busy-polling worker would starve the peers it serves, and
 * idle_sleep = 0 gives classic DPDK busy polling. A reload may change idle_sleep: it is read from the
 * snapshot the worker takes at the top of each round (live.c).
 *
 * Sleeping must not delay work, so the worker sleeps in ppoll() on what signals new work: the
 * af_packet ring socket of its RX queue (readable when a frame is in the ring) or the queue's RX
 * interrupt eventfd (virtio_user; interrupts on only while sleeping), and the event channels of its
 * CQs (armed first: readable at the next completion). Arming is followed by one more round,
 * which finds whatever arrived in between, before the worker actually sleeps. When those fds cover
 * every source of work the sleep is the whole idle_sleep at once, and at least COVERED_NAP_US: what
 * no fd announces then is only the engines' timers, whose wheel turns in milliseconds anyway, and the
 * control thread's messages, so waking more often would buy nothing but CPU (an idle worker under
 * soft-RoCE/TCG spent a fifth to half of a vCPU on 100 us naps). Otherwise (frames steered from other
 * workers, a PMD without an fd, a CQ without a channel) the naps grow from 1 us to idle_sleep. The IB
 * side keeps the worker polling for [gateway] busy_poll after each completion (ib.h): within a
 * burst, polling beats sleeping and being woken; so does the Ethernet side after frames when its
 * wake-up is a device interrupt (eth_glue.c). busy_poll trades CPU per byte for latency. While it
 * polls only for what is due, the worker yields the CPU after each empty round (sched_yield): on a
 * core of its own nothing else is runnable and the call returns at once, but where it shares a CPU
 * with the threads that produce that work (the kernel's vhost-net and rxe threads, a local peer)
 * spinning would delay the very work it waits for. Control-thread messages (new sessions,
 * listeners) wait for the next round: at most the longer of idle_sleep and COVERED_NAP_US. */
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "../eth_side/stack.h"
#include "../ib_side/ib.h"
#include "gw.h"
#include "log.h"
#include "metrics.h"

const struct xlt_metric_desc gw_worker_metrics[] = {
	{"worker_loop_iterations_total", XLT_COUNTER, offsetof(struct gw_worker_stats, loops),
	 "iterations of the worker's poll loop", NULL},
	{"worker_busy_iterations_total", XLT_COUNTER, offsetof(struct gw_worker_stats, busy_loops),
	 "poll loop iterations that found work", NULL},
	{"worker_idle_sleeps_total", XLT_COUNTER, offsetof(struct gw_worker_stats, idle_sleeps),
	 "naps taken by an idle worker", NULL},
	{"worker_idle_wakeups_total", XLT_COUNTER, offsetof(struct gw_worker_stats, idle_wakeups),
	 "naps ended by an fd (a frame, an IB completion) before their timeout", NULL},
	{"worker_poll_windows_total", XLT_COUNTER, offsetof(struct gw_worker_stats, poll_hits),
	 "[gateway] busy_poll windows, by outcome: hit (work came while the worker polled for it), miss "
	 "(it napped all the same)", "outcome=hit"},
	{"worker_poll_windows_total", XLT_COUNTER, offsetof(struct gw_worker_stats, poll_misses), "",
	 "outcome=miss"},
	{"worker_rx_packets_total", XLT_COUNTER, offsetof(struct gw_worker_stats, rx_packets),
	 "packets taken from the worker's RX queue", NULL},
	{"worker_sessions_active", XLT_GAUGE, offsetof(struct gw_worker_stats, sessions_active),
	 "sessions owned by the worker", NULL},
};
const unsigned gw_worker_n_metrics = sizeof(gw_worker_metrics) / sizeof(gw_worker_metrics[0]);

/* Payload bytes the CPU copied, per worker and direction, summed over the copies each engine makes
 * where it makes them: ib_to_eth is the TCP write op (into the send queue) and the frames built from
 * it (retransmits included), eth_to_ib is frames into TCP receive queues and the IB write op (into the
 * send buffer). Reading the IB receive buffer costs no copy (peek lends it). Echo routes count the
 * same way, by the engine that copied. */
void gw_worker_copy_metrics(struct gw_daemon *d, struct gw_metrics *m)
{
	static const char *const dirs[2] = {"ib_to_eth", "eth_to_ib"};

	gw_metrics_family(m, "copied_bytes_total", XLT_COUNTER,
			  "payload bytes copied by the CPU on the relay path, by direction (a byte copied "
			  "twice counts twice)");
	for (unsigned k = 0; k < 2; k++)
		for (unsigned i = 0; i < d->n_workers; i++) {
			const struct gw_worker *w = &d->workers[i];
			const struct eth_stack_stats *es = w->eth ? eth_stack_stats(w->eth) : NULL;
			const struct ib_worker_stats *is = w->ib ? ib_worker_stats(w->ib) : NULL;
			uint64_t v = 0;
			char id[12];

			if (es)
				v += xlt_counter_read(k ? &es->copied_in : &es->copied_out);
			if (is && k)
				v += xlt_counter_read(&is->copied_tx);
			snprintf(id, sizeof(id), "%u", i);
			gw_metrics_sample(m, (double)v, "dir", dirs[k], "worker", id, NULL);
		}
}

/* At most this many fds are waited on: the RX queue's and 16 CQs'; a worker with more naps instead
 * (see above). */
#define WAIT_FDS 17
/* The shortest sleep of a worker whose fds announce all its work (see above): the timer wheels'
 * resolution. */
#define COVERED_NAP_US 1000

int gw_worker_main(void *arg)
{
	struct gw_worker *w = arg;
	struct pollfd fds[WAIT_FDS];
	unsigned side_fds[GW_N_SIDES + 1]; /* side i armed fds[side_fds[i] .. side_fds[i + 1]) */
	uint64_t nap_us = 0;
	unsigned n_fds = 0;
	bool armed = false, covered = false;

	gw_log_nowait();
	while (!atomic_load_explicit(&w->stop, memory_order_acquire)) {
		const struct gw_live *live = gw_live_enter(w); /* quiescent point: see live.c */
		uint64_t now = gw_now_ns();

		if (atomic_load_explicit(&w->abort_all, memory_order_acquire)) {
			atomic_store_explicit(&w->abort_all, false, memory_order_relaxed);
			gw_session_abort_all(w);
		}
		unsigned work = 0;

		w->hot = false;
		/* receive: what the devices have for us; no stream event fires yet */
		for (unsigned i = 0; i < GW_N_SIDES; i++)
			work += gw_sides[i]->rx(w, now);
		/* relay: stream events fire, sessions move bytes; the engines' ops only queue */
		for (unsigned i = 0; i < GW_N_SIDES; i++)
			work += gw_sides[i]->relay(w);
		work += gw_sessions_poll(w, now);
		/* flush: the TX burst, then each IB connection's work requests, chained, one doorbell */
		for (unsigned i = 0; i < GW_N_SIDES; i++)
			work += gw_sides[i]->flush(w);

		xlt_counter_add(&w->st.loops, 1);
		if (work) {
			xlt_counter_add(&w->st.busy_loops, 1);
			if (w->polling) {
				w->polling = false;
				xlt_counter_add(&w->st.poll_hits, 1);
			}
			nap_us = 0;
			armed = false;
			continue;
		}
		if (!live->idle_sleep_us)
			continue;
		if (w->hot) {
			w->polling = true;
			sched_yield(); /* polling for what is due: see above */
			continue;
		}
		if (w->polling) {
			w->polling = false; /* the window ran out: the nap it was to spare comes anyway */
			xlt_counter_add(&w->st.poll_misses, 1);
		}
		if (!armed) {
			n_fds = 0;
			covered = true;
			for (unsigned i = 0; i < GW_N_SIDES; i++) {
				bool c;

				side_fds[i] = n_fds;
				n_fds += (unsigned)gw_sides[i]->arm(w, fds + n_fds, WAIT_FDS - n_fds, &c);
				covered &= c;
			}
			side_fds[GW_N_SIDES] = n_fds;
			armed = true;
			continue; /* one more round: what came before the arming is seen now */
		}
		nap_us = nap_us ? nap_us * 2 : 1;
		if (covered || nap_us > live->idle_sleep_us)
			nap_us = live->idle_sleep_us;
		if (covered && nap_us < COVERED_NAP_US)
			nap_us = COVERED_NAP_US;
		if (ppoll(fds, n_fds, &(struct timespec){.tv_nsec = (long)nap_us * 1000}, NULL) > 0)
			xlt_counter_add(&w->st.idle_wakeups, 1);
		else
			for (unsigned i = 0; i < n_fds; i++)
				fds[i].revents = 0; /* none fired (a timeout, or a signal) */
		for (unsigned i = 0; i < GW_N_SIDES; i++)
			gw_sides[i]->woken(w, fds + side_fds[i], side_fds[i + 1] - side_fds[i]);
		armed = false;
		xlt_counter_add(&w->st.idle_sleeps, 1);
	}
	return 0;
}
