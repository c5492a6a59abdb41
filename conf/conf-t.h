/* Configuration types: what a parsed and checked ibgw.conf looks like in memory.
 *
 * A struct conf is immutable once conf_load() returns it: the control thread swaps whole configs on
 * SIGHUP and workers only ever see copies of the values they need, so nothing here needs locking.
 * Every field is set from the single keyword table in conf.c (defaults included), never by hand. */
#ifndef CONF_CONF_T_H
#define CONF_CONF_T_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include "../translate/ip-t.h"

#define CONF_MAX_ROUTES	 256
#define CONF_MAX_ALLOW	 32
#define CONF_NAME_MAX	 32
#define CONF_STR_MAX	 512
#define CONF_PATH_MAX	 4096
#define CONF_MAX_BACKENDS 16  /* backends of one route's pool */
#define CONF_CHECK_BYTES  128 /* check_send / check_expect, after escapes */

enum conf_log_level {
	CONF_LOG_ERROR = 3,
	CONF_LOG_WARNING = 4,
	CONF_LOG_NOTICE = 5,
	CONF_LOG_INFO = 6,
	CONF_LOG_DEBUG = 7,
};

enum conf_log_target {
	CONF_LOG_STDERR,
	CONF_LOG_SYSLOG,
};

/* One side of a route: where sessions come from or go to. */
enum conf_endpoint_kind {
	CONF_EP_NONE = 0,
	CONF_EP_IB,	 /* rsocket over RDMA: listen = ib:PORT, connect = ib:HOST:PORT (IPv4 host) */
	CONF_EP_TCP,	 /* TCP on the DPDK port: listen = tcp:PORT, connect = tcp:HOST:PORT or tcp:[V6]:PORT */
	CONF_EP_ECHO,	 /* diagnostic: every byte is sent back */
	CONF_EP_DISCARD, /* diagnostic: every byte is consumed and dropped */
};

/* PROXY protocol versions a route may send or expect. */
enum conf_proxy {
	CONF_PROXY_OFF = 0,
	CONF_PROXY_V2 = 2,
};

struct conf_endpoint {
	enum conf_endpoint_kind kind;
	struct xlt_ip addr; /* connect only (either family); all zero in a listener */
	uint16_t port;	    /* host byte order */
};

/* Longest text conf_endpoint_str writes: "tcp:[" IPv6 "]:65535", with its NUL. */
#define CONF_EP_STRLEN (5 + XLT_IP_STRLEN + 7)

/* A backend's administrative state: ready takes new sessions; drain takes none but lets its
 * sessions finish; maint is drain and also stops its health checks (shown down). */
enum conf_backend_state {
	CONF_BACKEND_READY = 0,
	CONF_BACKEND_DRAIN,
	CONF_BACKEND_MAINT,
};

/* One destination of a route's pool: `connect = tcp:H:P weight=2 max=100 state=drain, tcp:H2:P`. */
struct conf_backend {
	struct conf_endpoint ep; /* kind is the route's connect kind (one kind per pool) */
	uint32_t weight;	 /* 1..100, default 1 */
	uint32_t max_sessions;	 /* 0 = no limit of its own (the route's applies) */
	uint32_t state;		 /* enum conf_backend_state */
};

struct conf_bytes {
	uint32_t len;
	uint8_t b[CONF_CHECK_BYTES];
};

enum conf_balance {
	CONF_BALANCE_ROUNDROBIN = 0, /* weighted, in a fixed interleaved order */
	CONF_BALANCE_LEASTCONN,	     /* fewest active sessions per unit of weight */
	CONF_BALANCE_SOURCE,	     /* keyed hash of the client's address (weighted rendezvous) */
};

struct conf_cidr {
	struct in_addr net; /* network byte order, host bits cleared */
	uint8_t prefix;
};

/* An IPv6 interface address (documentation and tests use 2001:db8::/32 only). */
struct conf_cidr6 {
	struct in6_addr addr; /* host bits kept: it is the interface's own address */
	uint8_t prefix;	      /* 0 = unset */
};

struct conf_hostport {
	struct in_addr addr;
	uint16_t port;
};

struct conf_gateway {
	uint32_t workers;
	struct conf_hostport stats;
	uint32_t stats_admin; /* 1: POST /backends/... may change a backend's state (stats.c) */
	uint32_t log_level; /* enum conf_log_level */
	uint32_t log_target; /* enum conf_log_target */
	uint64_t drain_timeout_ms;
	uint64_t memory_limit;
	uint32_t max_sessions;
	uint64_t idle_sleep_us;
	uint64_t busy_poll_us;
	/* privileges (gateway/privs.c): who the daemon becomes once start-up is done; "" = as started */
	char user[CONF_NAME_MAX + 1];
	char group[CONF_NAME_MAX + 1];
	/* access log (gateway/access_log.c): "" = off, "syslog", or an absolute file path */
	char access_log[CONF_STR_MAX];
	uint64_t access_log_interval_ms; /* 0 = a line at the end only; else also progress lines */
};

