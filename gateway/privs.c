/* Dropping privileges.
 *
 * What ibgwd needs privileges for is opening things: the DPDK port (af_packet's raw sockets need
 * CAP_NET_RAW, a tap for virtio_user needs CAP_NET_ADMIN), listening ports below 1024, pinning memory
 * for RDMA. With [gateway] user set, ibgwd becomes that user before DPDK starts, keeping exactly the
 * capabilities its configuration needs, in the effective, permitted and bounding sets (none
 * inheritable or ambient), with no_new_privs so that no execve can give anything back:
 * - for the port: CAP_NET_RAW for af_packet's sockets, CAP_NET_ADMIN because starting a port sets
 *   the interface's MAC address and promiscuous mode (af_packet) or creates a tap (virtio_user);
 *   nothing for net_null, net_ring, net_memif;
 * - CAP_NET_BIND_SERVICE when the stats endpoint or an ib: listener is below 1024 (rdma_cm checks it
 *   at bind time, also for a listener a reload adds);
 * - CAP_IPC_LOCK only when RLIMIT_MEMLOCK could not be lifted while still root (ibv_reg_mr of every
 *   new connection's buffers counts against it otherwise).
 * Not uid 0, so root's files, devices and the rest of the capabilities are out of reach.
 *
 * Why before DPDK starts and not after everything is open: the kernel's RDMA character devices
 * (rdma_cm's and uverbs' write() interface, which software RDMA devices such as rxe use for every
 * send doorbell) refuse a caller whose credentials are not the very ones that opened the file
 * (ib_safe_file_access: "changed security contexts after opening file descriptor"). Credentials are
 * per thread and any change makes new ones, so a drop after start-up would leave every thread but at
 * most one unable to use the IB devices. Changed once, while the process has one thread, they are
 * shared by every thread DPDK creates afterwards, and nothing changes them again. gw_privs_check()
 * verifies that in every thread's /proc status once start-up is done. The price: the port's
 * capabilities stay. Dropping them after start-up would need the workers to be threads created after
 * the drop (registered with rte_thread_register, not EAL lcores) and the IB side opened after it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/seccomp.h>
#include <linux/sockios.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>

#include "../conf/conf.h"
#include "log.h"
#include "privs.h"

/* <linux/if_tun.h>'s TUNSET* (_IOW('T', 202..206, int)), spelled out: that header's _IOW does not
 * build in a static initializer here */
#define TUN_SETIFF     0x400454caU
#define TUN_SETPERSIST 0x400454cbU
#define TUN_SETOWNER   0x400454ccU
#define TUN_SETLINK    0x400454cdU
#define TUN_SETGROUP   0x400454ceU
#define MAX_GROUPS     64
#define MAX_THREADS    256
#define CAP_BIT(c)     (UINT64_C(1) << (c))

/* Filled by gw_privs_prepare and gw_privs_drop in main() before any other thread exists; read by
 * gw_privs_check on the control thread. */
static struct {
	uid_t uid;
	gid_t gid;
	int n_groups;
	gid_t groups[MAX_GROUPS];
	bool memlock_unlimited; /* RLIMIT_MEMLOCK is unlimited: ibv_reg_mr needs no CAP_IPC_LOCK */
	/* set by gw_privs_drop */
	bool dropped;
	uint64_t keep; /* the capabilities every thread keeps */
	char rundir[32]; /* the user's runtime directory for DPDK ("" when none was made) */
} prep;

/* capset of the calling thread (a raw syscall: no libcap dependency for one call). */
static int caps_set(uint64_t eff, uint64_t prm, uint64_t inh)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2] = {
	    {.effective = (uint32_t)eff, .permitted = (uint32_t)prm, .inheritable = (uint32_t)inh},
	    {.effective = (uint32_t)(eff >> 32),
	     .permitted = (uint32_t)(prm >> 32),
	     .inheritable = (uint32_t)(inh >> 32)},
	};

	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

