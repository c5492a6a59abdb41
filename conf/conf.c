/* Config parser and checker.
 *
 * Design: libinih splits the file into (section, key, value); everything else is table-driven.
 * conf_keys[] is the only place a key is declared: its section, type, range, default and doc line.
 * Defaults are strings parsed by the same value parsers as the file, so a default can never be
 * something the file could not say.
 *
 * Line numbers: inih of Debian 12 is built without handler line numbers, so we feed it through our
 * own line reader, which counts lines, checks each line's shape (so that syntax errors are reported
 * with their line, all of them, not only the first as inih would) and tracks section headers.
 *
 * Nothing stops at the first problem: every message is collected, then the file is rejected. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "../translate/ip.h"
#include "conf.h"

enum conf_section {
	SEC_NONE = 0,
	SEC_GATEWAY,
	SEC_IB,
	SEC_ETH,
	SEC_ROUTE,
	SEC_INVALID, /* unknown section: its keys are skipped, the header was already reported */
	SEC_COUNT,
};

static const char *const section_names[SEC_COUNT] = {
	[SEC_GATEWAY] = "gateway",
	[SEC_IB] = "ib",
	[SEC_ETH] = "eth",
	[SEC_ROUTE] = "route NAME",
};

enum conf_type {
	T_UINT,
	T_SIZE,
	T_DURATION, /* stored in the unit named by the key's scale: ms or us */
	T_STRING,
	T_IPV4,
	T_IFADDR, /* a.b.c.d/prefix, host bits allowed */
	T_IPV6,
	T_IFADDR6, /* IPv6/prefix, host bits allowed */
	T_CIDRS,  /* comma/space separated list of a.b.c.d[/prefix] and IPv6[/prefix] */
	T_HOSTPORT,
	T_LOGLEVEL,
	T_LOGTARGET,
	T_LISTEN,
	T_CONNECT,
	T_EALARGS, /* a string, checked by eal_args_check */
	T_VDEV,	   /* a string, checked by vdev_check */
	T_NAME,	   /* a user or group name */
	T_BALANCE,
	T_BYTES, /* a string with C escapes (\r \n \t \\ \xHH), stored as bytes */
	T_PROXY,   /* off or v2 (PROXY protocol version) */
	T_ACCESSLOG, /* "", "syslog", "syslog:/SOCKET" or an absolute path */
};

static const char *const type_names[] = {
	[T_UINT] = "integer",
	[T_SIZE] = "size",
	[T_DURATION] = "duration",
	[T_STRING] = "string",
	[T_IPV4] = "IPv4 address",
	[T_IFADDR] = "IPv4/prefix",
	[T_IPV6] = "IPv6 address",
	[T_IFADDR6] = "IPv6/prefix",
	[T_CIDRS] = "CIDR list",
	[T_HOSTPORT] = "IPv4:port",
	[T_LOGLEVEL] = "level",
	[T_LOGTARGET] = "target",
	[T_LISTEN] = "listener",
	[T_CONNECT] = "destination",
	[T_EALARGS] = "string",
	[T_VDEV] = "string",
	[T_NAME] = "name",
	[T_BALANCE] = "policy",
	[T_BYTES] = "bytes",
	[T_PROXY] = "off, v2",
	[T_ACCESSLOG] = "path",
};

struct conf_key {
	enum conf_section section;
	const char *key;
	enum conf_type type;
	size_t offset; /* in struct conf_gateway/ib/eth/route, by section */
	size_t size;   /* of the field (strings: buffer size) */
	uint64_t min, max;
	uint64_t unit_us; /* durations: microseconds per stored unit (1000 = field in ms) */
	bool required;
	const char *def; /* NULL or "" = zero (routes: inherit) */
	const char *doc;
};

#define G(f) SEC_GATEWAY, #f, 0, offsetof(struct conf_gateway, f), sizeof(((struct conf_gateway *)0)->f)
#define I(f) SEC_IB, #f, 0, offsetof(struct conf_ib, f), sizeof(((struct conf_ib *)0)->f)
#define E(f) SEC_ETH, #f, 0, offsetof(struct conf_eth, f), sizeof(((struct conf_eth *)0)->f)
#define R(f) SEC_ROUTE, #f, 0, offsetof(struct conf_route, f), sizeof(((struct conf_route *)0)->f)
#define KB   UINT64_C(1024)
#define MB   (1024 * KB)
#define GB   (1024 * MB)
#define SEC  UINT64_C(1000000)

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
/* The keyword table. The "key" field of the macros is the struct field name; where the file's key
 * differs, the entry overrides it after the macro (C designated-initializer order allows this). */
