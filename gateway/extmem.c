/* Memory the two sides share, so that neither direction copies (issue #14).
 *
 * Ethernet -> IB: the Ethernet frames as IB external memory. The port's mempool holds every received
 * frame. Its memory chunks are handed to the IB side, which registers them in each buffer set's
 * protection domain with local access only (ib_side/extmem.c), and the TCP engines are told that
 * payload they lend from that pool carries XLT_SEG_EXTMEM: an IB connection then RDMA-writes straight
 * from the frames. Done once at start, on the control thread, before any buffer set exists. If some
 * chunk cannot be handed over (more separate ranges than the IB side keeps), the engines lend without
 * the flag and the IB side copies, as before.
 *
 * IB -> Ethernet: the IB buffer sets in DPDK's memory. Frames point into the IB receive rings (eth_side/
 * sndq.c). af_packet reads them with the CPU, any memory will do; virtio_user puts their virtual
 * addresses in its ring, and its vhost (the kernel's vhost-net) translates only DPDK's own memory
 * segments, the memory table virtio_user gives it (external memory, rte_extmem_register, is left
 * out of it, and virtio_user maps no other memory for vhost-net). So on such a port
 * (ETH_OFFLOAD_DEVMEM) the buffer sets take their memory from DPDK's heap (rte_zmalloc: zeroed, as the
 * pages they map otherwise) and lend their rings as XLT_SEG_DEVMEM. DPDK's memory is bounded by EAL's
 * options (-m with --no-huge, or the hugepages): at start the IB buffers the routes may hold at once
 * are compared with what the heap has or can still take, less BUFMEM_RESERVE for DPDK's own
 * allocations, and a line says whether they fit. A set that finds no room maps pages of its own and
 * what it relays to the Ethernet port is copied into the frames, as before (ibgw_copied_bytes_total
 * shows it, ibgw_ib_buffer_dpdk_bytes against ibgw_ib_buffer_bytes how many sets are in DPDK's
 * memory). */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_mempool.h>

#include "../conf/conf.h"
#include "../translate/ratelim.h"
#include "../eth_side/port.h"
#include "../eth_side/stack.h"
#include "../ib_side/ib.h"
#include "gw.h"
#include "log.h"
#include "metrics.h"

struct walk {
	struct ib_ctl *ib;
	unsigned chunks;
	size_t bytes;
	int err;
};

static void on_chunk(struct rte_mempool *mp, void *opaque, struct rte_mempool_memhdr *hdr, unsigned idx)
{
	struct walk *w = opaque;
	int ret;

	(void)mp;
	(void)idx;
	if (w->err)
		return;
	ret = ib_ctl_extmem(w->ib, hdr->addr, hdr->len);
	if (ret) {
		w->err = ret;
		return;
	}
	w->chunks++;
	w->bytes += hdr->len;
}

/* ---- IB buffer sets in DPDK's memory ---- */

#define MIB            ((uint64_t)1 << 20)
#define BUFMEM_RESERVE (16 * MIB) /* of DPDK's memory, left to DPDK's own allocations after start */
#define BUFMEM_ALIGN   4096u      /* a set's memory starts on a page, as the pages it maps would */
/* A set's bytes beyond what the session budget counts (conf_route_session_bytes: its receive ring and
 * copy area): the heap element's header and alignment (an estimate for the start-up comparison only). */
#define BUFMEM_SET_EXTRA (8 * 1024u)
#define BUFMEM_LOG_NS    (60 * 1000000000ull) /* one line a minute at most when the room ran out */
#define HUGE_SIZES       4

static struct {
	/* control thread, set at start */
	struct ib_mem_ops ops;
	uint64_t cap;           /* bytes the sets may take from DPDK's heap */
	struct xlt_ratelim log; /* control thread only: the "out of room" line (BUFMEM_LOG_NS) */
	/* written by the control thread (takes) and by any thread (gives back: an orphan's last put);
	 * read by the control thread */
	_Atomic uint64_t used;
} bm;

