/* The exception path (see exception.h): the TAP, its two rings, the rate limits.
 *
 * Rate limits are GCRA (a token bucket written as a theoretical arrival time): a frame may pass when
 * the bucket's time is at most BURST frames ahead of now, and moves it one interval on. Each worker
 * has its own bucket of rate / workers (no shared write), the control thread one for the kernel's
 * direction. A flood aimed at a kernel port is thereby cut to kernel_tap_rate before the kernel sees
 * it: the kernel's answers (SYN-ACK, RST) are at most as many, never more.
 *
 * Frames come in classes, each with buckets of its own (exc_class): the routing protocols the host
 * runs on the TAP to hold the gateway's place at the edge, and the rest. A flood of the rest
 * (broadcast ARP, whose copies the kernel gets, and the kernel's answers to them; SYNs to ssh) would
 * otherwise take every token and starve the VRRP advertisements: the backup takes the VIP while the
 * master still holds it. Those that only an on-link sender can make (hop limit 255: VRRP,
 * single-hop BFD; BGP under GTSM, in a bucket of its own) have buckets apart from those anyone can
 * aim at us (BGP's port otherwise, OSPF, multihop BFD), so that not even a flood of these from afar
 * starves VRRP or a BGP session whose peers send with 255 (RFC 5082: FRR's `neighbor ...
 * ttl-security hops 1`): a SYN flood from port 179 took the keepalives' tokens and the session went
 * down. GTSM BGP is not in VRRP's bucket: a full table's updates would take its tokens. */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_ring.h>

#include "cksum.h"
#include "engine.h"
#include "exception.h"
#include "stack.h"

