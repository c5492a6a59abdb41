/* SipHash-2-4 (Aumasson and Bernstein), a keyed hash: the ISN function of RFC 6528 and the flow hash
 * that both steers flows to their worker and indexes the connection table. Keyed with a secret, so a
 * remote peer can neither predict ISNs nor aim hash collisions at one bucket or one worker. */
#ifndef ETH_SIPHASH_H
#define ETH_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

struct eth_siphash_key {
	uint64_t k0, k1;
};

uint64_t eth_siphash(const struct eth_siphash_key *key, const void *data, size_t len);

/* The common case: hashes three words (a flow's addresses and ports) without a byte buffer. */
uint64_t eth_siphash_3u32(const struct eth_siphash_key *key, uint32_t a, uint32_t b, uint32_t c);

#endif
