/* rs_bulk: lean rsocket peers for the end-to-end benchmark (tests/bench/bench_e2e.sh), the IB-side
 * counterpart of tcp_bulk. Unlike rs_peer (which generates pseudo-random data and hashes both
 * directions: under TCG that costs more CPU than the transfer itself and caps a sender at a few MB/s),
 * these move a constant buffer and only count, so a path is measured, not the peer.
 *
 *   rs_bulk [-m WRITESIZE] [-t SECONDS] MODE ARGS
 *     serve HOST PORT discard|echo   listen on HOST:PORT, serve connections one after another until
 *                                    killed; discard reads to end of stream and closes; echo sends
 *                                    everything back and half-closes after the peer's end of stream
 *     send HOST PORT BYTES           send BYTES, half-close, read until end of stream; prints secs
 *                                    (connect included, like tcp_bulk and rs_peer)
 *     latency HOST PORT SIZE ITERS   ping-pong SIZE bytes ITERS times against an echo; mean round trip
 *
 * Blocking rsocket calls only (rsend/rrecv/raccept), never rpoll: rdma-core 44's rpoll misses the
 * wake-up of a listening rsocket (it then sleeps for its wake_up_interval, 5 s by default) and leaks
 * its poll count when a timeout expires. Blocking calls spin for rsocket's polling_time, then sleep
 * on the completion channel, the normal rsocket way. -t arms alarm(): a stuck client dies. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#define BUFSZ (256 * 1024)

static size_t wsize = 65536;
static int timeout_s = 120;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "rs_bulk: %s: %s\n", what, strerror(errno));
	exit(2);
}

static struct addrinfo *resolve(const char *host, const char *port, bool passive)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = passive ? AI_PASSIVE : 0};
	struct addrinfo *ai;
	int err = getaddrinfo(host, port, &hints, &ai);

	if (err) {
		fprintf(stderr, "rs_bulk: %s:%s: %s\n", host, port, gai_strerror(err));
		exit(2);
	}
	return ai;
}

static void nodelay(int fd)
{
	int one = 1;

	rsetsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int connect_to(const char *host, const char *port)
{
	struct addrinfo *ai = resolve(host, port, false);
	int fd = rsocket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		die("rsocket");
	nodelay(fd);
	if (rconnect(fd, ai->ai_addr, ai->ai_addrlen))
		die("rconnect");
	freeaddrinfo(ai);
	return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = rsend(fd, p, n, 0);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			die("rsend");
		}
		p += k, n -= (size_t)k;
	}
}

static int run_serve(const char *host, const char *port, bool echo)
{
	struct addrinfo *ai = resolve(host, port, true);
	char *buf = malloc(BUFSZ);
	int lfd = rsocket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (lfd < 0 || !buf)
		die("rsocket");
	rsetsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (rbind(lfd, ai->ai_addr, ai->ai_addrlen) || rlisten(lfd, 16))
		die("rbind/rlisten");
	freeaddrinfo(ai);
	printf("listening %s:%s %s\n", host, port, echo ? "echo" : "discard");
	fflush(stdout);
	for (;;) {
		uint64_t bytes = 0;
		double t0;
		int fd = raccept(lfd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR)
				continue;
			die("raccept");
		}
		nodelay(fd);
		t0 = now_s();
		for (;;) {
			ssize_t k = rrecv(fd, buf, BUFSZ, 0);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			bytes += (uint64_t)k;
			if (echo)
				send_all(fd, buf, (size_t)k);
		}
		rshutdown(fd, SHUT_WR);
		rclose(fd);
		printf("served %s bytes=%llu secs=%.3f\n", echo ? "echo" : "discard", (unsigned long long)bytes,
		       now_s() - t0);
		fflush(stdout);
	}
	return 0;
}

static int run_send(const char *host, const char *port, uint64_t total)
{
	char *buf = malloc(wsize > BUFSZ ? wsize : BUFSZ);
	uint64_t sent = 0, recvd = 0;
	double t0 = now_s(), secs;
	int fd;

	if (!buf)
		die("malloc");
	for (size_t i = 0; i < wsize; i++)
		buf[i] = (char)(i * 131 + 7);
	fd = connect_to(host, port);
	while (sent < total) {
		size_t n = total - sent < wsize ? (size_t)(total - sent) : wsize;
		send_all(fd, buf, n);
		sent += n;
	}
	rshutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t k = rrecv(fd, buf, BUFSZ, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			die("rrecv (waiting for the end of stream)");
		if (k == 0)
			break;
		recvd += (uint64_t)k;
	}
	secs = now_s() - t0;
	printf("%s send sent=%llu recv=%llu secs=%.3f mbit_s=%.1f\n", recvd ? "FAIL" : "ok", (unsigned long long)sent,
	       (unsigned long long)recvd, secs, secs > 0 ? (double)sent * 8 / secs / 1e6 : 0.0);
	rclose(fd);
	return recvd ? 1 : 0;
}

static int run_latency(const char *host, const char *port, size_t size, unsigned iters)
{
	char *out = malloc(size), *in = malloc(size);
	double t0 = 0;
	int fd;

	if (!out || !in)
		die("malloc");
	memset(out, 0x5a, size);
	fd = connect_to(host, port);
	for (unsigned i = 0; i <= iters; i++) {
		size_t off = 0;
		if (i == 1)
			t0 = now_s(); /* the first round trip warms up every hop */
		send_all(fd, out, size);
		while (off < size) {
			ssize_t k = rrecv(fd, in + off, size - off, 0);
			if (k == 0) {
				fprintf(stderr, "rs_bulk: end of stream in round %u\n", i);
				return 1;
			}
			if (k < 0 && errno != EINTR)
				die("rrecv");
			if (k > 0)
				off += (size_t)k;
		}
		if (memcmp(out, in, size)) {
			fprintf(stderr, "rs_bulk: round %u: echo differs\n", i);
			return 1;
		}
	}
	printf("ok latency size=%zu iters=%u rtt_us=%.1f\n", size, iters, (now_s() - t0) * 1e6 / iters);
	rshutdown(fd, SHUT_RDWR);
	rclose(fd);
	return 0;
}

static uint64_t size_arg(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'K': case 'k': return v << 10;
	case 'M': case 'm': return v << 20;
	case 'G': case 'g': return v << 30;
	default: return v;
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: rs_bulk [-m WRITESIZE] [-t SECONDS] serve HOST PORT discard|echo |\n"
			"       send HOST PORT BYTES | latency HOST PORT SIZE ITERS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int o;

	while ((o = getopt(argc, argv, "m:t:")) != -1) {
		switch (o) {
		case 'm': wsize = (size_t)size_arg(optarg); break;
		case 't': timeout_s = atoi(optarg); break;
		default: usage();
		}
	}
	argc -= optind, argv += optind;
	if (!wsize || argc < 1)
		usage();
	if (!strcmp(argv[0], "serve") && argc == 4 && (!strcmp(argv[3], "echo") || !strcmp(argv[3], "discard")))
		return run_serve(argv[1], argv[2], !strcmp(argv[3], "echo"));
	if (strcmp(argv[0], "serve"))
		alarm((unsigned)timeout_s); /* clients: a stuck path fails the run instead of hanging it */
	if (!strcmp(argv[0], "send") && argc == 4)
		return run_send(argv[1], argv[2], size_arg(argv[3]));
	if (!strcmp(argv[0], "latency") && argc == 5)
		return run_latency(argv[1], argv[2], (size_t)size_arg(argv[3]), (unsigned)atoi(argv[4]));
	usage();
	return 2;
}
