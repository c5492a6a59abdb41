/* ib_badpeer: a raw librdmacm client that connects with bad rsocket private data.
 *
 *   ib_badpeer [-p PORT] [-t MS] HOST MODE
 *     version   private data of protocol version 2
 *     short     only 8 bytes (version 1, then nothing: the CM pads with zeros)
 *     none      no private data at all
 *     garbage   40 pseudo-random bytes (version byte forced to 1, so the shape checks must catch it)
 *     sgl       version 1 with a target_sgl of 5 entries
 *     keepalive not bad at all: valid private data, then one rsocket CTRL KEEPALIVE message with its
 *               immediate (stock rsocket sends its keepalive as a bare RDMA write the receiver never
 *               sees; the protocol allows this form and a receiver must ignore it), then DISCONNECT
 *     badkey    valid private data except the rkey of the receive buffer it offers, then 64 bytes of
 *               data (to an echo route): the gateway's write back fails with a remote access error
 *               (exit 0 once connected: the gateway's counters tell the rest)
 *
 *     unaccept  valid private data, but the queue pair is not librdmacm's (created with ibv_create_qp
 *               and named in the connect parameters), so librdmacm hands us the gateway's accept as
 *               CONNECT_RESPONSE instead of completing the handshake; we answer it with a REJ: the
 *               gateway's accepted connection fails before establishment (exit 0 once rejected)
 *
 *   ib_badpeer [-p PORT] [-n COUNT] HOST serve MODE
 *     a raw rsocket server for the gateway's active opens: listens on HOST:PORT and accepts every
 *     connect request with the bad private data of MODE (version, short, none, garbage or sgl, as
 *     above) on a real queue pair; prints "listening", then one line per connection; ends after
 *     COUNT connections are over (default: when killed). Exit 0 when each one was accepted and then
 *     disconnected by the peer.
 *
 * Exit 0 when the connect was REJECTED (what the gateway must do), 1 when it was accepted, 2 on any
 * other outcome (unreachable, timeout, local errors). The queue pair is real, so an accept would be a
 * working connection: the verdict is the gateway's. Mode keepalive: exit 0 when the connection was
 * accepted and both messages were delivered (acknowledged by the gateway's queue pair). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

/* 16-byte sge of rsocket's private data, big-endian */
static void put_sge(uint8_t *p, uint64_t addr, uint32_t key, uint32_t len)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(addr >> (56 - 8 * i));
	for (int i = 0; i < 4; i++) {
		p[8 + i] = (uint8_t)(key >> (24 - 8 * i));
		p[12 + i] = (uint8_t)(len >> (24 - 8 * i));
	}
}

/* Mode keepalive, on an established connection: CTRL KEEPALIVE (op 7, value 1), then CTRL
 * DISCONNECT (value 0), each a zero-length RDMA write with immediate; waits for both completions. */
static int send_ctrl(struct rdma_cm_id *id, int ms)
{
	static const uint32_t vals[2] = {1, 0};

	for (int i = 0; i < 2; i++) {
		struct ibv_send_wr wr = {.wr_id = (uint64_t)i, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
					 .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(7u << 29 | vals[i])}, *bad;
		struct ibv_wc wc;
		int n = 0;

		if (ibv_post_send(id->qp, &wr, &bad))
			return -1;
		for (int t = 0; t < ms && (n = ibv_poll_cq(id->qp->send_cq, 1, &wc)) == 0; t++)
			usleep(1000);
		/* the gateway's advert may complete on our CQ first (a receive): skip those */
		while (n > 0 && (wc.opcode & IBV_WC_RECV))
			for (int t = 0; t < ms && (n = ibv_poll_cq(id->qp->send_cq, 1, &wc)) == 0; t++)
				usleep(1000);
		if (n <= 0 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "ib_badpeer: ctrl %u: %s\n", vals[i], n > 0 ? ibv_wc_status_str(wc.status) : "no completion");
			return -1;
		}
	}
	return 0;
}