static int caps_get(uint64_t *eff, uint64_t *prm, uint64_t *inh)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	*eff = d[0].effective | (uint64_t)d[1].effective << 32;
	*prm = d[0].permitted | (uint64_t)d[1].permitted << 32;
	*inh = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
	return 0;
}

struct unprivileged_socket {
	int domain, type, protocol;
	int fd; /* or -errno */
	pid_t tid;
};

/* A thread of its own lowers CAP_NET_ADMIN from its effective set and opens the socket: the
 * capability change makes that thread new credentials (those of the thread asking stay the very ones
 * the RDMA devices compare, privs.c's header says why), and the socket records them as its opener's. */
static void *unprivileged_socket_thread(void *arg)
{
	struct unprivileged_socket *u = arg;
	uint64_t eff = 0, prm = 0, inh = 0;
	int ret = caps_get(&eff, &prm, &inh);

	u->tid = (pid_t)syscall(SYS_gettid);
	if (!ret)
		ret = caps_set(eff & ~CAP_BIT(CAP_NET_ADMIN), prm, inh);
	if (ret) {
		u->fd = ret;
		return NULL;
	}
	u->fd = socket(u->domain, u->type, u->protocol);
	if (u->fd < 0)
		u->fd = -errno;
	return NULL;
}

/* The socket, opened by a thread of its own; that thread is gone when this returns: pthread_join
 * returns as the thread exits, and one still exiting stays listed in /proc/self/task, with its
 * lowered capabilities and no seccomp filter (TSYNC passes an exiting thread by), which
 * gw_privs_check would take for a thread that holds what it should not and refuse to start. */
static int open_unprivileged(int domain, int type, int protocol)
{
	struct unprivileged_socket u = {.domain = domain, .type = type, .protocol = protocol, .fd = -EIO};
	char path[48];
	pthread_t th;
	int ret = pthread_create(&th, NULL, unprivileged_socket_thread, &u);

	if (ret)
		return -ret;
	pthread_join(th, NULL);
	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)u.tid);
	for (int i = 0; i < 2000 && !access(path, F_OK); i++)
		usleep(500);
	return u.fd;
}

/* The sockets gw_privs_socket_unprivileged opened (disarm_rtnetlink leaves them) */
static int unprivileged_fds[8];
static unsigned n_unprivileged;

int gw_privs_socket_unprivileged(int domain, int type, int protocol)
{
	int fd = open_unprivileged(domain, type, protocol);

	if (fd >= 0 && n_unprivileged < sizeof(unprivileged_fds) / sizeof(unprivileged_fds[0]))
		unprivileged_fds[n_unprivileged++] = fd;
	return fd;
}

static bool is_rtnetlink(int fd)
{
	int v;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) || v != AF_NETLINK)
		return false;
	l = sizeof(v);
	return !getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &l) && v == NETLINK_ROUTE;
}

/* Libraries keep rtnetlink sockets they opened with the start-up's capabilities (DPDK's net_tap one
 * for its tc rules, which ibgwd never asks for): each is replaced, under its descriptor number, by
 * one that cannot configure (open_unprivileged) bound to the same multicast groups (the first 32),
 * so that no socket the seccomp filter lets live can configure the network. Its options (buffer
 * sizes, extended ACKs) and port id are not carried over: net_tap's sits idle, and nothing else
 * keeps one today (no link-state interrupt is asked for). Returns how many were, or -errno. */
