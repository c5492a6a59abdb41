/* Software checksums. DPDK 22.11's rte_raw_cksum adds one 16-bit word at a time; this loop reads 64
 * bits at once and adds their two 32-bit halves into four 64-bit accumulators (independent chains
 * the CPU runs side by side). A half is below 2^32, so an accumulator cannot carry out before 2^31
 * reads, far beyond any frame; the halves are congruent to their 16-bit words modulo 0xffff, which is
 * all the ones'-complement sum keeps, and the end-around folding gives rte_raw_cksum's value. */
#include <string.h>

#include <rte_mbuf.h>

#include "cksum.h"

static inline uint64_t halves(uint64_t w)
{
	return (w & 0xffffffffu) + (w >> 32);
}

uint16_t eth_cksum(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t a = 0, b = 0, c = 0, d = 0, s;

	for (; len >= 32; p += 32, len -= 32) {
		uint64_t w[4];

		memcpy(w, p, sizeof(w));
		a += halves(w[0]);
		b += halves(w[1]);
		c += halves(w[2]);
		d += halves(w[3]);
	}
	for (; len >= 8; p += 8, len -= 8) {
		uint64_t w;

		memcpy(&w, p, sizeof(w));
		a += halves(w);
	}
	if (len >= 4) {
		uint32_t w;

		memcpy(&w, p, sizeof(w));
		b += w;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		uint16_t w;

		memcpy(&w, p, sizeof(w));
		c += w;
		p += 2;
		len -= 2;
	}
	if (len) {
		uint16_t w = 0;

		memcpy(&w, p, 1); /* the first byte of a word whose second is zero, in host order */
		d += w;
	}
	s = a + b + c + d;
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffffffffu) + (s >> 32);
	return eth_cksum_add((uint32_t)(s & 0xffffu), (uint32_t)(s >> 16));
}

bool eth_cksum_chain(const struct rte_mbuf *m, uint32_t off, uint32_t len, uint16_t *out)
{
	uint32_t sum = 0, done = 0;

	for (const struct rte_mbuf *seg = m; seg && done < len; seg = seg->next) {
		uint32_t n, part;

		if (off >= seg->data_len) {
			off -= seg->data_len;
			continue;
		}
		n = seg->data_len - off < len - done ? seg->data_len - off : len - done;
		part = eth_cksum(rte_pktmbuf_mtod_offset(seg, const uint8_t *, off), n);
		if (done & 1) /* this segment's bytes sit at odd positions of the sum */
			part = ((part & 0xffu) << 8) | (part >> 8);
		sum = eth_cksum_add(sum, part);
		done += n;
		off = 0;
	}
	*out = (uint16_t)sum;
	return done == len;
}

uint16_t eth_cksum_l4(const struct rte_mbuf *m, uint32_t phdr, uint32_t l4_off)
{
	uint16_t sum = 0;

	eth_cksum_chain(m, l4_off, m->pkt_len - l4_off, &sum);
	return (uint16_t)~eth_cksum_add(phdr, sum);
}
