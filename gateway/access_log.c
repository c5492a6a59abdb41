/* Access log: records from the workers' rings, formatted and written by the control thread.
 *
 * Writing never holds the control thread (which also accepts IB connections and serves /metrics):
 *  - a file is opened O_APPEND and written in batches of whole lines every ALOG_DRAIN_MS, one write()
 *    per batch. A regular file never blocks on a full disk: write() fails at once (ENOSPC), as it does
 *    on EIO; the batch is then lost and its lines counted in ibgw_access_log_write_errors_total. A
 *    write cut short (the disk filled mid-batch) leaves a partial line: the next batch that is written
 *    starts with a newline, so every other line stays whole and parseable. A line cut before its
 *    newline only is whole (that newline comes before any later byte) and counts as written.
 *  - syslog gets one datagram per line on our own non-blocking socket to /dev/log (glibc's syslog()
 *    blocks while the daemon's socket buffer is full); EAGAIN loses the line, counted. The facility is
 *    the daemon's own (LOG_DAEMON), priority info.
 * A failing target is reported once in the daemon's log (and again after it worked in between), never
 * per line. SIGUSR1 reopens the file by name (logrotate's create mode); a reload that names another
 * target opens it before the reload commits, so a target that cannot be opened fails the reload and
 * the running one stays. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <linux/openat2.h>

#include "../conf/conf.h"
#include "../translate/session.h"
#include "access_log.h"
#include "gw.h"
#include "log.h"
#include "metrics.h"

#define ALOG_DRAIN_MS    50
#define ALOG_BATCH       (64 * 1024)
#define ALOG_SYSLOG_PATH "/dev/log"
#define ALOG_SYSLOG_PRI  30 /* LOG_DAEMON | LOG_INFO */

enum target_kind { TGT_OFF, TGT_FILE, TGT_SYSLOG };

struct target {
	enum target_kind kind;
	int fd;                  /* -1: none (syslog: not connected yet) */
	char path[CONF_STR_MAX]; /* as configured (syslog: "syslog" or "syslog:/SOCKET") */
};

/* Control thread only (one daemon per process). */
static struct {
	struct target cur, next;
	bool next_set;
	struct event *timer;
	char buf[ALOG_BATCH];
	size_t len;
	unsigned lines; /* in buf */
	bool partial;   /* the file ends with a cut line */
	bool failing;   /* the last write failed (reported) */
	uint64_t syslog_retry_ns;
	uint64_t written, write_errors;
} al = {.cur = {.fd = -1}, .next = {.fd = -1}};

/* ---- formatting (pure) ---- */

struct out {
	char *p;
	size_t len, cap;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->len >= o->cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	o->len = n < 0 ? o->cap : o->len + (size_t)n;
}

/* A JSON string (quotes included) of at most MAX bytes of S. */
static void put_str(struct out *o, const char *s, size_t max)
{
	put(o, "\"");
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\')
			put(o, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			put(o, "\\u%04x", ch);
		else
			put(o, "%c", ch);
	}
	put(o, "\"");
}

/* NS as milliseconds with 3 decimals (microsecond resolution). */
static void put_ms(struct out *o, const char *key, uint64_t ns)
{
	put(o, "\"%s\":%" PRIu64 ".%03" PRIu64, key, ns / 1000000, ns / 1000 % 1000);
}

static const char *side_name(uint8_t kind)
{
	switch (kind) {
	case CONF_EP_IB:
		return "ib";
	case CONF_EP_TCP:
		return "tcp";
	case CONF_EP_ECHO:
		return "echo";
	case CONF_EP_DISCARD:
		return "discard";
	default:
		return "none";
	}
}