static int disarm_rtnetlink(void)
{
	DIR *dh = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0, ret = 0;

	if (!dh)
		return -errno;
	while (!ret && (de = readdir(dh))) {
		int fd = atoi(de->d_name), fl, fdfl, nfd;
		struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
		socklen_t sl = sizeof(sa);
		bool ours = false;

		for (unsigned i = 0; i < n_unprivileged; i++)
			ours = ours || unprivileged_fds[i] == fd;
		if (ours || fd == dirfd(dh) || !is_rtnetlink(fd))
			continue;
		fl = fcntl(fd, F_GETFL);
		fdfl = fcntl(fd, F_GETFD);
		if (fl < 0 || fdfl < 0 || getsockname(fd, (struct sockaddr *)&sa, &sl)) {
			ret = -errno;
			break;
		}
		nfd = open_unprivileged(AF_NETLINK,
		                        SOCK_RAW | (fl & O_NONBLOCK ? SOCK_NONBLOCK : 0) |
		                            (fdfl & FD_CLOEXEC ? SOCK_CLOEXEC : 0),
		                        NETLINK_ROUTE);
		if (nfd < 0) {
			ret = nfd;
			break;
		}
		if ((sa.nl_groups && bind(nfd, (struct sockaddr *)&(struct sockaddr_nl){.nl_family = AF_NETLINK,
		                                                                       .nl_groups = sa.nl_groups},
		                          sizeof(struct sockaddr_nl))) ||
		    dup3(nfd, fd, fdfl & FD_CLOEXEC ? O_CLOEXEC : 0) < 0)
			ret = -errno;
		close(nfd);
		n += !ret;
	}
	closedir(dh);
	return ret ? ret : n;
}

/* Thread ids of this process. Returns the count, or -errno. */
static int list_threads(int *tids, int max)
{
	DIR *dh = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!dh)
		return -errno;
	while ((de = readdir(dh))) {
		int tid = atoi(de->d_name);
		if (tid <= 0)
			continue;
		if (n == max) {
			closedir(dh);
			return -E2BIG;
		}
		tids[n++] = tid;
	}
	closedir(dh);
	return n;
}

/* Capability names for the log line. */
static const char *cap_name(int cap, char *buf, size_t len)
{
	switch (cap) {
	case CAP_NET_BIND_SERVICE:
		return "cap_net_bind_service";
	case CAP_IPC_LOCK:
		return "cap_ipc_lock";
	case CAP_NET_RAW:
		return "cap_net_raw";
	case CAP_NET_ADMIN:
		return "cap_net_admin";
	default:
		snprintf(buf, len, "cap_%d", cap);
		return buf;
	}
}

static const char *caps_str(uint64_t caps, char *buf, size_t len)
{
	size_t used = 0;
	char num[16];

	buf[0] = 0;
	for (int cap = 0; cap < 64; cap++)
		if (caps & CAP_BIT(cap)) {
			int n = snprintf(buf + used, len - used, "%s%s", used ? " " : "",
			                 cap_name(cap, num, sizeof(num)));
			if (n < 0 || (size_t)n >= len - used)
				break;
			used += (size_t)n;
		}
	if (!used)
		snprintf(buf, len, "none");
	return buf;
}

/* Checks one thread's status file against what it must be. Returns 0, or -EPERM (logged). */
static int check_thread(int tid, uint64_t keep, uid_t uid, gid_t gid)
{
	char path[64], line[256];
	unsigned long long prm = ~0ull, eff = ~0ull, inh = ~0ull, bnd = ~0ull, amb = ~0ull;
	unsigned u[4] = {~0u, ~0u, ~0u, ~0u}, g[4] = {~0u, ~0u, ~0u, ~0u};
	int nnp = -1, seccomp = -1;
	bool ok;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : -errno; /* a thread that ended holds nothing */
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "CapPrm: %llx", &prm);
		sscanf(line, "CapEff: %llx", &eff);
		sscanf(line, "CapInh: %llx", &inh);
		sscanf(line, "CapBnd: %llx", &bnd);
		sscanf(line, "CapAmb: %llx", &amb);
		sscanf(line, "NoNewPrivs: %d", &nnp);
		sscanf(line, "Seccomp: %d", &seccomp);
		sscanf(line, "Uid: %u %u %u %u", &u[0], &u[1], &u[2], &u[3]);
		sscanf(line, "Gid: %u %u %u %u", &g[0], &g[1], &g[2], &g[3]);
	}
	fclose(f);
	ok = prm == keep && eff == keep && bnd == keep && inh == 0 && amb == 0 && nnp == 1 &&
	     seccomp == SECCOMP_MODE_FILTER;
	for (int i = 0; i < 4; i++)
		ok = ok && u[i] == uid && g[i] == gid;
	if (ok)
		return 0;
	GW_ERR("privileges: thread %d holds more than it should: CapPrm %llx CapEff %llx CapInh %llx CapBnd "
	       "%llx "
	       "CapAmb %llx NoNewPrivs %d Seccomp %d uid %u gid %u",
	       tid, prm, eff, inh, bnd, amb, nnp, seccomp, u[0], g[0]);
	return -EPERM;
}