#define EXC_RING  4096
#define EXC_BURST 32
#define EXC_ROUNDS 8 /* bursts each way per eth_exc_service call (every millisecond) */
#define EXC_SEGS_MAX 64 /* segments of one long TCP/IPv6 frame (64 KiB of LRO in 1 KiB or more) */
#define EXC_DEV   "net_tap_ibgw"
/* what exc_mark_tso asks of the TAP (multi-segment: LRO's frames are chains) */
#define EXC_TSO_OFFLOADS                                                                                     \
	(RTE_ETH_TX_OFFLOAD_TCP_TSO | RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_TCP_CKSUM |         \
	 RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
#define EXC_PROTO_OSPF 89
#define EXC_PROTO_VRRP 112

/* (GTSM BGP apart from VRRP: a full table's updates above the rate must not take VRRP's tokens) */
enum exc_class { EXC_OTHER, EXC_ROUTING, EXC_LINK, EXC_LINK_BGP, EXC_CLASSES };

struct exc_bucket {
	uint64_t tat[EXC_CLASSES]; /* theoretical arrival time (ns), per class */
} __rte_cache_aligned;

struct eth_exc {
	uint16_t port; /* the TAP's ethdev */
	uint16_t frame_max; /* the longest frame the TAP carries (its MTU and an Ethernet header) */
	bool tso;           /* the TAP segments TCP/IPv4 in software (net_tap's TSO: exc_mark_tso) */
	struct rte_mempool *pool; /* what exc_split6's segments are taken from (the TAP's RX pool) */
	unsigned ifindex;
	uint64_t interval_ns;                 /* per frame and class, each way (control's buckets) */
	uint64_t w_interval_ns;               /* per frame and class, one worker's buckets */
	struct rte_ring *to_kernel;           /* workers enqueue (MP), control dequeues */
	struct rte_ring *from_kernel;         /* control enqueues, worker 0 dequeues */
	struct exc_bucket ctl;                /* control only */
	struct eth_exc_stats st;              /* control writes, the stats endpoint (control) reads */
	struct exc_bucket w[ETH_MAX_WORKERS]; /* slot i: worker i only */
};

#define XS(f) offsetof(struct eth_exc_stats, f)
const struct xlt_metric_desc eth_exc_metrics[] = {
    {"exception_tap_frames_total", XLT_COUNTER, XS(to_kernel),
     "frames the control thread wrote to the kernel TAP, or read from it for the port", "dir=to_kernel"},
    {"exception_tap_frames_total", XLT_COUNTER, XS(from_kernel),
     "frames the control thread wrote to the kernel TAP, or read from it for the port", "dir=from_kernel"},
    {"exception_tap_write_drops_total", XLT_COUNTER, XS(to_kernel_tap_drops),
     "frames for the kernel the TAP refused: its queue was full, or the frame longer than it carries and not TCP that is segmented (a datagram, a wrong checksum)", NULL},
    {"exception_kernel_drops_total", XLT_COUNTER, XS(from_kernel_rate_drops),
     "frames from the kernel TAP dropped: over kernel_tap_rate, or worker 0's ring full", "reason=rate"},
    {"exception_kernel_drops_total", XLT_COUNTER, XS(from_kernel_ring_drops),
     "frames from the kernel TAP dropped: over kernel_tap_rate, or worker 0's ring full", "reason=ring"},
    {"exception_kernel_routing_frames_total", XLT_COUNTER, XS(from_kernel_routing),
     "of the frames read from the kernel TAP, those of routing protocols (VRRP, BGP, OSPF, BFD), which have a kernel_tap_rate of their own", NULL},
    {"exception_kernel_routing_drops_total", XLT_COUNTER, XS(from_kernel_routing_rate_drops),
     "frames of routing protocols from the kernel TAP dropped over their own kernel_tap_rate", NULL},
};
#undef XS
const unsigned eth_exc_n_metrics = sizeof(eth_exc_metrics) / sizeof(eth_exc_metrics[0]);

/* Takes N frames' worth of class K from B. */
static bool bucket_take(struct exc_bucket *b, enum exc_class k, uint64_t now_ns, uint64_t interval_ns, unsigned n)
{
	/* a burst of a twentieth of a second's frames (at least 16) passes at once */
	uint64_t burst_ns = interval_ns * 16 > 50000000 ? interval_ns * 16 : 50000000;

	if (b->tat[k] > now_ns + burst_ns)
		return false;
	b->tat[k] = (b->tat[k] > now_ns ? b->tat[k] : now_ns) + interval_ns * n;
	return true;
}

/* The class of frame M (Ethernet header first), either way. Link: VRRP with the hop limit of 255
 * RFC 5798 requires (only an on-link sender can set it, and the kernel drops any other), single-hop
 * BFD and its echo with 255 (RFC 5881), BGP with 255 (GTSM, RFC 5082). Routing: OSPF, BGP (TCP port
 * 179 on either end) otherwise, multihop BFD. Fragments after the first and IPv6 with extension headers are the rest's: these protocols
 * send neither. */
/* The IP header of a frame (Ethernet header first, the IP header whole in its first buffer), as the
 * classifier and the checksum filler read it. */
struct exc_ip {
	const uint8_t *ip; /* the IP header */
	uint32_t l4;       /* where the upper layer starts, from the frame's start */
	uint32_t hl, tot;  /* the IP header's length, and the packet's (IPv6: 40 + payload), as it says */
	uint16_t frag;     /* IPv4: fragment offset and more-fragments flag; 0 for IPv6 */
	uint8_t proto, ttl;
	bool v6;
};

/* The IP header at OFF in M (of Ethernet type TYPE) into X. */
static bool exc_ip_at(const struct rte_mbuf *m, uint32_t off, uint16_t type, struct exc_ip *x)
{
	const uint8_t *p = rte_pktmbuf_mtod_offset(m, const uint8_t *, off);
	uint32_t len = m->data_len - off;

	if (m->data_len < off + 20)
		return false;
	x->ip = p;
	if (type == RTE_ETHER_TYPE_IPV4 && (p[0] >> 4) == 4) {
		x->hl = (p[0] & 15u) * 4;
		if (x->hl < 20 || len < x->hl)
			return false;
		x->tot = (uint32_t)(p[2] << 8 | p[3]);
		x->frag = (uint16_t)((p[6] & 0x3f) << 8 | p[7]);
		x->ttl = p[8];
		x->proto = p[9];
		x->v6 = false;
	} else if (type == RTE_ETHER_TYPE_IPV6 && len >= 40 && (p[0] >> 4) == 6) {
		x->hl = 40;
		x->tot = 40u + (uint32_t)(p[4] << 8 | p[5]);
		x->frag = 0;
		x->proto = p[6];
		x->ttl = p[7];
		x->v6 = true;
	} else {
		return false;
	}
	x->l4 = off + x->hl;
	return true;
}

static bool exc_ip_of(const struct rte_mbuf *m, struct exc_ip *x)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	return m->data_len >= RTE_ETHER_HDR_LEN && exc_ip_at(m, RTE_ETHER_HDR_LEN, (uint16_t)(p[12] << 8 | p[13]), x);
}

