/* IB side glue: rdma_cm on the control thread, the rsocket engine on the workers.
 *
 * Not plugged in yet: no IB listeners are opened. */
#include "gw.h"

int gw_ib_start(struct gw_daemon *d)
{
	(void)d;
	return 0;
}

unsigned gw_ib_poll(struct gw_worker *w, uint64_t now_ns)
{
	(void)w;
	(void)now_ns;
	return 0;
}

void gw_ib_routes(struct gw_daemon *d)
{
	(void)d;
}

void gw_ib_metrics(struct gw_daemon *d, struct gw_metrics *m)
{
	(void)d;
	(void)m;
}

void gw_ib_stop(struct gw_daemon *d)
{
	(void)d;
}
