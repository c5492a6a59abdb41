#!/usr/bin/env bash
# Two ibgwd gateways share a VIP with keepalived (VRRPv3) running on their exception TAPs, with the
# configs of conf/ha-vrrp/ (only the port's interface, the TAP name, the route and the pid files
# differ). A kernel TCP client in the LAN loops sessions to the VIP (64 KB each, echoed by ibgwd,
# sha256-checked). 1) The master's ibgwd is SIGKILLed: the VIP is on the backup within 3 s and new
# sessions succeed. 2) The master is drained (SIGTERM): its /health turns 503, keepalived gives the
# VIP up while ibgwd is still draining, new sessions succeed on the other gateway, and a session in
# flight through the drained gateway finishes intact: its segments now reach the other gateway, which
# passes what matches none of its connections to its flow_peer (the drained one).
# timeout: 180
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/ha/lib.sh
command -v keepalived >/dev/null || { echo "SKIP: keepalived is not installed (make deps)"; exit 77; }
ha_init
HA_VIP=198.18.0.10

routes=$(gw_routes <<R
echo tcp:7 echo
R
)
gw_up() {
	# as conf/ha-vrrp/: each names the other as its flow_peer
	HA_ETH_EXTRA="flow_peer = $(ha_ip $((3 - $1)))" ha_gw_conf "$1" "$tmp/g$1.conf" "$routes"
	ha_gw_start "$1" "$tmp/g$1.conf"
}
sessions() { ha_metric "$1" 'ibgw_route_sessions_total{route="echo"}'; }

for k in 1 2; do ha_gw_add "$k"; gw_up "$k"; ha_ka_start "$k"; done
ha_wait_vip 1 20 >/dev/null || fail "gateway 1 (priority 150) never took the VIP"
ha_vip_on 2 && fail "the VIP is on both gateways"
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$HA_VIP" 7 100000 10)
[ "$r" = ok ] && [ "$(sessions 1)" -ge 1 ] || fail "a session to the VIP through gateway 1: $r, $(sessions 1) sessions there"
ok "gateway 1 is master: the VIP answers through its ibgwd (100 KB intact)"

