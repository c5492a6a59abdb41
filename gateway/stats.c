/* Stats endpoint: GET /metrics (Prometheus text 0.0.4), GET /stats (JSON), GET /health.
 *
 * On the control thread, bound to [gateway] stats only (a management address, never the datapath port).
 * Every request renders from counters that single writers publish with relaxed stores, so serving it never
 * stops a worker; but the control thread also accepts IB connections and reloads, so no client may hold it
 * or its memory: at most STATS_MAX_CONNS connections (beyond, a new one is closed at once), one request
 * each, STATS_DEADLINE_S from accept to the end of the request and as long again for the reply to leave,
 * whatever the client does (a slow sender or a slow reader is cut), a request head of STATS_MAX_HEAD
 * bytes, no body read, "Connection: close". When all are taken, a new connection closes the oldest
 * one still without a whole request after STATS_IDLE_EVICT_MS (a client that sends its request
 * does so at once; one that holds the connection idle is what the cap is for), or whose reply has
 * not left STATS_IDLE_EVICT_MS after it was queued (a client that asks and then reads nothing), so
 * neither kind can keep scrapes and health checks out (a reader that keeps taking its reply, however
 * slowly, is not that: its time starts again whenever the kernel took more of it). Once a reply has
 * left, the connection sends its FIN and reads and drops what the client still sends until the
 * client closes (STATS_LINGER_S at most), as web servers do: a close with unread bytes in the socket
 * (the rest of an oversized head, a body, a pipelined request) would reset the connection and lose
 * the part of the reply the kernel had not sent yet; such a connection gives way at once when the
 * client acknowledged the whole reply. A render of /metrics or /stats is reused for ten times as
 * long as it took (a client asking in a loop, with 256 routes, would otherwise keep
 * the control thread rendering); a reload or a backend state change makes the next request render
 * again. This is a small HTTP/1.x responder of its own on bufferevents:
 * libevent 2.1's evhttp (Debian 12) can neither cap its connections nor bound a request's total time (its
 * timeout restarts with every byte read, so one byte every 9 s held a connection for hours). A client that
 * resets mid-reply costs an EPIPE (SIGPIPE is ignored, daemon.c). */
#include <ctype.h>
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/sockios.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "../conf/conf.h"
#include "../eth_side/port.h"
#include "../translate/ratelim.h"
#include "backend.h"
#include "access_log.h"
#include "gw.h"
#include "log.h"
#include "metrics.h"

#define STATS_MAX_CONNS	    64
#define STATS_DEADLINE_S    10
#define STATS_MAX_HEAD	    8192
#define STATS_IDLE_EVICT_MS 250
#define STATS_LINGER_S	    2 /* how long a reply that left waits for the client's close (linger) */
#define STATS_SNDBUF	    (64 * 1024) /* the kernel's send buffer of a connection (it doubles it) */
#define STATS_REUSE_FACTOR  10 /* a render serves for this many times its own duration */
#define STATS_LOG_NS	    1000000000ull /* a refusal is logged at most once per this */

enum drop_reason { DROP_LIMIT, DROP_TIMEOUT, DROP_OVERSIZE, DROP_EVICTED, DROP_COUNT };
static const char *const drop_names[DROP_COUNT] = {"limit", "timeout", "oversize", "evicted"};

struct stats_conn {
	struct gw_daemon *d;
	struct bufferevent *bev;
	struct event *deadline;
	bool replied; /* the reply is queued: free once it has left */
	uint64_t replied_ns; /* when it was, or when the kernel last took some of it (on_sent) */
	bool lingering;      /* it left: what the client still sends is read and dropped (linger) */
	struct in_addr peer; /* the client's address (0 when not IPv4) */
	uint16_t peer_port;  /* and its port (host order) */
	bool browser; /* the request carries a browser's Origin or Sec-Fetch-Site (other than none), or
	               * is a browser's without Sec-Fetch-Site that names the endpoint by a host name */
	struct gw_http_head head; /* how far the input was searched for the end of the request head */
	uint64_t born_ns; /* accepted */
	TAILQ_ENTRY(stats_conn) link; /* st.conns, oldest first */
};

