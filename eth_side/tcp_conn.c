/* TCP connection blocks, the connection table, listeners, active opens and the stream ops.
 *
 * Blocks come from a per-worker array reserved at start and touched only as used (a free list of
 * returned blocks first), so no allocation happens on the datapath and an idle connection costs
 * one block. When blocks run out, the oldest released TIME_WAIT block is recycled (as Linux does
 * past tcp_max_tw_buckets): a new connection is worth more than the tail of an old one's 2MSL.
 *
 * A block outlives its stream in TIME_WAIT: the session sees on_closed and releases the stream, and
 * the block stays in the table until the TIME_WAIT timer ends, answering retransmitted FINs.
 *
 * Half-open connections: the instance keeps syn_backlog of them at most (its share of [eth]
 * syn_backlog), and each open listener syn_backlog / listeners of those, so a flood on one port
 * leaves the others their room; past its share a listener answers with SYN cookies (tcp_in.c).
 * While a listener's half-open count is at half its share or more, and for ETH_TCP_PRESS_HOLD_MS
 * after a SYN last found it so, its SYN-ACKs are retried twice instead of five times: a spoofed SYN
 * then holds a block 7 s instead of 63 (Linux shortens its retries under the same pressure), and
 * the table is empty 7 s after a flood ends. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "buf.h"
#include "engine.h"
#include "sndq.h"
#include "rcvq.h"
#include "stack.h"
#include "tcp_seq.h"
#include "twheel.h"

static bool counts_active(uint8_t s)
{
	return s >= ETH_TCP_ESTABLISHED && s <= ETH_TCP_LAST_ACK;
}

void eth_tcb_set_state(struct eth_tcb *t, enum eth_tcp_state s)
{
	struct eth_stack *st = t->st;
	uint8_t old = t->state;

	if (old == s)
		return;
	if (old == ETH_TCP_SYN_RCVD) {
		xlt_counter_add(&st->stats.tcp_syn_rcvd, (uint64_t)-1);
		if (t->lis)
			t->lis->n_syn--;
	} else if (counts_active(old))
		xlt_counter_add(&st->stats.tcp_active, (uint64_t)-1);
	else if (old == ETH_TCP_TIME_WAIT) {
		xlt_counter_add(&st->stats.tcp_time_wait, (uint64_t)-1);
		TAILQ_REMOVE(&st->tw, t, twlink);
	}
	if (old != ETH_TCP_CLOSED && old != ETH_TCP_TIME_WAIT)
		st->n_conns--;
	if (counts_active(old) && (s == ETH_TCP_CLOSED || s == ETH_TCP_TIME_WAIT))
		xlt_counter_add(&st->stats.tcp_closed, 1);
	t->state = (uint8_t)s;
	if (s == ETH_TCP_SYN_RCVD) {
		xlt_counter_add(&st->stats.tcp_syn_rcvd, 1);
		if (t->lis)
			t->lis->n_syn++;
	} else if (counts_active(s))
		xlt_counter_add(&st->stats.tcp_active, 1);
	else if (s == ETH_TCP_TIME_WAIT) {
		xlt_counter_add(&st->stats.tcp_time_wait, 1);
		TAILQ_INSERT_TAIL(&st->tw, t, twlink);
	}
	if (s != ETH_TCP_CLOSED && s != ETH_TCP_TIME_WAIT)
		st->n_conns++;
}

static void update_buffer_gauge(struct eth_stack *st)
{
	eth_buf_gauge(st);
}

struct eth_tcb *eth_tcb_alloc(struct eth_stack *st)
{
	struct eth_tcb *t = SLIST_FIRST(&st->tcb_free);

	if (t) {
		SLIST_REMOVE_HEAD(&st->tcb_free, hlink);
	} else if (st->tcb_carved < st->c.max_conns) {
		t = &st->tcbs[st->tcb_carved++];
	} else {
		struct eth_tcb *tw = TAILQ_FIRST(&st->tw);
		for (unsigned i = 0; tw && i < 16 && !tw->released; i++)
			tw = TAILQ_NEXT(tw, twlink);
		if (!tw || !tw->released)
			return NULL;
		eth_tcb_free(tw);
		t = SLIST_FIRST(&st->tcb_free);
		SLIST_REMOVE_HEAD(&st->tcb_free, hlink);
	}
	memset(t, 0, sizeof(*t));
	STAILQ_INIT(&t->rq);
	t->st = st;
	t->s.ops = &eth_tcp_stream_ops;
	return t;
}

static void unhash(struct eth_tcb *t)
{
	/* (a pointer to the link to unlink through: glibc's sys/queue.h has no SLIST_REMOVE_AFTER) */
	struct eth_tcb **pp = &SLIST_FIRST(&t->st->htab[t->hash & t->st->hmask]);

	if (!t->hashed)
		return;
	while (*pp && *pp != t)
		pp = &SLIST_NEXT(*pp, hlink);
	if (*pp)
		*pp = SLIST_NEXT(t, hlink);
	SLIST_NEXT(t, hlink) = NULL;
	t->hashed = false;
}

