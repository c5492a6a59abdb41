#!/usr/bin/env bash
# TCP over IPv6 through ibgwd's own engine (#16), compared byte for byte: with [eth] address6, the same
# tcp: listeners take connections on the IPv4 address, on address6 and on the link-local address (one
# dual-stack listener). 30 MB each way through the echo route over IPv6, 2 MB over the link-local
# address and over IPv4 at the same time, 300 concurrent verified IPv6 connections, half-close and a
# client reset over IPv6; the peer's kernel resolves ibgwd by neighbour discovery and ibgwd the peer
# (its IPv6 neighbour cache). ASan build: any sanitizer report fails the shutdown.
# timeout: 90
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
SIZE=${ETH_BIG_SIZE:-30M}
peer() { eth_ns "$PY3" tests/eth/tcp_peer.py "$@"; }
m() { gw_metric "$ETH_STATS" "ibgw_$1"; }
w='{worker="0"}'

eth_setup
eth_peer_v6
eth_gw_start "$tmp/ibgw.conf" "address6 = $ETH_GW_IP6/64
$(gw_routes <<EOF
echo	tcp:7		echo			max_sessions=1024
discard	tcp:9		discard
EOF
)"

head -c "$SIZE" /dev/urandom >"$tmp/in"
want=$(sha256sum <"$tmp/in" | cut -d' ' -f1)
t0=$(date +%s.%N)
eth_ns timeout 60 nc -N "$ETH_GW_IP6" 7 <"$tmp/in" | sha256sum | cut -d' ' -f1 >"$tmp/got" || fail "echo over IPv6 failed"
[ "$(cat "$tmp/got")" = "$want" ] || fail "echo over IPv6: $SIZE came back different"
ok "echo over IPv6: $SIZE each way, sha256 equal ($(echo "$(date +%s.%N) - $t0" | bc | cut -c1-5) s)"

gw_mac=$ETH_GW_MAC
ll=$("$PY3" -c "
m = [int(x, 16) for x in '$gw_mac'.split(':')]
m[0] ^= 2
e = m[:3] + [0xff, 0xfe] + m[3:]
print('fe80::' + ':'.join('%x' % (e[i] << 8 | e[i + 1]) for i in range(0, 8, 2)))")
head -c 2M "$tmp/in" >"$tmp/small"
want2=$(sha256sum <"$tmp/small" | cut -d' ' -f1)
eth_ns timeout 30 nc -N "$ll%$ETH_PEER" 7 <"$tmp/small" | sha256sum | cut -d' ' -f1 >"$tmp/got6ll" &
p1=$!
eth_ns timeout 30 nc -N "$ETH_GW_IP" 7 <"$tmp/small" | sha256sum | cut -d' ' -f1 >"$tmp/got4" &
p2=$!
wait $p1 $p2
[ "$(cat "$tmp/got6ll")" = "$want2" ] || fail "echo over the link-local address $ll: data differs"
[ "$(cat "$tmp/got4")" = "$want2" ] || fail "echo over IPv4 beside it: data differs"
ok "the same listener at the same time: 2 MB over the link-local $ll and over IPv4, sha256 equal"
rm -f "$tmp/in"

out=$(peer conc "$ETH_GW_IP6" 7 300 20000) || fail "300 concurrent IPv6 connections: $out"
ok "300 concurrent echo connections over IPv6, each verified"
out=$(peer hc-client "$ETH_GW_IP6" 7 3000000) || fail "client half-close over IPv6: $out"
ok "half-close by the client over IPv6: the echo still flows back to EOF"
rst0=$(m "tcp_rsts_in_total$w")
out=$(peer rst-client "$ETH_GW_IP6" 7) || fail "client reset over IPv6: $out"
sleep 0.3
[ "$(m "tcp_rsts_in_total$w")" -gt "$rst0" ] || fail "a client's RST over IPv6 was not counted"
ok "reset from the client over IPv6 counted"
# a closed port answers with a reset (the kernel's connect fails at once, not after a timeout)
eth_ns timeout 5 "$PY3" -c "
import socket, sys
try:
    socket.create_connection(('$ETH_GW_IP6', 4242), timeout=3)
except ConnectionRefusedError:
    sys.exit(0)
sys.exit(1)" || fail "a connection to a closed port over IPv6 was not refused"
ok "closed port over IPv6: connection refused (RST)"

sleep 0.5
[ "$(m "tcp_connections_active$w")" = 0 ] || fail "$(m "tcp_connections_active$w") connections still active"
[ "$(m "worker_sessions_active$w")" = 0 ] || fail "sessions still active"
ok "no connection or session left over"
echo "IPv6 neighbour cache: $(m "nd_entries$w") entries, solicitations sent $(m 'nd_solicitations_total{worker="0",dir="out"}'), refused TCP $(m "ip6_tcp_refused_total$w"), unresolved drops $(m "nd_unresolved_drops_total$w")"
[ "$(m "nd_entries$w")" -ge 1 ] || fail "no IPv6 neighbour entry"
[ "$(m "nd_unresolved_drops_total$w")" = 0 ] || fail "packets dropped waiting for the peer's address"
[ "$(m "tcp_checksum_errors_total$w")" = 0 ] && [ "$(m "tcp_header_errors_total$w")" = 0 ] ||
	fail "checksum or header errors on a clean link"
ok "counters: the peer in the IPv6 neighbour cache, no unresolved drop, no checksum or header error"
gw_stop || fail "ibgwd exited with $?"
ok "clean shutdown"
