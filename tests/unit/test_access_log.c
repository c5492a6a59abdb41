/* Unit tests of gateway/access_log: the workers' record ring (bounded, drops counted, never waits),
 * the JSON line of a record (exact text for a TCP and an IB session, both address families, the
 * time conversion, and escaping), and which paths the log may be opened by (a symbolic link under
 * /dev refused, /dev/stdout followed; a symbolic link as any directory of the path refused, by openat2
 * and by the walk a component at a time where openat2 is refused). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf/conf-t.h"
#include "gateway/access_log.h"
#include "translate/ip.h"
#include "translate/session-t.h"

static void test_ring_bounded(void **state)
{
	struct gw_alog_ring *r = aligned_alloc(64, sizeof(*r));
	struct gw_alog_rec *rec;

	(void)state;
	assert_non_null(r);
	memset(r, 0, sizeof(*r));
	assert_null(gw_alog_peek(r));
	assert_int_equal(gw_alog_room(r), GW_ALOG_RING_SIZE);
	for (unsigned i = 0; i < GW_ALOG_RING_SIZE; i++) {
		rec = gw_alog_reserve(r);
		assert_non_null(rec);
		rec->uid = i;
		gw_alog_commit(r);
	}
	assert_int_equal(gw_alog_room(r), 0);
	/* full: the record is dropped and counted, the caller goes on */
	assert_null(gw_alog_reserve(r));
	assert_null(gw_alog_reserve(r));
	assert_int_equal(r->dropped, 2);
	for (unsigned i = 0; i < 10; i++) {
		const struct gw_alog_rec *c = gw_alog_peek(r);
		assert_non_null(c);
		assert_int_equal(c->uid, i); /* in order */
		gw_alog_pop(r);
	}
	assert_int_equal(gw_alog_room(r), 10);
	for (unsigned i = 0; i < 10; i++) { /* room again, across the wrap */
		rec = gw_alog_reserve(r);
		assert_non_null(rec);
		rec->uid = 100000 + i;
		gw_alog_commit(r);
	}
	assert_null(gw_alog_reserve(r));
	for (unsigned i = 10; i < GW_ALOG_RING_SIZE + 10; i++) {
		const struct gw_alog_rec *c = gw_alog_peek(r);
		assert_non_null(c);
		assert_int_equal(c->uid, i < GW_ALOG_RING_SIZE ? i : 100000 + i - GW_ALOG_RING_SIZE);
		gw_alog_pop(r);
	}
	assert_null(gw_alog_peek(r));
	assert_int_equal(r->dropped, 3);
	free(r);
}

/* 2025-12-04T00:00:00.123456789Z on the real clock, 5 s on the monotonic one */
#define REAL_NS (1764806400ull * 1000000000ull + 123456789ull)
#define MONO_NS (5ull * 1000000000ull)

static void test_format_tcp(void **state)
{
	struct gw_alog_rec r = {
	    .uid = 0x0100000000000abcull,
	    .start_ns = MONO_NS - 2500000000ull,
	    .now_ns = MONO_NS - 1000000ull, /* made 1 ms before the drain */
	    .connect_ns = 1234567,
	    .bytes = {1000, 2000000},
	    .blocked_ns = {0, 42000000},
	    .client = {.side = 2 /* CONF_EP_TCP */,
	               .present = 1,
	               .port = 40000,
	               .info = {.kind = XLT_STREAM_TCP, .retransmits = 3, .srtt_us = 250}},
	    .backend = {.side = 2,
	                .present = 1,
	                .port = 5001,
	                .info = {.kind = XLT_STREAM_TCP, .retransmits = 0, .srtt_us = 80}},
	    .event = GW_ALOG_END,
	    .reason = XLT_END_RESET,
	    .connected = 1,
	    .route = "web\"out",
	};
	char buf[GW_ALOG_LINE_MAX];
	size_t n;

	(void)state;
	assert_int_equal(xlt_ip_parse("198.18.0.2", &r.client.addr), 0);
	assert_int_equal(xlt_ip_parse("198.18.1.9", &r.backend.addr), 0);
	n = gw_alog_format(&r, REAL_NS, MONO_NS, buf, sizeof(buf));
	buf[n] = 0;
	assert_string_equal(
	    buf,
	    "{\"time\":\"2025-12-04T00:00:00.122Z\",\"event\":\"end\",\"uid\":\"0100000000000abc\","
	    "\"route\":\"web\\\"out\",\"reason\":\"reset\",\"duration_ms\":2499.000,\"connect_ms\":1.234,"
	    "\"client\":{\"side\":\"tcp\",\"addr\":\"198.18.0.2\",\"port\":40000,\"retransmits\":3,\"srtt_"
	    "us\":250},"
	    "\"backend\":{\"side\":\"tcp\",\"addr\":\"198.18.1.9\",\"port\":5001,\"retransmits\":0,\"srtt_"
	    "us\":80},"
	    "\"client_to_backend\":{\"bytes\":1000,\"blocked_ms\":0.000},"
	    "\"backend_to_client\":{\"bytes\":2000000,\"blocked_ms\":42.000}}\n");
}