void eth_tcb_hash(struct eth_tcb *t, uint64_t h)
{
	struct eth_tcb_chain *b = &t->st->htab[(uint32_t)h & t->st->hmask];
	uint64_t r = eth_siphash_3u32(&t->st->isn_key, (uint32_t)h, (uint32_t)(h >> 32), 0x666c6fu);

	t->hash = (uint32_t)h;
	/* a PRF of H under another key with a tag of its own: the label a peer sees tells it nothing of
	 * the bucket (colliding ports would let it build long chains) */
	t->flow_label = (uint32_t)r & 0xfffffu;
	/* IPv4 IDs counted per connection from a secret start (RFC 7739 5.1): what the peer sees moves
	 * with its own connection's segments only, never with the worker's other traffic */
	t->ip_id = (uint16_t)(r >> 32);
	SLIST_INSERT_HEAD(b, t, hlink);
	t->hashed = true;
}

struct eth_tcb *eth_tcb_lookup(struct eth_stack *st, const struct xlt_ip *laddr, const struct xlt_ip *raddr,
                               uint16_t rport, uint16_t lport, uint64_t h)
{
	struct eth_tcb *t;

	SLIST_FOREACH(t, &st->htab[(uint32_t)h & st->hmask], hlink)
		if (t->rport == rport && t->lport == lport && xlt_ip_eq(&t->raddr, raddr) &&
		    (!laddr || xlt_ip_eq(&t->laddr, laddr)))
			return t;
	return NULL;
}

/* Unlinks T from the list HEAD threaded through FIELD, if it is on it (rare: a TIME_WAIT block
 * recycled or expiring while it still had an ACK or an event queued). STAILQ_REMOVE alone would
 * assume it is there. */
#define TCB_LIST_REMOVE(head, t, field)                                                                      \
	do {                                                                                                 \
		struct eth_tcb *c_;                                                                          \
		STAILQ_FOREACH(c_, head, field)                                                              \
			if (c_ == (t)) {                                                                     \
				STAILQ_REMOVE(head, t, eth_tcb, field);                                      \
				break;                                                                       \
			}                                                                                    \
	} while (0)

void eth_tcb_free(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;

	if (t->on_ev)
		TCB_LIST_REMOVE(&st->ev, t, evlink);
	if (t->on_out)
		TCB_LIST_REMOVE(&st->out, t, outlink);
	t->on_ev = t->on_out = false;

	eth_timer_cancel(&st->wheel, &t->timer);
	unhash(t);
	eth_tcb_set_state(t, ETH_TCP_CLOSED);
	eth_rcvq_free(t);
	eth_bufq_free(&st->chunks, &t->rbuf);
	eth_sndq_free(t, true);
	update_buffer_gauge(st);
	if (t->lis)
		eth_listener_put(st, t->lis);
	t->lis = NULL;
	t->s.ops = NULL; /* a stale stream pointer now faults instead of corrupting */
	SLIST_INSERT_HEAD(&st->tcb_free, t, hlink);
}

void eth_tcb_event(struct eth_tcb *t, unsigned ev)
{
	struct eth_stack *st = t->st;

	t->ev |= (uint8_t)ev;
	if (t->on_ev)
		return;
	t->on_ev = true;
	STAILQ_INSERT_TAIL(&st->ev, t, evlink);
}

