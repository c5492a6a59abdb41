/* DPDK port bring-up.
 *
 * The mempool is sized by [eth] mbufs with a per-lcore cache, and its data room follows the MTU so a
 * jumbo frame fits one mbuf (af_packet: framesz must be raised in the vdev string too). af_packet and
 * the other virtual PMDs offer no checksum offload, so the TCP engine computes checksums in software;
 * nothing here asks for offloads the PMD may not have. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <unistd.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_malloc.h>
#include <rte_mempool.h>

#include "port.h"
#include "stack-t.h"

/* How eth_port_tx_reclaim gets the device to free the frames it sent. */
enum tx_reclaim {
	RECLAIM_NONE,    /* it frees them as it sends them (af_packet copies), or nothing is known */
	RECLAIM_CLEANUP, /* rte_eth_tx_done_cleanup */
	RECLAIM_FRAME,   /* a TX burst of one frame of our own (virtio_user: its only cleanup) */
};

struct eth_port {
	uint16_t id;
	unsigned n_queues;
	unsigned offloads; /* ETH_OFFLOAD_* */
	bool rx_intr;	   /* rx_fd are the device's RX interrupt eventfds (eth_port_rx_arm) */
	enum tx_reclaim reclaim;
	struct rte_mempool *pool;
	struct rte_ether_addr mac;
	int rx_fd[]; /* per queue: see eth_port_rx_fd */
};

const struct xlt_metric_desc eth_port_metrics[] = {
	{"port_rx_packets_total", XLT_COUNTER, offsetof(struct eth_port_stats, rx_packets), "packets received by the port", NULL},
	{"port_tx_packets_total", XLT_COUNTER, offsetof(struct eth_port_stats, tx_packets), "packets sent by the port", NULL},
	{"port_rx_bytes_total", XLT_COUNTER, offsetof(struct eth_port_stats, rx_bytes), "bytes received by the port", NULL},
	{"port_tx_bytes_total", XLT_COUNTER, offsetof(struct eth_port_stats, tx_bytes), "bytes sent by the port", NULL},
	{"port_rx_errors_total", XLT_COUNTER, offsetof(struct eth_port_stats, rx_errors), "erroneous packets received", NULL},
	{"port_tx_errors_total", XLT_COUNTER, offsetof(struct eth_port_stats, tx_errors), "packets that failed to send", NULL},
	{"port_rx_missed_total", XLT_COUNTER, offsetof(struct eth_port_stats, rx_missed), "packets dropped by the port (RX ring full)", NULL},
	{"port_rx_nombuf_total", XLT_COUNTER, offsetof(struct eth_port_stats, rx_nombuf), "RX mbuf allocation failures", NULL},
	{"port_link_up", XLT_GAUGE, offsetof(struct eth_port_stats, link_up), "1 when the link is up", NULL},
	{"port_link_speed_mbps", XLT_GAUGE, offsetof(struct eth_port_stats, link_speed_mbps), "link speed in Mbit/s", NULL},
	{"port_mbufs_in_use", XLT_GAUGE, offsetof(struct eth_port_stats, mbufs_in_use), "packet buffers taken from the pool", NULL},
};
const unsigned eth_port_n_metrics = sizeof(eth_port_metrics) / sizeof(eth_port_metrics[0]);


/* af_packet's ring frame size (its default, and the bytes of each frame its header takes). */
#define AF_PACKET_FRAMESZ    2048u
#define AF_PACKET_FRAME_HDR  (TPACKET2_HDRLEN - sizeof(struct sockaddr_ll))
/* virtio_user's ring size when its vdev string has no queue_size= (VIRTIO_USER_DEF_Q_SZ). */
#define VIRTIO_USER_QUEUE_SIZE 256u

/* The numeric value of KEY=N in a vdev argument string, or DEF when absent or not a number. */
static unsigned vdev_arg(const char *vdev, const char *key, unsigned def)
{
	size_t klen = strlen(key);

	for (const char *s = strchr(vdev, ','); s; s = strchr(s + 1, ',')) {
		char *end;
		unsigned long v;

		if (strncmp(s + 1, key, klen) || s[1 + klen] != '=')
			continue;
		v = strtoul(s + 2 + klen, &end, 0);
		if (end != s + 2 + klen && (*end == ',' || !*end) && v <= UINT32_MAX)
			return (unsigned)v;
	}
	return def;
}