/* The last render of each format (control thread only). */
struct stats_render {
	char *text;
	size_t len;
	uint64_t at_ns, cost_ns;
};

/* control thread only */
static struct {
	struct evconnlistener *lis;
	struct event *resume; /* re-enables the listener after an accept error */
	TAILQ_HEAD(, stats_conn) conns;
	unsigned n_conns;
	uint64_t dropped[DROP_COUNT];
	struct stats_render last[2]; /* Prometheus, JSON */
	uint64_t renders[2], reused[2];
	/* a client can send refused POSTs in a loop: each kind of refusal is logged within a rate
	 * limit, or it would flood the log and use up journald's own limit, which would then drop
	 * every later line of the daemon */
	struct xlt_ratelim browser_log, foreign_log, page_read_log;
} st = {.conns = TAILQ_HEAD_INITIALIZER(st.conns)};

void gw_stats_stale(void)
{
	st.last[0].at_ns = st.last[1].at_ns = 0;
}

static void render(struct gw_daemon *d, struct gw_metrics *m)
{
	const void *bases[GW_MAX_WORKERS];
	char ids[GW_MAX_WORKERS][12];
	const char *labels[GW_MAX_WORKERS];
	struct eth_port_stats ps;
	double uptime = (double)(gw_now_ns() - ((uint64_t)d->started.tv_sec * 1000000000ull +
					       (uint64_t)d->started.tv_nsec)) / 1e9;

	gw_metrics_family(m, "build_info", XLT_GAUGE, "ibgwd version (value is always 1)");
	gw_metrics_sample(m, 1, "version", GW_VERSION, NULL);
	gw_metrics_family(m, "uptime_seconds", XLT_GAUGE, "seconds since the daemon started");
	gw_metrics_sample(m, uptime, NULL);
	gw_metrics_family(m, "state", XLT_GAUGE, "daemon state (1 for the current one)");
	gw_metrics_sample(m, d->state == GW_SERVING, "state", "serving", NULL);
	gw_metrics_sample(m, d->state == GW_DRAINING, "state", "draining", NULL);
	gw_metrics_family(m, "config_reloads_total", XLT_COUNTER, "SIGHUP reloads by result");
	gw_metrics_sample(m, (double)d->reloads_ok, "result", "ok", NULL);
	gw_metrics_sample(m, (double)d->reloads_failed, "result", "failed", NULL);
	gw_metrics_family(m, "config_restart_pending", XLT_GAUGE,
			  "1 when the file of the last reload has changes that apply only after a restart");
	gw_metrics_sample(m, d->restart_pending > 0, NULL);
	gw_metrics_family(m, "stats_connections_dropped_total", XLT_COUNTER,
			  "stats endpoint connections closed early: limit (too many open), timeout (request not "
			  "done in time), oversize (request head too large), evicted (the oldest one still without "
			  "a request, or not reading its reply, for a new connection when all were taken)");
	for (unsigned k = 0; k < DROP_COUNT; k++)
		gw_metrics_sample(m, (double)st.dropped[k], "reason", drop_names[k], NULL);
	gw_metrics_family(m, "stats_renders_total", XLT_COUNTER,
			  "renders of /metrics and /stats, by result: rendered, or reused (a render at most "
			  "ten times its own duration old; reloads and backend changes render anew)");
	gw_metrics_sample(m, (double)st.renders[0], "format", "prometheus", "result", "rendered", NULL);
	gw_metrics_sample(m, (double)st.reused[0], "format", "prometheus", "result", "reused", NULL);
	gw_metrics_sample(m, (double)st.renders[1], "format", "json", "result", "rendered", NULL);
	gw_metrics_sample(m, (double)st.reused[1], "format", "json", "result", "reused", NULL);
	gw_metrics_family(m, "log_lines_dropped_total", XLT_COUNTER,
			  "log lines of the workers dropped because the log (journald, syslog, a pipe) could not "
			  "take them at once (a worker never waits for it)");
	gw_metrics_sample(m, (double)gw_log_dropped(), NULL);
	gw_metrics_family(m, "routes", XLT_GAUGE, "routes in the running configuration");
	gw_metrics_sample(m, d->n_routes, NULL);
	gw_metrics_family(m, "workers", XLT_GAUGE, "datapath workers");
	gw_metrics_sample(m, d->n_workers, NULL);
	gw_metrics_family(m, "drain_aborted_sessions_total", XLT_COUNTER,
			  "sessions aborted because the drain timeout passed");
	gw_metrics_sample(m, (double)d->drain_aborted, NULL);

	for (unsigned i = 0; i < d->n_workers; i++) {
		snprintf(ids[i], sizeof(ids[i]), "%u", i);
		labels[i] = ids[i];
		bases[i] = &d->workers[i].st;
	}
	gw_metrics_table(m, gw_worker_metrics, gw_worker_n_metrics, bases, d->n_workers, "worker", labels);

	if (d->port && eth_port_stats(d->port, &ps) == 0) {
		char port[12];
		const char *pl[1] = {port};
		const void *pb[1] = {&ps};

		snprintf(port, sizeof(port), "%u", d->conf->eth.port);
		gw_metrics_table(m, eth_port_metrics, eth_port_n_metrics, pb, 1, "port", pl);
	}
	gw_routes_metrics(d, m);
	gw_backend_metrics(d, m);
	gw_proxy_metrics(d, m);
	gw_alog_metrics(d, m);
	for (unsigned i = 0; i < GW_N_SIDES; i++)
		gw_sides[i]->metrics(d, m);
}

