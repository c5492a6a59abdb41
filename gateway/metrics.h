/* Metrics writer: one set of calls renders both Prometheus text (format 0.0.4) and JSON.
 *
 * Callers open a family (name, type, help) and add samples with label pairs. Prometheus wants each
 * family's HELP/TYPE once and its samples together, JSON wants one object: the writer handles both.
 * Control thread only. */
#ifndef GW_METRICS_H
#define GW_METRICS_H

#include <stdint.h>

#include "../translate/metric-t.h"

struct evbuffer;

enum gw_metrics_format {
	GW_METRICS_PROMETHEUS,
	GW_METRICS_JSON,
};

struct gw_metrics {
	struct evbuffer *out;
	enum gw_metrics_format format;
	unsigned families;  /* families written so far */
	unsigned samples;   /* samples in the current family */
	char family[128];
};

void gw_metrics_begin(struct gw_metrics *m, struct evbuffer *out, enum gw_metrics_format format);
void gw_metrics_end(struct gw_metrics *m);
/* NAME without the "ibgw_" prefix. */
void gw_metrics_family(struct gw_metrics *m, const char *name, enum xlt_metric_type type, const char *help);
/* Labels are NULL-terminated (key, value) pairs; values are escaped here. */
void gw_metrics_sample(struct gw_metrics *m, double value, ...) __attribute__((sentinel));
/* Prints every counter of a module's stats struct: one family per descriptor, one sample per instance.
 * BASES[i] is instance i's struct, LABEL_KEY/LABEL_VALUES[i] name it ("worker"/"0", "route"/"s3");
 * LABEL_KEY NULL: no instance label. Consecutive descriptors of one name share a family and differ by
 * their own label (desc.label = "reason=acl"). */
void gw_metrics_table(struct gw_metrics *m, const struct xlt_metric_desc *desc, unsigned n_desc,
		      const void *const *bases, unsigned n_bases, const char *label_key,
		      const char *const *label_values);

#endif
