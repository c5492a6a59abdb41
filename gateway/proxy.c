/* PROXY protocol v2 on routes (translate/proxy_v2.h has the wire format).
 *
 * Sending (proxy_protocol = v2): when a session starts on a route whose destination is tcp:, its
 * header is built into the session object and handed to the session as a preamble: the far side gets
 * it before any client byte, as soon as it is connected, whether the client sends anything or not,
 * within its send space like any byte (xlt_session_preamble), and it is not counted as relayed.
 * Source: the client's address and port (an IB peer's as rdma_cm saw them; a TCP client's, or the
 * one its own PROXY header gave); destination: what the client reached. TLVs, in this order (README,
 * "PROXY protocol"): UNIQUE_ID (0x05) = the session uid as 16 lowercase hex digits, 0xE0 = the route
 * name, and for IB peers 0xE1 = the peer's GID (16 bytes) and 0xE2 = its QPN (4 bytes, big-endian).
 *
 * Receiving (accept_proxy = v2, tcp: listeners): an accepted connection is not a session yet. It waits
 * here, holding no session slot, until its header is complete: the bytes are copied out of the
 * stream exactly up to the header's end (what follows stays in the stream for the session to relay),
 * then the header's source replaces the peer address for the allow list and everything after, and the
 * connection goes through admission like any other. A header that is malformed, incomplete at the
 * client's end of stream, or not complete within GW_PP_WAIT_NS resets the connection and is counted
 * by reason. The LOCAL command (a balancer's health check) keeps the TCP peer's own address. A PROXY
 * header for anything but TCP over IPv4 or IPv6 (UNIX, UDP, UNSPEC), or with an unspecified source, is
 * refused: allow lists judge IP addresses, and judging such a client by the balancer's own address
 * would let every one of them in.
 *
 * Waiting connections come from a fixed per-worker pool (GW_PP_WAITERS), shared by the worker's
 * accept_proxy routes: no allocation on the datapath, and a client that opens connections and sends
 * nothing holds at most that many slots, each for GW_PP_WAIT_NS at most. When all are taken, the one
 * that waited longest is reset (reason "overload", on its route) for the newcomer: a balancer sends
 * its header with its first segment, so a flood of silent connections to one route cannot lock
 * another route's balancers out unless it opens GW_PP_WAITERS connections within their round trip.
 * A waiting connection is offered GW_PP_WINDOW of its receive buffer (eth_tcp_params.rbuf_start), the
 * rest once its header passed: a client that sends a header's start and then out-of-order data
 * holds that much, not the route's tcp_rbuf, beyond every session budget. Worker only, except
 * init/fini and the metrics (control thread).
 *
 * Who may send a header (route key proxy_from): the header's source is believed, so only the
 * balancers may speak it. A connection whose real TCP peer is outside proxy_from is reset at once,
 * before a byte of it is read and without taking a waiting slot (reason "untrusted"): the port's
 * reachability (a firewall for one family only, a dual-stack listener) is then no part of the
 * allow list's protection. Logged at most once per GW_PP_LOG_NS per worker, with the count of the
 * lines left out: a peer can make as many as it likes. The real peer is judged again when its header
 * is complete, by the route's config at that moment: a reload that narrowed proxy_from or turned
 * accept_proxy off while it waited (the likely answer to an attack) applies to it too. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "../translate/proxy_v2.h"
#include "../translate/ratelim.h"
#include "../translate/session.h"
#include "../conf/conf.h"
#include "gw.h"
#include "log.h"
#include "metrics.h"

/* 5 s: the spec asks receivers to wait at least 3 s, to cover a retransmission of the segment that
 * carries the header (Linux's first RTO is 1 s, the next 2 s later); 5 s covers two losses, and a
 * balancer sends its header with its first segment, so a legitimate one never comes near it. */
#define GW_PP_WAIT_NS (5ull * 1000000000ull)
#define GW_PP_WAITERS 1024
#define GW_PP_LOG_NS  (1000000000ull)

/* Reasons beyond the parser's results (which index the same array). */
enum {
	PP_TIMEOUT = XLT_PP2_RESULT_COUNT,
	PP_TRUNCATED,
	PP_UNSUPPORTED,
	PP_OVERLOAD,
	PP_UNTRUSTED,
	PP_REASONS,
};
_Static_assert(PP_REASONS <= GW_PP_REASONS, "GW_PP_REASONS too small");

