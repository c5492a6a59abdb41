/* Unit test of gateway/privs.c's seccomp filter: in a child process (the filter cannot be removed),
 * what the kept capabilities would still allow after start-up is refused with EPERM, and what the
 * running daemon does is not. Run as root (make check is), every refused call would succeed without
 * the filter, so the EPERMs are the filter's. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/openat2.h>
#include <linux/sockios.h>

#include <cmocka.h>

#include "gateway/privs.h"

#define NETLINK_RDMA_ 20

/* errno of socket(D, T, P) (0 when it worked). */
static int try_socket(int d, int t, int p)
{
	int fd = socket(d, t, p);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/* errno of ioctl(udp socket, REQ, &ifr on lo) (0 when it worked). */
static int try_ioctl(unsigned long req)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM, 0), r;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (req == SIOCSIFFLAGS && ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) /* set what it is: changes nothing */
		return errno;
	r = ioctl(fd, req, &ifr) < 0 ? errno : 0;
	close(fd);
	return r;
}

/* errno of setsockopt(udp socket of FAMILY, LEVEL, NAME, int 1) (0 when it worked). */
static int try_setsockopt_af(int family, int level, int name)
{
	int fd = socket(family, SOCK_DGRAM, 0), one = 1, r;

	r = setsockopt(fd, level, name, &one, sizeof(one)) < 0 ? errno : 0;
	close(fd);
	return r;
}
#define try_setsockopt(level, name) try_setsockopt_af(AF_INET, level, name)

/* In a child: the filter on, then each call. Exit status: index of the first wrong answer + 1. */
static int child(void)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || gw_privs_lock_syscalls())
		return 100;
	if (try_socket(AF_PACKET, SOCK_RAW, 0) != EPERM)
		return 1;
	if (try_socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP) != EPERM)
		return 2;
	if (try_socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6) != EPERM)
		return 3;
	if (try_socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE) != EPERM)
		return 4;
	if (try_ioctl(SIOCSIFFLAGS) != EPERM || try_ioctl(SIOCSIFMTU) != EPERM ||
	    try_ioctl(SIOCSIFHWADDR) != EPERM)
		return 5;
	if (syscall(SYS_bpf, 0, NULL, 0) != -1 || errno != EPERM)
		return 6;
	/* SOCK_PACKET on an IP family is a packet socket (the kernel turns it into one); nftables and
	 * generic netlink (ethtool, devlink); the iptables socket option on any IP socket; tunnel and
	 * PHY ioctls; io_uring, whose socket op this filter would never see */
	if (try_socket(AF_INET, SOCK_PACKET, htons(0x0003)) != EPERM)
		return 10;
	if (try_socket(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER) != EPERM ||
	    try_socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC) != EPERM)
		return 11;
	if (try_setsockopt(SOL_IP, 64 /* IPT_SO_SET_REPLACE */) != EPERM ||
	    try_setsockopt(SOL_IPV6, 64 /* IP6T_SO_SET_REPLACE */) != EPERM ||
	    try_setsockopt(SOL_IP, 200 /* MRT_INIT */) != EPERM || try_setsockopt(SOL_IP, IP_TRANSPARENT) != EPERM)
		return 12;
	if (try_ioctl(SIOCSMIIREG) != EPERM || try_ioctl(SIOCDEVPRIVATE + 1) != EPERM ||
	    try_ioctl(SIOCDEVPRIVATE) != EPERM || try_ioctl(SIOCSIFBR) != EPERM || try_ioctl(SIOCBONDRELEASE) != EPERM)
		return 13;
	/* XDP sockets send frames with no program attached; key sockets configure IPsec */
	if (try_socket(AF_XDP, SOCK_RAW, 0) != EPERM || try_socket(AF_KEY, SOCK_RAW, 2 /* PF_KEY_V2 */) != EPERM)
		return 16;
	{
		char params[120] = {0}; /* struct io_uring_params */
		if (syscall(SYS_io_uring_setup, 1, params) != -1 || errno != EPERM)
			return 14;
	}
	/* what the daemon does */
	if (try_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0) || try_socket(AF_INET, SOCK_DGRAM, 0) ||
	    try_socket(AF_UNIX, SOCK_DGRAM, 0))
		return 7;
	if (try_socket(AF_NETLINK, SOCK_RAW, NETLINK_RDMA_) == EPERM)
		return 8;
	if (try_ioctl(SIOCGIFFLAGS) || try_ioctl(SIOCGIFINDEX))
		return 9;
	if (try_setsockopt(SOL_SOCKET, SO_REUSEADDR) || try_setsockopt(SOL_IP, IP_TOS))
		return 15;
	/* ordinary IPv6 options stay, ip6tables' (64, 65) go */
	if (try_setsockopt_af(AF_INET6, SOL_IPV6, IPV6_V6ONLY) || try_setsockopt_af(AF_INET6, SOL_IPV6, IPV6_TCLASS) ||
	    try_setsockopt_af(AF_INET6, SOL_IPV6, 64) != EPERM)
		return 17;
	if (try_socket(AF_INET6, SOCK_STREAM, 0) || try_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0))
		return 18;
	/* the access log is opened again under the filter (SIGUSR1, a reload), by openat2 with no symbolic
	 * link on the path (openat a component at a time where the kernel has no openat2) */
	{
		struct open_how how = {.flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK,
		                       .mode = 0600,
		                       .resolve = RESOLVE_NO_SYMLINKS};
		char path[64];
		long fd;

		snprintf(path, sizeof(path), "/tmp/ibgw-test-filter-%d.log", (int)getpid());
		fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
		if (fd < 0 && errno != ENOSYS)
			return 19;
		if (fd >= 0)
			close((int)fd);
		fd = openat(AT_FDCWD, path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		unlink(path);
		if (fd < 0)
			return 20;
		close((int)fd);
	}
	return 0;
}

static void test_filter(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		print_message("check %d answered wrong under the filter\n", WEXITSTATUS(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_filter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