int gw_privs_prepare(const struct conf *c, int check_only, char *err, size_t len)
{
	const struct conf_gateway *g = &c->gateway;
	struct rlimit rl;

	memset(&prep, 0, sizeof(prep));
	if (g->group[0] && !g->user[0]) {
		snprintf(err, len, "[gateway] group '%s' is set without user", g->group);
		return -EINVAL;
	}
	if (g->user[0]) {
		struct passwd *pw;
		int n = MAX_GROUPS;

		errno = 0;
		pw = getpwnam(g->user);
		if (!pw) {
			snprintf(err, len, "[gateway] user '%s': %s", g->user,
			         errno ? strerror(errno) : "no such user");
			return errno ? -errno : -ENOENT;
		}
		prep.uid = pw->pw_uid;
		prep.gid = pw->pw_gid;
		if (g->group[0]) {
			struct group *gr;

			errno = 0;
			gr = getgrnam(g->group);
			if (!gr) {
				snprintf(err, len, "[gateway] group '%s': %s", g->group,
				         errno ? strerror(errno) : "no such group");
				return errno ? -errno : -ENOENT;
			}
			prep.gid = gr->gr_gid;
		}
		/* the user's groups from the group database, as login would give them */
		if (getgrouplist(g->user, prep.gid, prep.groups, &n) < 0) {
			snprintf(err, len, "[gateway] user '%s' is in more than %d groups", g->user,
			         MAX_GROUPS);
			return -E2BIG;
		}
		prep.n_groups = n;
		if (geteuid() != 0 && !check_only) {
			snprintf(err, len,
			         "[gateway] user '%s': ibgwd must be started as root to switch to it",
			         g->user);
			return -EPERM;
		}
	}
	if (check_only || !g->user[0])
		return 0;
	/* ibv_reg_mr counts pinned pages against RLIMIT_MEMLOCK unless the thread has CAP_IPC_LOCK: with
	 * the limit lifted now, while we may, the capability need not outlive start-up. The bound on
	 * pinned memory is the configuration's memory_limit. */
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
		if (rl.rlim_cur != RLIM_INFINITY) {
			rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
			setrlimit(RLIMIT_MEMLOCK,
			          &rl); /* needs CAP_SYS_RESOURCE; without it, CAP_IPC_LOCK stays */
		}
		prep.memlock_unlimited = getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur == RLIM_INFINITY;
	}
	return 0;
}

