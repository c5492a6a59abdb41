/* rs_peer: a test peer on the stock rsocket API (rsocket.h), for the gateway's IB side.
 *
 *   rs_peer [-p PORT] [-t SECONDS] [-B BUFSIZE] [-m WRITESIZE] HOST MODE [ARGS]
 *     echo BYTES            send BYTES of pseudo-random data while reading the echo back; half-close
 *                           after the last byte; expect exactly the same bytes, then end of stream
 *     send BYTES            send BYTES, half-close, read until end of stream (expects nothing back:
 *                           a discard route answers the half-close with its own)
 *     recv                  send nothing (half-close at once), read until end of stream: whatever comes
 *                           is hashed (recv=, sha_recv=: the caller checks them against the sender's)
 *     conns N BYTES         N concurrent echo connections of BYTES each, on one rpoll loop
 *     stall BYTES SECONDS [N]  echo, but read nothing for the first SECONDS: prints how much the gateway
 *                           let us send meanwhile (it must stop at its buffers), then reads all back
 *                           (SIGUSR1 ends the stall early; so does the peer ending the stream, for that
 *                           connection: a stalled reader still notices a hangup at once);
 *                           N connections at once (default 1): also a way to hold N connections open
 *     idle N SECONDS        N connections, silent for SECONDS once all are up or until SIGUSR1 (fails
 *                           if the gateway closes one meanwhile), then each half-closes and expects
 *                           end of stream
 *     latency SIZE ITERS    ping-pong SIZE bytes ITERS times against an echo; mean round trip
 *     serve [echo|discard] [spin]  listen on HOST:PORT (rsocket itself), serve connections until
 *                           killed; spin: busy-poll (rpoll without waiting), rsocket's fastest mode
 *
 * One thread, non-blocking rsockets, everything driven by rpoll (rsocket is not safe with two threads
 * on one socket, see testbed.md). rpoll is never given a timeout: rdma-core 44's rpoll leaks its poll
 * count when a timeout expires (fixed upstream by "librdmacm: Fix rpoll in case of timeout") and then
 * spins forever after the next rdma_cm event; a timerfd in the poll set wakes us up instead. Connects
 * are blocking (then the socket turns non-blocking): rdma-core 44 hands a non-blocking connect to a
 * service thread that crashes once a process has more than 4 of them (fixed upstream by "rsockets:
 * Fix for cm_svc_run thread"). For the same reason `serve` should not hold more than 4 connections. Data is a deterministic pseudo-random stream; both directions are
 * hashed with SHA-256 (self-contained below: no library dependency). Results are one line of
 * key=value pairs on stdout; exit 0 when the check passed. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/timerfd.h>

#include <rdma/rsocket.h>

#define TOOL_NAME "rs_peer"
#include "tool.h"

/* ---- SHA-256 (FIPS 180-4) ---- */

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	unsigned n;
};

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d, s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

static void sha_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->n = 0;
}

static void sha_add(struct sha256 *s, const uint8_t *p, size_t len)
{
	s->len += len;
	while (len) {
		if (!s->n && len >= 64) {
			sha_block(s, p);
			p += 64, len -= 64;
			continue;
		}
		size_t k = 64 - s->n < len ? 64 - s->n : len;
		memcpy(s->buf + s->n, p, k);
		s->n += (unsigned)k, p += k, len -= k;
		if (s->n == 64) {
			sha_block(s, s->buf);
			s->n = 0;
		}
	}
}

static void sha_hex(struct sha256 *s, char out[65])
{
	uint64_t bits = s->len * 8;
	uint8_t pad = 0x80, z = 0, l[8];

	sha_add(s, &pad, 1);
	while (s->n != 56)
		sha_add(s, &z, 1);
	for (int i = 0; i < 8; i++)
		l[i] = (uint8_t)(bits >> (56 - 8 * i));
	sha_add(s, l, 8);
	for (int i = 0; i < 8; i++)
		snprintf(out + 8 * i, 9, "%08x", s->h[i]);
}

