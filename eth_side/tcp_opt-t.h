/* Types of TCP option parsing and writing (see tcp_opt.h). */
#ifndef ETH_TCP_OPT_T_H
#define ETH_TCP_OPT_T_H

#include <stdbool.h>
#include <stdint.h>

#define ETH_TCPOPT_EOL	     0
#define ETH_TCPOPT_NOP	     1
#define ETH_TCPOPT_MSS	     2
#define ETH_TCPOPT_WSCALE    3
#define ETH_TCPOPT_SACK_PERM 4
#define ETH_TCPOPT_SACK	     5
#define ETH_TCPOPT_TS	     8

#define ETH_TCP_MAX_WSCALE 14 /* RFC 7323 2.3 */
#define ETH_TCP_MAX_SACK   4  /* blocks in one option (40 bytes of options) */

struct eth_sack_block {
	uint32_t start, end; /* [start, end) in sequence space, host order */
};

/* What one segment's options said. Flags say which options were present. */
struct eth_tcp_opts {
	bool mss_ok, ws_ok, sack_ok, ts_ok;
	uint16_t mss;
	uint8_t wscale; /* clamped to 14 */
	uint8_t n_sack;
	uint32_t tsval, tsecr;
	struct eth_sack_block sack[ETH_TCP_MAX_SACK];
};

#endif
