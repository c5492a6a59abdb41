/* Dropping privileges after start-up.
 *
 * What ibgwd needs privileges for is opening things: the DPDK port (af_packet's raw sockets need
 * CAP_NET_RAW, a tap for virtio_user needs CAP_NET_ADMIN, hugepages and /var/run/dpdk need root's
 * files), the stats socket, the IB devices and the rdma_cm channel. Once they are open, the datapath
 * only reads and writes fds and memory it already has. What is still asked of the kernel later:
 * - ibv_reg_mr for new IB connections (control thread) pins memory: allowed by CAP_IPC_LOCK or by
 *   RLIMIT_MEMLOCK. gw_privs_prepare raises the limit to unlimited while still root, so the capability
 *   is kept only when that failed;
 * - rdma_bind_addr of an IB listener that a reload adds (control thread): the kernel's rdma_cm wants
 *   CAP_NET_BIND_SERVICE for ports below 1024. Kept when the configuration at start has such a
 *   listener; one added later by SIGHUP needs a restart (its listener fails with EACCES);
 * - nothing on the workers: packets move over the af_packet/vhost fds and rings already mapped, IB
 *   work goes to queue pairs already created.
 * Everything else goes: uid/gid become [gateway] user/group when set, every thread's capability sets
 * (effective, permitted, inheritable, ambient, bounding) lose all but the kept ones, the workers keep
 * none at all, and no_new_privs is set so that no execve can give anything back.
 *
 * Capabilities are per thread on Linux, and the EAL's threads (lcores waiting for work, the interrupt
 * thread) already exist when we drop. glibc applies setuid/setgid/setgroups to every thread (its
 * SIGSETXID broadcast) but prctl() and capset() act on the calling thread only, so we do what glibc
 * does: signal every other thread and let it apply the same change to itself, then check every
 * thread's /proc status. Order matters: bounding sets can only shrink while CAP_SETPCAP is still
 * effective, and glibc aborts the process if setuid() fails in any thread, so the other threads keep
 * their capabilities until the uid change is done, and clear them after it. */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
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
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include "../conf/conf.h"
#include "log.h"
#include "privs.h"

#define MAX_GROUPS  64
#define MAX_THREADS 256
#define ANSWER_NS   5000000000ull /* how long a thread may take to run the signal handler */
#define CAP_BIT(c)  (UINT64_C(1) << (c))

/* Filled by gw_privs_prepare (before any thread), read by gw_privs_drop on the control thread. */
static struct {
	bool switch_user; /* [gateway] user set and different from who we run as */
	uid_t uid;
	gid_t gid;
	int n_groups;
	gid_t groups[MAX_GROUPS];
	bool memlock_unlimited; /* RLIMIT_MEMLOCK is unlimited: ibv_reg_mr needs no CAP_IPC_LOCK */
} prep;

/* One step applied by every thread to itself, in its signal handler. Written by the control thread
 * before it signals, read by the handlers; done/error written by the handlers (atomic). */
enum step {
	STEP_BOUND, /* no_new_privs, ambient cleared, bounding set shrunk to step.keep */
	STEP_CLEAR, /* effective, permitted and inheritable emptied */
};
static struct {
	enum step step;
	uint64_t keep;
	bool setpcap; /* CAP_SETPCAP is effective: the bounding set can shrink */
	int done;
	int error;
} bc;

static int gettid_(void)
{
	return (int)syscall(SYS_gettid);
}

/* capget/capset of the calling thread (raw syscalls: no libcap dependency for two calls). */
static int caps_get(uint64_t *eff, uint64_t *prm, uint64_t *inh)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return errno;
	*eff = d[0].effective | (uint64_t)d[1].effective << 32;
	*prm = d[0].permitted | (uint64_t)d[1].permitted << 32;
	*inh = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
	return 0;
}

static int caps_set(uint64_t eff, uint64_t prm, uint64_t inh)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2] = {
	    {.effective = (uint32_t)eff, .permitted = (uint32_t)prm, .inheritable = (uint32_t)inh},
	    {.effective = (uint32_t)(eff >> 32),
	     .permitted = (uint32_t)(prm >> 32),
	     .inheritable = (uint32_t)(inh >> 32)},
	};

	return syscall(SYS_capset, &h, d) ? errno : 0;
}

/* Async-signal-safe (raw syscalls only): runs in every thread's signal handler, and in the control
 * thread itself. Returns 0 or an errno. */