static void test_format_ib_progress(void **state)
{
	struct gw_alog_rec r = {
	    .uid = 7,
	    .start_ns = MONO_NS - 1000,
	    .now_ns = MONO_NS,
	    .client = {.side = 1 /* CONF_EP_IB */,
	               .present = 1,
	               .port = 33000,
	               .info = {.kind = XLT_STREAM_IB,
	                        .has_gid = 1,
	                        .qpn = 0x11,
	                        .credit_stalls = 4,
	                        .credit_stall_ns = 1500000}},
	    .backend = {.side = 2, .present = 0, .port = 80}, /* connecting: the route's destination */
	    .event = GW_ALOG_PROGRESS,
	    .connected = 0,
	    .route = "s3",
	};
	char buf[GW_ALOG_LINE_MAX];
	size_t n;

	(void)state;
	assert_int_equal(xlt_ip_parse("198.19.0.1", &r.client.addr), 0);
	assert_int_equal(xlt_ip_parse("198.18.0.2", &r.backend.addr), 0);
	inet_pton(AF_INET6, "fe80::5054:ff:fe12:3456", r.client.info.gid);
	n = gw_alog_format(&r, REAL_NS, MONO_NS, buf, sizeof(buf));
	buf[n] = 0;
	assert_string_equal(
	    buf, "{\"time\":\"2025-12-04T00:00:00.123Z\",\"event\":\"progress\",\"uid\":\"0000000000000007\","
	         "\"route\":\"s3\",\"duration_ms\":0.001,\"connect_ms\":null,"
	         "\"client\":{\"side\":\"ib\",\"addr\":\"198.19.0.1\",\"port\":33000,\"gid\":\"fe80::5054:ff:"
	         "fe12:3456\","
	         "\"qpn\":17,\"credit_stalls\":4,\"credit_stall_ms\":1.500},"
	         "\"backend\":{\"side\":\"tcp\",\"addr\":\"198.18.0.2\",\"port\":80},"
	         "\"client_to_backend\":{\"bytes\":0,\"blocked_ms\":0.000},"
	         "\"backend_to_client\":{\"bytes\":0,\"blocked_ms\":0.000}}\n");
}

/* IPv6 ends: RFC 5952 text (lower case, the longest zero run as ::), no brackets (the port has its own
 * key); an IPv4 client of an IPv6 backend stays dotted. */
static void test_format_v6(void **state)
{
	struct gw_alog_rec r = {
	    .uid = 9,
	    .start_ns = MONO_NS - 2000000,
	    .now_ns = MONO_NS,
	    .client = {.side = 2 /* CONF_EP_TCP */,
	               .present = 1,
	               .port = 40000,
	               .info = {.kind = XLT_STREAM_TCP, .srtt_us = 10}},
	    .backend = {.side = 2, .present = 1, .port = 80, .info = {.kind = XLT_STREAM_TCP, .srtt_us = 20}},
	    .event = GW_ALOG_END,
	    .reason = XLT_END_OK,
	    .connected = 1,
	    .route = "v6",
	};
	char buf[GW_ALOG_LINE_MAX];
	size_t n;

	(void)state;
	assert_int_equal(xlt_ip_parse("2001:DB8:0:0:0:0:0:2", &r.client.addr), 0);
	assert_int_equal(xlt_ip_parse("2001:db8:0:1::10", &r.backend.addr), 0);
	n = gw_alog_format(&r, REAL_NS, MONO_NS, buf, sizeof(buf));
	buf[n] = 0;
	assert_non_null(strstr(buf, "\"client\":{\"side\":\"tcp\",\"addr\":\"2001:db8::2\",\"port\":40000,"));
	assert_non_null(
	    strstr(buf, "\"backend\":{\"side\":\"tcp\",\"addr\":\"2001:db8:0:1::10\",\"port\":80,"));

	assert_int_equal(xlt_ip_parse("198.18.0.2", &r.client.addr), 0);
	n = gw_alog_format(&r, REAL_NS, MONO_NS, buf, sizeof(buf));
	buf[n] = 0;
	assert_non_null(strstr(buf, "\"addr\":\"198.18.0.2\",\"port\":40000,"));
	assert_null(strstr(buf, "::ffff:"));
	assert_null(strstr(buf, "\"via\""));

	/* a PROXY header gave the client's address: the real TCP peer (a balancer) beside it */
	r.client.via_port = 51000;
	assert_int_equal(xlt_ip_parse("198.18.0.5", &r.client.via_addr), 0);
	n = gw_alog_format(&r, REAL_NS, MONO_NS, buf, sizeof(buf));
	buf[n] = 0;
	assert_non_null(strstr(buf, "\"addr\":\"198.18.0.2\",\"port\":40000,\"via\":{\"addr\":\"198.18.0.5\","
	                            "\"port\":51000},"));

	/* an IB peer that connected over IPv6 */
	r.client =
	    (struct gw_alog_end){.side = 1, .present = 1, .port = 7000, .info = {.kind = XLT_STREAM_IB}};
	assert_int_equal(xlt_ip_parse("2001:db8:ff::1", &r.client.addr), 0);
	n = gw_alog_format(&r, REAL_NS, MONO_NS, buf, sizeof(buf));
	buf[n] = 0;
	assert_non_null(
	    strstr(buf, "\"client\":{\"side\":\"ib\",\"addr\":\"2001:db8:ff::1\",\"port\":7000,"));
}

