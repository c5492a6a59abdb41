/* tcp_bulk: kernel-TCP peers for the end-to-end benchmark (tests/bench/bench_e2e.sh), the Ethernet-side
 * counterpart of rs_peer: they time themselves and print one line of key=value pairs.
 *
 *   tcp_bulk [-m WRITESIZE] [-t SECONDS] [-r RATE] MODE ARGS
 *     serve DISCARD_PORT ECHO_PORT   listen on 0.0.0.0 on both ports until killed; discard: read to end
 *                                    of stream, then close (the sender sees the orderly end); echo: send
 *                                    everything back, half-close after the peer's end of stream
 *     send HOST PORT BYTES           connect, send BYTES, half-close, read until end of stream (expects
 *                                    nothing back); prints secs (connect included, as rs_peer does)
 *     latency HOST PORT SIZE ITERS   ping-pong SIZE bytes ITERS times against an echo; mean round trip
 *     (-r RATE: send paces its writes to RATE bytes a second; see tool.h)
 *
 * One thread, poll(); TCP_NODELAY on every connection (small messages must not wait for Nagle). The
 * clients and the command line are tool.h's, shared with rs_bulk; the server is this file's. */
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
#include <unistd.h>

#define TOOL_NAME "tcp_bulk"
#include "tool.h"

#define MAX_CONNS 64
#define BUFSZ (256 * 1024)

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int connect_to(const char *host, const char *port, int timeout_s)
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
		tool_die("socket");
	nodelay(fd);
	/* a stuck path fails the run instead of hanging it */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		tool_die("connect");
	return fd;
}

static int listen_on(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		tool_die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64))
		tool_die("bind/listen");
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
			tool_die("poll");
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
			c[n].t0 = tool_now_s();
			if (!(c[n].buf = malloc(BUFSZ)))
				tool_die("malloc");
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
				double dt = tool_now_s() - c[i].t0;
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

/* serve DISCARD_PORT ECHO_PORT */
static int serve(int argc, char **argv)
{
	if (argc != 3)
		return -1;
	return run_serve(atoi(argv[1]), atoi(argv[2]));
}

static const struct tool_bulk tcp_api = {
	.send = send, .recv = recv, .shutdown = shutdown, .close = close,
	.send_name = "send", .recv_name = "recv", .send_flags = MSG_NOSIGNAL, .alarm = false,
	.connect = connect_to, .serve = serve, .serve_args = "DISCARD_PORT ECHO_PORT",
};

int main(int argc, char **argv)
{
	return tool_bulk_main(&tcp_api, argc, argv);
}
