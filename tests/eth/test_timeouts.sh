#!/usr/bin/env bash
# Session limits on the Ethernet side, each provoked by a real kernel TCP peer (tests/eth/timeout_peer.py)
# in exactly the state it is about, and counted by reason in ibgw_route_sessions_ended_total:
#   idle_timeout        a client that stops sending and has nothing to receive;
#   zero_window_timeout a client that never reads (tiny SO_RCVBUF) while the echo has bytes for it: its
#                       kernel keeps answering our window probes with a zero window;
#   half_closed_timeout (1) the client half-closes and the server behind a tcp->tcp route stays silent:
#                       CLOSE_WAIT towards the client, FIN_WAIT_2 towards the server; (2) the server
#                       answers and closes, the client never closes: FIN_WAIT_2 towards the client;
# and a slow reader (16 KiB every 0.1 s) under a short stall limit is NOT cut: its bytes come
# back intact; nor a slow reader (8 KiB every 0.1 s) of an answer whose server closed, under a short
# half-closed limit (its last bytes still go out). The defaults are what the README says (checked through --config-reference).
# Fails before the limits existed: the keys were unknown (config rejected) and nothing ended these
# sessions (the peers wait for a reset that never came).
# timeout: 180
# concurrent: mostly waits (idle, stall and half-closed timeouts), little CPU
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
peer() { eth_ns "$PY3" tests/eth/timeout_peer.py "$@"; }
ended() { gw_metric "$ETH_STATS" "ibgw_route_sessions_ended_total{route=\"$1\",reason=\"$2\"}"; }

# the defaults a user gets: the README's reference is generated from the same table (test_cli)
ref=$("$IBGWD" --config-reference)
for kv in idle_timeout=5m stall_timeout=2m half_closed_timeout=60s; do
	echo "$ref" | grep -q "^| \`${kv%=*}\` | duration | 0..86400000 ms | ${kv#*=} |" ||
		fail "default of ${kv%=*} is not ${kv#*=}: $(echo "$ref" | grep "${kv%=*}")"
done
ok "defaults: idle_timeout 5m, stall_timeout 2m, half_closed_timeout 60s"

# Each route shortens the one limit it tests to 2 s so that the test takes seconds, not minutes;
# the others keep their defaults (minutes), so only the limit under test can end the session. The
# slow reader's is 4 s: a reader that takes 16 KiB every 0.1 s must outlive it even on a loaded host.
routes=$(gw_routes <<EOF
idle	tcp:7001	echo	idle_timeout=2s
zerowin	tcp:7002	echo	stall_timeout=2s
slow	tcp:7003	echo	stall_timeout=4s
halfcl	tcp:7004	tcp:$ETH_PEER_IP:5004	half_closed_timeout=2s
finwait	tcp:7005	tcp:$ETH_PEER_IP:5005	half_closed_timeout=2s
download	tcp:7006	tcp:$ETH_PEER_IP:5006	half_closed_timeout=2s
EOF
)
eth_setup
eth_gw_start "$tmp/ibgw.conf" "$routes"
"$IBGWD" -t -c "$tmp/ibgw.conf" >/dev/null || fail "ibgwd -t rejects the config"
eth_bg "$PY3" tests/eth/timeout_peer.py silent-server 5004 >"$tmp/srv1"
eth_bg "$PY3" tests/eth/timeout_peer.py answer-close-server 5005 >"$tmp/srv2"
eth_bg "$PY3" tests/eth/timeout_peer.py bulk-close-server 5006 400000 >"$tmp/srv3"
eth_wait_listen 5004
eth_wait_listen 5005
eth_wait_listen 5006

out=$(peer idle "$ETH_GW_IP" 7001) || fail "idle: $out"
[ "$(ended idle idle_timeout)" = 1 ] || fail "idle: ended_total{reason=idle_timeout} is $(ended idle idle_timeout)"
secs=$(echo "$out" | sed -n 's/^ok reset after \([0-9.]*\) s.*/\1/p')
awk -v s="$secs" 'BEGIN { exit !(s >= 1.8) }' || fail "idle: reset after $secs s, before the 2 s limit"
ok "idle client reset by idle_timeout ($out), counted"