static void conn_free(struct stats_conn *c)
{
	TAILQ_REMOVE(&st.conns, c, link);
	st.n_conns--;
	event_free(c->deadline);
	bufferevent_free(c->bev); /* closes the socket */
	free(c);
}

/* Part of C's reply went to the kernel, room the client's reading made: a reader that keeps taking
 * it, however slowly, is not one that stalls (on_accept's eviction). The kernel reports room once a
 * third of the send buffer is free: a reader slower than about that every STATS_IDLE_EVICT_MS counts
 * as stalled when every connection is taken. */
static void on_sent(struct evbuffer *out, const struct evbuffer_cb_info *info, void *arg)
{
	struct stats_conn *c = arg;

	(void)out;
	if (info->n_deleted && c->replied)
		c->replied_ns = gw_now_ns();
}

/* Bytes of C's reply the client has not acknowledged yet (SIOCOUTQ): a lingering connection closed
 * before they were would lose them to the reset its unread input causes. */
static int unacked(const struct stats_conn *c)
{
	int q = 0;

	return ioctl(bufferevent_getfd(c->bev), SIOCOUTQ, &q) ? 0 : q;
}

/* Queues the whole reply and stops reading: the connection closes once it has left. nosniff: a body
 * may echo names from the request (a 404's route and backend), which a browser must not take for
 * HTML. */
static void reply(struct stats_conn *c, int code, const char *reason, const char *type, const char *extra,
		  struct evbuffer *body, bool head_only)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);

	bufferevent_disable(c->bev, EV_READ);
	evbuffer_add_printf(out,
			    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n"
			    "X-Content-Type-Options: nosniff\r\n%sConnection: close\r\n\r\n",
			    code, reason, type, evbuffer_get_length(body), extra);
	if (!head_only)
		evbuffer_add_buffer(out, body);
	c->replied = true;
	/* the reply gets its own STATS_DEADLINE_S: a render can take seconds on a slow machine (the test
	 * VM's emulated CPU), which must not eat the time of a reader that keeps up; from now, not from the
	 * loop's cached time before the render */
	event_base_update_cache_time(c->d->base);
	c->replied_ns = gw_now_ns();
	evtimer_add(c->deadline, &(struct timeval){.tv_sec = STATS_DEADLINE_S});
	bufferevent_enable(c->bev, EV_WRITE);
}

