#!/usr/bin/env bash
# SYN floods over IPv6 (tests/eth/synflood.py with an IPv6 address, in the peer namespace): 2000 SYN/s for
# 10 s from 240 spoofed on-link IPv6 sources nobody answers neighbour solicitations for, to one tcp:
# listener, while the kernel's TCP over IPv6 connects to it and to a second listener every few hundred
# ms and each exchange (32 KiB echoed, sha256) must complete within 1 s; SYN cookies counted; the
# half-open table drains; then 3000 SYNs from 200 sources in one burst. The IPv6 neighbour cache and
# its pending queue stay within the ARP cache's bounds (256 entries, 256 queued). The ASan ibgwd must
# not crash and must shut down cleanly.
# timeout: 120
# concurrent: mostly waits (a bounded SYN burst, then timers), little CPU
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
m() { gw_metric "$ETH_STATS" "ibgw_$1{worker=\"0\"}"; }

eth_setup
eth_peer_v6
eth_gw_start "$tmp/ibgw.conf" "address6 = $ETH_GW_IP6/64
$(printf '%s\n' 'flooded tcp:7 echo' 'other tcp:8 echo' | gw_routes)"
eth_ns "$PY3" tests/eth/synflood.py "$ETH_PEER" "$ETH_GW_IP6" "http://127.0.0.1:$ETH_STATS/metrics" \
	"/proc/$$/ns/net" 7 8
rc=$?
kill -0 "$GW_PID" 2>/dev/null || fail "ibgwd died under the SYN floods"
[ $rc = 0 ] || fail "SYN flood checks failed (see above)"
echo "IPv6 neighbour cache: $(m nd_entries) entries, $(m nd_queued) packets queued," \
	"$(m nd_unresolved_drops_total) dropped unresolved, $(m nd_queue_drops_total) dropped (queue full)," \
	"$(gw_metric "$ETH_STATS" 'ibgw_nd_solicitations_total{worker="0",dir="out"}') solicitations sent"
[ "$(m nd_entries)" -le 256 ] && [ "$(m nd_queued)" -le 256 ] || fail "the IPv6 neighbour cache outgrew its bounds"
[ $(($(m nd_unresolved_drops_total) + $(m nd_queue_drops_total))) -gt 0 ] ||
	fail "SYN-ACKs to unanswering sources were never dropped: was the neighbour cache in the way at all?"
ok "the IPv6 neighbour cache stayed within its bounds under the flood"
gw_stop || fail "ibgwd exited with $? (sanitizer report or shutdown error)"
ok "clean shutdown (ASan: no error, no leak)"
