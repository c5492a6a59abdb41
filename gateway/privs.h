/* Least privilege: with [gateway] user set, ibgwd started as root becomes that user before DPDK
 * starts, keeping only the capabilities its configuration needs, and sets no_new_privs. See privs.c
 * for what is kept and why it happens before any thread exists. */
#ifndef GW_PRIVS_H
#define GW_PRIVS_H

#include <stdbool.h>
#include <stddef.h>

struct conf;
struct conf_route;

/* Before the EAL starts (no thread but the caller exists yet): resolves [gateway] user and group into
 * ids and supplementary groups (so that no name lookup happens once threads run), and unless
 * CHECK_ONLY raises RLIMIT_MEMLOCK so that IB memory registration needs no CAP_IPC_LOCK later.
 * Returns 0, or -errno with a message in ERR (e.g. an unknown user). */
int gw_privs_prepare(const struct conf *c, int check_only, char *err, size_t len);

/* -t, run as root: runs FN(ARG) with the ids the daemon will have (with [gateway] user, its user and
 * groups of gw_privs_prepare, in a child process; else here) and returns what it returned (-errno;
 * -ECHILD when the child could not run it). */
int gw_privs_as_user(const struct conf *c, int (*fn)(const struct conf *), const struct conf *arg);

/* Main thread, before rte_eal_init (no other thread may exist: every thread created afterwards shares
 * these credentials, which the RDMA devices require). Without [gateway] user: does nothing. Else
 * switches to the user and its groups, keeps only the capabilities the configuration needs (effective,
 * permitted, bounding) and sets no_new_privs. Returns 0 or -errno with a message in ERR. */
int gw_privs_drop(const struct conf *c, char *err, size_t len);

/* Control thread, once start-up is done and before the workers run: replaces the rtnetlink sockets
 * libraries opened (DPDK's net_tap) by ones that cannot configure (gw_privs_socket_unprivileged),
 * installs the seccomp filter (gw_privs_lock_syscalls); after a drop, checks every thread's /proc/self/task/<tid>/status against
 * what gw_privs_drop set. Logs one line saying what was kept. Returns 0 or -EPERM (logged); on
 * failure the daemon must not serve (without a drop, a filter that cannot be installed is a
 * warning). */
int gw_privs_check(const struct conf *c);

/* Any thread, no_new_privs set: installs on every thread of the process the seccomp filter that
 * refuses (EPERM) new packet and raw sockets, netlink sockets but RDMA's, the firewall tables'
 * socket options, the ioctls that configure interfaces, routes, ARP, taps and tunnels, ethtool,
 * bpf() and io_uring (privs.c says why). gw_privs_check does it. Returns 0 or -errno. */
int gw_privs_lock_syscalls(void);

/* Any thread: socket(DOMAIN, TYPE, PROTOCOL) opened without CAP_NET_ADMIN in the opener's effective
 * set, whatever the caller holds. Netlink judges a request that configures the network by the
 * socket's opener as well as by its sender: such a socket can read (an rtnetlink address dump and
 * notifications) but never configure, even from code running in the daemon with CAP_NET_ADMIN kept
 * for the port (the seccomp filter refuses new netlink sockets, not requests on one already open).
 * Returns the fd, or -errno. */
int gw_privs_socket_unprivileged(int domain, int type, int protocol);

/* The runtime directory gw_privs_drop made for DPDK ($XDG_RUNTIME_DIR), "" when none: main removes
 * it at exit. */
const char *gw_privs_rundir(void);

/* C's first route with an ib: listener below 1024 (rdma_cm wants CAP_NET_BIND_SERVICE for it at
 * bind time), or NULL. */
const struct conf_route *gw_privs_low_ib_route(const struct conf *c);

/* Any thread: may the daemon still bind a port below 1024 (CAP_NET_BIND_SERVICE effective)? A drop
 * keeps it only when the file at start had such a listener; a reload that adds one is refused. */
bool gw_privs_may_bind_low(void);

#endif