static const struct conf_key conf_keys[] = {
	/* [gateway] */
	{G(workers), .type = T_UINT, .min = 1, .max = 64, .def = "1",
	 .doc = "datapath worker threads (DPDK lcores), each owning its sessions end to end"},
	{G(stats), .type = T_HOSTPORT, .def = "127.0.0.1:9100",
	 .doc = "management address of the HTTP stats endpoint (/metrics, /stats, /health)"},
	{G(stats_admin), .type = T_UINT, .min = 0, .max = 1, .def = "1",
	 .doc = "1: POST /backends/ROUTE/BACKEND?state= may change a backend's state (from loopback or the "
		"management address only); 0: every such request is refused (403), for a host whose other "
		"users or local services must not steer traffic"},
	{G(log_level), .type = T_LOGLEVEL, .def = "info", .doc = "error, warning, notice, info or debug"},
	{G(log_target), .type = T_LOGTARGET, .def = "stderr", .doc = "stderr (journald-friendly) or syslog"},
	{G(drain_timeout_ms), .key = "drain_timeout", .type = T_DURATION, .unit_us = 1000, .min = 0,
	 .max = 3600 * 1000, .def = "10s",
	 .doc = "on SIGTERM, how long sessions may finish before they are aborted"},
	{G(memory_limit), .type = T_SIZE, .min = MB, .max = 1024 * GB, .def = "1G",
	 .doc = "upper bound of all session buffers (sum over routes of max_sessions x buffers; a route "
		"between IB and TCP counts its two receive buffers only, as its copies go into frames of the "
		"port's pool; `ibgwd -t` says which a route gets)"},
	{G(max_sessions), .type = T_UINT, .min = 1, .max = 1000000, .def = "10000",
	 .doc = "sessions admitted at once over all routes"},
	{G(idle_sleep_us), .key = "idle_sleep", .type = T_DURATION, .unit_us = 1, .min = 0, .max = 100000,
	 .def = "100us", .doc = "how long an idle worker sleeps between polls; frames (af_packet, virtio_user) and IB completions wake it early, and a worker they wake sleeps at least 1 ms (0 = busy-poll)"},
	{G(busy_poll_us), .key = "busy_poll", .type = T_DURATION, .unit_us = 1, .min = 0, .max = 10000,
	 .def = "200us", .doc = "how long a worker keeps polling after IB completions, and after frames on a port that wakes it by interrupt (virtio_user), before it may sleep: the next completion or answer usually comes within a round trip; lower latency for more CPU per byte (0 = sleep as soon as a round finds nothing)"},
	/* privileges (gateway/privs.c) */
	{G(user), .type = T_NAME, .def = "",
	 .doc = "user to run as: ibgwd started as root switches before DPDK starts and keeps only the capabilities its port and ports below 1024 need, with no_new_privs (empty: stay as started)"},
	{G(group), .type = T_NAME, .def = "", .doc = "group to run as (empty: the user's primary group); needs user"},
	/* access log (gateway/access_log.c) */
	{G(access_log), .type = T_ACCESSLOG, .def = "",
	 .doc = "one JSON line per session at its end: an absolute file path (reopened on SIGUSR1), syslog (/dev/log, the daemon facility), syslog:/SOCKET (another syslog socket), or empty: off"},
	{G(access_log_interval_ms), .key = "access_log_interval", .type = T_DURATION, .unit_us = 1000, .min = 0,
	 .max = 86400 * 1000, .def = "0",
	 .doc = "also a progress line for every session still running, this often (0 = only at the end; else at least 1s)"},

	/* [ib] */
	{I(bind), .type = T_IPV4, .def = "0.0.0.0", .doc = "IPoIB/RoCE address the rsocket listeners bind to"},
	{I(device), .type = T_STRING, .def = "", .doc = "RDMA device to use (empty: the one routing picks)"},
	{I(rbuf_size), .type = T_SIZE, .min = 4 * KB, .max = 64 * MB, .def = "128K",
	 .doc = "default receive buffer of an IB connection (what the peer may write ahead)"},
	{I(sbuf_size), .type = T_SIZE, .min = 4 * KB, .max = 64 * MB, .def = "128K",
	 .doc = "default send buffer of an IB connection: the bytes in flight; a route between IB and TCP "
		"allocates none of it (it sends from the TCP frames, and copies what it cannot, 16K in flight "
		"at most, into frames of the port's pool)"},
	{I(sq_depth), .type = T_UINT, .min = 16, .max = 65534, .def = "384",
	 .doc = "deepest send queue of a connection (a route's default: one entry per KiB of its IB send buffer, 16 at least, this at most)"},
	{I(rq_depth), .type = T_UINT, .min = 16, .max = 65534, .def = "384",
	 .doc = "deepest receive queue (= credits granted to the peer; a route's default: one per KiB of its IB receive buffer, 16 at least, this at most)"},
	{I(inline_size), .type = T_UINT, .min = 0, .max = 1024, .def = "64", .doc = "max inline send data"},
	{I(keepalive_ms), .key = "keepalive", .type = T_DURATION, .unit_us = 1000, .min = 0,
	 .max = 3600 * 1000, .def = "0",
	 .doc = "rsocket keepalive interval (0 = off, else at least 100ms); a peer that leaves one unanswered for 3 intervals, or takes none of the messages sent to it that long (its receive queue left empty), is dropped (and one that sends more than 100 a second of keepalives or other messages that cost it nothing, as a flood)"},

	/* [eth] */
	{E(vdev), .type = T_VDEV, .def = "",
	 .doc = "DPDK virtual device, e.g. net_af_packet0,iface=eth1,qdisc_bypass=1 (empty: no Ethernet port)"},
	{E(eal_args), .type = T_EALARGS, .def = "--no-pci --in-memory",
	 .doc = "extra DPDK EAL arguments (lcores are derived from [gateway] workers; hugepage files are "
		"unlinked once mapped, so they go back to the system when ibgwd exits, unless --in-memory, "
		"--no-huge or --huge-unlink is given); options that load code or reach other devices or files are refused: -d, --vdev (use vdev), --trace*, --create-uio-dev, --telemetry, --proc-type other than primary, a --file-prefix with a path"},
	{E(port), .type = T_UINT, .min = 0, .max = 31, .def = "0", .doc = "DPDK port id to use"},
	{E(address), .type = T_IFADDR, .def = "", .doc = "IPv4 address/prefix of the gateway on the port"},
	{E(gateway), .type = T_IPV4, .def = "0.0.0.0", .doc = "IPv4 default gateway (0.0.0.0 = none)"},
	{E(address6), .type = T_IFADDR6, .def = "",
	 .doc = "IPv6 address/prefix of the gateway on the port (empty = no IPv6; it answers neighbour discovery and ping for it and for its link-local address)"},
	{E(gateway6), .type = T_IPV6, .def = "::", .doc = "IPv6 default gateway (:: = none)"},
	{E(mtu), .type = T_UINT, .min = 576, .max = 9000, .def = "1500", .doc = "IP MTU of the port (above 1500 on af_packet, vdev needs framesz=16384,blocksz=16384)"},
	{E(offloads), .type = T_UINT, .min = 0, .max = 1, .def = "1",
	 .doc = "1: use the device's TCP checksum, TSO and LRO offloads when it has them (virtio_user on vhost-net has; af_packet has none); 0: never"},
	{E(rx_desc), .type = T_UINT, .min = 64, .max = 16384, .def = "1024", .doc = "RX ring descriptors"},
	{E(tx_desc), .type = T_UINT, .min = 64, .max = 16384, .def = "1024", .doc = "TX ring descriptors"},
	{E(mbufs), .type = T_UINT, .min = 1023, .max = 4194303, .def = "16383",
	 .doc = "packet buffers in the mempool (per port)"},
	{E(rbuf_size), .type = T_SIZE, .min = 4 * KB, .max = 64 * MB, .def = "256K",
	 .doc = "default TCP receive buffer (the largest window advertised)"},
	{E(sbuf_size), .type = T_SIZE, .min = 4 * KB, .max = 64 * MB, .def = "256K",
	 .doc = "default TCP send buffer (bytes in flight or queued); a route between IB and TCP allocates "
		"none of it (it sends from the IB receive ring, and copies what it cannot, a PROXY header, 8K "
		"in flight at most, into frames of the port's pool)"},
	{E(time_wait_ms), .key = "time_wait", .type = T_DURATION, .unit_us = 1000, .min = 0, .max = 240 * 1000,
	 .def = "60s", .doc = "TIME_WAIT duration of closed TCP connections"},
	{E(syn_backlog), .type = T_UINT, .min = 1, .max = 65536, .def = "1024",
	 .doc = "half-open TCP connections kept at most, shared by the workers and each worker's listeners; past "
		"its share a listener answers SYNs with SYN cookies"},
	{E(keepalive_ms), .key = "keepalive", .type = T_DURATION, .unit_us = 1000, .min = 0, .max = 86400 * 1000,
	 .def = "0", .doc = "idle time before TCP keepalive probes (0 = off)"},
	{E(keepalive_intvl_ms), .key = "keepalive_interval", .type = T_DURATION, .unit_us = 1000, .min = 100,
	 .max = 3600 * 1000, .def = "10s", .doc = "time between unanswered TCP keepalive probes"},
	{E(keepalive_probes), .type = T_UINT, .min = 1, .max = 100, .def = "6",
	 .doc = "unanswered keepalive probes before the connection is dropped"},
	{E(user_timeout_ms), .key = "user_timeout", .type = T_DURATION, .unit_us = 1000, .min = 1000,
	 .max = 3600 * 1000, .def = "60s",
	 .doc = "how long sent data may stay unacknowledged before the TCP connection is dropped (a peer that "
	         "answers with a zero window is left to its route's stall_timeout)"},
	{E(kernel_tap), .type = T_NAME, .def = "",
	 .doc = "exception path: a kernel TAP interface of this name with the port's MAC (empty: none); frames "
		"ibgwd does not serve (ARP copies, other IP protocols such as VRRP, TCP/UDP ports without a "
		"listener such as ssh or BGP, multicast) go to it, and what the kernel sends on it leaves by the "
		"port, so keepalived, FRR or sshd run on it; IPv4 addresses put on it become ibgwd's own too"},
	{E(kernel_tap_rate), .type = T_UINT, .min = 1, .max = 10000000, .def = "20000",
	 .doc = "frames per second the exception path carries each way at most (a token bucket; the rest "
		"dropped and counted): a flood aimed at the kernel cannot take the workers or the kernel"},
	{E(removed_addr_reset), .type = T_UINT, .min = 0, .max = 1, .def = "0",
	 .doc = "when an address leaves the kernel TAP (a VIP moved away): 0: its connections finish, new "
		"ones are refused; 1: its connections are reset too (at their next segment)"},
	{E(flow_peer), .type = T_IPV4, .def = "0.0.0.0",
	 .doc = "the other gateway of a pair (its [eth] address; 0.0.0.0 = none): a TCP segment for a listener's "
		"port on an address from the kernel TAP (a VIP) that matches no connection here and opens none is "
		"passed to it once, so connections it still drains finish after the VIP moved here"},
	{E(flow_peer6), .type = T_IPV6, .def = "::",
	 .doc = "the same for IPv6 VIPs: the other gateway's address6 (:: = none); the segment passed on is "
		"marked with hop limit 0, which no router forwards, so it never comes back"},

	/* [route NAME] */
	{R(listen), .type = T_LISTEN, .required = true,
	 .doc = "ib:PORT or tcp:PORT; a tcp: listener takes connections to the port's [eth] address and, "
		"with address6 set, to its IPv6 addresses too (one listener, both families)"},
	{R(connect), .type = T_CONNECT, .required = true,
	 .doc = "tcp:HOST:PORT, ib:HOST:PORT, echo or discard; HOST is an IPv4 address or, for tcp:, an IPv6 "
		"one in brackets (`tcp:[2001:db8::10]:80`, which needs [eth] address6; no zones, no "
		"link-local); a pool is a comma-separated list of one kind, both families mixed, "
		"each backend optionally followed by weight=1..100, max=N (its own session limit) and "
		"state=ready, drain or maint: `tcp:198.18.0.2:80 weight=2, tcp:198.18.0.3:80 max=100`; the "
		"key again adds its backends to the pool (a pool longer than a line holds)"},
	{R(balance), .type = T_BALANCE, .def = "roundrobin",
	 .doc = "how a pool picks a backend: roundrobin (weighted), leastconn (fewest sessions per weight) or "
		"source (keyed hash of the client: TCP its address, IPv4 or IPv6, IB its port GID; stable while the usable backends stay the same)"},
	{R(check_interval_ms), .key = "check_interval", .type = T_DURATION, .unit_us = 1000, .min = 0,
	 .max = 3600 * 1000, .def = "0",
	 .doc = "time between active health checks of each backend (0 = none: a backend is judged by its "
		"sessions' connects only; else at least 100ms); a check is a connect (tcp: through the DPDK port; ib: an rsocket "
		"connect that completes), then closed"},
	{R(check_timeout_ms), .key = "check_timeout", .type = T_DURATION, .unit_us = 1000, .min = 100,
	 .max = 600 * 1000, .def = "1s",
	 .doc = "how long one check may take (connect, send, expect); unset and above check_interval: check_interval"},
	{R(rise), .type = T_UINT, .min = 1, .max = 100, .def = "2",
	 .doc = "consecutive passed checks that bring a down backend up"},
	{R(fall), .type = T_UINT, .min = 1, .max = 100, .def = "3",
	 .doc = "consecutive failed checks that take an up backend down"},
	{R(eject_after), .type = T_UINT, .min = 0, .max = 1000, .def = "5",
	 .doc = "passive check of a pool's backends: sessions in a row that a backend resets before sending its "
		"first byte (three clients among them at least), after which it takes no new session for "
		"eject_time (0 = never; never the pool's last usable backend)"},
	{R(eject_time_ms), .key = "eject_time", .type = T_DURATION, .unit_us = 1000, .min = 1000,
	 .max = 3600 * 1000, .def = "10s",
	 .doc = "how long an ejected backend takes no new session; doubled each time it is ejected again "
		"before it served a session (16 times at most)"},
	{R(check_send), .type = T_BYTES, .def = "",
	 .doc = "tcp checks: bytes sent once connected (C escapes \\r \\n \\t \\\\ \\xHH)"},
	{R(check_expect), .type = T_BYTES, .def = "",
	 .doc = "tcp checks: bytes the backend must send first for the check to pass (escapes as check_send)"},
	{R(allow), .type = T_CIDRS, .def = "::/0",
	 .doc = "sources allowed to open sessions: IPv4 and IPv6 networks in one list, such as "
		"`198.18.0.0/15, 2001:db8:100::/48`; ::/0 admits every source (both families, and IB peers "
		"without an IP address, AF_IB), 0.0.0.0/0 every IPv4 source only; an IB peer is judged by the "
		"address rdma_cm reports (IPv4, or IPv6 when it connected over IPv6); up to 32 networks, "
		"a list longer than a line goes on in more allow lines (each adds to it)"},
	{R(max_sessions), .type = T_UINT, .min = 1, .max = 1000000, .def = "256",
	 .doc = "sessions of this route at once"},
	{R(ib_rbuf_size), .key = "ib_rbuf", .type = T_SIZE, .min = 4 * KB, .max = 64 * MB, .def = "",
	 .doc = "IB receive buffer of this route's sessions (default [ib] rbuf_size)"},
	{R(ib_sbuf_size), .key = "ib_sbuf", .type = T_SIZE, .min = 4 * KB, .max = 64 * MB, .def = "",
	 .doc = "IB send buffer (default [ib] sbuf_size)"},
	{R(ib_sq_depth), .type = T_UINT, .min = 16, .max = 65534, .def = "",
	 .doc = "send queue depth of this route's IB connections (default: ib_sbuf / 1K, within 16..[ib] sq_depth)"},
	{R(ib_rq_depth), .type = T_UINT, .min = 16, .max = 65534, .def = "",
	 .doc = "receive queue depth = credits granted (default: ib_rbuf / 1K, within 16..[ib] rq_depth)"},
	{R(tcp_rbuf_size), .key = "tcp_rbuf", .type = T_SIZE, .min = 4 * KB, .max = 64 * MB, .def = "",
	 .doc = "TCP receive buffer (default [eth] rbuf_size)"},
	{R(tcp_sbuf_size), .key = "tcp_sbuf", .type = T_SIZE, .min = 4 * KB, .max = 64 * MB, .def = "",
	 .doc = "TCP send buffer (default [eth] sbuf_size)"},
	{R(connect_timeout_ms), .key = "connect_timeout", .type = T_DURATION, .unit_us = 1000, .min = 1000,
	 .max = 600 * 1000, .def = "5s",
	 .doc = "how long connecting the far side may take, every backend tried included (each try gets "
		"an equal share of what is left among the usable backends not tried yet, 1s at least)"},
	/* session limits: defaults in conf/ibgw.conf's words; 0 = no limit */
	{R(idle_timeout_ms), .key = "idle_timeout", .type = T_DURATION, .unit_us = 1000, .min = 0,
	 .max = 86400 * 1000, .def = "5m",
	 .doc = "a session that moves no byte either way for this long is reset (0 = never)"},
	{R(stall_timeout_ms), .key = "stall_timeout", .type = T_DURATION, .unit_us = 1000, .min = 0,
	 .max = 86400 * 1000, .def = "2m",
	 .doc = "a session whose bytes wait this long for a peer that takes none (TCP zero window, IB "
		"credits withheld) is reset (0 = never; an IB peer that takes nothing for 5 s while its "
		"connection holds copy buffers other connections wait for is reset then)"},
	{R(half_closed_timeout_ms), .key = "half_closed_timeout", .type = T_DURATION, .unit_us = 1000, .min = 0,
	 .max = 86400 * 1000, .def = "60s",
	 .doc = "after one direction ended (FIN/SHUTDOWN passed on), how long the other may stay silent "
		"before the session is reset (0 = never)"},
	/* PROXY protocol (gateway/proxy.c; the TLV layout is in README) */
	{R(proxy_protocol), .type = T_PROXY, .def = "off",
	 .doc = "v2: the first bytes sent to the tcp: destination are a PROXY protocol v2 header (client "
		"address and port, the listener's, TLVs: session id, route, IB peer GID and QPN)"},
	{R(accept_proxy), .type = T_PROXY, .def = "off",
	 .doc = "v2 (tcp: listeners): clients must open with a PROXY protocol v2 header, whose source "
		"replaces the peer's for allow and logs; none within 5s, or a malformed one, resets the connection"},
	{R(proxy_from), .type = T_CIDRS, .def = "",
	 .doc = "accept_proxy: the real TCP peers (the balancers) allowed to send a PROXY header, IPv4 and "
		"IPv6 networks in one list as allow; a connection from any other peer is reset before its "
		"header is read (counted as reason untrusted). Unset: any peer, with a warning at start-up and "
		"from -t (set ::/0 to say so on purpose)"},
};

