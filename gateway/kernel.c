/* The kernel's side of the gateway: the exception TAP and the addresses on it.
 *
 * With [eth] kernel_tap set, the control thread creates the TAP (eth_side/exception.h) before the
 * engines start, services it on a 1 ms timer (frames each way between it and the workers' rings;
 * routing daemons' traffic tolerates that delay, and no worker ever waits on the TAP), and follows
 * the addresses the kernel has on it over rtnetlink (RTMGRP_IPV4_IFADDR, RTMGRP_IPV6_IFADDR, and one
 * dump of both families at start). IPv6 addresses count once the kernel's duplicate address
 * detection let them through (not tentative), and never link-local ones: the TAP's is ibgwd's own
 * (the same MAC). Those addresses, a VIP keepalived adds, one an operator adds with `ip addr add`, become
 * ibgwd's own: a new set is published to the workers in the live snapshot (live.c), so a worker
 * never sees it change under it and an old set is freed only after every worker let go of it.
 * An address that leaves the TAP stays in the set as GONE: its connections finish (or are reset,
 * [eth] removed_addr_reset), new ones are refused; its slot is reused when the set is full.
 *
 * The netlink socket is opened before the seccomp filter closes rtnetlink (privs.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "../eth_side/exception.h"
#include "../eth_side/port.h"
#include "gw.h"
#include "log.h"
#include "metrics.h"
#include "privs.h"

#define SERVICE_US 1000
#define DUMP_SEQ   1 /* the sequence number of our address dumps (notifications carry 0) */

static void service_tick(evutil_socket_t fd, short what, void *arg)
{
	struct gw_daemon *d = arg;

	(void)fd;
	(void)what;
	eth_exc_service(d->exc, gw_now_ns());
}

static int dump_request(int fd)
{
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
	} req = {
	    .nh = {.nlmsg_len = sizeof(req),
	           .nlmsg_type = RTM_GETADDR,
	           .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
	           .nlmsg_seq = DUMP_SEQ},
	    .ifa = {.ifa_family = AF_UNSPEC}, /* both families in one dump */
	};

	return send(fd, &req, sizeof(req), 0) == (ssize_t)sizeof(req) ? 0 : -errno;
}

/* ADDR (either family) appeared on the TAP (UP) or left it; returns whether the set changed. */
static bool set_update(struct gw_daemon *d, const struct xlt_ip *addr, bool up)
{
	const struct conf_eth *e = &d->conf->eth;
	struct eth_local_set *ls = &d->locals;
	char a[XLT_IP_STRLEN];
	uint32_t i, gone = UINT32_MAX;

	if (xlt_ip_is_v4(addr) ? xlt_ip_to_v4(addr) == e->address.net.s_addr
	                       : e->address6.prefix && !memcmp(addr->b, &e->address6.addr, 16))
		return false; /* always ours */
	if (!xlt_ip_is_v4(addr) &&
	    (addr->b[0] == 0xff || (addr->b[0] == 0xfe && (addr->b[1] & 0xc0) == 0x80)))
		return false; /* link-local (the TAP's is ibgwd's own), multicast */
	xlt_ip_fmt(addr, a);
	for (i = 0; i < ls->n; i++)
		if (xlt_ip_eq(&ls->a[i].addr, addr))
			break;
	if (i < ls->n) {
		uint8_t s = up ? ETH_LOCAL_UP : ETH_LOCAL_GONE;
		if (ls->a[i].state == s)
			return false;
		ls->a[i].state = s;
		d->locals_gone_ns[i] = gw_now_ns();
		GW_NOTICE("kernel_tap: address %s %s", a,
		          up ? "back: ibgwd serves it again" : "removed: no new connections to it");
		return true;
	}
	if (!up)
		return false;
	if (!xlt_ip_is_v4(addr) && !e->address6.prefix) {
		GW_WARN("kernel_tap: address %s left to the kernel: ibgwd's IPv6 needs [eth] address6", a);
		return false;
	}
	/* the address that left the TAP longest ago: its connections had the longest to finish (a VIP
	 * that left a moment ago still has its sessions draining, passed to the flow peer) */
	for (i = 0; i < ls->n; i++)
		if (ls->a[i].state == ETH_LOCAL_GONE &&
		    (gone == UINT32_MAX || d->locals_gone_ns[i] < d->locals_gone_ns[gone]))
			gone = i;
	if (ls->n < ETH_LOCAL_MAX)
		i = ls->n++;
	else if (gone != UINT32_MAX)
		i = gone; /* its remaining connections lose their address check */
	else {
		GW_WARN("kernel_tap: address %s ignored: ibgwd takes %u addresses from the TAP at most", a,
		        ETH_LOCAL_MAX);
		return false;
	}
	ls->a[i].addr = *addr;
	ls->a[i].state = ETH_LOCAL_UP;
	GW_NOTICE("kernel_tap: address %s added: ibgwd serves it", a);
	return true;
}

