/* libFuzzer target: the completion path of an rsocket connection, as the engine (ib_side/conn.c)
 * drives it, without verbs. The input is a few bytes of set-up (ring sizes, depths, which side we
 * are) and then 8-byte records, each one thing that happens to the connection:
 *   0-3  a receive completion: immediate (4 bytes, big-endian as on the wire) and byte_len (2
 *        bytes; record kind 0 makes it the length the immediate claims, 1 takes it as given, 2
 *        scales it, 3 is a completion without an immediate, i.e. a send)
 *   4    the peer RDMA-writes 16 bytes of its choice into one entry of our target_sgl (which it may
 *        do at any time: it has the key)
 *   5    the session consumes some bytes; the credit messages due go out
 *   6    the session writes some bytes; the data writes allowed now are planned
 *   7    some of our data writes complete, or (odd argument) an error status: the connection
 *        is reset, as on a protocol violation, and the run ends
 * Before the first record an active open learns the peer's depth from its private data (as
 * open_active does) only when the set-up says so, so SGL messages ahead of it are explored.
 * Whatever ib_rs_recv accepts must keep both sides' state consistent; whatever it refuses must leave
 * the state untouched; every write we plan must lie inside the target entry it uses, and an entry
 * that is absurd (oversized, wrapping the address space) is refused before any write uses it.
 * fuzz-sources: ib_side/proto.c
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ib_side/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                                                             \
	do {                                                                                                 \
		if (!(x))                                                                                    \
			abort();                                                                             \
	} while (0)

#define HDR 6
#define REC 8

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void check_rx(const struct ib_rx *rx)
{
	uint32_t off, n = ib_rx_peek(rx, &off);

	CHECK(rx->recvd <= rx->advertised);
	CHECK(rx->consumed <= rx->recvd);
	CHECK(rx->ends_count <= rx->depth);
	CHECK(rx->advertised - rx->consumed <= rx->size);
	CHECK(off < rx->size && off + n <= rx->size);
	/* never more messages outstanding than credits granted */
	CHECK((uint16_t)(rx->msgs_recvd - rx->msgs_consumed) <= rx->depth);
}