static int apply_step(enum step step, uint64_t keep, bool setpcap)
{
	switch (step) {
	case STEP_BOUND:
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			return errno;
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
			return errno;
		if (!setpcap)
			return 0;
		/* up to the kernel's last capability: PR_CAPBSET_READ says EINVAL past it */
		for (int cap = 0; cap < 64 && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
			if (!(keep & CAP_BIT(cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0))
				return errno;
		return 0;
	case STEP_CLEAR:
		return caps_set(0, 0, 0);
	}
	return EINVAL;
}

static void on_signal(int sig)
{
	int saved = errno, e;

	(void)sig;
	e = apply_step(__atomic_load_n(&bc.step, __ATOMIC_ACQUIRE), bc.keep, bc.setpcap);
	if (e)
		__atomic_store_n(&bc.error, e, __ATOMIC_RELAXED);
	__atomic_add_fetch(&bc.done, 1, __ATOMIC_RELEASE);
	errno = saved;
}

/* Thread ids of this process but the caller's. Returns the count, or -errno. */
static int list_threads(int *tids, int max)
{
	DIR *dh = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0, self = gettid_();

	if (!dh)
		return -errno;
	while ((de = readdir(dh))) {
		int tid = atoi(de->d_name);
		if (tid <= 0 || tid == self)
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

/* Has every other thread apply STEP to itself; waits until all of them did. Returns 0 or -errno. */
static int broadcast(enum step step)
{
	int tids[MAX_THREADS], n, sent = 0, sig = SIGRTMIN + 3, ret = 0;
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART}, old;
	struct timespec nap = {.tv_nsec = 1000000};
	struct timespec t0;
	uint64_t start;

	if (sigaction(sig, NULL, &old))
		return -errno;
	if (old.sa_handler != SIG_DFL) {
		GW_ERR("privileges: signal %d is in use, cannot reach the other threads", sig);
		return -EBUSY;
	}
	sigfillset(&sa.sa_mask);
	bc.step = step;
	__atomic_store_n(&bc.done, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&bc.error, 0, __ATOMIC_RELEASE);
	if (sigaction(sig, &sa, NULL))
		return -errno;
	n = list_threads(tids, MAX_THREADS);
	if (n < 0) {
		ret = n;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		if (syscall(SYS_tgkill, getpid(), tids[i], sig) == 0)
			sent++;
		else if (errno != ESRCH) { /* ESRCH: it ended meanwhile */
			ret = -errno;
			break;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	start = (uint64_t)t0.tv_sec * 1000000000ull + (uint64_t)t0.tv_nsec;
	while (__atomic_load_n(&bc.done, __ATOMIC_ACQUIRE) < sent) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec - start > ANSWER_NS) {
			GW_ERR("privileges: %d of %d thread(s) did not answer", sent - bc.done, sent);
			ret = -ETIMEDOUT;
			goto out;
		}
		nanosleep(&nap, NULL);
	}
	if (!ret && bc.error)
		ret = -bc.error;
out:
	sigaction(sig, &old, NULL);
	return ret;
}

/* Capability names for the log line: the ones we may keep, and a number for any other. */
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
	case CAP_SYS_ADMIN:
		return "cap_sys_admin";
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

/* Checks one thread's status file against what it must be now. Returns 0 or -EPERM (logged). */
static int check_thread(int tid, bool control, uint64_t keep, bool bound, uid_t uid, gid_t gid)
{
	char path[64], line[256];
	unsigned long long prm = ~0ull, eff = ~0ull, inh = ~0ull, bnd = ~0ull, amb = ~0ull;
	unsigned u[4] = {~0u, ~0u, ~0u, ~0u}, g[4] = {~0u, ~0u, ~0u, ~0u};
	int nnp = -1;
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
		sscanf(line, "Uid: %u %u %u %u", &u[0], &u[1], &u[2], &u[3]);
		sscanf(line, "Gid: %u %u %u %u", &g[0], &g[1], &g[2], &g[3]);
	}
	fclose(f);
	{
		uint64_t want = control ? keep : 0;
		bool ok = prm == want && eff == want && inh == 0 && amb == 0 && nnp == 1 &&
		          (!bound || !(bnd & ~keep));

		for (int i = 0; i < 4; i++)
			ok = ok && u[i] == uid && g[i] == gid;
		if (ok)
			return 0;
		GW_ERR("privileges: thread %d kept more than it should: CapPrm %llx CapEff %llx CapInh %llx "
		       "CapBnd %llx "
		       "CapAmb %llx NoNewPrivs %d uid %u gid %u",
		       tid, prm, eff, inh, bnd, amb, nnp, u[0], g[0]);
		return -EPERM;
	}
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
		prep.switch_user = prep.uid != geteuid() || prep.gid != getegid();
		if (prep.switch_user && geteuid() != 0 && !check_only) {
			snprintf(err, len, "[gateway] user '%s': only root can switch to another user",
			         g->user);
			return -EPERM;
		}
	}
	if (check_only)
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
	bool ok = stat(c->path, &st) == 0 && user_may(&st, S_IROTH);

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

int gw_privs_drop(const struct conf *c)
{
	uint64_t eff = 0, prm = 0, inh = 0, keep = 0;
	uid_t uid;
	gid_t gid;
	int tids[MAX_THREADS], n, ret;
	char kept[160], bnd[160];

	if ((ret = caps_get(&eff, &prm, &inh)))
		return -ret;
	for (uint32_t i = 0; i < c->n_routes; i++)
		if (c->routes[i].listen.kind == CONF_EP_IB && c->routes[i].listen.port < 1024)
			keep |= CAP_BIT(CAP_NET_BIND_SERVICE);
	if (!prep.memlock_unlimited)
		keep |= CAP_BIT(CAP_IPC_LOCK);
	keep &= prm; /* what we do not have cannot be kept */
	bc.keep = keep;
	bc.setpcap = eff & CAP_BIT(CAP_SETPCAP);

	/* 1. every thread: no_new_privs, no ambient set, bounding set = keep */
	if ((ret = broadcast(STEP_BOUND)) || (ret = -apply_step(STEP_BOUND, keep, bc.setpcap))) {
		GW_ERR("privileges: cannot shrink the bounding sets: %s", strerror(-ret));
		return ret;
	}
	/* 2. the ids (glibc applies them to every thread). KEEPCAPS lets this thread keep its permitted set
	 * across the uid change; the others lose theirs there, as they should. */
	if (prep.switch_user) {
		if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || setgroups((size_t)prep.n_groups, prep.groups) ||
		    setresgid(prep.gid, prep.gid, prep.gid) || setresuid(prep.uid, prep.uid, prep.uid)) {
			ret = -errno;
			GW_ERR("privileges: cannot switch to user %s (uid %u, gid %u): %s", c->gateway.user,
			       (unsigned)prep.uid, (unsigned)prep.gid, strerror(errno));
			return ret;
		}
		prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	}
	/* 3. this thread keeps only KEEP; every other thread keeps nothing */
	if ((ret = caps_set(keep, keep, 0))) {
		GW_ERR("privileges: capset: %s", strerror(ret));
		return -ret;
	}
	if ((ret = broadcast(STEP_CLEAR))) {
		GW_ERR("privileges: cannot clear the other threads' capabilities: %s", strerror(-ret));
		return ret;
	}
#if defined(__SANITIZE_ADDRESS__)
	/* A uid change makes the process non-dumpable, and LeakSanitizer's exit check (which ptrace-attaches
	 * our own threads) is then refused: the sanitized test build stays dumpable. */
	if (prep.switch_user)
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
#endif

	/* 4. what the kernel says, thread by thread */
	uid = geteuid();
	gid = getegid();
	n = list_threads(tids, MAX_THREADS);
	if (n < 0)
		return n;
	ret = check_thread(gettid_(), true, keep, bc.setpcap, uid, gid);
	for (int i = 0; i < n && !ret; i++)
		ret = check_thread(tids[i], false, keep, bc.setpcap, uid, gid);
	if (ret)
		return ret;
	if (prep.switch_user)
		check_readable(c);
	GW_NOTICE("privileges: running as uid %u gid %u (%s) in %d thread(s); capabilities kept: %s (control "
	          "thread "
	          "only); bounding set: %s; no_new_privs",
	          (unsigned)uid, (unsigned)gid, prep.switch_user ? c->gateway.user : "as started", n + 1,
	          caps_str(keep, kept, sizeof(kept)),
	          bc.setpcap ? caps_str(keep, bnd, sizeof(bnd)) : "unchanged (no CAP_SETPCAP)");
	return 0;
}
