/* ib_badpeer: a raw librdmacm client that connects with bad rsocket private data.
 *
 *   ib_badpeer [-p PORT] [-t MS] HOST MODE
 *     version   private data of protocol version 2
 *     short     only 8 bytes (version 1, then nothing: the CM pads with zeros)
 *     none      no private data at all
 *     garbage   40 pseudo-random bytes (version byte forced to 1, so the shape checks must catch it)
 *     sgl       version 1 with a target_sgl of 5 entries
 *     depth     version 1, credits 0xFFFF: a receive queue deeper than rsocket's deepest (0xFFFE), past
 *               which a credit edge that moved cannot be told from one that did not
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
 *     connect request with the bad private data of MODE (version, short, none, garbage, sgl or depth, as
 *     above) on a real queue pair; prints "listening", then one line per connection; ends after
 *     COUNT connections are over (default: when killed). Exit 0 when each one was accepted and then
 *     disconnected by the peer.
 *
 * Exit 0 when the connect was REJECTED (what the gateway must do), 1 when it was accepted, 2 on any
 * other outcome (unreachable, timeout, local errors). The queue pair is real, so an accept would be a
 * working connection: the verdict is the gateway's. Mode keepalive: exit 0 when the connection was
 * accepted and both messages were delivered (acknowledged by the gateway's queue pair).
 *
 * Hostile peers on valid connections (a small raw rsocket client: 16 credits, a 256 KiB receive buffer
 * offered whole, the gateway's messages consumed as they come; against an echo route). Exit 0 when
 * the gateway did what it must, 1 when it did not, 2 when the test itself could not run:
 *   stale FILE        connection A learns the gateway's receive buffer and target_sgl (address, rkey)
 *                     and closes; once FILE exists (the test starts a victim meanwhile, which may get
 *                     A's buffers), connection B RDMA-writes 0xEE bytes over that whole ring and
 *                     target_sgl with A's key, 4 KiB at a time (the first as a DATA message, the rest
 *                     as plain writes). Must: B's first write fails with a remote access error (0
 *                     bytes delivered)
 *   cross             two connections at once; B writes a 64-byte DATA message into A's receive
 *                     buffer with A's key. Must: remote access error on B; A's 4 KiB echo afterwards
 *                     intact
 *   claim             connection T writes 64 KiB of a marker ("TENANT-SECRET-...") and reads its echo,
 *                     closes; connection C then sends a zero-length DATA message claiming 64 KiB. Must:
 *                     no marker byte of T ever comes back to C (C may get nothing, or zeros)
 *   absurd credits|sgl|keepalives  an SGL message granting 40000 credits (16 at most are possible), a
 *                     buffer advert of length 0xFFFFFFF0 at address 0, or keepalives back to back (10 s
 *                     at most). Must: the gateway resets the connection (within 5 s of the last)
 *   absurd sgls|shutdowns|zeroes  other messages that cost their sender nothing, back to back as the
 *                     keepalives: credit updates repeating the edge already granted (no advert), CTRL
 *                     SHUTDOWN again and again (after 17 one-byte messages to the echo, the last of
 *                     which it cannot send back for want of credits, so the connection stays open
 *                     after our end of stream), zero-length DATA messages (each within the credits the
 *                     gateway granted: they come back at once). Must: reset as the keepalives; prints
 *                     "reset after S s" (from the first of them)
 *   absurd wrap       private data granting the gateway 0xFFFE credits (rsocket's deepest queue), then
 *                     credit updates moving the edge 2 further each, back to back: each looks forward in
 *                     16-bit arithmetic, yet with nothing of the gateway's consumed the edge can only
 *                     stay where it is. Must: reset as above (a credit violation)
 *   absurd adverts    buffer adverts (SGL messages with a 16-byte sge of our receive buffer) back to back,
 *                     repeating the edge already granted: a stock rsocket advertises once at the start,
 *                     then once per half of its ring the gateway filled, and this sends nothing. Must:
 *                     reset as the other costless floods
 *   postclose FILE    to a route whose destination keeps the session open after the IB side ends (a TCP
 *                     server that never closes): prints "open", waits for FILE, sends CTRL DISCONNECT (an
 *                     orderly end both ways: the gateway closes its end, the session holds the stream
 *                     for its TCP side), then keepalives back to back as above. Must: the gateway stops
 *                     taking them (no receive reposted: our writes wait in RNR) within 10 s; prints
 *                     "stopped after N" (N: messages it took) and the credits it granted
 *   halfopen N SECS   N connect requests with valid private data whose accept is never answered (no
 *                     RTU: librdmacm does not own the queue pair); at most 32 in flight; then holds
 *                     them SECS seconds. Prints accepted/rejected/expired (REJ after an accept) counts;
 *                     exit 0 unless it could not run
 *   datafirst SECS    valid private data, a queue pair of our own (as halfopen) moved to RTR and RTS on
 *                     the gateway's accept, but no RTU: rdma_cm at the gateway never hears the handshake
 *                     end, yet data flows; SECS seconds of 64-byte echoes (4 a second, each checked,
 *                     each followed by a credit update), then a CTRL DISCONNECT. Must: the connection
 *                     works throughout (a message establishes it: it is no half-open one to drop at
 *                     the handshake deadline)
 *   rnr SECS          a connection that posts no receive (the gateway's messages wait in RNR for ever,
 *                     as rsocket's rnr_retry says), to a discard route: half the gateway's credits in
 *                     one-byte messages, the rest of its ring's first half, then SHUTDOWN, which
 *                     keeps every control slot of the gateway's busy; then waits SECS seconds at most.
 *                     Must: the gateway ends the connection (keepalive); prints "reset after S s"
 *   churn N           N connections one after another (connect, established, disconnect); prints the
 *                     rate: "churn: N connections in S s, R connects/s"
 *   hold N SECS       N connections at once, idle for SECS seconds (or until SIGUSR1); prints "held N",
 *                     then what the gateway's accept gave the first one held: "credits C ring R" (its
 *                     initial credits, and its receive ring's bytes: twice the first buffer it offered) */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
	} else if (!strcmp(mode, "sgl") || !strcmp(mode, "depth")) {
		bool depth = !strcmp(mode, "depth");
		pd[0] = 1;
		pd[2] = depth ? 0xFF : 0;
		pd[3] = depth ? 0xFF : 16;
		pd[15] = 0x10;	     /* target_sgl.addr */
		pd[23] = depth ? 2 : 5; /* entries */
		pd[31] = 0x20;	     /* data_buf.addr */
		pd[38] = 0x01;	     /* data_buf.length 256 */
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

/* ---- a small raw rsocket client, for the hostile modes ---- */

#define RC_RBUF	   (256 * 1024) /* our receive buffer, offered whole in the private data */
#define RC_SEND	   (64 * 1024)	/* staging area for what we write */
#define RC_CREDITS 16
#define RC_MEM	   (64 + RC_RBUF + RC_SEND)
#define IMM(op, v) htonl((uint32_t)(op) << 29 | (v))

static int rc_recvs = RC_CREDITS + 8; /* receives rc_open posts (mode rnr: none) */
static uint16_t rc_credits = RC_CREDITS; /* credits our private data grants (absurd wrap: 0xFFFE) */

struct rc {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;     /* librdmacm's (id->qp), or our own (mode datafirst) */
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *mem;	       /* [0, 32): our target_sgl; [64, 64 + RC_RBUF): receive buffer; then sends */
	uint64_t buf_addr;     /* the gateway's data_buf: first half of its receive ring */
	uint32_t buf_key, buf_len;
	uint64_t sgl_addr;     /* the gateway's target_sgl */
	uint32_t sgl_key;
	uint16_t credits;      /* the gateway's initial credits */
	uint16_t edge;	       /* the gateway's credit edge: its initial credits, then its SGL messages' */
	uint16_t sent;	       /* DATA messages we sent (counted by the modes that track credits) */
	uint64_t rx;	       /* DATA bytes the gateway wrote into our buffer */
	uint16_t rx_msgs;      /* ... in how many messages */
	int ctrl;	       /* last CTRL value received, -1: none */
	bool gone;	       /* rdma_cm DISCONNECTED, or a completion error */
	int send_status;       /* status of the last send completion, -1: none yet */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint8_t *rc_rbuf(struct rc *r)
{
	return r->mem + 64;
}

static uint8_t *rc_sbuf(struct rc *r)
{
	return r->mem + 64 + RC_RBUF;
}

/* Handles every completion and rdma_cm event there is now. */
static void rc_poll(struct rc *r)
{
	struct rdma_cm_event *ev;
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(r->cq, 16, wc)) > 0)
		for (int i = 0; i < n; i++) {
			if (wc[i].wr_id != 9) { /* a send of ours (opcode is undefined on errors) */
				r->send_status = wc[i].status;
				if (wc[i].status != IBV_WC_SUCCESS)
					r->gone = true;
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS) {
				r->gone = true;
				continue;
			}
			struct ibv_recv_wr rw = {.wr_id = 9}, *bad;
			uint32_t imm = ntohl(wc[i].imm_data);
			ibv_post_recv(r->qp, &rw, &bad);
			if (imm >> 29 == 0) {
				r->rx += imm & 0x1FFFFFFF;
				r->rx_msgs++;
			} else if (imm >> 29 == 4)
				r->edge = (uint16_t)imm;
			else if (imm >> 29 == 7 && (imm & 0x1FFFFFFF) != 1)
				r->ctrl = (int)(imm & 0x1FFFFFFF);
		}
	while (!rdma_get_cm_event(r->ch, &ev)) {
		/* (REJECTED and the errors: a connection whose handshake never completed, mode datafirst) */
		if (ev->event == RDMA_CM_EVENT_DISCONNECTED || ev->event == RDMA_CM_EVENT_REJECTED ||
		    ev->event == RDMA_CM_EVENT_CONNECT_ERROR || ev->event == RDMA_CM_EVENT_UNREACHABLE)
			r->gone = true;
		rdma_ack_cm_event(ev);
	}
}

