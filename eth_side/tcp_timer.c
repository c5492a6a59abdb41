/* TCP timers and round-trip estimation.
 *
 * Each connection has ONE wheel timer, armed at the earliest of three deadlines: retransmission
 * (which also times SYN/SYN-ACK retries and the persist probes: they never run at once), delayed
 * ACK, and "keep" (keepalive, the connect deadline, or the end of TIME_WAIT, by state); plus the
 * expiry of out-of-order data (t_ooo, handled by tcp_in.c). Moving a
 * deadline later does not touch the wheel: the timer fires early, finds nothing due and re-arms,
 * which is cheaper than re-arming on every ACK.
 *
 * RTO after RFC 6298: SRTT/RTTVAR from samples (timestamps when negotiated, else one timed segment
 * per RTT and never a retransmitted one: Karn's rule), RTO = SRTT + 4 RTTVAR bounded to
 * [200 ms, 60 s], doubled on each expiry. A connection whose oldest unacknowledged data (or unanswered
 * window probe) is older than [eth] user_timeout is dropped with ETIMEDOUT. */
#include <errno.h>
#include <stddef.h>

#include "buf.h"
#include "engine.h"
#include "sndq.h"
#include "tcp_seq.h"
#include "twheel.h"

#define MAX_BACKOFF 15

static uint64_t earliest(uint64_t a, uint64_t b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a < b ? a : b;
}

void eth_tcb_timer_update(struct eth_tcb *t)
{
	uint64_t when = earliest(earliest(earliest(earliest(earliest(t->t_rexmit, t->t_delack), t->t_keep), t->t_ooo),
	                                  t->t_pmtu),
	                         t->t_wupd);
	struct eth_twheel *w = &t->st->wheel;

	if (!when)
		eth_timer_cancel(w, &t->timer);
	else if (!eth_timer_armed(&t->timer) || when < t->timer.when)
		eth_timer_arm(w, &t->timer, when);
}

void eth_tcp_rtt_sample(struct eth_tcb *t, uint32_t rtt_us)
{
	uint32_t var4, rto_us;

	if (!t->srtt_us) {
		t->srtt_us = rtt_us ? rtt_us : 1;
		t->rttvar_us = rtt_us / 2;
	} else {
		uint32_t delta = t->srtt_us > rtt_us ? t->srtt_us - rtt_us : rtt_us - t->srtt_us;
		t->rttvar_us = (3 * t->rttvar_us + delta) / 4;
		t->srtt_us = (7 * t->srtt_us + rtt_us) / 8;
		if (!t->srtt_us)
			t->srtt_us = 1;
	}
	var4 = 4 * t->rttvar_us;
	rto_us = t->srtt_us + (var4 > 1000 ? var4 : 1000); /* G = 1 ms, our clock */
	t->rto_ms = rto_us / 1000;
	if (t->rto_ms < ETH_TCP_RTO_MIN_MS)
		t->rto_ms = ETH_TCP_RTO_MIN_MS;
	if (t->rto_ms > ETH_TCP_RTO_MAX_MS)
		t->rto_ms = ETH_TCP_RTO_MAX_MS;
}

uint32_t eth_tcp_rto_backed_off(const struct eth_tcb *t)
{
	uint64_t rto = (uint64_t)t->rto_ms << (t->backoff < MAX_BACKOFF ? t->backoff : MAX_BACKOFF);

	return rto > ETH_TCP_RTO_MAX_MS ? ETH_TCP_RTO_MAX_MS : (uint32_t)rto;
}

void eth_tcp_rexmit_arm(struct eth_tcb *t)
{
	t->t_rexmit = t->st->now_ms + eth_tcp_rto_backed_off(t);
}

/* The window update that opens a window we had shut goes again if no data comes: a peer with data
 * waiting learns of it from this one ACK, or from its next zero-window probe, which its timer backs
 * off while the window stays shut (Linux: up to 2 minutes). A gateway shuts windows for backpressure
 * as a matter of course; over a lossy link, one update lost could stall a relay for that long. So
 * it goes again after an RTO, then after 2 and 4 RTOs, until data from the peer moves rcv_nxt (a
 * pure ACK or a probe does not stop it). Data the peer sent that was lost meanwhile makes these
 * duplicate ACKs: three at most, which a sender with data in flight takes for the loss they show. */
#define WUPD_TRIES 3