# 1) the master dies
ha_c "$PY3" tests/ha/ha_client.py loop "$HA_VIP" 7 65536 14 >"$tmp/loop1" &
loop=$!
sleep 3
t_kill=$(date +%s.%N)
kill -KILL "${HA_PID[1]}"
wait "${HA_PID[1]}" 2>/dev/null # (reaped here: bash reports no "Killed" line)
rm -rf "/var/run/dpdk/ibgwd-${HA_PID[1]}" # (EAL's runtime directory: a killed ibgwd leaves it)
moved=$(ha_wait_vip 2 10) || fail "the VIP did not move to gateway 2 after gateway 1 was killed"
# a new connection right away (the loop's session in flight at the kill waits out its own timeout:
# its segments now go to the dead gateway, its flow peer)
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$HA_VIP" 7 65536 5)
[ "$r" = ok ] || fail "a new session right after the VIP moved: $r"
newconn=$(awk -v a="$t_kill" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
wait $loop
awk -v lim=3.0 -v m="$moved" 'BEGIN { exit !(m <= lim) }' || fail "the VIP took ${moved}s to move (limit 3 s)"
# the loop's clock started ~3 s before the kill: the first session after the move and every later one
n_ok=$(awk '$1 > 6 && $3 == "ok"' "$tmp/loop1" | wc -l)
n_bad=$(awk -v m="$moved" '$1 > 3 + m + 6 && $3 != "ok"' "$tmp/loop1" | wc -l)
[ "$n_ok" -ge 5 ] && [ "$n_bad" -eq 0 ] && [ "$(sessions 2)" -ge "$n_ok" ] ||
	{ cat "$tmp/loop1"; fail "after the failover: $n_ok sessions ok, $n_bad failed, $(sessions 2) on gateway 2"; }
ok "master SIGKILLed: VIP on gateway 2 after ${moved}s, a new session intact ${newconn}s after the kill, $n_ok later sessions of the loop intact, none failed"

# gateway 1 back (keepalived restarted with it): it takes the VIP back (priority, preemption)
ha_master_back
s1=$(sessions 1)
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$HA_VIP" 7 100000 10)
[ "$r" = ok ] && [ "$(sessions 1)" -gt "$s1" ] || fail "a session through gateway 1 after its return: $r"
ok "gateway 1 restarted: master again"

# 2) the master drains
ha_c "$PY3" tests/ha/ha_client.py slow "$HA_VIP" 7 4000000 8 >"$tmp/slow" &
slow=$!
ha_c "$PY3" tests/ha/ha_client.py loop "$HA_VIP" 7 65536 10 >"$tmp/loop2" &
loop=$!
sleep 2
s2=$(sessions 2)
kill -TERM "${HA_PID[1]}"
moved=$(ha_wait_vip 2 10) || fail "the VIP did not move to gateway 2 while gateway 1 drained"
kill -0 "${HA_PID[1]}" 2>/dev/null || fail "gateway 1 stopped before the VIP moved"
[ "$(ha_g 1 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HA_STATS/health")" = 503 ] ||
	fail "the draining gateway's /health is not 503"
ok "master drained: /health 503, VIP on gateway 2 after ${moved}s while gateway 1 still drains"
# stray segments (ACKs of no connection, from ports nobody uses) to the VIP's listener: gateway 2
# passes them to gateway 1, which holds none of them either and drops them, though it closed its
# listeners to drain (its kernel got them, one for one, before session 21)
u0=$(ha_msum 1 ibgw_tcp_flow_peer_unmatched_total worker)
k0=$(ha_msum 1 ibgw_exception_frames_total 'dir="to_kernel"')
ha_c "$PY3" -c "
from scapy.all import IP, TCP, send
send([IP(dst='$HA_VIP') / TCP(sport=50000 + i, dport=7, flags='A', seq=1000, ack=2000) for i in range(20)], verbose=False)" ||
	fail "scapy: cannot send the stray segments"
for i in $(seq 30); do [ "$(ha_msum 1 ibgw_tcp_flow_peer_unmatched_total worker)" -ge $((u0 + 20)) ] && break; sleep 0.1; done
u1=$(ha_msum 1 ibgw_tcp_flow_peer_unmatched_total worker)
k1=$(ha_msum 1 ibgw_exception_frames_total 'dir="to_kernel"')
[ $((u1 - u0)) -ge 20 ] && [ $((k1 - k0)) -lt 20 ] ||
	fail "20 stray segments: gateway 1 dropped $((u1 - u0)) passed by gateway 2 as unmatched, punted $((k1 - k0)) to its kernel"
ok "20 stray segments to the VIP: passed by gateway 2 to the draining gateway 1, dropped there ($((u1 - u0)) unmatched), not its kernel's ($((k1 - k0)) frames to it meanwhile)"
wait $loop
n_ok=$(awk -v m="$moved" '$1 > 2 + m + 1.5 && $3 == "ok"' "$tmp/loop2" | wc -l)
n_bad=$(awk -v m="$moved" '$1 > 2 + m + 1.5 && $3 != "ok"' "$tmp/loop2" | wc -l)
[ "$n_ok" -ge 5 ] && [ "$n_bad" -eq 0 ] && [ "$(sessions 2)" -gt "$s2" ] ||
	{ cat "$tmp/loop2"; fail "after the drain's failover: $n_ok sessions ok, $n_bad failed"; }
ok "after the move: $n_ok new sessions intact through gateway 2, none failed"
wait $slow
[ "$(cat "$tmp/slow")" = ok ] || fail "the session in flight through the drained gateway: $(cat "$tmp/slow")"
fp=$(ha_metric 2 'ibgw_tcp_flow_peer_segments_total{worker="0"}')
[ "$fp" -gt 0 ] || fail "gateway 2 passed nothing to its flow peer"
ok "the session in flight through the drained gateway finished intact (4 MB; gateway 2 passed $fp of its segments to gateway 1)"
ha_gw_wait_exit 1 20
rc=$?
[ "$rc" -eq 0 ] || fail "the drained ibgwd exited with $rc"
ok "gateway 1 finished draining and exited 0"
