/* The Internet checksum's ones'-complement sum (RFC 1071) in software: what a port without checksum
 * offload (af_packet) costs per byte on both paths, TCP input verifying every segment and output
 * filling in every frame. */
#ifndef ETH_CKSUM_H
#define ETH_CKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rte_ipv4_hdr;
struct rte_ipv6_hdr;
struct rte_mbuf;

/* The folded sum of LEN bytes at BUF taken as host-order 16-bit words (a last odd byte padded with
 * zero): the same value as DPDK's rte_raw_cksum, 0 only for all-zero bytes. */
uint16_t eth_cksum(const void *buf, size_t len);

/* The same over LEN bytes of M's chain from packet offset OFF, whatever the segments' lengths (a
 * segment that starts at an odd position of the sum is swapped in: RFC 1071's byte-order
 * independence). False when the chain holds fewer bytes. */
bool eth_cksum_chain(const struct rte_mbuf *m, uint32_t off, uint32_t len, uint16_t *out);

/* The TCP/UDP checksum field of the frame M, whose L4 header starts at packet offset L4_OFF and runs to
 * the chain's end (lent bytes ride in mbufs of their own: sndq.c), PHDR the pseudo-header's sum. */
uint16_t eth_cksum_l4(const struct rte_mbuf *m, uint32_t phdr, uint32_t l4_off);

/* An IPv4 header's checksum field (the field itself zero), as DPDK's rte_ipv4_cksum gives it. */
uint16_t eth_ipv4_cksum(const struct rte_ipv4_hdr *ip);

/* The folded sum of IP's pseudo-header for its upper-layer message (the rest of the packet after the
 * header), as DPDK's rte_ipv4_phdr_cksum without offload flags. */
uint16_t eth_ipv4_phdr_cksum(const struct rte_ipv4_hdr *ip);

/* The folded sum of IP's pseudo-header (RFC 8200 8.1) for an upper-layer message of LEN bytes and
 * protocol PROTO (whatever extension headers come before it). */
uint16_t eth_ipv6_phdr_cksum(const struct rte_ipv6_hdr *ip, uint32_t len, uint8_t proto);

/* The folded ones'-complement sum of A and B (two folded sums, or a sum and a pseudo-header's). */
static inline uint16_t eth_cksum_add(uint32_t a, uint32_t b)
{
	uint32_t s = a + b;

	s = (s & 0xffffu) + (s >> 16);
	return (uint16_t)((s & 0xffffu) + (s >> 16));
}

#endif