/* Polls until DONE(R) or MS milliseconds passed. */
static bool rc_wait(struct rc *r, int ms, bool (*done)(struct rc *r, uint64_t arg), uint64_t arg)
{
	double end = now_s() + ms / 1000.0;

	do {
		rc_poll(r);
		if (done(r, arg))
			return true;
		usleep(500);
	} while (now_s() < end);
	return false;
}

static bool rx_at_least(struct rc *r, uint64_t n)
{
	return r->rx >= n || r->gone;
}

static bool is_gone(struct rc *r, uint64_t unused)
{
	(void)unused;
	return r->gone || r->ctrl == 0;
}

static bool send_done(struct rc *r, uint64_t unused)
{
	(void)unused;
	return r->send_status >= 0;
}

static int rc_event(struct rc *r, enum rdma_cm_event_type want, int ms)
{
	struct pollfd pf = {.fd = r->ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type got;

	if (poll(&pf, 1, ms) <= 0 || rdma_get_cm_event(r->ch, &ev))
		return -1;
	got = ev->event;
	if ((got == RDMA_CM_EVENT_ESTABLISHED || got == RDMA_CM_EVENT_CONNECT_RESPONSE) &&
	    ev->param.conn.private_data && ev->param.conn.private_data_len >= 40) {
		const uint8_t *pd = ev->param.conn.private_data;
		r->credits = r->edge = (uint16_t)get_be(pd + 2, 2);
		r->sgl_addr = get_be(pd + 8, 8);
		r->sgl_key = (uint32_t)get_be(pd + 16, 4);
		r->buf_addr = get_be(pd + 24, 8);
		r->buf_key = (uint32_t)get_be(pd + 32, 4);
		r->buf_len = (uint32_t)get_be(pd + 36, 4);
	}
	rdma_ack_cm_event(ev);
	return got == want ? 0 : -1;
}

static void rc_close(struct rc *r)
{
	if (r->id) {
		rdma_disconnect(r->id);
		if (r->id->qp)
			rdma_destroy_qp(r->id);
	}
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->id)
		rdma_destroy_id(r->id);
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
	free(r->mem);
	memset(r, 0, sizeof(*r));
}