/* ---- helpers ---- */

static const char *host, *port = "7471";
static int timeout_s = 120, bufsize;
static size_t wsize = 65536; /* bytes per rsend call (-m) */

/* A timerfd ticking every 100 ms: the wake-up of every rpoll (see the header). */
static int tick_fd(void)
{
	struct itimerspec it = {.it_interval = {.tv_nsec = 100000000}, .it_value = {.tv_nsec = 100000000}};
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);

	if (fd < 0 || timerfd_settime(fd, 0, &it, NULL))
		tool_die("timerfd");
	return fd;
}

static void tick_drain(int fd)
{
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: it did not fire */
	}
}

/* Deterministic data: xorshift64 per connection, so both ends can recompute it. */
struct gen {
	uint64_t x;
};

static void gen_fill(struct gen *g, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		g->x ^= g->x << 13;
		g->x ^= g->x >> 7;
		g->x ^= g->x << 17;
		p[i] = (uint8_t)g->x;
	}
}

static void set_opts(int fd)
{
	int one = 1;

	if (bufsize) {
		rsetsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
		rsetsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
	}
	rsetsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int connect_to(void)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	int fd, err;

	if ((err = getaddrinfo(host, port, &hints, &ai))) {
		fprintf(stderr, "rs_peer: %s: %s\n", host, gai_strerror(err));
		exit(2);
	}
	fd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		tool_die("rsocket");
	set_opts(fd);
	if (rconnect(fd, ai->ai_addr, ai->ai_addrlen))
		tool_die("rconnect");
	if (rfcntl(fd, F_SETFL, O_NONBLOCK))
		tool_die("rfcntl");
	freeaddrinfo(ai);
	return fd;
}

/* ---- one echo/send connection as a state machine ---- */

enum { BUF = 65536 };

struct conn {
	int fd;
	bool connected, wr_done, rd_done, shut;
	uint64_t total, sent, recvd;
	struct gen g;
	struct sha256 s_sent, s_recv;
	uint8_t out[BUF];
	size_t out_len, out_off;
	enum expect { EXPECT_NOTHING, EXPECT_ECHO, EXPECT_ANY } expect; /* back from the peer */
	bool reading;
	double stalled_until;
};

static void conn_init(struct conn *c, uint64_t bytes, uint64_t seed, enum expect expect)
{
	memset(c, 0, sizeof(*c));
	c->fd = connect_to();
	c->connected = true;
	c->total = bytes;
	c->g.x = 0x9E3779B97F4A7C15ull ^ seed;
	c->expect = expect;
	c->reading = true;
	sha_init(&c->s_sent);
	sha_init(&c->s_recv);
}

static short conn_events(const struct conn *c)
{
	short ev = 0;

	if (!c->connected)
		return POLLOUT;
	if (!c->wr_done)
		ev |= POLLOUT;
	if (!c->rd_done && c->reading)
		ev |= POLLIN;
	return ev;
}

/* Returns -1 on a failure (message printed), 0 otherwise. */
static int conn_step(struct conn *c, short rev)
{
	uint8_t in[BUF];
	ssize_t n;

	if (!c->connected) {
		int err = 0;
		socklen_t len = sizeof(err);
		if (!(rev & (POLLOUT | POLLERR | POLLHUP)))
			return 0;
		rgetsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err) {
			errno = err;
			fprintf(stderr, "rs_peer: connect: %s\n", strerror(err));
			return -1;
		}
		c->connected = true;
	}
	while (!c->wr_done) {
		if (c->out_off == c->out_len) {
			uint64_t left = c->total - c->sent;
			if (!left) {
				if (rshutdown(c->fd, SHUT_WR) && errno != ENOTCONN) {
					perror("rs_peer: rshutdown");
					return -1;
				}
				c->wr_done = c->shut = true;
				break;
			}
			c->out_len = left < wsize ? (size_t)left : wsize;
			c->out_off = 0;
			gen_fill(&c->g, c->out, c->out_len);
			sha_add(&c->s_sent, c->out, c->out_len);
		}
		n = rsend(c->fd, c->out + c->out_off, c->out_len - c->out_off, 0);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			perror("rs_peer: rsend");
			return -1;
		}
		c->out_off += (size_t)n;
		c->sent += (uint64_t)n;
	}
	while (!c->rd_done && c->reading) {
		n = rrecv(c->fd, in, sizeof(in), 0);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			perror("rs_peer: rrecv");
			return -1;
		}
		if (n == 0) {
			c->rd_done = true;
			break;
		}
		sha_add(&c->s_recv, in, (size_t)n);
		c->recvd += (uint64_t)n;
	}
	return 0;
}

