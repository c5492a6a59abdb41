#!/usr/bin/env bash
# The exception path keeps routing protocols apart from the rest. Two ibgwd gateways share a VIP with
# keepalived (VRRPv3, conf/ha-vrrp/: advertisements every 0.5 s, a backup takes over after three
# missed). A host in the LAN floods broadcast ARP requests for both gateways' addresses: each reaches
# both ibgwds, which answer it and copy it to their kernels (which answer too, through the TAP), far
# over kernel_tap_rate. Checks: the VIP never leaves the master, nor shows on the backup, while the
# flood lasts (the advertisements crossed both gateways' exception paths in their own buckets: counted,
# none dropped), the flood's excess was dropped and counted. Then SYNs from port 179 (BGP's, which
# anyone can send from afar) flood the master's routing bucket: the VIP stays (VRRP, hop limit 255, has
# a bucket apart). A session to the VIP is intact after. On a build with one bucket for all, the
# backup takes the VIP within the first seconds of the ARP flood; with VRRP in BGP's bucket, in the
# second flood.
# timeout: 90
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/ha/lib.sh
command -v keepalived >/dev/null || { echo "SKIP: keepalived is not installed (make deps)"; exit 77; }
ha_init
HA_VIP=198.18.0.10
FLOOD_S=8
FLOOD_RATE=5000

routes=$(gw_routes <<R
echo tcp:7 echo
R
)
# kernel_tap_rate lowered from its default (20000/s) to 500/s: the flood must exceed it ten times
# over at a rate that the af_packet port and two ibgwds on this 2-core host still take in whole
# (a flood that overruns the port itself drops advertisements before any gateway sees them)
for k in 1 2; do
	ha_gw_add "$k"
	HA_ETH_EXTRA="kernel_tap_rate = 500" ha_gw_conf "$k" "$tmp/g$k.conf" "$routes"
	ha_gw_start "$k" "$tmp/g$k.conf"
	ha_ka_start "$k"
done
ha_wait_vip 1 20 >/dev/null || fail "gateway 1 (priority 150) never took the VIP"
sleep 1
ha_vip_on 2 && fail "the VIP is on both gateways before the flood"
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$HA_VIP" 7 100000 10)
[ "$r" = ok ] || fail "a session to the VIP before the flood: $r"
ok "gateway 1 is master: the VIP answers (100 KB intact)"

wr() { ha_metric "$1" 'ibgw_exception_routing_frames_total{worker="0"}'; }
kr() { ha_metric "$1" 'ibgw_exception_kernel_routing_frames_total'; }
rd() { echo $(($(ha_metric "$1" 'ibgw_exception_routing_drops_total{worker="0"}') + $(ha_metric "$1" 'ibgw_exception_kernel_routing_drops_total'))); }
od() { echo $(($(ha_metric "$1" 'ibgw_exception_drops_total{worker="0",reason="rate"}') + $(ha_metric "$1" 'ibgw_exception_kernel_drops_total{reason="rate"}'))); }
w2=$(wr 2) k1=$(kr 1) d1=$(od 1) d2=$(od 2)

# flood WHAT ARGS...: tests/ha/flood.py from the client for FLOOD_S at FLOOD_RATE; fails if the VIP
# leaves the master or shows on the backup meanwhile
flood() {
	local lost= both= f
	ha_c "$PY3" tests/ha/flood.py br0 "$FLOOD_RATE" "$FLOOD_S" "$@" >"$tmp/flood" &
	f=$!
	while kill -0 "$f" 2>/dev/null; do
		ha_vip_on 1 || lost=${lost:-$(date +%T.%N)}
		ha_vip_on 2 && both=${both:-$(date +%T.%N)}
		sleep 0.1
	done
	wait $f
	sleep 1
	echo "$1 flood: $(cat "$tmp/flood")"
	[ -z "$both" ] || fail "$1 flood: the VIP showed on the backup (first at $both): advertisements were lost"
	[ -z "$lost" ] || fail "$1 flood: the master lost the VIP (at $lost)"
}
flood arp "$(ha_ip 1)" "$(ha_ip 2)"
n_w2=$(($(wr 2) - w2)) n_k1=$(($(kr 1) - k1))
drops1=$(($(od 1) - d1)) drops2=$(($(od 2) - d2))
# the master sends one advertisement per 0.5 s: FLOOD_S x 2 while the flood lasted
[ "$n_k1" -ge $((FLOOD_S * 2 - 2)) ] && [ "$n_w2" -ge $((FLOOD_S * 2 - 2)) ] ||
	fail "advertisements during the flood: $n_k1 out of gateway 1's TAP, $n_w2 into gateway 2's (expected about $((FLOOD_S * 2)))"
[ "$(rd 1)" = 0 ] && [ "$(rd 2)" = 0 ] || fail "routing frames dropped: $(rd 1) on gateway 1, $(rd 2) on gateway 2"
[ "$drops1" -gt $((FLOOD_S * 500)) ] && [ "$drops2" -gt $((FLOOD_S * 500)) ] ||
	fail "the flood did not exceed kernel_tap_rate: $drops1 and $drops2 frames dropped over the rate ($(cat "$tmp/flood"))"
ok "ARP flood for ${FLOOD_S}s: the VIP stayed on the master; $n_k1 advertisements out of its TAP and $n_w2 into the backup's, none dropped; $drops1 and $drops2 other frames dropped over kernel_tap_rate"

# SYNs from BGP's port 179 to both gateways' ssh port, as many each as the ARP flood's: routing
# protocol frames anyone can send from afar (and the kernel's resets to port 179): they fill the
# routing buckets, not VRRP's, which only an on-link sender (hop limit 255) reaches
macs=()
for k in 1 2; do
	ha_c ping -c 1 -W 2 "$(ha_ip $k)" >/dev/null || fail "gateway $k does not answer ping"
	macs[$k]=$(ha_c ip neigh show "$(ha_ip $k)" | awk '{ print $5 }')
	[ -n "${macs[$k]}" ] || fail "no ARP entry for gateway $k in the client"
done
r0=$(ha_metric 2 'ibgw_exception_routing_drops_total{worker="0"}')
FLOOD_RATE=$((FLOOD_RATE * 2)) flood bgp "${macs[1]}" "$(ha_ip 1)" "${macs[2]}" "$(ha_ip 2)"
r1=$(ha_metric 2 'ibgw_exception_routing_drops_total{worker="0"}')
[ $((r1 - r0)) -gt $((FLOOD_S * 500)) ] || fail "the BGP-port flood did not exceed the backup's routing bucket: $((r1 - r0)) dropped"
ok "SYN flood from port 179 for ${FLOOD_S}s: the VIP stayed on the master; $((r1 - r0)) of the backup's frames dropped over its routing bucket"

r=$(ha_c "$PY3" tests/ha/ha_client.py once "$HA_VIP" 7 100000 10)
[ "$r" = ok ] || fail "a session to the VIP after the flood: $r"
ok "after the flood: a session to the VIP intact (100 KB)"
