#!/usr/bin/env bash
# Active opens over IPv6 (#16, the engine with the configuration's tcp:[v6]:port destinations): relays
# from an IPv6 client and from an IPv4 client to a kernel server at an IPv6 address in the peer
# namespace, so ibgwd's engine opens the IPv6 connections itself (a neighbour solicitation for the
# server first, unless its entry is known): 30 MB each way, sha256 equal; 60 concurrent relayed
# connections, each verified; a server that refuses (connection refused -> the client is closed);
# an unreachable off-link destination (no gateway6) fails at once. Then the relays again with two
# workers: each active open picks a local port whose flow hashes back to its own worker, so the
# server's segments, wherever the kernel's fanout puts them, are steered to it. ASan build.
# timeout: 90
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
peer() { eth_ns "$PY3" tests/eth/tcp_peer.py "$@"; }
m() { gw_metric "$ETH_STATS" "ibgw_$1"; }
w='{worker="0"}'
# the sum of NAME{worker="i",EXTRA} over workers 0..N-1
msum() { local i t=0; for ((i = 0; i < $1; i++)); do t=$((t + $(m "$2{worker=\"$i\"${3:-}}"))); done; echo $t; }

eth_setup
eth_peer_v6
eth_gw_start "$tmp/ibgw.conf" "address6 = $ETH_GW_IP6/64
$(gw_routes <<EOF
relay6	tcp:8000	tcp:[$ETH_PEER_IP6]:5001	max_sessions=128
refused	tcp:8001	tcp:[$ETH_PEER_IP6]:5999
offlink	tcp:8002	tcp:[2001:db8:99::1]:80
EOF
)"
eth_bg socat -t 30 TCP6-LISTEN:5001,reuseaddr,fork,backlog=256 EXEC:cat
eth_wait_listen 5001

head -c 30M /dev/urandom >"$tmp/in"
want=$(sha256sum <"$tmp/in" | cut -d' ' -f1)
for dst in "$ETH_GW_IP6" "$ETH_GW_IP"; do
	eth_xfer "$dst" 8000 60 "relay from a client of $dst to the kernel server at [$ETH_PEER_IP6]:5001: 30 MB each way"
done
out=$(peer conc "$ETH_GW_IP6" 8000 60 20000) || fail "60 concurrent relayed connections: $out"
ok "60 concurrent connections relayed to the IPv6 server, each verified"
act=$(m 'tcp_connections_opened_total{worker="0",dir="active"}')
[ "$act" -ge 62 ] || fail "only $act active opens counted"
ok "$act active opens over IPv6 counted"

f0=$(m "tcp_connect_failures_total$w")
# closed PORT: a client of [$ETH_GW_IP6]:PORT is closed (reset during the handshake or after it, or an
# orderly close: the client is told)
closed() {
	eth_ns timeout 10 "$PY3" -c "
import socket, sys
try:
    s = socket.create_connection(('$ETH_GW_IP6', $1), timeout=5)
    s.settimeout(5)
    sys.exit(0 if s.recv(1) == b'' else 1)
except ConnectionResetError:
    sys.exit(0)"
}
closed 8001 || fail "a refused IPv6 backend did not close the client"
closed 8002 || fail "an unreachable IPv6 backend did not close the client"
sleep 0.3
f1=$(m "tcp_connect_failures_total$w")
[ $((f1 - f0)) -ge 1 ] || fail "the refused connect was not counted as a failure"
ok "a refused IPv6 backend and an off-link one without gateway6 close the client"
eth_nothing_left 1
gw_stop || fail "ibgwd exited with $?"
ok "clean shutdown"

ETH_WORKERS=2 ETH_VDEV_EXTRA=",qpairs=2" eth_gw_start "$tmp/ibgw.conf" "address6 = $ETH_GW_IP6/64
$(echo "relay6 tcp:8000 tcp:[$ETH_PEER_IP6]:5001 max_sessions=128" | gw_routes)"
got=$(eth_sha "$ETH_GW_IP6" 8000)
[ "$got" = "$want" ] || fail "two workers: 30 MB came back different"
out=$(peer conc "$ETH_GW_IP6" 8000 100 20000) || fail "two workers: 100 concurrent relayed connections: $out"
for i in 0 1; do
	a=$(m "tcp_connections_opened_total{worker=\"$i\",dir=\"active\"}")
	echo "worker $i: $a active opens over IPv6, $(m "eth_steered_total{worker=\"$i\"}") frames steered"
	[ "$a" -gt 10 ] || fail "worker $i made only $a active opens"
done
f=$(msum 2 tcp_connect_failures_total)
[ "$f" = 0 ] || fail "$f connects failed with two workers"
ok "two workers: 30 MB and 100 concurrent connections relayed to the IPv6 server, active opens on both"
gw_stop || fail "ibgwd exited with $?"
ok "clean shutdown"