#pragma GCC diagnostic pop

#define N_KEYS (sizeof(conf_keys) / sizeof(conf_keys[0]))
_Static_assert(N_KEYS <= CONF_MAX_KEYS, "struct conf's key_line[] is too short for the keys");

struct parser {
	const char *file;
	FILE *in;
	conf_error_fn err;
	void *arg;
	unsigned errors;
	unsigned lineno;
	char *line;
	size_t line_cap;

	struct conf *c;
	enum conf_section sec;
	struct conf_route *route;
	unsigned section_line[SEC_COUNT];	 /* first header line of each global section */
	unsigned seen[N_KEYS];			 /* global sections: line a key was set on */
	unsigned (*route_seen)[N_KEYS];		 /* per route */
};

static void perr(struct parser *p, unsigned line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void perr(struct parser *p, unsigned line, const char *fmt, ...)
{
	char msg[1024];
	int n;
	va_list ap;

	/* a long path keeps its tail (what tells files apart): the message must fit in msg */
	if (strlen(p->file) > 400)
		n = snprintf(msg, sizeof(msg), "...%s:%u: ", p->file + strlen(p->file) - 400, line);
	else
		n = snprintf(msg, sizeof(msg), "%s:%u: ", p->file, line);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
	va_end(ap);
	p->errors++;
	if (p->err)
		p->err(p->arg, msg);
}

/* ---- value parsers: return NULL on success or a static explanation ---- */

static const char *parse_u64(const char *v, uint64_t *out, const char **end)
{
	uint64_t x = 0;
	const char *s = v;

	if (!isdigit((unsigned char)*s))
		return "expected a number";
	while (isdigit((unsigned char)*s)) {
		unsigned d = *s++ - '0';
		if (x > (UINT64_MAX - d) / 10)
			return "number too large";
		x = x * 10 + d;
	}
	*out = x;
	*end = s;
	return NULL;
}

static const char *parse_uint(const char *v, uint64_t *out)
{
	const char *end, *e = parse_u64(v, out, &end);

	if (e)
		return e;
	return *end ? "expected a plain integer" : NULL;
}

static const char *parse_size(const char *v, uint64_t *out)
{
	const char *end, *e = parse_u64(v, out, &end);
	uint64_t mul = 1;

	if (e)
		return "expected a size such as 4096, 64K, 16M or 1G";
	switch (toupper((unsigned char)*end)) {
	case 0: break;
	case 'K': mul = KB; end++; break;
	case 'M': mul = MB; end++; break;
	case 'G': mul = GB; end++; break;
	case 'T': mul = 1024 * GB; end++; break;
	default: return "unknown size unit (use K, M, G or T)";
	}
	if (mul > 1 && (!strcasecmp(end, "iB") || !strcasecmp(end, "B")))
		end += strlen(end);
	if (*end)
		return "unknown size unit (use K, M, G or T)";
	if (*out > UINT64_MAX / mul)
		return "size too large";
	*out *= mul;
	return NULL;
}

/* Result in microseconds. */
static const char *parse_duration(const char *v, uint64_t *out)
{
	static const struct {
		const char *unit;
		uint64_t us;
	} units[] = {{"us", 1}, {"ms", 1000}, {"s", SEC}, {"m", 60 * SEC}, {"h", 3600 * SEC}};
	const char *end, *e = parse_u64(v, out, &end);

	if (e)
		return "expected a duration such as 500ms, 10s or 2m";
	if (*end == 0)
		return *out == 0 ? NULL : "duration needs a unit (us, ms, s, m or h)";
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (*out > UINT64_MAX / units[i].us)
			return "duration too large";
		*out *= units[i].us;
		return NULL;
	}
	return "unknown duration unit (use us, ms, s, m or h)";
}

static const char *parse_ipv4(const char *v, struct in_addr *a)
{
	return inet_pton(AF_INET, v, a) == 1 ? NULL : "expected an IPv4 address such as 198.18.0.1";
}

static const char *parse_port(const char *v, uint16_t *port)
{
	uint64_t p;

	if (parse_uint(v, &p) || p == 0 || p > 65535)
		return "expected a port number from 1 to 65535";
	*port = (uint16_t)p;
	return NULL;
}

static uint32_t prefix_mask(unsigned prefix)
{
	return prefix ? htonl(~0U << (32 - prefix)) : 0;
}

static const char *parse_ipv6(const char *v, struct in6_addr *a)
{
	if (inet_pton(AF_INET6, v, a) != 1)
		return "expected an IPv6 address such as 2001:db8::1";
	return NULL;
}

/* An interface address: ADDR/len, unicast (not ::, not multicast, not loopback, not link-local:
 * the link-local address comes from the port's MAC). */
static const char *parse_ifaddr6(const char *v, struct conf_cidr6 *c)
{
	char buf[64];
	const char *slash = strchr(v, '/');
	uint64_t len;

	if (!slash || strlen(v) >= sizeof(buf))
		return "expected IPv6/prefix such as 2001:db8::1/64";
	snprintf(buf, sizeof(buf), "%.*s", (int)(slash - v), v);
	if (parse_ipv6(buf, &c->addr))
		return "expected IPv6/prefix with an IPv6 address";
	if (parse_uint(slash + 1, &len) || len < 1 || len > 128)
		return "prefix length must be 1 to 128";
	if (IN6_IS_ADDR_UNSPECIFIED(&c->addr) || IN6_IS_ADDR_MULTICAST(&c->addr) || IN6_IS_ADDR_LOOPBACK(&c->addr) ||
	    IN6_IS_ADDR_LINKLOCAL(&c->addr) || IN6_IS_ADDR_V4MAPPED(&c->addr))
		return "not a unicast interface address (::, ::1, multicast, link-local and v4-mapped are not)";
	c->prefix = (uint8_t)len;
	return NULL;
}

/* a.b.c.d/len; with HOST_BITS_OK false the address must be the network address. */
static const char *parse_cidr(const char *v, struct conf_cidr *c, bool need_prefix, bool host_bits_ok)
{
	char buf[64];
	const char *slash = strchr(v, '/');
	uint64_t len = 32;

	if (strlen(v) >= sizeof(buf))
		return "expected a.b.c.d/prefix";
	if (!slash && need_prefix)
		return "expected a.b.c.d/prefix (prefix length missing)";
	snprintf(buf, sizeof(buf), "%.*s", slash ? (int)(slash - v) : (int)strlen(v), v);
	if (parse_ipv4(buf, &c->net))
		return "expected a.b.c.d/prefix with an IPv4 address";
	if (slash && (parse_uint(slash + 1, &len) || len > 32))
		return "prefix length must be 0 to 32";
	c->prefix = (uint8_t)len;
	if (!host_bits_ok && (c->net.s_addr & ~prefix_mask(c->prefix)))
		return "host bits set after the prefix length";
	if (need_prefix && c->net.s_addr == 0)
		return "0.0.0.0 is not an interface address";
	return NULL;
}

static const char *parse_hostport(const char *v, struct conf_hostport *hp)
{
	char buf[64];
	const char *colon = strrchr(v, ':');

	if (!colon || (size_t)(colon - v) >= sizeof(buf))
		return "expected IPv4:port such as 127.0.0.1:9100";
	snprintf(buf, sizeof(buf), "%.*s", (int)(colon - v), v);
	if (parse_ipv4(buf, &hp->addr))
		return "expected IPv4:port (the host must be an IPv4 address)";
	return parse_port(colon + 1, &hp->port);
}

/* A destination's HOST:PORT: a.b.c.d:PORT or [IPv6]:PORT (brackets required: the port is after the
 * last colon, and an address such as 2001:db8::10:80 would say nothing of where it ends). The host is
 * a unicast address a TCP or rsocket connect can reach. */
static const char *parse_dest(const char *v, struct conf_endpoint *ep)
{
	char host[XLT_IP_STRLEN];
	const char *port, *close;
	size_t n;

	if (v[0] == '[') {
		close = strchr(v, ']');
		if (!close || close[1] != ':')
			return "expected [IPv6]:PORT, such as [2001:db8::10]:80";
		n = (size_t)(close - v - 1);
		port = close + 2;
		if (memchr(v + 1, '%', n))
			return "IPv6 zones (%...) are not supported: the Ethernet side has one port";
		if (n == 0 || n >= sizeof(host))
			return "expected [IPv6]:PORT with an IPv6 address in the brackets";
		memcpy(host, v + 1, n);
		host[n] = 0;
		if (!strchr(host, ':') || xlt_ip_parse(host, &ep->addr))
			return "expected [IPv6]:PORT with an IPv6 address in the brackets";
		if (xlt_ip_is_v4(&ep->addr))
			return "an IPv4-mapped address: write an IPv4 destination as a.b.c.d:PORT";
	} else {
		port = strrchr(v, ':');
		if (!port)
			return "expected HOST:PORT, such as 198.18.0.2:80 or [2001:db8::10]:80";
		n = (size_t)(port - v);
		port++;
		if (memchr(v, ':', n))
			return "an IPv6 destination needs brackets: [2001:db8::10]:80";
		if (n == 0 || n >= sizeof(host))
			return "expected HOST:PORT with an IPv4 address or a bracketed IPv6 one";
		memcpy(host, v, n);
		host[n] = 0;
		if (xlt_ip_parse(host, &ep->addr))
			return "expected HOST:PORT with an IPv4 address or a bracketed IPv6 one";
	}
	if (parse_port(port, &ep->port))
		return "expected a port number from 1 to 65535 after the host";
	if (xlt_ip_is_v4(&ep->addr)) {
		uint32_t a = ntohl(xlt_ip_to_v4(&ep->addr));
		if (a == 0 || a == 0xffffffffu || (a >> 28) == 0xe)
			return "destination host must be a unicast IPv4 address (not 0.0.0.0, broadcast or "
			       "multicast)";
	} else {
		const struct in6_addr *a6 = (const struct in6_addr *)ep->addr.b;
		if (IN6_IS_ADDR_UNSPECIFIED(a6) || IN6_IS_ADDR_MULTICAST(a6) || IN6_IS_ADDR_LOOPBACK(a6))
			return "destination host must be a unicast IPv6 address (not ::, ::1 or multicast)";
		if (IN6_IS_ADDR_LINKLOCAL(a6))
			return "link-local IPv6 destinations are not supported (use a global or unique local "
			       "address)";
	}
	return NULL;
}