static void put_end(struct out *o, const char *key, const struct gw_alog_end *e)
{
	char a[INET6_ADDRSTRLEN];

	put(o, "\"%s\":{\"side\":\"%s\"", key, side_name(e->side));
	if (e->side == CONF_EP_IB || e->side == CONF_EP_TCP)
		put(o, ",\"addr\":\"%s\",\"port\":%u", xlt_ip_fmt(&e->addr, a), e->port);
	if (e->via_port)
		put(o, ",\"via\":{\"addr\":\"%s\",\"port\":%u}", xlt_ip_fmt(&e->via_addr, a), e->via_port);
	if (e->present && e->info.kind == XLT_STREAM_TCP)
		put(o, ",\"retransmits\":%" PRIu32 ",\"srtt_us\":%" PRIu32, e->info.retransmits,
		    e->info.srtt_us);
	if (e->present && e->info.kind == XLT_STREAM_IB) {
		if (e->info.has_gid)
			put(o, ",\"gid\":\"%s\",\"qpn\":%" PRIu32,
			    inet_ntop(AF_INET6, e->info.gid, a, sizeof(a)), e->info.qpn);
		put(o, ",\"credit_stalls\":%" PRIu32 ",", e->info.credit_stalls);
		put_ms(o, "credit_stall_ms", e->info.credit_stall_ns);
	}
	put(o, "}");
}