/* The name of reason K: the parser's own (xlt_pp2_result_names) or one of ours; NULL for the
 * parser's non-errors (ok, more), which never reset a connection. */
static const char *reason_name(unsigned k)
{
	static const char *const ours[PP_REASONS - XLT_PP2_RESULT_COUNT] = {
	    [PP_TIMEOUT - XLT_PP2_RESULT_COUNT] = "timeout",
	    [PP_TRUNCATED - XLT_PP2_RESULT_COUNT] = "truncated",
	    [PP_UNSUPPORTED - XLT_PP2_RESULT_COUNT] = "unsupported",
	    [PP_OVERLOAD - XLT_PP2_RESULT_COUNT] = "overload",
	    [PP_UNTRUSTED - XLT_PP2_RESULT_COUNT] = "untrusted",
	};

	if (k >= XLT_PP2_RESULT_COUNT)
		return ours[k - XLT_PP2_RESULT_COUNT];
	return k == XLT_PP2_OK || k == XLT_PP2_MORE ? NULL : xlt_pp2_result_names[k];
}

/* A connection waiting for its header (worker only). */
struct pp_wait {
	struct xlt_stream *s; /* NULL: free */
	struct gw_route *r;   /* referenced (a reload may update the listener in place and put its route) */
	struct gw_worker *w;
	uint64_t deadline_ns;
	union {
		TAILQ_ENTRY(pp_wait) link;      /* the worker's FIFO (deadline order) */
		SLIST_ENTRY(pp_wait) free_link; /* or the free list */
	};
	uint16_t have, need;
	uint8_t buf[XLT_PP2_MAX_LEN];
};

static struct {
	struct pp_wait *pool;
	SLIST_HEAD(, pp_wait) free;
	TAILQ_HEAD(, pp_wait) fifo;
	struct xlt_ratelim untrusted_log; /* the "untrusted" line (GW_PP_LOG_NS) */
} waits[GW_MAX_WORKERS];

/* ---- sending ---- */

static void hex16(char out[16], uint64_t v)
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 15; i >= 0; i--, v >>= 4)
		out[i] = digits[v & 0xF];
}

int gw_proxy_send(struct gw_session *s, struct xlt_stream *a)
{
	const struct conf_route *c = &s->route->conf;
	char uid[16];
	uint8_t gid[16], qpn[4];
	uint32_t q;
	struct xlt_pp2_tlv tlv[4] = {
	    {XLT_PP2_TYPE_UNIQUE_ID, sizeof(uid), uid},
	    {XLT_PP2_TYPE_IBGW_ROUTE, (uint16_t)strlen(c->name), c->name},
	};
	unsigned n = 2;
	int len;

	hex16(uid, s->uid);
	if (c->listen.kind == CONF_EP_IB && gw_ib_peer_id(a, gid, &q) == 0) {
		qpn[0] = (uint8_t)(q >> 24), qpn[1] = (uint8_t)(q >> 16), qpn[2] = (uint8_t)(q >> 8),
		qpn[3] = (uint8_t)q;
		tlv[n++] = (struct xlt_pp2_tlv){XLT_PP2_TYPE_IBGW_IB_GID, sizeof(gid), gid};
		tlv[n++] = (struct xlt_pp2_tlv){XLT_PP2_TYPE_IBGW_IB_QPN, sizeof(qpn), qpn};
	}
	/* TCP over IPv4, or over IPv6 when either end is IPv6; a source without an IP address (an AF_IB
	 * peer admitted by ::/0) goes as AF_UNSPEC: the TLVs still say who it is */
	len = xlt_pp2_build(s->pp, sizeof(s->pp), &a->peer_addr, a->peer_port, &a->local_addr, a->local_port,
	                    tlv, n);
	if (len < 0)
		return len; /* cannot happen: GW_PP_HDR_MAX covers the largest header */
	return xlt_session_preamble(&s->x, s->pp, (size_t)len);
}

/* ---- receiving ---- */

static void count(struct gw_route *r, unsigned reason)
{
	atomic_fetch_add_explicit(&r->proxy_errors[reason], 1, memory_order_relaxed);
}

static void unlink_wait(struct pp_wait *p)
{
	unsigned id = p->w->id;

	TAILQ_REMOVE(&waits[id].fifo, p, link);
	p->s = NULL;
	SLIST_INSERT_HEAD(&waits[id].free, p, free_link);
}

