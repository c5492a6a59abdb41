/* Ethernet side glue: the worker polls its queue of the DPDK port.
 *
 * Until the TCP/IP engine is plugged in, received packets are counted and dropped. */
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "../eth_side/port.h"
#include "gw.h"

#define BURST 32

int gw_eth_start(struct gw_daemon *d)
{
	(void)d;
	return 0;
}

unsigned gw_eth_poll(struct gw_worker *w, uint64_t now_ns)
{
	struct rte_mbuf *pkts[BURST];
	uint16_t n;

	(void)now_ns;
	if (!w->port)
		return 0;
	n = rte_eth_rx_burst(eth_port_id(w->port), (uint16_t)w->id, pkts, BURST);
	if (n == 0)
		return 0;
	gw_bump(&w->st.rx_packets, n);
	rte_pktmbuf_free_bulk(pkts, n);
	return n;
}

void gw_eth_routes(struct gw_daemon *d)
{
	(void)d;
}

void gw_eth_metrics(struct gw_daemon *d, struct gw_metrics *m)
{
	(void)d;
	(void)m;
}

void gw_eth_stop(struct gw_daemon *d)
{
	(void)d;
}
