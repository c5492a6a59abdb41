/* IB side types seen by the gateway: counters, opaque engine handles.
 * See ib.h for the functions and the threading rules. */
#ifndef IB_IB_T_H
#define IB_IB_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../translate/ip-t.h"
#include "../translate/stream-t.h"

#define IB_DEVICE_MAX 64   /* an RDMA device name, with its terminating NUL */
#define IB_COPY_MIN   4096 /* the least a buffer set holds beyond its receive ring (copy_size) */

struct ib_ctl;	    /* rdma_cm side: control thread */
struct ib_worker;   /* datapath side: one per worker */
struct ib_listener; /* one rsocket listener (listen = ib:PORT) */
struct xlt_stream;

/* The engine's own parameters (the gateway builds them from [ib]). ib_ctl_create copies them: the
 * engine never reads the caller's struct again. */
struct ib_params {
	uint32_t bind;              /* IPv4, network order: listeners' address and active opens'
				     * source; 0: any */
	char device[IB_DEVICE_MAX]; /* open only this RDMA device; "": every one librdmacm sees */
	uint32_t sq_depth;          /* send queue depth: a route's default and ceiling */
	uint32_t rq_depth;          /* receive queue depth (credits given): a route's default; also what a
				     * spare connection object for active opens is sized for */
	uint32_t inline_size;       /* bytes a send may carry inline (0 where the device has none) */
	uint64_t keepalive_ms;      /* idle time before a keepalive write; 0: none */
};

/* What the engine needs of one route: for a listener (every connection it accepts) or for one active
 * open. ib_listen, ib_listener_update and ib_worker_connect copy it into the listener or the
 * connection: a connection keeps the values it started with, whatever a reload does after. */
struct ib_route_params {
	uint32_t rbuf_size;          /* each connection's receive ring, bytes */
	uint32_t sbuf_size;          /* each connection's send window: bytes taken by write/write_lent
				      * and not yet written and completed */
	uint32_t copy_size;          /* 0, or below sbuf_size: the bytes of copies each connection keeps
				      * in flight at most. With ib_ctl_copymem they go into its copy
				      * buffers and the set holds no send ring; else the set holds a ring
				      * of this size beyond the receive ring (at least IB_COPY_MIN, the
				      * control slots in it). 0: a ring of sbuf_size (slots on top). A
				      * connection whose destination lends it registered memory
				      * (write_lent) copies little: lent bytes count against sbuf_size and
				      * take no room in it. */
	uint32_t sq_depth;           /* send queue depth, 0: ib_params.sq_depth; capped at that */
	uint32_t rq_depth;           /* receive queue depth, 0: ib_params.rq_depth (active opens: capped at
				      * it, the spare objects' size) */
	uint64_t connect_timeout_ms; /* active opens: resolution and connect, all told */
};

/* Why a connect request was refused (rdma_reject). */
enum ib_reject {
	IB_REJ_VERSION,	  /* private data of another protocol version */
	IB_REJ_MALFORMED, /* short or malformed private data */
	IB_REJ_ACL,	  /* source not in the route's allow list */
	IB_REJ_LIMIT,	  /* session limits or draining */
	IB_REJ_RESOURCES, /* no memory, queue pair, slot or device for it */
	IB_REJ_COUNT,
};

/* Why a connection failed before it carried data. */
enum ib_fail {
	IB_FAIL_REFUSED,     /* the peer rejected our connect */
	IB_FAIL_TIMEOUT,     /* connect_timeout passed, or rdma_cm gave up waiting for an answer */
	IB_FAIL_UNREACHABLE, /* address or route resolution failed (no route, no device) */
	IB_FAIL_PROTOCOL,    /* the peer's accept carried bad private data */
	IB_FAIL_RESOURCES,   /* local resources (memory, queue pair, device) */
	IB_FAIL_ACCEPT,	     /* accepting failed or the peer vanished before establishment */
	IB_FAIL_HALF_OPEN,   /* accepted, but neither the handshake completed nor a message came within
			      * IB_ACCEPT_NS, or a newer request took its slot while the route or gateway
			      * was full */
	IB_FAIL_COUNT,
};

/* How an established connection ended. */
enum ib_close {
	IB_CLOSE_OK,	   /* both directions closed in order */
	IB_CLOSE_RESET,	   /* the peer disconnected or died with data in flight */
	IB_CLOSE_PROTOCOL, /* the peer broke the protocol */
	IB_CLOSE_ABORTED,  /* aborted by the gateway */
	IB_CLOSE_ERROR,	   /* a completion error (transport retries exhausted, ...) */
	IB_CLOSE_KEEPALIVE, /* a keepalive, or whatever else was in flight, went unacknowledged for
			     * IB_KA_DEAD intervals: the peer is gone, or takes nothing */
	IB_CLOSE_ACCESS,    /* the peer wrote outside what it was given (remote access error) */
	IB_CLOSE_RECLAIMED, /* reset for its copy buffers, which the worker's other connections needed:
			     * its peer had taken no byte for IB_COPY_HOLD_NS (extmem.c) */
	IB_CLOSE_COUNT,
};

