/* libFuzzer target: arbitrary frames into the Ethernet side's engine (eth_side), on a fresh instance
 * per input (tests/fuzz/fuzz_eth_harness.h: a real mbuf pool on an EAL without hugepages or devices,
 * a fake clock, listeners on 7 (echo) and 9 (discard)).
 *
 * The input is a list of records, each one byte of kind and time step followed by its operands:
 *   0  a raw Ethernet frame (length byte x 6, then the bytes)
 *   1  a raw IPv4 packet behind a correct Ethernet header
 *   2  a raw TCP segment behind correct Ethernet and IPv4 headers, its checksum fixed up
 *   3-5 a TCP segment on one of 8 flows (4 passive: 40000/40001 -> echo, 40002 -> discard, 40003 -> a
 *      closed port; 4 active: the engine's own connects to port 80), with flags, window, options and
 *      payload from the input and seq/ack RELATIVE to what each side sent so far (the harness learns
 *      the engine's sequence numbers from its frames), so handshakes, data, SACK, FIN and RST states
 *      are all reachable without guessing 32-bit numbers
 *   6  a session action (abort, shutdown, stop/resume reading: zero windows, write, release)
 *   7  an active open to the peer's port 80
 * After each record the clock moves by 0 ms to 10 s (the kind byte's top bits) and the engine polls.
 * Checked: no crash or sanitizer report; every frame the engine sends is well-formed with right
 * checksums (eh_check_frame); after the instance is destroyed every mbuf is back in the pool.
 * fuzz-sources: eth_side/stack.c eth_side/arp.c eth_side/ipv4.c eth_side/tcp_conn.c eth_side/tcp_in.c eth_side/tcp_out.c eth_side/tcp_timer.c eth_side/tcp_opt.c eth_side/twheel.c eth_side/buf.c eth_side/siphash.c
 */
#include "tests/fuzz/fuzz_eth_harness.h"

#include "eth_side/tcp_seq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_FLOWS 8

struct flow {
	uint16_t peer_port, gw_port; /* gw_port 0: an active flow not seen yet */
	uint32_t peer_nxt;           /* the peer's next sequence number */
	uint32_t gw_nxt;             /* the engine's, learnt from its frames */
};

static const uint64_t steps_ms[8] = {0, 0, 1, 5, 40, 200, 1000, 10000};

static struct eh h;
static struct flow flows[N_FLOWS];
static uint64_t learnt_upto;

/* Learns the engine's sequence numbers (and active opens' local ports) from the frames it sent. */
static void learn(void)
{
	uint64_t fresh = h.n_sent - learnt_upto;
	unsigned from = fresh >= h.n_kept ? 0 : h.n_kept - (unsigned)fresh;

	learnt_upto = h.n_sent;
	for (unsigned i = from; i < h.n_kept; i++) {
		const struct rte_ether_hdr *e = rte_pktmbuf_mtod(h.kept[i], const struct rte_ether_hdr *);
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(e + 1);
		const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)(ip + 1);
		uint16_t sp, dp;
		uint32_t end;

		if (e->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
		    ip->next_proto_id != IPPROTO_TCP)
			continue;
		sp = rte_be_to_cpu_16(th->src_port);
		dp = rte_be_to_cpu_16(th->dst_port);
		end = rte_be_to_cpu_32(th->sent_seq) + rte_be_to_cpu_16(ip->total_length) - sizeof(*ip) -
		      (th->data_off >> 4) * 4u + !!(th->tcp_flags & RTE_TCP_SYN_FLAG) +
		      !!(th->tcp_flags & RTE_TCP_FIN_FLAG);
		for (unsigned k = 0; k < N_FLOWS; k++) {
			struct flow *f = &flows[k];
			if (f->peer_port != dp)
				continue;
			if (!f->gw_port && (th->tcp_flags & RTE_TCP_SYN_FLAG)) {
				int taken = 0;
				for (unsigned j = 4; j < N_FLOWS; j++)
					taken |= flows[j].gw_port == sp;
				if (taken)
					continue;
				f->gw_port = sp; /* a new active open */
				f->gw_nxt = end;
				break;
			}
			if (f->gw_port != sp)
				continue;
			if ((th->tcp_flags & RTE_TCP_SYN_FLAG) || eth_seq_gt(end, f->gw_nxt))
				f->gw_nxt = end;
			break;
		}
	}
}

static void step(unsigned idx)
{
	h.now_ns += steps_ms[idx & 7] * 1000000ull;
	eh_poll(&h);
	learn();
}

static uint32_t rel(uint16_t v)
{
	if (v == 0x7fff)
		return 1u << 30; /* far outside any window */
	if (v == 0x8000)
		return 1u << 31;
	return (uint32_t)(int32_t)(int16_t)v;
}