int gw_privs_as_user(const struct conf *c, int (*fn)(const struct conf *), const struct conf *arg)
{
	int status;
	pid_t pid;

	if (!c->gateway.user[0])
		return fn(arg);
	signal(SIGCHLD, SIG_DFL); /* (inherited as ignored, the child would leave no status to wait for) */
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int ret;
		if (setgroups((size_t)prep.n_groups, prep.groups) || setresgid(prep.gid, prep.gid, prep.gid) ||
		    setresuid(prep.uid, prep.uid, prep.uid)) {
			ret = -errno;
			GW_ERR("[gateway] user '%s': cannot become it to check: %s", c->gateway.user, strerror(errno));
		} else {
			ret = fn(arg);
		}
		_exit(ret < 0 && ret > -256 ? -ret : ret ? ECHILD : 0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? -WEXITSTATUS(status) : -ECHILD;
}

/* Could the user we switch to do what MODE asks (S_IROTH, S_IXOTH) with the file of ST? */
static bool user_may(const struct stat *st, mode_t mode)
{
	bool member = st->st_gid == prep.gid;

	if (st->st_uid == prep.uid)
		return st->st_mode & (mode << 6);
	for (int i = 0; i < prep.n_groups && !member; i++)
		member = st->st_gid == prep.groups[i];
	return st->st_mode & (member ? mode << 3 : mode);
}

/* Warns when the user we switch to will not be able to read the config file on SIGHUP. */
static void check_readable(const struct conf *c)
{
	char dir[CONF_PATH_MAX], *slash;
	struct stat st;
	bool ok;

	if (c->path[0] != '/')
		return; /* relative to a directory a daemon left: SIGHUP uses the absolute path */
	ok = stat(c->path, &st) == 0 && user_may(&st, S_IROTH);

	snprintf(dir, sizeof(dir), "%s", c->path);
	while (ok && (slash = strrchr(dir, '/')) && slash != dir) {
		*slash = 0;
		ok = stat(dir, &st) == 0 && user_may(&st, S_IXOTH);
	}
	if (!ok)
		GW_WARN(
		    "privileges: user %s cannot read %s: SIGHUP reloads will fail (make it root:%s 0640 in a "
		    "directory %s may enter)",
		    c->gateway.user, c->path, c->gateway.user, c->gateway.user);
}

/* What the configuration needs for the daemon's whole life (see the top of the file). */
const struct conf_route *gw_privs_low_ib_route(const struct conf *c)
{
	for (uint32_t r = 0; r < c->n_routes; r++)
		if (c->routes[r].listen.kind == CONF_EP_IB && c->routes[r].listen.port < 1024)
			return &c->routes[r];
	return NULL;
}

static uint64_t needed_caps(const struct conf *c)
{
	static const struct {
		const char *driver; /* prefix of the vdev */
		uint64_t caps;
	} drivers[] = {
	    /* its packet sockets; rte_eth_dev_start sets the interface's MAC and promiscuous mode */
	    {"net_af_packet", CAP_BIT(CAP_NET_RAW) | CAP_BIT(CAP_NET_ADMIN)},
	    {"eth_af_packet", CAP_BIT(CAP_NET_RAW) | CAP_BIT(CAP_NET_ADMIN)},
	    {"virtio_user", CAP_BIT(CAP_NET_ADMIN)}, /* creates and configures its tap */
	    {"net_tap", CAP_BIT(CAP_NET_ADMIN)},
	    {"net_af_xdp", CAP_BIT(CAP_NET_RAW) | CAP_BIT(CAP_NET_ADMIN)},
	    {"net_null", 0},
	    {"net_ring", 0},
	    {"net_memif", 0},
	};
	uint64_t keep = 0;
	size_t i;

	if (c->eth.vdev[0]) {
		for (i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++)
			if (!strncmp(c->eth.vdev, drivers[i].driver, strlen(drivers[i].driver)))
				break;
		/* a device we have not looked at: what the others need, at most */
		keep |= i < sizeof(drivers) / sizeof(drivers[0])
		            ? drivers[i].caps
		            : CAP_BIT(CAP_NET_RAW) | CAP_BIT(CAP_NET_ADMIN);
	}
	if (c->eth.kernel_tap[0])
		keep |= CAP_BIT(CAP_NET_ADMIN); /* net_tap creates and configures the exception TAP */
	if (c->gateway.stats.port < 1024 || gw_privs_low_ib_route(c))
		keep |= CAP_BIT(CAP_NET_BIND_SERVICE);
	if (!prep.memlock_unlimited)
		keep |= CAP_BIT(CAP_IPC_LOCK);
	return keep;
}


const char *gw_privs_rundir(void)
{
	return prep.rundir;
}

bool gw_privs_may_bind_low(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct cd[2];

	if (syscall(SYS_capget, &h, cd))
		return true; /* cannot tell: the bind will say */
	return cd[CAP_NET_BIND_SERVICE / 32].effective & (1u << (CAP_NET_BIND_SERVICE % 32));
}

int gw_privs_drop(const struct conf *c, char *err, size_t len)
{
	int tids[2], n, ret;

	if (!c->gateway.user[0])
		return 0;
	n = list_threads(tids, 2);
	if (n != 1) { /* the whole point: one thread, so that every later one shares these credentials */
		snprintf(err, len, "privileges: %d threads already run; drop before starting any", n);
		return -EINVAL;
	}
	prep.keep = needed_caps(c);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		ret = -errno;
		snprintf(err, len, "privileges: no_new_privs: %s", strerror(errno));
		return ret;
	}
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); /* EINVAL before Linux 4.3: none to clear */
	/* the bounding set can only shrink while CAP_SETPCAP is effective: before the uid changes; up to
	 * the kernel's last capability (PR_CAPBSET_READ fails past it) */
	for (int cap = 0; cap < 64 && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		if (!(prep.keep & CAP_BIT(cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)) {
			ret = -errno;
			snprintf(err, len, "privileges: cannot shrink the bounding set: %s", strerror(errno));
			return ret;
		}
	/* KEEPCAPS: the permitted set survives the uid change (the effective set is cleared by it) */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || setgroups((size_t)prep.n_groups, prep.groups) ||
	    setresgid(prep.gid, prep.gid, prep.gid) || setresuid(prep.uid, prep.uid, prep.uid)) {
		ret = -errno;
		snprintf(err, len, "privileges: cannot switch to user %s (uid %u, gid %u): %s",
		         c->gateway.user, (unsigned)prep.uid, (unsigned)prep.gid, strerror(errno));
		return ret;
	}
	prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	if ((ret = caps_set(prep.keep, prep.keep, 0))) {
		snprintf(err, len, "privileges: capset: %s", strerror(-ret));
		return ret;
	}
	/* DPDK keeps a process's shared config and memory tables under $XDG_RUNTIME_DIR/dpdk, for
	 * another user than root /tmp/dpdk when that is unset: a directory any local user may have
	 * made first, and own, and then swap files in. A directory of the daemon's own instead, made
	 * by the user under an unguessable name once the uid changed (so it owns it without a chown,
	 * which needs CAP_CHOWN: systemd's unit leaves that out of the bounding set) */
	snprintf(prep.rundir, sizeof(prep.rundir), "/tmp/ibgwd.XXXXXX");
	if (!mkdtemp(prep.rundir)) {
		ret = -errno;
		snprintf(err, len, "privileges: a runtime directory for the user in /tmp: %s", strerror(errno));
		prep.rundir[0] = 0;
		return ret;
	}
	if (setenv("XDG_RUNTIME_DIR", prep.rundir, 1)) {
		ret = -errno;
		snprintf(err, len, "privileges: the runtime directory %s: %s", prep.rundir, strerror(errno));
		rmdir(prep.rundir);
		prep.rundir[0] = 0;
		return ret;
	}
#if defined(__SANITIZE_ADDRESS__)
	/* A uid change makes the process non-dumpable, and LeakSanitizer's exit check (which ptrace-attaches
	 * our own threads) is then refused: the sanitized test build stays dumpable. */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
#endif
	prep.dropped = true;
	return 0;
}