size_t gw_alog_format(const struct gw_alog_rec *r, uint64_t real_ns, uint64_t mono_ns, char *buf, size_t len)
{
	struct out o = {.p = buf, .cap = len - 1}; /* room for the newline */
	uint64_t t = real_ns - (mono_ns > r->now_ns ? mono_ns - r->now_ns : 0);
	time_t secs = (time_t)(t / 1000000000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	put(&o,
	    "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03uZ\",\"event\":\"%s\",\"uid\":\"%016" PRIx64
	    "\",\"route\":",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	    (unsigned)(t / 1000000 % 1000), r->event == GW_ALOG_END ? "end" : "progress", r->uid);
	put_str(&o, r->route, sizeof(r->route));
	if (r->event == GW_ALOG_END)
		put(&o, ",\"reason\":\"%s\"",
		    r->reason < XLT_END_COUNT ? xlt_end_reason_names[r->reason] : "unknown");
	put(&o, ",");
	put_ms(&o, "duration_ms", r->now_ns > r->start_ns ? r->now_ns - r->start_ns : 0);
	put(&o, ",");
	if (r->connected)
		put_ms(&o, "connect_ms", r->connect_ns);
	else
		put(&o, "\"connect_ms\":null");
	put(&o, ",");
	put_end(&o, "client", &r->client);
	put(&o, ",");
	put_end(&o, "backend", &r->backend);
	for (unsigned d = 0; d < 2; d++) {
		put(&o, ",\"%s\":{\"bytes\":%" PRIu64 ",", d ? "backend_to_client" : "client_to_backend",
		    r->bytes[d]);
		put_ms(&o, "blocked_ms", r->blocked_ns[d]);
		put(&o, "}");
	}
	put(&o, "}");
	if (o.len >= o.cap) /* cannot happen within GW_ALOG_LINE_MAX; keep the line valid anyway */
		o.len = (size_t)snprintf(buf, len - 1, "{\"event\":\"truncated\",\"uid\":\"%016" PRIx64 "\"}",
		                         r->uid);
	buf[o.len++] = '\n';
	return o.len;
}

/* ---- the worker's side ---- */

static void fill_end(struct gw_alog_end *e, enum conf_endpoint_kind side, struct xlt_stream *s,
                     const struct xlt_ip *addr, uint16_t port)
{
	e->side = (uint8_t)side;
	e->present = s != NULL;
	if (s) {
		e->addr = s->peer_addr;
		e->port = s->peer_port;
		e->via_addr = s->via_addr;
		e->via_port = s->via_port;
		if (s->ops->info)
			s->ops->info(s, &e->info);
		else
			e->info = (struct xlt_stream_info){0};
	} else {
		e->addr = *addr;
		e->port = port;
		e->via_port = 0;
		e->info = (struct xlt_stream_info){0};
	}
}

void gw_alog_session(struct gw_worker *w, struct gw_session *s, enum gw_alog_event ev, uint64_t now)
{
	const struct conf_route *c = &s->route->conf;
	struct xlt_stream *a = s->x.st[0];
	struct gw_alog_rec *r;

	if (!w->alog || !(r = gw_alog_reserve(w->alog)))
		return;
	r->uid = s->uid;
	r->start_ns = s->x.connect_start_ns;
	r->now_ns = now;
	r->connect_ns = s->x.connect_ns;
	r->connected =
	    s->x.kind == XLT_SESSION_RELAY && s->x.b_open; /* echo, discard: no backend to connect */
	/* what the client sent and what it was sent (relay: B's bytes in are A's bytes out) */
	r->bytes[0] = a ? a->bytes_in : 0;
	r->bytes[1] = a ? a->bytes_out : 0;
	r->blocked_ns[0] = s->x.blocked_ns[0];
	r->blocked_ns[1] = s->x.blocked_ns[1];
	r->event = (uint8_t)ev;
	r->reason = (uint8_t)s->x.reason;
	fill_end(&r->client, c->listen.kind, a, &(struct xlt_ip){0}, 0);
	/* with B gone (a failed connect, retried or not) the last backend tried; none tried yet: the
	 * route's first */
	if (s->last_ep.port)
		fill_end(&r->backend, s->last_ep.kind, s->x.st[1], &s->last_ep.addr, s->last_ep.port);
	else
		fill_end(&r->backend, c->connect.kind, s->x.st[1], &c->connect.addr, c->connect.port);
	memcpy(r->route, c->name, sizeof(r->route));
	gw_alog_commit(w->alog);
}

/* ---- targets ---- */

static void target_close(struct target *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	t->kind = TGT_OFF;
	t->path[0] = 0;
}

/* The socket of a syslog target (targets are copied: computed, never pointed at). */
static const char *sock_of(const struct target *t)
{
	return t->path[6] ? t->path + 7 : ALOG_SYSLOG_PATH;
}

static int syslog_connect(const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* /dev/stdout, /dev/stderr, /dev/fd/N, exactly: links to the files the daemon was started with (a
 * pipe in a container), which whoever started it chose. Any other name under /dev may be a link
 * planted by anyone (/dev/shm and /dev/mqueue are world-writable; "/dev/../" leaves /dev). */
static bool own_fd_name(const char *p)
{
	if (!strcmp(p, "/dev/stdout") || !strcmp(p, "/dev/stderr"))
		return true;
	if (strncmp(p, "/dev/fd/", 8) || !p[8])
		return false;
	for (p += 8; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* open_no_links without openat2: each directory opened O_PATH|O_NOFOLLOW in the one before it and
 * refused unless it is one (so opened, a link is the link itself, not what it points to), the file
 * O_NOFOLLOW in the last. Returns the fd or -errno (-ELOOP: a component is a symbolic link). */
static int open_walk(const char *path, int flags, mode_t mode)
{
	char name[NAME_MAX + 1];
	const char *p = path, *slash;
	struct stat sb;
	int dir, next, fd;

	dir = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	for (;;) {
		while (*p == '/')
			p++;
		slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (n > NAME_MAX) {
			fd = -ENAMETOOLONG;
			break;
		}
		memcpy(name, p, n);
		name[n] = 0;
		if (!slash) { /* the file ("": the path ends in '/', EISDIR as openat2 says) */
			fd = openat(dir, n ? name : ".", flags | O_NOFOLLOW, mode);
			if (fd < 0)
				fd = -errno;
			break;
		}
		next = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			fd = -errno;
			break;
		}
		fd = fstat(next, &sb)      ? -errno
		     : S_ISDIR(sb.st_mode) ? 0
		     : S_ISLNK(sb.st_mode) ? -ELOOP
		                           : -ENOTDIR;
		if (fd) {
			close(next);
			break;
		}
		close(dir);
		dir = next;
		p = slash;
	}
	close(dir);
	return fd;
}

/* open(PATH, FLAGS, MODE) with no symbolic link anywhere on PATH: O_NOFOLLOW refuses one as the last
 * component only, and a link planted as one of the directories (/var/tmp/ibgw -> /etc, made by anyone
 * where /var/tmp is writable by all) redirects the file as surely. Returns the fd or -errno (-ELOOP: a
 * component is a symbolic link). */
static int open_no_links(const char *path, int flags, mode_t mode)
{
	struct open_how how = {.flags = (uint64_t)flags, .mode = mode, .resolve = RESOLVE_NO_SYMLINKS};
	long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));

	if (fd >= 0)
		return (int)fd;
	/* no openat2 before Linux 5.6, and a seccomp filter that does not know it (a container runtime's,
	 * an older systemd's) refuses it with ENOSYS or EPERM: the same rule then, a component at a time
	 * (an EPERM of the file itself comes back from there too) */
	if (errno != ENOSYS && errno != EPERM)
		return -errno;
	return open_walk(path, flags, mode);
}

/* Opens what SPEC names into *T; C: the file that named it, for the messages (NULL: a reopen). Returns 0
 * or -errno (logged). */
static int target_open(struct target *t, const char *spec, const struct conf *c)
{
	char where[CONF_PATH_MAX + 24] = "";

	if (c) {
		conf_where(c, NULL, "gateway", "access_log", where, sizeof(where) - 2);
		strcat(where, ": ");
	}
	*t = (struct target){.kind = TGT_OFF, .fd = -1};
	snprintf(t->path, sizeof(t->path), "%s", spec);
	if (!spec[0])
		return 0;
	if (!strncmp(spec, "syslog", 6) && (!spec[6] || spec[6] == ':')) {
		t->kind = TGT_SYSLOG;
		t->fd = syslog_connect(sock_of(t)); /* no syslog daemon yet: retried as lines come */
		if (t->fd == -ENAMETOOLONG) {
			GW_ERR("%saccess log: %s: socket path too long", where, spec);
			return t->fd;
		}
		if (t->fd < 0)
			GW_WARN("access log: cannot reach syslog at %s: %s (retrying)", sock_of(t),
			        strerror(-t->fd));
		return 0;
	}
	/* O_NONBLOCK: a FIFO or device named by mistake must not hold the control thread. No symbolic
	 * link on the path and a regular file only: where the log's directory, or one above it, is
	 * writable by others, a link planted there (at start or before the next logrotate's SIGUSR1)
	 * would have ibgwd, root by default, append to any file. The daemon's own stdout and stderr are
	 * the exception: links followed, a pipe or a terminal fine (the config refuses a path with a ".."
	 * component) */
	const int flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	bool own = own_fd_name(spec);
	int fd = own ? open(spec, flags, 0640) : open_no_links(spec, flags, 0640);
	if (fd < 0) {
		int e = own ? errno : -fd;
		GW_ERR("%saccess log: cannot open %s: %s", where, spec,
		       e == ELOOP
		           ? "a component of the path is a symbolic link (name the file by its real path)"
		           : strerror(e));
		return -e;
	}
	t->fd = fd;
	struct stat sb;
	if (fstat(t->fd, &sb) || !(S_ISREG(sb.st_mode) || (own && (S_ISFIFO(sb.st_mode) || S_ISCHR(sb.st_mode))))) {
		GW_ERR("%saccess log: %s is not a regular file%s", where, spec, own ? ", a pipe or a terminal" : "");
		close(t->fd);
		t->fd = -1;
		return -EINVAL;
	}
	t->kind = TGT_FILE;
	return 0;
}

/* ---- writing ---- */

static unsigned count_lines(const char *p, size_t n)
{
	unsigned k = 0;

	for (size_t i = 0; i < n; i++)
		k += p[i] == '\n';
	return k;
}

static void write_failed(unsigned lost, int err)
{
	al.write_errors += lost;
	if (!al.failing)
		GW_WARN("access log: cannot write %s: %s (%u line(s) lost; counted in "
		        "ibgw_access_log_write_errors_total until it works again)",
		        al.cur.path, strerror(err), lost);
	al.failing = true;
}

static void write_ok(unsigned lines)
{
	al.written += lines;
	if (al.failing)
		GW_NOTICE("access log: writing %s again", al.cur.path);
	al.failing = false;
}

static void flush_file(void)
{
	ssize_t n;

	if (al.partial) {
		do
			n = write(al.cur.fd, "\n", 1);
		while (n < 0 && errno == EINTR);
		if (n != 1) {
			write_failed(al.lines, n < 0 ? errno : EIO);
			return;
		}
		al.partial = false;
	}
	do
		n = write(al.cur.fd, al.buf, al.len);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)al.len) {
		write_ok(al.lines);
	} else if (n < 0) {
		write_failed(al.lines, errno);
	} else {
		/* cut short (a full disk): the whole lines count as written, the rest as lost */
		unsigned done = count_lines(al.buf, (size_t)n) + (al.buf[n] == '\n');
		al.partial = n > 0 && al.buf[n - 1] != '\n';
		al.written += done;
		if (done < al.lines)
			write_failed(al.lines - done, ENOSPC);
	}
}

