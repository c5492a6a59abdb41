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

eth_setup_impaired --loss 0.05 --dup 0.01 --delay 0.02 --reorder 0.25
eth_peer_v6
routes="address6 = $ETH_GW_IP6/64
$(echo 'echo tcp:7 echo' | gw_routes)"
eth_gw_start "$tmp/ibgw.conf" "$routes"

head -c "$SIZE" /dev/urandom >"$tmp/in"
want=$(sha256sum <"$tmp/in" | cut -d' ' -f1)
eth_xfer "$ETH_GW_IP6" 7 60 "echo over IPv6: $SIZE bytes each way over the bad link"
out=$(peer conc "$ETH_GW_IP6" 7 20 50000) || fail "20 concurrent IPv6 connections over the bad link: $out"
ok "20 concurrent IPv6 echo connections intact"
eth_loss_recovered "IPv6 neighbour solicitations sent $(gw_metric "$ETH_STATS" 'ibgw_nd_solicitations_total{worker="0",dir="out"}')"
gw_stop || fail "ibgwd exited with $?"
ok "clean shutdown after the transfers"

# the peer vanishes: one connection with data outstanding, one idle
eth_vanish "$ETH_GW_IP6" "$routes" "a busy and an idle IPv6 connection"