/* Control thread (ib_mem_ops.alloc). */
static void *bm_alloc(void *arg, size_t len)
{
	void *mem = NULL;
	uint64_t quiet;

	(void)arg;
	if (atomic_load_explicit(&bm.used, memory_order_relaxed) + len <= bm.cap)
		mem = rte_zmalloc("ibgw_ib_bufs", len, BUFMEM_ALIGN);
	if (mem) {
		atomic_fetch_add_explicit(&bm.used, len, memory_order_relaxed);
		return mem;
	}
	if (xlt_ratelim_ok(&bm.log, gw_now_ns(), BUFMEM_LOG_NS, &quiet))
		GW_WARN("IB side: %" PRIu64 " buffer set(s) found no room in DPDK's memory (%" PRIu64
		        " of %" PRIu64
		        " MiB taken): their bytes are copied into Ethernet frames (more with -m or "
		        "hugepages in [eth] eal_args)",
		        quiet + 1, atomic_load_explicit(&bm.used, memory_order_relaxed) / MIB, bm.cap / MIB);
	return NULL;
}

/* Any thread (ib_mem_ops.free): rte_free is. */
static void bm_free(void *arg, void *mem, size_t len)
{
	(void)arg;
	rte_free(mem);
	atomic_fetch_sub_explicit(&bm.used, len, memory_order_relaxed);
}

/* What DPDK's memory lists could still take, per page size: their unpopulated segments. */
struct growth {
	uint64_t page_sz[HUGE_SIZES];
	uint64_t bytes[HUGE_SIZES];
};

static int on_list(const struct rte_memseg_list *msl, void *arg)
{
	struct growth *g = arg;
	uint64_t free_segs = (uint64_t)msl->memseg_arr.len - (uint64_t)msl->memseg_arr.count;

	if (msl->external || !free_segs)
		return 0;
	for (unsigned i = 0; i < HUGE_SIZES; i++)
		if (!g->page_sz[i] || g->page_sz[i] == msl->page_sz) {
			g->page_sz[i] = msl->page_sz;
			g->bytes[i] += free_segs * msl->page_sz;
			break;
		}
	return 0;
}

/* Free hugepages of PAGE_SZ bytes in the system, in bytes (0 when unknown). */
static uint64_t free_huge(uint64_t page_sz)
{
	char path[128];
	unsigned long long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%" PRIu64 "kB/free_hugepages",
	         page_sz >> 10);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &n) != 1)
		n = 0;
	fclose(f);
	return (uint64_t)n * page_sz;
}

/* Bytes DPDK's heap can still give: what is free in it now, and, with hugepages allocated as needed
 * (not --legacy-mem), the pages its lists have room for and the system has free. */
static uint64_t dpdk_room(const struct gw_daemon *d)
{
	struct growth g = {0};
	uint64_t room = 0;

	for (unsigned i = 0; i < rte_socket_count(); i++) {
		struct rte_malloc_socket_stats st;

		if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(i), &st) == 0)
			room += st.heap_freesz_bytes;
	}
	if (!rte_eal_has_hugepages() || strstr(d->conf->eth.eal_args, "--legacy-mem"))
		return room; /* (--no-huge is legacy memory too: all of it was in the heap from the start) */
	rte_memseg_list_walk(on_list, &g);
	for (unsigned i = 0; i < HUGE_SIZES && g.page_sz[i]; i++) {
		uint64_t sys = free_huge(g.page_sz[i]);

		room += g.bytes[i] < sys ? g.bytes[i] : sys;
	}
	return room;
}

/* The IB buffers the routes may hold at once (their sessions' sets; the idle pool reuses them). */
static uint64_t ib_need(const struct conf *c)
{
	uint64_t need = 0;

	for (uint32_t i = 0; i < c->n_routes; i++) {
		const struct conf_route *r = &c->routes[i];

		if (r->listen.kind == CONF_EP_IB || r->connect.kind == CONF_EP_IB)
			need += (uint64_t)r->max_sessions *
			        (r->ib_rbuf_size + conf_route_ib_copy_bytes(r) + BUFMEM_SET_EXTRA);
	}
	return need;
}

