/* ib_badpeer: a raw librdmacm client that connects with bad rsocket private data.
 *
 *   ib_badpeer [-p PORT] [-t MS] HOST MODE
 *     version   private data of protocol version 2
 *     short     only 8 bytes (version 1, then nothing: the CM pads with zeros)
 *     none      no private data at all
 *     garbage   40 pseudo-random bytes (version byte forced to 1, so the shape checks must catch it)
 *     sgl       version 1 with a target_sgl of 5 entries
 *
 * Exit 0 when the connect was REJECTED (what the gateway must do), 1 when it was accepted, 2 on any
 * other outcome (unreachable, timeout, local errors). The queue pair is real, so an accept would be a
 * working connection: the verdict is the gateway's. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

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
	rdma_ack_cm_event(ev);
	return *got == want ? 0 : -EPROTO;
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
	int opt, ms = 5000, ret;

	while ((opt = getopt(argc, argv, "p:t:")) != -1) {
		if (opt == 'p')
			port = optarg;
		else if (opt == 't')
			ms = atoi(optarg);
		else
			return 2;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "usage: ib_badpeer [-p PORT] [-t MS] HOST version|short|none|garbage|sgl\n");
		return 2;
	}
	mode = argv[optind + 1];
	if (!strcmp(mode, "version")) {
		pd[0] = 2;
		pd[3] = 16;
		param.private_data = pd, param.private_data_len = 40;
	} else if (!strcmp(mode, "short")) {
		pd[0] = 1;
		pd[3] = 16;
		param.private_data = pd, param.private_data_len = 8;
	} else if (!strcmp(mode, "none")) {
		param.private_data = NULL, param.private_data_len = 0;
	} else if (!strcmp(mode, "garbage")) {
		srandom((unsigned)getpid());
		for (unsigned i = 0; i < sizeof(pd); i++)
			pd[i] = (uint8_t)random();
		pd[0] = 1;
		pd[20] = pd[21] = pd[22] = 0;
		pd[23] = 7; /* never 2 entries */
		param.private_data = pd, param.private_data_len = 40;
	} else if (!strcmp(mode, "sgl")) {
		pd[0] = 1;
		pd[3] = 16;
		pd[15] = 0x10; /* target_sgl.addr */
		pd[23] = 5;    /* 5 entries */
		pd[31] = 0x20; /* data_buf.addr */
		pd[38] = 0x01; /* data_buf.length 256 */
		param.private_data = pd, param.private_data_len = 40;
	} else {
		fprintf(stderr, "ib_badpeer: unknown mode %s\n", mode);
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
	if (rdma_create_qp(id, NULL, &qa)) {
		perror("ib_badpeer: rdma_create_qp");
		return 2;
	}
	if (rdma_connect(id, &param)) {
		perror("ib_badpeer: rdma_connect");
		return 2;
	}
	ret = wait_event(ch, RDMA_CM_EVENT_REJECTED, ms, &got);
	printf("%s: %s\n", mode, ret == -ETIMEDOUT ? "timeout" : rdma_event_str(got));
	if (got == RDMA_CM_EVENT_ESTABLISHED)
		rdma_disconnect(id);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	freeaddrinfo(ai);
	return ret == 0 ? 0 : got == RDMA_CM_EVENT_ESTABLISHED ? 1 : 2;
}
