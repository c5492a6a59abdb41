/* A bench for one Ethernet-side engine instance with no device: shared by the fuzz target
 * (fuzz_eth_input.c) and the engine-level unit test (tests/unit/test_eth_input.c).
 *
 * The EAL starts once without hugepages, PCI, shared config or telemetry, only to give the engine a
 * real mbuf pool (cache 0, so rte_mempool_avail_count is exact and a leaked mbuf shows). The engine
 * runs on a fake clock; its frames go to eh_tx, which checks every one of them (Ethernet, IPv4 and TCP
 * well-formed, checksums right: whatever the input, the engine must only ever send sane frames) and
 * keeps the last few for the caller to look at. A listener on port 7 echoes, one on 9 discards, both
 * through a tiny session layer on the stream API, so input reaches the data path and the callbacks.
 * Everything is static: no malloc, nothing for ASan to report but real bugs.
 *
 * Offloads (eh_start_ofl): the engine may be told that the device checksums and segments TCP for it
 * and merges what it receives (ETH_OFFLOAD_*). Then eh_feed_rx hands it frames as a device with LRO
 * would, or worse: mbuf chains cut wherever the caller says (headers split, empty segments), each
 * segment's data at its buffer's end if asked (no tailroom: the engine cannot make the chain one
 * buffer), with RX flags (L4 checksum GOOD/BAD/NONE, LRO and its tso_segsz). The bytes of each
 * buffer beyond its segment's data are poisoned for ASan while the engine looks at the frame, so a
 * read past a segment is caught even where it stays inside the buffer. The checker accepts what a
 * device with those offloads takes: the TCP checksum field holding the pseudo-header sum, TSO
 * chains (headers in the first segment, segments that fit the MTU), and nothing else. */
#ifndef FUZZ_ETH_HARNESS_H
#define FUZZ_ETH_HARNESS_H

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_arp.h>
#include <rte_eal.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>
#include <sanitizer/asan_interface.h>

#include "eth_side/stack.h"
#include "translate/ip.h"

#define EH_GW_IP        RTE_BE32(0xc6120001u) /* 198.18.0.1 */
#define EH_PEER_IP      RTE_BE32(0xc6120002u) /* 198.18.0.2 */
#define EH_GW_IP2       RTE_BE32(0xc6120009u) /* 198.18.0.9: ours too where a test sets it (eth_stack_set_locals) */
#define EH_MBUFS        4095u
static const uint8_t eh_gw_ip6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1}; /* 2001:db8::1 */
static const uint8_t eh_peer_ip6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 2}; /* 2001:db8::2 */
#define EH_KEEP         64 /* frames kept for inspection */
#define EH_SESSIONS     64
#define EH_ECHO_PORT    7
#define EH_DISCARD_PORT 9
#define EH_MTU          1500
#define EH_PAYLOAD_MAX  8192 /* TCP payload of the largest frame eh_tcp_frame_big builds (an LRO frame) */
#define EH_FRAME_MAX    (RTE_ETHER_HDR_LEN + 60 + 60 + EH_PAYLOAD_MAX)
#define EH_MAX_CUTS     16 /* segment boundaries eh_feed_rx takes */
#define EH_MAX_SEGS     64 /* mbufs one fed frame may take (boundaries plus buffers filled up) */
/* Every offload the engine knows but IP_CSUM, as a virtio_user port on vhost-net gives them. */
#define EH_OFFLOADS_ALL (ETH_OFFLOAD_TX_CSUM | ETH_OFFLOAD_TSO | ETH_OFFLOAD_RX_CSUM | ETH_OFFLOAD_LRO)

static const uint8_t eh_gw_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t eh_peer_mac[6] = {0x02, 0, 0, 0, 0, 0x02};

#define EH_CHECK(x)                                                                                          \
	do {                                                                                                 \
		if (!(x)) {                                                                                  \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #x);                \
			abort();                                                                             \
		}                                                                                            \
	} while (0)

struct eh_session {
	struct xlt_stream *s;
	int discard;
	int paused; /* not reading: the engine must close its window */
};

struct eh {
	struct eth_stack *st;
	uint32_t addr;     /* [eth] address (network order): EH_GW_IP unless eh_addr said otherwise */
	unsigned offloads; /* ETH_OFFLOAD_* the engine was created with */
	uint64_t now_ns;
	struct rte_mbuf *kept[EH_KEEP]; /* the most recent frames sent, oldest first */
	unsigned n_kept;
	uint64_t n_sent;
	struct eh_session sess[EH_SESSIONS];
	int listener_refs;
	bool flow_peer_out; /* a test that set [eth] flow_peer lets marked segments out (the fuzzers never) */
	bool tx_stalled;    /* the device takes no frame (a busy link) */
	unsigned tx_cap;    /* ... or at most this many per burst (0: all) */
};

