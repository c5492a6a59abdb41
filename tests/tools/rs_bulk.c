/* rs_bulk: lean rsocket peers for the end-to-end benchmark (tests/bench/bench_e2e.sh), the IB-side
 * counterpart of tcp_bulk. Unlike rs_peer (which generates pseudo-random data and hashes both
 * directions: under TCG that costs more CPU than the transfer itself and caps a sender at a few MB/s),
 * these move a constant buffer and only count, so a path is measured, not the peer.
 *
 *   rs_bulk [-m WRITESIZE] [-t SECONDS] [-r RATE] MODE ARGS
 *     serve HOST PORT discard|echo   listen on HOST:PORT, serve connections one after another until
 *                                    killed; discard reads to end of stream and closes; echo sends
 *                                    everything back and half-closes after the peer's end of stream
 *     send HOST PORT BYTES           send BYTES, half-close, read until end of stream; prints secs
 *                                    (connect included, like tcp_bulk and rs_peer)
 *     latency HOST PORT SIZE ITERS   ping-pong SIZE bytes ITERS times against an echo; mean round trip
 *     (-r RATE: send paces its writes to RATE bytes a second; see tool.h)
 *
 * Blocking rsocket calls only (rsend/rrecv/raccept), never rpoll: rdma-core 44's rpoll misses the
 * wake-up of a listening rsocket (it then sleeps for its wake_up_interval, 5 s by default) and leaks
 * its poll count when a timeout expires. Blocking calls spin for rsocket's polling_time, then sleep
 * on the completion channel, the normal rsocket way. -t arms alarm(): a stuck client dies.
 * The clients and the command line are tool.h's, shared with tcp_bulk; the server is this file's. */
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
#include <unistd.h>

#include <rdma/rsocket.h>

#define TOOL_NAME "rs_bulk"
#include "tool.h"

#define BUFSZ (256 * 1024)

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

static const struct tool_bulk rs_api;

static int connect_to(const char *host, const char *port, int timeout_s)
{
	struct addrinfo *ai = resolve(host, port, false);
	int fd = rsocket(AF_INET, SOCK_STREAM, 0);

	(void)timeout_s; /* rsocket has no socket timeouts: tool_bulk_main arms alarm() */
	if (fd < 0)
		tool_die("rsocket");
	nodelay(fd);
	if (rconnect(fd, ai->ai_addr, ai->ai_addrlen))
		tool_die("rconnect");
	freeaddrinfo(ai);
	return fd;
}

static int run_serve(const char *host, const char *port, bool echo)
{
	struct addrinfo *ai = resolve(host, port, true);
	char *buf = malloc(BUFSZ);
	int lfd = rsocket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (lfd < 0 || !buf)
		tool_die("rsocket");
	rsetsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (rbind(lfd, ai->ai_addr, ai->ai_addrlen) || rlisten(lfd, 16))
		tool_die("rbind/rlisten");
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
			tool_die("raccept");
		}
		nodelay(fd);
		t0 = tool_now_s();
		for (;;) {
			ssize_t k = rrecv(fd, buf, BUFSZ, 0);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			bytes += (uint64_t)k;
			if (echo)
				tool_send_all(&rs_api, fd, buf, (size_t)k);
		}
		rshutdown(fd, SHUT_WR);
		rclose(fd);
		printf("served %s bytes=%llu secs=%.3f\n", echo ? "echo" : "discard", (unsigned long long)bytes,
		       tool_now_s() - t0);
		fflush(stdout);
	}
	return 0;
}

/* serve HOST PORT discard|echo */
static int serve(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[3], "echo") && strcmp(argv[3], "discard")))
		return -1;
	return run_serve(argv[1], argv[2], !strcmp(argv[3], "echo"));
}

static const struct tool_bulk rs_api = {
	.send = rsend, .recv = rrecv, .shutdown = rshutdown, .close = rclose,
	.send_name = "rsend", .recv_name = "rrecv", .alarm = true,
	.connect = connect_to, .serve = serve, .serve_args = "HOST PORT discard|echo",
};

int main(int argc, char **argv)
{
	return tool_bulk_main(&rs_api, argc, argv);
}
