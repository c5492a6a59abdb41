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

/* Bytes of buffer one session of route R may hold at most (the buffers of the sides it uses). A TCP
 * connection whose bytes come from IB counts CONF_LENT_SBUF for its send buffer: it holds references
 * into the IB receive ring (two 8 KiB chunks of its own: entries, and a PROXY header's copy). */
#define CONF_LENT_SBUF (16u * 1024u)
uint64_t conf_route_session_bytes(const struct conf_route *r);

/* "ib:7000", "tcp:198.18.0.2:80", "tcp:[2001:db8::10]:80", "echo"... into BUF (CONF_EP_STRLEN bytes
 * hold any); returns BUF. */
const char *conf_endpoint_str(const struct conf_endpoint *ep, char *buf, size_t len);

/* Routes that share a listener are the same route for reload purposes. */
bool conf_route_equal(const struct conf_route *a, const struct conf_route *b);

const char *conf_log_level_name(uint32_t level);

#endif
