/* Logging backend. The level is a relaxed atomic so SIGHUP can change it while workers log.
 *
 * A datapath thread never waits for the log: journald or a syslog daemon that stalls (a flush, a
 * rotation, a full disk) or a pipe nobody reads would stop every session of that worker. There a
 * line that cannot go at once is dropped and counted (gw_log_dropped): to a socket (journald's
 * stream, syslog's datagrams, the latter through a socket of the thread's own, glibc's syslog()
 * blocks) with MSG_DONTWAIT, to a pipe or a terminal through a non-blocking descriptor of its own
 * (lines are shorter than PIPE_BUF: a pipe takes one whole or not at all); a regular file is written
 * as it is. The workers' descriptor is a second open of the same pipe, not stderr with O_NONBLOCK
 * set: that flag belongs to the open file, which the control thread (whose lines may wait) and
 * whoever else holds the pipe share. Asking poll() first would not do: it says a line fits, and
 * another thread's line can take the room before this one is written. Where the pipe cannot be
 * opened again (no /proc), the workers' lines are dropped and counted, said once at start. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"

static enum conf_log_target log_target = CONF_LOG_STDERR;
static _Atomic int log_level = CONF_LOG_INFO; /* written by the control thread, read by all */
static _Atomic uint64_t log_dropped;
static _Thread_local bool log_nowait; /* this thread is a worker */
static _Thread_local int log_sock = -1; /* its own syslog socket (connected to /dev/log) */
static enum { ERR_FILE, ERR_SOCKET, ERR_PIPE } err_kind; /* what stderr is (gw_log_init) */
static int err_nowait = -1; /* ERR_PIPE: the workers' non-blocking open of it (gw_log_init) */

void gw_log_nowait(void)
{
	log_nowait = true;
}

uint64_t gw_log_dropped(void)
{
	return atomic_load_explicit(&log_dropped, memory_order_relaxed);
}

static void dropped(void)
{
	atomic_fetch_add_explicit(&log_dropped, 1, memory_order_relaxed);
}

/* A worker's line to syslog: the daemon facility, as openlog() set it for the rest. */
static void syslog_nowait(int level, const char *msg)
{
	char line[2100];
	int n;

	if (log_sock < 0) {
		struct sockaddr_un sun = {.sun_family = AF_UNIX, .sun_path = "/dev/log"};
		log_sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (log_sock >= 0 && connect(log_sock, (struct sockaddr *)&sun, sizeof(sun))) {
			close(log_sock);
			log_sock = -1;
		}
		if (log_sock < 0) {
			dropped();
			return;
		}
	}
	n = snprintf(line, sizeof(line), "<%d>ibgwd[%d]: %s", LOG_DAEMON | level, (int)getpid(), msg);
	if (n > (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 1;
	if (send(log_sock, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		dropped();
		if (errno != EAGAIN && errno != ENOBUFS) { /* syslog restarted: connect again next time */
			close(log_sock);
			log_sock = -1;
		}
	}
}

/* A worker's line to stderr. */
static void stderr_nowait(const char *line, size_t n)
{
	if (err_kind == ERR_SOCKET) {
		if (send(STDERR_FILENO, line, n, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)n)
			dropped();
		return;
	}
	if (err_kind == ERR_PIPE) {
		/* EAGAIN: the pipe is full; no second open of it (gw_log_init): nothing goes */
		if (err_nowait < 0 || write(err_nowait, line, n) != (ssize_t)n)
			dropped();
		return;
	}
	if (write(STDERR_FILENO, line, n) < 0)
		dropped();
}

void gw_log_init(enum conf_log_target target, enum conf_log_level level)
{
	struct stat sb;

	err_kind = fstat(STDERR_FILENO, &sb) || S_ISREG(sb.st_mode) ? ERR_FILE
	           : S_ISSOCK(sb.st_mode)                           ? ERR_SOCKET
	                                                            : ERR_PIPE;
	if (err_kind == ERR_PIPE && err_nowait < 0)
		err_nowait = open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (target == CONF_LOG_SYSLOG && log_target != CONF_LOG_SYSLOG)
		openlog("ibgwd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log_target = target;
	gw_log_set_level(level);
	if (target != CONF_LOG_SYSLOG && err_kind == ERR_PIPE && err_nowait < 0)
		GW_WARN("log: stderr (a pipe or terminal) cannot be opened again without blocking (%s): the "
		        "workers' lines are dropped and counted (ibgw_log_lines_dropped_total)",
		        strerror(errno));
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
		if (log_nowait) {
			vsnprintf(line, sizeof(line), fmt, ap);
			syslog_nowait((int)level, line);
			return;
		}
		vsyslog((int)level, fmt, ap);
		return;
	}
	/* "<N>" lets journald (and systemd's stderr capture) keep the priority */
	n = snprintf(line, sizeof(line), "<%d>ibgwd: ", (int)level);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (log_nowait) {
		stderr_nowait(line, (size_t)n);
		return;
	}
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
