/* Internal interface between the control side (cm.c) and the datapath (conn.c) of the IB engine. */
#ifndef IB_CONN_H
#define IB_CONN_H

#include "conn-t.h"
#include "proto.h"
#include "../translate/counter.h"
#include "../translate/ip.h"

extern const struct xlt_stream_ops ib_conn_ops;

static inline uint64_t ib_wr_id(enum ib_wr_kind kind, const struct ib_conn *c, uint32_t len)
{
	return (uint64_t)kind << IB_WR_KIND_SHIFT | (uint64_t)c->slot << IB_WR_SLOT_SHIFT |
	       (uint64_t)(c->gen & IB_WR_GEN_MASK) << IB_WR_GEN_SHIFT | (len & IB_WR_LEN_MASK);
}

/* The send side holds two bounds (extmem.c): the send window (tx: bytes taken and not completed,
 * lent or copied, at most sbuf_size) and the copies (copied bytes not completed: at most the set's
 * send ring, sbuf_size; or copy_size where the set has no ring and copies go into copy buffers).
 * Copies go into the ring in stream order, so the next one lands at ib_copy_queued() modulo the
 * ring. */
static inline uint64_t ib_copy_queued(const struct ib_conn *c)
{
	return c->tx.queued - c->lt_lent;
}

/* Bytes a copying write may take now: room in the send window and for copies (the copy buffers
 * themselves are found by ib_copy_in, which may take fewer). */
static inline uint32_t ib_copy_space(const struct ib_conn *c)
{
	uint32_t area = c->bufs->sbuf_size ? c->bufs->sbuf_size : c->copy_size;
	uint32_t win = ib_tx_space(&c->tx);
	uint32_t room = (uint32_t)(area - (ib_copy_queued(c) - c->cp_done));

	return win < room ? win : room;
}

/* Copies up to N bytes (N <= ib_copy_space) of DATA into the send ring, or into copy buffers where
 * the set has none, and queues them in the window. Returns the count copied: N, or fewer where no
 * copy buffer was given (then the caller waits: the session tries again). */
uint32_t ib_copy_in(struct ib_conn *c, const uint8_t *data, uint32_t n);

/* Posts N empty receives (they only catch immediate data). Control thread before the hand-over,
 * the worker afterwards. Returns 0 or -errno. */
int ib_conn_post_recvs(struct ib_conn *c, unsigned n);

/* Control thread: sets up the protocol state of C over its buffers (before any receive is posted). */
void ib_conn_proto_init(struct ib_conn *c);

/* Worker: resets C (open or still connecting) with ERR, counted as WHY where it was open: tells the
 * peer (CTRL DISCONNECT, posted in the flush phase), posts nothing else; on_closed follows at the
 * end of the round. The stream's abort op, and the worker's own resets of a connection. */
void ib_conn_reset(struct ib_conn *c, int err, enum ib_close why);

/* extmem.c: external memory and lent segments (see there). */
/* Control thread: adds [ADDR, ADDR + LEN) to X. Returns 0, -EINVAL or -ENOSPC (IB_EXTMEM_MAX ranges). */
int ib_extmem_add(struct ib_extmem *x, void *addr, size_t len);
/* Control thread: registers X in B's protection domain (LOCAL_WRITE only), counted in ST. Returns 0
 * or -errno (then B has none of it). */
int ib_extmem_reg(const struct ib_extmem *x, struct ib_bufs *b, struct ib_ctl_stats *st);
void ib_extmem_dereg(struct ib_bufs *b);
/* Worker, the write_lent op's body (C open and writable): takes a prefix of SEGS[N]. */
size_t ib_lent_take(struct ib_conn *c, const struct xlt_seg *segs, unsigned n);
/* Worker: the bytes from tx.posted, MAX at most, that one write can carry in C's send_sge scatter
 * entries (filled into SGE when not NULL, their count in *N_SGE; *N_LENT: of them, lent bytes; the
 * poster adds the rest, the copies, to cp_posted). */
uint32_t ib_lent_walk(struct ib_conn *c, uint32_t max, struct ibv_sge *sge, unsigned *n_sge, uint32_t *n_lent);
/* Worker, after tx.done moved: puts the holds of the lent segments written completely and frees
 * the send ring's room of the copies written completely. */
void ib_lent_done(struct ib_conn *c);
/* Worker: the bytes write_lent took that may be reported sent (a count of them). */
uint64_t ib_lent_reportable(struct ib_conn *c);
/* Worker, C released: must C wait for lent writes in flight (NOW: the round's clock)? */
bool ib_lent_wait(struct ib_conn *c, uint64_t now);
/* Puts every lent hold C still has: its worker, once no posted write can read them any more
 * (ib_lent_wait), or the control thread after destroying C's queue pair (or it never had one): the
 * holds of writes that outlived ib_lent_wait. */
void ib_lent_put_all(struct ib_conn *c);

/* ---- lending (lend.c) ---- */

/* The stream's lend op: the received bytes after SKIP not consumed yet, as segments of the receive
 * ring held by the buffer set (worker). */
unsigned ib_conn_lend(struct xlt_stream *s, size_t skip, struct xlt_seg *segs, unsigned max);

/* Control thread: the set starts serving a connection (its one reference). */
void ib_bufs_lend_init(struct ib_bufs *b);
/* Frees B's memory, registrations and protection domain (the control thread's accounting aside: an
 * orphan has none left). */
void ib_bufs_release(struct ib_bufs *b);
/* Gives B's memory back where it came from (B->mops, or the pages it mapped); any thread. */
void ib_bufs_unmap(struct ib_bufs *b);

/* Control thread: B's connection is destroyed. Returns true when no reference is out (the caller
 * pools or frees B now); else B waits on its device's lent list until the last one is put. */
bool ib_bufs_conn_done(struct ib_bufs *b, struct ib_ctl_stats *st);

/* Control thread: takes DEV's sets whose last reference was put meanwhile (unlinked from its lent
 * list; chained by ret_next), for the caller to pool. */
struct ib_bufs *ib_bufs_take_returned(struct ib_dev *dev, struct ib_ctl_stats *st);

/* Control thread, at ib_ctl_destroy (workers stopped): DEV's sets still referenced become orphans,
 * freed by their last put. */
void ib_bufs_orphan_all(struct ib_dev *dev);

#endif