static const char *const text = "text/plain; charset=utf-8";

/* Whether the Host header's value V (after "Host:") names the endpoint by a name: neither an address
 * literal (IPv4, or IPv6 in brackets) nor localhost, with or without a port. */
static bool host_is_name(const char *v)
{
	char host[256];
	size_t n;
	struct in6_addr a6;
	struct in_addr a4;

	v += strspn(v, " \t");
	if (*v == '[') {
		n = strcspn(v + 1, "]");
		if (v[1 + n] != ']' || n >= sizeof(host))
			return true;
		memcpy(host, v + 1, n);
		host[n] = 0;
		host[strcspn(host, "%")] = 0; /* (a zone: fe80::1%25eth0) */
		return inet_pton(AF_INET6, host, &a6) != 1;
	}
	n = strcspn(v, ": \t");
	if (n >= sizeof(host))
		return true;
	memcpy(host, v, n);
	host[n] = 0;
	if (n && host[n - 1] == '.')
		host[n - 1] = 0; /* (localhost. is the same name) */
	return inet_pton(AF_INET, host, &a4) != 1 && strcasecmp(host, "localhost");
}

/* Who may change a backend's state: a client on the machine itself, over loopback or from the
 * management address the endpoint listens on. The endpoint may listen on an address others reach
 * (reading metrics is harmless); changing where sessions go is not for them. */
static bool from_management(const struct stats_conn *c)
{
	uint32_t a = ntohl(c->peer.s_addr);

	return (a >> 24) == 127 || (c->peer.s_addr && c->peer.s_addr == c->d->conf->gateway.stats.addr.s_addr);
}

/* Decodes the %XX escapes of a path segment in place (curl users write [2001:db8::10]:80 as
 * %5B2001:db8::10%5D:80 unless they pass -g). Returns 0, or -1 for a bad escape or an encoded NUL. */
static int pct_decode(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '%') {
			char h[3] = {0};
			/* (s[2] is read only once s[1] proved no terminator) */
			if (!isxdigit((unsigned char)s[1]) || !isxdigit((unsigned char)s[2]))
				return -1;
			memcpy(h, s + 1, 2);
			if (!(*o++ = (char)strtoul(h, NULL, 16)))
				return -1;
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
	return 0;
}

/* Answers C's request (WHAT: "a backend state change"...) with 403 and ANSWER; logs the refusal within
 * LIM's rate, as "refused WHAT BY from ADDR port N (WHY; M more not logged)" (BY and WHY may be ""): a
 * client refused in a loop must not flood the log. */
static void refuse(struct stats_conn *c, struct xlt_ratelim *lim, const char *what, const char *by,
                   const char *why, const char *answer, struct evbuffer *body)
{
	char a[INET_ADDRSTRLEN];
	uint64_t quiet;

	if (xlt_ratelim_ok(lim, gw_now_ns(), STATS_LOG_NS, &quiet))
		GW_WARN("stats: refused %s %sfrom %s port %u (%s%" PRIu64 " more not logged)", what, by,
		        inet_ntop(AF_INET, &c->peer, a, sizeof(a)), c->peer_port, why, quiet);
	evbuffer_add_printf(body, "forbidden: %s\n", answer);
	reply(c, 403, "Forbidden", text, "", body, false);
}

/* POST /backends/ROUTE/BACKEND?state=ready|drain|maint (PATH is what follows /backends/). */
static void backend_call(struct stats_conn *c, const char *method, char *path, const char *query,
			 struct evbuffer *body)
{
	static const char *const names[3] = {"ready", "drain", "maint"};
	char *backend = strchr(path, '/');
	const char *v = NULL;
	int s = -1, ret;
	char a[INET_ADDRSTRLEN], who[INET_ADDRSTRLEN + 12];