/* An established rsocket connection to HOST:PORT (valid private data). 0, or -1 with a message. */
static int rc_open(struct rc *r, const char *host, const char *port, int ms)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	struct rdma_conn_param param = {.flow_control = 1, .retry_count = 7, .rnr_retry_count = 7};
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 16, .max_recv_wr = RC_CREDITS + 8, .max_send_sge = 1,
					      .max_recv_sge = 1}};
	struct ibv_recv_wr rw = {.wr_id = 9}, *bad;
	uint8_t pd[40] = {0};

	memset(r, 0, sizeof(*r));
	r->ctrl = -1;
	r->send_status = -1;
	if (getaddrinfo(host, port, &hints, &ai))
		return -1;
	r->ch = rdma_create_event_channel();
	if (!r->ch || rdma_create_id(r->ch, &r->id, NULL, RDMA_PS_TCP))
		goto err;
	if (rdma_resolve_addr(r->id, NULL, ai->ai_addr, ms) || rc_event(r, RDMA_CM_EVENT_ADDR_RESOLVED, ms) ||
	    rdma_resolve_route(r->id, ms) || rc_event(r, RDMA_CM_EVENT_ROUTE_RESOLVED, ms))
		goto err;
	r->cq = ibv_create_cq(r->id->verbs, 64, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = r->cq;
	r->mem = aligned_alloc(4096, RC_MEM);
	if (!r->cq || !r->mem || rdma_create_qp(r->id, NULL, &qa))
		goto err;
	memset(r->mem, 0, RC_MEM);
	r->mr = ibv_reg_mr(r->id->pd, r->mem, RC_MEM, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!r->mr)
		goto err;
	r->qp = r->id->qp;
	for (int i = 0; i < rc_recvs; i++)
		if (ibv_post_recv(r->qp, &rw, &bad))
			goto err;
	pd[0] = 1;
	pd[2] = (uint8_t)(rc_credits >> 8);
	pd[3] = (uint8_t)rc_credits;
	put_sge(pd + 8, (uintptr_t)r->mem, r->mr->rkey, 2);
	put_sge(pd + 24, (uintptr_t)rc_rbuf(r), r->mr->rkey, RC_RBUF);
	param.private_data = pd;
	param.private_data_len = sizeof(pd);
	if (rdma_connect(r->id, &param) || rc_event(r, RDMA_CM_EVENT_ESTABLISHED, ms))
		goto err;
	fcntl(r->ch->fd, F_SETFL, fcntl(r->ch->fd, F_GETFL) | O_NONBLOCK);
	freeaddrinfo(ai);
	return 0;
err:
	fprintf(stderr, "ib_badpeer: cannot open a connection to %s:%s (%s)\n", host, port, strerror(errno));
	freeaddrinfo(ai);
	rc_close(r);
	return -1;
}

/* Posts one write of LEN bytes from our send area at OFF (OPCODE, IMM in network order) to RADDR/RKEY
 * and waits (MS) for its completion. Returns its status, or -1 when none came. */
static int rc_write(struct rc *r, enum ibv_wr_opcode opcode, uint32_t imm, uint64_t raddr, uint32_t rkey,
		    uint32_t off, uint32_t len, int ms)
{
	struct ibv_sge sge = {.addr = (uintptr_t)(rc_sbuf(r) + off), .length = len, .lkey = r->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1, .opcode = opcode, .send_flags = IBV_SEND_SIGNALED, .sg_list = &sge,
				 .num_sge = len ? 1 : 0, .imm_data = imm}, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	r->send_status = -1;
	if (ibv_post_send(r->qp, &wr, &bad))
		return -1;
	rc_wait(r, ms, send_done, 0);
	return r->send_status;
}

static const char *st_str(int st)
{
	return st < 0 ? "no completion" : ibv_wc_status_str((enum ibv_wc_status)st);
}

static int mode_stale(const char *host, const char *port, const char *file, int ms)
{
	struct rc a, b;
	uint64_t addr, sgl;
	uint32_t key, sgl_key, ring, delivered = 0;
	int st = -1;

	if (rc_open(&a, host, port, ms))
		return 2;
	addr = a.buf_addr, key = a.buf_key, ring = 2 * a.buf_len, sgl = a.sgl_addr, sgl_key = a.sgl_key;
	rc_close(&a);
	printf("stale: connection A closed (its ring %#llx, %u bytes, key %#x; target_sgl %#llx key %#x)\n",
	       (unsigned long long)addr, ring, key, (unsigned long long)sgl, sgl_key);
	fflush(stdout);
	for (int i = 0; i < 1200 && access(file, F_OK); i++)
		usleep(100000);
	if (access(file, F_OK) || rc_open(&b, host, port, ms))
		return 2;
	memset(rc_sbuf(&b), 0xEE, RC_SEND);
	for (uint32_t off = 0; off < ring; off += 4096) {
		/* the first one as a DATA message (its receive completion tells the gateway), the rest
		 * as plain writes, which only the writer's own queue pair hears about */
		st = rc_write(&b, off ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_WRITE_WITH_IMM, IMM(0, 4096), addr + off, key, 0,
			      4096, ms);
		if (st != IBV_WC_SUCCESS)
			break;
		delivered += 4096;
	}
	if (st == IBV_WC_SUCCESS && (st = rc_write(&b, IBV_WR_RDMA_WRITE, 0, sgl, sgl_key, 0, 32, ms)) == IBV_WC_SUCCESS)
		delivered += 32;
	printf("stale: B wrote with A's key: %u bytes delivered, then %s\n", delivered, st_str(st));
	rc_close(&b);
	return delivered == 0 && st == IBV_WC_REM_ACCESS_ERR ? 0 : st >= 0 ? 1 : 2;
}

/* Sends LEN bytes of a pattern on R as one DATA message and waits for the echo; 0 when it came back
 * intact. */
