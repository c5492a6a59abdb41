/* rsocket protocol arithmetic: private data, credit edges, buffer adverts, ring offsets.
 *
 * Design: the two directions of a connection are byte counters over two rings.
 *  - Receive: the peer may write up to `advertised` (the first half of the ring is advertised in the
 *    private data, every later advert adds a half). Consumption frees space; when a whole half is free
 *    it is advertised again, alternating into the peer's target_sgl entries 1, 0, 1, ... Credits count
 *    messages: the edge is consumed messages + depth, so a peer never has more messages outstanding
 *    than we have receive buffers for, and never more bytes than we have ring for.
 *  - Send: bytes wait in our ring between write() and their completion; a write goes out while the
 *    peer's credit edge is ahead and its current target entry has room, at most 64 KiB, never across
 *    the end of a target entry, moving to the other entry when one is used up.
 * Every input from the peer is checked here (ib_rs_recv: what a completion says arrived against
 * what the immediate claims, writes beyond the advertised space or the credits, credit edges beyond
 * the peer's depth; ib_tx_blocked: absurd adverts), so the engine can trust what these return. */
#include <byteswap.h>
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "proto.h"

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return be64toh(v);
}

static uint32_t get_be32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, sizeof(v));
}

static void put_be32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

static void get_sge(const uint8_t *p, struct ib_rs_sge *s)
{
	s->addr = get_be64(p);
	s->key = get_be32(p + 8);
	s->length = get_be32(p + 12);
}

static void put_sge(uint8_t *p, const struct ib_rs_sge *s)
{
	put_be64(p, s->addr);
	put_be32(p + 8, s->key);
	put_be32(p + 12, s->length);
}

int ib_rs_params_parse(const void *buf, size_t len, struct ib_rs_params *p)
{
	const uint8_t *b = buf;

	if (!b || len < 1)
		return -EBADMSG;
	/* the version first: a future peer with a longer layout must hear "version", not "malformed" */
	if (b[0] != IB_RS_VERSION)
		return -EPROTONOSUPPORT;
	if (len < IB_RS_PDATA_LEN)
		return -EBADMSG;
	p->version = b[0];
	p->flags = b[1];
	p->credits = (uint16_t)(b[2] << 8 | b[3]);
	p->iomap_size = b[7];
	get_sge(b + 8, &p->target_sgl);
	get_sge(b + 24, &p->data_buf);
	/* rsocket cycles through exactly IB_RS_SGL_SIZE entries on both ends; anything else would make
	 * our adverts land where the peer does not look */
	if (!p->credits || p->target_sgl.length != IB_RS_SGL_SIZE || !p->target_sgl.addr)
		return -EBADMSG;
	/* rsocket clamps its queues to IB_RS_QP_MAX, and the credit edge arithmetic needs a depth below
	 * 2^16 - 1 to tell an edge that moved from one that did not (ib_tx_credit) */
	if (p->credits > IB_RS_QP_MAX)
		return -EBADMSG;
	if (!p->data_buf.addr || !p->data_buf.length || p->data_buf.length > IB_RS_IMM_MASK)
		return -EBADMSG;
	return 0;
}

void ib_rs_params_format(const struct ib_rs_params *p, void *buf)
{
	uint8_t *b = buf;

	memset(b, 0, IB_RS_PDATA_LEN);
	b[0] = p->version;
	b[1] = p->flags;
	b[2] = (uint8_t)(p->credits >> 8);
	b[3] = (uint8_t)p->credits;
	b[7] = p->iomap_size;
	put_sge(b + 8, &p->target_sgl);
	put_sge(b + 24, &p->data_buf);
}

void ib_rs_sge_encode(void *dst, uint64_t addr, uint32_t key, uint32_t length, bool swap)
{
	struct ib_rs_sge s = {.addr = addr, .key = key, .length = length};

	if (swap) {
		s.addr = bswap_64(s.addr);
		s.key = bswap_32(s.key);
		s.length = bswap_32(s.length);
	}
	memcpy(dst, &s, sizeof(s));
}

/* ---- receive side ---- */