/* Asks the kernel for every address of the TAP: those it does not list any more left while
 * notifications were lost (dump_done). */
static int dump_start(struct gw_daemon *d)
{
	int ret;

	if (d->locals_dumping) {
		d->locals_redump = true; /* (the kernel runs one dump at a time: again at its end) */
		return 0;
	}
	memset(d->locals_seen, 0, sizeof(d->locals_seen));
	d->locals_replied = d->locals_redump = false;
	ret = dump_request(d->nl_fd);
	d->locals_dumping = !ret;
	return ret;
}

/* ADDR is on the TAP: the dump listed it, or a notification that came after the dump's first reply
 * (notifications queued before it may be older than the overrun, the address gone since) */
static void mark_seen(struct gw_daemon *d, const struct xlt_ip *addr)
{
	for (uint32_t i = 0; i < d->locals.n; i++)
		if (xlt_ip_eq(&d->locals.a[i].addr, addr))
			d->locals_seen[i] = true;
}

/* The dump ended: an address ibgwd serves that it did not list, and that no notification added
 * meanwhile, left the TAP while notifications were lost (a VIP keepalived moved to the other gateway
 * during an overrun: ibgwd went on answering for it). Returns whether the set changed. */
static bool dump_done(struct gw_daemon *d)
{
	bool changed = false;

	if (!d->locals_dumping)
		return false;
	d->locals_dumping = false;
	if (d->locals_redump) {
		dump_start(d); /* what it lacks may have been missed: no verdict from it */
		return false;
	}
	for (uint32_t i = 0; i < d->locals.n; i++)
		if (d->locals.a[i].state == ETH_LOCAL_UP && !d->locals_seen[i]) {
			struct xlt_ip a = d->locals.a[i].addr;
			changed |= set_update(d, &a, false);
		}
	return changed;
}

static void publish(struct gw_daemon *d)
{
	struct gw_live *l;

	d->locals.gen++;
	l = gw_live_make(d, d->conf);
	if (!l) {
		GW_ERR("kernel_tap: out of memory: the address change waits for the next one");
		return;
	}
	gw_live_publish(d, l);
}

