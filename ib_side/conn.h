/* Internal interface between the control side (cm.c) and the datapath (conn.c) of the IB engine. */
#ifndef IB_CONN_H
#define IB_CONN_H

#include "conn-t.h"

extern const struct xlt_stream_ops ib_conn_ops;

static inline uint64_t ib_wr_id(enum ib_wr_kind kind, const struct ib_conn *c, uint32_t len)
{
	return (uint64_t)kind << IB_WR_KIND_SHIFT | (uint64_t)c->slot << IB_WR_SLOT_SHIFT |
	       (uint64_t)(c->gen & IB_WR_GEN_MASK) << IB_WR_GEN_SHIFT | (len & IB_WR_LEN_MASK);
}

/* Posts N empty receives (they only catch immediate data). Control thread before the hand-over,
 * the worker afterwards. Returns 0 or -errno. */
int ib_conn_post_recvs(struct ib_conn *c, unsigned n);

/* Control thread: sets up the protocol state of C over its buffers (before any receive is posted). */
void ib_conn_proto_init(struct ib_conn *c);

#endif