void ib_rx_init(struct ib_rx *rx, uint32_t size, uint16_t depth, uint32_t *ends)
{
	memset(rx, 0, sizeof(*rx));
	rx->size = size;
	rx->half = size / 2;
	rx->depth = depth;
	rx->edge = depth; /* the private data granted DEPTH credits */
	rx->thresh = depth / 2;
	rx->remote_idx = 1; /* entry 0 of the peer's target_sgl holds our first half already */
	rx->advertised = rx->half;
	rx->ends = ends;
}

/* Counts the messages whose bytes are all consumed (zero-length ones as soon as they are reached). */
static void pop_consumed(struct ib_rx *rx)
{
	uint32_t now = (uint32_t)rx->consumed;

	while (rx->ends_count && (int32_t)(rx->ends[rx->ends_head] - now) <= 0) {
		if (++rx->ends_head == rx->depth)
			rx->ends_head = 0;
		rx->ends_count--;
		rx->msgs_consumed++;
	}
}

int ib_rx_data(struct ib_rx *rx, uint32_t len)
{
	uint32_t tail;

	if (rx->eof || rx->msgs_recvd == rx->edge || rx->ends_count >= rx->depth)
		return -EPROTO; /* after its end of stream, or beyond its credits */
	if (len > rx->advertised - rx->recvd || len > rx->size - (uint32_t)(rx->recvd % rx->size))
		return -EPROTO; /* beyond the advertised space or across the end of the ring */
	rx->recvd += len;
	rx->msgs_recvd++;
	tail = rx->ends_head + rx->ends_count;
	if (tail >= rx->depth)
		tail -= rx->depth;
	rx->ends[tail] = (uint32_t)rx->recvd;
	rx->ends_count++;
	pop_consumed(rx);
	return 0;
}

uint32_t ib_rx_peek(const struct ib_rx *rx, uint32_t *off)
{
	uint64_t avail = rx->recvd - rx->consumed;
	uint32_t o = (uint32_t)(rx->consumed % rx->size);

	*off = o;
	if (!avail)
		return 0;
	return avail < rx->size - o ? (uint32_t)avail : rx->size - o;
}

void ib_rx_consume(struct ib_rx *rx, uint32_t n)
{
	uint64_t avail = rx->recvd - rx->consumed;

	rx->consumed += n <= avail ? n : avail;
	pop_consumed(rx);
}

enum ib_rx_credit ib_rx_credit_due(const struct ib_rx *rx)
{
	uint64_t unfree = rx->advertised - rx->consumed; /* advertised and not yet consumed */

	if (rx->size - unfree >= rx->half)
		return IB_RX_CREDIT_ADVERT;
	if (!ib_seq_before(rx->msgs_consumed, rx->thresh))
		return IB_RX_CREDIT_EDGE;
	return IB_RX_CREDIT_NONE;
}

uint16_t ib_rx_credit_sent(struct ib_rx *rx, bool advert, uint32_t *off, unsigned *remote_idx)
{
	rx->thresh = (uint16_t)(rx->msgs_consumed + rx->depth / 2);
	rx->edge = (uint16_t)(rx->msgs_consumed + rx->depth);
	if (advert) {
		*off = (uint32_t)(rx->advertised % rx->size);
		*remote_idx = rx->remote_idx;
		rx->advertised += rx->half;
		rx->remote_idx ^= 1;
	}
	return rx->edge;
}

/* ---- send side ---- */

void ib_tx_init(struct ib_tx *tx, uint32_t size, uint32_t wrs_max, uint16_t edge)
{
	memset(tx, 0, sizeof(*tx));
	tx->size = size;
	tx->max_xfer = IB_RS_MAX_XFER;
	tx->wrs_max = wrs_max;
	tx->edge = edge;
}

uint32_t ib_tx_queue(struct ib_tx *tx, uint32_t n)
{
	uint32_t off = (uint32_t)(tx->queued % tx->size);

	tx->queued += n;
	return off;
}

enum ib_tx_block ib_tx_blocked(struct ib_tx *tx, const volatile struct ib_rs_sge *target)
{
	uint64_t addr;
	uint32_t length, key;