	if (strcmp(method, "POST")) {
		evbuffer_add_printf(body, "method not allowed: POST /backends/ROUTE/BACKEND?state=ready|drain|maint\n");
		reply(c, 405, "Method Not Allowed", text, "Allow: POST\r\n", body, !strcmp(method, "HEAD"));
		return;
	}
	/* a web page can make a browser on the operator's host (or behind an ssh tunnel to the
	 * endpoint) send a form POST here; browsers say so, command-line clients never do */
	if (c->browser) {
		refuse(c, &st.browser_log, "a backend state change", "sent by a browser (Origin, Sec-Fetch-Site, or a host name without it) ", "",
		       "not from a browser (use curl or another command-line client)", body);
		return;
	}
	if (!c->d->conf->gateway.stats_admin) {
		refuse(c, &st.foreign_log, "a backend state change", "", "stats_admin = 0; ", "stats_admin = 0", body);
		return;
	}
	if (!from_management(c)) {
		refuse(c, &st.foreign_log, "a backend state change", "", "not loopback or the management address; ",
		       "only from loopback or the management address", body);
		return;
	}
	for (const char *p = query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL)
		if (!strncmp(p, "state=", 6))
			v = p + 6;
	for (int k = 0; v && k < 3; k++) {
		size_t n = strlen(names[k]);
		if (!strncmp(v, names[k], n) && (v[n] == 0 || v[n] == '&'))
			s = k;
	}
	if (backend)
		*backend++ = 0;
	if (!backend || s < 0 || pct_decode(path) || pct_decode(backend)) {
		evbuffer_add_printf(body, "bad request: POST /backends/ROUTE/BACKEND?state=ready|drain|maint\n");
		reply(c, 400, "Bad Request", text, "", body, false);
		return;
	}
	snprintf(who, sizeof(who), "%s port %u", inet_ntop(AF_INET, &c->peer, a, sizeof(a)), c->peer_port);
	ret = gw_backend_set_state(c->d, path, backend, (enum conf_backend_state)s, who);
	gw_stats_stale(); /* the next /metrics shows it */
	if (ret) {
		evbuffer_add_printf(body, "no backend %s in route %s\n", backend, path);
		reply(c, 404, "Not Found", text, "", body, false);
		return;
	}
	evbuffer_add_printf(body, "route %s backend %s: %s\n", path, backend, names[s]);
	reply(c, 200, "OK", text, "", body, false);
}

/* LINE is the request line, "METHOD TARGET HTTP/1.x". */
/* /health's answer into BODY: true (200) while serving with every route ready ("ok"); false (503)
 * while starting or draining, or while some route cannot be served ("degraded", then a line per such
 * route saying why), so that keepalived or a BGP health watch withdraws a gateway that cannot do its
 * job. */
static bool health(const struct gw_daemon *d, struct evbuffer *body)
{
	enum gw_state state = atomic_load_explicit(&d->state, memory_order_relaxed);
	uint64_t now = gw_now_ns();
	bool ok = true;

	if (state != GW_SERVING) {
		evbuffer_add_printf(body, "%s\n", state == GW_STARTING ? "starting" : "draining");
		return false;
	}
	for (unsigned i = 0; i < d->n_routes; i++) {
		char why[160];
		if (gw_route_ready(d, d->routes[i], now, why, sizeof(why)))
			continue;
		if (ok)
			evbuffer_add_printf(body, "degraded\n");
		evbuffer_add_printf(body, "route %s: %s\n", d->routes[i]->conf.name, why);
		ok = false;
	}
	if (ok)
		evbuffer_add_printf(body, "ok\n");
	return ok;
}