static uint8_t peer_pd[40]; /* the gateway's private data (accept) */

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* Mode badkey: 64 bytes of DATA (op 0) into the first half of the gateway's receive buffer. */
static int send_data(struct rdma_cm_id *id, struct ibv_mr *mr, uint8_t *buf, int ms)
{
	struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = 64, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				 .sg_list = &sge, .num_sge = 1, .imm_data = htonl(64)}, *bad;
	struct ibv_wc wc;
	int n = 0;

	wr.wr.rdma.remote_addr = get_be(peer_pd + 24, 8);
	wr.wr.rdma.rkey = (uint32_t)get_be(peer_pd + 32, 4);
	if (ibv_post_send(id->qp, &wr, &bad))
		return -1;
	for (int t = 0; t < ms && (n = ibv_poll_cq(id->send_cq, 1, &wc)) == 0; t++)
		usleep(1000);
	return n > 0 && wc.status == IBV_WC_SUCCESS ? 0 : -1;
}

static int wait_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want, int ms,
		      enum rdma_cm_event_type *got)
{
	struct pollfd pf = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&pf, 1, ms) <= 0)
		return -ETIMEDOUT;
	if (rdma_get_cm_event(ch, &ev))
		return -errno;
	*got = ev->event;
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED && ev->param.conn.private_data &&
	    ev->param.conn.private_data_len >= sizeof(peer_pd))
		memcpy(peer_pd, ev->param.conn.private_data, sizeof(peer_pd));
	rdma_ack_cm_event(ev);
	return *got == want ? 0 : -EPROTO;
}

/* The private data of MODE into PD and PARAM (keepalive, badkey and unaccept: valid, filled in once
 * memory is registered). -1: no such mode. */
static int bad_pdata(const char *mode, uint8_t *pd, struct rdma_conn_param *param)
{
	memset(pd, 0, 40);
	param->private_data = pd, param->private_data_len = 40;
	if (!strcmp(mode, "version")) {
		pd[0] = 2;
		pd[3] = 16;
	} else if (!strcmp(mode, "short")) {
		pd[0] = 1;
		pd[3] = 16;
		param->private_data_len = 8;
	} else if (!strcmp(mode, "none")) {
		param->private_data = NULL, param->private_data_len = 0;
	} else if (!strcmp(mode, "garbage")) {
		srandom((unsigned)getpid());
		for (unsigned i = 0; i < 40; i++)
			pd[i] = (uint8_t)random();
		pd[0] = 1;
		pd[20] = pd[21] = pd[22] = 0;
		pd[23] = 7; /* never 2 entries */
	} else if (!strcmp(mode, "sgl")) {
		pd[0] = 1;
		pd[3] = 16;
		pd[15] = 0x10; /* target_sgl.addr */
		pd[23] = 5;    /* 5 entries */
		pd[31] = 0x20; /* data_buf.addr */
		pd[38] = 0x01; /* data_buf.length 256 */
	} else if (strcmp(mode, "keepalive") && strcmp(mode, "badkey") && strcmp(mode, "unaccept")) {
		return -1;
	}
	return 0;
}

/* Mode serve: one connection at a time is enough for the tests (the gateway's active opens to this
 * server come one by one); events of other ids are acknowledged and otherwise ignored. */