static void flush(void)
{
	if (al.len && al.cur.kind == TGT_FILE)
		flush_file();
	al.len = 0;
	al.lines = 0;
}

/* One syslog datagram: "<PRI>Mmm dd hh:mm:ss ibgwd[PID]: LINE" (RFC 3164, as glibc's syslog()). */
static void send_syslog(const char *line, size_t n, const char *stamp)
{
	char msg[GW_ALOG_LINE_MAX + 64];
	int h;

	if (al.cur.fd < 0) {
		uint64_t now = gw_now_ns();
		if (now < al.syslog_retry_ns) {
			write_failed(1, ENOTCONN);
			return;
		}
		al.cur.fd = syslog_connect(sock_of(&al.cur));
		if (al.cur.fd < 0) {
			al.syslog_retry_ns = now + 1000000000ull;
			write_failed(1, -al.cur.fd);
			al.cur.fd = -1;
			return;
		}
	}
	h = snprintf(msg, sizeof(msg), "<%d>%s ibgwd[%d]: ", ALOG_SYSLOG_PRI, stamp, (int)getpid());
	memcpy(msg + h, line, n - 1); /* without the newline */
	if (send(al.cur.fd, msg, (size_t)h + n - 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		int e = errno;
		write_failed(1, e);
		if (e != EAGAIN && e != ENOBUFS) { /* the syslog daemon restarted: reconnect later */
			close(al.cur.fd);
			al.cur.fd = -1;
		}
		return;
	}
	write_ok(1);
}

void gw_alog_drain(struct gw_daemon *d)
{
	struct timespec rt, mt;
	uint64_t real, mono;
	char stamp[32] = "";

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	real = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	mono = (uint64_t)mt.tv_sec * 1000000000ull + (uint64_t)mt.tv_nsec;
	if (al.cur.kind == TGT_SYSLOG) {
		struct tm tm;
		localtime_r(&rt.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S", &tm);
	}
	for (unsigned i = 0; i < d->n_workers; i++) {
		struct gw_alog_ring *r = d->workers[i].alog;
		const struct gw_alog_rec *rec;

		if (!r)
			continue;
		/* bounded: a ring holds GW_ALOG_RING_SIZE records at most, and the worker adds no more
		 * than it can while we format */
		for (unsigned k = 0; k < GW_ALOG_RING_SIZE && (rec = gw_alog_peek(r)); k++) {
			if (al.cur.kind == TGT_OFF) {
				gw_alog_pop(r); /* turned off by a reload: what was under way goes */
				continue;
			}
			if (al.len + GW_ALOG_LINE_MAX > sizeof(al.buf))
				flush();
			size_t n = gw_alog_format(rec, real, mono, al.buf + al.len, GW_ALOG_LINE_MAX);
			gw_alog_pop(r);
			if (al.cur.kind == TGT_SYSLOG) {
				send_syslog(al.buf + al.len, n, stamp);
				continue;
			}
			al.len += n;
			al.lines++;
		}
	}
	flush();
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	gw_alog_drain(arg);
}

/* ---- life cycle ---- */

int gw_alog_init(struct gw_daemon *d)
{
	int ret;

	for (unsigned i = 0; i < d->n_workers; i++) {
		/* always there: a reload may turn the log on */
		d->workers[i].alog = aligned_alloc(64, sizeof(struct gw_alog_ring));
		if (!d->workers[i].alog)
			return -ENOMEM;
		memset(d->workers[i].alog, 0, sizeof(struct gw_alog_ring));
	}
	if ((ret = target_open(&al.cur, d->conf->gateway.access_log, d->conf)))
		return ret;
	al.timer = event_new(d->base, -1, EV_PERSIST, on_timer, d);
	if (!al.timer || event_add(al.timer, &(struct timeval){.tv_usec = ALOG_DRAIN_MS * 1000}))
		return -ENOMEM;
	if (al.cur.kind != TGT_OFF)
		GW_INFO("access log: %s", al.cur.path);
	return 0;
}

int gw_alog_check(const struct conf *c)
{
	const char *spec = c->gateway.access_log;
	struct target t;
	int ret;

	/* the daemon's own stdout or stderr are its, not this process's; syslog is retried, never
	 * fatal */
	if (own_fd_name(spec) || (!strncmp(spec, "syslog", 6) && (!spec[6] || spec[6] == ':')))
		return 0;
	ret = target_open(&t, spec, c);

	if (!ret)
		target_close(&t);
	return ret;
}

void gw_alog_fini(struct gw_daemon *d)
{
	gw_alog_drain(d); /* the workers stopped: what they left */
	if (al.timer)
		event_free(al.timer);
	al.timer = NULL;
	gw_alog_reload_abort(d);
	target_close(&al.cur);
	for (unsigned i = 0; i < d->n_workers; i++) {
		free(d->workers[i].alog);
		d->workers[i].alog = NULL;
	}
}

int gw_alog_reload_prepare(struct gw_daemon *d, const struct conf *c)
{
	(void)d;
	gw_alog_reload_abort(d);
	if (!strcmp(c->gateway.access_log, al.cur.path))
		return 0; /* unchanged: the open file goes on */
	al.next_set = true;
	return target_open(&al.next, c->gateway.access_log, c);
}

void gw_alog_reload_commit(struct gw_daemon *d)
{
	if (!al.next_set)
		return;
	gw_alog_drain(d); /* the lines of before the reload go where they were going */
	target_close(&al.cur);
	al.cur = al.next;
	al.next = (struct target){.fd = -1};
	al.next_set = false;
	al.partial = al.failing = false;
	GW_NOTICE("access log: %s", al.cur.kind == TGT_OFF ? "off" : al.cur.path);
}

void gw_alog_reload_abort(struct gw_daemon *d)
{
	(void)d;
	if (al.next_set)
		target_close(&al.next);
	al.next_set = false;
}

void gw_alog_reopen(struct gw_daemon *d)
{
	struct target t;

	if (al.cur.kind != TGT_FILE)
		return;
	gw_alog_drain(d); /* what was logged so far stays in the old file */
	if (target_open(&t, al.cur.path, NULL)) {
		GW_ERR("access log: SIGUSR1: keeping the old file");
		return;
	}
	target_close(&al.cur);
	al.cur = t;
	al.partial = al.failing = false;
	GW_INFO("access log: reopened %s", al.cur.path);
}

void gw_alog_metrics(struct gw_daemon *d, struct gw_metrics *m)
{
	uint64_t dropped = 0;

	for (unsigned i = 0; i < d->n_workers; i++)
		if (d->workers[i].alog)
			dropped += xlt_counter_read(&d->workers[i].alog->dropped);
	gw_metrics_family(m, "access_log_lines_total", XLT_COUNTER, "access log lines written");
	gw_metrics_sample(m, (double)al.written, NULL);
	gw_metrics_family(
	    m, "access_log_dropped_total", XLT_COUNTER,
	    "access log records dropped because a worker's ring was full (the control thread fell behind)");
	gw_metrics_sample(m, (double)dropped, NULL);
	gw_metrics_family(
	    m, "access_log_write_errors_total", XLT_COUNTER,
	    "access log lines lost to failed writes (a full disk, EIO, syslog unreachable or full)");
	gw_metrics_sample(m, (double)al.write_errors, NULL);
}
