/* Streams: the one interface through which a session moves bytes, whatever carries them.
 *
 * A stream is one end of a session: an rsocket connection (ib_side), a TCP connection (eth_side), or a
 * diagnostic end (echo/discard, translate). All of a session's streams live on one worker and are only
 * ever touched by that worker's thread, so nothing here is locked.
 *
 * Backpressure is the contract itself:
 *  - received bytes stay in the stream's own receive buffer until the session calls consume(): only
 *    then does TCP re-open its window, or rsocket return credits and re-advertise buffer space;
 *  - write() accepts only what fits the stream's bounded send buffer (TCP: unacknowledged + queued;
 *    rsocket: send buffer and the peer's credits and advertised space) and returns how much it took.
 * A session therefore holds at most the buffers its streams were configured with, never more.
 *
 * Ops only queue: what they leave for the peer (bytes, credits, end of stream, a reset) goes to the
 * device in the worker's flush phase, after every session of the round has moved its bytes
 * (gateway/worker.c), never from inside the op. So the writes of a round leave together (one TCP
 * frame or RDMA write for many write() calls) and the ops' cost does not depend on the device.
 *
 * Events flow up through struct xlt_stream_events, which the session installs (s->ev).
 * An implementation may call them from its relay phase only (never from inside an op), so a session
 * never re-enters itself. on_closed is the last event of a stream: the session may call release()
 * from inside it, so the implementation must not touch the stream after calling on_closed. */
#ifndef XLT_STREAM_T_H
#define XLT_STREAM_T_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ip-t.h"

struct xlt_stream;

/* What an engine knows of one of its connections, for the access log (xlt_stream_ops.info). Fields an
 * engine does not know stay 0. */
enum xlt_stream_kind {
	XLT_STREAM_OTHER,
	XLT_STREAM_TCP,
	XLT_STREAM_IB,
};

struct xlt_stream_info {
	uint8_t kind;             /* enum xlt_stream_kind */
	uint8_t has_gid;          /* gid and qpn are the peer's (IB, once established) */
	uint8_t peer_ended;       /* the peer ended its stream (TCP FIN, rsocket SHUTDOWN or DISCONNECT),
	                           * whether its bytes were read or not */
	uint8_t gid[16];          /* the peer's port GID, as on the wire */
	uint32_t qpn;             /* the peer's queue pair number */
	uint32_t retransmits;     /* TCP: segments sent again */
	uint32_t srtt_us;         /* TCP: smoothed round-trip time (0: no sample yet) */
	uint32_t credit_stalls;   /* IB: times data waited for the peer's credits or buffer space */
	uint64_t credit_stall_ns; /* IB: how long in all (an episode under way included) */
	uint64_t rcvd;            /* bytes the peer sent that arrived, whether read or not (a reset may
	                           * have thrown away what came just before it) */
};

/* ---- Lending: moving bytes without copying them ----
 * A source that implements lend() describes bytes it holds as segments of memory that stays valid
 * while someone holds a reference to it (hold/hops). A destination that implements write_lent()
 * takes a prefix of them: by reference where it can send straight from that memory (TCP: frames with
 * the memory attached as an external buffer; rsocket: RDMA writes from memory its protection domain
 * has registered), else by copying. When it is done with bytes it took (the TCP peer ACKed them, the
 * RDMA write completed, or it copied them), it reports them, oldest first, through ev.on_sent; the
 * session then consume()s them at the source, which only then releases their space (TCP window,
 * rsocket credits). Backpressure is therefore as strict as with copies: bytes in flight count
 * against the source's buffer until they are delivered.
 * References outlive streams: a destination that takes one calls hops->get and, when done (or
 * aborted, or released), hops->put; the lender keeps the memory until its last reference is put, even
 * after its stream was released. */
struct xlt_hold_ops {
	void (*get)(void *hold);
	void (*put)(void *hold);
};

/* What a destination may do with a segment's memory besides reading it (flags). */
#define XLT_SEG_EXTMEM                                                                                       \
	0x1u /* DATA lies in memory the gateway registered with the IB side as external                      \
	      * memory (ib_side finds its local key in the connection's PD) */
#define XLT_SEG_DEVMEM                                                                                       \
	0x2u /* DATA lies in DPDK's own memory (its heap): a port that reaches only that memory              \
	      * (virtio_user: vhost's memory table) may send frames pointing at it */