static void nl_read(evutil_socket_t fd, short what, void *arg)
{
	struct gw_daemon *d = arg;
	char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));
	bool changed = false;
	ssize_t n;

	(void)what;
	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) != 0) {
		if (n < 0) {
			if (errno == ENOBUFS) { /* the kernel dropped notifications: ask for the whole list */
				GW_WARN("kernel_tap: netlink overrun, reading the addresses again");
				dump_start(d);
				continue;
			}
			break; /* EAGAIN */
		}
		for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n);
		     nh = NLMSG_NEXT(nh, n)) {
			struct ifaddrmsg *ifa = NLMSG_DATA(nh);
			struct rtattr *rta;
			int len;
			unsigned alen;
			uint32_t flags;
			struct xlt_ip addr;
			bool got = false;

			if (nh->nlmsg_seq == DUMP_SEQ && d->locals_dumping) {
				d->locals_replied = true;
				if (nh->nlmsg_flags & NLM_F_DUMP_INTR)
					d->locals_redump = true; /* the list changed while it was read */
				if (nh->nlmsg_type == NLMSG_ERROR) {
					GW_WARN("kernel_tap: the kernel refused to list the TAP's addresses");
					d->locals_dumping = false;
					continue;
				}
			}
			if (nh->nlmsg_type == NLMSG_DONE && nh->nlmsg_seq == DUMP_SEQ) {
				changed |= dump_done(d);
				continue;
			}
			if ((nh->nlmsg_type != RTM_NEWADDR && nh->nlmsg_type != RTM_DELADDR) ||
			    nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifa)) ||
			    (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6) ||
			    ifa->ifa_index != eth_exc_ifindex(d->exc))
				continue;
			alen = ifa->ifa_family == AF_INET ? 4 : 16;
			flags = ifa->ifa_flags;
			len = (int)IFA_PAYLOAD(nh);
			/* IPv4: IFA_LOCAL is the address (IFA_ADDRESS the peer's on a point-to-point link);
			 * IPv6 has IFA_ADDRESS alone */
			for (rta = IFA_RTA(ifa); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
				if ((rta->rta_type == IFA_LOCAL || (rta->rta_type == IFA_ADDRESS && !got)) &&
				    RTA_PAYLOAD(rta) == alen) {
					if (alen == 4) {
						uint32_t v4;
						memcpy(&v4, RTA_DATA(rta), 4);
						addr = xlt_ip_v4(v4);
					} else {
						memcpy(addr.b, RTA_DATA(rta), 16);
					}
					got = true;
				} else if (rta->rta_type == IFA_FLAGS && RTA_PAYLOAD(rta) == 4) {
					memcpy(&flags, RTA_DATA(rta), 4);
				}
			}
			if (!got || xlt_ip_is_any(&addr))
				continue;
			bool listed = nh->nlmsg_type == RTM_NEWADDR && d->locals_dumping && d->locals_replied;
			if (listed)
				mark_seen(d, &addr); /* (before the checks below: a tentative one is there too) */
			/* only addresses someone configured are ours: an IPv6 address with a lifetime
			 * (SLAAC, privacy) came from a router advertisement, which anyone on the link can
			 * forge. tap_sysctls stops the kernel making them, but its write fails where
			 * /proc/sys is read-only (systemd's ProtectKernelTunables); ip addr add and
			 * keepalived's VIPs are permanent */
			if (nh->nlmsg_type == RTM_NEWADDR && alen == 16 && !(flags & IFA_F_PERMANENT))
				continue;
			/* an IPv6 address under duplicate address detection is not the kernel's yet: its
			 * next RTM_NEWADDR says (a failed one never becomes ours) */
			if (nh->nlmsg_type == RTM_NEWADDR && (flags & IFA_F_TENTATIVE) &&
			    !(flags & IFA_F_DADFAILED))
				continue;
			changed |=
			    set_update(d, &addr, nh->nlmsg_type == RTM_NEWADDR && !(flags & IFA_F_DADFAILED));
			if (listed)
				mark_seen(d, &addr); /* (one set_update just took) */
		}
	}
	if (changed)
		publish(d);
}

/* Writes VALUE to the TAP's sysctl KEY (a path under /proc/sys/net with %s for its name); WHY says
 * what for when it fails (systemd's ProtectKernelTunables makes /proc/sys read-only). */
static void tap_sysctl(const char *ifname, const char *key, const char *value, const char *why)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), key, ifname);
	f = fopen(path, "w");
	if (!f) {
		if (errno != ENOENT) /* (no such knob: IPv6's, with no IPv6 in the kernel) */
			GW_WARN("kernel_tap %s: cannot %s (%s): %s", ifname, why, path, strerror(errno));
		return;
	}
	bool bad = fputs(value, f) < 0;

	if (fclose(f) || bad)
		GW_WARN("kernel_tap %s: cannot %s (%s)", ifname, why, path);
}

