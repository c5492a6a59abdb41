/*
 * cm_probe: smallest end-to-end check of librdmacm + libibverbs on a (soft-)RoCE device.
 *
 *   cm_probe [-p PORT] [-n SIZE] [-c COUNT] SERVER_ADDR [CLIENT_BIND_ADDR]
 *
 * Forks a server that rdma_listen()s on SERVER_ADDR:PORT; the parent is the client, optionally
 * bound to CLIENT_BIND_ADDR (so that on the VM's `pair` topology the two ends sit on different rxe
 * devices). Over one RC queue pair the client sends COUNT messages of SIZE bytes with
 * ibv_post_send(IBV_WR_SEND); the server checks every byte and answers with the message XOR 0xa5,
 * which the client checks in turn. Receives are always posted before the peer can send (no RNR
 * retries). Prints the devices both ends used. Exit 0 only if both ends verified everything; an
 * alarm turns any hang into a failure. Built on the host by tests/vm/test_vm_smoke.sh, run in the VM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TIMEOUT_S 60

struct conn {
	const char *who;
	struct rdma_event_channel *ec;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf; /* [0, size): receive area; [size, 2 * size): send area */
	size_t size;
};

static void die(const struct conn *c, const char *what)
{
	fprintf(stderr, "cm_probe %s: %s: %s\n", c->who, what, errno ? strerror(errno) : "failed");
	exit(1);
}

static int get_addr(const char *host, const char *port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_flags = AI_NUMERICHOST }, *res;
	int rc = getaddrinfo(host, port, &hints, &res);

	if (rc != 0) {
		fprintf(stderr, "cm_probe: %s: %s\n", host, gai_strerror(rc));
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static void expect_event(struct conn *c, enum rdma_cm_event_type want, struct rdma_cm_id **id)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(c->ec, &ev))
		die(c, "rdma_get_cm_event");
	if (ev->event != want) {
		fprintf(stderr, "cm_probe %s: got %s (status %d), wanted %s\n", c->who,
			rdma_event_str(ev->event), ev->status, rdma_event_str(want));
		exit(1);
	}
	if (id)
		*id = ev->id;
	rdma_ack_cm_event(ev);
}

static void setup_qp(struct conn *c)
{
	struct ibv_qp_init_attr qa = { 0 };

	c->pd = ibv_alloc_pd(c->id->verbs);
	if (!c->pd)
		die(c, "ibv_alloc_pd");
	c->cq = ibv_create_cq(c->id->verbs, 16, NULL, NULL, 0);
	if (!c->cq)
		die(c, "ibv_create_cq");
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(c->id, c->pd, &qa))
		die(c, "rdma_create_qp");
	c->buf = calloc(2, c->size);
	if (!c->buf)
		die(c, "calloc");
	c->mr = ibv_reg_mr(c->pd, c->buf, 2 * c->size, IBV_ACCESS_LOCAL_WRITE);
	if (!c->mr)
		die(c, "ibv_reg_mr");
}

static void post_recv(struct conn *c)
{
	struct ibv_sge sge = { (uintptr_t)c->buf, (uint32_t)c->size, c->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	errno = ibv_post_recv(c->id->qp, &wr, &bad);
	if (errno)
		die(c, "ibv_post_recv");
}

static void post_send(struct conn *c)
{
	struct ibv_sge sge = { (uintptr_t)(c->buf + c->size), (uint32_t)c->size, c->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;

	errno = ibv_post_send(c->id->qp, &wr, &bad);
	if (errno)
		die(c, "ibv_post_send");
}

/* Busy-poll for the next successful completion. */
static void poll_one(struct conn *c, struct ibv_wc *wc)
{
	int n;

	while ((n = ibv_poll_cq(c->cq, 1, wc)) == 0)
		sched_yield();
	if (n < 0)
		die(c, "ibv_poll_cq");
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "cm_probe %s: completion error: %s\n", c->who,
			ibv_wc_status_str(wc->status));
		exit(1);
	}
	if (wc->opcode != IBV_WC_SEND && wc->opcode != IBV_WC_RECV) {
		fprintf(stderr, "cm_probe %s: unexpected completion opcode %d\n", c->who, wc->opcode);
		exit(1);
	}
}

