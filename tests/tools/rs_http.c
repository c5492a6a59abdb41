/* rs_http: a minimal HTTP/1.0 client and server on the stock rsocket API, for the demo and the
 * end-to-end tests: the cluster side of a web fetch, with no ibgw code in it.
 *
 *   rs_http get  HOST:PORT PATH      sends GET PATH over rsocket, writes the whole response to stdout
 *   rs_http serve ADDR:PORT [COUNT]  answers COUNT requests (default: until killed); GET /bytes/N
 *                                    returns N deterministic bytes, anything else a short text page
 * Blocking and single-threaded on purpose: the simplest correct rsocket program. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#define TOOL_NAME "rs_http"
#include "tool.h"

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = rsend(fd, p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int get(const struct sockaddr_in *sa, const char *path)
{
	char req[1024], buf[65536];
	int fd = rsocket(AF_INET, SOCK_STREAM, 0);
	ssize_t n;

	if (fd < 0 || rconnect(fd, (const struct sockaddr *)sa, sizeof(*sa))) {
		perror("rs_http: connect");
		return 1;
	}
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: ibgw\r\nUser-Agent: rs_http\r\n\r\n", path);
	if (send_all(fd, req, strlen(req))) {
		perror("rs_http: send");
		return 1;
	}
	while ((n = rrecv(fd, buf, sizeof(buf), 0)) > 0)
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			return 1;
	rclose(fd);
	if (n < 0) {
		perror("rs_http: recv");
		return 1;
	}
	return 0;
}

static void serve_one(int fd)
{
	char req[4096], hdr[256], body[65536];
	size_t len = 0;
	unsigned long long want = 0, sent = 0;
	ssize_t n;

	while (len < sizeof(req) - 1 && (n = rrecv(fd, req + len, sizeof(req) - 1 - len, 0)) > 0) {
		len += (size_t)n;
		req[len] = 0;
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	req[len] = 0;
	if (sscanf(req, "GET /bytes/%llu", &want) == 1) {
		snprintf(hdr, sizeof(hdr),
			 "HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %llu\r\n\r\n",
			 want);
		send_all(fd, hdr, strlen(hdr));
		while (sent < want) {
			size_t chunk = want - sent < sizeof(body) ? (size_t)(want - sent) : sizeof(body);
			for (size_t i = 0; i < chunk; i++)
				body[i] = (char)((sent + i) * 2654435761u >> 24);
			if (send_all(fd, body, chunk))
				break;
			sent += chunk;
		}
	} else {
		char path[256] = "?";
		sscanf(req, "GET %255s", path);
		snprintf(body, sizeof(body), "hello from the cluster: rsocket service answered GET %s\n", path);
		snprintf(hdr, sizeof(hdr), "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n\r\n",
			 strlen(body));
		send_all(fd, hdr, strlen(hdr));
		send_all(fd, body, strlen(body));
	}
	rshutdown(fd, SHUT_WR);
	while (rrecv(fd, body, sizeof(body), 0) > 0)
		; /* wait for the peer's end so nothing is cut */
	rclose(fd);
}

static int serve(const struct sockaddr_in *sa, long count)
{
	int one = 1, lfd = rsocket(AF_INET, SOCK_STREAM, 0);

	if (lfd < 0)
		return perror("rs_http: rsocket"), 1;
	rsetsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (rbind(lfd, (const struct sockaddr *)sa, sizeof(*sa)) || rlisten(lfd, 16))
		return perror("rs_http: listen"), 1;
	fprintf(stderr, "rs_http: serving\n");
	for (long i = 0; count <= 0 || i < count; i++) {
		int fd = raccept(lfd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR)
				continue;
			return perror("rs_http: accept"), 1;
		}
		serve_one(fd);
	}
	rclose(lfd);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa;

	if (argc >= 4 && !strcmp(argv[1], "get") && !tool_addr_parse(argv[2], &sa))
		return get(&sa, argv[3]);
	if (argc >= 3 && !strcmp(argv[1], "serve") && !tool_addr_parse(argv[2], &sa))
		return serve(&sa, argc > 3 ? atol(argv[3]) : 0);
	fprintf(stderr, "usage: rs_http get HOST:PORT PATH | rs_http serve ADDR:PORT [COUNT]\n");
	return 2;
}