void eth_tcp_wupd_arm(struct eth_tcb *t)
{
	t->wupd_rcv = t->rcv_nxt;
	t->wupd_tries = 0;
	t->t_wupd = t->st->now_ms + t->rto_ms;
	eth_tcb_timer_update(t);
}

static void wupd_fire(struct eth_tcb *t)
{
	if (t->rcv_nxt != t->wupd_rcv || t->zero_wnd_adv || t->fin_rcvd || !eth_tcb_rcv_open(t))
		return; /* it sent since, the window shut again, or it will send nothing more */
	t->ack_now = true;
	eth_tcb_output_later(t);
	if (++t->wupd_tries < WUPD_TRIES)
		t->t_wupd = t->st->now_ms + ((uint64_t)t->rto_ms << t->wupd_tries);
}

void eth_tcp_keepalive_reset(struct eth_tcb *t)
{
	if (t->st->c.keepalive_ms)
		t->t_keep = t->st->now_ms + t->st->c.keepalive_ms;
}

/* Whether T's peer is given up on (then reset and closed): user_timeout after the first timeout
 * since it last acknowledged anything (first_rexmit_ms, which the input path clears), or after
 * MAX_BACKOFF timeouts. A peer that is only PROBING's target (its window shut or too small) answers
 * each probe, which clears first_rexmit_ms too: it is given up on for its silence alone, however
 * many probes it answered (how long it may keep its window shut is the route's stall_timeout). */
static bool gave_up(struct eth_tcb *t, bool probing)
{
	struct eth_stack *st = t->st;

	if (!t->first_rexmit_ms) {
		t->first_rexmit_ms = st->now_ms;
		return false;
	}
	if (st->now_ms - t->first_rexmit_ms < st->c.user_timeout_ms && (probing || t->backoff < MAX_BACKOFF))
		return false;
	eth_tcp_send_rst(t); /* if the peer is only unreachable, let it know once it is back */
	eth_tcb_close(t, -ETIMEDOUT);
	return true;
}

/* Arms the timer for T's next window probe: backed off as a retransmission, but at most a third of
 * user_timeout away, so that one probe or answer lost does not make a peer that answers look silent
 * for user_timeout (the backed-off timeout reaches a minute, the default user_timeout). */
static void probe_arm(struct eth_tcb *t)
{
	uint32_t iv = eth_tcp_rto_backed_off(t), most = t->st->c.user_timeout_ms / 3;

	t->t_rexmit = t->st->now_ms + (iv < most ? iv : most);
}

static void rexmit_fire(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;
	uint32_t flight;

	switch (t->state) {
	case ETH_TCP_SYN_RCVD:
		if (t->backoff >= eth_tcp_synack_retries(t)) {
			eth_tcb_close(t, -ETIMEDOUT);
			return;
		}
		/* fall through - the SYN-ACK goes again as a SYN would */
	case ETH_TCP_SYN_SENT:
		t->backoff++;
		t->snd_nxt = t->iss;
		t->rtt_timing = false;
		ETH_REXMIT(t);
		xlt_counter_add(&st->stats.tcp_rto_expiries, 1);
		eth_tcp_rexmit_arm(t);
		eth_tcb_output_later(t);
		return;
	case ETH_TCP_CLOSED:
	case ETH_TCP_TIME_WAIT:
		return;
	default:
		break;
	}
	if (t->snd_una == t->snd_max) {
		/* persist: is the window still too small for what waits? */
		uint32_t avail = eth_sndq_len(t);
		if (!avail || (t->snd_wnd >= avail || t->snd_wnd >= t->mss)) {
			t->backoff = 0;
			eth_tcb_output_later(t);
			return;
		}
		if (gave_up(t, true))
			return;
		if (t->backoff < MAX_BACKOFF)
			t->backoff++;
		if (t->snd_wnd) {
			/* open, but below what sender SWS avoidance waits for, and nothing in flight: the
			 * override timeout (RFC 9293 3.8.6.2.1) sends what fits. A probe alone would wait
			 * for ever on a receiver that keeps a small window open (Linux advertises 0
			 * instead; small stacks do not), holding the bytes lent from the IB ring */
			t->sws_override = true;
			eth_tcb_output_later(t);
			return;
		}
		/* Linux's probe: an old sequence number the peer must answer with its window */
		eth_tcp_xmit(t, t->snd_una - 1, 0, RTE_TCP_ACK_FLAG);
		probe_arm(t);
		return;
	}
	if (gave_up(t, t->snd_wnd < t->mss))
		return;
	xlt_counter_add(&st->stats.tcp_rto_expiries, 1);
	flight = t->snd_max - t->snd_una;
	if (t->backoff == 0)
		t->ssthresh = flight / 2 > 2u * t->mss ? flight / 2 : 2u * t->mss; /* RFC 5681 (4) */
	t->cwnd = t->mss;
	t->bytes_acked = 0;
	t->in_recovery = false;
	t->dupacks = 0;
	t->recover = t->snd_max;
	t->rto_slow_start = true;
	t->n_sacked = 0; /* RFC 2018 8: the receiver may have reneged */
	t->high_rxt = t->snd_una;
	t->snd_nxt = t->snd_una; /* go back N */
	t->rtt_timing = false;	 /* Karn */
	if (t->backoff < MAX_BACKOFF)
		t->backoff++;
	eth_tcp_rexmit_arm(t);
	eth_tcb_output_later(t);
	/* A peer that shrank its window over data in flight (RFC 1122 4.2.2.16: it must be probed, not
	 * timed out), as persist does: a window below a segment gets what fits (sender SWS avoidance
	 * would send nothing), a shut one a probe; its answers keep the connection (tcp_in.c), and when
	 * it opens, the data goes again from snd_una. */
	if (t->snd_wnd < t->mss)
		t->sws_override = true;
	if (!t->snd_wnd) {
		eth_tcp_xmit(t, t->snd_una - 1, 0, RTE_TCP_ACK_FLAG);
		probe_arm(t);
	}
}