struct xlt_seg {
	const uint8_t *data;
	uint32_t len;
	uint32_t flags; /* XLT_SEG_* */
	void *hold;     /* keeps DATA valid while referenced (NULL: only until the op returns) */
	const struct xlt_hold_ops *hops; /* get/put on HOLD */
};

/* Most segments one lend()/write_lent() call carries (a round calls again for more). */
#define XLT_LEND_MAX 16

enum xlt_stream_state {
	XLT_STREAM_CONNECTING, /* active open under way */
	XLT_STREAM_OPEN,
	XLT_STREAM_CLOSED, /* both directions done or aborted; the owner frees it after on_closed */
};

struct xlt_stream_ops {
	/* Contiguous received bytes not consumed yet: returns their count and sets *DATA (0: none now).
	 * Peeking twice without consume returns the same bytes. */
	size_t (*peek)(struct xlt_stream *s, const uint8_t **data);
	/* Releases the first N bytes returned by peek (N <= that count). */
	void (*consume)(struct xlt_stream *s, size_t n);
	/* Takes up to LEN bytes to send (copied or queued; the caller keeps DATA). Returns the count taken;
	 * fewer than LEN means the send side is full and on_writable will follow. */
	size_t (*write)(struct xlt_stream *s, const uint8_t *data, size_t len);
	/* Half-close: no more writes; the peer sees end of stream after what was written (TCP FIN,
	 * rsocket SHUTDOWN). Reading goes on. */
	void (*shutdown)(struct xlt_stream *s);
	/* Hard close now (TCP RST, rsocket DISCONNECT); unsent and unread data are dropped. on_closed
	 * follows from the next poll. */
	void (*abort)(struct xlt_stream *s);
	/* Releases the stream after on_closed (or one never opened). */
	void (*release)(struct xlt_stream *s);
	/* Optional (NULL: the session counts what peek shows, a lower bound): every received byte not
	 * consumed yet, for the route's buffer-occupancy gauge. */
	size_t (*backlog)(struct xlt_stream *s);
	/* Optional (NULL: nothing known): fills *OUT with what the engine knows of the connection (access
	 * log). Cheap, no side effects; valid until release. */
	void (*info)(struct xlt_stream *s, struct xlt_stream_info *out);
	/* Optional, with write_lent at the destination (else the session copies with peek/write): the
	 * received bytes after the first SKIP not consumed yet (SKIP: those lent and not yet reported
	 * sent), as up to MAX segments; returns how many (0: none now). The bytes are those peek shows;
	 * lending them neither consumes nor releases them. */
	unsigned (*lend)(struct xlt_stream *s, size_t skip, struct xlt_seg *segs, unsigned max);
	/* Optional: takes a prefix of the N segments' bytes to send, by reference or by copy, and
	 * returns the count taken (fewer than offered: full, on_writable follows). Bounded as write()
	 * is: bytes taken and not yet reported sent count against the stream's send limit, so a peer
	 * that stops reading (zero window, no credits) makes it take nothing and the session sees the
	 * direction blocked (a send limit larger than the source's buffer never refuses: then the
	 * session itself counts a direction whose destination reported nothing sent for a whole tick as
	 * blocked). Every byte taken is reported once, in order, through ev.on_sent when the
	 * stream is done with it (a copy may be reported from the next relay phase); bytes taken by
	 * write() (a preamble, echo's fallback) are never reported. An aborted or released stream
	 * reports nothing more and puts its references. */
	size_t (*write_lent)(struct xlt_stream *s, const struct xlt_seg *segs, unsigned n);
	/* Optional (NULL: none known): bytes write and write_lent took that have not reached the peer
	 * yet (TCP: not acknowledged; IB: their writes not completed). Their delivery is progress for
	 * the session's limits: a slow reader still taking the last bytes of a stream whose source has
	 * ended is neither idle nor half-closed, and bytes that stay for a whole tick are blocked on it
	 * (the stall limit). Cheap, no side effects. */
	size_t (*unsent)(struct xlt_stream *s);
};