static int echo_check(struct rc *r, uint32_t len, uint8_t seed, int ms)
{
	uint64_t before = r->rx;
	int st;

	for (uint32_t i = 0; i < len; i++)
		rc_sbuf(r)[i] = (uint8_t)(seed + i * 7);
	st = rc_write(r, IBV_WR_RDMA_WRITE_WITH_IMM, IMM(0, len), r->buf_addr, r->buf_key, 0, len, ms);
	if (st != IBV_WC_SUCCESS || !rc_wait(r, ms, rx_at_least, before + len) || r->rx != before + len)
		return -1;
	return memcmp(rc_rbuf(r) + before, rc_sbuf(r), len) ? -1 : 0;
}

static int mode_cross(const char *host, const char *port, int ms)
{
	struct rc a, b;
	int st, intact;

	if (rc_open(&a, host, port, ms))
		return 2;
	if (rc_open(&b, host, port, ms))
		return 2;
	memset(rc_sbuf(&b), 0xEE, 64);
	st = rc_write(&b, IBV_WR_RDMA_WRITE_WITH_IMM, IMM(0, 64), a.buf_addr, a.buf_key, 0, 64, ms);
	intact = !echo_check(&a, 4096, 3, ms);
	printf("cross: B wrote 64 bytes into A's receive buffer with A's key: %s; A's 4096-byte echo %s\n",
	       st_str(st), intact ? "intact" : "FAILED");
	rc_close(&b);
	rc_close(&a);
	return st == IBV_WC_REM_ACCESS_ERR && intact ? 0 : st >= 0 ? 1 : 2;
}

static int mode_claim(const char *host, const char *port, int ms)
{
	static const char mark[] = "TENANT-SECRET-";
	struct rc t, c;
	uint32_t marks = 0;
	int st;

	if (rc_open(&t, host, port, ms))
		return 2;
	for (uint32_t i = 0; i < 65536; i += 32)
		snprintf((char *)rc_sbuf(&t) + i, 32, "%s%016x", mark, i);
	st = rc_write(&t, IBV_WR_RDMA_WRITE_WITH_IMM, IMM(0, 65536), t.buf_addr, t.buf_key, 0, 65536, ms);
	if (st != IBV_WC_SUCCESS || !rc_wait(&t, ms, rx_at_least, 65536) ||
	    memcmp(rc_rbuf(&t), rc_sbuf(&t), 65536)) {
		printf("claim: the tenant's 64 KiB were not echoed intact (%s, %llu bytes)\n", st_str(st),
		       (unsigned long long)t.rx);
		return 2;
	}
	rc_close(&t);
	printf("claim: tenant T wrote 64 KiB of markers, got them back, closed\n");
	fflush(stdout);
	sleep(1); /* the gateway frees T's connection; its buffers go back to the pool */
	if (rc_open(&c, host, port, ms))
		return 2;
	st = rc_write(&c, IBV_WR_RDMA_WRITE_WITH_IMM, IMM(0, 65536), c.buf_addr, c.buf_key, 0, 0, ms);
	rc_wait(&c, 3000, rx_at_least, 65536);
	for (uint64_t i = 0; i + sizeof(mark) - 1 <= c.rx && i + sizeof(mark) - 1 <= RC_RBUF; i++)
		marks += !memcmp(rc_rbuf(&c) + i, mark, sizeof(mark) - 1);
	printf("claim: C's zero-length write claiming 65536 bytes: %s; %llu bytes came back, %u markers of T's "
	       "among them%s\n",
	       st_str(st), (unsigned long long)c.rx, marks, c.gone ? "; C's connection was reset" : "");
	rc_close(&c);
	return marks ? 1 : 0;
}

static bool sent_or_gone(struct rc *r, uint64_t unused)
{
	(void)unused;
	return r->send_status >= 0 || r->gone;
}

static bool credits_for(struct rc *r, uint64_t n)
{
	return (uint16_t)(r->edge - r->sent) >= n || r->gone;
}

/* Writes with immediate IMM (host order) to ADDR/KEY back to back, 16 to a post with the last signaled
 * (as fast as this emulated device goes), for 10 s at most or until the gateway resets the connection
 * or stops taking them (none completes for 2 s). Each carries LEN bytes of our send area (0: none);
 * each one's immediate value is STEP more than the one before (mod 2^16: credit edges). DATA ones
 * (CREDITS) wait for the gateway's credits. Returns how many went; *SECS: how long it took. */
static unsigned flood(struct rc *x, uint32_t imm, uint16_t step, uint32_t len, uint64_t addr, uint32_t key,
                      bool credits, double *secs)
{
	struct ibv_send_wr wr[16], *bad;
	struct ibv_sge sge = {.addr = (uintptr_t)rc_sbuf(x), .length = len, .lkey = x->mr->lkey};
	double t0 = now_s();
	unsigned n = 0;
	int st = -1;

	memset(wr, 0, sizeof(wr));
	for (unsigned i = 0; i < 16; i++) {
		wr[i].wr_id = 1;
		wr[i].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr[i].sg_list = len ? &sge : NULL;
		wr[i].num_sge = len ? 1 : 0;
		wr[i].wr.rdma.remote_addr = addr;
		wr[i].wr.rdma.rkey = key;
		wr[i].next = i < 15 ? &wr[i + 1] : NULL;
	}
	wr[15].send_flags = IBV_SEND_SIGNALED;
	do {
		if (credits && (!rc_wait(x, 2000, credits_for, 16) || x->gone))
			break;
		for (unsigned i = 0; i < 16; i++)
			wr[i].imm_data =
			    htonl((imm & ~0xFFFFu) | (uint16_t)(imm + (uint32_t)step * (n + i + 1)));
		x->send_status = -1;
		if (ibv_post_send(x->qp, wr, &bad))
			break;
		rc_wait(x, 2000, sent_or_gone, 0); /* (the reset comes as an error or no completion) */
		st = x->send_status;
		n += st == IBV_WC_SUCCESS ? 16 : 0;
		x->sent += credits && st == IBV_WC_SUCCESS ? 16 : 0;
	} while (st == IBV_WC_SUCCESS && !x->gone && now_s() - t0 < 10);
	*secs = now_s() - t0;
	return n;
}

/* Mode absurd shutdowns: the echo keeps the connection open after our end of stream only while it has
 * bytes it cannot send us. 17 one-byte DATA messages, each sent once the one before came back: the
 * gateway may send us 16 (our credits, never renewed), so the last stays with it. 0 when so. */