static uint8_t pattern(uint32_t seq, size_t i)
{
	return (uint8_t)(seq * 31u + i * 7u + (i >> 8));
}

/* Check message seq in the receive area; xor is 0 for a request, 0xa5 for a reply. */
static void verify(struct conn *c, uint32_t seq, uint8_t xor, uint32_t len)
{
	size_t i;

	if (len != c->size) {
		fprintf(stderr, "cm_probe %s: message %u: %u bytes, want %zu\n", c->who, seq, len, c->size);
		exit(1);
	}
	for (i = 0; i < c->size; i++) {
		if (c->buf[i] != (uint8_t)(pattern(seq, i) ^ xor)) {
			fprintf(stderr, "cm_probe %s: message %u: byte %zu is 0x%02x, want 0x%02x\n", c->who,
				seq, i, c->buf[i], (uint8_t)(pattern(seq, i) ^ xor));
			exit(1);
		}
	}
}

static void teardown(struct conn *c)
{
	rdma_destroy_qp(c->id);
	ibv_dereg_mr(c->mr);
	free(c->buf);
	ibv_destroy_cq(c->cq);
	ibv_dealloc_pd(c->pd);
	rdma_destroy_id(c->id);
}

static int server(struct conn *c, struct sockaddr_storage *addr, int count, int ready_fd)
{
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_id *lid;
	int seq, sending = 0;
	size_t i;

	if (rdma_create_id(c->ec, &lid, NULL, RDMA_PS_TCP))
		die(c, "rdma_create_id");
	if (rdma_bind_addr(lid, (struct sockaddr *)addr))
		die(c, "rdma_bind_addr");
	if (rdma_listen(lid, 1))
		die(c, "rdma_listen");
	if (write(ready_fd, "r", 1) != 1)
		die(c, "signal readiness");
	close(ready_fd);

	expect_event(c, RDMA_CM_EVENT_CONNECT_REQUEST, &c->id);
	setup_qp(c);
	post_recv(c);
	if (rdma_accept(c->id, &cp))
		die(c, "rdma_accept");
	expect_event(c, RDMA_CM_EVENT_ESTABLISHED, NULL);
	printf("cm_probe server: connected on %s\n", ibv_get_device_name(c->id->verbs->device));

	/*
	 * The completion of our previous reply's SEND and the client's next message may arrive in
	 * either order: the client sends again as soon as it has the reply.
	 */
	for (seq = 0; seq < count; seq++) {
		struct ibv_wc wc;

		do {
			poll_one(c, &wc);
			if (wc.opcode == IBV_WC_SEND)
				sending = 0;
		} while (wc.opcode != IBV_WC_RECV);
		verify(c, (uint32_t)seq, 0, wc.byte_len);
		while (sending) { /* the send area is ours again only once the last SEND completed */
			poll_one(c, &wc);
			if (wc.opcode != IBV_WC_SEND) {
				fprintf(stderr, "cm_probe server: message before its reply\n");
				exit(1);
			}
			sending = 0;
		}
		for (i = 0; i < c->size; i++)
			c->buf[c->size + i] = c->buf[i] ^ 0xa5;
		post_recv(c); /* before replying: the client's next message must find it */
		post_send(c);
		sending = 1;
	}
	/*
	 * Not the last reply's SEND completion: the client disconnects as soon as it has verified that
	 * reply, and its QP, moved to the error state, may drop the ACK that completion waits for (then
	 * the server spun here until the test's 30 s limit). The client's disconnect says that every reply
	 * arrived; the teardown flushes the SEND.
	 */
	expect_event(c, RDMA_CM_EVENT_DISCONNECTED, NULL);
	printf("cm_probe server: %d messages of %zu bytes verified\n", count, c->size);
	teardown(c);
	rdma_destroy_id(lid);
	return 0;
}