static void test_format_bounded(void **state)
{
	struct gw_alog_rec r;
	char buf[GW_ALOG_LINE_MAX + 1];
	size_t n;

	(void)state;
	/* the worst record: every byte set (an unterminated route name of control characters, escaped
	 * six bytes each): the line still fits and ends with its newline */
	memset(&r, 0xff, sizeof(r));
	memset(r.route, 1, sizeof(r.route));
	r.event = GW_ALOG_END;
	r.client.info.kind = r.backend.info.kind = XLT_STREAM_IB;
	r.client.side = r.backend.side = 1;
	n = gw_alog_format(&r, REAL_NS, MONO_NS, buf, GW_ALOG_LINE_MAX);
	assert_true(n <= GW_ALOG_LINE_MAX);
	assert_int_equal(buf[n - 1], '\n');
	buf[n] = 0;
	assert_non_null(strstr(buf, "\"route\":\"\\u0001\\u0001"));
	assert_non_null(strstr(buf, "\"reason\":\"unknown\""));
	/* the longest address text, both ends */
	assert_non_null(strstr(buf, "\"addr\":\"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff\""));
	assert_non_null(strstr(buf, "\"via\":{\"addr\":\"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff\",\"port\":65535}"));
}

/* The target a reload would open for PATH: 0 (then dropped again) or -errno. */
static int try_open(const char *path)
{
	struct conf *c = calloc(1, sizeof(*c));
	int ret;

	assert_non_null(c);
	snprintf(c->gateway.access_log, sizeof(c->gateway.access_log), "%s", path);
	ret = gw_alog_reload_prepare(NULL, c);
	gw_alog_reload_abort(NULL);
	free(c);
	return ret;
}

/* /dev/shm is writable by anyone: a link planted there must not be followed (nor one anywhere else
 * under /dev but the daemon's own stdout and stderr), and what it points to stays untouched; a
 * regular file there is fine; a device other than stdout or stderr is refused. */
static void test_open_dev_link(void **state)
{
	char victim[] = "/tmp/ibgw-test-victim-XXXXXX", link[64], file[64], buf[8] = {0};
	int fd = mkstemp(victim);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	snprintf(link, sizeof(link), "/dev/shm/ibgw-test-%d.log", (int)getpid());
	snprintf(file, sizeof(file), "/dev/shm/ibgw-test-%d-file.log", (int)getpid());
	unlink(link);
	if (symlink(victim, link)) {
		unlink(victim);
		skip(); /* (no /dev/shm here) */
	}
	int link_ret = try_open(link);
	int file_ret = try_open(file);
	int null_ret = try_open("/dev/null");
	int stdout_ret = try_open("/dev/stdout");
	int fd2_ret = try_open("/dev/fd/2");
	fd = open(victim, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 4);
	close(fd);
	unlink(link);
	unlink(file);
	unlink(victim);
	assert_int_equal(link_ret, -ELOOP);
	assert_string_equal(buf, "keep");
	assert_int_equal(file_ret, 0);
	assert_int_equal(null_ret, -EINVAL);
	/* (stdout and stderr: a file, a pipe or a terminal, whatever runs the test) */
	assert_int_equal(stdout_ret, 0);
	assert_int_equal(fd2_ret, 0);
}

/* Bytes of PATH's file (up to 15), "" when there is none. */
static const char *file_text(const char *path, char buf[16])
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, 15);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

/* A link as a directory of the path (where that directory's parent is writable by others:
 * /var/tmp/ibgw -> /etc) redirects the file as surely as one as the file: every such path is refused
 * (-ELOOP) and nothing is written or made where the link points. In T (an empty directory): real/,
 * real/sub/, a file real/plain, victim/ with victim/access.log "keep"; the links up -> victim,
 * mid -> real, real/down -> victim, real/last.log -> victim/access.log. Returns 0, or the number of the
 * first wrong answer. */