static bool conn_done(const struct conn *c)
{
	return c->wr_done && c->rd_done;
}

/* Prints the verdict of C; returns 0 when it passed. */
static int conn_check(struct conn *c, const char *tag, double secs)
{
	char hs[65], hr[65];
	bool ok;

	sha_hex(&c->s_sent, hs);
	sha_hex(&c->s_recv, hr);
	switch (c->expect) {
	case EXPECT_ECHO: ok = c->recvd == c->sent && !strcmp(hs, hr); break;
	case EXPECT_NOTHING: ok = c->recvd == 0; break;
	default: ok = true; /* (the caller checks what came: recv and sha_recv) */
	}
	ok = ok && c->sent == c->total;
	printf("%s %s sent=%llu recv=%llu sha_sent=%s sha_recv=%s secs=%.3f mbit_s=%.1f\n", ok ? "ok" : "FAIL", tag,
	       (unsigned long long)c->sent, (unsigned long long)c->recvd, hs, hr, secs,
	       secs > 0 ? (double)(c->sent + c->recvd) * 8 / secs / 1e6 : 0.0);
	return ok ? 0 : 1;
}

static volatile sig_atomic_t stall_over; /* SIGUSR1: end the stall now */

static void on_usr1(int sig)
{
	(void)sig;
	stall_over = 1;
}

