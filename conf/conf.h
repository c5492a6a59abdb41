/* Configuration: load, check and describe ibgw.conf.
 *
 * The file is INI (libinih). Every key the daemon knows is one row of the keyword table in conf.c:
 * parsing, defaults, range checks, the `-t` summary and the README reference are all driven by it,
 * so documentation and behaviour cannot drift apart. */
#ifndef CONF_CONF_H
#define CONF_CONF_H

#include <stdio.h>
#include "conf-t.h"

/* Receives one complete message "FILE:LINE: text" (no newline) per problem found. */
typedef void (*conf_error_fn)(void *arg, const char *msg);

/* Parse and check PATH. All problems are reported through ERR (may be NULL) before giving up.
 * Returns a new config owned by the caller (free with conf_free), or NULL with errno set
 * (EINVAL: the file has errors; other values: it could not be read). */
struct conf *conf_load(const char *path, conf_error_fn err, void *arg);

/* The same from memory; NAME stands for the file name in messages. Used by tests and the fuzzer. */
struct conf *conf_load_mem(const char *name, const char *buf, size_t len, conf_error_fn err, void *arg);

void conf_free(struct conf *c);

/* Human summary of what the daemon would run with C (for `ibgwd -t`). */
void conf_print_summary(const struct conf *c, FILE *out);

/* Markdown table of every section and key with type, range, default and doc (README reference). */
void conf_print_reference(FILE *out);

/* True when ADDR (either family) is inside one of the route's allow entries. The unspecified address
 * (xlt_ip_is_any: a source with no IP address, such as an AF_IB peer) is admitted only by a list that
 * admits everyone. */
bool conf_route_allows(const struct conf_route *r, const struct xlt_ip *addr);
/* True when PEER, the real TCP peer of a connection to an accept_proxy route, may send it a PROXY
 * header: R has no proxy_from (any peer), or PEER is inside one of its entries. */
bool conf_route_proxy_from(const struct conf_route *r, const struct xlt_ip *peer);
/* Reports through WARN ("FILE:LINE: warning: ...", one call each) what C allows but is likely a
 * mistake: an accept_proxy route without proxy_from. Called by `ibgwd -t`, at start-up and reload. */
void conf_warn(const struct conf *c, conf_error_fn warn, void *arg);
/* True when R's allow list admits every source, of both families and none (a ::/0 entry, the default);
 * 0.0.0.0/0 is every IPv4 source only. */
bool conf_route_allows_all(const struct conf_route *r);

/* How route R's sessions hold their bytes.
 * Between IB and TCP a session relays by reference (issue #14): each side sends from the other's
 * receive buffer, so its send buffer is a bound, not memory. The TCP send queue holds references into
 * the IB receive ring (eth_side/sndq.c; frames are copied from there where the port cannot send from
 * that memory, which takes no buffer of the session's); the IB side RDMA-writes straight from the
 * frames the TCP receive queue keeps (ib_side/extmem.c). What either side cannot lend (small or
 * out-of-order TCP segments, a PROXY header) is copied into frames of the port's pool, which both
 * sides send from as they send from lent frames: a few at a time per connection (CONF_LENT_IB_COPY of
 * frame buffers, counted whole, at most ib_sbuf; CONF_LENT_TCP_COPY bytes), the IB side's an eighth of
 * the pool at most in all, none once the pool is down to a sixteenth (the copy waits, and the source
 * with it; eth_side/stack.h eth_stack_copy_buf). Such a session holds its two receive buffers and nothing
 * else: its IB buffer set is the receive ring (and a few control slots), and its TCP send queue takes
 * no chunk. ib_sbuf and tcp_sbuf still bound the bytes in flight (send windows, send queue depth).
 * Where the frames cannot be registered with the IB side, its sets hold a copy area of
 * CONF_LENT_IB_COPY beyond the budget (gateway/extmem.c says so at start).
 * Echo and discard (the IB or TCP side writes copies of its own bytes, or nothing) and TCP -> TCP
 * (a receive queue's copies of small or out-of-order segments cannot be lent, and a TCP send queue
 * copies them) keep full send buffers. */
#define CONF_LENT_IB_COPY  (16u * 1024u)
#define CONF_LENT_TCP_COPY (8u * 1024u)
bool conf_route_lends(const struct conf_route *r);
/* The IB buffer set's bytes beyond the receive ring (0: the route has no IB side, or relays by
 * reference). */
uint64_t conf_route_ib_copy_bytes(const struct conf_route *r);
/* Bytes of copies an IB connection of R keeps in flight at most, in frames of the port's pool (0:
 * R does not relay by reference; its copies go through the set's send ring). */
uint32_t conf_route_ib_copy_limit(const struct conf_route *r);
/* Bytes of buffer one session of route R may hold at most: the buffers of the sides it uses, as
 * above. What memory_limit is checked against and the buffer arenas are sized by. */
uint64_t conf_route_session_bytes(const struct conf_route *r);
/* Which of the two R gets and why, for the `-t` summary and the start-up log ("relays by reference
 * (copies in frames: ib 16K, tcp 8K at most)", "relays by copy (echo)"...), into BUF; returns BUF. */
const char *conf_route_relay_str(const struct conf_route *r, char *buf, size_t len);

/* "ib:7000", "tcp:198.18.0.2:80", "tcp:[2001:db8::10]:80", "echo"... into BUF (CONF_EP_STRLEN bytes
 * hold any); returns BUF. */
const char *conf_endpoint_str(const struct conf_endpoint *ep, char *buf, size_t len);

/* Routes that share a listener are the same route for reload purposes. */
bool conf_route_equal(const struct conf_route *a, const struct conf_route *b);

const char *conf_log_level_name(uint32_t level);

/* Where a message about C is: "FILE:LINE" of route R's [route NAME] header where R is given, else of
 * the line SECTION's KEY was set on, else "FILE" (the key was left at its default), into BUF; returns
 * BUF. For what is found wrong after the file was read (a reload's checks against the running
 * gateway, a file that cannot be opened). */
const char *conf_where(const struct conf *c, const struct conf_route *r, const char *section, const char *key,
		       char *buf, size_t len);

#endif