static int parent_link_checks(const char *t)
{
	char p[7][256], buf[16];

#define P(i, fmt) snprintf(p[i], sizeof(p[i]), "%s/" fmt, t)
	P(0, "up/access.log");        /* the log's directory a link */
	P(1, "up/new.log");           /* the same, a file not there yet */
	P(2, "mid/sub/access.log");   /* a link further up */
	P(3, "real/down/access.log"); /* a link below a real directory */
	P(4, "real/last.log");        /* the file itself a link (O_NOFOLLOW's case) */
	P(5, "real/sub/access.log");  /* no link: opens */
	P(6, "real/plain/x.log");     /* a file where a directory must be */
	if (try_open(p[0]) != -ELOOP || try_open(p[1]) != -ELOOP)
		return 1;
	if (try_open(p[2]) != -ELOOP || try_open(p[3]) != -ELOOP)
		return 2;
	if (try_open(p[4]) != -ELOOP)
		return 3;
	P(0, "victim/access.log");
	P(1, "victim/new.log");
	P(2, "real/sub/access.log"); /* (what mid/sub/access.log would have made) */
	if (strcmp(file_text(p[0], buf), "keep") || access(p[1], F_OK) == 0 || access(p[2], F_OK) == 0)
		return 4;
	if (try_open(p[5]) != 0 || access(p[5], F_OK))
		return 5;
	if (try_open(p[6]) != -ENOTDIR)
		return 6;
	P(0, "real/sub/"); /* a directory, named with the slash */
	if (try_open(p[0]) != -EISDIR)
		return 7;
#undef P
	return 0;
}

/* In a child (the filter cannot be removed): openat2 answered ERR by a seccomp filter, as a kernel
 * before 5.6 (ENOSYS) or a container runtime's filter that does not know it (ENOSYS, EPERM) answers:
 * the walk a component at a time refuses the same paths. Returns parent_link_checks' answer, 100 if
 * openat2 still worked, 101 if the filter could not be installed. */
static int parent_link_checks_walk(const char *t, int err)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)err),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return 101;
	if (syscall(SYS_openat2, AT_FDCWD, "/", NULL, 0) != -1 || errno != err)
		return 100;
	return parent_link_checks(t);
}

static void test_open_parent_link(void **state)
{
	static const char *const dirs[] = {"real", "real/sub", "victim"};
	static const char *const links[][2] = {{"up", "victim"},
	                                       {"mid", "real"},
	                                       {"real/down", "../victim"},
	                                       {"real/last.log", "../victim/access.log"}};
	static const char *const files[] = {"real/plain", "real/sub/access.log", "victim/access.log",
	                                    "victim/new.log"};
	static const int errs[] = {0, ENOSYS, EPERM};
	char t[] = "/tmp/ibgw-test-links-XXXXXX", p[256];
	int ret[3], fd;

	(void)state;
	assert_non_null(mkdtemp(t));
	for (unsigned i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", t, dirs[i]);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/%s", t, links[i][0]);
		assert_int_equal(symlink(links[i][1], p), 0);
	}
	snprintf(p, sizeof(p), "%s/victim/access.log", t);
	fd = open(p, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	snprintf(p, sizeof(p), "%s/real/plain", t);
	fd = open(p, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	for (unsigned i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/real/sub/access.log", t);
		unlink(p); /* (each run makes it) */
		if (!errs[i]) {
			ret[i] = parent_link_checks(t);
			continue;
		}
		pid_t pid = fork();
		int status;
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(parent_link_checks_walk(t, errs[i]));
		assert_int_equal(waitpid(pid, &status, 0), pid);
		ret[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 200;
	}
	for (unsigned i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/%s", t, files[i]);
		unlink(p);
	}
	for (unsigned i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/%s", t, links[i][0]);
		unlink(p);
	}
	for (unsigned i = 3; i-- > 0;) {
		snprintf(p, sizeof(p), "%s/%s", t, dirs[i]);
		rmdir(p);
	}
	assert_int_equal(rmdir(t), 0);
	for (unsigned i = 0; i < 3; i++)
		if (ret[i])
			print_message("openat2 %s: check %d answered wrong\n",
			              errs[i] ? strerror(errs[i]) : "available", ret[i]);
	assert_int_equal(ret[0], 0); /* openat2 */
	assert_int_equal(ret[1], 0); /* ENOSYS: the walk */
	assert_int_equal(ret[2], 0); /* EPERM: the walk */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ring_bounded),       cmocka_unit_test(test_format_tcp),
	    cmocka_unit_test(test_format_ib_progress), cmocka_unit_test(test_format_v6),
	    cmocka_unit_test(test_format_bounded),     cmocka_unit_test(test_open_dev_link),
	    cmocka_unit_test(test_open_parent_link),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