/* af_packet keeps its ring sockets (one per queue pair, opened in queue order, bound to the
 * interface) to itself. They are found among the process's fds by domain and bound interface, so an
 * idle worker can sleep in poll() until the kernel fills a ring frame instead of napping blind. Any
 * doubt (a count that does not match) leaves every queue without an fd (the caller's -1): workers then
 * nap as before. */
static void find_packet_fds(struct eth_port *p, int ifindex)
{
	int fds[64];
	unsigned n = 0;
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;

	if (!dir)
		return;
	while ((de = readdir(dir))) {
		struct sockaddr_ll sll;
		socklen_t len = sizeof(sll);
		int fd, dom;
		socklen_t dlen = sizeof(dom);

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		fd = atoi(de->d_name);
		if (fd == dirfd(dir) || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &dlen) || dom != AF_PACKET)
			continue;
		if (getsockname(fd, (struct sockaddr *)&sll, &len) || len < offsetof(struct sockaddr_ll, sll_addr) ||
		    sll.sll_ifindex != ifindex)
			continue;
		if (n == RTE_DIM(fds)) {
			n = 0;
			break;
		}
		for (unsigned i = n++; ; i--) { /* insertion: queue order is fd order */
			if (i == 0 || fds[i - 1] < fd) {
				fds[i] = fd;
				break;
			}
			fds[i] = fds[i - 1];
		}
	}
	closedir(dir);
	if (n != p->n_queues)
		return;
	for (unsigned q = 0; q < n; q++)
		p->rx_fd[q] = fds[q];
}

/* The data room per buffer that holds a merged frame of 64 KiB (an IPv4 packet's 65,535 bytes and
 * its Ethernet header) in LRO_BUFS buffers. */
#define LRO_BUFS 30u
#define LRO_ROOM RTE_ALIGN_CEIL((RTE_ETHER_HDR_LEN + UINT16_MAX + LRO_BUFS - 1) / LRO_BUFS, 64u)

/* What the engine can use of the device's offloads, asked for in ECONF. TSO needs the checksum and
 * multi-segment transmission too (a TSO frame is an mbuf chain); LRO needs the receive checksum
 * (merged segments carry no valid sum). A device with none (af_packet) is left as it is. */
static unsigned offloads_choose(const struct rte_eth_dev_info *info, struct rte_eth_conf *econf)
{
	const uint64_t tx_csum = RTE_ETH_TX_OFFLOAD_TCP_CKSUM,
		       tso = RTE_ETH_TX_OFFLOAD_TCP_TSO | RTE_ETH_TX_OFFLOAD_MULTI_SEGS,
		       rx_csum = RTE_ETH_RX_OFFLOAD_TCP_CKSUM, lro = RTE_ETH_RX_OFFLOAD_TCP_LRO;
	unsigned o = 0;

	if ((info->tx_offload_capa & tx_csum) == tx_csum) {
		econf->txmode.offloads |= tx_csum;
		o |= ETH_OFFLOAD_TX_CSUM;
		if ((info->tx_offload_capa & tso) == tso) {
			econf->txmode.offloads |= tso;
			o |= ETH_OFFLOAD_TSO;
		}
		if (info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) {
			econf->txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
			o |= ETH_OFFLOAD_IP_CSUM;
		}
	}
	if ((info->rx_offload_capa & rx_csum) == rx_csum) {
		econf->rxmode.offloads |= rx_csum;
		o |= ETH_OFFLOAD_RX_CSUM;
		if ((info->rx_offload_capa & lro) == lro) {
			econf->rxmode.offloads |= lro;
			econf->rxmode.max_lro_pkt_size = info->max_lro_pkt_size; /* 0: ethdev's default */
			o |= ETH_OFFLOAD_LRO;
		}
	}
	return o;
}

struct eth_port *eth_port_create(const struct conf_eth *c, unsigned n_queues, char *errbuf, size_t errlen)
{
	struct rte_eth_conf econf = {0};
	struct rte_eth_dev_info info;
	struct eth_port *p = NULL;
	char name[RTE_MEMPOOL_NAMESIZE];
	uint16_t rx_desc = (uint16_t)c->rx_desc, tx_desc = (uint16_t)c->tx_desc;
	uint32_t room = RTE_MBUF_DEFAULT_BUF_SIZE, max_mtu;
	struct rte_eth_txconf txconf, *tc = NULL; /* NULL: the device's defaults */
	bool af_packet, virtio_user;
	int ret;