static enum exc_class exc_class_of(const struct rte_mbuf *m)
{
	struct exc_ip x;
	uint16_t sport, dport;

	if (!exc_ip_of(m, &x))
		return EXC_OTHER;
	switch (x.proto) {
	case EXC_PROTO_VRRP:
		return x.ttl == 255 ? EXC_LINK : EXC_OTHER;
	case EXC_PROTO_OSPF:
		return EXC_ROUTING;
	case IPPROTO_TCP:
	case IPPROTO_UDP: {
		const uint8_t *p = rte_pktmbuf_mtod_offset(m, const uint8_t *, x.l4);

		if ((x.frag & 0x1fff) || m->data_len < x.l4 + 4)
			return EXC_OTHER; /* (a fragment after the first) */
		sport = (uint16_t)(p[0] << 8 | p[1]);
		dport = (uint16_t)(p[2] << 8 | p[3]);
		if (x.proto == IPPROTO_TCP)
			return sport == 179 || dport == 179 ? (x.ttl == 255 ? EXC_LINK_BGP : EXC_ROUTING) : EXC_OTHER;
		if ((dport == 3784 || dport == 3785) && x.ttl == 255)
			return EXC_LINK;
		return dport == 4784 ? EXC_ROUTING : EXC_OTHER;
	}
	default:
		return EXC_OTHER;
	}
}

/* Whether the TCP checksum of frame M (E its IP layer) holds: a long frame is cut into segments whose
 * sums are computed anew, which would vouch for bytes nobody checked. The device's verdict where it
 * gave one (eth_exc_fill_l4_cksum turned "none" into good), else computed over the chain. */
static bool exc_tcp_sum_ok(const struct rte_mbuf *m, const struct exc_ip *e)
{
	uint64_t f = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
	uint32_t len = e->tot - e->hl;
	uint16_t sum = 0, phdr;

	if (f == RTE_MBUF_F_RX_L4_CKSUM_GOOD)
		return true;
	if (f == RTE_MBUF_F_RX_L4_CKSUM_BAD || e->tot < e->hl || (uint64_t)e->l4 + len > m->pkt_len ||
	    !eth_cksum_chain(m, e->l4, len, &sum))
		return false;
	phdr = e->v6 ? eth_ipv6_phdr_cksum((const struct rte_ipv6_hdr *)e->ip, len, IPPROTO_TCP)
		     : eth_ipv4_phdr_cksum((const struct rte_ipv4_hdr *)e->ip);
	return eth_cksum_add(phdr, sum) == 0xffff; /* (the sum with its own field: all ones) */
}

/* A TCP/IPv4 frame longer than the TAP carries (several segments merged by the port's LRO, or one
 * jumbo segment): marked for segmentation, which net_tap does in software (rte_gso, then the sums of
 * every segment), so that the kernel gets its bytes at once and not from the sender's
 * retransmissions alone (a BGP session behind an LRO port would crawl on them). Its segments keep
 * the size LRO saw when that is smaller; net_tap refuses a segment whose headers and payload exceed
 * its MTU. Fragments and a frame whose checksum is wrong are left as they are (the TAP refuses them);
 * IPv6 is eth_exc_split_tcp6's (rte_gso segments TCP over IPv4 only). */
