/* Logging: levels to stderr (one line each, journald-friendly "<N>" prefixes) or to syslog.
 *
 * Safe to call from any thread (one write per line; a worker's never waits: log.c). Not for the
 * datapath's per-packet path: workers log only state changes, and rate-limit with xlt_ratelim
 * (translate/ratelim.h) where a peer could trigger a flood. */
#ifndef GW_LOG_H
#define GW_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "../conf/conf-t.h"

void gw_log_init(enum conf_log_target target, enum conf_log_level level);
void gw_log_set_level(enum conf_log_level level);
bool gw_log_enabled(enum conf_log_level level);
void gw_log(enum conf_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The calling thread is a worker: its lines never wait (one that cannot go at once is dropped and
 * counted). gw_log_dropped: how many so far (any thread). */
void gw_log_nowait(void);
uint64_t gw_log_dropped(void);
/* Logs and exits 1: only before the workers start, or on an internal inconsistency. */
void gw_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define GW_ERR(...)    gw_log(CONF_LOG_ERROR, __VA_ARGS__)
#define GW_WARN(...)   gw_log(CONF_LOG_WARNING, __VA_ARGS__)
#define GW_NOTICE(...) gw_log(CONF_LOG_NOTICE, __VA_ARGS__)
#define GW_INFO(...)   gw_log(CONF_LOG_INFO, __VA_ARGS__)
#define GW_DEBUG(...)                                                                                        \
	do {                                                                                                 \
		if (gw_log_enabled(CONF_LOG_DEBUG))                                                          \
			gw_log(CONF_LOG_DEBUG, __VA_ARGS__);                                                 \
	} while (0)

#endif