static int run_conns(unsigned n, uint64_t bytes, enum expect expect, double stall_s)
{
	struct conn *cs = calloc(n, sizeof(*cs));
	struct pollfd *pf = calloc(n + 1, sizeof(*pf));
	int tfd = tick_fd();
	double t0 = tool_now_s(), deadline = t0 + timeout_s;
	unsigned done = 0;
	int bad = 0;
	bool stall_reported = stall_s <= 0;

	if (!cs || !pf)
		tool_die("calloc");
	for (unsigned i = 0; i < n; i++) {
		conn_init(&cs[i], bytes, i + 1, expect);
		if (stall_s > 0) {
			cs[i].reading = false;
			cs[i].stalled_until = t0 + stall_s;
		}
	}
	while (done < n) {
		int ret;
		double now = tool_now_s();
		if (now > deadline) {
			fprintf(stderr, "rs_peer: timeout after %d s (%u of %u done)\n", timeout_s, done, n);
			for (unsigned i = 0; i < n; i++)
				if (!conn_done(&cs[i]))
					fprintf(stderr, "  conn %u: sent %llu recv %llu wr_done %d rd_done %d\n", i,
						(unsigned long long)cs[i].sent, (unsigned long long)cs[i].recvd,
						cs[i].wr_done, cs[i].rd_done);
			return 3;
		}
		if (!stall_reported && (now >= t0 + stall_s || stall_over)) {
			uint64_t s = 0, r = 0;
			for (unsigned i = 0; i < n; i++) {
				s += cs[i].sent, r += cs[i].recvd;
				cs[i].reading = true;
			}
			printf("stalled secs=%.1f sent_while_stalled=%llu recv=%llu\n", now - t0, (unsigned long long)s,
			       (unsigned long long)r);
			fflush(stdout);
			stall_reported = true;
		}
		for (unsigned i = 0; i < n; i++) {
			pf[i].fd = cs[i].fd;
			pf[i].events = conn_done(&cs[i]) ? 0 : conn_events(&cs[i]);
			pf[i].revents = 0;
		}
		pf[n] = (struct pollfd){.fd = tfd, .events = POLLIN};
		ret = rpoll(pf, n + 1, -1);
		if (ret < 0 && errno != EINTR)
			tool_die("rpoll");
		if (pf[n].revents)
			tick_drain(tfd);
		for (unsigned i = 0; i < n; i++) {
			if (conn_done(&cs[i]) || !pf[i].revents)
				continue;
			if (!cs[i].reading && (pf[i].revents & (POLLHUP | POLLERR))) {
				/* The peer ended the stream while we stall. A stalled connection that is done
				 * writing asks for no event at all, so nothing below would look at it and the
				 * end would only show when the stall is over: read now (what is left, then the
				 * end of stream or the error). */
				printf("hangup conn=%u while stalled secs=%.1f sent=%llu\n", i, now - t0,
				       (unsigned long long)cs[i].sent);
				fflush(stdout);
				cs[i].reading = true;
			}
			if (conn_step(&cs[i], pf[i].revents)) {
				fprintf(stderr, "rs_peer: conn %u failed (sent %llu recv %llu)\n", i,
					(unsigned long long)cs[i].sent, (unsigned long long)cs[i].recvd);
				return 1;
			}
			if (conn_done(&cs[i]))
				done++;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		char tag[32];
		snprintf(tag, sizeof(tag), "conn=%u", i);
		bad |= conn_check(&cs[i], tag, tool_now_s() - t0);
		rclose(cs[i].fd);
	}
	if (n > 1)
		printf("%s conns=%u bytes_each=%llu secs=%.3f\n", bad ? "FAIL" : "ok", n, (unsigned long long)bytes,
		       tool_now_s() - t0);
	return bad;
}

/* Ping-pong: SIZE bytes out, the same SIZE back, ITERS times. */
static int run_latency(size_t size, unsigned iters)
{
	struct conn c;
	uint8_t *buf = malloc(size), *in = malloc(size);
	struct pollfd pf;
	double t0 = 0;

	if (!buf || !in)
		tool_die("malloc");
	conn_init(&c, 0, 7, EXPECT_ECHO);
	pf.fd = c.fd;
	pf.events = POLLOUT;
	if (rpoll(&pf, 1, -1) <= 0 || (pf.revents & (POLLERR | POLLHUP)))
		tool_die("connect");
	memset(buf, 0x5a, size);
	for (unsigned i = 0; i <= iters; i++) {
		size_t off = 0;
		if (i == 1)
			t0 = tool_now_s(); /* the first round trip warms up both ends */
		while (off < size) {
			ssize_t n = rsend(c.fd, buf + off, size - off, 0);
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
				tool_die("rsend");
			if (n > 0)
				off += (size_t)n;
			else
				rpoll(&(struct pollfd){.fd = c.fd, .events = POLLOUT}, 1, -1);
		}
		off = 0;
		while (off < size) {
			ssize_t n = rrecv(c.fd, in + off, size - off, 0);
			if (n == 0) {
				fprintf(stderr, "rs_peer: end of stream in round %u\n", i);
				return 1;
			}
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
				tool_die("rrecv");
			if (n > 0)
				off += (size_t)n;
			else
				rpoll(&(struct pollfd){.fd = c.fd, .events = POLLIN}, 1, -1);
		}
		if (memcmp(buf, in, size)) {
			fprintf(stderr, "rs_peer: round %u: echo differs\n", i);
			return 1;
		}
	}
	printf("ok latency size=%zu iters=%u rtt_us=%.1f\n", size, iters, (tool_now_s() - t0) * 1e6 / iters);
	rshutdown(c.fd, SHUT_RDWR);
	rclose(c.fd);
	return 0;
}

/* ---- server on librdmacm's own rsocket: the reference the gateway is compared with ---- */

#define MAX_SERVED 256

/* N connections that stay open and silent for SECS (no data either way), then close in order. Any
 * event on one before that (the gateway closed it, an error) fails. Holds connections open for
 * memory and keepalive tests. */
static int run_idle(unsigned n, double secs)
{
	struct pollfd *pf = calloc(n + 1, sizeof(*pf));
	int *fds = calloc(n, sizeof(*fds));
	int tfd = tick_fd();
	double t_conn, t0 = tool_now_s();
	uint8_t b[64];

	if (!pf || !fds)
		tool_die("calloc");
	for (unsigned i = 0; i < n; i++)
		fds[i] = connect_to();
	t_conn = tool_now_s();
	printf("connected conns=%u secs=%.3f\n", n, t_conn - t0);
	while (tool_now_s() < t_conn + secs && !stall_over) {
		for (unsigned i = 0; i < n; i++)
			pf[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
		pf[n] = (struct pollfd){.fd = tfd, .events = POLLIN};
		if (rpoll(pf, n + 1, -1) < 0 && errno != EINTR)
			tool_die("rpoll");
		if (pf[n].revents)
			tick_drain(tfd);
		for (unsigned i = 0; i < n; i++)
			if (pf[i].revents) {
				printf("FAIL idle conn=%u: event 0x%x after %.1f s idle\n", i, pf[i].revents, tool_now_s() - t_conn);
				return 1;
			}
	}
	for (unsigned i = 0; i < n; i++) {
		rshutdown(fds[i], SHUT_WR);
		for (;;) {
			ssize_t k = rrecv(fds[i], b, sizeof(b), 0);
			if (k == 0)
				break;
			if (k > 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
				printf("FAIL idle conn=%u: %s at close\n", i, k > 0 ? "data" : strerror(errno));
				return 1;
			}
			rpoll(&(struct pollfd){.fd = fds[i], .events = POLLIN}, 1, -1);
		}
		rclose(fds[i]);
	}
	printf("ok idle conns=%u secs=%.1f\n", n, tool_now_s() - t_conn);
	return 0;
}

static int run_serve(bool echo, bool spin)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai;
	struct pollfd pf[MAX_SERVED + 1];
	struct {
		int fd;
		uint64_t bytes;
		double t0;
		uint8_t buf[BUF];
		size_t len, off;
		bool eof;
	} *s = calloc(MAX_SERVED, sizeof(*s));
	int lfd, one = 1, n = 0;

	if (!s || getaddrinfo(host, port, &hints, &ai))
		tool_die("getaddrinfo");
	lfd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		tool_die("rsocket");
	rsetsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	set_opts(lfd);
	if (rbind(lfd, ai->ai_addr, ai->ai_addrlen) || rlisten(lfd, 64))
		tool_die("rbind/rlisten");
	freeaddrinfo(ai);
	rfcntl(lfd, F_SETFL, O_NONBLOCK);
	printf("listening %s:%s %s\n", host, port, echo ? "echo" : "discard");
	fflush(stdout);
	for (;;) {
		pf[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (int i = 0; i < n; i++)
			pf[i + 1] = (struct pollfd){.fd = s[i].fd,
						    .events = (short)((s[i].off < s[i].len ? POLLOUT : 0) |
								      (s[i].off == s[i].len && !s[i].eof ? POLLIN : 0))};
		/* timeout 0 returns before the code with the leak (see the header) */
		if (rpoll(pf, (nfds_t)n + 1, spin ? 0 : -1) < 0 && errno != EINTR)
			tool_die("rpoll");
		if ((pf[0].revents & POLLIN) && n < MAX_SERVED) {
			int fd = raccept(lfd, NULL, NULL);
			if (fd >= 0) {
				set_opts(fd);
				rfcntl(fd, F_SETFL, O_NONBLOCK);
				memset(&s[n], 0, sizeof(s[n]));
				s[n].fd = fd;
				s[n].t0 = tool_now_s();
				n++;
			}
		}
		for (int i = 0; i < n; i++) {
			bool closed = false;
			if (s[i].off < s[i].len) {
				ssize_t k = rsend(s[i].fd, s[i].buf + s[i].off, s[i].len - s[i].off, 0);
				if (k > 0)
					s[i].off += (size_t)k;
				else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
					closed = true;
			}
			while (!closed && s[i].off == s[i].len && !s[i].eof) {
				ssize_t k = rrecv(s[i].fd, s[i].buf, BUF, 0);
				if (k < 0) {
					if (errno != EAGAIN && errno != EWOULDBLOCK)
						closed = true;
					break;
				}
				if (k == 0) {
					s[i].eof = true;
					rshutdown(s[i].fd, SHUT_WR);
					break;
				}
				s[i].bytes += (uint64_t)k;
				if (echo) {
					s[i].len = (size_t)k;
					s[i].off = 0;
					ssize_t w = rsend(s[i].fd, s[i].buf, s[i].len, 0);
					if (w > 0)
						s[i].off = (size_t)w;
				}
			}
			if (closed || (s[i].eof && s[i].off == s[i].len)) {
				double dt = tool_now_s() - s[i].t0;
				printf("served bytes=%llu secs=%.3f mbit_s=%.1f\n", (unsigned long long)s[i].bytes, dt,
				       dt > 0 ? (double)s[i].bytes * 8 / dt / 1e6 : 0.0);
				fflush(stdout);
				rclose(s[i].fd);
				s[i] = s[--n];
				i--;
			}
		}
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: rs_peer [-p PORT] [-t SECONDS] [-B BUFSIZE] [-m WRITESIZE<=64K] HOST MODE [ARGS]\n"
			"  modes: echo BYTES | send BYTES | recv | conns N BYTES | stall BYTES SECONDS [N] |\n"
			"         idle N SECONDS | latency SIZE ITERS | serve [echo|discard] [spin]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *mode;
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGUSR1, on_usr1);
	while ((opt = getopt(argc, argv, "p:t:B:m:")) != -1) {
		switch (opt) {
		case 'p': port = optarg; break;
		case 't': timeout_s = atoi(optarg); break;
		case 'B': bufsize = (int)tool_size_arg(optarg); break;
		case 'm':
			wsize = (size_t)tool_size_arg(optarg);
			if (!wsize || wsize > BUF)
				usage();
			break;
		default: usage();
		}
	}
	if (argc - optind < 2)
		usage();
	host = argv[optind];
	mode = argv[optind + 1];
	argv += optind + 2;
	argc -= optind + 2;
	if (!strcmp(mode, "echo") && argc == 1)
		return run_conns(1, tool_size_arg(argv[0]), EXPECT_ECHO, 0);
	if (!strcmp(mode, "send") && argc == 1)
		return run_conns(1, tool_size_arg(argv[0]), EXPECT_NOTHING, 0);
	if (!strcmp(mode, "recv") && argc == 0)
		return run_conns(1, 0, EXPECT_ANY, 0);
	if (!strcmp(mode, "conns") && argc == 2)
		return run_conns((unsigned)atoi(argv[0]), tool_size_arg(argv[1]), EXPECT_ECHO, 0);
	if (!strcmp(mode, "stall") && (argc == 2 || argc == 3))
		return run_conns(argc == 3 ? (unsigned)atoi(argv[2]) : 1, tool_size_arg(argv[0]), EXPECT_ECHO, atof(argv[1]));
	if (!strcmp(mode, "idle") && argc == 2)
		return run_idle((unsigned)atoi(argv[0]), atof(argv[1]));
	if (!strcmp(mode, "latency") && argc == 2)
		return run_latency((size_t)tool_size_arg(argv[0]), (unsigned)atoi(argv[1]));
	if (!strcmp(mode, "serve"))
		return run_serve(argc > 0 && !strcmp(argv[0], "echo"), argc > 1 && !strcmp(argv[1], "spin"));
	usage();
	return 2;
}