static void handle(struct stats_conn *c, char *line)
{
	struct gw_daemon *d = c->d;
	struct evbuffer *body = evbuffer_new();
	char *method = line, *target, *version, *q;
	bool get, head;
	struct gw_metrics m;

	if (!body) {
		conn_free(c);
		return;
	}
	target = strchr(method, ' ');
	version = target ? strchr(target + 1, ' ') : NULL;
	if (!version || strncmp(version + 1, "HTTP/1.", 7)) {
		evbuffer_add_printf(body, "bad request\n");
		reply(c, 400, "Bad Request", text, "", body, false);
		goto out;
	}
	*target++ = 0;
	*version = 0;
	if ((q = strchr(target, '?')))
		*q++ = 0;
	get = !strcmp(method, "GET");
	head = !strcmp(method, "HEAD");
	if (!strncmp(target, "/backends/", 10)) {
		backend_call(c, method, target + 10, q, body);
	} else if (strcmp(target, "/metrics") && strcmp(target, "/stats") && strcmp(target, "/health")) {
		evbuffer_add_printf(body, "not found: try /metrics, /stats or /health\n");
		reply(c, 404, "Not Found", text, "", body, head);
	} else if (!get && !head) {
		evbuffer_add_printf(body, "method not allowed\n");
		reply(c, 405, "Method Not Allowed", text, "Allow: GET, HEAD\r\n", body, false);
	} else if (c->browser) {
		/* a web page's own request: a script of a page whose name was rebound to this address
		 * (DNS rebinding) makes the endpoint its own origin and reads the reply, routes and
		 * backends included; an address the operator opens in the browser says
		 * Sec-Fetch-Site: none */
		refuse(c, &st.page_read_log, "a read", "made by a web page (Origin, Sec-Fetch-Site, or a host name without it) ", "",
		       "not from a web page (open the address directly, or use curl)", body);
	} else if (!strcmp(target, "/health")) {
		bool ok = health(d, body);
		reply(c, ok ? 200 : 503, ok ? "OK" : "Service Unavailable", text, "", body, head);
	} else {
		bool prom = !strcmp(target, "/metrics");
		struct stats_render *r = &st.last[!prom];
		uint64_t t0 = gw_now_ns();

		if (r->text && r->at_ns && t0 - r->at_ns < STATS_REUSE_FACTOR * r->cost_ns) {
			evbuffer_add(body, r->text, r->len);
			st.reused[!prom]++;
		} else {
			gw_metrics_begin(&m, body, prom ? GW_METRICS_PROMETHEUS : GW_METRICS_JSON);
			render(d, &m);
			gw_metrics_end(&m);
			st.renders[!prom]++;
			/* kept for the next ones (without memory for it, the next renders too) */
			size_t len = evbuffer_get_length(body);
			char *t = len > r->len || !r->text ? realloc(r->text, len ? len : 1) : r->text;
			if (t) {
				r->text = t;
				r->len = (size_t)evbuffer_copyout(body, t, len);
				r->at_ns = t0;
				r->cost_ns = gw_now_ns() - t0;
			}
		}
		reply(c, 200, "OK", prom ? "text/plain; version=0.0.4; charset=utf-8" : "application/json", "", body,
		      head);
	}
out:
	evbuffer_free(body);
}

