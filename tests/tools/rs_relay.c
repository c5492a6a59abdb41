/* rs_relay: the IB<->TCP relay a user could build today from stock parts, as the benchmark baseline.
 *
 * One thread, rpoll() over rsockets and kernel sockets together (testbed.md: the pattern that works
 * with librdmacm's rsocket), non-blocking, one bounded buffer per direction per session, the classic
 * read-then-write pump. It is deliberately a fair, competent relay: the gateway must beat it.
 *
 *   rs_relay out IB_ADDR:PORT TCP_HOST:PORT   rsocket listener -> kernel TCP connect (cluster -> world)
 *   rs_relay in  TCP_ADDR:PORT IB_HOST:PORT   kernel TCP listener -> rsocket connect (world -> cluster)
 *
 * Runs until SIGTERM/SIGINT. BUF bytes per direction (default 128 KiB, env RS_RELAY_BUF).
 *
 * rpoll() is never given a timeout: rdma-core 44's rpoll leaks its poll count when a timeout expires
 * and then spins on every later call (fixed upstream by "librdmacm: Fix rpoll in case of timeout"), which
 * would turn the baseline into a CPU-eating busy poller after its first idle 200 ms. A self-pipe written by
 * the signal handler is in the poll set instead. Every kernel socket gets TCP_NODELAY (small messages
 * must not wait for Nagle); rsockets keep librdmacm's defaults (128 KiB buffers, like ibgwd's). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#define TOOL_NAME "rs_relay"
#include "tool.h"

#define MAX_SESSIONS 256

struct end {
	int fd;
	bool rs; /* an rsocket */
	bool eof, shut;
};

struct dir {
	char *buf;
	size_t len, off;
};

struct sess {
	bool used;
	struct end e[2]; /* 0 = accepted side, 1 = connected side */
	struct dir d[2]; /* d[i]: bytes read from e[i], to be written to e[!i] */
};

static volatile sig_atomic_t stop;
static size_t bufsz = 128 * 1024;
static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
	if (write(sig_pipe[1], "x", 1) < 0) {
		/* full: a wake-up is pending anyway */
	}
}

static ssize_t e_read(struct end *e, void *b, size_t n)
{
	return e->rs ? rrecv(e->fd, b, n, 0) : recv(e->fd, b, n, 0);
}

static ssize_t e_write(struct end *e, const void *b, size_t n)
{
	return e->rs ? rsend(e->fd, b, n, 0) : send(e->fd, b, n, MSG_NOSIGNAL);
}

static void e_close(struct end *e)
{
	if (e->fd < 0)
		return;
	if (e->rs)
		rclose(e->fd);
	else
		close(e->fd);
	e->fd = -1;
}

static void e_shutdown(struct end *e)
{
	if (e->rs)
		rshutdown(e->fd, SHUT_WR);
	else
		shutdown(e->fd, SHUT_WR);
	e->shut = true;
}

static int e_nonblock(struct end *e)
{
	if (e->rs)
		return rfcntl(e->fd, F_SETFL, O_NONBLOCK);
	return fcntl(e->fd, F_SETFL, O_NONBLOCK);
}

