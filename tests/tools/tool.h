/* tool.h: what the test tools in tests/tools share.
 *
 * The Makefile links every tests/tools/NAME.c alone into build/<variant>/tools/NAME, so a shared .c file
 * would become a tool of its own: the shared code is this header of static inline functions (a tool pays
 * nothing for the parts it does not use). A tool defines TOOL_NAME, the prefix of its messages, before
 * including it.
 *
 * The second half is the client side of the bulk benchmark peers, rs_bulk (rsocket) and tcp_bulk (kernel
 * TCP): one code for both, given the socket calls of its API in a struct tool_bulk. Their command line,
 * their output lines and their exit statuses are what tests/bench parses: keep them as they are. */
#ifndef TESTS_TOOLS_TOOL_H
#define TESTS_TOOLS_TOOL_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#ifndef TOOL_NAME
#error "define TOOL_NAME (the tool's name, the prefix of its messages) before including tool.h"
#endif

/* Seconds on the monotonic clock. */
static inline double tool_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Prints "TOOL_NAME: <what>: <strerror(errno)>" in one write and exits 2. */
__attribute__((format(printf, 1, 2), noreturn)) static inline void tool_die(const char *fmt, ...)
{
	int err = errno;
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	fprintf(stderr, TOOL_NAME ": %s: %s\n", what, strerror(err));
	exit(2);
}

/* A size on the command line: a number (C notation: decimal, 0x hex) with an optional K, M or G suffix
 * (binary multiples). Anything else dies: "12.6M" read as 12 would pace a sender to 12 bytes a second. */
static inline uint64_t tool_size_arg(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);
	unsigned shift = 0;

	switch (*end) {
	case 'K': case 'k': shift = 10, end++; break;
	case 'M': case 'm': shift = 20, end++; break;
	case 'G': case 'g': shift = 30, end++; break;
	}
	if (end == s || *end) {
		errno = EINVAL;
		tool_die("'%s' is no size (a whole number, optionally K, M or G)", s);
	}
	return v << shift;
}

/* "A.B.C.D:PORT" into *sa (IPv4 only, no name lookup); returns 0, or -1 when s is not of that form. */
static inline int tool_addr_parse(const char *s, struct sockaddr_in *sa)
{
	char host[64];
	const char *c = strrchr(s, ':');

	if (!c || (size_t)(c - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(c - s));
	host[c - s] = 0;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)atoi(c + 1));
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

/* ---- bulk clients: rs_bulk and tcp_bulk ----
 *
 *   TOOL [-m WRITESIZE] [-t SECONDS] [-r RATE] MODE ARGS
 *     serve ...                      the tool's own (b->serve)
 *     send HOST PORT BYTES           send BYTES, half-close, read until end of stream (expects nothing
 *                                    back); prints secs (connect included, like rs_peer); with -r,
 *                                    at most RATE bytes a second (K, M, G suffixes): each write
 *                                    waits until the bytes before it are due, so a path's CPU can
 *                                    be measured at a rate the sender chooses (tests/bench/bench_cpu.sh)
 *     latency HOST PORT SIZE ITERS   ping-pong SIZE bytes ITERS times against an echo; mean round trip
 *
 * A stuck client fails the run instead of hanging it after SECONDS: by alarm() where the socket API has
 * no timeouts (rsocket), else by the timeouts b->connect sets on its socket and a deadline in the send
 * loop. */

struct tool_bulk {
	/* the socket API: send, recv, shutdown and close, with the names its messages give them */
	ssize_t (*send)(int fd, const void *buf, size_t len, int flags);
	ssize_t (*recv)(int fd, void *buf, size_t len, int flags);
	int (*shutdown)(int fd, int how);
	int (*close)(int fd);
	const char *send_name, *recv_name;
	int send_flags;	 /* of every send (MSG_NOSIGNAL on kernel sockets) */
	bool alarm;	 /* clients time out by alarm() (else: by connect's socket timeouts) */
	/* a connected socket to HOST:PORT (timeout_s: -t); dies when it cannot */
	int (*connect)(const char *host, const char *port, int timeout_s);
	/* mode serve, argv[0] being "serve": runs the server; returns the exit status, or -1 when the
	 * arguments are wrong (usage) */
	int (*serve)(int argc, char **argv);
	const char *serve_args; /* its arguments in the usage line */
};

/* Sends all of p[0..n) on fd (retrying on EINTR); dies on an error. */
static inline void tool_send_all(const struct tool_bulk *b, int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = b->send(fd, p, n, b->send_flags);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			tool_die("%s", b->send_name);
		}
		p += k, n -= (size_t)k;
	}
}