struct xlt_stream_events {
	void *arg;
	/* Active open finished; the stream is OPEN. */
	void (*on_connected)(void *arg);
	/* New bytes can be peeked, or the peer's end of stream was reached (see peer_done). */
	void (*on_readable)(void *arg);
	/* Send space opened after a short write(). */
	void (*on_writable)(void *arg);
	/* The stream is CLOSED. ERR is 0 after an orderly close both ways, else a negative errno:
	 * -ECONNREFUSED, -ETIMEDOUT, -ECONNRESET (peer reset or killed), -EPROTO (peer broke the protocol),
	 * -ECONNABORTED (aborted locally), -ETIME (reset locally: the peer took none of the bytes waiting
	 * for it for so long that memory they hold, which other streams need, was taken back; the
	 * session's stall reason for this end). */
	void (*on_closed)(void *arg, int err);
	/* Optional (streams with write_lent): the stream is done with N more bytes that write_lent took
	 * (delivered, or copied); the session gives their space back at the source. */
	void (*on_sent)(void *arg, size_t n);
};

/* The common head of every stream implementation (embedded first; the implementation's own state
 * follows). Fields are written by the implementation and read by the session, same thread. */
struct xlt_stream {
	const struct xlt_stream_ops *ops;
	struct xlt_stream_events ev;
	enum xlt_stream_state state;
	uint8_t peer_done;  /* the peer will send nothing more (FIN / SHUTDOWN seen and all bytes peeked) */
	uint8_t local_done; /* shutdown() was called */
	struct xlt_ip peer_addr; /* the remote end (for ACLs and logs); any (ip.h) where it has none */
	uint16_t peer_port; /* host byte order */
	/* the address and port the peer reached (accepted streams: the listener's, for logs and PROXY
	 * headers; any / 0 where the engine does not say) */
	struct xlt_ip local_addr;
	uint16_t local_port;
	/* accepted streams whose PROXY header gave peer_addr: the real peer that sent it (a balancer),
	 * for logs (via_port 0: none) */
	uint16_t via_port;
	struct xlt_ip via_addr;
	uint64_t bytes_in;  /* taken from this stream by the session's destination (write or write_lent;
			     * lent bytes are counted when taken, as copies are, not when delivered) */
	uint64_t bytes_out; /* taken by write() */
};

/* How an engine's listeners hand what they accept to the gateway: one struct for both engines
 * (eth_stack_conf.hooks, ib_ctl_create). ROUTE is the gateway's opaque object a listener was opened
 * for (eth_tcp_listen's USER, ib_listen's ROUTE). The engine keeps the pointer: the struct outlives
 * it. Hooks an engine has no use for may be NULL for it (said below). */
struct xlt_listen_hooks {
	void *arg; /* handed to admit, unadmit and log */
	/* Engines that reserve at the connect request (IB; NULL for TCP, whose accept admits), control
	 * thread: may ADDR (the source, either family; unspecified when it has no IP address, AF_IB)
	 * open a session on ROUTE now? 0 RESERVES a route and a global session slot for the connection
	 * (taken over by a session through accept, else given back by unadmit); -EACCES (source not
	 * allowed), -ESHUTDOWN (the route is going, or the gateway drains), -EBUSY (the route is full:
	 * only a slot of its own makes room) or -ENOSPC (the gateway is full: any slot makes room). */
	int (*admit)(void *arg, void *route, const struct xlt_ip *addr);
	/* Any thread: gives back a slot admit reserved (the connection never became a session). */
	void (*unadmit)(void *arg, void *route);
	/* Control thread, optional (NULL: only when A == B): do routes A and B count against one limit
	 * (versions of one route that a reload changed)? An engine that makes room for a request
	 * admit refused with -EBUSY takes the slot of a connection on such a route only. */
	bool (*same_limit)(void *a, void *b);
	/* Any thread: a reference to ROUTE, for every listener and connection that keeps it. */
	void (*route_get)(void *route);
	void (*route_put)(void *route);
	/* Worker: stream S, accepted on ROUTE, is OPEN (its events unbound; IB: it hands over the slot
	 * admit reserved). Return 0 when a session owns S (and the slot) now, or -errno: the gateway
	 * took nothing (gave the slot back), and the engine resets and frees S itself. WARG is the
	 * worker's argument given to the engine (eth_stack_conf.cb_arg, ib_ctl_create's WARGS). */
	int (*accept)(void *warg, void *route, struct xlt_stream *s);
	/* Control thread, optional: one log line (syslog LEVEL: 3 error ... 7 debug). */
	void (*log)(void *arg, int level, const char *msg);
};

#endif