/* Once everything is open, what the kept capabilities were for is done: a seccomp filter (which,
 * unlike capabilities, is not part of the credentials the RDMA devices compare, and reaches every
 * thread at once with TSYNC) refuses with EPERM what they would still allow: new packet or raw
 * sockets (CAP_NET_RAW), netlink sockets other than RDMA's (rtnetlink, nftables, generic netlink),
 * the firewall tables' socket options, and the socket ioctls that configure interfaces, routes,
 * ARP, tunnels and PHYs, tap creation, ethtool (CAP_NET_ADMIN); bpf() and io_uring. Nothing the
 * running daemon does needs them: the port's sockets and tap exist, rdma_cm and verbs work on their
 * own devices. */
int gw_privs_lock_syscalls(void)
{
#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#endif
#ifdef ARCH
#define LD(off)     ((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off)))
#define ARG(n)      LD(offsetof(struct seccomp_data, args[n])) /* low 32 bits (little endian) */
#define IF_EQ(v, t) ((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (v), (t), 0))
#define DENY        ((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM))
#define ALLOW       ((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW))
	static const uint32_t ioctls[] = {
	    SIOCADDRT,      SIOCDELRT,      SIOCSIFNAME,        SIOCSIFFLAGS,  SIOCSIFADDR,
	    SIOCSIFDSTADDR, SIOCSIFBRDADDR, SIOCSIFNETMASK,     SIOCSIFMETRIC, SIOCSIFMEM,
	    SIOCSIFMTU,     SIOCSIFHWADDR,  SIOCSIFSLAVE,       SIOCADDMULTI,  SIOCDELMULTI,
	    SIOCSIFPFLAGS,  SIOCDIFADDR,    SIOCSIFHWBROADCAST, SIOCSIFLINK,   SIOCSIFENCAP,
	    SIOCSIFTXQLEN,  SIOCETHTOOL,    SIOCSIFMAP,         SIOCDARP,      SIOCSARP,
	    SIOCDRARP,      SIOCSRARP,      SIOCBRADDBR,        SIOCBRDELBR,   SIOCBRADDIF,
	    SIOCBRDELIF,    SIOCSIFVLAN,    SIOCBONDENSLAVE,    TUN_SETIFF,    TUN_SETPERSIST,
	    TUN_SETOWNER,   TUN_SETGROUP,   TUN_SETLINK,        SIOCSMIIREG,   SIOCSHWTSTAMP,
	    SIOCWANDEV,     SIOCSIFBR,      SIOCBONDRELEASE,    SIOCBONDSETHWADDR, SIOCBONDCHANGEACTIVE,
	    /* tunnels (add, change, delete), bridges' private ones */
	    SIOCDEVPRIVATE, SIOCDEVPRIVATE + 1, SIOCDEVPRIVATE + 2, SIOCDEVPRIVATE + 3,
	};
	enum { N_IOCTLS = sizeof(ioctls) / sizeof(ioctls[0]) };
	struct sock_filter f[64 + N_IOCTLS];
	struct sock_fprog prog = {.filter = f};
	unsigned n = 0;

	f[n++] = LD(offsetof(struct seccomp_data, arch));
	f[n++] = IF_EQ(ARCH, 1);
	f[n++] = DENY; /* another ABI than ours (x86's int 0x80): nothing of ibgwd uses it */
	f[n++] = LD(offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
	f[n++] =
	    (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000 /* __X32_SYSCALL_BIT */, 0, 1);
	f[n++] = DENY;
#endif
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_bpf, 0, 1);
	f[n++] = DENY;
	/* io_uring's IORING_OP_SOCKET would make sockets this filter never sees (ibgwd uses none) */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1);
	f[n++] = DENY;
	/* socket(domain, type, protocol), an allow list of what the running daemon opens: unix sockets
	 * (syslog), IP stream and datagram sockets, netlink for RDMA (rdma-core); no packet, XDP, raw,
	 * SOCK_PACKET (the kernel makes it a packet socket), key (IPsec) or other netlink socket. Jump
	 * offsets count from the next instruction; the block is 13 long */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 13);
	f[n++] = ARG(0);                                                                      /* 0 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 9, 0);      /* 1 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 0, 2);   /* 2 */
	f[n++] = ARG(2);                                                                      /* 3 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NETLINK_RDMA, 6, 7); /* 4 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 1, 0);      /* 5 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 0, 5);     /* 6 */
	f[n++] = ARG(1);                                                                      /* 7 */
	f[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xf); /* 8: no NONBLOCK/CLOEXEC */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_STREAM, 1, 0); /* 9 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_DGRAM, 0, 1);  /* 10 */
	f[n++] = ALLOW;                                                                       /* 11 */
	f[n++] = DENY;                                                                        /* 12 */
	/* setsockopt(fd, level, name, ...): not the firewall tables (iptables, arptables, ebtables:
	 * SOL_IP 64 and up; ip6tables: SOL_IPV6 64 and 65), multicast routing (200 and up) or
	 * transparent proxying; ibgwd's own kernel sockets set none of these. The block is 13 long */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_setsockopt, 0, 13);
	f[n++] = ARG(1);                                                                          /* 0 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOL_IP, 0, 3);           /* 1 */
	f[n++] = ARG(2);                                                                          /* 2 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 64, 8, 0);               /* 3 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IP_TRANSPARENT, 7, 6);   /* 4 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOL_IPV6, 0, 5);         /* 5 */
	f[n++] = ARG(2);                                                                          /* 6 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 200, 4, 0);              /* 7 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 64, 3, 0);               /* 8 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 65, 2, 0);               /* 9 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPV6_TRANSPARENT, 1, 0); /* 10 */
	f[n++] = ALLOW;                                                                           /* 11 */
	f[n++] = DENY;                                                                            /* 12 */
	/* ioctl(fd, request, ...) */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0,
	                                      N_IOCTLS + 3); /* else: allow */
	f[n++] = ARG(1);
	for (unsigned i = 0; i < N_IOCTLS; i++)
		f[n++] = IF_EQ(ioctls[i], N_IOCTLS - i); /* deny */
	f[n++] = ALLOW;
	f[n++] = DENY;
	f[n++] = ALLOW;
	prog.len = (unsigned short)n;
	{
		long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
		if (r > 0) {
			GW_ERR("privileges: thread %ld cannot take the seccomp filter", r);
			return -EBUSY;
		}
		return r ? -errno : 0;
	}