/* The payload of each segment a long TCP frame M is cut into, where ROOM is what a TAP frame holds
 * after M's headers: LRO's size where it is smaller, but at least 64 bytes (merged 1-byte segments are
 * not cut into 1-byte frames again). */
static uint32_t cut_size(const struct rte_mbuf *m, uint32_t room)
{
	if ((m->ol_flags & RTE_MBUF_F_RX_LRO) && m->tso_segsz >= 64 && m->tso_segsz < room)
		return m->tso_segsz;
	return room;
}

static void exc_mark_tso(const struct eth_exc *x, struct rte_mbuf *m)
{
	struct exc_ip e;
	const uint8_t *th;
	uint32_t l4len, seg;

	if (!x->tso || m->pkt_len <= x->frame_max || !exc_ip_of(m, &e) || e.v6 || e.proto != IPPROTO_TCP ||
	    e.frag || m->data_len < e.l4 + 20)
		return;
	th = rte_pktmbuf_mtod_offset(m, const uint8_t *, e.l4);
	l4len = (th[12] >> 4) * 4u;
	if (l4len < 20 || m->data_len < e.l4 + l4len || x->frame_max < e.l4 + l4len + 64 || !exc_tcp_sum_ok(m, &e))
		return; /* (the TAP refuses it: dropped and counted) */
	/* (net_tap holds the headers, the Ethernet one included, and the payload to its MTU, not to
	 * the frame: a segment an Ethernet header's length larger is refused) */
	seg = cut_size(m, x->frame_max - RTE_ETHER_HDR_LEN - e.l4 - l4len);
	m->l2_len = RTE_ETHER_HDR_LEN;
	m->l3_len = e.hl;
	m->l4_len = l4len;
	m->tso_segsz = (uint16_t)seg;
	m->ol_flags |= RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
}

/* The frames the TAP gets for M: a TCP frame longer than it carries is cut in segments on the way
 * (exc_mark_tso for net_tap's TSO over IPv4, eth_exc_split_tcp6), of the size LRO saw where it is
 * smaller; anything else goes as one frame or is refused as one. kernel_tap_rate counts those frames:
 * a flood of 64 KiB merged frames (LRO) at a kernel port was about 44 TAP writes, and up to 64 for
 * merged small segments, for each frame the rate counted. */
static unsigned tap_frames(const struct eth_exc *x, const struct rte_mbuf *m)
{
	struct exc_ip e;
	uint32_t hdr, mss, n;

	if (m->pkt_len <= x->frame_max || !exc_ip_of(m, &e) || e.proto != IPPROTO_TCP || e.frag ||
	    (!e.v6 && !x->tso) || m->data_len < e.l4 + 20)
		return 1;
	hdr = e.l4 + (rte_pktmbuf_mtod_offset(m, const uint8_t *, e.l4)[12] >> 4) * 4u;
	if (x->frame_max < hdr + 64 || m->pkt_len <= hdr)
		return 1;
	/* (net_tap's TSO, exc_mark_tso's, gives IPv4 an Ethernet header's length less room) */
	mss = cut_size(m, x->frame_max - hdr - (e.v6 ? 0 : RTE_ETHER_HDR_LEN));
	n = (m->pkt_len - hdr + mss - 1) / mss;
	return n < EXC_SEGS_MAX ? n : EXC_SEGS_MAX;
}

/* TCP over IPv6 longer than the TAP carries, as exc_mark_tso for IPv4 (rte_gso, net_tap's TSO,
 * segments TCP/IPv4 only): cut here into segments of at most MSS bytes of payload (LRO's size where
 * smaller), each a frame of its own from POOL with M's headers, its sequence number, the flags only
 * the first (CWR) or the last (FIN, PSH) may carry, and its checksum. Only a TCP header straight
 * after the IPv6 header, whole in the first buffer, with M's checksum right and no urgent data (whose
 * pointer would have to follow the bytes); anything else stays as it is (the TAP refuses it). Puts
 * into OUT at most MAX frames and returns how many: 0 when M is left as it is (or a frame could not
 * be had: those taken are freed), else M is freed. */
