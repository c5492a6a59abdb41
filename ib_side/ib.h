/* IB side: rsocket-protocol connections on verbs, for the gateway.
 *
 * Threads. The control thread owns rdma_cm: listeners, connect requests, address/route resolution,
 * creating and destroying queue pairs and ids, the buffer pool. Each worker owns its connections'
 * datapath: it polls its completion queues, posts sends and receives, and drives the stream interface
 * (translate/stream-t.h) that sessions use. The two talk through one SPSC ring per direction per
 * worker; the worker wakes the control thread with an eventfd. A connection is named across threads
 * by (slot, generation); the control thread frees one only after its worker handed it back.
 *
 * The functions say which thread may call them. Constructors return NULL and set errno; the others
 * return 0 or -errno. */
#ifndef IB_IB_H
#define IB_IB_H

#include <netinet/in.h>
#include <stdbool.h>

#include "../translate/metric-t.h"
#include "ib-t.h"

struct pollfd;

/* Control thread, before the workers run. Opens every RDMA device librdmacm sees (or only
 * P->device), the rdma_cm event channel, and the per-worker state for N_WORKERS workers (WARGS[i] is
 * passed back to hooks->accept on worker i). P is copied. MAX_CONNS bounds the connections one worker
 * may own. Registered buffers are kept idle for reuse up to MEM_LIMIT / 8, and only while all of them
 * fit MEM_LIMIT. HOOKS must outlive the engine. errno ENODEV: no RDMA here. */
struct ib_ctl *ib_ctl_create(const struct ib_params *p, unsigned n_workers, void *const *wargs,
                             uint32_t max_conns, uint64_t mem_limit, const struct xlt_listen_hooks *hooks);

/* After the workers stopped: frees every connection, listener and resource. */
void ib_ctl_destroy(struct ib_ctl *ctl);

/* File descriptors for the control thread's event loop: when either is readable, call
 * ib_ctl_process. Also call ib_ctl_tick every few tens of milliseconds (timeouts, spares). */
int ib_ctl_cm_fd(const struct ib_ctl *ctl);
int ib_ctl_wake_fd(const struct ib_ctl *ctl);
void ib_ctl_process(struct ib_ctl *ctl, uint64_t now_ns);
/* SERVING false (draining): connect requests are refused from now on. */
void ib_ctl_tick(struct ib_ctl *ctl, uint64_t now_ns, bool serving);

/* Opens an rsocket listener on the engine's bind address, PORT, for ROUTE (referenced while open and
 * by every connection it accepts, which are set up with RP's values; RP is copied). */
struct ib_listener *ib_listen(struct ib_ctl *ctl, uint16_t port, const struct ib_route_params *rp,
			      void *route);
void ib_listener_close(struct ib_listener *l);
/* L's route was replaced by a reload that kept its port: requests from now on are admitted and set up
 * under ROUTE (referenced in place of the old one) with RP's values (copied); connections made before
 * keep theirs. The port stays open throughout, so a client connecting during the reload is never
 * refused. */
void ib_listener_update(struct ib_listener *l, const struct ib_route_params *rp, void *route);
uint16_t ib_listener_port(const struct ib_listener *l);

const struct ib_ctl_stats *ib_ctl_stats(const struct ib_ctl *ctl);

/* Control thread, before any connection: [ADDR, ADDR + LEN) is memory the gateway will lend IB
 * connections to send from (the Ethernet RX mempool). Every buffer set registers it in its own
 * protection domain, local access only; a stream segment in it (XLT_SEG_EXTMEM) is then RDMA-written
 * without a copy. Returns 0, -EINVAL or -ENOSPC (too many separate ranges: the rest is copied). */
int ib_ctl_extmem(struct ib_ctl *ctl, void *addr, size_t len);
/* Control thread, before any connection: forgets every range ib_ctl_extmem was given (the gateway
 * could not hand over all of the memory, so none of it is lent: sets register nothing for it). */
void ib_ctl_extmem_clear(struct ib_ctl *ctl);
/* Control thread, before any connection: buffer sets take their memory from OPS (which must outlive
 * every set, including those the last reference of frees after ib_ctl_destroy); a set OPS has none
 * for maps pages of its own, as without OPS. The receive ring of a set from OPS is lent with
 * OPS->seg_flags. */
