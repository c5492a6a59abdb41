/* Counter descriptors: how a module names the counters of its stats struct.
 *
 * eth_side, ib_side and translate keep plain structs of uint64_t counters (each written by exactly one
 * thread); the gateway's stats endpoint walks these tables to print them. The module owns the names,
 * the gateway owns the formats, and neither includes the other. */
#ifndef XLT_METRIC_T_H
#define XLT_METRIC_T_H

#include <stddef.h>

enum xlt_metric_type {
	XLT_COUNTER, /* only grows; the name ends in _total */
	XLT_GAUGE,
};

struct xlt_metric_desc {
	const char *name; /* without the "ibgw_" prefix */
	enum xlt_metric_type type;
	size_t offset; /* of a uint64_t in the module's stats struct */
	const char *help;
	const char *label; /* optional extra label "key=value" (e.g. "reason=acl"), or NULL */
};

/* NAME is the metric name; counters end in _total. */
#define XLT_METRIC(st, field, name, type, help) {name, type, offsetof(st, field), help, NULL}

#endif
