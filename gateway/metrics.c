/* Metrics writer (see metrics.h). Values are doubles in the output as Prometheus has them. A whole
 * value prints every digit (%.0f is exact for any integral double): a counter grown past the range
 * where doubles hold every integer keeps rising in the output, where a cut to fewer significant
 * digits printed a smaller number, which a scraper takes for a counter reset. Any other value prints
 * with the fewest digits that read back as the same double. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "../translate/counter.h"
#include "metrics.h"

void gw_metrics_begin(struct gw_metrics *m, struct evbuffer *out, enum gw_metrics_format format)
{
	memset(m, 0, sizeof(*m));
	m->out = out;
	m->format = format;
	if (format == GW_METRICS_JSON)
		evbuffer_add_printf(out, "{");
}

static void close_family(struct gw_metrics *m)
{
	if (m->format == GW_METRICS_JSON && m->family[0])
		evbuffer_add_printf(m->out, "]");
}

void gw_metrics_end(struct gw_metrics *m)
{
	close_family(m);
	if (m->format == GW_METRICS_JSON)
		evbuffer_add_printf(m->out, "}\n");
}

/* Prometheus label values escape \ " and newline; JSON strings escape those and control bytes. */
static void add_escaped(struct evbuffer *out, const char *s, enum gw_metrics_format f)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '\\' || c == '"')
			evbuffer_add_printf(out, "\\%c", c);
		else if (c == '\n')
			evbuffer_add(out, "\\n", 2);
		else if (c < 0x20 && f == GW_METRICS_JSON)
			evbuffer_add_printf(out, "\\u%04x", c);
		else
			evbuffer_add(out, &c, 1);
	}
}

void gw_metrics_family(struct gw_metrics *m, const char *name, enum xlt_metric_type type, const char *help)
{
	close_family(m);
	snprintf(m->family, sizeof(m->family), "ibgw_%s", name);
	m->samples = 0;
	if (m->format == GW_METRICS_PROMETHEUS) {
		evbuffer_add_printf(m->out, "# HELP %s ", m->family);
		/* HELP text escapes only \ and newline */
		for (const char *h = help; *h; h++) {
			if (*h == '\\' || *h == '\n')
				evbuffer_add_printf(m->out, "\\%c", *h == '\n' ? 'n' : '\\');
			else
				evbuffer_add(m->out, h, 1);
		}
		evbuffer_add_printf(m->out, "\n# TYPE %s %s\n", m->family, type == XLT_COUNTER ? "counter" : "gauge");
	} else {
		evbuffer_add_printf(m->out, "%s\"%s\":[", m->families ? "," : "", m->family);
	}
	m->families++;
}

static void add_value(struct evbuffer *out, double v)
{
	char b[32];

	if (isfinite(v) && v == floor(v)) {
		evbuffer_add_printf(out, "%.0f", v);
		return;
	}
	/* (%.17g always reads back; fewer digits keep short values such as durations short) */
	for (int p = 15;; p++) {
		snprintf(b, sizeof(b), "%.*g", p, v);
		if (p == 17 || strtod(b, NULL) == v)
			break;
	}
	evbuffer_add_printf(out, "%s", b);
}

static void vsample(struct gw_metrics *m, double value, const char *extra, va_list ap)
{
	const char *k, *v;
	unsigned n = 0;
	char ek[64], *ev = NULL;

	/* EXTRA is "key=value" from a descriptor */
	if (extra) {
		snprintf(ek, sizeof(ek), "%s", extra);
		ev = strchr(ek, '=');
		if (ev)
			*ev++ = 0;
	}
	if (m->format == GW_METRICS_PROMETHEUS) {
		evbuffer_add_printf(m->out, "%s", m->family);
		while ((k = va_arg(ap, const char *)) && (v = va_arg(ap, const char *))) {
			evbuffer_add_printf(m->out, "%s%s=\"", n++ ? "," : "{", k);
			add_escaped(m->out, v, m->format);
			evbuffer_add(m->out, "\"", 1);
		}
		if (ev) {
			evbuffer_add_printf(m->out, "%s%s=\"", n++ ? "," : "{", ek);
			add_escaped(m->out, ev, m->format);
			evbuffer_add(m->out, "\"", 1);
		}
		evbuffer_add_printf(m->out, "%s ", n ? "}" : "");
		add_value(m->out, value);
		evbuffer_add(m->out, "\n", 1);
	} else {
		evbuffer_add_printf(m->out, "%s{\"labels\":{", m->samples ? "," : "");
		while ((k = va_arg(ap, const char *)) && (v = va_arg(ap, const char *))) {
			evbuffer_add_printf(m->out, "%s\"%s\":\"", n++ ? "," : "", k);
			add_escaped(m->out, v, m->format);
			evbuffer_add(m->out, "\"", 1);
		}
		if (ev) {
			evbuffer_add_printf(m->out, "%s\"%s\":\"", n++ ? "," : "", ek);
			add_escaped(m->out, ev, m->format);
			evbuffer_add(m->out, "\"", 1);
		}
		evbuffer_add_printf(m->out, "},\"value\":");
		add_value(m->out, value);
		evbuffer_add(m->out, "}", 1);
	}
	m->samples++;
}

static void sample_extra(struct gw_metrics *m, double value, const char *extra, ...)
{
	va_list ap;

	va_start(ap, extra);
	vsample(m, value, extra, ap);
	va_end(ap);
}

void gw_metrics_sample(struct gw_metrics *m, double value, ...)
{
	va_list ap;

	va_start(ap, value);
	vsample(m, value, NULL, ap);
	va_end(ap);
}

void gw_metrics_table(struct gw_metrics *m, const struct xlt_metric_desc *desc, unsigned n_desc,
		      const void *const *bases, unsigned n_bases, const char *label_key,
		      const char *const *label_values)
{
	for (unsigned d = 0; d < n_desc; d++) {
		if (d == 0 || strcmp(desc[d].name, desc[d - 1].name))
			gw_metrics_family(m, desc[d].name, desc[d].type, desc[d].help);
		for (unsigned i = 0; i < n_bases; i++) {
			/* each counter has one writer thread (translate/counter.h) */
			uint64_t v =
			    xlt_counter_read((const uint64_t *)((const char *)bases[i] + desc[d].offset));
			if (label_key)
				sample_extra(m, (double)v, desc[d].label, label_key, label_values[i], NULL);
			else
				sample_extra(m, (double)v, desc[d].label, NULL);
		}
	}
}