static const char *parse_endpoint(const char *v, struct conf_endpoint *ep, bool is_listen)
{
	const char *e;

	memset(ep, 0, sizeof(*ep));
	if (!is_listen && !strcmp(v, "echo")) {
		ep->kind = CONF_EP_ECHO;
		return NULL;
	}
	if (!is_listen && !strcmp(v, "discard")) {
		ep->kind = CONF_EP_DISCARD;
		return NULL;
	}
	if (!strncmp(v, "ib:", 3)) {
		ep->kind = CONF_EP_IB;
		v += 3;
	} else if (!strncmp(v, "tcp:", 4)) {
		ep->kind = CONF_EP_TCP;
		v += 4;
	} else {
		return is_listen ? "expected ib:PORT or tcp:PORT"
				 : "expected tcp:HOST:PORT, ib:HOST:PORT, echo or discard";
	}
	if (is_listen)
		return parse_port(v, &ep->port) ? "expected ib:PORT or tcp:PORT with a port from 1 to 65535" : NULL;
	if ((e = parse_dest(v, ep)))
		return e;
	/* rdma_cm resolves from [ib] bind, an IPv4 address: an IPv6 destination has no source there */
	if (ep->kind == CONF_EP_IB && !xlt_ip_is_v4(&ep->addr))
		return "ib: destinations are IPv4 only (rdma_cm connects from [ib] bind, an IPv4 address)";
	return NULL;
}

/* A backend's options after its endpoint: weight=N max=N state=ready|drain|maint. */
static const char *parse_backend_opt(const char *tok, struct conf_backend *b)
{
	uint64_t x;

	if (!strncmp(tok, "weight=", 7)) {
		if (parse_uint(tok + 7, &x) || x < 1 || x > 100)
			return "weight= takes 1 to 100";
		b->weight = (uint32_t)x;
	} else if (!strncmp(tok, "max=", 4)) {
		if (parse_uint(tok + 4, &x) || x < 1 || x > 1000000)
			return "max= takes 1 to 1000000";
		b->max_sessions = (uint32_t)x;
	} else if (!strncmp(tok, "state=", 6)) {
		if (!strcmp(tok + 6, "ready"))
			b->state = CONF_BACKEND_READY;
		else if (!strcmp(tok + 6, "drain"))
			b->state = CONF_BACKEND_DRAIN;
		else if (!strcmp(tok + 6, "maint"))
			b->state = CONF_BACKEND_MAINT;
		else
			return "state= takes ready, drain or maint";
	} else {
		return "unknown backend option (expected weight=N, max=N or state=ready|drain|maint)";
	}
	return NULL;
}

/* connect: one destination, or a pool: comma-separated backends of one kind, each "KIND:HOST:PORT"
 * followed by options. Fills R's connect (the first) and backends; APPEND (the key again: a pool longer
 * than a line holds) adds to the backends the route has. */
static const char *parse_connect(const char *v, struct conf_route *r, char *msgbuf, size_t len, bool append)
{
	char buf[CONF_STR_MAX], *entry, *next;
	const char *e;

	if (strlen(v) >= sizeof(buf))
		return "list too long";
	snprintf(buf, sizeof(buf), "%s", v);
	if (append && (r->connect.kind == CONF_EP_ECHO || r->connect.kind == CONF_EP_DISCARD))
		return "echo and discard stand alone (no pool, no options)";
	if (!append) {
		memset(&r->connect, 0, sizeof(r->connect));
		memset(r->backends, 0, sizeof(r->backends));
		r->n_backends = 0;
	}
	for (entry = buf; entry; entry = next) {
		char *save2 = NULL, *tok;
		struct conf_backend *b;

		/* split by hand: strtok would pass over an empty entry (",,") without a word */
		if ((next = strchr(entry, ',')))
			*next++ = 0;
		tok = strtok_r(entry, " \t", &save2);

		if (!tok)
			return "empty entry in the backend list";
		if (r->n_backends == CONF_MAX_BACKENDS) {
			snprintf(msgbuf, len, "too many backends (at most %d)", CONF_MAX_BACKENDS);
			return msgbuf;
		}
		b = &r->backends[r->n_backends];
		if ((e = parse_endpoint(tok, &b->ep, false)))
			return e;
		if (b->ep.kind == CONF_EP_ECHO || b->ep.kind == CONF_EP_DISCARD) {
			if (r->n_backends || next || strtok_r(NULL, " \t", &save2))
				return "echo and discard stand alone (no pool, no options)";
			r->connect = b->ep;
			memset(b, 0, sizeof(*b));
			return NULL;
		}
		if (r->n_backends && b->ep.kind != r->backends[0].ep.kind)
			return "a pool has backends of one kind (all tcp: or all ib:)";
		for (uint32_t i = 0; i < r->n_backends; i++)
			if (xlt_ip_eq(&r->backends[i].ep.addr, &b->ep.addr) && r->backends[i].ep.port == b->ep.port) {
				snprintf(msgbuf, len, "backend %s listed twice", tok);
				return msgbuf;
			}
		b->weight = 1;
		while ((tok = strtok_r(NULL, " \t", &save2)))
			if ((e = parse_backend_opt(tok, b))) {
				snprintf(msgbuf, len, "'%s': %s", tok, e);
				return msgbuf;
			}
		r->n_backends++;
	}
	if (!r->n_backends)
		return "expected tcp:HOST:PORT, ib:HOST:PORT, echo or discard";
	r->connect = r->backends[0].ep;
	return NULL;
}

/* C escapes into bytes: \r \n \t \0 \\ \xHH. */
static const char *parse_bytes(const char *v, struct conf_bytes *out)
{
	out->len = 0;
	for (; *v; v++) {
		unsigned c = (unsigned char)*v;
		if (c == '\\') {
			v++;
			switch (*v) {
			case 'r': c = '\r'; break;
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case '0': c = 0; break;
			case '\\': c = '\\'; break;
			case 'x':
				if (!isxdigit((unsigned char)v[1]) || !isxdigit((unsigned char)v[2]))
					return "\\x takes two hex digits";
				{
					char h[3] = {v[1], v[2], 0};
					c = (unsigned)strtoul(h, NULL, 16);
				}
				v += 2;
				break;
			default: return "unknown escape (expected \\r \\n \\t \\0 \\\\ or \\xHH)";
			}
		}
		if (out->len == CONF_CHECK_BYTES)
			return "too long (at most 128 bytes)";
		out->b[out->len++] = (uint8_t)c;
	}
	return NULL;
}

/* One allow entry: a.b.c.d[/0..32] or IPv6[/0..128], the network address itself (host bits clear). */
static const char *parse_allow(const char *tok, struct xlt_cidr *c)
{
	char host[XLT_IP_STRLEN];
	size_t n = strcspn(tok, "/");
	struct xlt_ip ip;

	if (strchr(tok, '%'))
		return "IPv6 zones (%...) have no place in an allow list";
	if (tok[0] == '[')
		return "no brackets in an allow list: 2001:db8::/32";
	if (n == 0 || n >= sizeof(host))
		return "expected a.b.c.d/prefix or IPv6/prefix";
	memcpy(host, tok, n);
	host[n] = 0;
	if (xlt_ip_parse(host, &ip))
		return "expected a.b.c.d/prefix or IPv6/prefix with an address before the /";
	/* ::ffff:a.b.c.d[/n] would be an IPv4 net in disguise (with n counted as IPv4's): one spelling */
	if (strchr(host, ':') && xlt_ip_is_v4(&ip))
		return "an IPv4-mapped net: write IPv4 nets as a.b.c.d/prefix";
	if (xlt_cidr_parse(tok, c))
		return xlt_ip_is_v4(&ip) ? "IPv4 prefix length must be 0 to 32"
		                         : "IPv6 prefix length must be 0 to 128";
	if (!xlt_ip_eq(&ip, &c->net))
		return "host bits set after the prefix length";
	/* ::/1 .. ::/96 hold the IPv4-mapped range too: an IPv6 net that admits every IPv4 source is a
	 * slip, not an intent (::/0 says "everyone" outright) */
	if (!xlt_ip_is_v4(&ip) && c->prefix > 0) {
		struct xlt_ip any4 = xlt_ip_v4(0);

		if (xlt_cidr_match(c, &any4))
			return "this IPv6 net covers every IPv4 address (::ffff:0:0/96): write ::/0 for everyone, IPv4 nets as a.b.c.d/prefix";
	}
	return NULL;
}

/* A CIDR list into LIST (CONF_MAX_ALLOW entries), its length into *N; APPEND: after the N there
 * (the key repeated: a list longer than a line is written over several). */
static const char *parse_cidrs(const char *v, struct xlt_cidr *list, uint32_t *n, bool append)
{
	char buf[CONF_STR_MAX], *save = NULL, *tok;

	if (strlen(v) >= sizeof(buf))
		return "list too long";
	snprintf(buf, sizeof(buf), "%s", v);
	if (!append)
		*n = 0;
	for (tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		const char *e;
		if (*n == CONF_MAX_ALLOW)
			return "too many entries (at most 32)";
		if ((e = parse_allow(tok, &list[*n])))
			return e;
		(*n)++;
	}
	return *n ? NULL : "empty list (use ::/0 to allow everyone)";
}

/* T_CIDRS fields are an array of CONF_MAX_ALLOW followed by their count (conf_key.size: the array) */
_Static_assert(offsetof(struct conf_route, n_allow) ==
                   offsetof(struct conf_route, allow) + sizeof(((struct conf_route *)0)->allow),
               "n_allow must follow allow");
_Static_assert(offsetof(struct conf_route, n_proxy_from) ==
                   offsetof(struct conf_route, proxy_from) + sizeof(((struct conf_route *)0)->proxy_from),
               "n_proxy_from must follow proxy_from");

/* ---- what the config may hand to DPDK ----
 * eal_args and vdev go to rte_eal_init as root. Refused: what loads code (-d), adds devices besides
 * the port (--vdev: the port is [eth] vdev), writes or creates files and device nodes where the
 * config says (--trace*, --create-uio-dev, a --file-prefix with a path, pcap's rx_pcap/tx_pcap,
 * softnic's firmware script), opens another socket (--telemetry) or joins another DPDK process's
 * memory (--proc-type other than primary). getopt_long takes any unambiguous prefix of a long
 * option, so a token is judged by the options it could be a prefix of. */
static const struct {
	const char *name;
	const char *why;
} eal_refused[] = {
	{"driver-path", "loads shared objects"},
	{"vdev", "adds a device (the port is [eth] vdev)"},
	{"trace", "writes trace files"},
	{"trace-dir", "writes trace files"},
	{"trace-bufsz", "writes trace files"},
	{"trace-mode", "writes trace files"},
	{"create-uio-dev", "creates device nodes"},
	{"telemetry", "opens a telemetry socket (ibgwd serves /metrics)"},
	{"log-file", "writes a file"},
};

/* "abc" is a prefix of OPT (getopt_long's abbreviations). */
static bool opt_prefix(const char *name, size_t n, const char *opt)
{
	return n > 0 && n <= strlen(opt) && !strncmp(name, opt, n);
}