zw0=$(gw_metric "$ETH_STATS" 'ibgw_tcp_zero_window_total{worker="0",dir="received"}')
out=$(peer zerowin "$ETH_GW_IP" 7002) || fail "zero window: $out"
zw1=$(gw_metric "$ETH_STATS" 'ibgw_tcp_zero_window_total{worker="0",dir="received"}')
[ "$(ended zerowin zero_window_timeout)" = 1 ] ||
	fail "zero window: ended_total{reason=zero_window_timeout} is $(ended zerowin zero_window_timeout)"
# (the peer's window may shut at a few bytes short of zero, below one segment: the same stall)
ok "client that never reads reset by stall_timeout ($out), counted as zero_window_timeout; zero windows seen: $((zw1 - zw0))"

out=$(peer slow "$ETH_GW_IP" 7003 1000000 --wait 120) || fail "slow reader: $out"
[ "$(ended slow ok)" = 1 ] && [ "$(ended slow zero_window_timeout)" = 0 ] ||
	fail "slow reader: ended ok $(ended slow ok), zero_window_timeout $(ended slow zero_window_timeout)"
bp=$(gw_metric "$ETH_STATS" 'ibgw_route_backpressure_seconds_total{route="slow",dir="eth_to_diag"}')
# it outlived the limit: longer in all than 4 s, and held back meanwhile (with lending, the echo's
# bytes wait in the TCP send queue by reference and the direction counts as blocked only for the ticks
# in which the reader took nothing, so the backpressure time is that share, not the whole)
secs=$(echo "$out" | sed -n 's/^ok [0-9]* bytes back intact in \([0-9.]*\) s$/\1/p')
awk -v s="$secs" -v b="$bp" 'BEGIN { exit !(s > 4 && b > 0) }' ||
	fail "slow reader: took ${secs:-?} s (expected more than the 4 s limit), blocked $bp s"
ok "slow reader under a 4 s stall limit not cut though it took $secs s, blocked $bp s in all ($out)"

out=$(peer halfclose "$ETH_GW_IP" 7004) || fail "half-closed client: $out"
[ "$(ended halfcl half_closed_timeout)" = 1 ] ||
	fail "half-closed client: ended_total{reason=half_closed_timeout} is $(ended halfcl half_closed_timeout)"
ok "client half-closed, server silent: reset by half_closed_timeout ($out), counted"

out=$(peer finwait "$ETH_GW_IP" 7005) || fail "FIN_WAIT_2: $out"
[ "$(ended finwait half_closed_timeout)" = 1 ] ||
	fail "FIN_WAIT_2: ended_total{reason=half_closed_timeout} is $(ended finwait half_closed_timeout)"
ok "server closed, client silent in CLOSE_WAIT (FIN_WAIT_2 here): reset by half_closed_timeout ($out)"

# the server sends 400 kB and closes; the client reads 8 KiB every 0.1 s (5 s in all): the server's end
# passes on once its last bytes are in the client's send queue, more than 2 s of reading before the
# client has them all: those bytes going out are progress, the half-closed clock waits for them
out=$(peer download "$ETH_GW_IP" 7006 400000) || fail "slow reader of a closed server's answer: $out"
[ "$(ended download ok)" = 1 ] && [ "$(ended download half_closed_timeout)" = 0 ] ||
	fail "slow download: ended ok $(ended download ok), half_closed_timeout $(ended download half_closed_timeout)"
ok "slow reader of an answer whose server closed, under a 2 s half-closed limit: not cut ($out)"

for r in idle zerowin slow halfcl finwait download; do
	[ "$(gw_metric "$ETH_STATS" "ibgw_route_sessions_active{route=\"$r\"}")" = 0 ] || fail "route $r still has sessions"
done
[ "$(gw_metric "$ETH_STATS" 'ibgw_tcp_buffer_bytes{worker="0"}')" = 0 ] || fail "TCP buffers still held"
ok "no session or buffer left"
gw_stop || fail "ibgwd exited with $? (sanitizer report or shutdown error)"
ok "clean shutdown"
