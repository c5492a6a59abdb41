/* Ethernet frames as IB external memory (issue #14, Ethernet -> IB without copies).
 *
 * The port's mempool holds every received frame. Its memory chunks are handed to the IB side, which
 * registers them in each buffer set's protection domain with local access only (ib_side/extmem.c),
 * and the TCP engines are told that payload they lend from that pool carries XLT_SEG_EXTMEM: an IB
 * connection then RDMA-writes straight from the frames. Done once at start, on the control thread,
 * before any buffer set exists. If some chunk cannot be handed over (more separate ranges than the
 * IB side keeps), the engines lend without the flag and the IB side copies, as before. */
#include <string.h>

#include <rte_mempool.h>

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

void gw_extmem_start(struct gw_daemon *d)
{
	struct walk w = {.ib = d->ib};

	if (!d->port || !d->ib)
		return;
	rte_mempool_mem_iter(eth_port_pool(d->port), on_chunk, &w);
	if (w.err) {
		GW_WARN(
		    "IB side: the Ethernet frames cannot be registered (%s): Ethernet -> IB bytes are copied",
		    strerror(-w.err));
		return;
	}
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