static inline int tool_bulk_send(const struct tool_bulk *b, const char *host, const char *port, uint64_t total,
				 size_t wsize, uint64_t rate, int timeout_s)
{
	char *buf = malloc(wsize), rbuf[4096];
	double t0 = tool_now_s(), deadline = t0 + timeout_s, secs;
	uint64_t sent = 0, recvd = 0;
	int fd;

	if (!buf)
		tool_die("malloc");
	for (size_t i = 0; i < wsize; i++)
		buf[i] = (char)(i * 131 + 7);
	fd = b->connect(host, port, timeout_s);
	signal(SIGPIPE, SIG_IGN);
	while (sent < total) {
		size_t n = total - sent < wsize ? (size_t)(total - sent) : wsize;
		ssize_t k;

		if (rate) {
			double wait = t0 + (double)sent / (double)rate - tool_now_s();
			if (wait > 0)
				nanosleep(&(struct timespec){.tv_sec = (time_t)wait,
							     .tv_nsec = (long)((wait - (double)(time_t)wait) * 1e9)},
					  NULL);
		}
		k = b->send(fd, buf, n, b->send_flags);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			tool_die("%s", b->send_name);
		}
		sent += (uint64_t)k;
		if (!b->alarm && tool_now_s() > deadline) {
			fprintf(stderr, TOOL_NAME ": timeout after %d s (sent %llu)\n", timeout_s,
				(unsigned long long)sent);
			return 3;
		}
	}
	b->shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t k = b->recv(fd, rbuf, sizeof(rbuf), 0);
		if (k == 0)
			break;
		if (k < 0) {
			if (errno == EINTR)
				continue;
			tool_die("%s (waiting for the end of stream)", b->recv_name);
		}
		recvd += (uint64_t)k;
	}
	secs = tool_now_s() - t0;
	printf("%s send sent=%llu recv=%llu secs=%.3f mbit_s=%.1f\n", recvd ? "FAIL" : "ok", (unsigned long long)sent,
	       (unsigned long long)recvd, secs, secs > 0 ? (double)sent * 8 / secs / 1e6 : 0.0);
	b->close(fd);
	free(buf);
	return recvd ? 1 : 0;
}

static inline int tool_bulk_latency(const struct tool_bulk *b, const char *host, const char *port, size_t size,
				    unsigned iters, int timeout_s)
{
	char *out = malloc(size), *in = malloc(size);
	double t0 = 0;
	int fd;

	if (!out || !in)
		tool_die("malloc");
	memset(out, 0x5a, size);
	fd = b->connect(host, port, timeout_s);
	for (unsigned i = 0; i <= iters; i++) {
		size_t off = 0;
		if (i == 1)
			t0 = tool_now_s(); /* the first round trip warms up every hop */
		tool_send_all(b, fd, out, size);
		while (off < size) {
			ssize_t k = b->recv(fd, in + off, size - off, 0);
			if (k == 0) {
				fprintf(stderr, TOOL_NAME ": end of stream in round %u\n", i);
				return 1;
			}
			if (k < 0 && errno != EINTR)
				tool_die("%s", b->recv_name);
			if (k > 0)
				off += (size_t)k;
		}
		if (memcmp(out, in, size)) {
			fprintf(stderr, TOOL_NAME ": round %u: echo differs\n", i);
			return 1;
		}
	}
	printf("ok latency size=%zu iters=%u rtt_us=%.1f\n", size, iters, (tool_now_s() - t0) * 1e6 / iters);
	b->shutdown(fd, SHUT_RDWR);
	b->close(fd);
	free(out);
	free(in);
	return 0;
}

__attribute__((noreturn)) static inline void tool_bulk_usage(const struct tool_bulk *b)
{
	fprintf(stderr,
		"usage: " TOOL_NAME " [-m WRITESIZE] [-t SECONDS] [-r RATE] serve %s |\n"
		"       send HOST PORT BYTES | latency HOST PORT SIZE ITERS\n",
		b->serve_args);
	exit(2);
}

/* The whole command line of a bulk tool: its main() returns this. */
static inline int tool_bulk_main(const struct tool_bulk *b, int argc, char **argv)
{
	size_t wsize = 65536;
	uint64_t rate = 0;
	int o, timeout_s = 120;

	while ((o = getopt(argc, argv, "m:t:r:")) != -1) {
		switch (o) {
		case 'm': wsize = (size_t)tool_size_arg(optarg); break;
		case 'r': rate = tool_size_arg(optarg); break;
		case 't': timeout_s = atoi(optarg); break;
		default: tool_bulk_usage(b);
		}
	}
	argc -= optind, argv += optind;
	if (!wsize || argc < 1)
		tool_bulk_usage(b);
	if (!strcmp(argv[0], "serve")) {
		int rc = b->serve(argc, argv);
		if (rc < 0)
			tool_bulk_usage(b);
		return rc;
	}
	if (b->alarm)
		alarm((unsigned)timeout_s);
	if (!strcmp(argv[0], "send") && argc == 4)
		return tool_bulk_send(b, argv[1], argv[2], tool_size_arg(argv[3]), wsize, rate, timeout_s);
	if (!strcmp(argv[0], "latency") && argc == 5)
		return tool_bulk_latency(b, argv[1], argv[2], (size_t)tool_size_arg(argv[3]), (unsigned)atoi(argv[4]),
					 timeout_s);
	tool_bulk_usage(b);
}

#endif