unsigned eth_exc_split_tcp6(struct rte_mempool *pool, struct rte_mbuf *m, uint32_t frame_max,
                            struct rte_mbuf **out, unsigned max)
{
	struct exc_ip e;
	const uint8_t *th;
	uint32_t l4len, hdr, payload, mss, seq, off;
	unsigned n = 0;

	if (m->pkt_len <= frame_max || !exc_ip_of(m, &e) || !e.v6 || e.proto != IPPROTO_TCP ||
	    m->data_len < e.l4 + 20)
		return 0;
	th = rte_pktmbuf_mtod_offset(m, const uint8_t *, e.l4);
	l4len = (th[12] >> 4) * 4u;
	hdr = e.l4 + l4len;
	if (l4len < 20 || m->data_len < hdr || e.tot < 40 + l4len || RTE_ETHER_HDR_LEN + e.tot > m->pkt_len ||
	    (th[13] & RTE_TCP_URG_FLAG) || frame_max < hdr + 64 || !exc_tcp_sum_ok(m, &e))
		return 0;
	payload = RTE_ETHER_HDR_LEN + e.tot - hdr;
	if (!payload)
		return 0; /* (a bare header in a padded frame: nothing to cut; the TAP refuses it) */
	mss = cut_size(m, frame_max - hdr);
	if ((payload + mss - 1) / mss > max)
		return 0;
	seq = (uint32_t)th[4] << 24 | (uint32_t)th[5] << 16 | (uint32_t)th[6] << 8 | th[7];
	for (off = 0; off < payload; off += mss) {
		uint32_t len = RTE_MIN(mss, payload - off);
		struct rte_mbuf *s = rte_pktmbuf_alloc(pool);
		uint8_t *p = s ? (uint8_t *)rte_pktmbuf_append(s, (uint16_t)(hdr + len)) : NULL;
		const void *src;
		struct rte_ipv6_hdr *ip;
		struct rte_tcp_hdr *tcp;

		if (!p) {
			rte_pktmbuf_free(s);
			rte_pktmbuf_free_bulk(out, n);
			return 0;
		}
		out[n++] = s;
		memcpy(p, rte_pktmbuf_mtod(m, const uint8_t *), hdr);
		src = rte_pktmbuf_read(m, hdr + off, len, p + hdr);
		if (src != p + hdr)
			memcpy(p + hdr, src, len);
		ip = (struct rte_ipv6_hdr *)(p + RTE_ETHER_HDR_LEN);
		tcp = (struct rte_tcp_hdr *)(p + e.l4);
		ip->payload_len = rte_cpu_to_be_16((uint16_t)(l4len + len));
		tcp->sent_seq = rte_cpu_to_be_32(seq + off);
		if (off)
			tcp->tcp_flags &= (uint8_t)~RTE_TCP_CWR_FLAG;
		if (off + len < payload)
			tcp->tcp_flags &= (uint8_t)~(RTE_TCP_FIN_FLAG | RTE_TCP_PSH_FLAG);
		tcp->cksum = 0;
		tcp->cksum = rte_ipv6_udptcp_cksum(ip, tcp);
	}
	rte_pktmbuf_free(m);
	return n;
}

/* Sends N frames to the TAP. It stops a burst at a frame it refuses (longer than its MTU and not
 * TCP/IPv4 it could segment) or when the kernel's queue is full: that frame is dropped, the ones
 * behind it (a VRRP advertisement) go again. */
static void exc_tx(struct eth_exc *x, struct rte_mbuf **pkts, unsigned n)
{
	unsigned k, sent;

	for (k = 0; k < n;) {
		sent = rte_eth_tx_burst(x->port, 0, pkts + k, (uint16_t)(n - k));
		xlt_counter_add(&x->st.to_kernel, sent);
		k += sent;
		if (k < n) {
			xlt_counter_add(&x->st.to_kernel_tap_drops, 1);
			rte_pktmbuf_free(pkts[k++]);
		}
	}
}