static size_t segment(const uint8_t *d, size_t n)
{
	static const uint8_t pattern[1460] = {1, 2, 3, 5, 8, 13, 21, 34};
	uint8_t frame[1600];
	struct flow *f;
	uint32_t seq, ack;
	size_t optlen, len, flen, used = 8;
	uint8_t flags, ob;

	if (n < 8)
		return n;
	f = &flows[d[0] % N_FLOWS];
	flags = d[1];
	seq = f->peer_nxt + rel((uint16_t)(d[2] << 8 | d[3]));
	ack = f->gw_nxt + rel((uint16_t)(d[4] << 8 | d[5]));
	ob = d[6];
	optlen = ob & 0x3f;
	if (optlen > 40)
		optlen = 40;
	if (optlen > n - used)
		optlen = n - used;
	len = (size_t)d[7] * 8;
	if (!f->gw_port)
		return used + optlen; /* an active flow that does not exist yet */
	flen =
	    eh_tcp_frame(frame, f->peer_port, f->gw_port, seq, ack, flags,
	                 (uint16_t)(d[1] & 0x80 ? 0 : 0xffff >> (d[6] >> 6)), d + used, optlen, pattern, len);
	if (ob & 0x80)
		frame[flen - 1] ^= 0x5a; /* a bad checksum (the last byte: payload or option or header) */
	eh_feed(&h, frame, flen);
	if (!(ob & 0x80) && seq == f->peer_nxt)
		f->peer_nxt += (uint32_t)(len > 1460 ? 1460 : len) + !!(flags & RTE_TCP_SYN_FLAG) +
		               !!(flags & RTE_TCP_FIN_FLAG);
	return used + optlen;
}

static size_t session_action(const uint8_t *d, size_t n)
{
	static const uint8_t blob[16384];
	struct eh_session *se;

	if (n < 2)
		return n;
	se = &h.sess[d[0] % EH_SESSIONS];
	if (!se->s)
		return 2;
	switch (d[1] % 6) {
	case 0:
		se->s->ops->abort(se->s);
		break;
	case 1:
		se->s->ops->shutdown(se->s);
		break;
	case 2:
		se->paused = !se->paused;
		if (!se->paused)
			eh_on_readable(se);
		break;
	case 3:
		se->s->ops->write(se->s, blob, (size_t)(d[1] / 6 + 1) * 1024 % sizeof(blob));
		break;
	case 4:
		se->s->ops->release(se->s); /* the session goes away with the stream open */
		se->s = NULL;
		break;
	default:
		eh_on_readable(se);
		break;
	}
	return 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t frame[1600];
	size_t i = 0;

	if (eh_eal_init())
		abort();
	EH_CHECK(eh_start(&h, 4, 16384, 16384) == 0);
	memset(flows, 0, sizeof(flows));
	for (unsigned k = 0; k < 4; k++) {
		flows[k].peer_port = (uint16_t)(40000 + k);
		flows[k].gw_port = k < 2 ? EH_ECHO_PORT : k == 2 ? EH_DISCARD_PORT : 1234;
		flows[k].peer_nxt = 0x10000000u * (k + 1) - 5000; /* some wrap around soon */
	}
	for (unsigned k = 4; k < N_FLOWS; k++) {
		flows[k].peer_port = 80;
		flows[k].peer_nxt = 0xfffff000u + k;
	}
	learnt_upto = h.n_sent;
	while (i < size) {
		uint8_t op = data[i++];
		size_t n = size - i, len;

		switch (op & 7) {
		case 0:
		case 1:
		case 2:
			if (!n)
				break;
			len = (size_t)data[i] * 6;
			i++;
			n--;
			if (len > n)
				len = n;
			if ((op & 7) == 0) {
				eh_feed(&h, data + i, len);
			} else if ((op & 7) == 1) {
				size_t fl =
				    eh_ip_frame(frame, IPPROTO_TCP, NULL, 0, 0); /* just the headers */
				memcpy(frame + RTE_ETHER_HDR_LEN, data + i, len);
				(void)fl;
				eh_feed(&h, frame, RTE_ETHER_HDR_LEN + len);
			} else {
				eh_feed(&h, frame, eh_ip_frame(frame, IPPROTO_TCP, data + i, len, 1));
			}
			i += len;
			break;
		case 3:
		case 4:
		case 5:
			i += segment(data + i, n);
			break;
		case 6:
			i += session_action(data + i, n);
			break;
		default:
			eh_connect(&h, 80);
			break;
		}
		step(op >> 5);
	}
	/* let the timers run out what is left (retries, keepalives, TIME_WAIT), then tear down */
	for (unsigned k = 0; k < 4; k++)
		step(7);
	eh_stop(&h);
	return 0;
}