void eth_tcb_output_later(struct eth_tcb *t)
{
	struct eth_stack *st = t->st;

	if (t->on_out)
		return;
	t->on_out = true;
	STAILQ_INSERT_TAIL(&st->out, t, outlink);
}

static void reap_later(struct eth_tcb *t)
{
	t->released = true;
	SLIST_INSERT_HEAD(&t->st->reap, t, reaplink);
}

/* A passive connection that never reached the session disappears without a trace. */
static void end_stream(struct eth_tcb *t, int err)
{
	t->close_err = err;
	t->s.state = XLT_STREAM_CLOSED;
	if (t->passive && !t->accepted && !(t->ev & ETH_EV_ACCEPT)) {
		if (!t->released)
			reap_later(t);
		return;
	}
	if (t->passive && !t->accepted) {
		/* accept is queued: drop it, nobody will see this connection */
		t->ev = 0;
		if (!t->released)
			reap_later(t);
		return;
	}
	eth_tcb_event(t, ETH_EV_CLOSED);
}

void eth_tcb_detach(struct eth_tcb *t)
{
	eth_timer_cancel(&t->st->wheel, &t->timer);
	t->t_rexmit = t->t_delack = t->t_keep = t->t_ooo = t->t_pmtu = t->t_wupd = 0;
	unhash(t);
	eth_tcb_set_state(t, ETH_TCP_CLOSED);
}

void eth_tcb_close(struct eth_tcb *t, int err)
{
	struct eth_stack *st = t->st;

	if (t->state == ETH_TCP_CLOSED && t->s.state == XLT_STREAM_CLOSED)
		return;
	if (t->state != ETH_TCP_CLOSED) {
		if (err == -ECONNRESET || err == -ECONNREFUSED)
			xlt_counter_add(&st->stats.tcp_resets, 1);
		else if (err == -ETIMEDOUT)
			xlt_counter_add(&st->stats.tcp_timeouts, 1);
		if (t->state == ETH_TCP_SYN_SENT || (!t->passive && t->state == ETH_TCP_SYN_RCVD))
			xlt_counter_add(&st->stats.tcp_connects_failed, 1);
	}
	eth_tcb_detach(t);
	eth_rcvq_free(t);
	eth_bufq_free(&st->chunks, &t->rbuf);
	eth_sndq_free(t, err != 0); /* an orderly end still reports the bytes its last ACK covered */
	update_buffer_gauge(st);
	t->n_ooo = 0;
	if (t->s.state != XLT_STREAM_CLOSED)
		end_stream(t, err);
	else if (t->released)
		reap_later(t);
}

void eth_tcb_check_done(struct eth_tcb *t)
{
	if (t->s.state == XLT_STREAM_CLOSED)
		return;
	if (!t->s.peer_done && t->fin_rcvd && eth_rcvq_len(t) == 0) {
		/* the end of stream is delivered (on_readable) before the stream may close: a session
		 * must see peer_done on an OPEN stream to pass the half-close on */
		t->s.peer_done = 1;
		eth_tcb_event(t, ETH_EV_READABLE);
		return;
	}
	if (!t->s.peer_done || !t->eof_told)
		return;
	if (t->state == ETH_TCP_TIME_WAIT || (t->state == ETH_TCP_CLOSED && t->fin_rcvd))
		end_stream(t, 0);
}

/* ---- listeners ---- */

struct eth_listener *eth_listener_find(struct eth_stack *st, uint16_t port)
{
	for (unsigned i = 0; i < ETH_MAX_LISTENERS; i++)
		if (st->listeners[i].port == port && st->listeners[i].open)
			return &st->listeners[i];
	return NULL;
}

void eth_listener_put(struct eth_stack *st, struct eth_listener *l)
{
	if (--l->refs)
		return;
	eth_listener_user_put(st, l->user);
	memset(l, 0, sizeof(*l));
}

void eth_listener_user_put(struct eth_stack *st, void *user)
{
	st->c.hooks->route_put(user);
}