static void bufmem_start(struct gw_daemon *d)
{
	uint64_t room = dpdk_room(d), need = ib_need(d->conf);

	bm.cap = room > BUFMEM_RESERVE ? room - BUFMEM_RESERVE : 0;
	bm.ops =
	    (struct ib_mem_ops){.arg = d, .alloc = bm_alloc, .free = bm_free, .seg_flags = XLT_SEG_DEVMEM};
	ib_ctl_bufmem(d->ib, &bm.ops);
	if (need <= bm.cap)
		GW_INFO("IB side: buffer sets in DPDK's memory (the routes' %" PRIu64 " MiB of %" PRIu64
		        " MiB available): the Ethernet port sends from them without a copy",
		        (need + MIB - 1) / MIB, bm.cap / MIB);
	else
		GW_WARN(
		    "[eth] eal_args: DPDK's memory has room for %" PRIu64 " MiB of IB buffers, the routes "
		    "may hold %" PRIu64 " MiB: buffer sets beyond it get memory of their own, and what they "
		    "relay to the Ethernet port is copied into each frame (give DPDK %" PRIu64
		    " MiB more: -m with --no-huge, or hugepages)",
		    bm.cap / MIB, (need + MIB - 1) / MIB, (need - bm.cap + MIB - 1) / MIB);
}

/* ---- copy buffers: frames of the pool for what an IB connection cannot send from where it lies ----
 * A route between IB and TCP copies little (small or out-of-order TCP segments, a PROXY header): into
 * frames of the port's pool, registered with every buffer set like the frames it lends, instead of
 * a copy area in each set (conf.h). Worker (ib_copy_ops.get). */
static int copybuf_get(void *warg, struct xlt_seg *seg)
{
	struct gw_worker *w = warg;

	return w->eth ? eth_stack_copy_buf(w->eth, seg) : -ENODEV;
}

static const struct ib_copy_ops copybuf_ops = {.get = copybuf_get};

void gw_extmem_start(struct gw_daemon *d)
{
	struct walk w = {.ib = d->ib};

	if (!d->port || !d->ib)
		return;
	/* the port can send from DPDK's memory only, not from the rings' own pages */
	if ((eth_port_offloads(d->port) & (ETH_OFFLOAD_DEVMEM | ETH_OFFLOAD_EXTMEM)) == ETH_OFFLOAD_DEVMEM)
		bufmem_start(d);
	rte_mempool_mem_iter(eth_port_pool(d->port), on_chunk, &w);
	if (w.err) {
		ib_ctl_extmem_clear(d->ib); /* the chunks added before the failure: no set registers them */
		/* a route that relays by reference copies through a small copy area in each set, beyond
		 * its budget (conf.h), correct and strict, only slower */
		GW_WARN("IB side: the Ethernet frames cannot be registered (%s): Ethernet -> IB bytes are "
		        "copied, through a copy area in each buffer set (routes relaying by reference: %u KiB "
		        "each, beyond memory_limit's count; that direction is slower)",
		        strerror(-w.err), CONF_LENT_IB_COPY / 1024);
		return;
	}
	ib_ctl_copymem(d->ib, &copybuf_ops);
	for (unsigned i = 0; i < d->n_workers; i++)
		if (d->workers[i].eth)
			eth_stack_rx_extmem(d->workers[i].eth, true);
	GW_INFO("IB side: Ethernet frames (%zu bytes in %u chunk(s)) registered per buffer set, local access "
	        "only",
	        w.bytes, w.chunks);
}

void gw_extmem_metrics(struct gw_daemon *d, struct gw_metrics *m)
{
	if (!d->ib)
		return;
	gw_metrics_family(
	    m, "ib_extmem_registration_seconds_total", XLT_COUNTER,
	    "time the registrations of Ethernet frame memory took (ib_extmem_registrations_total)");
	gw_metrics_sample(m, (double)ib_ctl_stats(d->ib)->extmem_reg_ns / 1e9, NULL);
}