static int open_far(bool rs, const struct sockaddr_in *to)
{
	int fd = rs ? rsocket(AF_INET, SOCK_STREAM, 0) : socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;

	if (fd < 0)
		return -1;
	if (!rs)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* blocking connect, then non-blocking (rdma-core 44's non-blocking rconnect uses a fragile thread) */
	if ((rs ? rconnect(fd, (const struct sockaddr *)to, sizeof(*to))
		: connect(fd, (const struct sockaddr *)to, sizeof(*to))) < 0) {
		rs ? rclose(fd) : close(fd);
		return -1;
	}
	return fd;
}

static void sess_free(struct sess *s)
{
	for (int i = 0; i < 2; i++) {
		e_close(&s->e[i]);
		free(s->d[i].buf);
		s->d[i].buf = NULL;
	}
	s->used = false;
}

/* Moves what it can in direction i; returns -1 when the session must end. */
static int pump(struct sess *s, int i)
{
	struct dir *d = &s->d[i];
	struct end *from = &s->e[i], *to = &s->e[!i];
	ssize_t n;

	for (;;) {
		if (d->off < d->len) {
			n = e_write(to, d->buf + d->off, d->len - d->off);
			if (n < 0)
				return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
			d->off += (size_t)n;
			if (d->off < d->len)
				return 0;
			d->off = d->len = 0;
		}
		if (from->eof) {
			if (!to->shut)
				e_shutdown(to);
			return 0;
		}
		n = e_read(from, d->buf, bufsz);
		if (n == 0) {
			from->eof = true;
			continue;
		}
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		d->len = (size_t)n;
	}
}

int main(int argc, char **argv)
{
	static struct sess sess[MAX_SESSIONS];
	struct sockaddr_in lsa, far;
	struct pollfd pfd[2 + 2 * MAX_SESSIONS];
	int map[2 + 2 * MAX_SESSIONS];
	struct sigaction sa = {.sa_handler = on_signal};
	bool out;
	int lfd, reuse = 1, one = 1;

	if (argc != 4 || (strcmp(argv[1], "out") && strcmp(argv[1], "in")) || tool_addr_parse(argv[2], &lsa) ||
	    tool_addr_parse(argv[3], &far)) {
		fprintf(stderr, "usage: rs_relay out IB_ADDR:PORT TCP_HOST:PORT | in TCP_ADDR:PORT IB_HOST:PORT\n");
		return 2;
	}
	if (getenv("RS_RELAY_BUF"))
		bufsz = strtoul(getenv("RS_RELAY_BUF"), NULL, 0);
	out = !strcmp(argv[1], "out");
	if (pipe2(sig_pipe, O_NONBLOCK | O_CLOEXEC))
		return perror("pipe2"), 1;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	lfd = out ? rsocket(AF_INET, SOCK_STREAM, 0) : socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		return perror("socket"), 1;
	if (out) {
		rsetsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse));
		if (rbind(lfd, (struct sockaddr *)&lsa, sizeof(lsa)) || rlisten(lfd, 64))
			return perror("rbind/rlisten"), 1;
	} else {
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse));
		if (bind(lfd, (struct sockaddr *)&lsa, sizeof(lsa)) || listen(lfd, 64))
			return perror("bind/listen"), 1;
	}
	fprintf(stderr, "rs_relay: %s %s -> %s ready\n", argv[1], argv[2], argv[3]);
	while (!stop) {
		int n = 0;

		pfd[n] = (struct pollfd){.fd = lfd, .events = POLLIN};
		map[n++] = -1;
		pfd[n] = (struct pollfd){.fd = sig_pipe[0], .events = POLLIN};
		map[n++] = -1;
		for (int k = 0; k < MAX_SESSIONS; k++) {
			struct sess *s = &sess[k];
			if (!s->used)
				continue;
			for (int i = 0; i < 2; i++) {
				short ev = 0;
				if (!s->e[i].eof && s->d[i].len == 0)
					ev |= POLLIN;
				if (s->d[!i].off < s->d[!i].len)
					ev |= POLLOUT;
				pfd[n] = (struct pollfd){.fd = s->e[i].fd, .events = ev};
				map[n++] = k * 2 + i;
			}
		}
		if (rpoll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("rpoll");
			return 1;
		}
		if (pfd[0].revents & POLLIN) {
			int fd = out ? raccept(lfd, NULL, NULL) : accept(lfd, NULL, NULL);
			int k;
			for (k = 0; k < MAX_SESSIONS && sess[k].used; k++)
				;
			if (fd >= 0 && k < MAX_SESSIONS) {
				struct sess *s = &sess[k];
				if (!out)
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				int ffd = open_far(out ? false : true, &far);
				if (ffd < 0) {
					out ? rclose(fd) : close(fd);
				} else {
					memset(s, 0, sizeof(*s));
					s->used = true;
					s->e[0] = (struct end){.fd = fd, .rs = out};
					s->e[1] = (struct end){.fd = ffd, .rs = !out};
					s->d[0].buf = malloc(bufsz);
					s->d[1].buf = malloc(bufsz);
					if (!s->d[0].buf || !s->d[1].buf || e_nonblock(&s->e[0]) || e_nonblock(&s->e[1]))
						sess_free(s);
				}
			} else if (fd >= 0) {
				out ? rclose(fd) : close(fd);
			}
		}
		for (int p = 2; p < n; p++) {
			struct sess *s = &sess[map[p] / 2];
			if (!s->used || !pfd[p].revents)
				continue;
			if (pump(s, 0) < 0 || pump(s, 1) < 0 ||
			    (s->e[0].eof && s->e[1].eof && s->d[0].len == 0 && s->d[1].len == 0))
				sess_free(s);
		}
	}
	for (int k = 0; k < MAX_SESSIONS; k++)
		if (sess[k].used)
			sess_free(&sess[k]);
	out ? rclose(lfd) : close(lfd);
	return 0;
}
