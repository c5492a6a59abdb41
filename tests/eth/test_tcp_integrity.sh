#!/usr/bin/env bash
# TCP through ibgwd's own engine, compared byte for byte: 200 MB each way through the echo route and
# through the TCP relay to a kernel server, 1,000 concurrent verified connections, half-close in both
# directions, and resets from either side. ASan build: any sanitizer report fails the shutdown.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
SIZE=${ETH_BIG_SIZE:-200M}
peer() { eth_ns "$PY3" tests/eth/tcp_peer.py "$@"; }

eth_setup
ETH_MAX_SESSIONS=4096 eth_gw_start "$tmp/ibgw.conf" "$(gw_routes <<EOF
echo	tcp:7		echo			max_sessions=2048
discard	tcp:9		discard
relay	tcp:8000	tcp:$ETH_PEER_IP:5001	max_sessions=64
hc	tcp:8001	tcp:$ETH_PEER_IP:5002
rst	tcp:8002	tcp:$ETH_PEER_IP:5003
EOF
)"

head -c "$SIZE" /dev/urandom >"$tmp/in"
want=$(sha256sum <"$tmp/in" | cut -d' ' -f1)

eth_xfer "$ETH_GW_IP" 7 120 "echo: $SIZE each way"

eth_bg socat -t 30 TCP-LISTEN:5001,reuseaddr,fork EXEC:cat
eth_wait_listen 5001
eth_xfer "$ETH_GW_IP" 8000 120 "relay to a kernel server: $SIZE each way"
size=$(stat -c %s "$tmp/in")
rm -f "$tmp/in"

out=$(peer conc "$ETH_GW_IP" 7 1000 20000) || fail "1000 concurrent connections: $out"
ok "1000 concurrent echo connections, each verified"

out=$(peer hc-client "$ETH_GW_IP" 7 3000000) || fail "client half-close: $out"
ok "half-close by the client: the echo still flows back to EOF"
eth_bg "$PY3" tests/eth/tcp_peer.py hc-server-listen 5002 3000000 "$tmp/hc"
eth_wait_listen 5002
out=$(peer hc-server-client "$ETH_GW_IP" 8001 3000000) || fail "server half-close: $out"
wait "$ETH_BG_PID"
[ "$(cat "$tmp/hc")" = "$out" ] || fail "server half-close: the server got '$(cat "$tmp/hc")', expected '$out'"
ok "half-close by the server: its EOF crossed the relay, the client's data still reached it"

rst0=$(gw_metric "$ETH_STATS" 'ibgw_tcp_rsts_in_total{worker="0"}')
out=$(peer rst-client "$ETH_GW_IP" 7) || fail "client reset: $out"
sleep 0.3
rst1=$(gw_metric "$ETH_STATS" 'ibgw_tcp_rsts_in_total{worker="0"}')
[ "$rst1" -gt "$rst0" ] || fail "a client's RST was not counted"
ok "reset from the client counted"
eth_bg "$PY3" tests/eth/tcp_peer.py rst-server-listen 5003
eth_wait_listen 5003
out=$(peer expect-reset "$ETH_GW_IP" 8002) || fail "server reset through the relay: $out"
ok "reset from the server reached the client through the relay"

eth_nothing_left 1
m() { gw_metric "$ETH_STATS" "ibgw_$1"; }
w='{worker="0"}'
bin=$(m "tcp_bytes_in_total$w") bout=$(m "tcp_bytes_out_total$w")
sin=$(m "tcp_segments_in_total$w") sout=$(m "tcp_segments_out_total$w")
pas=$(m 'tcp_connections_opened_total{worker="0",dir="passive"}') act=$(m 'tcp_connections_opened_total{worker="0",dir="active"}')
closed=$(m "tcp_connections_closed_total$w") failed=$(m "tcp_connect_failures_total$w")
echo "bytes in $bin out $bout, segments in $sin out $sout, opened passive $pas active $act, closed $closed"
# echo: SIZE in and out; relay: SIZE from the client and SIZE back from the server, each both ways
[ "$bin" -ge $((3 * size)) ] && [ "$bout" -ge $((3 * size)) ] || fail "byte counters below 3 x $size"
[ "$sin" -ge $((3 * size / 1460)) ] && [ "$sout" -ge $((3 * size / 1460)) ] || fail "segment counters too low"
[ "$pas" -ge 1006 ] && [ "$act" -ge 3 ] || fail "opened: $pas passive (>= 1006), $act active (>= 3)"
[ "$closed" = $((pas + act - failed)) ] || fail "closed $closed != opened $((pas + act)) - failed $failed"
ok "counters: bytes and segments both ways, every opened connection counted closed"
gw_stop || fail "ibgwd exited with $?"
ok "clean shutdown"