/* The part without a TAP: the buckets and the rings. */
static struct eth_exc *exc_alloc(uint32_t rate, unsigned n_workers)
{
	struct eth_exc *x = rte_zmalloc("eth_exc", sizeof(*x), RTE_CACHE_LINE_SIZE);

	if (!x)
		return NULL;
	x->port = UINT16_MAX;
	x->frame_max = RTE_ETHER_MTU + RTE_ETHER_HDR_LEN; /* (net_tap's; eth_exc_create reads the TAP's) */
	x->interval_ns = 1000000000ull / (rate ? rate : 1);
	x->w_interval_ns = x->interval_ns * (n_workers ? n_workers : 1);
	x->to_kernel = rte_ring_create("exc_to_kernel", EXC_RING, rte_socket_id(), RING_F_SC_DEQ);
	x->from_kernel =
	    rte_ring_create("exc_from_kernel", EXC_RING, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	return x;
}

struct eth_exc *eth_exc_create(const char *ifname, const uint8_t mac[6], struct rte_mempool *pool,
                               uint32_t rate, unsigned n_workers, char *err, size_t errlen)
{
	struct rte_eth_conf econf = {0};
	struct rte_eth_dev_info info;
	struct eth_exc *x;
	char args[128];
	uint16_t mtu;
	int ret;

	x = exc_alloc(rate, n_workers);
	if (!x) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	if (!x->to_kernel || !x->from_kernel) {
		ret = -rte_errno;
		snprintf(err, errlen, "kernel_tap %s: cannot create its rings", ifname);
		goto err;
	}
	snprintf(args, sizeof(args), "iface=%s,mac=%02x:%02x:%02x:%02x:%02x:%02x", ifname, mac[0], mac[1],
	         mac[2], mac[3], mac[4], mac[5]);
	ret = rte_eal_hotplug_add("vdev", EXC_DEV, args);
	if (ret) {
		snprintf(err, errlen, "kernel_tap %s: cannot create the TAP (net_tap): %s", ifname,
		         rte_strerror(-ret));
		goto err;
	}
	ret = rte_eth_dev_get_port_by_name(EXC_DEV, &x->port);
	if (!ret)
		ret = rte_eth_dev_info_get(x->port, &info);
	if (!ret && (info.tx_offload_capa & EXC_TSO_OFFLOADS) == EXC_TSO_OFFLOADS) {
		econf.txmode.offloads = EXC_TSO_OFFLOADS;
		x->tso = true;
	}
	if (!ret)
		ret = rte_eth_dev_get_mtu(x->port, &mtu);
	if (!ret) {
		x->frame_max = (uint16_t)(mtu + RTE_ETHER_HDR_LEN);
		ret = rte_eth_dev_configure(x->port, 1, 1, &econf);
	}
	if (!ret)
		ret = rte_eth_rx_queue_setup(x->port, 0, 512, rte_eth_dev_socket_id(x->port), NULL, pool);
	if (!ret)
		ret = rte_eth_tx_queue_setup(x->port, 0, 512, rte_eth_dev_socket_id(x->port), NULL);
	if (!ret)
		ret = rte_eth_dev_start(x->port);
	if (ret) {
		snprintf(err, errlen, "kernel_tap %s: cannot start the TAP: %s", ifname, rte_strerror(-ret));
		goto err;
	}
	x->pool = pool;
	x->ifindex = if_nametoindex(ifname);
	if (!x->ifindex) {
		ret = -ENODEV;
		snprintf(err, errlen, "kernel_tap %s: not found after creation", ifname);
		goto err;
	}
	return x;
err:
	eth_exc_destroy(x);
	errno = -ret;
	return NULL;
}

struct eth_exc *eth_exc_create_detached(uint32_t rate, unsigned n_workers)
{
	struct eth_exc *x = exc_alloc(rate, n_workers);