static struct rte_mempool *eh_pool;
static char eh_echo_tok, eh_discard_tok; /* listener user pointers: which service a connection gets */

/* The EAL creates a runtime directory even without shared config, where nothing uses it: removed as
 * soon as the EAL is up, not at exit, because libFuzzer leaves by _Exit on some paths (timeouts, -runs
 * reached in a forked job) and runs left empty ibgw-eh-PID directories behind in /var/run/dpdk. */
static inline void eh_runtime_dir_remove(void)
{
	const char *dir = rte_eal_get_runtime_dir();
	struct dirent *de;
	char path[PATH_MAX];
	DIR *d;

	if (!dir || !*dir || !(d = opendir(dir)))
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' &&
		    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < (int)sizeof(path))
			unlink(path);
	closedir(d);
	rmdir(dir);
}

static inline void eh_eal_cleanup(void)
{
	rte_eal_cleanup();
	eh_runtime_dir_remove();
}

/* Starts the EAL and the pool once per process. Returns 0 or -errno. */
static inline int eh_eal_init(void)
{
	char prefix[64];
	char *argv[] = {"eh", "--no-huge", "--no-pci",    "--no-shconf", "--no-telemetry", "-m",   "64",
	                "-l", "0",         "--log-level", "*:error",     "--file-prefix",  prefix, NULL};
	int argc = (int)(sizeof(argv) / sizeof(argv[0])) - 1;

	if (eh_pool)
		return 0;
	snprintf(prefix, sizeof(prefix), "ibgw-eh-%d", (int)getpid());
	if (rte_eal_init(argc, argv) < 0)
		return -EIO;
	eh_runtime_dir_remove();
	atexit(eh_eal_cleanup);
	eh_pool =
	    rte_pktmbuf_pool_create("eh_pool", EH_MBUFS, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	return eh_pool ? 0 : -ENOMEM;
}

/* ---- checks of what the engine sends ---- */

/* Copies LEN bytes of frame M from OFF (a chain is walked) into OUT. */
static inline void eh_frame_read(const struct rte_mbuf *m, uint32_t off, void *out, uint32_t len)
{
	const void *p = rte_pktmbuf_read(m, off, len, out);

	EH_CHECK(p);
	if (p != out)
		memcpy(out, p, len);
}

/* The TX flags a device with the engine's offloads is asked to honour; any other is a bug. */
#define EH_TX_FLAGS                                                                                          \
	(RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_TCP_CKSUM |        \
	 RTE_MBUF_F_TX_TCP_SEG)

/* The sum a TX checksum offload wants in the TCP checksum field: the pseudo-header (addresses,
 * protocol and, unless the device segments the frame, the TCP length), folded, not complemented. */
static inline uint16_t eh_phdr_sum(const struct rte_ipv4_hdr *ip, unsigned tcp_len)
{
	struct __attribute__((packed)) {
		uint32_t src, dst;
		uint8_t zero, proto;
		uint16_t len;
	} ph = {ip->src_addr, ip->dst_addr, 0, IPPROTO_TCP, rte_cpu_to_be_16((uint16_t)tcp_len)};

	return rte_raw_cksum(&ph, sizeof(ph));
}

/* The same over IPv6 (RFC 8200 8.1). */
static inline uint16_t eh_phdr_sum6(const struct rte_ipv6_hdr *ip, unsigned tcp_len)
{
	uint32_t be[2] = {rte_cpu_to_be_32(tcp_len), rte_cpu_to_be_32(IPPROTO_TCP)};
	uint32_t sum = (uint32_t)rte_raw_cksum(ip->src_addr, 32) + rte_raw_cksum(be, sizeof(be));

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* A TCP segment of TLEN bytes behind an IP header of L3LEN bytes (IP6: IPv6, else IPv4 IP4). */
static inline void eh_check_tcp(const struct eh *h, const struct rte_mbuf *m, const void *l3, unsigned l3len,
                                unsigned tlen, bool ip6)
{
	const struct rte_tcp_hdr *th = (const struct rte_tcp_hdr *)((const uint8_t *)l3 + l3len);
	uint64_t tx = m->ol_flags & RTE_MBUF_F_TX_OFFLOAD_MASK;
	unsigned doff, payload;

	EH_CHECK(tlen >= sizeof(*th) && m->data_len >= RTE_ETHER_HDR_LEN + l3len + sizeof(*th));
	doff = (th->data_off >> 4) * 4u;
	EH_CHECK(doff >= sizeof(*th) && doff <= tlen && doff <= 60);
	/* all headers in the first segment */
	EH_CHECK(m->data_len >= RTE_ETHER_HDR_LEN + l3len + doff);
	payload = tlen - doff;
	if (tx) {
		/* a device checksum: the field holds the pseudo-header sum, the lengths are right */
		unsigned plen = tx & RTE_MBUF_F_TX_TCP_SEG ? 0 : tlen;

		EH_CHECK(h->offloads & ETH_OFFLOAD_TX_CSUM);
		EH_CHECK((tx & (ip6 ? RTE_MBUF_F_TX_IPV6 : RTE_MBUF_F_TX_IPV4)) &&
		         !(tx & (ip6 ? RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM : RTE_MBUF_F_TX_IPV6)) &&
		         (tx & RTE_MBUF_F_TX_L4_MASK) == RTE_MBUF_F_TX_TCP_CKSUM);
		EH_CHECK(m->l2_len == RTE_ETHER_HDR_LEN && m->l3_len == l3len && m->l4_len == doff);
		EH_CHECK(th->cksum == (ip6 ? eh_phdr_sum6(l3, plen) : eh_phdr_sum(l3, plen)));
	} else {
		static uint8_t whole[RTE_ETHER_HDR_LEN + EH_MTU];
		const void *l4 = th;
		uint32_t sum;

		if (m->nb_segs > 1) {
			eh_frame_read(m, RTE_ETHER_HDR_LEN + l3len, whole, tlen);
			l4 = whole;
		}
		sum = (uint32_t)rte_raw_cksum(l4, tlen) +
		      (ip6 ? eh_phdr_sum6(l3, tlen) : eh_phdr_sum(l3, tlen));

		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		EH_CHECK(sum == 0xffff);
	}
	if (tx & RTE_MBUF_F_TX_TCP_SEG) {
		/* TSO: every segment the device cuts, headers and tso_segsz bytes, fits the MTU */
		EH_CHECK(h->offloads & ETH_OFFLOAD_TSO);
		EH_CHECK(m->tso_segsz > 0 && l3len + doff + m->tso_segsz <= EH_MTU);
		EH_CHECK(payload > 0 && payload <= ETH_TSO_MAX);
	} else {
		EH_CHECK(payload <= EH_MTU - l3len - sizeof(*th));
	}
	EH_CHECK(th->src_port != 0 && th->dst_port != 0);
}

/* Whatever the input, the engine only sends what a device with the offloads it was given (H's) takes
 * and puts on the wire as well-formed Ethernet, ARP, IPv4, ICMP and TCP. Without offloads: one buffer
 * per frame, no TX flags, every checksum computed. With them, a TCP frame may instead ask the device
 * for its checksum (the field then holds the pseudo-header sum, l2/l3/l4_len describe the headers)
 * and, with TSO, be a chain of up to ETH_TSO_MAX payload bytes with all headers in its first
 * segment, cut by the device into segments of tso_segsz bytes that each fit the MTU. */
static inline void eh_check_frame(const struct eh *h, const struct rte_mbuf *m)
{
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct rte_ether_hdr *eh = (const struct rte_ether_hdr *)p;
	const struct rte_ipv4_hdr *ip;
	uint64_t tx = m->ol_flags & RTE_MBUF_F_TX_OFFLOAD_MASK;
	uint32_t len = 0;
	unsigned n = 0;
	uint16_t type;

	for (const struct rte_mbuf *s = m; s; s = s->next) {
		EH_CHECK(++n <= m->nb_segs);
		len += s->data_len;
	}
	EH_CHECK(n == m->nb_segs && len == m->pkt_len);
	EH_CHECK(!(tx & ~EH_TX_FLAGS));
	EH_CHECK(h->offloads || !tx);
	/* (ETH_OFFLOAD_EXTMEM, _DEVMEM: lent payload in mbufs of its own, chained after the headers) */
	if (!(tx & RTE_MBUF_F_TX_TCP_SEG))
		EH_CHECK((m->nb_segs == 1 || (h->offloads & (ETH_OFFLOAD_EXTMEM | ETH_OFFLOAD_DEVMEM))) &&
		         m->pkt_len <= RTE_ETHER_HDR_LEN + EH_MTU);
	EH_CHECK(m->data_len >= RTE_ETHER_HDR_LEN);
	EH_CHECK(!memcmp(eh->src_addr.addr_bytes, eh_gw_mac, 6));
	type = rte_be_to_cpu_16(eh->ether_type);
	if (type == RTE_ETHER_TYPE_ARP) {
		EH_CHECK(m->data_len >= RTE_ETHER_HDR_LEN + 28 && !tx);
		return;
	}
	if (type == RTE_ETHER_TYPE_IPV6) {
		/* ICMPv6 (echo replies, neighbour discovery) and TCP: from one of our addresses, the
		 * lengths right, the checksum over the pseudo-header right */
		const struct rte_ipv6_hdr *ip6 = (const struct rte_ipv6_hdr *)(p + RTE_ETHER_HDR_LEN);
		uint32_t plen, be[2], sum;
		EH_CHECK(m->data_len >= RTE_ETHER_HDR_LEN + sizeof(*ip6));
		plen = rte_be_to_cpu_16(ip6->payload_len);
		EH_CHECK((rte_be_to_cpu_32(ip6->vtc_flow) >> 28) == 6);
		EH_CHECK(!memcmp(ip6->src_addr, eh_gw_ip6, 16) ||
		         (ip6->src_addr[0] == 0xfe && ip6->src_addr[1] == 0x80));
		if (ip6->proto == IPPROTO_TCP) {
			EH_CHECK(plen == m->pkt_len - RTE_ETHER_HDR_LEN - sizeof(*ip6) &&
			         ip6->hop_limits == 64);
			EH_CHECK(ip6->dst_addr[0] != 0xff);
			eh_check_tcp(h, m, ip6, sizeof(*ip6), plen, true);
			return;
		}
		EH_CHECK(!tx && ip6->proto == IPPROTO_ICMPV6);
		EH_CHECK(plen >= 8 && m->data_len == RTE_ETHER_HDR_LEN + sizeof(*ip6) + plen);
		EH_CHECK(!memcmp(ip6->src_addr, eh_gw_ip6, 16) || (ip6->src_addr[0] == 0xfe && ip6->src_addr[1] == 0x80));
		be[0] = rte_cpu_to_be_32(plen);
		be[1] = rte_cpu_to_be_32(IPPROTO_ICMPV6);
		sum = rte_raw_cksum(ip6->src_addr, 32) + rte_raw_cksum(be, 8) + rte_raw_cksum(ip6 + 1, plen);
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		EH_CHECK(sum == 0xffff);
		return;
	}
	EH_CHECK(type == RTE_ETHER_TYPE_IPV4);
	EH_CHECK(m->data_len >= RTE_ETHER_HDR_LEN + sizeof(*ip));
	ip = (const struct rte_ipv4_hdr *)(p + RTE_ETHER_HDR_LEN);
	EH_CHECK(ip->version_ihl == RTE_IPV4_VHL_DEF);
	EH_CHECK(rte_be_to_cpu_16(ip->total_length) == m->pkt_len - RTE_ETHER_HDR_LEN);
	if (tx & RTE_MBUF_F_TX_IP_CKSUM)
		EH_CHECK((h->offloads & ETH_OFFLOAD_IP_CSUM) && ip->hdr_checksum == 0); /* the device's */
	else
		EH_CHECK(rte_raw_cksum(ip, sizeof(*ip)) == 0xffff);
	/* (or a TCP segment passed to [eth] flow_peer, marked by the header's reserved bit: its sender's;
	 * only where a test set one, the fuzzers never do) */
	EH_CHECK(ip->src_addr == h->addr || ip->src_addr == EH_GW_IP2 ||
	         (h->flow_peer_out && ip->fragment_offset & rte_cpu_to_be_16(0x8000) &&
	          ip->next_proto_id == IPPROTO_TCP));
	if (ip->next_proto_id == IPPROTO_TCP) {
		eh_check_tcp(h, m, ip, sizeof(*ip), rte_be_to_cpu_16(ip->total_length) - sizeof(*ip), false);
	} else {
		EH_CHECK(ip->next_proto_id == IPPROTO_ICMP && !tx);
	}
}

static inline uint16_t eh_tx(void *arg, struct rte_mbuf **pkts, uint16_t n)
{
	struct eh *h = arg;

	if (h->tx_stalled)
		return 0;
	if (h->tx_cap && n > h->tx_cap)
		n = (uint16_t)h->tx_cap;
	for (uint16_t i = 0; i < n; i++) {
		eh_check_frame(h, pkts[i]);
		if (h->n_kept == EH_KEEP) {
			rte_pktmbuf_free(h->kept[0]);
			memmove(h->kept, h->kept + 1, (EH_KEEP - 1) * sizeof(h->kept[0]));
			h->n_kept--;
		}
		h->kept[h->n_kept++] = pkts[i];
		h->n_sent++;
	}
	return n;
}

static inline void eh_forget(struct eh *h)
{
	if (h->n_kept)
		rte_pktmbuf_free_bulk(h->kept, h->n_kept);
	h->n_kept = 0;
}

/* ---- a tiny session layer: echo and discard ---- */

static inline void eh_pump(struct eh_session *se)
{
	struct xlt_stream *s = se->s;
	const uint8_t *d;
	size_t n;

	while (!se->paused && s->state == XLT_STREAM_OPEN && (n = s->ops->peek(s, &d)) > 0) {
		size_t w = se->discard ? n : s->ops->write(s, d, n);
		if (!w)
			break;
		s->ops->consume(s, w);
	}
	if (s->state == XLT_STREAM_OPEN && s->peer_done && !s->local_done && !se->paused &&
	    s->ops->peek(s, &d) == 0)
		s->ops->shutdown(s);
}

static inline void eh_on_readable(void *arg)
{
	eh_pump(arg);
}

static inline void eh_on_closed(void *arg, int err)
{
	struct eh_session *se = arg;

	(void)err;
	se->s->ops->release(se->s);
	se->s = NULL;
}

static inline int eh_on_accept(void *arg, void *user, struct xlt_stream *s)
{
	struct eh *h = arg;

	for (unsigned i = 0; i < EH_SESSIONS; i++) {
		struct eh_session *se = &h->sess[i];
		if (se->s)
			continue;
		*se = (struct eh_session){.s = s, .discard = user == &eh_discard_tok};
		s->ev = (struct xlt_stream_events){.arg = se,
		                                   .on_readable = eh_on_readable,
		                                   .on_writable = eh_on_readable,
		                                   .on_closed = eh_on_closed};
		return 0;
	}
	return -ENOSPC; /* the engine resets it */
}

static inline void eh_on_connected(void *arg)
{
	eh_pump(arg);
}

/* Active open to PEER:PORT (either family), echoing what comes back like an accepted connection.
 * Returns 0 or -errno. */
static inline int eh_connect_to(struct eh *h, const struct xlt_ip *peer, uint16_t port)
{
	struct eth_tcp_params p = {.rbuf_size = 65536, .sbuf_size = 65536, .connect_timeout_ms = 3000};
	struct xlt_stream *s;
	int err = 0;

	for (unsigned i = 0; i < EH_SESSIONS; i++) {
		struct eh_session *se = &h->sess[i];
		if (se->s)
			continue;
		s = eth_tcp_connect(h->st, peer, port, &p, &err);
		if (!s)
			return err;
		*se = (struct eh_session){.s = s};
		s->ev = (struct xlt_stream_events){.arg = se,
		                                   .on_connected = eh_on_connected,
		                                   .on_readable = eh_on_readable,
		                                   .on_writable = eh_on_readable,
		                                   .on_closed = eh_on_closed};
		return 0;
	}
	return -ENOSPC;
}

/* eh_connect to the peer's IPv4 address. */
static inline int eh_connect(struct eh *h, uint16_t port)
{
	struct xlt_ip peer = xlt_ip_v4(EH_PEER_IP);

	return eh_connect_to(h, &peer, port);
}

/* The listeners' USER are the service tokens: what they hold is counted in the instance (one at a
 * time per process). */
static struct eh *eh_cur;

static inline void eh_on_listener_free(void *user)
{
	(void)user;
	eh_cur->listener_refs--;
}

static const struct xlt_listen_hooks eh_hooks = {.route_put = eh_on_listener_free, .accept = eh_on_accept};

/* ---- the instance ---- */

/* Polls once at the current time (replies to what was fed go out now). */
static inline unsigned eh_poll(struct eh *h)
{
	return eth_stack_poll(h->st, h->now_ns);
}

static inline void eh_advance_ms(struct eh *h, uint64_t ms)
{
	h->now_ns += ms * 1000000ull;
	eh_poll(h);
}

/* How a frame arrives (eh_feed_rx): where it is cut into segments and what the device says of it. */
struct eh_rx {
	unsigned n_cuts;
	uint32_t cuts[EH_MAX_CUTS]; /* frame offsets where a segment starts: any order, clipped to the frame;
	                             * equal ones make empty segments. A segment longer than a buffer holds
	                             * goes on in the next. */
	bool tight;                 /* every segment's data ends at its buffer's end (7 bytes before at most:
	                             * it starts 8-byte aligned) */
	uint64_t ol_flags;          /* RX flags: RTE_MBUF_F_RX_L4_CKSUM_*, RTE_MBUF_F_RX_LRO */
	uint16_t tso_segsz;         /* with RTE_MBUF_F_RX_LRO: the merged segments' size */
};

/* Feeds LEN bytes of FRAME as one received frame, as RX says (NULL: one buffer, no flags). While the
 * engine handles it, the bytes of each buffer past its segment's data are poisoned for ASan: a
 * buffer's tailroom is nothing the engine may read. (Not the first buffer's when the engine may
 * copy the rest of the chain there, as it does when the chain fits; and only with enough mbufs free
 * that none freed meanwhile comes back from the pool, a FIFO, poisoned.) */
static inline void eh_feed_rx(struct eh *h, const void *frame, size_t len, const struct eh_rx *rx)
{
	static const struct eh_rx plain;
	struct rte_mbuf *head = NULL, *last = NULL;
	struct {
		uint8_t *p;
		size_t n;
	} tail[EH_MAX_SEGS];
	uint32_t cuts[EH_MAX_CUTS + 2];
	unsigned nc = 0, nt = 0;
	bool poison;

	if (!rx)
		rx = &plain;
	EH_CHECK(rx->n_cuts <= EH_MAX_CUTS);
	cuts[nc++] = 0;
	for (unsigned i = 0; i < rx->n_cuts; i++) {
		uint32_t c = rx->cuts[i] < len ? rx->cuts[i] : (uint32_t)len;
		unsigned k = nc++;

		for (; k > 1 && cuts[k - 1] > c; k--) /* sorted as they come */
			cuts[k] = cuts[k - 1];
		cuts[k] = c;
	}
	cuts[nc] = (uint32_t)len;
	for (unsigned i = 0; i < nc; i++) {
		uint32_t off = cuts[i], left = cuts[i + 1] - cuts[i];

		do {
			struct rte_mbuf *m = rte_pktmbuf_alloc(eh_pool);
			uint32_t room, n;

			EH_CHECK(m && nt < EH_MAX_SEGS);
			room = m->buf_len - (rx->tight ? 0 : RTE_PKTMBUF_HEADROOM);
			n = left < room ? left : room;
			/* (aligned as a device's DMA leaves it: the engine's header structs need it) */
			m->data_off = (uint16_t)(rx->tight ? (m->buf_len - n) & ~7u : RTE_PKTMBUF_HEADROOM);
			m->data_len = (uint16_t)n;
			if (n)
				memcpy(rte_pktmbuf_mtod(m, uint8_t *), (const uint8_t *)frame + off, n);
			tail[nt].p = rte_pktmbuf_mtod_offset(m, uint8_t *, n);
			tail[nt++].n = rte_pktmbuf_tailroom(m);
			if (!head) {
				head = m;
			} else {
				last->next = m;
				head->nb_segs++;
			}
			head->pkt_len += n;
			last = m;
			off += n;
			left -= n;
		} while (left);
	}
	head->ol_flags = rx->ol_flags;
	head->tso_segsz = rx->tso_segsz;
	poison = rte_mempool_avail_count(eh_pool) >= 256;
	for (unsigned i = 0; poison && i < nt; i++)
		if (i || head->nb_segs == 1 || rte_pktmbuf_tailroom(head) < head->pkt_len - head->data_len)
			ASAN_POISON_MEMORY_REGION(tail[i].p, tail[i].n);
	eth_stack_input(h->st, &head, 1);
	for (unsigned i = 0; poison && i < nt; i++)
		ASAN_UNPOISON_MEMORY_REGION(tail[i].p, tail[i].n);
}

/* Feeds LEN bytes as one received Ethernet frame in one buffer (cut at the buffer's size). */
static inline void eh_feed(struct eh *h, const void *frame, size_t len)
{
	if (len > RTE_MBUF_DEFAULT_DATAROOM)
		len = RTE_MBUF_DEFAULT_DATAROOM;
	eh_feed_rx(h, frame, len, NULL);
}

/* Builds Ethernet + IPv4 around L4 (L4LEN bytes of protocol PROTO) from the peer to the gateway, in
 * OUT (at least 34 + L4LEN bytes). With TCP_CKSUM the TCP checksum is computed. Returns the length. */
static inline size_t eh_ip_frame(uint8_t *out, uint8_t proto, const void *l4, size_t l4len, int tcp_cksum)
{
	struct rte_ether_hdr *e = (struct rte_ether_hdr *)out;
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(e + 1);

	memcpy(e->dst_addr.addr_bytes, eh_gw_mac, 6);
	memcpy(e->src_addr.addr_bytes, eh_peer_mac, 6);
	e->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	memset(ip, 0, sizeof(*ip));
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(sizeof(*ip) + l4len));
	ip->time_to_live = 64;
	ip->next_proto_id = proto;
	ip->src_addr = EH_PEER_IP;
	ip->dst_addr = EH_GW_IP;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	if (l4len && l4 != (const void *)(ip + 1))
		memcpy(ip + 1, l4, l4len);
	if (tcp_cksum && proto == IPPROTO_TCP && l4len >= sizeof(struct rte_tcp_hdr)) {
		struct rte_tcp_hdr *th = (struct rte_tcp_hdr *)(ip + 1);
		th->cksum = 0;
		th->cksum = rte_ipv4_udptcp_cksum(ip, th);
	}
	return sizeof(*e) + sizeof(*ip) + l4len;
}

/* Builds a TCP segment (header, OPTLEN bytes of options rounded up to 4, LEN bytes of payload, at
 * most MAXLEN) in OUT as a full frame with correct checksums. Returns the frame length. */
static inline size_t eh_tcp_frame_n(uint8_t *out, uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack,
                                    uint8_t flags, uint16_t wnd, const uint8_t *opt, size_t optlen,
                                    const uint8_t *data, size_t len, size_t maxlen)
{
	struct rte_tcp_hdr *th =
	    (struct rte_tcp_hdr *)(out + RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr));
	uint8_t *seg = (uint8_t *)th;
	size_t ol = (optlen + 3) & ~(size_t)3;

	if (ol > 40)
		ol = optlen = 40;
	if (len > maxlen)
		len = maxlen;
	memset(th, 0, sizeof(*th));
	th->src_port = rte_cpu_to_be_16(sport);
	th->dst_port = rte_cpu_to_be_16(dport);
	th->sent_seq = rte_cpu_to_be_32(seq);
	th->recv_ack = rte_cpu_to_be_32(ack);
	th->data_off = (uint8_t)(((sizeof(*th) + ol) / 4) << 4);
	th->tcp_flags = flags;
	th->rx_win = rte_cpu_to_be_16(wnd);
	memset(seg + sizeof(*th), 0, ol);
	if (optlen)
		memcpy(seg + sizeof(*th), opt, optlen);
	if (len)
		memcpy(seg + sizeof(*th) + ol, data, len);
	return eh_ip_frame(out, IPPROTO_TCP, seg, sizeof(*th) + ol + len, 1);
}