struct conf_ib {
	struct in_addr bind;
	char device[CONF_NAME_MAX + 32];
	uint64_t rbuf_size;
	uint64_t sbuf_size;
	uint32_t sq_depth;
	uint32_t rq_depth;
	uint32_t inline_size;
	uint64_t keepalive_ms;
};

struct conf_eth {
	char vdev[CONF_STR_MAX];
	char eal_args[CONF_STR_MAX];
	uint32_t port;
	struct conf_cidr address; /* prefix 0 and address 0 = unset */
	struct in_addr gateway;	  /* 0 = none */
	struct conf_cidr6 address6; /* prefix 0 = no IPv6 */
	struct in6_addr gateway6;   /* :: = none (on-link destinations only) */
	uint32_t mtu;
	uint32_t offloads;	     /* 1: use the device's checksum/TSO/LRO offloads when it has them */
	uint32_t rx_desc;
	uint32_t tx_desc;
	uint32_t mbufs;
	uint64_t rbuf_size;
	uint64_t sbuf_size;
	uint64_t time_wait_ms;
	uint32_t syn_backlog;
	uint64_t keepalive_ms;	     /* TCP keepalive idle time; 0 = off */
	uint64_t keepalive_intvl_ms;
	uint32_t keepalive_probes;
	uint64_t user_timeout_ms;    /* unacknowledged data this old drops the connection */
	char kernel_tap[16];         /* exception path: the kernel interface ibgwd creates ("" = none) */
	uint32_t kernel_tap_rate;    /* frames per second each way through it at most */
	uint32_t removed_addr_reset; /* 1: connections to an address that left the TAP are reset */
	struct in_addr flow_peer;    /* the other gateway of a pair: unknown flows to a VIP go there */
	struct in6_addr flow_peer6;  /* ... to an IPv6 VIP (:: = none) */
};

struct conf_route {
	char name[CONF_NAME_MAX + 1];
	struct conf_endpoint listen;
	struct conf_endpoint connect; /* the first backend's endpoint (echo/discard: the only one) */
	/* the pool (tcp: and ib: destinations): backends[0].ep == connect */
	struct conf_backend backends[CONF_MAX_BACKENDS];
	uint32_t n_backends; /* 0 for echo and discard */
	uint32_t balance;    /* enum conf_balance */
	/* active health checks (gateway/health.c); check_interval 0 = none */
	uint64_t check_interval_ms;
	uint64_t check_timeout_ms;
	uint32_t rise, fall;
	/* passive: sessions in a row a backend reset before its first byte, then out for eject_time */
	uint32_t eject_after;
	uint64_t eject_time_ms;
	struct conf_bytes check_send;   /* sent once connected (TCP checks) */
	struct conf_bytes check_expect; /* must be the first bytes the backend sends (TCP checks) */
	/* sources allowed, both families in one list (an IPv4 /n is the mapped /96+n: 0.0.0.0/0 is every
	 * IPv4 source only, ::/0 every source, IB peers without an IP address included) */
	struct xlt_cidr allow[CONF_MAX_ALLOW];
	uint32_t n_allow;
	uint32_t max_sessions;
	uint64_t ib_rbuf_size; /* 0 in the file = inherit [ib] rbuf_size; resolved after parsing */
	uint64_t ib_sbuf_size;
	uint32_t ib_sq_depth; /* 0 in the file = derived from ib_sbuf_size; resolved after parsing */
	uint32_t ib_rq_depth; /* 0 = derived from ib_rbuf_size */
	uint64_t tcp_rbuf_size; /* 0 = inherit [eth] */
	uint64_t tcp_sbuf_size;
	uint64_t connect_timeout_ms;
	uint64_t idle_timeout_ms;	 /* session limits (0 = none): no byte either way */
	uint64_t stall_timeout_ms;	 /* a destination taking no byte while bytes wait */
	uint64_t half_closed_timeout_ms; /* one direction ended, the other silent */
	uint32_t proxy_protocol; /* enum conf_proxy: header sent to a tcp: destination */
	uint32_t accept_proxy;	 /* enum conf_proxy: header expected from tcp: clients */
	/* accept_proxy: the real TCP peers (balancers) whose PROXY header is believed, both families in
	 * one list; n_proxy_from 0 (unset) = any peer. Right after its array, as n_allow after allow
	 * (the T_CIDRS parser finds the count there). */
	struct xlt_cidr proxy_from[CONF_MAX_ALLOW];
	uint32_t n_proxy_from;
	unsigned line; /* line of the [route NAME] header, for messages */
};

#define CONF_MAX_KEYS 128 /* keys of the table (conf.c checks it) */

struct conf {
	char path[CONF_PATH_MAX];
	unsigned key_line[CONF_MAX_KEYS]; /* the line each [gateway], [ib] and [eth] key was set on (0: its
					   * default), in the table's order: conf_where() */
	struct conf_gateway gateway;
	struct conf_ib ib;
	struct conf_eth eth;
	uint32_t n_routes;
	struct conf_route routes[CONF_MAX_ROUTES];
};

#endif
