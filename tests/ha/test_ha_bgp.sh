#!/usr/bin/env bash
# Two ibgwd gateways announce one anycast /32 with FRR bgpd running on their exception TAPs to a
# router running FRR with ECMP (the client's namespace is the router: zebra installs the multipath
# route, the kernel hashes flows by ports). Configs of conf/ha-bgp/ (only paths, the TAP name and the
# port differ). Checks: both gateways' BGP sessions come up through their TAPs and the router has two
# next hops; 40 sessions to the anycast address (echo, sha256) spread over both gateways (per-gateway
# session counts from /metrics); gateway 1 is drained (SIGTERM): ibgw-health-watch withdraws its
# announcement while it drains, the router keeps one next hop, and 20 new sessions all succeed through
# gateway 2. Before that, a SYN flood from port 179 (what anyone can aim at a BGP speaker from afar)
# at gateway 1, fifty times its exception path's routing rate: the sessions run GTSM (ttl-security:
# their segments carry hop limit 255, which only an on-link peer can send), so ibgwd passes them in
# the link class, apart from the flood, and the router keeps both next hops (with BGP in the flood's
# bucket, keepalives were dropped and gateway 1's session went down within its 3 s hold time).
# timeout: 180
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/ha/lib.sh
[ -x /usr/lib/frr/bgpd ] && [ -x /usr/lib/frr/zebra ] && command -v vtysh >/dev/null ||
	{ echo "SKIP: FRR is not installed (make deps)"; exit 77; }
ha_init
ANY=198.18.1.1
LOGS=$GW_ROOT/${BUILD:-build}/test-logs

# frr_start DIR NETNS BGPD_CONF: zebra and bgpd with their sockets, pid files and logs under DIR
frr_start() {
	local dir=$1 ns=$2 conf=$3 d
	mkdir -p "$dir"
	: >"$dir/zebra.conf"
	sed "s/ibgw0/$HA_TAP/g" "$conf" >"$dir/bgpd.conf"
	# FRR's daemons drop to the frr user (root is not in frrvty): their directory is theirs
	chmod 755 "$tmp"
	chown -R frr:frr "$dir"
	ip netns exec "$ns" /usr/lib/frr/zebra -u frr -g frr -P 0 -i "$dir/zebra.pid" -z "$dir/zserv.api" \
		--vty_socket "$dir" -f "$dir/zebra.conf" --log "file:$dir/zebra.log" >/dev/null 2>&1 &
	ha_bg_pid $!
	for d in $(seq 50); do [ -S "$dir/zserv.api" ] && break; sleep 0.1; done
	ip netns exec "$ns" /usr/lib/frr/bgpd -u frr -g frr -P 0 -i "$dir/bgpd.pid" -z "$dir/zserv.api" \
		--vty_socket "$dir" -f "$dir/bgpd.conf" --log "file:$dir/bgpd.log" >/dev/null 2>&1 &
	ha_bg_pid $!
}
vty() { local dir=$1; shift; ip netns exec "$2" vtysh --vty_socket "$dir" "${@:3}"; }
nexthops() { ha_c ip -4 route show "$ANY/32" | grep -c 'nexthop via\|via 198'; }
sessions() { ha_metric "$1" 'ibgw_route_sessions_total{route="echo"}'; }

routes=$(gw_routes <<R
echo tcp:7 echo
R
)
ha_c sysctl -qw net.ipv4.fib_multipath_hash_policy=1
frr_start "$tmp/r" "$HA_C" conf/ha-bgp/router-frr.conf
for k in 1 2; do
	ha_gw_add "$k"
	# kernel_tap_rate lowered from its default (20000/s) to 100/s: the flood below exceeds it fifty
	# times over (TCP's retransmissions carry BGP through a tenfold one) at a rate the af_packet port
	# still takes in whole on this host
	HA_ETH_EXTRA="kernel_tap_rate = 100" ha_gw_conf "$k" "$tmp/g$k.conf" "$routes"
	ha_gw_start "$k" "$tmp/g$k.conf"
	ha_g "$k" ip addr add "$ANY/32" dev "$HA_TAP"
	frr_start "$tmp/g$k" "$(ha_ns "$k")" "conf/ha-bgp/bgpd-gw$k.conf"
	ha_g_bg "$k" sh conf/ha-bgp/ibgw-health-watch "6501$k" "$ANY/32" "http://127.0.0.1:$HA_STATS/health" \
		--vty_socket "$tmp/g$k"