/* eh_tcp_frame_n for one MTU-sized segment (OUT: at least 1600 bytes). */
static inline size_t eh_tcp_frame(uint8_t *out, uint16_t sport, uint16_t dport, uint32_t seq, uint32_t ack,
                                  uint8_t flags, uint16_t wnd, const uint8_t *opt, size_t optlen,
                                  const uint8_t *data, size_t len)
{
	return eh_tcp_frame_n(out, sport, dport, seq, ack, flags, wnd, opt, optlen, data, len, 1460);
}

/* eh_tcp_frame_n for a frame as LRO merges them (OUT: at least EH_FRAME_MAX bytes). */
static inline size_t eh_tcp_frame_big(uint8_t *out, uint16_t sport, uint16_t dport, uint32_t seq,
                                      uint32_t ack, uint8_t flags, uint16_t wnd, const uint8_t *opt,
                                      size_t optlen, const uint8_t *data, size_t len)
{
	return eh_tcp_frame_n(out, sport, dport, seq, ack, flags, wnd, opt, optlen, data, len,
	                      EH_PAYLOAD_MAX);
}

/* Feeds an ARP message OP (RTE_ARP_OP_*) for TIP from SIP with sender MAC SHA: a request is
 * broadcast, a reply unicast to the gateway. */
static inline void eh_arp_for(struct eh *h, uint16_t op, const uint8_t *sha, uint32_t sip, uint32_t tip)
{
	uint8_t f[42] = {0};
	struct rte_ether_hdr *e = (struct rte_ether_hdr *)f;
	struct rte_arp_hdr *a = (struct rte_arp_hdr *)(e + 1);

	if (op == RTE_ARP_OP_REPLY) {
		memcpy(e->dst_addr.addr_bytes, eh_gw_mac, 6);
		memcpy(a->arp_data.arp_tha.addr_bytes, eh_gw_mac, 6);
	} else {
		memset(e->dst_addr.addr_bytes, 0xff, 6);
	}
	memcpy(e->src_addr.addr_bytes, sha, 6);
	e->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	a->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	a->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	a->arp_hlen = 6;
	a->arp_plen = 4;
	a->arp_opcode = rte_cpu_to_be_16(op);
	memcpy(a->arp_data.arp_sha.addr_bytes, sha, 6);
	a->arp_data.arp_sip = sip;
	a->arp_data.arp_tip = tip;
	eh_feed(h, f, sizeof(f));
}