static int serve(const char *host, const char *port, const char *mode, int count)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid;
	uint8_t pd[40];
	int done = 0, bad = 0;

	if (getaddrinfo(host, port, &hints, &ai))
		return 2;
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) || rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 8)) {
		perror("ib_badpeer: listen");
		return 2;
	}
	printf("listening on %s:%s, accepting with %s private data\n", host, port, mode);
	fflush(stdout);
	while (!count || done < count) {
		struct rdma_conn_param param = {0};
		struct rdma_cm_event *ev;
		struct rdma_cm_id *id;
		enum rdma_cm_event_type type;

		if (rdma_get_cm_event(ch, &ev)) {
			perror("ib_badpeer: rdma_get_cm_event");
			return 2;
		}
		type = ev->event;
		id = ev->id;
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST)
			param = ev->param.conn; /* answer with the requester's own parameters, as rsocket does */
		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			bad_pdata(mode, pd, &param);
			if (rdma_create_qp(id, NULL, &qa) || rdma_accept(id, &param)) {
				perror("ib_badpeer: accept");
				bad = 1;
			}
			printf("conn %d: accepted with %s private data\n", done + 1, mode);
			fflush(stdout);
			continue;
		}
		if (id == lid)
			continue;
		printf("conn %d: %s\n", done + 1, rdma_event_str(type));
		fflush(stdout);
		if (type == RDMA_CM_EVENT_ESTABLISHED)
			continue;
		/* over: DISCONNECTED is the verdict we expect (the gateway refused our accept and hung up) */
		bad |= type != RDMA_CM_EVENT_DISCONNECTED;
		rdma_disconnect(id);
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
		done++;
	}
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(ch);
	freeaddrinfo(ai);
	return bad ? 1 : 0;
}

/* Mode unaccept, once the route is resolved: a queue pair librdmacm does not know about, so that
 * the gateway's accept comes to us as CONNECT_RESPONSE; a REJ answers it. Returns the exit status. */