int eth_tcp_unlisten(struct eth_stack *st, uint16_t port)
{
	struct eth_listener *l = eth_listener_find(st, port);

	if (!l)
		return -ENOENT;
	l->open = false;
	st->n_listen_open--;
	eth_listener_put(st, l);
	return 0;
}

void eth_tcp_unlisten_all(struct eth_stack *st)
{
	for (unsigned i = 0; i < ETH_MAX_LISTENERS; i++)
		if (st->listeners[i].open)
			eth_tcp_unlisten(st, st->listeners[i].port);
}

int eth_tcp_listen(struct eth_stack *st, uint16_t port, const struct eth_tcp_params *p, void *user)
{
	struct eth_listener *l = NULL;

	if (!port)
		return -EINVAL;
	if ((l = eth_listener_find(st, port))) {
		/* a changed route: same listener, new settings; closing it would reset the handshakes
		 * under way (their final ACK would find no open listener) */
		void *old = l->user;
		l->params = *p;
		l->user = user;
		eth_listener_user_put(st, old);
		return 0;
	}
	for (unsigned i = 0; i < ETH_MAX_LISTENERS && !l; i++)
		if (!st->listeners[i].port)
			l = &st->listeners[i];
	if (!l)
		return -ENOSPC;
	l->port = port;
	l->open = true;
	l->refs = 1;
	l->n_syn = 0;
	l->cookie_ms = 0;
	l->press_ms = 0;
	l->params = *p;
	l->user = user;
	st->n_listen_open++;
	return 0;
}

uint32_t eth_listener_share(const struct eth_stack *st)
{
	uint32_t share = st->syn_backlog / (st->n_listen_open ? st->n_listen_open : 1);

	return share ? share : 1;
}

bool eth_listener_pressed(const struct eth_stack *st, const struct eth_listener *l)
{
	return 2 * l->n_syn >= eth_listener_share(st) || 2 * st->stats.tcp_syn_rcvd >= st->syn_backlog;
}

unsigned eth_tcp_synack_retries(const struct eth_tcb *t)
{
	const struct eth_listener *l = t->lis;

	if (l && (eth_listener_pressed(t->st, l) ||
		  (l->press_ms && t->st->now_ms - l->press_ms < ETH_TCP_PRESS_HOLD_MS)))
		return ETH_TCP_SYNACK_RETRIES_PRESSED;
	return ETH_TCP_SYNACK_RETRIES;
}

/* ---- connection set-up helpers ---- */

uint32_t eth_tcp_isn(struct eth_stack *st, const struct xlt_ip *raddr, const struct xlt_ip *laddr,
                     uint16_t rport, uint16_t lport)
{
	/* RFC 6528: a 4 us clock plus a keyed hash of the connection's identity (the full addresses:
	 * 36 bytes, a length no other hash under this key has) */
	uint8_t w[36];
	uint32_t ports = (uint32_t)rport << 16 | lport;
	uint64_t f;

	memcpy(w, raddr->b, 16);
	memcpy(w + 16, laddr->b, 16);
	memcpy(w + 32, &ports, 4);
	f = eth_siphash(&st->isn_key, w, sizeof(w));
	return (uint32_t)(st->now_ns / 4000) + (uint32_t)f;
}

/* A secret function of the peer RADDR:RPORT, one per USE (a 16-bit tag). */
static uint32_t peer_secret(const struct eth_stack *st, const struct xlt_ip *raddr, uint16_t rport, uint16_t use)
{
	uint8_t w[20];
	uint32_t tag = (uint32_t)rport << 16 | use;

	memcpy(w, raddr->b, 16);
	memcpy(w + 16, &tag, 4);
	return (uint32_t)eth_siphash(&st->isn_key, w, sizeof(w));
}

uint32_t eth_tcp_ts_offset(const struct eth_stack *st, const struct xlt_ip *raddr, uint16_t rport)
{
	return peer_secret(st, raddr, rport, 0x7473u);
}

uint8_t eth_tcp_wscale_for(uint32_t rbuf)
{
	uint8_t s = 0;

	while (s < ETH_TCP_MAX_WSCALE && (65535u << s) < rbuf)
		s++;
	return s;
}

