#!/usr/bin/env bash
# Two ibgwd gateways (address6 2001:db8::11 and ::12) share an IPv6 VIP, 2001:db8::10, with keepalived
# (VRRPv3 over IPv6: advertisements from the TAPs' link-local addresses to ff02::12) running on their
# exception TAPs, as conf/ha-vrrp/ does for IPv4 (its health check, priorities, advertisement
# interval). Checks: gateway 1 takes the VIP, ibgwd 1 adopts it and serves a session over IPv6 to it
# (sha256); gateway 1's ibgwd is SIGKILLed: the VIP moves to gateway 2 within 3 s, announced from
# gateway 2's MAC (unsolicited neighbour advertisement: ibgwd's on adoption, keepalived's through the
# TAP), and gateway 2's ibgwd serves new sessions to it; VRRP advertisements crossed the exception path.
# Then gateway 1 comes back and takes the VIP again, and drains while a 4 MB session flows through it:
# gateway 2, master again, passes that session's segments to its flow_peer6 and the session finishes.
# timeout: 90
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/ha/lib.sh
command -v keepalived >/dev/null || { echo "SKIP: keepalived is not installed (make deps)"; exit 77; }
ha_init
HA_VIP=2001:db8::10
C6=2001:db8::100
ha_c sysctl -qw net.ipv6.conf.br0.disable_ipv6=0
ha_c ip -6 addr add "$C6/64" dev br0 nodad || fail "cannot address the client"

routes=$(gw_routes <<R
echo tcp:7 echo
R
)
sessions() { ha_metric "$1" 'ibgw_route_sessions_total{route="echo"}'; }

# each names the other as its flow_peer6 (as flow_peer in conf/ha-vrrp/)
gw_up() {
	HA_ETH_EXTRA="address6 = 2001:db8::1$1/64
flow_peer6 = 2001:db8::1$((3 - $1))" ha_gw_conf "$1" "$tmp/g$1.conf" "$routes"
	ha_gw_start "$1" "$tmp/g$1.conf"
	# IPv6 on the TAP alone (its link-local is the VRRP source), no duplicate address detection
	ha_g "$1" sysctl -qw "net.ipv6.conf.$HA_TAP.accept_dad=0"
	ha_g "$1" sysctl -qw "net.ipv6.conf.$HA_TAP.disable_ipv6=0"
	ha_g "$1" ip -6 addr add "2001:db8::1$1/64" dev "$HA_TAP" nodad || fail "cannot give TAP $1 its IPv6 address"
}
for k in 1 2; do
	ha_gw_add "$k"
	gw_up "$k"
	ha_ka_start "$k"
done
ha_wait_vip 1 20 >/dev/null || fail "gateway 1 (priority 150) never took the VIP"
ha_vip_on 2 && fail "the VIP is on both gateways"
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$HA_VIP" 7 100000 10)
[ "$r" = ok ] && [ "$(sessions 1)" -ge 1 ] || fail "a session to the VIP through gateway 1: $r, $(sessions 1) sessions there"
ok "gateway 1 is master of $HA_VIP: its ibgwd serves it (100 KB intact)"

ha_c timeout 10 "$PY3" -c "
from scapy.all import sniff, ICMPv6ND_NA, Ether
p = sniff(iface='br0', timeout=8, count=1,
          lfilter=lambda p: ICMPv6ND_NA in p and p[ICMPv6ND_NA].tgt == '$HA_VIP' and p[ICMPv6ND_NA].S == 0)
print(p[0][Ether].src if p else 'none')" >"$tmp/na" 2>/dev/null &
sniffer=$!
sleep 1
t_kill=$(date +%s.%N)
kill -KILL "${HA_PID[1]}"
wait "${HA_PID[1]}" 2>/dev/null # (reaped here: bash reports no "Killed" line)
rm -rf "/var/run/dpdk/ibgwd-${HA_PID[1]}"
moved=$(ha_wait_vip 2 10) || fail "the VIP did not move to gateway 2 after gateway 1 was killed"
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$HA_VIP" 7 100000 5)
[ "$r" = ok ] || fail "a new session right after the VIP moved: $r"
newconn=$(awk -v a="$t_kill" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
[ "$(sessions 2)" -ge 1 ] || fail "the session after the move was not gateway 2's"
awk -v lim=3.0 -v m="$moved" 'BEGIN { exit !(m <= lim) }' || fail "the VIP took ${moved}s to move (limit 3 s)"
wait $sniffer
mac2=$(ha_g 2 cat /sys/class/net/gp/address)
[ "$(cat "$tmp/na")" = "$mac2" ] || fail "no unsolicited neighbour advertisement of $HA_VIP from gateway 2 ($mac2): $(cat "$tmp/na")"
adv=$(ha_metric 2 'ibgw_exception_frames_total{worker="0",dir="to_kernel"}')
[ "$adv" -ge 10 ] || fail "only $adv frames reached gateway 2's kernel (VRRP advertisements)"
ok "gateway 1's ibgwd SIGKILLed: $HA_VIP on gateway 2 after ${moved}s, announced, a new session intact ${newconn}s after the kill ($adv frames to gateway 2's kernel)"

# gateway 1 back: master again (priority, preemption); then it drains (SIGTERM) while a session
# flows through it: the VIP moves to gateway 2, which passes that session's segments (matching none
# of its connections) to its flow_peer6, gateway 1, where the session finishes intact
ha_master_back
ha_c "$PY3" tests/ha/ha_client.py slow "$HA_VIP" 7 4000000 8 >"$tmp/slow" &
slow=$!
sleep 2
kill -TERM "${HA_PID[1]}"
moved=$(ha_wait_vip 2 10) || fail "the VIP did not move to gateway 2 while gateway 1 drained"
kill -0 "${HA_PID[1]}" 2>/dev/null || fail "gateway 1 stopped before the VIP moved"
wait $slow
[ "$(cat "$tmp/slow")" = ok ] || fail "the session in flight through the drained gateway: $(cat "$tmp/slow")"
fp=$(ha_metric 2 'ibgw_tcp_flow_peer_segments_total{worker="0"}')
[ "$fp" -gt 0 ] || fail "gateway 2 passed nothing to its flow peer"
ok "master drained: VIP on gateway 2 after ${moved}s; the session in flight through gateway 1 finished intact (4 MB; gateway 2 passed $fp of its segments to gateway 1 over IPv6)"
ha_gw_wait_exit 1 20 || fail "the drained ibgwd 1 exited with $?"

kill -TERM "${HA_PID[2]}"
ha_gw_wait_exit 2 20 || fail "ibgwd 2 exited with $?"