static void check_tx(const struct ib_tx *tx)
{
	CHECK(tx->done <= tx->posted && tx->posted <= tx->queued);
	CHECK(tx->queued - tx->done <= tx->size);
	CHECK(tx->wrs <= tx->wrs_max);
	if (tx->peer_depth && tx->edge_known)
		CHECK((uint16_t)(tx->edge - tx->msgs_sent) <= tx->peer_depth);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t ends[256], inflight[64];
	struct ib_rs_sge target[2];
	struct ib_rx rx;
	struct ib_tx tx;
	unsigned head = 0, count = 0;
	uint16_t depth, peer_depth;
	uint32_t peer_half;
	bool active;

	if (size < HDR)
		return 0;
	/* small rings and depths, so that wraps and exhaustion are reached in a few records */
	depth = (uint16_t)(1 + data[1] % 255);
	/* (the deepest queues too: credit edges more than half the 16-bit space ahead) */
	peer_depth = data[3] & 0x80 ? (uint16_t)(IB_RS_QP_MAX - (data[3] & 0x7F)) : (uint16_t)(1 + data[3]);
	active = data[5] & 1;
	ib_rx_init(&rx, 2u * (16 + data[0] * 64u), depth, ends);
	ib_tx_init(&tx, 16 + data[2] * 97u, 1 + data[4] % 64, 0);
	/* the peer's private data: entry 0 of our target_sgl is its first half */
	peer_half = 16 + data[0] * 32u;
	target[0] = (struct ib_rs_sge){.addr = 0x10000, .key = 1, .length = peer_half};
	target[1] = (struct ib_rs_sge){0};
	if (!active) {
		tx.edge = peer_depth; /* what the control thread sets before the hand-over */
		CHECK(ib_tx_peer(&tx, peer_depth, peer_half, peer_depth) == 0);
	} else if (data[5] & 2) {
		CHECK(ib_tx_peer(&tx, peer_depth, peer_half, peer_depth) == 0);
	}
	for (size_t i = HDR; i + REC <= size; i += REC) {
		const uint8_t *r = data + i;
		unsigned kind = r[0] & 7;
		uint32_t imm = be32(r + 1), arg = r[7];
		uint16_t bl = (uint16_t)(r[5] << 8 | r[6]);

		if (active && !tx.peer_depth && (r[0] & 0x80) &&
		    ib_tx_peer(&tx, peer_depth, peer_half, peer_depth))
			return 0; /* the engine resets here: an earlier edge was beyond the depth */
		switch (kind) {
		case 0:
		case 1:
		case 2:
		case 3: {
			struct ib_rs_wc wc = {.with_imm = kind != 3, .imm = imm};
			enum ib_violation why = IB_VIOL_COUNT;
			struct ib_rx rx0 = rx;
			struct ib_tx tx0 = tx;
			enum ib_rs_msg m;

			wc.byte_len = kind == 0 ? ib_rs_imm_val(imm) : kind == 2 ? (uint32_t)bl << 8 : bl;
			if (kind == 0 && ib_rs_imm_op(imm) != IB_RS_OP_DATA)
				wc.byte_len = (r[0] & 0x40) ? sizeof(struct ib_rs_sge) : 0;
			m = ib_rs_recv(&rx, &tx, &wc, &why);
			if (m == IB_RS_MSG_VIOLATION) {
				CHECK(why < IB_VIOL_COUNT);
				CHECK(!memcmp(&rx, &rx0, sizeof(rx)) && !memcmp(&tx, &tx0, sizeof(tx)));
				return 0; /* the engine resets the connection */
			}
			CHECK(wc.with_imm);
			if (m == IB_RS_MSG_DATA) {
				CHECK(wc.byte_len == ib_rs_imm_val(imm));
				CHECK(rx.recvd == rx0.recvd + wc.byte_len);
			} else {
				CHECK(rx.recvd == rx0.recvd);
			}
			if (m == IB_RS_MSG_CREDIT) {
				CHECK(tx.edge == (uint16_t)ib_rs_imm_val(imm));
				/* never back: no nearer to the messages sent than the edge before */
				if (tx0.edge_known)
					CHECK((uint16_t)(tx.edge - tx.msgs_sent) >=
					      (uint16_t)(tx0.edge - tx.msgs_sent));
				CHECK(tx.adverts == tx0.adverts + (wc.byte_len != 0));
			}
			if (m == IB_RS_MSG_SHUTDOWN || m == IB_RS_MSG_DISCONNECT)
				CHECK(rx.eof);
			break;
		}
		case 4:
			target[arg & 1] = (struct ib_rs_sge){.addr = (uint64_t)imm << (r[5] & 31),
			                                     .key = 1,
			                                     .length = (uint32_t)bl << (r[6] & 15)};
			break;
		case 5: {
			uint32_t off, n = ib_rx_peek(&rx, &off);
			enum ib_rx_credit c;
			unsigned idx;

			if (n)
				ib_rx_consume(&rx, (imm % n) + 1);
			while (!rx.eof && (c = ib_rx_credit_due(&rx)) != IB_RX_CREDIT_NONE) {
				uint64_t adv = rx.advertised;
				uint16_t edge = ib_rx_credit_sent(&rx, c == IB_RX_CREDIT_ADVERT, &off, &idx);
				CHECK(edge == (uint16_t)(rx.msgs_consumed + rx.depth));
				if (c != IB_RX_CREDIT_ADVERT)
					break;
				CHECK(off == adv % rx.size && (off == 0 || off == rx.half) && idx < 2);
			}
			break;
		}
		case 6: {
			uint32_t n = imm % (ib_tx_space(&tx) + 1);
			enum ib_tx_block b = IB_TX_OK;

			if (n)
				ib_tx_queue(&tx, n);
			while (count < 64 && (b = ib_tx_blocked(&tx, target)) == IB_TX_OK) {
				unsigned e = tx.target_idx;
				struct ib_rs_sge t = target[e];
				uint64_t pending = tx.queued - tx.posted;
				struct ib_tx_write w;

				ib_tx_next(&tx, target, &w);
				CHECK(w.len <= IB_RS_MAX_XFER && w.len <= pending && w.len <= t.length);
				CHECK(w.len > 0 && w.seg0 <= w.len && w.off < tx.size &&
				      w.off + w.seg0 <= tx.size);
				CHECK(w.raddr == t.addr && w.rkey == t.key);
				CHECK(target[e].length == t.length - w.len);
				CHECK(t.length <= IB_RS_IMM_MASK && t.addr + t.length >= t.addr);
				inflight[(head + count++) % 64] = w.len;
			}
			if (b == IB_TX_BAD_TARGET)
				return 0; /* an absurd advert: the engine resets the connection */
			break;
		}
		case 7:
			if (arg & 1)
				return 0; /* an error status: the connection is reset, nothing more is looked
				             at */
			for (unsigned k = 0; k < (imm & 63) && count; k++) {
				ib_tx_done(&tx, inflight[head]);
				head = (head + 1) % 64;
				count--;
			}
			break;
		}
		check_rx(&rx);
		check_tx(&tx);
	}
	return 0;
}