/* The last event of a stream given up on: release it. */
static void release_on_close(void *arg, int err)
{
	struct xlt_stream *s = arg;

	(void)err;
	s->ops->release(s);
}

/* Resets S, which no session owns; the engine reports its close, then it is released. */
static void reset_stream(struct xlt_stream *s)
{
	s->ev = (struct xlt_stream_events){.arg = s, .on_closed = release_on_close};
	s->ops->abort(s);
}

static void fail(struct pp_wait *p, unsigned reason)
{
	struct xlt_stream *s = p->s;
	struct gw_route *r = p->r;

	count(r, reason);
	unlink_wait(p);
	reset_stream(s);
	gw_route_put(r);
}

/* S's real peer is not in R's proxy_from (or R no longer takes headers): logged within the rate
 * limit (the caller counts it). */
static void log_untrusted(struct gw_worker *w, struct gw_route *r, const struct xlt_stream *s)
{
	char a[XLT_IP_STRLEN];
	uint64_t quiet;

	if (!xlt_ratelim_ok(&waits[w->id].untrusted_log, gw_now_ns(), GW_PP_LOG_NS, &quiet))
		return;
	GW_WARN("route %s: connection from %s port %u reset: not in proxy_from (or the route takes no PROXY "
	        "header since a reload), its PROXY header is not believed (%" PRIu64 " more not logged)",
	        r->conf.name, xlt_ip_fmt(&s->peer_addr, a), s->peer_port, quiet);
}

static void complete(struct pp_wait *p, const struct xlt_pp2_info *in)
{
	struct xlt_stream *s = p->s;
	struct gw_worker *w = p->w;
	struct gw_route *r = p->r, *now = gw_route_current(r);

	if (!now->conf.accept_proxy || !conf_route_proxy_from(&now->conf, &s->peer_addr)) {
		/* a reload while it waited: the real peer may not speak for others any more */
		log_untrusted(w, now, s);
		fail(p, PP_UNTRUSTED);
		return;
	}
	if (in->command == XLT_PP2_CMD_PROXY) {
		/* an unspecified source would read as "no address", which only ::/0 admits: as good as any
		 * other spoofed source, but never one a stream from the network can have */
		if ((in->family != XLT_PP2_AF_INET && in->family != XLT_PP2_AF_INET6) ||
		    in->proto != XLT_PP2_PROTO_STREAM || xlt_ip_is_any(&in->src_addr)) {
			fail(p, PP_UNSUPPORTED);
			return;
		}
		s->via_addr = s->peer_addr;
		s->via_port = s->peer_port;
		s->peer_addr = in->src_addr;
		s->peer_port = in->src_port;
		s->local_addr = in->dst_addr;
		s->local_port = in->dst_port;
	}
	unlink_wait(p);
	s->ev = (struct xlt_stream_events){0};
	gw_eth_open_window(s); /* (GW_PP_WINDOW until now) */
	/* admission judges the address the header gave, under the route's current config (a reload may
	 * have replaced it meanwhile); a refusal resets the connection, counted by its reason */
	if (gw_session_accept(w, r, s))
		reset_stream(s);
	gw_route_put(r); /* the session took its own reference */
}

/* Takes header bytes out of the stream, never more than the header: what follows is the client's. */
static void pp_read(struct pp_wait *p)
{
	struct xlt_stream *s = p->s;
	struct xlt_pp2_info in;
	const uint8_t *data;
	size_t n;

	while ((n = s->ops->peek(s, &data)) > 0) {
		size_t take = p->need - p->have;
		enum xlt_pp2_result res;

		if (take > n)
			take = n;
		memcpy(p->buf + p->have, data, take);
		s->ops->consume(s, take);
		p->have = (uint16_t)(p->have + take);
		res = xlt_pp2_parse(p->buf, p->have, &in);
		if (res == XLT_PP2_OK) {
			complete(p, &in);
			return;
		}
		if (res != XLT_PP2_MORE) {
			fail(p, res);
			return;
		}
		p->need = (uint16_t)in.len; /* <= XLT_PP2_MAX_LEN, the size of buf */
	}
	if (s->peer_done)
		fail(p, PP_TRUNCATED);
}

static void on_readable(void *arg)
{
	pp_read(arg);
}

static void on_closed(void *arg, int err)
{
	struct pp_wait *p = arg;
	struct xlt_stream *s = p->s;
	struct gw_route *r = p->r;

	/* the client reset or closed before its header was complete */
	(void)err;
	count(r, PP_TRUNCATED);
	unlink_wait(p);
	s->ops->release(s);
	gw_route_put(r);
}