	if (tx->queued == tx->posted)
		return IB_TX_EMPTY;
	if (tx->wrs >= tx->wrs_max)
		return IB_TX_NO_WR;
	if (tx->msgs_sent == tx->edge)
		return IB_TX_NO_CREDIT;
	length = target[tx->target_idx].length;
	addr = target[tx->target_idx].addr;
	key = target[tx->target_idx].key;
	if (!length)
		return IB_TX_NO_TARGET;
	/* The peer writes its adverts into our target_sgl whenever it likes, and we may use one before
	 * its completion tells us it came (as rsocket does): so an advert is checked here, when it is
	 * used. Writes go to the peer's own memory under its own key; this keeps our arithmetic sane. */
	if (length > IB_RS_IMM_MASK || addr + length < addr)
		return IB_TX_BAD_TARGET;
	/* what was checked is what ib_tx_next uses, not a second read of memory the peer writes */
	tx->cur = (struct ib_rs_sge){.addr = addr, .key = key, .length = length};
	return IB_TX_OK;
}

void ib_tx_next(struct ib_tx *tx, volatile struct ib_rs_sge *target, struct ib_tx_write *w)
{
	volatile struct ib_rs_sge *t = &target[tx->target_idx];
	uint64_t pending = tx->queued - tx->posted;
	uint32_t len = pending < tx->max_xfer ? (uint32_t)pending : tx->max_xfer;
	uint32_t room = tx->cur.length;

	if (len > room)
		len = room;
	w->off = (uint32_t)(tx->posted % tx->size);
	w->len = len;
	w->seg0 = len < tx->size - w->off ? len : tx->size - w->off;
	/* rsocket's rule: update the target entry before the data goes, so a late advert from the peer
	 * for the other entry can never be mistaken for this one */
	w->raddr = tx->cur.addr;
	w->rkey = tx->cur.key;
	t->addr = tx->cur.addr + len;
	t->length = room - len;
	if (room == len) {
		tx->target_idx ^= 1;
		tx->exhausted++;
	}
	tx->posted += len;
	tx->msgs_sent++;
	tx->wrs++;
}

void ib_tx_done(struct ib_tx *tx, uint32_t len)
{
	tx->done += len;
	if (tx->wrs)
		tx->wrs--;
}

/* How far EDGE lies ahead of the messages sent (16-bit). */
static uint16_t edge_lead(const struct ib_tx *tx, uint16_t edge)
{
	return (uint16_t)(edge - tx->msgs_sent);
}

/* An edge EDGE is possible only between msgs_sent and msgs_sent + the peer's depth: the peer grants
 * (messages it consumed) + depth, and it cannot have consumed more than we sent. */
static bool edge_ok(const struct ib_tx *tx, uint16_t edge)
{
	return edge_lead(tx, edge) <= (tx->peer_depth ? tx->peer_depth : IB_RS_QP_MAX);
}

int ib_tx_peer(struct ib_tx *tx, uint16_t depth, uint32_t half, uint16_t edge)
{
	tx->peer_depth = depth;
	tx->peer_half = half;
	if (!tx->edge_known) {
		tx->edge = edge;
		tx->edge_known = true;
	}
	return edge_ok(tx, tx->edge) ? 0 : -EPROTO;
}

int ib_tx_credit(struct ib_tx *tx, uint16_t edge)
{
	if (!edge_ok(tx, edge))
		return -EPROTO;
	/* Edges only grow: consumption is never undone. Both edges lie between msgs_sent and msgs_sent
	 * + depth, so their leads over msgs_sent order them exactly, whatever the depth. A signed 16-bit
	 * compare of the edges themselves would not: past a depth of 32767 it calls a legitimate jump
	 * "back", and lets jumps that each look forward wrap the edge round to msgs_sent again, a free
	 * edge update every time that no costless-message window counts (it moved). */
	if (tx->edge_known && edge_lead(tx, edge) < edge_lead(tx, tx->edge))
		return -EPROTO;
	tx->edge = edge;
	tx->edge_known = true;
	return 0;
}

