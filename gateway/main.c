/* ibgwd: command line, config check, DPDK EAL start-up, daemonizing, then the control loop.
 *
 * Start-up order matters: the config is checked completely before anything is touched; we fork before
 * rte_eal_init() (EAL threads would not survive a fork) and the parent waits on a pipe until the child
 * reports that it serves, so `ibgwd -c FILE` returns non-zero when start-up fails, like any good daemon. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include "../conf/conf.h"
#include "../eth_side/port.h"
#include "access_log.h"
#include "gw.h"
#include "log.h"
#include "privs.h"

#define DEFAULT_CONF "/etc/ibgw/ibgw.conf"
#define MAX_EAL_ARGS 64

static void usage(FILE *out)
{
	fprintf(out, "usage: ibgwd [-c FILE] [-t] [-f] [-v] [-h] [--version]\n"
		     "  -c, --config FILE   configuration file (default " DEFAULT_CONF ")\n"
		     "  -t, --test          check the configuration, print a summary and exit 0 (valid) or 1\n"
		     "  -f, --foreground    do not daemonize; log to stderr\n"
		     "  -v, --verbose       log at debug level (over log_level, reloads too)\n"
		     "      --config-reference  print the reference of every config key (Markdown) and exit\n"
		     "  -h, --help          this help\n"
		     "      --version       print the version and exit\n");
}

static void print_conf_error(void *arg, const char *msg)
{
	fprintf(arg, "%s\n", msg);
}

static bool has_arg(const struct conf_eth *e, const char *const *names)
{
	for (; *names; names++) {
		const char *s = e->eal_args;
		size_t n = strlen(*names);
		while ((s = strstr(s, *names))) {
			if ((s == e->eal_args || s[-1] == ' ') && (s[n] == ' ' || s[n] == '=' || s[n] == 0))
				return true;
			s += n;
		}
	}
	return false;
}

/* Builds argv for rte_eal_init from [eth] and [gateway]. Returns argc. */
static int build_eal_args(const struct conf *c, char *buf, size_t len, char **argv, char *prefix, size_t plen)
{
	static const char *const lcore_opts[] = {"-l", "-c", "--lcores", NULL};
	static const char *const prefix_opts[] = {"--file-prefix", NULL};
	static const char *const log_opts[] = {"--log-level", NULL};
	static const char *const mem_opts[] = {"--in-memory", "--no-huge", "--huge-unlink", NULL};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int argc = 0;
	char *tok, *save = NULL, copy[CONF_STR_MAX];
	size_t used = 0;

#define ADD(...)                                                                                             \
	do {                                                                                                 \
		int n_ = snprintf(buf + used, len - used, __VA_ARGS__);                                      \
		if (n_ < 0 || (size_t)n_ >= len - used || argc >= MAX_EAL_ARGS - 1)                          \
			return -1;                                                                           \
		argv[argc++] = buf + used;                                                                   \
		used += (size_t)n_ + 1;                                                                      \
	} while (0)
	ADD("ibgwd");
	if (!has_arg(&c->eth, lcore_opts))
		/* lcore 0 = control thread, 1..W = workers, floating over the online CPUs */
		ADD("--lcores=(0-%u)@(0-%ld)", c->gateway.workers, ncpu > 1 ? ncpu - 1 : 0);
	prefix[0] = 0;
	if (!has_arg(&c->eth, prefix_opts)) {
		snprintf(prefix, plen, "ibgwd-%d", (int)getpid());
		ADD("--file-prefix=%s", prefix);
	}
	if (!has_arg(&c->eth, log_opts))
		ADD("--log-level=%s", c->gateway.log_level >= CONF_LOG_DEBUG ? "info" : "warning");
	ADD("--no-telemetry");
	/* Hugepages named by files that outlive the process hold their memory after ibgwd exits (until
	 * the next start clears them), the more so after a crash: unlinked once mapped, they go back to
	 * the system with the process. Nothing else maps them (no secondary processes). */
	if (!has_arg(&c->eth, mem_opts))
		ADD("--huge-unlink");
	if (c->eth.vdev[0])
		ADD("--vdev=%s", c->eth.vdev);
	else
		ADD("--no-pci"); /* no port: probe nothing */
	snprintf(copy, sizeof(copy), "%s", c->eth.eal_args);
	for (tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (!c->eth.vdev[0] && !strcmp(tok, "--no-pci"))
			continue; /* already given */
		ADD("%s", tok);
	}
#undef ADD
	argv[argc] = NULL;
	return argc;
}

/* EAL leaves its runtime directory behind; remove it when we named it. DIR is the path EAL reported:
 * after the privilege drop the euid no longer tells where EAL put it. */