	if (x && (!x->to_kernel || !x->from_kernel)) {
		eth_exc_destroy(x);
		return NULL;
	}
	if (x)
		x->tso = true;
	return x;
}

static void ring_free(struct rte_ring *r)
{
	void *m;

	if (!r)
		return;
	while (rte_ring_dequeue(r, &m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(r);
}

void eth_exc_destroy(struct eth_exc *x)
{
	if (!x)
		return;
	ring_free(x->to_kernel);
	ring_free(x->from_kernel);
	if (x->port != UINT16_MAX) {
		rte_eth_dev_stop(x->port);
		rte_eth_dev_close(x->port);
	}
	if (x->port != UINT16_MAX)
		rte_eal_hotplug_remove("vdev", EXC_DEV);
	rte_free(x);
}

unsigned eth_exc_ifindex(const struct eth_exc *x)
{
	return x->ifindex;
}

const struct eth_exc_stats *eth_exc_stats(const struct eth_exc *x)
{
	return &x->st;
}

unsigned eth_exc_service(struct eth_exc *x, uint64_t now_ns)
{
	struct rte_mbuf *pkts[EXC_BURST], *segs[EXC_SEGS_MAX];
	unsigned moved = 0, n, sent, k, from, s;

	/* kernel -> port (worker 0 sends them), first: the kernel's VRRP advertisements and routing
	 * protocols' answers do not wait behind a flood the other way */
	for (int round = 0; round < EXC_ROUNDS; round++) {
		n = rte_eth_rx_burst(x->port, 0, pkts, EXC_BURST);
		k = 0;
		for (unsigned i = 0; i < n; i++) {
			enum exc_class c = exc_class_of(pkts[i]);

			if (bucket_take(&x->ctl, c, now_ns, x->interval_ns, 1)) {
				if (c != EXC_OTHER)
					xlt_counter_add(&x->st.from_kernel_routing, 1);
				pkts[k++] = pkts[i];
			} else {
				xlt_counter_add(&x->st.from_kernel_rate_drops, 1);
				if (c != EXC_OTHER)
					xlt_counter_add(&x->st.from_kernel_routing_rate_drops, 1);
				rte_pktmbuf_free(pkts[i]);
			}
		}
		sent = rte_ring_sp_enqueue_burst(x->from_kernel, (void **)pkts, k, NULL);
		xlt_counter_add(&x->st.from_kernel, sent);
		if (sent < k) {
			xlt_counter_add(&x->st.from_kernel_ring_drops, k - sent);
			rte_pktmbuf_free_bulk(pkts + sent, k - sent);
		}
		moved += n;
		if (n < EXC_BURST)
			break;
	}
	/* port -> kernel: the workers limited their share already; the frames go in their order, a long
	 * TCP/IPv6 one as its segments; as many rounds at most as the other way (a ring full of long
	 * frames is hundreds of writes a burst: the control thread serves its events between calls) */
	for (int round = 0; round < EXC_ROUNDS; round++) {
		n = rte_ring_sc_dequeue_burst(x->to_kernel, (void **)pkts, EXC_BURST, NULL);
		for (k = from = 0; k < n; k++) {
			exc_mark_tso(x, pkts[k]);
			if (pkts[k]->pkt_len > x->frame_max &&
			    (s = eth_exc_split_tcp6(x->pool, pkts[k], x->frame_max, segs, EXC_SEGS_MAX))) {
				exc_tx(x, pkts + from, k - from);
				exc_tx(x, segs, s);
				from = k + 1;
			}
		}
		exc_tx(x, pkts + from, n - from);
		moved += n;
		if (n < EXC_BURST)
			break;
	}
	return moved;
}

/* eth_exc_fill_l4_cksum and eth_fill_l4_cksum_ip, the IP header at OFF (Ethernet type TYPE). */
static void fill_l4_cksum(struct rte_mbuf *m, uint32_t off, uint16_t type)
{
	struct exc_ip x;
	uint32_t l4, len, at;
	uint16_t phdr, sum = 0, v;
	uint8_t proto;

	if ((m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) != RTE_MBUF_F_RX_L4_CKSUM_NONE ||
	    !exc_ip_at(m, off, type, &x) || x.tot < x.hl || x.frag)
		return; /* (a fragment's sum covers the whole datagram) */
	l4 = x.l4;
	len = x.tot - x.hl;
	proto = x.proto;
	phdr = x.v6 ? eth_ipv6_phdr_cksum((const struct rte_ipv6_hdr *)x.ip, len, proto)
	            : eth_ipv4_phdr_cksum((const struct rte_ipv4_hdr *)x.ip);
	if (proto == IPPROTO_TCP)
		at = l4 + 16;
	else if (proto == IPPROTO_UDP)
		at = l4 + 6;
	else
		return;
	if (at + 2 > m->data_len || l4 + len > m->pkt_len)
		return;
	v = *rte_pktmbuf_mtod_offset(m, uint16_t *, at);
	*rte_pktmbuf_mtod_offset(m, uint16_t *, at) = 0;
	if (!eth_cksum_chain(m, l4, len, &sum)) {
		*rte_pktmbuf_mtod_offset(m, uint16_t *, at) = v; /* (0 would mean "no sum" to UDP) */
		return;
	}
	v = (uint16_t)~eth_cksum_add(phdr, sum);
	*rte_pktmbuf_mtod_offset(m, uint16_t *, at) = proto == IPPROTO_UDP && !v ? 0xffff : v;
	m->ol_flags = (m->ol_flags & ~RTE_MBUF_F_RX_L4_CKSUM_MASK) | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
}

void eth_exc_fill_l4_cksum(struct rte_mbuf *m)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);

	if (m->data_len >= RTE_ETHER_HDR_LEN)
		fill_l4_cksum(m, RTE_ETHER_HDR_LEN, (uint16_t)(p[12] << 8 | p[13]));
}

void eth_fill_l4_cksum_ip(struct rte_mbuf *m, bool v6)
{
	fill_l4_cksum(m, 0, v6 ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4);
}

bool eth_exc_punt(struct eth_stack *st, struct rte_mbuf *m)
{
	struct eth_exc *x = st->c.exc;
	enum exc_class c;

	if (!x)
		return false;
	c = exc_class_of(m);
	if (!bucket_take(&x->w[st->c.worker], c, st->now_ns, x->w_interval_ns, tap_frames(x, m))) {
		xlt_counter_add(&st->stats.exc_rate_drops, 1);
		if (c != EXC_OTHER)
			xlt_counter_add(&st->stats.exc_routing_rate_drops, 1);
		rte_pktmbuf_free(m);
		return true;
	}
	/* the TAP tells the kernel nothing of offloads: a sum the device left unfilled (a merged frame,
	 * a virtio peer's partial sum) would make the kernel drop the frame as corrupt */
	eth_exc_fill_l4_cksum(m);
	if (rte_ring_mp_enqueue(x->to_kernel, m)) {
		xlt_counter_add(&st->stats.exc_ring_drops, 1);
		rte_pktmbuf_free(m);
		return true;
	}
	xlt_counter_add(&st->stats.exc_to_kernel, 1);
	if (c != EXC_OTHER)
		xlt_counter_add(&st->stats.exc_routing_to_kernel, 1);
	return true;
}

bool eth_exc_punt_l3(struct eth_stack *st, struct rte_mbuf *m)
{
	if (!st->c.exc)
		return false;
	/* the Ethernet header is still in front of the IP header (rx_frame only stepped over it) */
	if (!rte_pktmbuf_prepend(m, RTE_ETHER_HDR_LEN)) {
		rte_pktmbuf_free(m);
		return true;
	}
	return eth_exc_punt(st, m);
}

unsigned eth_exc_worker_rx(struct eth_stack *st)
{
	struct rte_mbuf *pkts[EXC_BURST];
	unsigned n;

	if (!st->c.exc || st->c.worker != 0)
		return 0;
	n = rte_ring_sc_dequeue_burst(st->c.exc->from_kernel, (void **)pkts, EXC_BURST, NULL);
	for (unsigned i = 0; i < n; i++)
		eth_tx_frame(st, pkts[i]);
	xlt_counter_add(&st->stats.exc_from_kernel, n);
	return n;
}