static int unaccept(struct rdma_event_channel *ch, struct rdma_cm_id *id, struct rdma_conn_param *param, uint8_t *pd,
		    int ms)
{
	static uint8_t mem[64] __attribute__((aligned(64)));
	struct ibv_pd *ipd = ibv_alloc_pd(id->verbs);
	struct ibv_cq *cq = ipd ? ibv_create_cq(id->verbs, 8, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	enum rdma_cm_event_type got = 0;
	int ret;

	qa.send_cq = qa.recv_cq = cq;
	qp = cq ? ibv_create_qp(ipd, &qa) : NULL;
	mr = qp ? ibv_reg_mr(ipd, mem, sizeof(mem), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!mr) {
		perror("ib_badpeer: verbs resources");
		return 2;
	}
	/* valid private data: the gateway must accept, the failure must come after */
	pd[0] = 1;
	pd[3] = 4;
	put_sge(pd + 8, (uintptr_t)mem, mr->rkey, 2);
	put_sge(pd + 24, (uintptr_t)mem + 32, mr->rkey, 32);
	param->qp_num = qp->qp_num;
	if (rdma_connect(id, param)) {
		perror("ib_badpeer: rdma_connect");
		return 2;
	}
	ret = wait_event(ch, RDMA_CM_EVENT_CONNECT_RESPONSE, ms, &got);
	if (ret) {
		printf("unaccept: %s\n", ret == -ETIMEDOUT ? "timeout" : rdma_event_str(got));
		return got == RDMA_CM_EVENT_REJECTED ? 1 : 2;
	}
	ret = rdma_reject(id, NULL, 0);
	printf("unaccept: accepted by the gateway, answered with a REJ%s\n", ret ? " (failed)" : "");
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(ipd);
	return ret ? 2 : 0;
}

int main(int argc, char **argv)
{
	const char *port = "7471", *mode;
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
	struct rdma_conn_param param = {.flow_control = 1, .retry_count = 7, .rnr_retry_count = 7};
	enum rdma_cm_event_type got = 0;
	uint8_t pd[40] = {0};
	int opt, ms = 5000, count = 0, ret;

	while ((opt = getopt(argc, argv, "p:t:n:")) != -1) {
		if (opt == 'p')
			port = optarg;
		else if (opt == 't')
			ms = atoi(optarg);
		else if (opt == 'n')
			count = atoi(optarg);
		else
			return 2;
	}
	mode = argc - optind >= 2 ? argv[optind + 1] : "";
	if (!strcmp(mode, "serve") && argc - optind == 3)
		return serve(argv[optind], port, argv[optind + 2], count);
	if (argc - optind != 2 || bad_pdata(mode, pd, &param)) {
		fprintf(stderr, "usage: ib_badpeer [-p PORT] [-t MS] HOST "
				"version|short|none|garbage|sgl|keepalive|badkey|unaccept\n"
				"       ib_badpeer [-p PORT] [-n COUNT] HOST serve version|short|none|garbage|sgl\n");
		return 2;
	}
	if (getaddrinfo(argv[optind], port, &hints, &ai))
		return 2;
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		perror("ib_badpeer: rdma_create_id");
		return 2;
	}
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, ms) || wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, ms, &got) ||
	    rdma_resolve_route(id, ms) || wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, ms, &got)) {
		fprintf(stderr, "ib_badpeer: cannot resolve %s (%s)\n", argv[optind], rdma_event_str(got));
		return 2;
	}
	if (!strcmp(mode, "unaccept"))
		return unaccept(ch, id, &param, pd, ms);
	if (rdma_create_qp(id, NULL, &qa)) {
		perror("ib_badpeer: rdma_create_qp");
		return 2;
	}
	static uint8_t mem[32 + 4096 + 64] __attribute__((aligned(64)));
	struct ibv_mr *mr = NULL;
	if (!strcmp(mode, "keepalive") || !strcmp(mode, "badkey")) {
		/* a real rsocket side: 4 receives, a target_sgl the gateway's first advert goes into, a
		 * 4 KiB receive buffer whose first half is offered at once (badkey: under a wrong key) */
		struct ibv_recv_wr rw = {.wr_id = 9}, *bad;

		mr = ibv_reg_mr(id->pd, mem, sizeof(mem), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mr) {
			perror("ib_badpeer: ibv_reg_mr");
			return 2;
		}
		for (int i = 0; i < 4; i++)
			if (ibv_post_recv(id->qp, &rw, &bad))
				return 2;
		pd[0] = 1;
		pd[3] = 4; /* credits: our 4 receives */
		put_sge(pd + 8, (uintptr_t)mem, mr->rkey, 2);
		put_sge(pd + 24, (uintptr_t)mem + 32, !strcmp(mode, "badkey") ? mr->rkey ^ 0x5a5a00 : mr->rkey, 2048);
	}
	if (rdma_connect(id, &param)) {
		perror("ib_badpeer: rdma_connect");
		return 2;
	}
	ret = wait_event(ch, RDMA_CM_EVENT_REJECTED, ms, &got);
	printf("%s: %s\n", mode, ret == -ETIMEDOUT ? "timeout" : rdma_event_str(got));
	if (got == RDMA_CM_EVENT_ESTABLISHED && !strcmp(mode, "badkey")) {
		/* the echo coming back to the wrong key puts our queue pair in the error state too, which
		 * may flush our write before its acknowledgement shows: its outcome is not the verdict */
		ret = send_data(id, mr, mem + 32 + 4096, ms);
		printf("badkey: 64 bytes %s\n", ret ? "sent, then our queue pair failed" : "delivered");
		ret = 0;
		sleep(1);
		rdma_disconnect(id);
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
		rdma_destroy_event_channel(ch);
		freeaddrinfo(ai);
		return ret ? 2 : 0;
	}
	if (got == RDMA_CM_EVENT_ESTABLISHED && !strcmp(mode, "keepalive")) {
		ret = send_ctrl(id, ms);
		printf("keepalive: %s\n", ret ? "FAIL" : "KEEPALIVE and DISCONNECT delivered");
		rdma_disconnect(id);
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
		rdma_destroy_event_channel(ch);
		freeaddrinfo(ai);
		return ret ? 2 : 0;
	}
	if (got == RDMA_CM_EVENT_ESTABLISHED)
		rdma_disconnect(id);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	freeaddrinfo(ai);
	return ret == 0 ? 0 : got == RDMA_CM_EVENT_ESTABLISHED ? 1 : 2;
}