/* The kernel must not configure addresses on the TAP from router advertisements (SLAAC): every
 * address on it would become ibgwd's own, so a forged RA would give it listeners on a prefix an
 * attacker chose, and could fill its address set before a VIP comes. The engine passes no RA to the
 * kernel (ipv6.c: icmp6_for_kernel); this is a second wall, as nl_read, which takes no address with
 * a lifetime, is a third where this write fails. And the kernel answers ARP on the TAP for the TAP's
 * own addresses only, from them: by default (arp_ignore = 0) it would answer for any address of the
 * host (the management address, a container bridge's) with the gateway's MAC, to any station of the
 * link; the engine passes it no request for another address (eth_arp_for_kernel), a first wall
 * where this write fails. */
static void tap_sysctls(const char *ifname)
{
	tap_sysctl(ifname, "/proc/sys/net/ipv6/conf/%s/autoconf", "0\n", "turn SLAAC off");
	tap_sysctl(ifname, "/proc/sys/net/ipv4/conf/%s/arp_ignore", "1\n", "answer ARP for its own addresses only");
	tap_sysctl(ifname, "/proc/sys/net/ipv4/conf/%s/arp_announce", "2\n", "answer ARP for its own addresses only");
}

int gw_kernel_tap_create(struct gw_daemon *d)
{
	const struct conf_eth *e = &d->conf->eth;
	char err[256];

	if (!e->kernel_tap[0] || !d->port)
		return 0;
	d->exc = eth_exc_create(e->kernel_tap, eth_port_mac(d->port), eth_port_pool(d->port),
	                        e->kernel_tap_rate, d->n_workers, err, sizeof(err));
	if (!d->exc) {
		GW_ERR("%s", err);
		return -errno;
	}
	tap_sysctls(e->kernel_tap);
	d->locals.reset_gone = (uint8_t)e->removed_addr_reset;
	return 0;
}

int gw_kernel_start(struct gw_daemon *d)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK,
	                         .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR};
	int ret;

	if (!d->exc)
		return 0;
	/* (it only reads: opened so that it could never configure the network, privs.h says how) */
	d->nl_fd = gw_privs_socket_unprivileged(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
	                                        NETLINK_ROUTE);
	if (d->nl_fd < 0) {
		ret = d->nl_fd;
		GW_ERR("kernel_tap: rtnetlink: %s", strerror(-ret));
		goto err;
	}
	if (bind(d->nl_fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		GW_ERR("kernel_tap: rtnetlink: %s", strerror(errno));
		goto err;
	}
	d->nl_ev = event_new(d->base, d->nl_fd, EV_READ | EV_PERSIST, nl_read, d);
	d->exc_timer = event_new(d->base, -1, EV_PERSIST, service_tick, d);
	if (!d->nl_ev || !d->exc_timer || event_add(d->nl_ev, NULL) ||
	    event_add(d->exc_timer, &(struct timeval){.tv_usec = SERVICE_US})) {
		ret = -ENOMEM;
		GW_ERR("kernel_tap: cannot arm its events");
		goto err;
	}
	if ((ret = dump_start(d))) {
		GW_ERR("kernel_tap: cannot read the TAP's addresses: %s", strerror(-ret));
		goto err;
	}
	GW_INFO("kernel_tap %s: exception path up (ifindex %u, %u frames/s each way at most)",
	        d->conf->eth.kernel_tap, eth_exc_ifindex(d->exc), d->conf->eth.kernel_tap_rate);
	return 0;
err:
	gw_kernel_stop(d);
	return ret;
}

void gw_kernel_stop(struct gw_daemon *d)
{
	if (d->exc_timer)
		event_free(d->exc_timer);
	if (d->nl_ev)
		event_free(d->nl_ev);
	d->exc_timer = d->nl_ev = NULL;
	if (d->nl_fd > 0)
		close(d->nl_fd);
	d->nl_fd = -1;
}

void gw_kernel_tap_destroy(struct gw_daemon *d)
{
	eth_exc_destroy(d->exc);
	d->exc = NULL;
}

void gw_kernel_metrics(struct gw_daemon *d, struct gw_metrics *m)
{
	static const struct eth_exc_stats none;
	const void *base = d->exc ? (const void *)eth_exc_stats(d->exc) : &none;

	gw_metrics_table(m, eth_exc_metrics, eth_exc_n_metrics, &base, 1, NULL, NULL);
}