int gw_proxy_wait(struct gw_worker *w, struct gw_route *r, struct xlt_stream *s)
{
	struct pp_wait *p = SLIST_FIRST(&waits[w->id].free);

	/* the real peer, before anything it sent is looked at */
	if (!conf_route_proxy_from(&r->conf, &s->peer_addr)) {
		count(r, PP_UNTRUSTED);
		log_untrusted(w, r, s);
		return -EACCES;
	}
	if (!p) {
		/* all taken: the one that waited longest makes room (see above) */
		fail(TAILQ_FIRST(&waits[w->id].fifo), PP_OVERLOAD);
		p = SLIST_FIRST(&waits[w->id].free);
	}
	SLIST_REMOVE_HEAD(&waits[w->id].free, free_link);
	gw_route_get(r);
	*p = (struct pp_wait){.s = s, .r = r, .w = w, .need = XLT_PP2_HDR_LEN};
	p->deadline_ns = gw_now_ns() + GW_PP_WAIT_NS;
	TAILQ_INSERT_TAIL(&waits[w->id].fifo, p, link);
	s->ev = (struct xlt_stream_events){.arg = p, .on_readable = on_readable, .on_closed = on_closed};
	pp_read(p); /* the header may have come with the handshake's last segment */
	return 0;
}

unsigned gw_proxy_poll(struct gw_worker *w, uint64_t now_ns)
{
	unsigned work = 0;

	/* one deadline for all: the FIFO is in deadline order */
	while (!TAILQ_EMPTY(&waits[w->id].fifo) && TAILQ_FIRST(&waits[w->id].fifo)->deadline_ns <= now_ns) {
		fail(TAILQ_FIRST(&waits[w->id].fifo), PP_TIMEOUT);
		work++;
	}
	return work;
}

int gw_proxy_init(struct gw_daemon *d)
{
	for (unsigned i = 0; i < d->n_workers; i++) {
		TAILQ_INIT(&waits[i].fifo);
		waits[i].pool = calloc(GW_PP_WAITERS, sizeof(*waits[i].pool));
		if (!waits[i].pool)
			return -ENOMEM;
		for (unsigned k = GW_PP_WAITERS; k-- > 0;)
			SLIST_INSERT_HEAD(&waits[i].free, &waits[i].pool[k], free_link);
	}
	return 0;
}

void gw_proxy_fini(struct gw_daemon *d)
{
	for (unsigned i = 0; i < d->n_workers; i++) {
		free(waits[i].pool);
		waits[i] = (__typeof__(waits[i])){0};
	}
}

/* ---- metrics ---- */

void gw_proxy_metrics(struct gw_daemon *d, struct gw_metrics *m)
{
	gw_metrics_family(
	    m, "proxy_header_errors_total", XLT_COUNTER,
	    "connections to accept_proxy listeners reset because of their PROXY header: malformed "
	    "(signature, version, command, family, length, too_long, tlv, crc), unsupported (PROXY for "
	    "other than TCP over IPv4 or IPv6), truncated (the client ended first), timeout (none within "
	    "5 s), overload (the longest waiting, reset for a newcomer when all slots were taken), "
	    "untrusted (the TCP peer is not in the route's proxy_from)");
	for (unsigned i = 0; i < d->n_routes; i++) {
		const struct gw_route *r = d->routes[i], *o;
		uint64_t sum[PP_REASONS] = {0};

		if (r->conf.listen.kind != CONF_EP_TCP)
			continue;
		/* a changed route's predecessors (draining, or freed into r's past) add up under its name */
		LIST_FOREACH(o, &d->removed_routes, removed_link)
			if (!strcmp(o->conf.name, r->conf.name))
				for (unsigned k = 0; k < PP_REASONS; k++)
					sum[k] +=
					    atomic_load_explicit(&o->proxy_errors[k], memory_order_relaxed) +
					    o->past_proxy_errors[k];
		for (unsigned k = 0; k < PP_REASONS; k++) {
			if (!reason_name(k))
				continue;
			sum[k] += atomic_load_explicit(&r->proxy_errors[k], memory_order_relaxed) +
			          r->past_proxy_errors[k];
			gw_metrics_sample(m, (double)sum[k], "route", r->conf.name, "reason", reason_name(k),
			                  NULL);
		}
	}
}