void eth_tcb_init_params(struct eth_tcb *t, const struct eth_tcp_params *p)
{
	uint32_t start = t->passive ? eth_tcp_rbuf_start(p) : p->rbuf_size;

	eth_bufq_init(&t->rbuf, start);
	t->rbuf_held = p->rbuf_size - start;
	eth_bufq_init(&t->sbuf, p->sbuf_size);
	t->sndq.copy_cap = p->copy_size && p->copy_size < p->sbuf_size ? p->copy_size : p->sbuf_size;
	t->sndq.lends = p->copy_size != 0;
	t->rto_ms = ETH_TCP_RTO_INIT_MS;
	t->ts_offset = eth_tcp_ts_offset(t->st, &t->raddr, t->rport);
	t->last_rcv_ms = t->st->now_ms;
}

void eth_tcb_set_mss(struct eth_tcb *t)
{
	/* (a path MTU learnt is only ever below the link's: pmtu.c) */
	uint32_t mss =
	    (t->pmtu ? t->pmtu : t->st->c.mtu) - eth_ip_hlen(t->v6) - (uint32_t)sizeof(struct rte_tcp_hdr);

	if (t->peer_mss && t->peer_mss < mss)
		mss = t->peer_mss;
	if (t->ts_ok)
		mss = mss > 12 ? mss - 12 : 0; /* (a peer announcing an MSS below 12 with timestamps) */
	if (mss < 64)
		mss = 64; /* a peer announcing a tiny MSS gets tiny segments, not a loop of empty ones */
	t->mss = (uint16_t)mss;
}

/* Checks destination ADDR of an active open and picks our address for it. Returns 0 or -errno. */
static int connect_route(const struct eth_stack *st, const struct xlt_ip *addr, struct xlt_ip *laddr)
{
	struct xlt_ip nh;

	if (xlt_ip_is_v4(addr)) {
		uint32_t a = xlt_ip_to_v4(addr);

		if (!a || a == st->c.addr || !eth_ipv4_nexthop(st, a))
			return -EHOSTUNREACH;
		*laddr = xlt_ip_v4(st->c.addr);
		return 0;
	}
	if (!st->c.prefix6)
		return -ENETUNREACH; /* no IPv6 on the port */
	if (xlt_ip_is_any(addr) || addr->b[0] == 0xff || eth_ipv6_ours(st, addr->b))
		return -EHOSTUNREACH; /* unspecified, multicast, or ourselves */
	if (!eth_ipv6_nexthop(st, addr, &nh))
		return -ENETUNREACH; /* off-link and no [eth] gateway6 */
	eth_ipv6_src_for(st, addr, laddr);
	return 0;
}

struct xlt_stream *eth_tcp_connect(struct eth_stack *st, const struct xlt_ip *addr, uint16_t port,
                                   const struct eth_tcp_params *p, int *err)
{
	struct eth_tcb *t;
	struct xlt_ip laddr;
	uint64_t h = 0;
	uint16_t lport = 0;
	int ret;

	ret = port ? connect_route(st, addr, &laddr) : -EHOSTUNREACH;
	if (ret) {
		xlt_counter_add(&st->stats.ip_no_route, 1);
		*err = ret;
		return NULL;
	}
	/* RFC 6056's algorithm 3: a counter from an offset keyed by the destination, so that our ports
	 * tell an off-path attacker nothing about those of other destinations (a SYN to a predictable
	 * port in SYN_SENT breaks the connect: the simultaneous-open rule) */
	uint32_t off = peer_secret(st, addr, port, 0x706fu);

	for (unsigned i = 0; i < 28232; i++) {
		uint16_t cand = (uint16_t)(32768 + (off + st->next_port + i) % 28232);
		/* a port whose flow hashes back to this worker: the peer's segments are steered here */
		h = eth_flow_hash(st, addr, port, cand);
		if (eth_flow_owner(st, h) != st->c.worker || eth_tcb_lookup(st, NULL, addr, port, cand, h))
			continue;
		lport = cand;
		st->next_port = (uint16_t)(st->next_port + i + 1);
		break;
	}
	if (!lport) {
		*err = -EADDRNOTAVAIL;
		return NULL;
	}
	t = eth_tcb_alloc(st);
	if (!t) {
		*err = -ENOMEM;
		return NULL;
	}
	t->raddr = *addr;
	t->laddr = laddr;
	t->v6 = !xlt_ip_is_v4(addr);
	t->rport = port;
	t->lport = lport;
	eth_tcb_init_params(t, p);
	t->iss = eth_tcp_isn(st, addr, &laddr, port, lport);
	t->snd_una = t->snd_nxt = t->snd_max = t->iss;
	t->recover = t->iss;
	t->rcv_wscale = eth_tcp_wscale_for(p->rbuf_size);
	t->s.state = XLT_STREAM_CONNECTING;
	t->s.peer_addr = *addr;
	t->s.peer_port = port;
	t->s.local_addr = laddr;
	t->s.local_port = lport;
	t->connect_deadline_ms = st->now_ms + (p->connect_timeout_ms ? p->connect_timeout_ms : 5000);
	t->t_keep = t->connect_deadline_ms;
	eth_tcb_set_state(t, ETH_TCP_SYN_SENT);
	eth_tcb_hash(t, h);
	eth_tcb_output_later(t);
	eth_tcb_timer_update(t);
	xlt_counter_add(&st->stats.tcp_active_opens, 1);
	return &t->s;
}