static const char *eal_args_check(const char *v, char *msgbuf, size_t len)
{
	char buf[CONF_STR_MAX], *save = NULL, *tok, *next;

	if (strlen(v) >= sizeof(buf))
		return "value too long";
	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, " \t", &save); tok; tok = next) {
		next = strtok_r(NULL, " \t", &save);
		if (tok[0] != '-' || tok[1] == 0)
			continue;
		if (tok[1] != '-') {
			/* short options, clustered as getopt allows ("-vd x"): flags h and v, the rest take an
			 * argument (the rest of the token or the next one) */
			for (const char *o = tok + 1; *o; o++) {
				if (*o == 'd') {
					snprintf(msgbuf, len, "'%s' loads shared objects (-d); refused", tok);
					return msgbuf;
				}
				if (*o != 'h' && *o != 'v')
					break;
			}
			continue;
		}
		{
			const char *name = tok + 2, *eq = strchr(name, '='), *val = eq ? eq + 1 : next;
			size_t n = eq ? (size_t)(eq - name) : strlen(name);

			for (size_t i = 0; i < sizeof(eal_refused) / sizeof(eal_refused[0]); i++)
				if (opt_prefix(name, n, eal_refused[i].name)) {
					snprintf(msgbuf, len, "'%s' %s; refused", tok, eal_refused[i].why);
					return msgbuf;
				}
			if (opt_prefix(name, n, "proc-type") && (!val || strcmp(val, "primary"))) {
				snprintf(msgbuf, len, "'%s': only --proc-type=primary (ibgwd shares its memory with no one)",
					 tok);
				return msgbuf;
			}
			if (opt_prefix(name, n, "file-prefix") && val) {
				bool ok = val[0] && val[0] != '.';
				for (const char *c = val; *c && ok; c++)
					ok = isalnum((unsigned char)*c) || *c == '_' || *c == '-' || *c == '.';
				if (!ok) {
					snprintf(msgbuf, len, "--file-prefix '%s': use letters, digits, _ - . (it names a directory in DPDK's runtime directory)", val);
					return msgbuf;
				}
			}
		}
	}
	return NULL;
}

static const char *vdev_check(const char *v, char *msgbuf, size_t len)
{
	char buf[CONF_STR_MAX], *save = NULL, *tok;

	if (strlen(v) >= sizeof(buf))
		return "value too long";
	snprintf(buf, sizeof(buf), "%s", v);
	tok = strtok_r(buf, ",", &save); /* the driver */
	while ((tok = strtok_r(NULL, ",", &save))) {
		size_t n = strcspn(tok, "=");
		if ((n >= 5 && !strncmp(tok + n - 5, "_pcap", 5)) || (n == 8 && !strncmp(tok, "firmware", 8))) {
			snprintf(msgbuf, len, "'%.*s' makes DPDK read or write a file the config names; refused", (int)n,
				 tok);
			return msgbuf;
		}
	}
	return NULL;
}

