/* Logging backend. The level is a relaxed atomic so SIGHUP can change it while workers log. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"

static enum conf_log_target log_target = CONF_LOG_STDERR;
static _Atomic int log_level = CONF_LOG_INFO; /* written by the control thread, read by all */

void gw_log_init(enum conf_log_target target, enum conf_log_level level)
{
	if (target == CONF_LOG_SYSLOG && log_target != CONF_LOG_SYSLOG)
		openlog("ibgwd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log_target = target;
	gw_log_set_level(level);
}

void gw_log_set_level(enum conf_log_level level)
{
	atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

bool gw_log_enabled(enum conf_log_level level)
{
	return (int)level <= atomic_load_explicit(&log_level, memory_order_relaxed);
}

static void vlog(enum conf_log_level level, const char *fmt, va_list ap)
{
	char line[2048];
	int n;

	if (log_target == CONF_LOG_SYSLOG) {
		vsyslog((int)level, fmt, ap);
		return;
	}
	/* "<N>" lets journald (and systemd's stderr capture) keep the priority */
	n = snprintf(line, sizeof(line), "<%d>ibgwd: ", (int)level);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere else to report it */
	}
}

void gw_log(enum conf_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (!gw_log_enabled(level))
		return;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

void gw_fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(CONF_LOG_ERROR, fmt, ap);
	va_end(ap);
	exit(1);
}