void eth_tcp_reject(struct xlt_stream *s)
{
	struct eth_tcb *t = eth_tcb_of(s);

	xlt_counter_add(&t->st->stats.tcp_accept_rejects, 1);
	if (t->state != ETH_TCP_CLOSED)
		eth_tcp_send_rst(t);
	t->accepted = false; /* end quietly: no on_closed for a stream the session refused */
	t->passive = true;
	eth_tcb_close(t, -ECONNABORTED);
	if (!t->released)
		reap_later(t);
}

/* ---- stream ops ---- */

static size_t op_peek(struct xlt_stream *s, const uint8_t **data)
{
	struct eth_tcb *t = eth_tcb_of(s);

	return eth_rcvq_peek(t, data);
}

static void op_consume(struct xlt_stream *s, size_t n)
{
	struct eth_tcb *t = eth_tcb_of(s);
	struct eth_stack *st = t->st;
	uint32_t edge, thresh;

	if (n > eth_rcvq_len(t))
		n = eth_rcvq_len(t);
	if (!n)
		return;
	eth_rcvq_consume(t, (uint32_t)n);
	if (!t->n_ooo)
		eth_bufq_trim(&st->chunks, &t->rbuf); /* an idle connection holds no chunk */
	update_buffer_gauge(st);
	eth_tcb_check_done(t);
	if (!eth_tcb_rcv_open(t))
		return;
	/* receiver SWS avoidance (RFC 9293 3.8.6.2.2): announce the window when it grew enough */
	edge = t->rcv_nxt + eth_bufq_space(&t->rbuf);
	thresh = (t->rbuf.cap + t->rq_len) / 2 < t->mss ? (t->rbuf.cap + t->rq_len) / 2 : t->mss;
	if (eth_seq_diff(edge, t->rcv_adv) >= (int32_t)thresh) {
		t->ack_now = true;
		eth_tcb_output_later(t);
	}
}

void eth_tcp_open_window(struct xlt_stream *s)
{
	struct eth_tcb *t = eth_tcb_of(s);

	if (!t->rbuf_held || t->state == ETH_TCP_CLOSED)
		return;
	t->rbuf.cap += t->rbuf_held; /* (cap: the configured buffer less the bytes in frames) */
	t->rbuf_held = 0;
	if (eth_tcb_rcv_open(t)) {
		t->ack_now = true; /* the window update */
		eth_tcb_output_later(t);
	}
}

static size_t op_write(struct xlt_stream *s, const uint8_t *data, size_t len)
{
	struct eth_tcb *t = eth_tcb_of(s);
	uint32_t n;

	if (s->local_done || s->state == XLT_STREAM_CLOSED || t->fin_queued)
		return 0;
	if (len > UINT32_MAX)
		len = UINT32_MAX;
	n = eth_sndq_write(t, data, (uint32_t)len);
	if (n < len)
		t->want_writable = true;
	if (n) {
		if (t->state != ETH_TCP_SYN_SENT)
			eth_tcb_output_later(t);
	}
	return n;
}