/* User and group names as useradd allows them. */
static const char *name_check(const char *v)
{
	if (v[0] == '-')
		return "a name cannot start with '-'";
	for (const char *c = v; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.')
			return "expected a user or group name (letters, digits, _ - .)";
	return NULL;
}

/* Whether path P has a ".." component. */
static bool dotdot(const char *p)
{
	for (const char *c = p; (c = strstr(c, "..")); c += 2)
		if ((c == p || c[-1] == '/') && (!c[2] || c[2] == '/'))
			return true;
	return false;
}

static const char *const level_names[] = {
	[CONF_LOG_ERROR] = "error", [CONF_LOG_WARNING] = "warning", [CONF_LOG_NOTICE] = "notice",
	[CONF_LOG_INFO] = "info",   [CONF_LOG_DEBUG] = "debug",
};

const char *conf_log_level_name(uint32_t level)
{
	return level <= CONF_LOG_DEBUG && level_names[level] ? level_names[level] : "?";
}

static void *field_base(struct conf *c, struct conf_route *r, enum conf_section s)
{
	switch (s) {
	case SEC_GATEWAY: return &c->gateway;
	case SEC_IB: return &c->ib;
	case SEC_ETH: return &c->eth;
	case SEC_ROUTE: return r;
	default: return NULL;
	}
}

static void store_uint(void *dst, size_t size, uint64_t v)
{
	if (size == sizeof(uint64_t))
		*(uint64_t *)dst = v;
	else
		*(uint32_t *)dst = (uint32_t)v;
}

/* Parse V for key K into its field (APPEND: a repeated list key adds to it). Returns NULL or a message
 * (which may use MSGBUF). */
static const char *set_value(const struct conf_key *k, void *base, const char *v, char *msgbuf, size_t len,
                             bool append)
{
	void *dst = (char *)base + k->offset;
	uint64_t x = 0;
	const char *e = NULL;

	switch (k->type) {
	case T_UINT:
	case T_SIZE:
	case T_DURATION:
		if (k->type == T_UINT)
			e = parse_uint(v, &x);
		else if (k->type == T_SIZE)
			e = parse_size(v, &x);
		else
			e = parse_duration(v, &x);
		if (e)
			return e;
		if (k->type == T_DURATION) {
			if (x % k->unit_us) {
				snprintf(msgbuf, len, "'%s' is finer than this key's resolution (%s)", v,
					 k->unit_us == 1000 ? "1ms" : "1us");
				return msgbuf;
			}
			x /= k->unit_us;
		}
		if (x < k->min || x > k->max) {
			snprintf(msgbuf, len, "'%s' is out of range [%" PRIu64 ", %" PRIu64 "%s]", v, k->min, k->max,
				 k->type == T_DURATION ? (k->unit_us == 1000 ? " ms" : " us")
						       : (k->type == T_SIZE ? " bytes" : ""));
			return msgbuf;
		}
		store_uint(dst, k->size, x);
		return NULL;
	case T_STRING:
	case T_EALARGS:
	case T_VDEV:
	case T_NAME:
	case T_ACCESSLOG:
		if (strlen(v) >= k->size) {
			snprintf(msgbuf, len, "value too long (at most %zu characters)", k->size - 1);
			return msgbuf;
		}
		if (k->type == T_EALARGS && (e = eal_args_check(v, msgbuf, len)))
			return e;
		if (k->type == T_VDEV && (e = vdev_check(v, msgbuf, len)))
			return e;
		if (k->type == T_NAME && (e = name_check(v)))
			return e;
		if (k->type == T_ACCESSLOG && v[0] && strcmp(v, "syslog") && strncmp(v, "syslog:/", 8) && v[0] != '/')
			return "expected an absolute path, syslog, syslog:/SOCKET, or nothing (off)";
		/* the log is opened by the name, and only /dev/stdout-like names follow links: one that
		 * climbs out of a directory ("/dev/../var/x") would pass for what it is not */
		if (k->type == T_ACCESSLOG && v[0] == '/' && dotdot(v))
			return "a path with a '..' component (name the file by its direct path)";
		memcpy(dst, v, strlen(v) + 1);
		return NULL;
	case T_IPV4:
		return parse_ipv4(v, dst);
	case T_IFADDR:
		return parse_cidr(v, dst, true, true);
	case T_IPV6:
		return parse_ipv6(v, dst);
	case T_IFADDR6:
		if (!v[0]) {
			memset(dst, 0, sizeof(struct conf_cidr6));
			return NULL;
		}
		return parse_ifaddr6(v, dst);
	case T_CIDRS:
		return parse_cidrs(v, dst, (uint32_t *)((char *)dst + k->size), append);
	case T_HOSTPORT:
		return parse_hostport(v, dst);
	case T_LOGLEVEL:
		for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
			if (level_names[i] && !strcmp(v, level_names[i])) {
				*(uint32_t *)dst = i;
				return NULL;
			}
		return "expected error, warning, notice, info or debug";
	case T_LOGTARGET:
		if (!strcmp(v, "stderr") || !strcmp(v, "syslog")) {
			*(uint32_t *)dst = strcmp(v, "stderr") ? CONF_LOG_SYSLOG : CONF_LOG_STDERR;
			return NULL;
		}
		return "expected stderr or syslog";
	case T_PROXY:
		if (!strcmp(v, "off") || !strcmp(v, "v2")) {
			*(uint32_t *)dst = strcmp(v, "off") ? CONF_PROXY_V2 : CONF_PROXY_OFF;
			return NULL;
		}
		return "expected off or v2";
	case T_CONNECT:
		e = parse_connect(v, base, msgbuf, len, append);
		if (e) { /* a half-parsed pool would draw follow-up errors about a kind never given */
			memset(dst, 0, sizeof(struct conf_endpoint));
			((struct conf_route *)base)->n_backends = 0;
		}
		return e;
	case T_BALANCE:
		if (!strcmp(v, "roundrobin"))
			*(uint32_t *)dst = CONF_BALANCE_ROUNDROBIN;
		else if (!strcmp(v, "leastconn"))
			*(uint32_t *)dst = CONF_BALANCE_LEASTCONN;
		else if (!strcmp(v, "source"))
			*(uint32_t *)dst = CONF_BALANCE_SOURCE;
		else
			return "expected roundrobin, leastconn or source";
		return NULL;
	case T_BYTES:
		return parse_bytes(v, dst);
	case T_LISTEN:
		e = parse_endpoint(v, dst, k->type == T_LISTEN);
		if (e) /* a half-parsed endpoint would draw follow-up errors about a kind never given */
			memset(dst, 0, sizeof(struct conf_endpoint));
		return e;
	}
	return "internal: unknown type";
}

static void apply_defaults(struct conf *c, struct conf_route *r, enum conf_section s)
{
	char msg[256];

	for (size_t i = 0; i < N_KEYS; i++) {
		const struct conf_key *k = &conf_keys[i];
		if (k->section != s || !k->def || !k->def[0])
			continue;
		if (set_value(k, field_base(c, r, s), k->def, msg, sizeof(msg), false))
			abort(); /* a default the parser rejects is a bug in the table */
	}
}

static const struct conf_key *find_key(enum conf_section s, const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (conf_keys[i].section == s && !strcmp(conf_keys[i].key, name))
			return &conf_keys[i];
	return NULL;
}

/* ---- line reader: counts lines, checks their shape, tracks section headers ---- */

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

static bool valid_route_name(const char *n)
{
	size_t len = strlen(n);

	if (len == 0 || len > CONF_NAME_MAX)
		return false;
	for (; *n; n++)
		if (!isalnum((unsigned char)*n) && *n != '_' && *n != '-' && *n != '.')
			return false;
	return true;
}

static void begin_section(struct parser *p, char *name)
{
	struct conf *c = p->c;

	p->route = NULL;
	p->sec = SEC_INVALID;
	for (int s = SEC_GATEWAY; s <= SEC_ETH; s++) {
		if (strcmp(name, section_names[s]))
			continue;
		if (p->section_line[s])
			perr(p, p->lineno, "duplicate section [%s] (first at line %u)", name, p->section_line[s]);
		else
			p->section_line[s] = p->lineno;
		p->sec = s;
		return;
	}
	if (!strncmp(name, "route", 5) && (name[5] == 0 || isspace((unsigned char)name[5]))) {
		char *rname = trim(name + 5);
		if (!valid_route_name(rname)) {
			perr(p, p->lineno, "route name '%s' must be 1 to %d characters of A-Z a-z 0-9 _ - .", rname,
			     CONF_NAME_MAX);
			return;
		}
		for (uint32_t i = 0; i < c->n_routes; i++)
			if (!strcmp(c->routes[i].name, rname)) {
				perr(p, p->lineno, "duplicate route name '%s' (first at line %u)", rname,
				     c->routes[i].line);
				return;
			}
		if (c->n_routes == CONF_MAX_ROUTES) {
			perr(p, p->lineno, "too many routes (at most %d)", CONF_MAX_ROUTES);
			return;
		}
		p->route = &c->routes[c->n_routes++];
		snprintf(p->route->name, sizeof(p->route->name), "%s", rname);
		p->route->line = p->lineno;
		apply_defaults(c, p->route, SEC_ROUTE);
		p->sec = SEC_ROUTE;
		return;
	}
	perr(p, p->lineno, "unknown section [%s] (expected gateway, ib, eth or route NAME)", name);
}

/* inih calls this for each line; we hand it either the line or an empty one when we already dealt
 * with it (section headers are parsed here, bad lines reported here). */
static char *reader(char *str, int num, void *stream)
{
	struct parser *p = stream;
	ssize_t n = getline(&p->line, &p->line_cap, p->in);
	char *s;

	if (n < 0)
		return NULL;
	p->lineno++;
	if (memchr(p->line, 0, (size_t)n)) {
		perr(p, p->lineno, "NUL byte in line");
		goto blank;
	}
	if (p->lineno == 1 && !strncmp(p->line, "\xEF\xBB\xBF", 3))
		memmove(p->line, p->line + 3, (size_t)n - 2);
	if (p->line[0] == ' ' || p->line[0] == '\t') {
		s = trim(p->line);
		if (*s && *s != ';' && *s != '#' && *s != '[') {
			/* inih would glue it to the previous value; ibgw keeps one key per line */
			perr(p, p->lineno, "indented line: continuation lines are not supported");
			goto blank;
		}
	}
	s = trim(p->line);
	if (*s == 0 || *s == ';' || *s == '#')
		goto blank;
	if (*s == '[') {
		char *close = strchr(s, ']');
		char *rest = close ? trim(close + 1) : NULL;
		if (!close || (*rest && *rest != ';' && *rest != '#')) {
			perr(p, p->lineno, "malformed section header (expected [name])");
			p->sec = SEC_INVALID;
			p->route = NULL;
			goto blank;
		}
		*close = 0;
		begin_section(p, trim(s + 1));
		goto blank;
	}
	if (!strchr(s, '=')) {
		perr(p, p->lineno, "expected 'key = value' or '[section]'");
		goto blank;
	}
	if (*s == '=') {
		perr(p, p->lineno, "missing key before '='");
		goto blank;
	}
	if (strlen(s) + 2 > (size_t)num) {
		perr(p, p->lineno, "line too long (at most %d characters)", num - 2);
		goto blank;
	}
	if (p->sec == SEC_NONE) {
		perr(p, p->lineno, "key outside of any section");
		goto blank;
	}
	if (p->sec == SEC_INVALID)
		goto blank;
	snprintf(str, (size_t)num, "%s\n", s);
	return str;
blank:
	snprintf(str, (size_t)num, "\n");
	return str;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;
	const struct conf_key *k = find_key(p->sec, name);
	unsigned *seen;
	char msg[256];
	const char *e;
	bool append;

	(void)section; /* we track sections ourselves (see reader) */
	if (!k) {
		perr(p, p->lineno, "unknown key '%s' in [%s]", name,
		     p->sec == SEC_ROUTE ? "route" : section_names[p->sec]);
		return 1;
	}
	seen = p->sec == SEC_ROUTE ? &p->route_seen[p->route - p->c->routes][k - conf_keys]
				   : &p->seen[k - conf_keys];
	/* (a list of networks or a pool may go on over several lines: the key again adds to it) */
	append = *seen && (k->type == T_CIDRS || k->type == T_CONNECT);
	if (*seen && !append) {
		perr(p, p->lineno, "duplicate key '%s' (first at line %u)", name, *seen);
		return 1;
	}
	if (!*seen)
		*seen = p->lineno;
	if (*value == 0 && k->type != T_STRING && k->type != T_EALARGS && k->type != T_VDEV && k->type != T_NAME &&
	    k->type != T_BYTES && k->type != T_ACCESSLOG) {
		perr(p, p->lineno, "empty value for '%s'", name);
		return 1;
	}
	if ((e = set_value(k, field_base(p->c, p->route, p->sec), value, msg, sizeof(msg), append)))
		perr(p, p->lineno, "%s: %s", name, e);
	return 1;
}

/* ---- whole-file checks, after every line was read ---- */

static unsigned route_key_line(struct parser *p, uint32_t ri, const char *key)
{
	const struct conf_key *k = find_key(SEC_ROUTE, key);
	unsigned l = p->route_seen[ri][k - conf_keys];
	return l ? l : p->c->routes[ri].line;
}

static bool route_has_ib(const struct conf_route *r)
{
	return r->listen.kind == CONF_EP_IB || r->connect.kind == CONF_EP_IB;
}

/* TCP connections of one session: a TCP relay (tcp -> tcp) holds two */
static unsigned route_n_tcp(const struct conf_route *r)
{
	return (r->listen.kind == CONF_EP_TCP) + (r->connect.kind == CONF_EP_TCP);
}

bool conf_route_lends(const struct conf_route *r)
{
	return route_has_ib(r) && route_n_tcp(r) == 1;
}

uint64_t conf_route_ib_copy_bytes(const struct conf_route *r)
{
	return route_has_ib(r) && !conf_route_lends(r) ? r->ib_sbuf_size : 0;
}

uint32_t conf_route_ib_copy_limit(const struct conf_route *r)
{
	if (!conf_route_lends(r))
		return 0;
	return r->ib_sbuf_size < CONF_LENT_IB_COPY ? (uint32_t)r->ib_sbuf_size : CONF_LENT_IB_COPY;
}

uint64_t conf_route_session_bytes(const struct conf_route *r)
{
	unsigned n_tcp = route_n_tcp(r);
	uint64_t sbuf = conf_route_lends(r) ? 0 : r->tcp_sbuf_size;

	return (route_has_ib(r) ? r->ib_rbuf_size + conf_route_ib_copy_bytes(r) : 0) +
	       n_tcp * (r->tcp_rbuf_size + sbuf);
}

static const char *human_size(uint64_t v, char *buf, size_t len);

const char *conf_route_relay_str(const struct conf_route *r, char *buf, size_t len)
{
	char a[24], b[24];

	if (conf_route_lends(r))
		snprintf(buf, len, "relays by reference (copies in frames: ib %s, tcp %s at most)",
		         human_size(conf_route_ib_copy_limit(r), a, sizeof(a)),
		         human_size(CONF_LENT_TCP_COPY, b, sizeof(b)));
	else if (r->connect.kind == CONF_EP_ECHO || r->connect.kind == CONF_EP_DISCARD)
		snprintf(buf, len, "relays by copy (%s)", r->connect.kind == CONF_EP_ECHO ? "echo" : "discard");
	else
		snprintf(buf, len, "relays by copy (tcp -> tcp)");
	return buf;
}

/* Derived queue depth: one entry per KiB of buffer (a message smaller than that is rare in bulk and
 * costs a credit, not space), within 16 .. the [ib] maximum. */
static uint32_t ib_depth_of(uint64_t buf, uint32_t max)
{
	uint64_t d = buf / KB;

	return d < 16 ? 16 : d > max ? max : (uint32_t)d;
}

/* A route's IB buffers (whole pages) and queue depths (derived when unset, never above [ib]'s: the
 * connection objects kept ready for active opens are sized by those). */
static void check_ib_route(struct parser *p, uint32_t i)
{
	struct conf *c = p->c;
	struct conf_route *r = &c->routes[i];

	if (r->ib_rbuf_size % (4 * KB))
		perr(p, route_key_line(p, i, "ib_rbuf"), "route '%s': ib_rbuf must be a multiple of 4K", r->name);
	if (r->ib_sbuf_size % (4 * KB))
		perr(p, route_key_line(p, i, "ib_sbuf"), "route '%s': ib_sbuf must be a multiple of 4K", r->name);
	if (!r->ib_sq_depth)
		r->ib_sq_depth = ib_depth_of(r->ib_sbuf_size, c->ib.sq_depth);
	else if (r->ib_sq_depth > c->ib.sq_depth)
		perr(p, route_key_line(p, i, "ib_sq_depth"), "route '%s': ib_sq_depth %u above [ib] sq_depth %u",
		     r->name, r->ib_sq_depth, c->ib.sq_depth);
	if (!r->ib_rq_depth)
		r->ib_rq_depth = ib_depth_of(r->ib_rbuf_size, c->ib.rq_depth);
	else if (r->ib_rq_depth > c->ib.rq_depth)
		perr(p, route_key_line(p, i, "ib_rq_depth"), "route '%s': ib_rq_depth %u above [ib] rq_depth %u",
		     r->name, r->ib_rq_depth, c->ib.rq_depth);
}

/* Whether A lies in B's first PREFIX bits (both IPv6). */
static bool in6_same_prefix(const struct in6_addr *a, const struct in6_addr *b, unsigned prefix)
{
	struct xlt_ip ia, ib;

	memcpy(ia.b, a, 16);
	memcpy(ib.b, b, 16);
	struct xlt_cidr net = xlt_cidr_make(&ib, prefix);
	return xlt_cidr_match(&net, &ia);
}

static void check(struct parser *p)
{
	struct conf *c = p->c;
	uint64_t total = 0;
	char a[64], b[64], e[CONF_EP_STRLEN];

	if (c->eth.vdev[0] && c->eth.address.prefix == 0)
		perr(p, p->section_line[SEC_ETH], "[eth] vdev is set but address is missing");
	if (c->eth.gateway.s_addr && c->eth.address.prefix &&
	    ((c->eth.gateway.s_addr ^ c->eth.address.net.s_addr) & prefix_mask(c->eth.address.prefix)))
		perr(p, p->seen[find_key(SEC_ETH, "gateway") - conf_keys],
		     "gateway %s is not inside the port's network %s/%u", inet_ntop(AF_INET, &c->eth.gateway, a, 64),
		     inet_ntop(AF_INET,
			       &(struct in_addr){c->eth.address.net.s_addr & prefix_mask(c->eth.address.prefix)}, b,
			       64),
		     c->eth.address.prefix);
	/* the other gateway of a pair is a neighbour on the port's link, and not ourselves: segments
	 * passed anywhere else would leave by the gateway, or come back */
	if (c->eth.flow_peer.s_addr && c->eth.address.prefix &&
	    (((c->eth.flow_peer.s_addr ^ c->eth.address.net.s_addr) & prefix_mask(c->eth.address.prefix)) ||
	     c->eth.flow_peer.s_addr == c->eth.address.net.s_addr))
		perr(p, p->seen[find_key(SEC_ETH, "flow_peer") - conf_keys],
		     "flow_peer %s must be another address of the port's network (the other gateway's [eth] "
		     "address)",
		     inet_ntop(AF_INET, &c->eth.flow_peer, a, 64));
	if (!IN6_IS_ADDR_UNSPECIFIED(&c->eth.flow_peer6) &&
	    (!c->eth.address6.prefix || IN6_IS_ADDR_MULTICAST(&c->eth.flow_peer6) ||
	     !memcmp(&c->eth.flow_peer6, &c->eth.address6.addr, 16) ||
	     !in6_same_prefix(&c->eth.flow_peer6, &c->eth.address6.addr, c->eth.address6.prefix)))
		perr(p, p->seen[find_key(SEC_ETH, "flow_peer6") - conf_keys],
		     "flow_peer6 %s must be another address of [eth] address6's network (the other gateway's "
		     "address6)",
		     inet_ntop(AF_INET6, &c->eth.flow_peer6, a, 64));
	/* every session would get a line per tick (100 ms): a flood, not a log */
	if (c->gateway.access_log_interval_ms && c->gateway.access_log_interval_ms < 1000)
		perr(p, p->seen[find_key(SEC_GATEWAY, "access_log_interval") - conf_keys],
		     "access_log_interval: below 1s (0 = off)");
	if (c->ib.sq_depth < 8)
		perr(p, p->section_line[SEC_IB], "sq_depth too small");
	/* IB rings are registered and advertised in halves: whole pages keep every half and every
	 * advert page-aligned (an odd size broke each connection of its route) */
	if (c->ib.keepalive_ms && c->ib.keepalive_ms < 100)
		/* a peer may send 100 a second at most (ib_side/conn.c IB_FREE_RX_MAX): another ibgwd too */
		perr(p, p->seen[find_key(SEC_IB, "keepalive") - conf_keys],
		     "keepalive must be 0 (off) or at least 100ms");
	if (c->ib.rbuf_size % (4 * KB))
		perr(p, p->seen[find_key(SEC_IB, "rbuf_size") - conf_keys], "rbuf_size must be a multiple of 4K");
	if (c->ib.sbuf_size % (4 * KB))
		perr(p, p->seen[find_key(SEC_IB, "sbuf_size") - conf_keys], "sbuf_size must be a multiple of 4K");

	for (uint32_t i = 0; i < c->n_routes; i++) {
		struct conf_route *r = &c->routes[i];
		const struct conf_key *k;
		bool missing = false;

		for (k = conf_keys; k < conf_keys + N_KEYS; k++)
			if (k->section == SEC_ROUTE && k->required && !p->route_seen[i][k - conf_keys]) {
				perr(p, r->line, "route '%s' has no '%s' (%s)", r->name, k->key, k->doc);
				missing = true;
			}
		if (missing || !r->listen.kind || !r->connect.kind)
			continue; /* already reported */
		if (r->listen.kind == CONF_EP_IB && r->connect.kind == CONF_EP_IB)
			perr(p, route_key_line(p, i, "connect"),
			     "route '%s': an ib listener must connect to tcp:, echo or discard", r->name);
		if ((r->listen.kind == CONF_EP_TCP || r->connect.kind == CONF_EP_TCP) && !c->eth.vdev[0])
			perr(p, route_key_line(p, i, r->listen.kind == CONF_EP_TCP ? "listen" : "connect"),
			     "route '%s' uses tcp but [eth] has no vdev (no Ethernet port)", r->name);
		if (r->proxy_protocol && r->connect.kind != CONF_EP_TCP)
			perr(p, route_key_line(p, i, "proxy_protocol"),
			     "route '%s': proxy_protocol needs a tcp: destination", r->name);
		for (uint32_t k6 = 0; k6 < r->n_backends; k6++)
			if (r->backends[k6].ep.kind == CONF_EP_TCP && !xlt_ip_is_v4(&r->backends[k6].ep.addr) &&
			    !c->eth.address6.prefix) {
				perr(p, route_key_line(p, i, "connect"),
				     "route '%s': backend %s is IPv6 but [eth] has no address6", r->name,
				     conf_endpoint_str(&r->backends[k6].ep, e, sizeof(e)));
				break;
			}
		if (r->accept_proxy && r->listen.kind != CONF_EP_TCP)
			perr(p, route_key_line(p, i, "accept_proxy"), "route '%s': accept_proxy needs a tcp: listener",
			     r->name);
		if (r->n_proxy_from && !r->accept_proxy)
			perr(p, route_key_line(p, i, "proxy_from"),
			     "route '%s': proxy_from applies to accept_proxy = v2 only", r->name);
		for (uint32_t j = 0; j < i; j++)
			if (c->routes[j].listen.kind == r->listen.kind && c->routes[j].listen.port == r->listen.port)
				perr(p, route_key_line(p, i, "listen"),
				     "route '%s' listens on %s like route '%s' (line %u)", r->name,
				     conf_endpoint_str(&r->listen, a, sizeof(a)), c->routes[j].name,
				     route_key_line(p, j, "listen"));
		if (r->check_interval_ms && r->check_interval_ms < 100)
			/* the health tick's pace; and the timeout that follows it must stay at its own least */
			perr(p, route_key_line(p, i, "check_interval"),
			     "route '%s': check_interval must be 0 (no checks) or at least 100ms", r->name);
		else if (r->check_interval_ms && r->check_timeout_ms > r->check_interval_ms) {
			/* the default (1s) yields to a shorter interval; a timeout the file sets must fit */
			if (!p->route_seen[i][find_key(SEC_ROUTE, "check_timeout") - conf_keys])
				r->check_timeout_ms = r->check_interval_ms;
			else
				perr(p, route_key_line(p, i, "check_timeout"),
				     "route '%s': check_timeout is longer than check_interval", r->name);
		}
		if (r->connect.kind == CONF_EP_IB && (r->check_send.len || r->check_expect.len))
			perr(p, route_key_line(p, i, r->check_send.len ? "check_send" : "check_expect"),
			     "route '%s': check_send/check_expect apply to tcp: pools only (an ib check is a connect)",
			     r->name);
		if (!r->ib_rbuf_size)
			r->ib_rbuf_size = c->ib.rbuf_size;
		if (!r->ib_sbuf_size)
			r->ib_sbuf_size = c->ib.sbuf_size;
		check_ib_route(p, i);
		if (!r->tcp_rbuf_size)
			r->tcp_rbuf_size = c->eth.rbuf_size;
		if (!r->tcp_sbuf_size)
			r->tcp_sbuf_size = c->eth.sbuf_size;
		total += (uint64_t)r->max_sessions * conf_route_session_bytes(r);
	}
	if (total > c->gateway.memory_limit) {
		unsigned line = p->seen[find_key(SEC_GATEWAY, "memory_limit") - conf_keys];
		perr(p, line ? line : (c->n_routes ? c->routes[c->n_routes - 1].line : 1),
		     "routes need up to %" PRIu64 " MiB of buffers (max_sessions x buffers), above memory_limit "
		     "%" PRIu64 " MiB",
		     (total + MB - 1) / MB, c->gateway.memory_limit / MB);
	}
}

static struct conf *load(const char *name, FILE *in, conf_error_fn err, void *arg)
{
	struct parser p = {.file = name, .in = in, .err = err, .arg = arg};
	struct conf *c = calloc(1, sizeof(*c));
	int saved;

	p.route_seen = calloc(CONF_MAX_ROUTES, sizeof(*p.route_seen));
	if (!c || !p.route_seen)
		goto err;
	p.c = c;
	snprintf(c->path, sizeof(c->path), "%s", name);
	apply_defaults(c, NULL, SEC_GATEWAY);
	apply_defaults(c, NULL, SEC_IB);
	apply_defaults(c, NULL, SEC_ETH);
	if (ini_parse_stream(reader, &p, handler, &p) < 0) {
		errno = ENOMEM;
		goto err;
	}
	if (ferror(in)) {
		perr(&p, p.lineno, "read error");
		errno = EIO;
		goto err;
	}
	check(&p);
	if (p.errors) {
		errno = EINVAL;
		goto err;
	}
	memcpy(c->key_line, p.seen, sizeof(p.seen));
	free(p.line);
	free(p.route_seen);
	return c;
err:
	saved = errno;
	free(p.line);
	free(p.route_seen);
	free(c);
	errno = saved;
	return NULL;
}

const char *conf_where(const struct conf *c, const struct conf_route *r, const char *section, const char *key,
		       char *buf, size_t len)
{
	unsigned line = 0;

	if (r) {
		line = r->line;
	} else {
		for (size_t i = 0; i < N_KEYS; i++)
			if (conf_keys[i].section != SEC_ROUTE && !strcmp(section_names[conf_keys[i].section], section) &&
			    !strcmp(conf_keys[i].key, key))
				line = c->key_line[i];
	}
	if (line)
		snprintf(buf, len, "%s:%u", c->path, line);
	else
		snprintf(buf, len, "%s", c->path);
	return buf;
}

/* The file decides what runs as root (routes, eal_args, the user to become): only its owner may be
 * able to change it, and that owner must be root or the user the daemon runs as. Checked on the open
 * file, so what is checked is what is read. Returns 0 or EINVAL after reporting through ERR. */
static int check_trust(const char *path, FILE *f, conf_error_fn err, void *arg)
{
	char msg[CONF_PATH_MAX + 200];
	struct stat st;

	if (fstat(fileno(f), &st))
		return errno;
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		snprintf(msg, sizeof(msg), "%s: refusing a config file writable by %s (mode %04o): chmod go-w it", path,
			 (st.st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st.st_mode & 07777));
	else if (st.st_uid != 0 && st.st_uid != geteuid())
		snprintf(msg, sizeof(msg), "%s: refusing a config file owned by uid %u (only root or uid %u, who runs ibgwd)",
			 path, (unsigned)st.st_uid, (unsigned)geteuid());
	else
		return 0;
	if (err)
		err(arg, msg);
	return EINVAL;
}

struct conf *conf_load(const char *path, conf_error_fn err, void *arg)
{
	FILE *f = fopen(path, "r");
	struct conf *c = NULL;
	int saved;

	if (!f)
		return NULL;
	saved = check_trust(path, f, err, arg);
	if (!saved) {
		c = load(path, f, err, arg);
		saved = errno;
	}
	fclose(f);
	errno = saved;
	return c;
}

struct conf *conf_load_mem(const char *name, const char *buf, size_t len, conf_error_fn err, void *arg)
{
	FILE *f;
	struct conf *c;
	int saved;

	if (len == 0)
		return load(name, fopen("/dev/null", "r") ?: stdin, err, arg);
	f = fmemopen((void *)buf, len, "r");
	if (!f)
		return NULL;
	c = load(name, f, err, arg);
	saved = errno;
	fclose(f);
	errno = saved;
	return c;
}

void conf_free(struct conf *c)
{
	free(c);
}

/* Whether one of LIST's N networks admits ADDR. No address (::, an AF_IB peer) is admitted only by a
 * /0: matching :: against the list would let ::/1 and the like admit it. */
static bool cidrs_admit(const struct xlt_cidr *list, uint32_t n, const struct xlt_ip *addr)
{
	for (uint32_t i = 0; i < n; i++)
		if (xlt_ip_is_any(addr) ? !list[i].prefix : xlt_cidr_match(&list[i], addr))
			return true;
	return false;
}

bool conf_route_allows(const struct conf_route *r, const struct xlt_ip *addr)
{
	return cidrs_admit(r->allow, r->n_allow, addr);
}

bool conf_route_proxy_from(const struct conf_route *r, const struct xlt_ip *peer)
{
	return !r->n_proxy_from || cidrs_admit(r->proxy_from, r->n_proxy_from, peer);
}

void conf_warn(const struct conf *c, conf_error_fn warn, void *arg)
{
	char msg[CONF_PATH_MAX + 256], where[CONF_PATH_MAX + 16];
	const char *fp = c->eth.flow_peer.s_addr                       ? "flow_peer"
	                 : !IN6_IS_ADDR_UNSPECIFIED(&c->eth.flow_peer6) ? "flow_peer6"
	                                                                 : NULL;

	/* a VIP is an address of the kernel TAP: without one there is none, and nothing to pass on */
	if (fp && !c->eth.kernel_tap[0]) {
		snprintf(msg, sizeof(msg),
		         "%s: warning: %s without kernel_tap: segments are passed on only for the addresses "
		         "keepalived or FRR put on the kernel TAP (VIPs), and there is none",
		         conf_where(c, NULL, "eth", fp, where, sizeof(where)), fp);
		warn(arg, msg);
	}

	for (uint32_t i = 0; i < c->n_routes; i++) {
		const struct conf_route *r = &c->routes[i];

		if (!r->accept_proxy || r->n_proxy_from)
			continue;
		snprintf(
		    msg, sizeof(msg),
		    "%s:%u: warning: route '%s': accept_proxy without proxy_from: any peer that reaches "
		    "the port may claim any source in its PROXY header (set proxy_from to the balancers' "
		    "addresses, or ::/0 to accept any peer on purpose)",
		    c->path, r->line, r->name);
		warn(arg, msg);
	}
}

bool conf_route_allows_all(const struct conf_route *r)
{
	static const struct xlt_ip none;

	return cidrs_admit(r->allow, r->n_allow, &none);
}

const char *conf_endpoint_str(const struct conf_endpoint *ep, char *buf, size_t len)
{
	char a[XLT_IP_STRLEN];
	const char *kind = ep->kind == CONF_EP_IB ? "ib" : "tcp";
	bool v4 = xlt_ip_is_v4(&ep->addr);

	switch (ep->kind) {
	case CONF_EP_ECHO: snprintf(buf, len, "echo"); break;
	case CONF_EP_DISCARD: snprintf(buf, len, "discard"); break;
	case CONF_EP_IB:
	case CONF_EP_TCP:
		if (!xlt_ip_is_any(&ep->addr))
			snprintf(buf, len, "%s:%s%s%s:%u", kind, v4 ? "" : "[", xlt_ip_fmt(&ep->addr, a), v4 ? "" : "]",
				 ep->port);
		else
			snprintf(buf, len, "%s:%u", kind, ep->port);
		break;
	default: snprintf(buf, len, "none"); break;
	}
	return buf;
}

bool conf_route_equal(const struct conf_route *a, const struct conf_route *b)
{
	return !strcmp(a->name, b->name) && !memcmp(&a->listen, &b->listen, sizeof(a->listen)) &&
	       !memcmp(&a->connect, &b->connect, sizeof(a->connect)) && a->n_allow == b->n_allow &&
	       !memcmp(a->allow, b->allow, sizeof(a->allow[0]) * a->n_allow) && a->max_sessions == b->max_sessions &&
	       a->ib_rbuf_size == b->ib_rbuf_size && a->ib_sbuf_size == b->ib_sbuf_size &&
	       a->ib_sq_depth == b->ib_sq_depth && a->ib_rq_depth == b->ib_rq_depth &&
	       a->tcp_rbuf_size == b->tcp_rbuf_size && a->tcp_sbuf_size == b->tcp_sbuf_size &&
	       a->connect_timeout_ms == b->connect_timeout_ms && a->idle_timeout_ms == b->idle_timeout_ms &&
	       a->stall_timeout_ms == b->stall_timeout_ms && a->half_closed_timeout_ms == b->half_closed_timeout_ms &&
	       a->n_backends == b->n_backends && !memcmp(a->backends, b->backends, sizeof(a->backends)) &&
	       a->balance == b->balance && a->check_interval_ms == b->check_interval_ms &&
	       a->check_timeout_ms == b->check_timeout_ms && a->rise == b->rise && a->fall == b->fall &&
	       a->eject_after == b->eject_after && a->eject_time_ms == b->eject_time_ms &&
	       !memcmp(&a->check_send, &b->check_send, sizeof(a->check_send)) &&
	       !memcmp(&a->check_expect, &b->check_expect, sizeof(a->check_expect)) &&
	       a->proxy_protocol == b->proxy_protocol && a->accept_proxy == b->accept_proxy &&
	       a->n_proxy_from == b->n_proxy_from &&
	       !memcmp(a->proxy_from, b->proxy_from, sizeof(a->proxy_from[0]) * a->n_proxy_from);
}

static const char *human_size(uint64_t v, char *buf, size_t len)
{
	if (v && v % GB == 0)
		snprintf(buf, len, "%" PRIu64 "G", v / GB);
	else if (v && v % MB == 0)
		snprintf(buf, len, "%" PRIu64 "M", v / MB);
	else if (v && v % KB == 0)
		snprintf(buf, len, "%" PRIu64 "K", v / KB);
	else
		snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

/* A CIDR list (N entries) as the file would say it ("198.18.0.0/15 2001:db8::/32"), "::/0 (all)" for
 * ::/0 alone. */
static const char *cidrs_str(const struct xlt_cidr *list, uint32_t count, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	if (count == 1 && list[0].prefix == 0)
		return snprintf(buf, len, "::/0 (all)"), buf;
	for (uint32_t i = 0; i < count && off < len; i++) {
		char a[XLT_IP_STRLEN];
		const struct xlt_cidr *n = &list[i];
		bool v4 = xlt_ip_is_v4(&n->net) && n->prefix >= 96;
		int k = snprintf(buf + off, len - off, "%s%s/%u", i ? " " : "", xlt_ip_fmt(&n->net, a),
		                 v4 ? n->prefix - 96u : n->prefix);

		off += k < 0 ? len : (size_t)k;
	}
	return buf;
}

void conf_print_summary(const struct conf *c, FILE *out)
{
	char a[CONF_EP_STRLEN], b[CONF_EP_STRLEN + 32], s1[CONF_EP_STRLEN], s2[24], s3[24], s4[24];
	char allow[CONF_MAX_ALLOW * (XLT_IP_STRLEN + 5)], pfrom[CONF_MAX_ALLOW * (XLT_IP_STRLEN + 5)];
	char relay[96];
	uint64_t total = 0;

	fprintf(out, "config %s: OK\n", c->path);
	fprintf(out, "gateway: %u worker(s), stats http://%s:%u, log %s to %s, drain %" PRIu64 " ms\n",
		c->gateway.workers, inet_ntop(AF_INET, &c->gateway.stats.addr, a, sizeof(a)), c->gateway.stats.port,
		conf_log_level_name(c->gateway.log_level), c->gateway.log_target ? "syslog" : "stderr",
		c->gateway.drain_timeout_ms);
	fprintf(out, "ib: bind %s%s%s, rbuf %s, sbuf %s, queues %u/%u, inline %u\n",
		inet_ntop(AF_INET, &c->ib.bind, a, sizeof(a)), c->ib.device[0] ? ", device " : "", c->ib.device,
		human_size(c->ib.rbuf_size, s1, sizeof(s1)), human_size(c->ib.sbuf_size, s2, sizeof(s2)), c->ib.sq_depth,
		c->ib.rq_depth, c->ib.inline_size);
	if (c->eth.vdev[0])
		fprintf(out, "eth: port %u on %s, address %s/%u, gateway %s, mtu %u\n", c->eth.port, c->eth.vdev,
			inet_ntop(AF_INET, &c->eth.address.net, a, sizeof(a)), c->eth.address.prefix,
			c->eth.gateway.s_addr ? inet_ntop(AF_INET, &c->eth.gateway, b, sizeof(b)) : "none", c->eth.mtu);
	if (c->eth.vdev[0] && c->eth.address6.prefix) {
		char a6[INET6_ADDRSTRLEN], g6[INET6_ADDRSTRLEN];
		fprintf(out, "eth: IPv6 address %s/%u, gateway %s\n", inet_ntop(AF_INET6, &c->eth.address6.addr, a6, sizeof(a6)),
			c->eth.address6.prefix,
			IN6_IS_ADDR_UNSPECIFIED(&c->eth.gateway6) ? "none" : inet_ntop(AF_INET6, &c->eth.gateway6, g6, sizeof(g6)));
	}
	if (!c->eth.vdev[0])
		fprintf(out, "eth: no Ethernet port (no vdev)\n");
	fprintf(out, "routes: %u\n", c->n_routes);
	for (uint32_t i = 0; i < c->n_routes; i++) {
		const struct conf_route *r = &c->routes[i];
		uint64_t bytes = conf_route_session_bytes(r) * r->max_sessions;
		total += bytes;
		if (r->n_backends > 1)
			snprintf(b, sizeof(b), "%s +%u (%s)", conf_endpoint_str(&r->connect, s1, sizeof(s1)),
				 r->n_backends - 1,
				 r->balance == CONF_BALANCE_LEASTCONN ? "leastconn"
				 : r->balance == CONF_BALANCE_SOURCE  ? "source"
								      : "roundrobin");
		else
			conf_endpoint_str(&r->connect, b, sizeof(b));
		fprintf(out,
			"  %-16s %-10s -> %-24s max %u sessions, buffers ib %s/%s tcp %s/%s, %s, allow %s, "
			"up to %" PRIu64 " MiB%s%s%s\n",
			r->name, conf_endpoint_str(&r->listen, a, sizeof(a)), b,
			r->max_sessions, human_size(r->ib_rbuf_size, s1, sizeof(s1)), human_size(r->ib_sbuf_size, s2, sizeof(s2)),
			human_size(r->tcp_rbuf_size, s3, sizeof(s3)), human_size(r->tcp_sbuf_size, s4, sizeof(s4)),
			conf_route_relay_str(r, relay, sizeof(relay)), cidrs_str(r->allow, r->n_allow, allow, sizeof(allow)),
			(bytes + MB - 1) / MB, r->accept_proxy ? ", accepts PROXY v2 from " : "",
			!r->accept_proxy ? "" : r->n_proxy_from ? cidrs_str(r->proxy_from, r->n_proxy_from, pfrom, sizeof(pfrom)) : "any peer",
			r->proxy_protocol ? ", sends PROXY v2" : "");
	}
	fprintf(out, "memory: up to %" PRIu64 " MiB of session buffers, limit %s\n", (total + MB - 1) / MB,
		human_size(c->gateway.memory_limit, s1, sizeof(s1)));
}

void conf_print_reference(FILE *out)
{
	enum conf_section last = SEC_NONE;

	for (size_t i = 0; i < N_KEYS; i++) {
		const struct conf_key *k = &conf_keys[i];
		char range[96] = "";

		if (k->section != last) {
			fprintf(out, "%s### [%s]\n\n| key | type | range | default | meaning |\n|---|---|---|---|---|\n",
				last == SEC_NONE ? "" : "\n", section_names[k->section]);
			last = k->section;
		}
		if (k->type == T_UINT || k->type == T_SIZE)
			snprintf(range, sizeof(range), "%" PRIu64 "..%" PRIu64 "%s", k->min, k->max,
				 k->type == T_SIZE ? " bytes" : "");
		else if (k->type == T_DURATION)
			snprintf(range, sizeof(range), "%" PRIu64 "..%" PRIu64 " %s", k->min, k->max,
				 k->unit_us == 1000 ? "ms" : "us");
		fprintf(out, "| `%s` | %s | %s | %s | %s |\n", k->key, type_names[k->type], range,
			k->required ? "(required)" : (k->def && k->def[0] ? k->def : "(none)"), k->doc);
	}
}
