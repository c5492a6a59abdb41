/* tcp_bulk: kernel-TCP peers for the end-to-end benchmark (tests/bench/bench_e2e.sh), the Ethernet-side
 * counterpart of rs_peer: they time themselves and print one line of key=value pairs.
 *
 *   tcp_bulk [-m WRITESIZE] [-t SECONDS] MODE ARGS
 *     serve DISCARD_PORT ECHO_PORT   listen on 0.0.0.0 on both ports until killed; discard: read to end
 *                                    of stream, then close (the sender sees the orderly end); echo: send
 *                                    everything back, half-close after the peer's end of stream
 *     send HOST PORT BYTES           connect, send BYTES, half-close, read until end of stream (expects
 *                                    nothing back); prints secs (connect included, as rs_peer does)
 *     latency HOST PORT SIZE ITERS   ping-pong SIZE bytes ITERS times against an echo; mean round trip
 *
 * One thread, poll(); TCP_NODELAY on every connection (small messages must not wait for Nagle). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 64
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
	fprintf(stderr, "tcp_bulk: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int connect_to(const char *host, const char *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
	struct timeval tv = {.tv_sec = timeout_s};
	int fd;

	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "tcp_bulk: bad address %s\n", host);
		exit(2);
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	nodelay(fd);
	/* a stuck path fails the run instead of hanging it */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("connect");
	return fd;
}

static int listen_on(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64))
		die("bind/listen");
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

static int run_serve(int dport, int eport)
{
	struct {
		int fd;
		bool echo, eof;
		size_t len, off;
		uint64_t bytes;
		double t0;
		char *buf;
	} c[MAX_CONNS];
	struct pollfd pf[2 + MAX_CONNS];
	int lfd[2] = {listen_on(dport), listen_on(eport)}, n = 0;

	signal(SIGPIPE, SIG_IGN);
	printf("listening discard=%d echo=%d\n", dport, eport);
	fflush(stdout);
	for (;;) {
		for (int i = 0; i < 2; i++)
			pf[i] = (struct pollfd){.fd = lfd[i], .events = POLLIN};
		for (int i = 0; i < n; i++)
			pf[2 + i] = (struct pollfd){.fd = c[i].fd,
						    .events = (short)(c[i].off < c[i].len ? POLLOUT : c[i].eof ? 0 : POLLIN)};
		if (poll(pf, (nfds_t)(2 + n), -1) < 0 && errno != EINTR)
			die("poll");
		for (int l = 0; l < 2; l++) {
			int fd;
			if (!(pf[l].revents & POLLIN) || n == MAX_CONNS)
				continue;
			fd = accept(lfd[l], NULL, NULL);
			if (fd < 0)
				continue;
			nodelay(fd);
			fcntl(fd, F_SETFL, O_NONBLOCK);
			memset(&c[n], 0, sizeof(c[n]));
			c[n].fd = fd;
			c[n].echo = l == 1;
			c[n].t0 = now_s();
			if (!(c[n].buf = malloc(BUFSZ)))
				die("malloc");
			n++;
		}
		for (int i = 0; i < n; i++) {
			bool closed = false;
			ssize_t k;
			if (c[i].off < c[i].len) {
				k = send(c[i].fd, c[i].buf + c[i].off, c[i].len - c[i].off, MSG_NOSIGNAL);
				if (k > 0)
					c[i].off += (size_t)k;
				else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
					closed = true;
			}
			while (!closed && c[i].off == c[i].len && !c[i].eof) {
				k = recv(c[i].fd, c[i].buf, BUFSZ, 0);
				if (k < 0) {
					if (errno != EAGAIN && errno != EWOULDBLOCK)
						closed = true;
					break;
				}
				if (k == 0) {
					c[i].eof = true;
					break;
				}
				c[i].bytes += (uint64_t)k;
				if (c[i].echo) {
					c[i].len = (size_t)k;
					c[i].off = 0;
					k = send(c[i].fd, c[i].buf, c[i].len, MSG_NOSIGNAL);
					if (k > 0)
						c[i].off = (size_t)k;
					else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
						closed = true;
				}
			}
			if (closed || (c[i].eof && c[i].off == c[i].len)) {
				double dt = now_s() - c[i].t0;
				printf("served %s bytes=%llu secs=%.3f%s\n", c[i].echo ? "echo" : "discard",
				       (unsigned long long)c[i].bytes, dt, closed ? " error" : "");
				fflush(stdout);
				close(c[i].fd);
				free(c[i].buf);
				c[i] = c[--n];
				i--;
			}
		}
	}
	return 0;
}

static int run_send(const char *host, const char *port, uint64_t total)
{
	char *buf = malloc(wsize), rbuf[4096];
	double t0 = now_s(), deadline = t0 + timeout_s;
	uint64_t sent = 0, recvd = 0;
	int fd;

	if (!buf)
		die("malloc");
	for (size_t i = 0; i < wsize; i++)
		buf[i] = (char)(i * 131 + 7);
	fd = connect_to(host, port);
	signal(SIGPIPE, SIG_IGN);
	while (sent < total) {
		size_t n = total - sent < wsize ? (size_t)(total - sent) : wsize;
		ssize_t k = send(fd, buf, n, MSG_NOSIGNAL);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			die("send");
		}
		sent += (uint64_t)k;
		if (now_s() > deadline) {
			fprintf(stderr, "tcp_bulk: timeout after %d s (sent %llu)\n", timeout_s, (unsigned long long)sent);
			return 3;
		}
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t k = recv(fd, rbuf, sizeof(rbuf), 0);
		if (k == 0)
			break;
		if (k < 0) {
			if (errno == EINTR)
				continue;
			die("recv (waiting for the end of stream)");
		}
		recvd += (uint64_t)k;
	}
	double secs = now_s() - t0;
	printf("%s send sent=%llu recv=%llu secs=%.3f mbit_s=%.1f\n", recvd ? "FAIL" : "ok", (unsigned long long)sent,
	       (unsigned long long)recvd, secs, secs > 0 ? (double)sent * 8 / secs / 1e6 : 0.0);
	close(fd);
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
		while (off < size) {
			ssize_t k = send(fd, out + off, size - off, MSG_NOSIGNAL);
			if (k < 0 && errno != EINTR)
				die("send");
			if (k > 0)
				off += (size_t)k;
		}
		off = 0;
		while (off < size) {
			ssize_t k = recv(fd, in + off, size - off, 0);
			if (k == 0) {
				fprintf(stderr, "tcp_bulk: end of stream in round %u\n", i);
				return 1;
			}
			if (k < 0 && errno != EINTR)
				die("recv");
			if (k > 0)
				off += (size_t)k;
		}
		if (memcmp(out, in, size)) {
			fprintf(stderr, "tcp_bulk: round %u: echo differs\n", i);
			return 1;
		}
	}
	printf("ok latency size=%zu iters=%u rtt_us=%.1f\n", size, iters, (now_s() - t0) * 1e6 / iters);
	close(fd);
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
	fprintf(stderr, "usage: tcp_bulk [-m WRITESIZE] [-t SECONDS] serve DISCARD_PORT ECHO_PORT |\n"
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
	if (!strcmp(argv[0], "serve") && argc == 3)
		return run_serve(atoi(argv[1]), atoi(argv[2]));
	if (!strcmp(argv[0], "send") && argc == 4)
		return run_send(argv[1], argv[2], size_arg(argv[3]));
	if (!strcmp(argv[0], "latency") && argc == 5)
		return run_latency(argv[1], argv[2], (size_t)size_arg(argv[3]), (unsigned)atoi(argv[4]));
	usage();
	return 2;
}