bool ib_tx_advert_earned(const struct ib_tx *tx)
{
	/* rsocket's receiver (and ours) treats its first half as advertised by the private data and
	 * advertises the other half at once; each later advert needs another half free, which only
	 * consuming our bytes frees: advert N comes after (N - 1) halves of them, all posted by us, and
	 * so after N - 1 entries we used up (we write a half's entry to its end before the next). The
	 * entries count too: the half is the peer's word (its private data), and a peer claiming a
	 * one-byte half earned an advert per byte we ever sent it, a flood outside the costless window */
	if (tx->adverts <= 1)
		return true;
	if (!tx->peer_half)
		return false; /* (its private data not seen yet: we posted nothing) */
	return tx->adverts - 1 <= tx->posted / tx->peer_half && tx->adverts - 1 <= tx->exhausted;
}

/* ---- receive completions ---- */

static enum ib_rs_msg violation(enum ib_violation *why, enum ib_violation v)
{
	*why = v;
	return IB_RS_MSG_VIOLATION;
}

static enum ib_rs_msg recv_data(struct ib_rx *rx, uint32_t len, uint32_t byte_len, enum ib_violation *why)
{
	/* byte_len is what really landed: the immediate alone would let a zero-length write claim a
	 * ring full of whatever bytes were there before */
	if (byte_len != len)
		return violation(why, IB_VIOL_LENGTH);
	if (rx->eof)
		return violation(why, IB_VIOL_MESSAGE);
	if (rx->msgs_recvd == rx->edge || rx->ends_count >= rx->depth)
		return violation(why, IB_VIOL_CREDIT);
	if (len > rx->advertised - rx->recvd || len > rx->size - (uint32_t)(rx->recvd % rx->size))
		return violation(why, IB_VIOL_SPACE);
	if (ib_rx_data(rx, len))
		return violation(why, IB_VIOL_SPACE); /* (not reached: the same checks) */
	return IB_RS_MSG_DATA;
}

static enum ib_rs_msg recv_sgl(struct ib_tx *tx, uint32_t val, uint32_t byte_len, enum ib_violation *why)
{
	/* rsocket computes the edge in int and sends up to 17 bits; only the low 16 count */
	uint16_t edge = (uint16_t)val;

	if (byte_len != 0 && byte_len != sizeof(struct ib_rs_sge))
		return violation(why, IB_VIOL_LENGTH);
	if (ib_tx_credit(tx, edge))
		return violation(why, IB_VIOL_CREDIT);
	if (byte_len)
		tx->adverts++;
	return IB_RS_MSG_CREDIT;
}

enum ib_rs_msg ib_rs_recv(struct ib_rx *rx, struct ib_tx *tx, const struct ib_rs_wc *wc,
			  enum ib_violation *why)
{
	uint32_t val = ib_rs_imm_val(wc->imm);

	if (!wc->with_imm)
		return violation(why, IB_VIOL_MESSAGE); /* a send: only iWARP rsockets do that */
	switch (ib_rs_imm_op(wc->imm)) {
	case IB_RS_OP_DATA:
		return recv_data(rx, val, wc->byte_len, why);
	case IB_RS_OP_SGL:
		return recv_sgl(tx, val, wc->byte_len, why);
	case IB_RS_OP_CTRL:
		if (wc->byte_len)
			return violation(why, IB_VIOL_LENGTH);
		if (val == IB_RS_CTRL_KEEPALIVE)
			return IB_RS_MSG_KEEPALIVE;
		if (val != IB_RS_CTRL_SHUTDOWN && val != IB_RS_CTRL_DISCONNECT)
			return violation(why, IB_VIOL_MESSAGE);
		rx->eof = true;
		return val == IB_RS_CTRL_SHUTDOWN ? IB_RS_MSG_SHUTDOWN : IB_RS_MSG_DISCONNECT;
	default:
		/* IOMAP_SGL included: we advertise no iomap, so a peer has nowhere to write one */
		return violation(why, IB_VIOL_MESSAGE);
	}
}