bool gw_http_head_scan(struct gw_http_head *h, const char *p, size_t n)
{
	for (size_t i = 0; i < n && !h->complete; i++) {
		h->len++;
		if (p[i] == '\n' && h->state)
			h->complete = true;
		else if (p[i] == '\n')
			h->state = 1;
		else
			h->state = p[i] == '\r' && h->state == 1 ? 2 : 0;
	}
	return h->complete;
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct stats_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	char *line;

	if (c->lingering) {
		evbuffer_drain(in, len);
		return;
	}
	/* only what came since the last read: searching the whole input again on every read made a
	 * client that sends its head a byte at a time cost the control thread the head's size squared */
	while (!c->head.complete && c->head.len < len) {
		struct evbuffer_iovec v[8];
		struct evbuffer_ptr at;
		size_t from = c->head.len;
		int n;

		if (evbuffer_ptr_set(in, &at, c->head.len, EVBUFFER_PTR_SET) ||
		    (n = evbuffer_peek(in, -1, &at, v, 8)) <= 0)
			break;
		for (int i = 0; i < n && i < 8 && !gw_http_head_scan(&c->head, v[i].iov_base, v[i].iov_len); i++)
			;
		if (c->head.len == from)
			break; /* (the bytes are there, but never spin on it) */
	}
	if (!c->head.complete) {
		if (len > STATS_MAX_HEAD) {
			struct evbuffer *body = evbuffer_new();
			st.dropped[DROP_OVERSIZE]++;
			if (!body) {
				conn_free(c);
				return;
			}
			evbuffer_add_printf(body, "request header too large\n");
			reply(c, 431, "Request Header Fields Too Large", text, "", body, false);
			evbuffer_free(body);
		}
		return;
	}
	if (c->head.len > STATS_MAX_HEAD) {
		st.dropped[DROP_OVERSIZE]++;
		conn_free(c);
		return;
	}
	line = evbuffer_readln(in, NULL, EVBUFFER_EOL_CRLF);
	if (!line) {
		conn_free(c);
		return;
	}
	/* the header lines: only whether a browser sent the request matters */
	bool mozilla = false, fetch_site = false, by_name = false;
	for (;;) {
		char *h = evbuffer_readln(in, NULL, EVBUFFER_EOL_CRLF);

		if (!h || !*h) {
			free(h);
			break;
		}
		if (!strncasecmp(h, "origin:", 7)) {
			c->browser = true;
		} else if (!strncasecmp(h, "sec-fetch-site:", 15)) {
			fetch_site = true;
			if (!strstr(h + 15, "none"))
				c->browser = true;
		} else if (!strncasecmp(h, "user-agent:", 11)) {
			mozilla = !strncmp(h + 11 + strspn(h + 11, " \t"), "Mozilla/", 8);
		} else if (!strncasecmp(h, "host:", 5)) {
			by_name = host_is_name(h + 5);
		}
		free(h);
	}
	/* a browser too old to say Sec-Fetch-Site sends no Origin with a page's own GET: a script of a
	 * page whose name was rebound to this address (DNS rebinding) reads the reply then, and only a
	 * page reaches the endpoint by a name that is not the address (a browser, by any user agent's
	 * first word); a name typed by the operator in such a browser is refused with it (use the
	 * address, a newer browser, or curl) */
	if (mozilla && !fetch_site && by_name)
		c->browser = true;
	handle(c, line);
	free(line);
}

/* C's reply has left: the FIN follows it, and the connection waits for the client's (see above). */
static void linger(struct stats_conn *c)
{
	c->lingering = true;
	if (shutdown(bufferevent_getfd(c->bev), SHUT_WR)) {
		conn_free(c); /* (the client is gone already) */
		return;
	}
	evbuffer_drain(bufferevent_get_input(c->bev), evbuffer_get_length(bufferevent_get_input(c->bev)));
	evtimer_add(c->deadline, &(struct timeval){.tv_sec = STATS_LINGER_S});
	if (bufferevent_enable(c->bev, EV_READ))
		conn_free(c);
}