/* Returns true when T was freed. */
static bool keep_fire(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;

	switch (t->state) {
	case ETH_TCP_SYN_SENT:
		eth_tcb_close(t, -ETIMEDOUT);
		return false;
	case ETH_TCP_TIME_WAIT:
		if (t->released) {
			eth_tcb_free(t);
			return true;
		}
		eth_tcb_detach(t);
		eth_tcb_check_done(t);
		return false;
	case ETH_TCP_CLOSED:
	case ETH_TCP_SYN_RCVD:
		return false;
	default:
		break;
	}
	if (!st->c.keepalive_ms)
		return false;
	if (t->snd_una != t->snd_max || st->now_ms - t->last_rcv_ms < st->c.keepalive_ms) {
		/* busy (retransmissions watch the peer) or not idle long enough yet */
		t->probes = 0;
		t->t_keep = (t->snd_una != t->snd_max ? st->now_ms : t->last_rcv_ms) + st->c.keepalive_ms;
		return false;
	}
	if (t->probes >= st->c.keepalive_probes) {
		eth_tcp_send_rst(t);
		eth_tcb_close(t, -ETIMEDOUT);
		return false;
	}
	t->probes++;
	xlt_counter_add(&st->stats.tcp_keepalive_probes, 1);
	eth_tcp_xmit(t, t->snd_una - 1, 0, RTE_TCP_ACK_FLAG);
	t->t_keep = st->now_ms + (st->c.keepalive_intvl_ms ? st->c.keepalive_intvl_ms : 1000);
	return false;
}

void eth_tcp_timer_fire(void *arg, struct eth_timer *tm)
{
	struct eth_tcb *t = (struct eth_tcb *)((char *)tm - offsetof(struct eth_tcb, timer));
	struct eth_stack *st = arg;
	uint64_t now = st->now_ms;

	if (t->t_delack && t->t_delack <= now) {
		t->t_delack = 0;
		t->ack_now = true;
		eth_tcb_output_later(t);
	}
	if (t->t_rexmit && t->t_rexmit <= now) {
		t->t_rexmit = 0;
		rexmit_fire(t);
		if (t->state == ETH_TCP_CLOSED)
			return;
	}
	if (t->t_keep && t->t_keep <= now) {
		t->t_keep = 0;
		if (keep_fire(t) || t->state == ETH_TCP_CLOSED)
			return;
	}
	if (t->t_ooo && t->t_ooo <= now) {
		t->t_ooo = 0;
		eth_tcp_ooo_expire(t); /* (tcp_in.c: it may set the deadline again, never frees T) */
	}
	if (t->t_pmtu && t->t_pmtu <= now) {
		t->t_pmtu = 0;
		eth_pmtu_resend_due(t); /* (pmtu.c: never frees T) */
	}
	if (t->t_wupd && t->t_wupd <= now) {
		t->t_wupd = 0;
		wupd_fire(t);
	}
	eth_tcb_timer_update(t);
}
