#!/usr/bin/env bash
# TCP over IPv6 through ibgwd over a bad link (5% loss, 1% duplication, 20 ms delay, 25% reordered each
# way, tests/eth/linkem.py; neighbour discovery crosses the same link): echo transfers arrive intact,
# every byte hashed, and loss recovery shows in the counters. Then the IPv6 peer vanishes (blackhole):
# a busy and an idle connection are timed out and freed (user_timeout, keepalive).
# timeout: 120
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
SIZE=${ETH_FAULT_SIZE:-1000000}
peer() { eth_ns "$PY3" tests/eth/tcp_peer.py "$@"; }
metric() { gw_metric "$ETH_STATS" "ibgw_$1{worker=\"0\"}"; }

eth_setup_impaired --loss 0.05 --dup 0.01 --delay 0.02 --reorder 0.25
eth_peer_v6
routes="address6 = $ETH_GW_IP6/64
$(echo 'echo tcp:7 echo' | gw_routes)"
eth_gw_start "$tmp/ibgw.conf" "$routes"

head -c "$SIZE" /dev/urandom >"$tmp/in"
want=$(sha256sum <"$tmp/in" | cut -d' ' -f1)
t0=$(date +%s)
eth_ns timeout 60 nc -N "$ETH_GW_IP6" 7 <"$tmp/in" | sha256sum | cut -d' ' -f1 >"$tmp/got"
[ "$(cat "$tmp/got")" = "$want" ] || fail "echo over IPv6 over the bad link: data differs"
ok "echo over IPv6: $SIZE bytes each way intact over the bad link ($(($(date +%s) - t0)) s)"
out=$(peer conc "$ETH_GW_IP6" 7 20 50000) || fail "20 concurrent IPv6 connections over the bad link: $out"
ok "20 concurrent IPv6 echo connections intact"
rexmit=$(metric tcp_retransmits_total) fast=$(metric tcp_fast_retransmits_total)
ooo=$(metric tcp_out_of_order_segments_total) rto=$(metric tcp_rto_expiries_total)
echo "retransmits $rexmit, fast retransmits $fast, RTO expiries $rto, out-of-order segments $ooo," \
	"IPv6 neighbour solicitations sent $(gw_metric "$ETH_STATS" 'ibgw_nd_solicitations_total{worker="0",dir="out"}')"
[ "$rexmit" -gt 0 ] && [ "$fast" -gt 0 ] && [ "$ooo" -gt 0 ] || fail "loss recovery counters did not move"
ok "loss recovery seen in the counters"
gw_stop || fail "ibgwd exited with $?"
ok "clean shutdown after the transfers"

# the peer vanishes: one connection with data outstanding, one idle
eth_gw_start "$tmp/ibgw.conf" "user_timeout = 4s
keepalive = 2s
keepalive_interval = 500ms
keepalive_probes = 3
$routes"
kill -USR2 "$ETH_LINKEM" # clean link while they open
eth_bg "$PY3" tests/eth/tcp_peer.py hold "$ETH_GW_IP6" 7 1 60 >/dev/null
eth_bg "$PY3" -c "
import socket, time
s = socket.create_connection(('$ETH_GW_IP6', 7))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.send(b'z' * 20000)   # the echo cannot all come back: ibgwd keeps data in flight
time.sleep(60)"
sleep 1.5
[ "$(metric tcp_connections_active)" = 2 ] || fail "expected 2 active connections, have $(metric tcp_connections_active)"
to0=$(metric tcp_connections_timed_out_total)
kill -USR1 "$ETH_LINKEM" # blackhole
for i in $(seq 100); do
	[ "$(metric tcp_connections_active)" = 0 ] && break
	sleep 0.2
done
[ "$(metric tcp_connections_active)" = 0 ] || fail "vanished peers not timed out: $(metric tcp_connections_active) still active"
to1=$(metric tcp_connections_timed_out_total)
[ $((to1 - to0)) -ge 2 ] || fail "tcp_connections_timed_out_total moved by $((to1 - to0)), expected 2"
[ "$(gw_metric "$ETH_STATS" 'ibgw_worker_sessions_active{worker="0"}')" = 0 ] || fail "sessions left"
ok "a busy and an idle IPv6 connection to a vanished peer were timed out and freed ($(metric tcp_keepalive_probes_total) keepalive probes)"
gw_stop || fail "ibgwd exited with $?"
ok "clean shutdown"