	if (!rte_eth_dev_is_valid_port((uint16_t)c->port)) {
		snprintf(errbuf, errlen, "no DPDK port %u (is [eth] vdev right? %u port(s) probed)", c->port,
			 rte_eth_dev_count_avail());
		ret = -ENODEV;
		goto err;
	}
	p = rte_zmalloc("eth_port", sizeof(*p) + n_queues * sizeof(p->rx_fd[0]), 0);
	if (!p) {
		ret = -ENOMEM;
		snprintf(errbuf, errlen, "out of memory");
		goto err;
	}
	p->id = (uint16_t)c->port;
	p->n_queues = n_queues;
	ret = rte_eth_dev_info_get(p->id, &info);
	if (ret) {
		snprintf(errbuf, errlen, "port %u: cannot read device info: %s", p->id, rte_strerror(-ret));
		goto err;
	}
	af_packet = !strcmp(info.driver_name, "net_af_packet");
	virtio_user = !strcmp(info.driver_name, "net_virtio_user");
	if (n_queues > info.max_rx_queues || n_queues > info.max_tx_queues) {
		snprintf(errbuf, errlen,
			 "port %u (%s) has at most %u queue pairs but %u workers need one each "
			 "(af_packet: add qpairs=%u to [eth] vdev)",
			 p->id, info.driver_name, RTE_MIN(info.max_rx_queues, info.max_tx_queues), n_queues, n_queues);
		ret = -EINVAL;
		goto err;
	}
	if (c->offloads)
		p->offloads = offloads_choose(&info, &econf); /* (LRO sizes the buffers below) */
	if (c->mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN + RTE_PKTMBUF_HEADROOM > room)
		room = c->mtu + RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN + RTE_PKTMBUF_HEADROOM;
	/* A merged frame (LRO) of 64 KiB must fill at most LRO_BUFS buffers: the Ethernet -> IB side
	 * RDMA-writes its payload straight from them, one scatter entry each, and HCAs take 30 to 32
	 * entries per work request. In DPDK's default 2 KiB buffers the largest takes 33, and so two
	 * writes. */
	if ((p->offloads & ETH_OFFLOAD_LRO) && RTE_PKTMBUF_HEADROOM + LRO_ROOM > room)
		room = RTE_PKTMBUF_HEADROOM + LRO_ROOM;
	/* af_packet copies whole ring frames and refuses a queue whose mbufs are smaller than a frame */
	if (af_packet) {
		unsigned frame = vdev_arg(c->vdev, "framesz", AF_PACKET_FRAMESZ);

		if (c->mtu + RTE_ETHER_HDR_LEN + AF_PACKET_FRAME_HDR > frame) {
			unsigned need = rte_align32pow2(c->mtu + RTE_ETHER_HDR_LEN + AF_PACKET_FRAME_HDR);

			snprintf(errbuf, errlen,
				 "port %u: mtu %u does not fit af_packet frames of %u bytes (add framesz=%u "
				 "and blocksz=%u to [eth] vdev)",
				 p->id, c->mtu, frame, need, RTE_MAX(need, 4096u));
			ret = -EINVAL;
			goto err;
		}
		if (frame + RTE_PKTMBUF_HEADROOM > room)
			room = frame + RTE_PKTMBUF_HEADROOM;
	}
	if (room > UINT16_MAX) {
		snprintf(errbuf, errlen, "port %u: frames of %u bytes do not fit an mbuf", p->id, room);
		ret = -EINVAL;
		goto err;
	}
	snprintf(name, sizeof(name), "ibgw_pool_%u", p->id);
	p->pool = rte_pktmbuf_pool_create(name, c->mbufs, RTE_MIN(256u, c->mbufs / 8), 0, (uint16_t)room,
					  rte_socket_id());
	if (!p->pool) {
		ret = -rte_errno;
		snprintf(errbuf, errlen, "cannot create a pool of %u mbufs: %s", c->mbufs, rte_strerror(rte_errno));
		goto err;
	}
	/* The device's own limit: af_packet claims 1518-byte frames (max_rx_pktlen) yet carries whole ring
	 * frames, so there a larger MTU is used by the engine while the device is told what it accepts. */
	max_mtu = info.max_rx_pktlen > RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN ?
			  info.max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN :
			  c->mtu;
	max_mtu = RTE_MIN(max_mtu, (uint32_t)info.max_mtu);
	econf.rxmode.mtu = RTE_MIN(c->mtu, max_mtu);
	if (c->mtu > max_mtu && !af_packet) {
		snprintf(errbuf, errlen, "port %u (%s): mtu %u is above the device's maximum %u", p->id,
			 info.driver_name, c->mtu, max_mtu);
		ret = -EINVAL;
		goto err;
	}
	/* af_packet copies every segment of a frame into its ring with the CPU: frames may carry lent
	 * memory DPDK does not know (ETH_OFFLOAD_EXTMEM) */
	if (af_packet && (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)) {
		econf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
		p->offloads |= ETH_OFFLOAD_EXTMEM;
	}
	/* virtio_user puts each segment's virtual address in the ring, and its vhost translates those
	 * of DPDK's memory segments only (their lists, as the memory table it is given): frames may
	 * carry lent memory that lies in DPDK's heap (ETH_OFFLOAD_DEVMEM) */
	if (virtio_user && (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)) {
		econf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
		p->offloads |= ETH_OFFLOAD_DEVMEM;
	}
	/* RX interrupts give an idle worker an fd to sleep on (af_packet has its ring socket instead);
	 * a device without them is configured again without */
	econf.intr_conf.rxq = !af_packet;
	ret = rte_eth_dev_configure(p->id, (uint16_t)n_queues, (uint16_t)n_queues, &econf);
	if (ret && econf.intr_conf.rxq) {
		econf.intr_conf.rxq = 0;
		ret = rte_eth_dev_configure(p->id, (uint16_t)n_queues, (uint16_t)n_queues, &econf);
	}
	if (ret) {
		snprintf(errbuf, errlen, "port %u: configure: %s", p->id, rte_strerror(-ret));
		goto err;
	}
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(p->id, &rx_desc, &tx_desc);
	if (ret) {
		snprintf(errbuf, errlen, "port %u: descriptors: %s", p->id, rte_strerror(-ret));
		goto err;
	}
	if (p->offloads & ETH_OFFLOAD_DEVMEM) {
		/* virtio frees sent frames only once fewer than tx_free_thresh descriptors are left (32
		 * by default): until then up to a ring of them would keep the IB buffer sets they point
		 * into from the pool. Freed at every burst instead (a frame costs one free either way). */
		unsigned qsz = vdev_arg(c->vdev, "queue_size", VIRTIO_USER_QUEUE_SIZE);

		txconf = info.default_txconf;
		if (qsz > 8 && qsz <= UINT16_MAX) {
			txconf.tx_free_thresh = (uint16_t)(qsz - 4);
			tc = &txconf;
		}
	}
	for (unsigned q = 0; q < n_queues; q++) {
		ret = rte_eth_rx_queue_setup(p->id, (uint16_t)q, rx_desc, rte_eth_dev_socket_id(p->id), NULL, p->pool);
		if (!ret)
			ret = rte_eth_tx_queue_setup(p->id, (uint16_t)q, tx_desc,
			                             rte_eth_dev_socket_id(p->id), tc);
		if (ret) {
			snprintf(errbuf, errlen, "port %u: queue %u setup: %s", p->id, q, rte_strerror(-ret));
			goto err;
		}
	}
	ret = rte_eth_macaddr_get(p->id, &p->mac);
	if (!ret)
		ret = rte_eth_dev_start(p->id);
	if (ret) {
		snprintf(errbuf, errlen, "port %u: start: %s", p->id, rte_strerror(-ret));
		goto err;
	}
	/* (asked of queue 0 while no worker runs: -ENOTSUP when the PMD has no such op) */
	if (rte_eth_tx_done_cleanup(p->id, 0, 0) >= 0)
		p->reclaim = RECLAIM_CLEANUP;
	else if (virtio_user)
		p->reclaim = RECLAIM_FRAME;
	for (unsigned q = 0; q < n_queues; q++)
		p->rx_fd[q] = -1;
	if (af_packet)
		find_packet_fds(p, (int)info.if_index);
	else if (econf.intr_conf.rxq) {
		unsigned n = 0;

		for (unsigned q = 0; q < n_queues; q++) {
			p->rx_fd[q] = rte_eth_dev_rx_intr_ctl_q_get_fd(p->id, (uint16_t)q);
			n += p->rx_fd[q] >= 0 && rte_eth_dev_rx_intr_disable(p->id, (uint16_t)q) == 0;
		}
		p->rx_intr = n == n_queues;
		for (unsigned q = 0; q < n_queues && !p->rx_intr; q++)
			p->rx_fd[q] = -1; /* all or none: workers then nap */
	}
	return p;
err:
	if (p) {
		rte_mempool_free(p->pool);
		rte_free(p);
	}
	errno = -ret;
	return NULL;
}

