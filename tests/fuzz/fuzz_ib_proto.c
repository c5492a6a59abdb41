/* libFuzzer target: what an IB peer controls, as bytes. The first 40 bytes are connect private data;
 * the rest is a stream of 5-byte records: an immediate value (4 bytes, big-endian, as a receive
 * completion carries it) and one byte saying how much the application consumes afterwards. The
 * parser and the receive side's checks must never crash, and whatever they accept must keep the
 * receive state consistent: no byte beyond the advertised space, no message beyond the credits, peek
 * always inside the ring.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ib_rs_params p;
	uint8_t again[IB_RS_PDATA_LEN];
	uint32_t ends[64];
	struct ib_rx rx;
	size_t n = size < IB_RS_PDATA_LEN ? size : IB_RS_PDATA_LEN;
	int ret = ib_rs_params_parse(data, n, &p);

	if (ret == 0) {
		/* what parses must format back to the same fields */
		struct ib_rs_params q;
		ib_rs_params_format(&p, again);
		CHECK(ib_rs_params_parse(again, sizeof(again), &q) == 0);
		CHECK(q.credits == p.credits && q.data_buf.length == p.data_buf.length &&
		      q.target_sgl.addr == p.target_sgl.addr);
	}
	/* ring size and depth from the first bytes, so small rings and wraps get explored */
	ib_rx_init(&rx, 2u * (16 + (n ? data[0] : 0)), (uint16_t)(1 + (n > 1 ? data[1] % 64 : 0)), ends);
	for (size_t i = n; i + 5 <= size; i += 5) {
		uint32_t imm = (uint32_t)data[i] << 24 | (uint32_t)data[i + 1] << 16 | (uint32_t)data[i + 2] << 8 |
			       data[i + 3];
		uint32_t off, val = ib_rs_imm_val(imm);
		unsigned idx;
		enum ib_rx_credit c;

		switch (ib_rs_imm_op(imm)) {
		case IB_RS_OP_DATA:
			if (ib_rx_data(&rx, val))
				return 0; /* the engine resets the connection here */
			break;
		case IB_RS_OP_CTRL:
			if (val == IB_RS_CTRL_SHUTDOWN || val == IB_RS_CTRL_DISCONNECT)
				rx.eof = true;
			break;
		default:
			break;
		}
		CHECK(rx.recvd <= rx.advertised);
		CHECK(rx.consumed <= rx.recvd);
		CHECK(rx.ends_count <= rx.depth);
		CHECK(rx.advertised - rx.consumed <= rx.size);
		n = ib_rx_peek(&rx, &off);
		CHECK(off < rx.size && off + n <= rx.size);
		if (n)
			ib_rx_consume(&rx, data[i + 4] % (n + 1));
		while ((c = ib_rx_credit_due(&rx)) != IB_RX_CREDIT_NONE) {
			uint64_t before = rx.advertised;
			ib_rx_credit_sent(&rx, c == IB_RX_CREDIT_ADVERT, &off, &idx);
			if (c == IB_RX_CREDIT_ADVERT)
				CHECK(off == before % rx.size && (off == 0 || off == rx.half) && idx < 2);
			else
				break;
		}
	}
	return 0;
}