/* What an IB peer did wrong (each resets that connection only, as IB_CLOSE_PROTOCOL). */
enum ib_violation {
	IB_VIOL_MESSAGE, /* a message not allowed here: a send, an unknown op or control value, data
			  * after the peer's end of stream */
	IB_VIOL_LENGTH,	 /* the bytes that arrived (byte_len) differ from what the immediate claims */
	IB_VIOL_SPACE,	 /* data beyond the space we advertised, or across the end of the ring */
	IB_VIOL_CREDIT,	 /* data beyond our credits, or a credit edge that goes back or beyond its depth */
	IB_VIOL_ADVERT,	 /* a buffer advert that is empty, oversized or wraps the address space */
	IB_VIOL_COUNT,
};

/* Control thread counters: written by the control thread only. */
struct ib_ctl_stats {
	uint64_t active;   /* gauge: connections that exist (accepted or connecting, not yet freed) */
	uint64_t half_open; /* gauge: accepted, handshake not complete (each holds a session slot) */
	uint64_t accepted;
	uint64_t rejected[IB_REJ_COUNT];
	uint64_t connects;  /* active opens started */
	uint64_t connected; /* active opens established */
	uint64_t failed[IB_FAIL_COUNT];
	uint64_t listeners; /* gauge */
	uint64_t listen_errors;
	uint64_t cm_events;
	uint64_t buf_bytes;	 /* gauge: registered buffer memory */
	uint64_t buf_idle_bytes; /* gauge: of which idle in the pool, ready for the next connection */
	uint64_t buf_regs;	 /* buffer sets registered (ibv_reg_mr); reuse from the pool does not count */
	uint64_t buf_rekeys;	 /* reuses from the pool, each with its receive ring registered anew */
	uint64_t conn_bytes;	 /* gauge: connection state (not buffers) of the connections that exist */
	uint64_t buf_lent;	 /* gauge: buffer sets whose connection is gone, kept for references lent out */
	uint64_t cqs;		 /* gauge: completion queues */
	uint64_t extmem_bytes;	 /* gauge: external memory (Ethernet frames) each buffer set registers */
	uint64_t extmem_regs;	 /* registrations of it (one per range and new buffer set) */
	uint64_t extmem_reg_ns;	 /* time they took */
	uint64_t buf_mem_bytes;  /* gauge: of buf_bytes, sets whose memory came from ib_mem_ops */
	uint64_t devs_removed;	 /* gauge: devices the kernel is removing while ibgwd still holds them */
};

/* Worker counters: written by that worker only. */
struct ib_worker_stats {
	uint64_t conns;	   /* gauge: connections owned */
	uint64_t bytes_rx; /* payload bytes received from IB peers */
	uint64_t bytes_tx;
	uint64_t msgs_rx;  /* data messages */
	uint64_t msgs_tx;
	uint64_t ctrl_rx;  /* credit, advert and control messages */
	uint64_t ctrl_tx;
	uint64_t credit_stalls;	     /* times we had data but no credits or advertised space */
	uint64_t credit_stall_ns;
	uint64_t credit_withheld;    /* times the peer had to wait for credits we held back */
	uint64_t credit_withheld_ns; /* (its bytes waiting in our receive buffer for consumption) */
	uint64_t comp_errors;	     /* completions with an error status (flushes not counted) */
	uint64_t keepalives_tx;
	uint64_t keepalives_rx;
	uint64_t closed[IB_CLOSE_COUNT];
	uint64_t violations[IB_VIOL_COUNT];
	uint64_t copied_tx;	     /* payload bytes copied into send buffers (the write op) */
	uint64_t doorbells;	     /* ibv_post_send calls: each posts one work request or a chain */
	uint64_t lent_tx;	     /* payload bytes written straight from lent memory (no copy) */
	uint64_t lent_late;	     /* lent holds whose writes did not complete in time: put after the
				      * queue pair was destroyed (control thread) */
	uint64_t copy_waits;	     /* copies that found no copy buffer (ib_copy_ops) and waited */
	uint64_t stale_wcs;	     /* completions of connections handed back already (dropped) */
};

/* Where the connections of routes with a copy_size copy what they cannot send from where it lies
 * (ib_ctl_copymem), the gateway's: buffers in memory every buffer set registered as external memory
 * (the Ethernet frame pool), so that a set holds no send ring of its own. */
struct ib_copy_ops {
	/* Worker; WARG is the worker's argument given to ib_ctl_create. Fills SEG with a writable buffer
	 * (data; len: its size; hold and hops: one reference, which the engine puts from any thread
	 * once no write of its reads the buffer) and returns 0, or returns -ENOBUFS when the worker's
	 * share of buffers is taken (its connections hold them: the engine may take some back), or
	 * another -errno when none can be given now for other reasons (the memory they come from is
	 * short): the copy then takes nothing and the session tries again. */
	int (*get)(void *warg, struct xlt_seg *seg);
};

/* Where buffer sets' memory comes from (ib_ctl_bufmem), the gateway's: by default each set maps
 * pages of its own. */
struct ib_mem_ops {
	void *arg;
	/* Control thread: LEN bytes, zeroed, page aligned, or NULL when there is none (the set then maps
	 * pages of its own). */
	void *(*alloc)(void *arg, size_t len);
	/* Any thread (the last reference of a set whose engine is gone frees it): gives MEM back. */
	void (*free)(void *arg, void *mem, size_t len);
	/* Flags (XLT_SEG_*) the receive ring's lent segments carry when the set's memory came from here:
	 * what a destination may do with that memory besides reading it. */
	uint32_t seg_flags;
};

#endif
