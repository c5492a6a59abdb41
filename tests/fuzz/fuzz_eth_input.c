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
 *   7  an active open to the peer's port 80 (kind byte bit 3: to its IPv6 address 2001:db8::2, which
 *      neighbour discovery resolves first; kinds 0-2 bring the advertisements and the segments)
 * After each record the clock moves by 0 ms to 10 s (the kind byte's top bits) and the engine polls.
 *
 * Offloads and mbuf chains: an input that starts with 0xf8 has a mode byte next, giving the engine
 * device offloads: bit 0 TX checksum, 1 TSO (with 0), 2 RX checksum, 3 LRO, 4 IPv4 header checksum
 * (with 0), 5 64 KiB connection buffers instead of 16 KiB (TSO frames up to 64 KiB). In any mode,
 * a record of kind 0-5 whose kind byte has bit 3 or 4 set is received as the device says (see
 * eh_feed_rx), described by bytes before its operands:
 *   flags: bits 0-2 how many cuts follow, 3 each segment's data at its buffer's end, 4-5 the L4
 *          checksum flag (UNKNOWN, GOOD, BAD, NONE), 6 RX_LRO, 7 a length tweak byte follows
 *   tso_segsz / 8
 *   [tweak: signed; > 0 that many bytes of padding after the frame, < 0 that many bytes cut off]
 *   cuts: segment boundaries, times 1, 8 or 32 (bits 3-4 of the kind byte: 1, 2, 3)
 * and a segment of kinds 3-5 then carries up to 8160 bytes (the length byte times 32) like a frame
 * LRO merged. So hostile chains reach the engine: a tiny or empty first segment, headers split
 * across segments, IP lengths that disagree with the chain's, checksums flagged good but wrong, a
 * tso_segsz of 0.
 *
 * Checked: no crash or sanitizer report (reads past a segment's data included: eh_feed_rx poisons
 * the rest of each buffer); every frame the engine sends is well-formed with right checksums, or
 * what the device it was told about completes (eh_check_frame); after the instance is destroyed
 * every mbuf is back in the pool.
 * fuzz-sources: eth_side/stack.c eth_side/exception.c eth_side/arp.c eth_side/ipv4.c eth_side/ipv6.c eth_side/tcp_conn.c eth_side/tcp_in.c eth_side/tcp_out.c eth_side/tcp_timer.c eth_side/tcp_opt.c eth_side/twheel.c eth_side/buf.c eth_side/rcvq.c eth_side/siphash.c eth_side/syncookie.c eth_side/sndq.c eth_side/pmtu.c eth_side/cksum.c
 */
#include "tests/fuzz/fuzz_eth_harness.h"

#include "eth_side/tcp_seq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_FLOWS   8
#define MODE_BYTE 0xf8

/* A record's reception (kind byte bits 3-4 set): how the frame is cut and flagged. */
struct rxmode {
	struct eh_rx rx;
	int tweak; /* bytes of padding (> 0) or cut off (< 0) */
};

struct flow {
	uint16_t peer_port, gw_port; /* gw_port 0: an active flow not seen yet */
	uint32_t peer_nxt;           /* the peer's next sequence number */
	uint32_t gw_nxt;             /* the engine's, learnt from its frames */
};

static const uint64_t steps_ms[8] = {0, 0, 1, 5, 40, 200, 1000, 10000};

static struct eh h;
static struct flow flows[N_FLOWS];
static uint8_t frame[EH_FRAME_MAX + 256];
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

/* Feeds LEN bytes of F (room for 255 more) as RM says (NULL: one buffer). */
static void feed(uint8_t *f, size_t len, const struct rxmode *rm)
{
	if (!rm) {
		eh_feed(&h, f, len);
		return;
	}
	if (rm->tweak > 0)
		memset(f + len, 0xee, (size_t)rm->tweak);
	len = rm->tweak < 0 ? (len > (size_t)-rm->tweak ? len - (size_t)-rm->tweak : 0)
	                    : len + (size_t)rm->tweak;
	eh_feed_rx(&h, f, len, &rm->rx);
}

/* Reads a record's reception (struct rxmode) from D (N bytes). Returns the bytes used. */
static size_t rxmode_parse(uint8_t op, const uint8_t *d, size_t n, struct rxmode *rm)
{
	static const uint64_t l4[4] = {RTE_MBUF_F_RX_L4_CKSUM_UNKNOWN, RTE_MBUF_F_RX_L4_CKSUM_GOOD,
	                               RTE_MBUF_F_RX_L4_CKSUM_BAD, RTE_MBUF_F_RX_L4_CKSUM_NONE};
	static const uint32_t scale[4] = {1, 1, 8, 32};
	size_t used = 2;
	uint8_t fl;

	memset(rm, 0, sizeof(*rm));
	if (n < 2)
		return n;
	fl = d[0];
	rm->rx.tight = fl & 0x08;
	rm->rx.ol_flags = l4[(fl >> 4) & 3] | (fl & 0x40 ? RTE_MBUF_F_RX_LRO : 0);
	rm->rx.tso_segsz = (uint16_t)(d[1] * 8);
	if ((fl & 0x80) && used < n)
		rm->tweak = (int8_t)d[used++];
	for (unsigned k = 0; k < (fl & 7u) && used < n; k++)
		rm->rx.cuts[rm->rx.n_cuts++] = d[used++] * scale[(op >> 3) & 3];
	return used;
}

/* A segment on one of the flows (kinds 3-5): up to 1460 payload bytes, or 8160 received as RM says. */
static size_t segment(const uint8_t *d, size_t n, const struct rxmode *rm)
{
	static uint8_t pattern[EH_PAYLOAD_MAX] = {1, 2, 3, 5, 8, 13, 21, 34};
	size_t optlen, len, flen, used = 8, max = rm ? EH_PAYLOAD_MAX : 1460;
	struct flow *f;
	uint32_t seq, ack;
	uint8_t flags, ob;

	if (!pattern[EH_PAYLOAD_MAX - 1])
		for (size_t k = 1460; k < EH_PAYLOAD_MAX; k++)
			pattern[k] = (uint8_t)(k * 7 + 1); /* what LRO merges: bytes whose sums carry */
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
	len = (size_t)d[7] * (rm ? 32 : 8);
	if (len > max)
		len = max;
	if (!f->gw_port)
		return used + optlen; /* an active flow that does not exist yet */
	flen = eh_tcp_frame_big(frame, f->peer_port, f->gw_port, seq, ack, flags,
	                        (uint16_t)(d[1] & 0x80 ? 0 : 0xffff >> (d[6] >> 6)), d + used, optlen,
	                        pattern, len);
	if (ob & 0x80)
		frame[flen - 1] ^= 0x5a; /* a bad checksum (the last byte: payload or option or header) */
	feed(frame, flen, rm);
	if (!(ob & 0x80) && seq == f->peer_nxt && (!rm || rm->tweak == 0))
		f->peer_nxt += (uint32_t)len + !!(flags & RTE_TCP_SYN_FLAG) + !!(flags & RTE_TCP_FIN_FLAG);
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
	unsigned offloads = 0;
	uint32_t bufs = 16384;
	size_t i = 0;

	if (eh_eal_init())
		abort();
	if (size >= 2 && data[0] == MODE_BYTE) {
		uint8_t m = data[1];

		if (m & 1)
			offloads |= ETH_OFFLOAD_TX_CSUM | (m & 2 ? ETH_OFFLOAD_TSO : 0) |
			            (m & 16 ? ETH_OFFLOAD_IP_CSUM : 0);
		offloads |= (m & 4 ? ETH_OFFLOAD_RX_CSUM : 0) | (m & 8 ? ETH_OFFLOAD_LRO : 0);
		bufs = m & 32 ? 65536 : 16384;
		i = 2;
	}
	EH_CHECK(eh_start_ofl(&h, 4, bufs, bufs, offloads) == 0);
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
		struct rxmode rm, *rmp = NULL;

		if ((op & 7) <= 5 && (op & 0x18)) {
			size_t u = rxmode_parse(op, data + i, n, &rm);

			i += u;
			n -= u;
			rmp = &rm;
		}
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
				memcpy(frame, data + i, len);
				feed(frame, len, rmp);
			} else if ((op & 7) == 1) {
				eh_ip_frame(frame, IPPROTO_TCP, NULL, 0, 0); /* just the headers */
				memcpy(frame + RTE_ETHER_HDR_LEN, data + i, len);
				feed(frame, RTE_ETHER_HDR_LEN + len, rmp);
			} else {
				feed(frame, eh_ip_frame(frame, IPPROTO_TCP, data + i, len, 1), rmp);
			}
			i += len;
			break;
		case 3:
		case 4:
		case 5:
			i += segment(data + i, n, rmp);
			break;
		case 6:
			i += session_action(data + i, n);
			break;
		default:
			if (op & 8) {
				struct xlt_ip peer6;

				memcpy(peer6.b, eh_peer_ip6, 16);
				eh_connect_to(&h, &peer6, 80);
			} else {
				eh_connect(&h, 80);
			}
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