void ib_ctl_bufmem(struct ib_ctl *ctl, const struct ib_mem_ops *ops);
/* Control thread, before any connection and after ib_ctl_extmem: connections of routes with a
 * copy_size copy into OPS's buffers (which must outlive the engine), and their sets hold no send
 * ring: the receive ring, our target_sgl and the control slots only. A set that could not register
 * the external memory gets a send ring of copy_size all the same, as without OPS. */
void ib_ctl_copymem(struct ib_ctl *ctl, const struct ib_copy_ops *ops);
struct ib_worker *ib_ctl_worker(struct ib_ctl *ctl, unsigned i);
const char *ib_ctl_devices(const struct ib_ctl *ctl, char *buf, size_t len);

/* Worker, one round in three phases (gateway/worker.c calls them in order, between the Ethernet
 * side's):
 *  - ib_worker_poll, receive: messages from the control thread and completions. Returns the amount
 *    of work done, 0 when idle. ib_worker_hot then says whether the last completion is less than
 *    HOT_NS old ([gateway] busy_poll): after a completion the next one usually follows within a
 *    round trip (the peer answers, credits come back, the next write lands), and polling for it is
 *    cheaper than sleeping and being woken by its event (README, "Performance"). Only a longer
 *    silence lets the worker sleep; HOT_NS = 0 lets it sleep as soon as a round is idle.
 *  - ib_worker_relay: fires the stream events due. The stream ops the sessions call meanwhile post
 *    nothing: they queue bytes and mark the connection for the flush.
 *  - ib_worker_flush: keepalives, then per connection one chain of work requests (credits, data
 *    merged up to 64 KiB per write, end of stream, abort), one doorbell; connections released are
 *    handed back. Returns the work done, nonzero while events wait for the next round. */
unsigned ib_worker_poll(struct ib_worker *w, uint64_t now_ns, uint64_t hot_ns);
bool ib_worker_hot(const struct ib_worker *w);
unsigned ib_worker_relay(struct ib_worker *w);
unsigned ib_worker_flush(struct ib_worker *w);

/* Worker, before it sleeps: asks every CQ for an event at its next completion and puts the event
 * channels' fds (POLLIN) in FDS. Returns how many (at most MAX), or -ENOTSUP when some CQ has no
 * channel (then only short naps are safe), or another -errno. A completion that raced with the
 * arming is found by the poll round the caller runs after arming and before sleeping. */
int ib_worker_arm(struct ib_worker *w, struct pollfd *fds, unsigned max);
/* Worker, after the sleep: consumes and acknowledges the events of the fds that fired (FDS, N as
 * ib_worker_arm filled them, with revents). */
void ib_worker_woken(struct ib_worker *w, const struct pollfd *fds, unsigned n);

/* Worker: opens an rsocket connection to ADDR:PORT for ROUTE (referenced by the connection), set up
 * with RP's values (copied). Returns a CONNECTING stream: on_connected or on_closed (-ECONNREFUSED,
 * -ETIMEDOUT after RP->connect_timeout_ms, -EHOSTUNREACH, -EPROTO, ...) follow from ib_worker_poll.
 * NULL with *ERR on immediate failure. */
struct xlt_stream *ib_worker_connect(struct ib_worker *w, const struct ib_route_params *rp, void *route,
				     struct in_addr addr, uint16_t port, int *err);

const struct ib_worker_stats *ib_worker_stats(const struct ib_worker *w);

/* Worker: who the peer of S (a stream this engine accepted) is on the fabric: its port GID (16 bytes,
 * as on the wire) and queue pair number, as its connect request carried them. Returns 0, or -EINVAL
 * when S is not a connection this engine accepted. */
int ib_stream_peer_id(const struct xlt_stream *s, uint8_t gid[16], uint32_t *qpn);

/* Counter names for the stats endpoint. */
extern const struct xlt_metric_desc ib_ctl_metrics[];
extern const unsigned ib_ctl_n_metrics;
extern const struct xlt_metric_desc ib_worker_metrics[];
extern const unsigned ib_worker_n_metrics;

#endif