static int stall_echo(struct rc *x, int ms)
{
	for (uint32_t i = 0; i <= RC_CREDITS; i++) {
		rc_sbuf(x)[i] = (uint8_t)i;
		if (rc_write(x, IBV_WR_RDMA_WRITE_WITH_IMM, IMM(0, 1), x->buf_addr + i, x->buf_key, i, 1, ms))
			return -1; /* (IBV_WC_SUCCESS is 0) */
		if (i < RC_CREDITS && !rc_wait(x, ms, rx_at_least, i + 1))
			return -1;
	}
	rc_wait(x, 300, rx_at_least, RC_CREDITS + 1);
	return x->rx == RC_CREDITS && !x->gone ? 0 : -1;
}

static int mode_absurd(const char *host, const char *port, const char *what, int ms)
{
	struct rc x;
	int st;
	bool reset;

	if (!strcmp(what, "wrap"))
		rc_credits = 0xFFFE; /* rsocket's deepest queue (we post fewer: the echo sends nothing) */
	if (rc_open(&x, host, port, ms))
		return 2;
	rc_wait(&x, 200, is_gone, 0); /* take the gateway's first advert */
	if (!strcmp(what, "keepalives") || !strcmp(what, "sgls") || !strcmp(what, "shutdowns") ||
	    !strcmp(what, "zeroes") || !strcmp(what, "wrap") || !strcmp(what, "adverts")) {
		double secs, t0;
		unsigned n;

		if (!strcmp(what, "shutdowns") && stall_echo(&x, ms)) {
			printf("absurd shutdowns: the echo did not hold a byte back (%llu came back)\n",
			       (unsigned long long)x.rx);
			rc_close(&x);
			return 2;
		}
		t0 = now_s();
		if (!strcmp(what, "keepalives")) /* CTRL, value 1: each costs no credit */
			n = flood(&x, 7u << 29 | 1, 0, 0, x.sgl_addr, x.sgl_key, false, &secs);
		else if (!strcmp(what, "sgls")) /* the edge granted at the start: we consumed nothing since */
			n = flood(&x, 4u << 29 | RC_CREDITS, 0, 0, x.sgl_addr, x.sgl_key, false, &secs);
		else if (!strcmp(what, "wrap")) /* 0xFFFE + 2, + 4, ...: round and round the 16 bits */
			n = flood(&x, 4u << 29 | 0xFFFE, 2, 0, x.sgl_addr, x.sgl_key, false, &secs);
		else if (!strcmp(what, "adverts")) {
			/* the second half of our receive buffer, in the gateway's byte order (the same host),
			 * into entry 1 of its target_sgl, again and again; the edge it had */
			uint64_t a = (uintptr_t)rc_rbuf(&x) + RC_RBUF / 2;
			uint32_t k = x.mr->rkey, len = RC_RBUF / 2;
			memcpy(rc_sbuf(&x), &a, 8);
			memcpy(rc_sbuf(&x) + 8, &k, 4);
			memcpy(rc_sbuf(&x) + 12, &len, 4);
			n = flood(&x, 4u << 29 | RC_CREDITS, 0, 16, x.sgl_addr + 16, x.sgl_key, false, &secs);
		} else if (!strcmp(what, "shutdowns"))
			n = flood(&x, 7u << 29 | 2, 0, 0, x.sgl_addr, x.sgl_key, false, &secs);
		else
			n = flood(&x, 0, 0, 0, x.buf_addr, x.buf_key, true, &secs);
		reset = rc_wait(&x, 5000, is_gone, 0);
		printf("absurd %s: %u sent in %.2f s; the gateway %s", what, n, secs,
		       reset ? "reset the connection" : "kept the connection");
		if (reset)
			printf(": reset after %.2f s", now_s() - t0);
		printf("\n");
		rc_close(&x);
		return reset ? 0 : 1;
	} else if (!strcmp(what, "credits")) {
		/* we consumed nothing and grant 16: an edge of 40000 is impossible */
		st = rc_write(&x, IBV_WR_RDMA_WRITE_WITH_IMM, IMM(4, 40000), x.sgl_addr, x.sgl_key, 0, 0, ms);
	} else {
		/* an advert of the second entry: length 0xFFFFFFF0 at address 0, credit edge unchanged */
		uint64_t z = 0;
		uint32_t k = 0x1234, len = 0xFFFFFFF0;
		memcpy(rc_sbuf(&x), &z, 8);
		memcpy(rc_sbuf(&x) + 8, &k, 4);
		memcpy(rc_sbuf(&x) + 12, &len, 4);
		st = rc_write(&x, IBV_WR_RDMA_WRITE_WITH_IMM, IMM(4, RC_CREDITS), x.sgl_addr + 16, x.sgl_key, 0, 16, ms);
	}
	reset = rc_wait(&x, 5000, is_gone, 0);
	printf("absurd %s: sent (%s); the gateway %s\n", what, st_str(st),
	       reset ? "reset the connection" : "kept the connection");
	rc_close(&x);
	return reset ? 0 : 1;
}

/* Mode postclose: an orderly end both ways (CTRL DISCONNECT) once FILE exists, then keepalives back
 * to back on the connection the gateway closed but a session still holds. 0 when the gateway stopped
 * taking them (or reset the connection) before 10 s; prints how many it took. */
static int mode_postclose(const char *host, const char *port, const char *file, int ms)
{
	double secs, t0;
	unsigned n;
	struct rc x;
	bool stopped;

	if (rc_open(&x, host, port, ms))
		return 2;
	printf("postclose: open, credits %u\n", x.credits);
	fflush(stdout);
	for (int i = 0; i < 1200 && access(file, F_OK); i++)
		usleep(100000);
	if (access(file, F_OK) ||
	    rc_write(&x, IBV_WR_RDMA_WRITE_WITH_IMM, IMM(7, 0), x.sgl_addr, x.sgl_key, 0, 0, ms))
		return 2;
	rc_wait(&x, 1000, is_gone, 0); /* the gateway closes its end (orderly: it sends nothing) */
	if (x.gone) {
		printf("postclose: the gateway hung up at our DISCONNECT (no session holds the stream)\n");
		return 2;
	}
	t0 = now_s();
	n = flood(&x, 7u << 29 | 1, 0, 0, x.sgl_addr, x.sgl_key, false, &secs);
	stopped = secs < 9.5 || x.gone;
	printf("postclose: %u keepalives after our DISCONNECT in %.2f s; the gateway %s", n, secs,
	       stopped ? "stopped taking them" : "took them all");
	if (stopped)
		printf(": stopped after %u (credits %u), %.2f s", n, x.credits, now_s() - t0);
	printf("\n");
	fflush(stdout);
	_exit(stopped ? 0 : 1); /* the kernel tears the connection down (our last writes wait in RNR) */
}