#undef LD
#undef ARG
#undef IF_EQ
#undef DENY
#undef ALLOW
#else
	return 0; /* an architecture we have not written the filter for */
#endif
}

int gw_privs_check(const struct conf *c)
{
	int tids[MAX_THREADS], n, ret = 0;
	char kept[160];

	if ((n = disarm_rtnetlink()) < 0) {
		/* (fatal where the filter's failure is: after a drop) */
		gw_log(prep.dropped ? CONF_LOG_ERROR : CONF_LOG_WARNING,
		       "privileges: cannot replace a library's rtnetlink socket by one that cannot configure: %s",
		       strerror(-n));
		if (prep.dropped)
			return n;
	} else if (n)
		GW_INFO("privileges: %d library rtnetlink socket(s) reopened so that they cannot configure "
		        "the network", n);
	if (!prep.dropped) {
		/* the capabilities stay (credentials cannot change once the RDMA devices are open, and
		 * a daemon run as root by choice keeps root's file access), but what they were for at
		 * start-up is done all the same: the filter costs nothing and takes no credential */
		int lk = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ? -errno : gw_privs_lock_syscalls();
		if (lk)
			GW_WARN("privileges: cannot install the seccomp filter: %s", strerror(-lk));
		GW_NOTICE("privileges: running as uid %u with the capabilities it was started with (set "
		          "[gateway] user to drop them)%s",
		          (unsigned)geteuid(),
		          lk ? "" : "; seccomp refuses new raw sockets, network configuration, bpf and io_uring");
		return 0;
	}
	if ((ret = gw_privs_lock_syscalls())) {
		GW_ERR("privileges: seccomp: %s", strerror(-ret));
		return ret;
	}
	n = list_threads(tids, MAX_THREADS);
	if (n < 0)
		return n;
	for (int i = 0; i < n && !ret; i++)
		ret = check_thread(tids[i], prep.keep, prep.uid, prep.gid);
	if (ret)
		return ret;
	check_readable(c);
	GW_NOTICE("privileges: %d thread(s) run as %s (uid %u, gid %u) with capabilities %s only (effective, "
	          "permitted and bounding sets), no_new_privs; seccomp refuses new raw sockets, network "
	          "configuration, bpf and io_uring",
	          n, c->gateway.user, (unsigned)prep.uid, (unsigned)prep.gid,
	          caps_str(prep.keep, kept, sizeof(kept)));
	return 0;
}