static int client(struct conn *c, struct sockaddr_storage *dst, struct sockaddr_storage *src,
		  int count)
{
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	int seq, sent, replied;
	size_t i;

	if (rdma_create_id(c->ec, &c->id, NULL, RDMA_PS_TCP))
		die(c, "rdma_create_id");
	if (rdma_resolve_addr(c->id, src ? (struct sockaddr *)src : NULL, (struct sockaddr *)dst, 5000))
		die(c, "rdma_resolve_addr");
	expect_event(c, RDMA_CM_EVENT_ADDR_RESOLVED, NULL);
	if (rdma_resolve_route(c->id, 5000))
		die(c, "rdma_resolve_route");
	expect_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL);
	setup_qp(c);
	post_recv(c);
	if (rdma_connect(c->id, &cp))
		die(c, "rdma_connect");
	expect_event(c, RDMA_CM_EVENT_ESTABLISHED, NULL);
	printf("cm_probe client: connected on %s\n", ibv_get_device_name(c->id->verbs->device));

	for (seq = 0; seq < count; seq++) {
		for (i = 0; i < c->size; i++)
			c->buf[c->size + i] = pattern((uint32_t)seq, i);
		post_send(c);
		/* completions may come in either order: the reply can beat the send completion */
		for (sent = 0, replied = 0; !sent || !replied;) {
			struct ibv_wc wc;

			poll_one(c, &wc);
			if (wc.opcode == IBV_WC_SEND ? sent++ : replied++) {
				fprintf(stderr, "cm_probe client: duplicate completion\n");
				return 1;
			}
			if (wc.opcode == IBV_WC_RECV) {
				verify(c, (uint32_t)seq, 0xa5, wc.byte_len);
				post_recv(c);
			}
		}
	}
	printf("cm_probe client: %d replies of %zu bytes verified\n", count, c->size);
	if (rdma_disconnect(c->id))
		die(c, "rdma_disconnect");
	expect_event(c, RDMA_CM_EVENT_DISCONNECTED, NULL);
	teardown(c);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: cm_probe [-p PORT] [-n SIZE] [-c COUNT] SERVER_ADDR [CLIENT_BIND_ADDR]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sockaddr_storage saddr, baddr;
	struct conn c = { 0 };
	const char *port = "7471";
	int count = 10, opt, st, rc, pfd[2];
	long size = 4096;
	char ch;
	pid_t pid;

	while ((opt = getopt(argc, argv, "p:n:c:")) != -1) {
		switch (opt) {
		case 'p': port = optarg; break;
		case 'n': size = strtol(optarg, NULL, 0); break;
		case 'c': count = atoi(optarg); break;
		default: usage();
		}
	}
	if (optind >= argc || argc - optind > 2 || size < 1 || size > (1 << 24) || count < 1)
		usage();
	if (get_addr(argv[optind], port, &saddr))
		return 2;
	if (optind + 1 < argc && get_addr(argv[optind + 1], "0", &baddr))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0); /* the forked server _exit()s: no buffered output may be lost */
	c.size = (size_t)size;
	alarm(TIMEOUT_S); /* a hang is a failure (the child sets its own: alarms do not survive fork) */

	if (pipe(pfd))
		die(&c, "pipe");
	pid = fork();
	if (pid < 0)
		die(&c, "fork");
	if (pid == 0) {
		alarm(TIMEOUT_S);
		close(pfd[0]);
		c.who = "server";
		c.ec = rdma_create_event_channel();
		if (!c.ec)
			die(&c, "rdma_create_event_channel");
		_exit(server(&c, &saddr, count, pfd[1]));
	}
	close(pfd[1]);
	c.who = "client";
	if (read(pfd[0], &ch, 1) != 1) {
		fprintf(stderr, "cm_probe: server did not start listening\n");
		waitpid(pid, &st, 0);
		return 1;
	}
	close(pfd[0]);
	c.ec = rdma_create_event_channel();
	if (!c.ec)
		die(&c, "rdma_create_event_channel");
	rc = client(&c, &saddr, optind + 1 < argc ? &baddr : NULL, count);
	if (rc)
		kill(pid, SIGTERM);
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "cm_probe: server failed\n");
		rc = 1;
	}
	rdma_destroy_event_channel(c.ec);
	if (rc == 0)
		printf("cm_probe: PASS\n");
	return rc;
}
