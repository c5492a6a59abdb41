/* SYN cookies: encoding and checking (design in syncookie.h). */
#include <errno.h>
#include <string.h>

#include "syncookie.h"

#define MSS_BITS  3
#define TS_FLAG   (1u << MSS_BITS)
#define SLOT_FLAG (1u << (MSS_BITS + 1))
#define MAC_SHIFT (MSS_BITS + 2)
#define TS_MASK   ((1u << ETH_SYNCOOKIE_TS_BITS) - 1)
#define TS_SACK   0x10u

/* The MSS values a cookie can carry: the common ones (Linux's four for IPv4 among them), tunnels,
 * jumbo frames, and a floor for peers announcing less than RFC 1122's 536 (rounded down to it,
 * they would get segments they cannot take). */
static const uint16_t mss_table[1u << MSS_BITS] = {64, 536, 1220, 1360, 1440, 1460, 4036, 8960};

static uint32_t mac(const struct eth_siphash_key *k, const struct eth_syncookie_flow *f, uint64_t slot,
                    uint32_t fields, uint8_t ts_bits)
{
	/* a leading tag and a length of its own keep these hashes apart from the ISNs and flow hashes
	 * made under the same key */
	uint32_t w[14] = {0x636f6f6bu /* "cook" */};
	uint32_t tail[5] = {(uint32_t)f->rport << 16 | f->lport, f->peer_isn, (uint32_t)slot,
	                    (uint32_t)(slot >> 32),
	                    fields | (uint32_t)ts_bits << 8 | (uint32_t)f->our_wscale << 16};

	memcpy(&w[1], f->raddr.b, 16);
	memcpy(&w[5], f->laddr.b, 16);
	memcpy(&w[9], tail, sizeof(tail));
	return (uint32_t)eth_siphash(k, w, sizeof(w));
}

uint8_t eth_syncookie_ts_bits(bool ws_ok, uint8_t wscale, bool sack)
{
	uint8_t ws =
	    ws_ok ? (wscale < ETH_SYNCOOKIE_NO_WS ? wscale : ETH_SYNCOOKIE_NO_WS - 1) : ETH_SYNCOOKIE_NO_WS;

	return (uint8_t)(ws | (sack ? TS_SACK : 0));
}

uint32_t eth_syncookie_tsval(uint32_t now_ts, uint8_t bits)
{
	uint32_t ts = (now_ts & ~TS_MASK) | (bits & TS_MASK);

	if (ts > now_ts)           /* (both share their upper bits: no wrap-around to mind) */
		ts -= TS_MASK + 1; /* the same bits 64 ticks earlier: never ahead of the clock */
	return ts;
}

uint32_t eth_syncookie_make(const struct eth_siphash_key *k, const struct eth_syncookie_flow *f,
                            uint64_t now_ms, uint16_t mss, bool ts, uint8_t ts_bits)
{
	uint64_t slot = now_ms / ETH_SYNCOOKIE_SLOT_MS;
	uint32_t idx = 0, fields;

	if (!mss)
		mss = 536; /* RFC 9293 3.7.1: the default without the option */
	for (idx = (1u << MSS_BITS) - 1; idx && mss_table[idx] > mss; idx--)
		;
	fields = idx | (ts ? TS_FLAG : 0) | (slot & 1 ? SLOT_FLAG : 0);
	return mac(k, f, slot, fields, ts ? ts_bits & TS_MASK : 0) << MAC_SHIFT | fields;
}

int eth_syncookie_check(const struct eth_siphash_key *k, const struct eth_syncookie_flow *f, uint64_t now_ms,
                        uint32_t cookie, bool ts, uint32_t tsecr, struct eth_syncookie_opts *o)
{
	uint64_t slot = now_ms / ETH_SYNCOOKIE_SLOT_MS;
	uint32_t fields = cookie & ((1u << MAC_SHIFT) - 1);
	bool with_ts = fields & TS_FLAG;
	uint8_t bits = with_ts ? (uint8_t)(tsecr & TS_MASK) : 0;

	if (!!(fields & SLOT_FLAG) != (slot & 1)) {
		if (!slot)
			return -EINVAL;
		slot--; /* made in the previous slot */
	}
	if (with_ts && !ts)
		return -EPROTO;
	if (cookie != (mac(k, f, slot, fields, bits) << MAC_SHIFT | fields))
		return -EINVAL;
	*o = (struct eth_syncookie_opts){.mss = mss_table[fields & ((1u << MSS_BITS) - 1)], .ts = with_ts};
	if (with_ts) {
		o->sack = bits & TS_SACK;
		o->ws_ok = (bits & ETH_SYNCOOKIE_NO_WS) != ETH_SYNCOOKIE_NO_WS;
		o->wscale = o->ws_ok ? (uint8_t)(bits & ETH_SYNCOOKIE_NO_WS) : 0;
	}
	return 0;
}