void eth_port_destroy(struct eth_port *p)
{
	if (!p)
		return;
	rte_eth_dev_stop(p->id);
	rte_eth_dev_close(p->id);
	rte_mempool_free(p->pool);
	rte_free(p);
}

uint16_t eth_port_id(const struct eth_port *p)
{
	return p->id;
}

struct rte_mempool *eth_port_pool(const struct eth_port *p)
{
	return p->pool;
}

const uint8_t *eth_port_mac(const struct eth_port *p)
{
	return p->mac.addr_bytes;
}

unsigned eth_port_queues(const struct eth_port *p)
{
	return p->n_queues;
}

int eth_port_rx_fd(const struct eth_port *p, unsigned q)
{
	return q < p->n_queues ? p->rx_fd[q] : -1;
}

void eth_port_rx_arm(const struct eth_port *p, unsigned q)
{
	if (p->rx_intr)
		rte_eth_dev_rx_intr_enable(p->id, (uint16_t)q);
}

void eth_port_rx_disarm(const struct eth_port *p, unsigned q)
{
	uint64_t n;

	if (!p->rx_intr)
		return;
	rte_eth_dev_rx_intr_disable(p->id, (uint16_t)q);
	if (read(p->rx_fd[q], &n, sizeof(n)) < 0) /* clear the eventfd (non-blocking) */
		return;
}