/* Moves QP to STATE with the attributes rdma_cm has for ID (as librdmacm does for its own queue pairs).
 * 0 or -1. */
static int qp_to(struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = {.qp_state = state};
	int mask;

	if (rdma_init_qp_attr(id, &attr, &mask) || ibv_modify_qp(qp, &attr, mask)) {
		fprintf(stderr, "ib_badpeer: queue pair to state %d: %s\n", state, strerror(errno));
		return -1;
	}
	return 0;
}

/* Mode datafirst: a valid rsocket client whose handshake never completes in rdma_cm's eyes (its RTU
 * lost), though the connection works: a queue pair of its own, moved to RTR and RTS on the gateway's
 * accept without the RTU, then SECS seconds of 64-byte echoes, one every quarter second, each
 * checked, and a credit update for each (the gateway's echo takes our credits); then a CTRL
 * DISCONNECT. 0 when every echo came back intact and the gateway never ended the connection. */
static int mode_datafirst(const char *host, const char *port, int secs, int ms)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	struct rdma_conn_param param = {.flow_control = 1, .retry_count = 7, .rnr_retry_count = 7};
	struct ibv_qp_init_attr qa = {
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 16, .max_recv_wr = RC_CREDITS + 8, .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_recv_wr rw = {.wr_id = 9}, *bad;
	struct ibv_pd *pd;
	uint8_t pdata[40] = {0};
	struct rc r;
	unsigned rounds = 0;
	uint32_t sent = 0;
	double t0, end;
	int st = IBV_WC_SUCCESS;
	bool ok = true;

	memset(&r, 0, sizeof(r));
	r.ctrl = -1;
	r.send_status = -1;
	if (getaddrinfo(host, port, &hints, &ai))
		return 2;
	r.ch = rdma_create_event_channel();
	if (!r.ch || rdma_create_id(r.ch, &r.id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(r.id, NULL, ai->ai_addr, ms) || rc_event(&r, RDMA_CM_EVENT_ADDR_RESOLVED, ms) ||
	    rdma_resolve_route(r.id, ms) || rc_event(&r, RDMA_CM_EVENT_ROUTE_RESOLVED, ms)) {
		fprintf(stderr, "ib_badpeer: cannot resolve %s\n", host);
		return 2;
	}
	pd = ibv_alloc_pd(r.id->verbs);
	r.cq = pd ? ibv_create_cq(r.id->verbs, 64, NULL, NULL, 0) : NULL;
	qa.send_cq = qa.recv_cq = r.cq;
	r.qp = r.cq ? ibv_create_qp(pd, &qa) : NULL;
	r.mem = aligned_alloc(4096, RC_MEM);
	if (!r.qp || !r.mem) {
		perror("ib_badpeer: verbs resources");
		return 2;
	}
	memset(r.mem, 0, RC_MEM);
	r.mr = ibv_reg_mr(pd, r.mem, RC_MEM, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!r.mr || qp_to(r.id, r.qp, IBV_QPS_INIT))
		return 2;
	for (int i = 0; i < RC_CREDITS + 8; i++)
		if (ibv_post_recv(r.qp, &rw, &bad))
			return 2;
	pdata[0] = 1;
	pdata[3] = RC_CREDITS;
	put_sge(pdata + 8, (uintptr_t)r.mem, r.mr->rkey, 2);
	put_sge(pdata + 24, (uintptr_t)rc_rbuf(&r), r.mr->rkey, RC_RBUF);
	param.private_data = pdata;
	param.private_data_len = sizeof(pdata);
	param.qp_num = r.qp->qp_num;
	if (rdma_connect(r.id, &param) || rc_event(&r, RDMA_CM_EVENT_CONNECT_RESPONSE, ms)) {
		fprintf(stderr, "ib_badpeer: datafirst: no accept\n");
		return 2;
	}
	/* what librdmacm does on the accept for its own queue pairs (INIT again: the access rights come
	 * with the CM's attributes), less the RTU: rdma_establish is never called */
	if (qp_to(r.id, r.qp, IBV_QPS_INIT) || qp_to(r.id, r.qp, IBV_QPS_RTR) ||
	    qp_to(r.id, r.qp, IBV_QPS_RTS))
		return 2;
	fcntl(r.ch->fd, F_SETFL, fcntl(r.ch->fd, F_GETFL) | O_NONBLOCK);
	printf("datafirst: accepted; queue pair ready, no RTU sent\n");
	fflush(stdout);
	t0 = now_s();
	end = t0 + secs;
	while (ok && now_s() < end && sent + 64 <= r.buf_len) { /* (the first half of its ring only) */
		uint64_t before = r.rx;

		for (uint32_t i = 0; i < 64; i++)
			rc_sbuf(&r)[i] = (uint8_t)(rounds * 31 + i * 7);
		st = rc_write(&r, IBV_WR_RDMA_WRITE_WITH_IMM, IMM(0, 64), r.buf_addr + sent, r.buf_key, 0, 64,
			      5000);
		sent += 64;
		ok = st == IBV_WC_SUCCESS && rc_wait(&r, 5000, rx_at_least, before + 64) && !r.gone &&
		     r.rx == before + 64 && !memcmp(rc_rbuf(&r) + before, rc_sbuf(&r), 64) && r.ctrl < 0;
		/* consumed: the gateway may send as many messages again */
		if (ok)
			st = rc_write(&r, IBV_WR_RDMA_WRITE_WITH_IMM,
				      IMM(4, (uint16_t)(r.rx_msgs + RC_CREDITS)), r.sgl_addr, r.sgl_key, 0, 0,
				      5000);
		ok = ok && st == IBV_WC_SUCCESS;
		rounds += ok;
		for (double t = now_s() + 0.25; ok && now_s() < t;) {
			rc_poll(&r);
			ok = !r.gone && r.ctrl < 0;
			usleep(1000);
		}
	}
	printf("datafirst: %u echoes of 64 bytes in %.1f s, %s\n", rounds, now_s() - t0,
	       ok ? "all intact, the connection kept"
		  : r.gone || r.ctrl >= 0 ? "then the gateway ended the connection" : "then an echo failed");
	if (ok) { /* an orderly end: CTRL DISCONNECT, as rsocket's close; the gateway hangs up then */
		rc_write(&r, IBV_WR_RDMA_WRITE_WITH_IMM, IMM(7, 0), r.sgl_addr, r.sgl_key, 0, 0, 5000);
		rc_wait(&r, 1000, is_gone, 0);
	}
	fflush(stdout);
	freeaddrinfo(ai);
	_exit(ok ? 0 : 1); /* the kernel tears the id and queue pair down */
}

/* Mode rnr: a peer that takes none of the gateway's messages (it posts no receive: each is refused
 * with RNR, retried for ever as rsocket's rnr_retry asks) while it sends: half a receive depth of
 * one-byte DATA messages (the gateway owes a credit update), the rest of the first half of its ring
 * (a buffer advert), then CTRL SHUTDOWN (the route's end of stream comes back): with the advert of
 * the connection's start that makes 4 control messages stuck, all the gateway may have in flight.
 * Then waits SECS seconds at most for the gateway to end the connection. 0 when it did; prints
 * "reset after S s" (from the SHUTDOWN). */
static int mode_rnr(const char *host, const char *port, int secs, int ms)
{
	struct ibv_send_wr wr[16], *bad;
	struct rc x;
	uint32_t half, n;
	double t0;
	bool reset;

	rc_recvs = 0;
	if (rc_open(&x, host, port, ms))
		return 2;
	half = x.buf_len;
	n = x.credits / 2;
	if (n + 2 > x.credits || n >= half || half - n > RC_SEND) {
		printf("rnr: the gateway's ring (%u) or credits (%u) do not fit this test\n", 2 * half,
		       x.credits);
		return 2;
	}
	memset(rc_sbuf(&x), 'r', RC_SEND);
	memset(wr, 0, sizeof(wr));
	for (uint32_t i = 0; i < n; i += 16) {
		struct ibv_sge sge[16];
		unsigned k = n - i < 16 ? n - i : 16;

		for (unsigned j = 0; j < k; j++) {
			sge[j] = (struct ibv_sge){
			    .addr = (uintptr_t)rc_sbuf(&x), .length = 1, .lkey = x.mr->lkey};
			wr[j] = (struct ibv_send_wr){.wr_id = 1, .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
						     .sg_list = &sge[j], .num_sge = 1, .imm_data = IMM(0, 1),
						     .next = j + 1 < k ? &wr[j + 1] : NULL};
			wr[j].wr.rdma.remote_addr = x.buf_addr + i + j;
			wr[j].wr.rdma.rkey = x.buf_key;
		}
		wr[k - 1].send_flags = IBV_SEND_SIGNALED;
		x.send_status = -1;
		if (ibv_post_send(x.qp, wr, &bad) || !rc_wait(&x, ms, sent_or_gone, 0) || x.send_status)
			return 2;
	}
	if (rc_write(&x, IBV_WR_RDMA_WRITE_WITH_IMM, IMM(0, half - n), x.buf_addr + n, x.buf_key, 0, half - n,
		     ms) ||
	    rc_write(&x, IBV_WR_RDMA_WRITE_WITH_IMM, IMM(7, 2), x.sgl_addr, x.sgl_key, 0, 0, ms))
		return 2;
	t0 = now_s();
	printf("rnr: %u one-byte messages, %u bytes, SHUTDOWN sent; no receive posted\n", n, half - n);
	fflush(stdout);
	reset = rc_wait(&x, secs * 1000, is_gone, 0);
	printf("rnr: the gateway %s", reset ? "ended the connection" : "kept the connection");
	if (reset)
		printf(": reset after %.2f s", now_s() - t0);
	printf("\n");
	fflush(stdout);
	_exit(reset ? 0 : 1); /* the kernel tears the connection down */
}

static volatile sig_atomic_t hold_stop;

static void on_usr1(int sig)
{
	(void)sig;
	hold_stop = 1;
}

static int mode_hold(const char *host, const char *port, int n, int secs, int ms)
{
	struct rc *r = calloc((size_t)n, sizeof(*r));
	int ok = 0, first = -1;

	signal(SIGUSR1, on_usr1);
	for (int i = 0; r && i < n; i++)
		if (!rc_open(&r[i], host, port, ms) && ok++ == 0)
			first = i;
	printf("held %d", ok);
	if (first >= 0)
		printf(" credits %u ring %u", r[first].credits, 2 * r[first].buf_len);
	printf("\n");
	fflush(stdout);
	for (int t = 0; t < secs * 10 && !hold_stop; t++)
		usleep(100000);
	for (int i = 0; r && i < n; i++)
		if (r[i].id)
			rc_close(&r[i]);
	free(r);
	return ok == n ? 0 : 1;
}

static int mode_churn(const char *host, const char *port, int n, int ms)
{
	double t0 = now_s(), dt;
	int ok = 0;

	for (int i = 0; i < n; i++) {
		struct rc r;
		if (rc_open(&r, host, port, ms))
			break;
		rc_close(&r);
		ok++;
	}
	dt = now_s() - t0;
	printf("churn: %d connections in %.2f s, %.1f connects/s\n", ok, dt, ok / dt);
	return ok == n ? 0 : 1;
}

/* Mode halfopen: every request on one event channel, a state per id (its index is the context). */
static int mode_halfopen(const char *host, const char *port, int n, int secs, int ms)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	struct ibv_qp_init_attr qa = {.qp_type = IBV_QPT_RC,
				      .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id **ids = calloc((size_t)n, sizeof(*ids));
	uint8_t *state = calloc((size_t)n, 1); /* 0 idle, 1 resolving, 2 connecting, 3 accepted, 4 over */
	static uint8_t mem[64] __attribute__((aligned(64)));
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_mr *mr = NULL;
	int started = 0, inflight = 0, accepted = 0, rejected = 0, expired = 0, errors = 0;
	double end = 0, t0 = now_s();

	if (!ch || !ids || !state || getaddrinfo(host, port, &hints, &ai))
		return 2;
	while (1) {
		struct rdma_cm_event *ev;
		struct pollfd pf = {.fd = ch->fd, .events = POLLIN};

		while (started < n && inflight < 32) {
			if (rdma_create_id(ch, &ids[started], (void *)(uintptr_t)started, RDMA_PS_TCP) ||
			    rdma_resolve_addr(ids[started], NULL, ai->ai_addr, ms)) {
				perror("ib_badpeer: halfopen");
				return 2;
			}
			state[started++] = 1;
			inflight++;
		}
		if (started == n && !inflight && !end)
			end = now_s() + secs;
		if (end && now_s() >= end)
			break;
		if (poll(&pf, 1, 100) <= 0)
			continue;
		if (rdma_get_cm_event(ch, &ev))
			continue;
		int i = (int)(uintptr_t)ev->id->context;
		enum rdma_cm_event_type type = ev->event;
		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_ADDR_RESOLVED) {
			rdma_resolve_route(ids[i], ms);
		} else if (type == RDMA_CM_EVENT_ROUTE_RESOLVED) {
			struct rdma_conn_param param = {.flow_control = 1, .retry_count = 7, .rnr_retry_count = 7};
			uint8_t pdata[40] = {1, 0, 0, 4};
			struct ibv_qp *qp;
			if (!pd) {
				pd = ibv_alloc_pd(ids[i]->verbs);
				cq = pd ? ibv_create_cq(ids[i]->verbs, 8, NULL, NULL, 0) : NULL;
				mr = cq ? ibv_reg_mr(pd, mem, sizeof(mem), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
					: NULL;
				if (!mr)
					return 2;
				qa.send_cq = qa.recv_cq = cq;
			}
			qp = ibv_create_qp(pd, &qa);
			if (!qp) {
				perror("ib_badpeer: ibv_create_qp");
				return 2;
			}
			put_sge(pdata + 8, (uintptr_t)mem, mr->rkey, 2);
			put_sge(pdata + 24, (uintptr_t)mem + 32, mr->rkey, 32);
			param.private_data = pdata;
			param.private_data_len = sizeof(pdata);
			param.qp_num = qp->qp_num;
			if (rdma_connect(ids[i], &param)) {
				errors++;
				state[i] = 4;
				inflight--;
			} else {
				state[i] = 2;
			}
		} else if (type == RDMA_CM_EVENT_CONNECT_RESPONSE) {
			accepted++; /* and never answered: no RTU, no REJ */
			state[i] = 3;
			inflight--;
		} else if (type == RDMA_CM_EVENT_REJECTED) {
			if (state[i] == 3)
				expired++;
			else {
				rejected++;
				inflight--;
			}
			state[i] = 4;
		} else if (state[i] != 4 && state[i] != 3 && type != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			errors++;
			state[i] = 4;
			inflight--;
		}
	}
	printf("halfopen: %d requests in %.1f s: accepted %d (never answered), rejected %d, expired %d "
	       "(rejected after the accept), errors %d\n",
	       n, now_s() - t0 - secs, accepted, rejected, expired, errors);
	fflush(stdout);
	_exit(0); /* the kernel tears the ids and queue pairs down */
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
	if (!strcmp(mode, "stale") && argc - optind == 3)
		return mode_stale(argv[optind], port, argv[optind + 2], ms);
	if (!strcmp(mode, "cross") && argc - optind == 2)
		return mode_cross(argv[optind], port, ms);
	if (!strcmp(mode, "claim") && argc - optind == 2)
		return mode_claim(argv[optind], port, ms);
	if (!strcmp(mode, "absurd") && argc - optind == 3)
		return mode_absurd(argv[optind], port, argv[optind + 2], ms);
	if (!strcmp(mode, "postclose") && argc - optind == 3)
		return mode_postclose(argv[optind], port, argv[optind + 2], ms);
	if (!strcmp(mode, "halfopen") && argc - optind == 4)
		return mode_halfopen(argv[optind], port, atoi(argv[optind + 2]), atoi(argv[optind + 3]), ms);
	if (!strcmp(mode, "rnr") && argc - optind == 3)
		return mode_rnr(argv[optind], port, atoi(argv[optind + 2]), ms);
	if (!strcmp(mode, "datafirst") && argc - optind == 3)
		return mode_datafirst(argv[optind], port, atoi(argv[optind + 2]), ms);
	if (!strcmp(mode, "churn") && argc - optind == 3)
		return mode_churn(argv[optind], port, atoi(argv[optind + 2]), ms);
	if (!strcmp(mode, "hold") && argc - optind == 4)
		return mode_hold(argv[optind], port, atoi(argv[optind + 2]), atoi(argv[optind + 3]), ms);
	if (!strcmp(mode, "serve") && argc - optind == 3)
		return serve(argv[optind], port, argv[optind + 2], count);
	if (argc - optind != 2 || bad_pdata(mode, pd, &param)) {
		fprintf(stderr, "usage: ib_badpeer [-p PORT] [-t MS] HOST "
				"version|short|none|garbage|sgl|depth|keepalive|badkey|unaccept\n"
				"       ib_badpeer [-p PORT] [-t MS] HOST stale FILE|cross|claim|"
				"absurd credits|sgl|keepalives|sgls|shutdowns|zeroes|wrap|adverts|postclose FILE|"
				"halfopen N SECS|datafirst SECS|rnr SECS|churn N|hold N SECS\n"
				"       ib_badpeer [-p PORT] [-n COUNT] HOST serve "
				"version|short|none|garbage|sgl|depth\n");
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