static void op_shutdown(struct xlt_stream *s)
{
	struct eth_tcb *t = eth_tcb_of(s);

	if (s->local_done || s->state == XLT_STREAM_CLOSED)
		return;
	s->local_done = 1;
	t->fin_queued = true;
	if (t->state == ETH_TCP_ESTABLISHED)
		eth_tcb_set_state(t, ETH_TCP_FIN_WAIT_1);
	else if (t->state == ETH_TCP_CLOSE_WAIT)
		eth_tcb_set_state(t, ETH_TCP_LAST_ACK);
	/* SYN_SENT / SYN_RCVD: the state moves on once established */
	eth_tcb_output_later(t);
}

static void op_abort(struct xlt_stream *s)
{
	struct eth_tcb *t = eth_tcb_of(s);

	if (s->state == XLT_STREAM_CLOSED)
		return;
	if (t->state != ETH_TCP_SYN_SENT && t->state != ETH_TCP_CLOSED)
		eth_tcp_send_rst(t);
	eth_tcb_close(t, -ECONNABORTED);
}

static void op_release(struct xlt_stream *s)
{
	struct eth_tcb *t = eth_tcb_of(s);

	if (t->released)
		return;
	if (s->state != XLT_STREAM_CLOSED) {
		/* released while open: the session is gone, so is the connection */
		if (t->state != ETH_TCP_SYN_SENT && t->state != ETH_TCP_CLOSED)
			eth_tcp_send_rst(t);
		t->accepted = false;
		t->passive = true; /* no event: nobody listens any more */
		eth_tcb_close(t, -ECONNABORTED);
	}
	if (t->released)
		return;
	if (t->state == ETH_TCP_TIME_WAIT) {
		/* the TIME_WAIT timer frees it; what it received is nobody's now (and no byte more comes):
		 * its chunks and frames go back at once, not 2MSL later */
		eth_rcvq_free(t);
		eth_bufq_free(&t->st->chunks, &t->rbuf);
		t->n_ooo = 0;
		t->t_ooo = 0;
		update_buffer_gauge(t->st);
		t->released = true;
		return;
	}
	reap_later(t);
}

/* In-order bytes received and not consumed: the session's buffer-occupancy gauge (added with the
 * gauge by the session layer, issue #6; peek alone shows only the first chunk). */
static size_t op_backlog(struct xlt_stream *s)
{
	return eth_rcvq_len(eth_tcb_of(s));
}

/* Sent and not acknowledged, or not sent yet (the send queue from snd_una). */
static size_t op_unsent(struct xlt_stream *s)
{
	return eth_sndq_len(eth_tcb_of(s));
}

/* Lending (rcvq.c): the received bytes as segments of their frames, then of rbuf's chunks. */
static unsigned op_lend(struct xlt_stream *s, size_t skip, struct xlt_seg *segs, unsigned max)
{
	return eth_rcvq_lend(eth_tcb_of(s), skip, segs, max);
}

static void op_info(struct xlt_stream *s, struct xlt_stream_info *out)
{
	const struct eth_tcb *t = eth_tcb_of(s);

	*out = (struct xlt_stream_info){
		.kind = XLT_STREAM_TCP,
		.peer_ended = t->fin_rcvd != 0,
		.retransmits = t->n_rexmit,
		.srtt_us = t->srtt_us,
		/* in order, the SYN and a FIN not counted (4 GiB wrap: a "whether any" figure); none
		 * before our SYN was acknowledged (irs and rcv_nxt mean nothing until then) */
		.rcvd = t->snd_una == t->iss ? 0 : (uint32_t)(t->rcv_nxt - t->irs - 1 - t->fin_rcvd),
	};
}

const struct xlt_stream_ops eth_tcp_stream_ops = {
	.peek = op_peek,
	.consume = op_consume,
	.write = op_write,
	.shutdown = op_shutdown,
	.abort = op_abort,
	.release = op_release,
	.backlog = op_backlog,
	.info = op_info,
	.write_lent = eth_sndq_write_lent,
	.lend = op_lend,
	.unsent = op_unsent,
};