bool eth_port_rx_intr(const struct eth_port *p)
{
	return p->rx_intr;
}

/* EtherType of ECTP, the Ethernet configuration testing protocol (loopback) */
#define ETHER_TYPE_ECTP 0x9000

void eth_port_tx_reclaim(const struct eth_port *p, unsigned q)
{
	struct rte_ether_hdr *eh;
	struct rte_mbuf *m;
	uint8_t *ectp;

	if (p->reclaim == RECLAIM_CLEANUP) {
		rte_eth_tx_done_cleanup(p->id, (uint16_t)q, 0); /* 0: all it can */
		return;
	}
	if (p->reclaim != RECLAIM_FRAME)
		return;
	m = rte_pktmbuf_alloc(p->pool);
	if (!m)
		return;
	/* to our own MAC: a switch or bridge drops it (its destination is behind the port it came
	 * from), a host's NIC filters it; a minimal frame, zeroed (skip count 0), whose one message is
	 * a reply (function 1, little-endian), receipt number 0: for nobody but its sender */
	eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	memset(eh, 0, RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN);
	eh->dst_addr = p->mac;
	eh->src_addr = p->mac;
	eh->ether_type = rte_cpu_to_be_16(ETHER_TYPE_ECTP);
	ectp = (uint8_t *)(eh + 1);
	ectp[2] = 1;
	m->data_len = RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN;
	m->pkt_len = m->data_len;
	if (rte_eth_tx_burst(p->id, (uint16_t)q, &m, 1) != 1)
		rte_pktmbuf_free(m);
}

unsigned eth_port_offloads(const struct eth_port *p)
{
	return p->offloads;
}

int eth_port_stats(const struct eth_port *p, struct eth_port_stats *st)
{
	struct rte_eth_stats s;
	struct rte_eth_link link;
	int ret = rte_eth_stats_get(p->id, &s);

	if (ret)
		return ret;
	memset(st, 0, sizeof(*st));
	st->rx_packets = s.ipackets;
	st->tx_packets = s.opackets;
	st->rx_bytes = s.ibytes;
	st->tx_bytes = s.obytes;
	st->rx_errors = s.ierrors;
	st->tx_errors = s.oerrors;
	st->rx_missed = s.imissed;
	st->rx_nombuf = s.rx_nombuf;
	if (rte_eth_link_get_nowait(p->id, &link) == 0) {
		st->link_up = link.link_status == RTE_ETH_LINK_UP;
		st->link_speed_mbps = link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : link.link_speed;
	}
	st->mbufs_in_use = rte_mempool_in_use_count(p->pool);
	return 0;
}