done
for i in $(seq 300); do [ "$(nexthops)" -ge 2 ] && break; sleep 0.1; done
[ "$(nexthops)" -ge 2 ] || { ha_c ip route; tail -5 "$tmp/r/bgpd.log"; fail "the router has no two next hops for $ANY"; }
ok "both gateways' BGP sessions up through their TAPs: the router has $ANY/32 over 2 next hops"

ha_c ping -c 1 -W 2 "$(ha_ip 1)" >/dev/null || fail "gateway 1 does not answer ping"
mac1=$(ha_c ip neigh show "$(ha_ip 1)" | awk '{ print $5 }')
[ -n "$mac1" ] || fail "no ARP entry for gateway 1 in the router"
rd() { echo $(($(ha_metric 1 'ibgw_exception_routing_drops_total{worker="0"}') + $(ha_metric 1 'ibgw_exception_kernel_routing_drops_total'))); }
d0=$(rd)
ha_c "$PY3" tests/ha/flood.py br0 5000 8 bgp "$mac1" "$(ha_ip 1)" >"$tmp/flood" &
f=$!
lost=
while kill -0 "$f" 2>/dev/null; do
	[ "$(nexthops)" -ge 2 ] || lost=${lost:-$(date +%T.%N)}
	sleep 0.1
done
wait $f
sleep 1
[ "$(nexthops)" -ge 2 ] || lost=${lost:-after}
[ $(($(rd) - d0)) -gt 20000 ] || fail "the flood did not exceed gateway 1's routing bucket: $(($(rd) - d0)) dropped ($(cat "$tmp/flood"))"
[ -z "$lost" ] || { tail -5 "$tmp/g1/bgpd.log"; fail "SYN flood from port 179: the router lost gateway 1's next hop (first at $lost)"; }
ok "SYN flood from port 179 at gateway 1 for 8 s ($(cat "$tmp/flood"), $(($(rd) - d0)) dropped over its routing bucket): both BGP sessions (GTSM) stayed up, 2 next hops throughout"

for i in $(seq 40); do
	r=$(ha_c "$PY3" tests/ha/ha_client.py once "$ANY" 7 65536 10)
	[ "$r" = ok ] || fail "session $i to $ANY: $r"
done
s1=$(sessions 1) s2=$(sessions 2)
[ $((s1 + s2)) -eq 40 ] && [ "$s1" -ge 4 ] && [ "$s2" -ge 4 ] || fail "40 sessions spread $s1/$s2 over the gateways"
ok "40 sessions to the anycast address intact, spread $s1/$s2 over the two gateways"

# sessions in flight (some hash to gateway 1: it drains while they last)
spids=()
for i in 1 2 3 4 5 6; do
	ha_c "$PY3" tests/ha/ha_client.py slow "$ANY" 7 1000000 6 >"$tmp/slow$i" &
	spids+=($!)
done
for i in $(seq 50); do [ "$(ha_metric 1 'ibgw_route_sessions_active{route="echo"}')" -ge 1 ] && break; sleep 0.1; done
held=$(ha_metric 1 'ibgw_route_sessions_active{route="echo"}')
[ "$held" -ge 1 ] || fail "none of 6 sessions in flight went through gateway 1"
kill -TERM "${HA_PID[1]}"
t0=$(date +%s.%N)
for i in $(seq 100); do [ "$(nexthops)" -le 1 ] && break; sleep 0.1; done
[ "$(nexthops)" -eq 1 ] || fail "gateway 1 was not withdrawn within 10 s of its drain"
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
kill -0 "${HA_PID[1]}" 2>/dev/null || fail "gateway 1 stopped before it was withdrawn"
ok "gateway 1 drained: withdrawn after ${took}s while still draining, one next hop left"
s2=$(sessions 2)
for i in $(seq 20); do
	r=$(ha_c "$PY3" tests/ha/ha_client.py once "$ANY" 7 65536 10)
	[ "$r" = ok ] || fail "session $i after the withdrawal: $r"
done
[ $(($(sessions 2) - s2)) -eq 20 ] || fail "only $(($(sessions 2) - s2)) of 20 new sessions on gateway 2"
ok "20 new sessions after the withdrawal, all through gateway 2, intact"
lost=0
for i in "${!spids[@]}"; do wait "${spids[$i]}"; [ "$(cat "$tmp/slow$((i + 1))")" = ok ] || lost=$((lost + 1)); done
ok "sessions in flight: $held through gateway 1 when it drained; $lost of 6 did not survive the withdrawal (ECMP moves flows with the route: README)"
ha_gw_wait_exit 1 30 || fail "the drained gateway exited with $?"
ok "gateway 1 finished draining and exited 0"