static void remove_runtime_dir(const char *prefix, const char *dir)
{
	char path[PATH_MAX + 256];
	DIR *dh;
	struct dirent *de;

	if (!prefix[0] || !dir[0])
		return;
	dh = opendir(dir);
	if (!dh)
		return;
	while ((de = readdir(dh)))
		if (de->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
	closedir(dh);
	rmdir(dir);
}

/* Forks; the parent waits for the child's "ready" byte and exits with 0, or 1 if the child failed.
 * Returns the write end of the pipe in the child. */
static int daemonize(void)
{
	int fds[2], null;
	pid_t pid;
	char c;

	if (pipe(fds))
		gw_fatal("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		gw_fatal("fork: %s", strerror(errno));
	if (pid > 0) {
		close(fds[1]);
		if (read(fds[0], &c, 1) == 1)
			_exit(0);
		waitpid(pid, NULL, WNOHANG);
		_exit(1);
	}
	close(fds[0]);
	setsid();
	if (chdir("/")) {
		/* nothing depends on the cwd */
	}
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		close(null);
	}
	return fds[1];
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'}, {"test", no_argument, NULL, 't'},
		{"foreground", no_argument, NULL, 'f'},	  {"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},	  {"version", no_argument, NULL, 'V'},
		{"config-reference", no_argument, NULL, 'R'}, {NULL, 0, NULL, 0},
	};
	static struct gw_daemon d = {.ready_fd = -1};
	const char *path = DEFAULT_CONF;
	bool test = false, foreground = false, verbose = false;
	char eal_buf[4096], *eal_argv[MAX_EAL_ARGS], prefix[64], errbuf[256], runtime_dir[PATH_MAX] = "";
	int opt, eal_argc, status;

	/* a reload (systemctl reload), a log reopen (logrotate) or a stop asked for while the daemon
	 * starts (DPDK can take seconds) waits for the handlers (gw_daemon_run unblocks them), instead of
	 * ending the daemon by the signals' default action with DPDK half set up; EAL's threads keep
	 * them blocked */
	gw_signals_hold(true);

	while ((opt = getopt_long(argc, argv, "c:tfvh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': path = optarg; break;
		case 't': test = true; break;
		case 'f': foreground = true; break;
		case 'v': verbose = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("ibgwd %s\n", GW_VERSION); return 0;
		case 'R': conf_print_reference(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "ibgwd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	d.conf = conf_load(path, print_conf_error, stderr);
	if (!d.conf) {
		if (errno == EINVAL)
			fprintf(stderr, "%s: configuration rejected\n", path);
		else
			fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return 1;
	}
	/* a user that does not exist fails here, with -t too, before anything starts */
	if (gw_privs_prepare(d.conf, test, errbuf, sizeof(errbuf))) {
		fprintf(stderr, "%s: %s\n", path, errbuf);
		conf_free(d.conf);
		return 1;
	}
	if (test) {
		/* what start-up opens as the user it runs as: an access log it could not open fails it
		 * (only as root: another user's -t is not the daemon's identity, and would create the
		 * file as its own) */
		if (geteuid() != 0 && d.conf->gateway.access_log[0])
			fprintf(stderr, "%s: access log not checked (-t runs without root)\n", path);
		else if (gw_privs_as_user(d.conf, gw_alog_check, d.conf)) {
			fprintf(stderr, "%s: configuration rejected\n", path);
			conf_free(d.conf);
			return 1;
		}
		conf_warn(d.conf, print_conf_error, stderr);
		conf_print_summary(d.conf, stdout);
		conf_free(d.conf);
		return 0;
	}
	d.conf_path = path[0] == '/' ? path : realpath(path, NULL); /* SIGHUP must find it after chdir("/") */
	if (!d.conf_path)
		gw_fatal("%s: %s", path, strerror(errno));
	d.verbose = verbose;
	if (verbose)
		d.conf->gateway.log_level = CONF_LOG_DEBUG;
	gw_log_init(foreground ? d.conf->gateway.log_target : CONF_LOG_SYSLOG, d.conf->gateway.log_level);
	if (!foreground)
		d.ready_fd = daemonize();

	eal_argc = build_eal_args(d.conf, eal_buf, sizeof(eal_buf), eal_argv, prefix, sizeof(prefix));
	if (eal_argc < 0)
		gw_fatal("[eth] eal_args: too many arguments");
	/* before EAL creates its threads, which then share the reduced credentials */
	if (gw_privs_drop(d.conf, errbuf, sizeof(errbuf)))
		gw_fatal("%s", errbuf);
	if (rte_eal_init(eal_argc, eal_argv) < 0)
		gw_fatal("DPDK EAL initialization failed: %s (check [eth] eal_args and vdev)", rte_strerror(rte_errno));
	if (prefix[0]) {
		snprintf(runtime_dir, sizeof(runtime_dir), "%s", rte_eal_get_runtime_dir());
		/* empty with --in-memory (nothing will use it): removed now; else at exit */
		rmdir(runtime_dir);
	}
	d.n_workers = d.conf->gateway.workers;
	if (rte_lcore_count() < d.n_workers + 1)
		gw_fatal("%u worker(s) need %u lcores, EAL has %u (check [eth] eal_args)", d.n_workers,
			 d.n_workers + 1, rte_lcore_count());
	if (d.conf->eth.vdev[0]) {
		d.port = eth_port_create(&d.conf->eth, d.n_workers, errbuf, sizeof(errbuf));
		if (!d.port)
			gw_fatal("Ethernet port: %s", errbuf);
		GW_INFO("port %u up on %s", d.conf->eth.port, d.conf->eth.vdev);
	}

	status = gw_daemon_run(&d);

	eth_port_destroy(d.port);
	rte_eal_cleanup();
	remove_runtime_dir(prefix, runtime_dir);
	if (d.conf->gateway.user[0] && runtime_dir[0]) /* EAL made RUNDIR/dpdk for the user */
		rmdir(dirname(runtime_dir));
	if (gw_privs_rundir()[0])
		rmdir(gw_privs_rundir());
	conf_free(d.conf);
	if (d.conf_path != path)
		free((char *)d.conf_path);
	return status;
}