/* The same for the gateway's address. */
static inline void eh_arp(struct eh *h, uint16_t op, const uint8_t *sha, uint32_t sip)
{
	eh_arp_for(h, op, sha, sip, h->addr);
}

/* An ARP request from the peer for the gateway: the engine learns the peer and answers. */
static inline void eh_arp_hello(struct eh *h)
{
	eh_arp(h, RTE_ARP_OP_REQUEST, eh_peer_mac, EH_PEER_IP);
}

/* [eth] gateway of the next eh_start (network order; 0: none), for a test that wants one. */
static uint32_t eh_gateway;
/* [eth] gateway6 of the next eh_start (:: = none). */
static uint8_t eh_gateway6[16];
/* The prefix length of the next eh_start's address (0: 24), for a test that needs a wide subnet. */
static uint8_t eh_prefix;
/* The next eh_start's address (network order; 0: EH_GW_IP), for a test that needs another subnet. */
static uint32_t eh_addr;

/* A fresh instance with listeners on 7 (echo) and 9 (discard), the peer known by ARP, told that its
 * device does OFFLOADS (ETH_OFFLOAD_*). */
static inline int eh_start_ofl(struct eh *h, uint32_t syn_backlog, uint32_t rbuf, uint32_t sbuf,
                               unsigned offloads)
{
	struct eth_stack_conf c = {
	    .worker = 0,
	    .n_workers = 1,
	    .port_id = UINT16_MAX,
	    .pool = eh_pool,
	    .addr = eh_addr ? eh_addr : EH_GW_IP,
	    .prefix = eh_prefix ? eh_prefix : 24,
	    .gateway = eh_gateway,
	    .prefix6 = 64, /* (IPv6 too, so that ipv6.c meets the fuzzer) */
	    .mtu = EH_MTU,
	    .offloads = offloads,
	    .time_wait_ms = 2000,
	    .syn_backlog = syn_backlog,
	    .keepalive_ms = 20000,
	    .keepalive_intvl_ms = 2000,
	    .keepalive_probes = 3,
	    .user_timeout_ms = 30000,
	    .max_conns = 128,
	    .buffer_bytes = 4u << 20,
	    .flow_key = {1, 2},
	    .tx = eh_tx,
	    .hooks = &eh_hooks,
	};
	struct eth_tcp_params p = {.rbuf_size = rbuf, .sbuf_size = sbuf, .connect_timeout_ms = 5000};

	memcpy(c.addr6, eh_gw_ip6, 16);
	memcpy(c.gateway6, eh_gateway6, 16);

	memset(h, 0, sizeof(*h));
	eh_cur = h;
	h->addr = c.addr;
	h->offloads = offloads;
	c.tx_arg = h;
	c.cb_arg = h;
	memcpy(c.mac, eh_gw_mac, 6);
	h->st = eth_stack_create(&c);
	if (!h->st)
		return -errno;
	h->now_ns = 1000ull * 1000000000ull;
	if (eth_tcp_listen(h->st, EH_ECHO_PORT, &p, &eh_echo_tok) ||
	    eth_tcp_listen(h->st, EH_DISCARD_PORT, &p, &eh_discard_tok))
		return -ENOSPC;
	h->listener_refs = 2;
	eh_poll(h); /* the gratuitous ARP */
	eh_arp_hello(h);
	eh_poll(h);
	return 0;
}

/* A fresh instance without offloads (eh_start_ofl). */
static inline int eh_start(struct eh *h, uint32_t syn_backlog, uint32_t rbuf, uint32_t sbuf)
{
	return eh_start_ofl(h, syn_backlog, rbuf, sbuf, 0);
}

/* Destroys the instance; every mbuf must be back in the pool. */
static inline void eh_stop(struct eh *h)
{
	eh_forget(h);
	eth_stack_destroy(h->st);
	h->st = NULL;
	EH_CHECK(h->listener_refs == 0);
	EH_CHECK(rte_mempool_avail_count(eh_pool) == EH_MBUFS);
}

#endif
