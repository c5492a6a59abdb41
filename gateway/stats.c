/* Stats endpoint: GET /metrics (Prometheus text 0.0.4), GET /stats (JSON), GET /health.
 *
 * libevent's evhttp on the control thread, bound to [gateway] stats only (a management address, never
 * the datapath port). Every request renders from counters that single writers publish with relaxed
 * stores, so serving it never stops a worker. */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "../conf/conf.h"
#include "../eth_side/port.h"
#include "gw.h"
#include "log.h"
#include "metrics.h"

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
	gw_session_metrics(d, m);
	gw_eth_metrics(d, m);
	gw_ib_metrics(d, m);
}

static void reply(struct evhttp_request *req, int code, const char *reason, const char *type,
		  struct evbuffer *body)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Type", type);
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_send_reply(req, code, reason, body);
}

static void handle(struct evhttp_request *req, void *arg)
{
	struct gw_daemon *d = arg;
	enum evhttp_cmd_type method = evhttp_request_get_command(req);
	const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	struct evbuffer *body = evbuffer_new();
	struct gw_metrics m;
	bool known = path && (!strcmp(path, "/metrics") || !strcmp(path, "/stats") || !strcmp(path, "/health"));

	if (!body) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	if (!known) {
		evbuffer_add_printf(body, "not found: try /metrics, /stats or /health\n");
		reply(req, HTTP_NOTFOUND, "Not Found", "text/plain; charset=utf-8", body);
	} else if (method != EVHTTP_REQ_GET && method != EVHTTP_REQ_HEAD) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
		evbuffer_add_printf(body, "method not allowed\n");
		reply(req, 405, "Method Not Allowed", "text/plain; charset=utf-8", body);
	} else if (!strcmp(path, "/health")) {
		bool ok = d->state == GW_SERVING;
		evbuffer_add_printf(body, "%s\n", ok ? "ok" : "draining");
		reply(req, ok ? HTTP_OK : 503, ok ? "OK" : "Service Unavailable", "text/plain; charset=utf-8", body);
	} else {
		bool prom = !strcmp(path, "/metrics");
		gw_metrics_begin(&m, body, prom ? GW_METRICS_PROMETHEUS : GW_METRICS_JSON);
		render(d, &m);
		gw_metrics_end(&m);
		reply(req, HTTP_OK, "OK", prom ? "text/plain; version=0.0.4; charset=utf-8" : "application/json", body);
	}
	evbuffer_free(body);
}

int gw_stats_start(struct gw_daemon *d)
{
	char addr[INET_ADDRSTRLEN];

	d->http = evhttp_new(d->base);
	if (!d->http)
		return -ENOMEM;
	evhttp_set_allowed_methods(d->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
						    EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
	evhttp_set_timeout(d->http, 10);
	evhttp_set_max_headers_size(d->http, 8192);
	evhttp_set_max_body_size(d->http, 65536);
	evhttp_set_gencb(d->http, handle, d);
	inet_ntop(AF_INET, &d->conf->gateway.stats.addr, addr, sizeof(addr));
	if (!evhttp_bind_socket_with_handle(d->http, addr, d->conf->gateway.stats.port)) {
		int e = errno ? errno : EADDRINUSE;
		evhttp_free(d->http);
		d->http = NULL;
		return -e;
	}
	GW_INFO("stats endpoint on http://%s:%u/metrics", addr, d->conf->gateway.stats.port);
	return 0;
}

void gw_stats_stop(struct gw_daemon *d)
{
	if (d->http)
		evhttp_free(d->http);
	d->http = NULL;
}
