/* rsocket wire protocol (version 1) types: private data, immediate data, and the byte-count state of
 * one connection's receive and send sides.
 *
 * The state here is plain arithmetic over counters (no verbs), so the protocol rules can be unit tested
 * and fuzzed without hardware. Counters of bytes are 64-bit totals since the connection started;
 * offsets in a ring are those totals modulo its size. Message counts are 16-bit as on the wire. */
#ifndef IB_PROTO_T_H
#define IB_PROTO_T_H

#include <stdbool.h>
#include <stdint.h>

#include "ib-t.h"

#define IB_RS_VERSION	  1
#define IB_RS_PDATA_LEN	  40	/* private data of the connect request and of the accept */
#define IB_RS_FLAG_NET	  0x01	/* sender is a big-endian host */
#define IB_RS_FLAG_IOMAP  0x02	/* sender supports iomap (we never do) */
#define IB_RS_SGL_SIZE	  2	/* entries of the target_sgl array buffer adverts are written into */
#define IB_RS_CTRL_SLOTS  4	/* send work requests kept for control messages */
#define IB_RS_MAX_XFER	  65536 /* largest data write, as rsocket */
#define IB_RS_QP_MIN	  16
#define IB_RS_QP_MAX	  0xFFFE
#define IB_RS_IMM_MASK	  0x1FFFFFFFu

enum ib_rs_op {
	IB_RS_OP_DATA = 0,
	IB_RS_OP_SGL = 4,	/* credit edge, optionally with a 16-byte sge advert as payload */
	IB_RS_OP_IOMAP_SGL = 6, /* only with iomap: ignored */
	IB_RS_OP_CTRL = 7,
};

enum ib_rs_ctrl {
	IB_RS_CTRL_DISCONNECT = 0,
	IB_RS_CTRL_KEEPALIVE = 1,
	IB_RS_CTRL_SHUTDOWN = 2,
};

/* One scatter entry as rsocket lays it out in memory (16 bytes). In private data its fields are
 * big-endian; written into a peer's target_sgl they are in the receiver's byte order. */
struct ib_rs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

/* The private data of either side, in host byte order. */
struct ib_rs_params {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;	      /* receive queue depth of the sender */
	uint8_t iomap_size;	      /* encoded; we send 0 */
	struct ib_rs_sge target_sgl; /* where the other side writes buffer adverts; length = 2 */
	struct ib_rs_sge data_buf;   /* first half of the sender's receive buffer */
};

/* Receive side: the peer RDMA-writes into our ring buffer of SIZE bytes, in order, into the halves we
 * advertised. Bytes and messages are released by consumption only; credits and adverts follow. */
struct ib_rx {
	uint32_t size;	     /* bytes, even */
	uint32_t half;
	uint16_t depth;	     /* credits we grant: messages received and not consumed, at most */
	uint16_t msgs_recvd; /* data messages received (16-bit, wraps) */
	uint16_t msgs_consumed;
	uint16_t edge;	     /* last credit edge the peer was given */
	uint16_t thresh;     /* consumed-message count that triggers a bare credit update */
	uint8_t remote_idx;  /* entry of the peer's target_sgl the next advert goes to */
	bool eof;	     /* SHUTDOWN or DISCONNECT received: nothing more comes */
	uint64_t recvd;	     /* bytes written by the peer */
	uint64_t consumed;   /* bytes released by the session */
	uint64_t advertised; /* end of the space the peer may write (total bytes) */
	uint32_t *ends;	     /* ring of low 32 bits of recvd at each unconsumed message's end */
	uint32_t ends_head;
	uint32_t ends_count;
};

/* What the receive side owes the peer now. */
enum ib_rx_credit {
	IB_RX_CREDIT_NONE,
	IB_RX_CREDIT_EDGE,   /* a bare SGL message with the new credit edge */
	IB_RX_CREDIT_ADVERT, /* an SGL message carrying a 16-byte advert of the free half */
};

/* One planned data write: SEG0 bytes from sbuf offset OFF, then LEN - SEG0 from offset 0 (wrap). */
struct ib_tx_write {
	uint32_t off;
	uint32_t len;
	uint32_t seg0;
	uint64_t raddr;
	uint32_t rkey;
};

/* Why no data write can be posted now. */
enum ib_tx_block {
	IB_TX_OK,
	IB_TX_EMPTY,	  /* nothing queued */
	IB_TX_NO_WR,	  /* send queue slots for data all in flight */
	IB_TX_NO_CREDIT,  /* messages sent reached the peer's credit edge */
	IB_TX_NO_TARGET,  /* the peer advertised no buffer space */
	IB_TX_BAD_TARGET, /* the peer advertised an absurd buffer (oversized, wrapping) */
};

/* Send side: bytes taken by write() wait in our send ring of SIZE bytes until posted, and occupy it
 * until their write completes. */
struct ib_tx {
	uint32_t size;
	uint32_t max_xfer;
	uint16_t msgs_sent;   /* data messages posted (16-bit) */
	uint16_t edge;	      /* peer's credit edge: send while msgs_sent != edge */
	uint32_t wrs;	      /* data work requests in flight */
	uint32_t wrs_max;
	uint16_t peer_depth;  /* the peer's receive queue depth (its private data): an edge is never
			       * further ahead of msgs_sent; 0 until known */
	bool edge_known;      /* edge came from the peer (private data or an SGL message) */
	uint32_t peer_half;   /* the peer's data_buf length (its private data): half its ring, what each
			       * of its adverts gives; 0 until known */
	uint64_t adverts;     /* buffer adverts received (SGL messages with a payload) */
	uint64_t exhausted;   /* target entries our writes used up: each frees the peer to advertise one
			       * again once it consumed it */
	uint8_t target_idx;   /* entry of our target_sgl the next write uses */
	struct ib_rs_sge cur; /* that entry as ib_tx_blocked read and checked it, for ib_tx_next: the peer
			       * may write the entry again in between */
	uint64_t queued;      /* bytes taken */
	uint64_t posted;      /* bytes posted */
	uint64_t done;	      /* bytes completed */
};

/* One successful receive completion, as the verbs report it (host byte order). */
struct ib_rs_wc {
	bool with_imm;     /* IBV_WC_WITH_IMM: an RDMA write with immediate */
	uint32_t imm;      /* the immediate, host order */
	uint32_t byte_len; /* bytes the peer's write carried */
};

/* What a receive completion meant (ib_rs_recv). */
enum ib_rs_msg {
	IB_RS_MSG_DATA,       /* byte_len bytes landed in the receive ring */
	IB_RS_MSG_CREDIT,     /* a new credit edge, maybe with a buffer advert */
	IB_RS_MSG_KEEPALIVE,  /* a CTRL KEEPALIVE (rsocket sends plain writes instead) */
	IB_RS_MSG_SHUTDOWN,   /* the peer sends nothing more */
	IB_RS_MSG_DISCONNECT, /* ... and reads nothing more */
	IB_RS_MSG_VIOLATION,  /* the peer broke the protocol: reset the connection */
};

#endif