static void on_write(struct bufferevent *bev, void *arg)
{
	struct stats_conn *c = arg;

	if (c->replied && !c->lingering && !evbuffer_get_length(bufferevent_get_output(bev)))
		linger(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	conn_free(arg); /* EOF before the request was complete, or an error (a reset): nothing to answer */
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct stats_conn *c = arg;

	(void)fd;
	(void)what;
	if (!c->lingering)
		st.dropped[DROP_TIMEOUT]++; /* (a lingering one was served) */
	conn_free(c);
}

static void on_accept(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
	struct gw_daemon *d = arg;
	struct stats_conn *c = NULL;

	(void)lis;
	if (st.n_conns >= STATS_MAX_CONNS) {
		/* the oldest connection served already (lingering), or still without a whole request, or
		 * whose reply does not leave, if it had its time */
		const uint64_t grace = STATS_IDLE_EVICT_MS * 1000000ull;
		struct stats_conn *old;
		uint64_t now = gw_now_ns();

		TAILQ_FOREACH(old, &st.conns, link)
			if ((old->lingering && unacked(old) <= 0) ||
			    now - (old->replied ? old->replied_ns : old->born_ns) >= grace)
				break;
		if (!old) {
			st.dropped[DROP_LIMIT]++;
			close(fd);
			return;
		}
		if (!old->lingering)
			st.dropped[DROP_EVICTED]++; /* (a lingering one was served) */
		conn_free(old);
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto err;
	c->d = d;
	if (sa && sa->sa_family == AF_INET && (size_t)salen >= sizeof(struct sockaddr_in)) {
		c->peer = ((struct sockaddr_in *)sa)->sin_addr;
		c->peer_port = ntohs(((struct sockaddr_in *)sa)->sin_port);
	}
	/* the kernel's send buffer grows to megabytes for a peer that reads nothing, and keeps them after
	 * the close: a client asking in a loop would hold that much of the host's memory per
	 * connection; a reply larger than this waits in the connection (evicted when it stalls) */
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &(int){STATS_SNDBUF}, sizeof(int));
	c->bev = bufferevent_socket_new(d->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev)
		goto err;
	fd = -1; /* the bufferevent's now */
	c->deadline = evtimer_new(d->base, on_deadline, c);
	if (!c->deadline || evtimer_add(c->deadline, &(struct timeval){.tv_sec = STATS_DEADLINE_S}))
		goto err;
	bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
	if (!evbuffer_add_cb(bufferevent_get_output(c->bev), on_sent, c))
		goto err;
	bufferevent_setwatermark(c->bev, EV_READ, 0, STATS_MAX_HEAD + 1);
	if (bufferevent_enable(c->bev, EV_READ))
		goto err;
	c->born_ns = gw_now_ns();
	TAILQ_INSERT_TAIL(&st.conns, c, link);
	st.n_conns++;
	return;
err:
	if (c) {
		if (c->deadline)
			event_free(c->deadline);
		if (c->bev)
			bufferevent_free(c->bev);
		free(c);
	}
	if (fd >= 0)
		close(fd);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	evconnlistener_enable(st.lis);
}

/* accept() failed for want of something (fds, memory): the socket stays readable, so pause a second
 * rather than spin the control thread on it */
static void on_accept_error(struct evconnlistener *lis, void *arg)
{
	int e = EVUTIL_SOCKET_ERROR();

	(void)arg;
	GW_WARN("stats endpoint: accept: %s; pausing for 1 s", strerror(e));
	evconnlistener_disable(lis);
	evtimer_add(st.resume, &(struct timeval){.tv_sec = 1});
}

int gw_stats_start(struct gw_daemon *d)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_addr = d->conf->gateway.stats.addr,
		.sin_port = htons(d->conf->gateway.stats.port),
	};
	char addr[INET_ADDRSTRLEN];

	st.lis = evconnlistener_new_bind(d->base, on_accept, d,
					 LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE, 128,
					 (struct sockaddr *)&sin, sizeof(sin));
	if (!st.lis)
		return errno ? -errno : -EADDRINUSE;
	st.resume = evtimer_new(d->base, on_resume, NULL);
	if (!st.resume) {
		evconnlistener_free(st.lis);
		st.lis = NULL;
		return -ENOMEM;
	}
	evconnlistener_set_error_cb(st.lis, on_accept_error);
	inet_ntop(AF_INET, &sin.sin_addr, addr, sizeof(addr));
	GW_INFO("stats endpoint on http://%s:%u/metrics", addr, d->conf->gateway.stats.port);
	return 0;
}

void gw_stats_stop(struct gw_daemon *d)
{
	(void)d;
	while (!TAILQ_EMPTY(&st.conns))
		conn_free(TAILQ_FIRST(&st.conns));
	for (unsigned k = 0; k < 2; k++) {
		free(st.last[k].text);
		st.last[k] = (struct stats_render){0};
	}
	if (st.resume)
		event_free(st.resume);
	st.resume = NULL;
	if (st.lis)
		evconnlistener_free(st.lis);
	st.lis = NULL;
}
