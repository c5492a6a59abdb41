#!/usr/bin/env bash
# TCP through ibgwd over a bad link (5% loss, 1% duplication, 20 ms delay, 25% reordered, each way;
# tests/eth/linkem.py since this kernel has no netem): echo and relay transfers still arrive intact.
# Then the peer vanishes (blackhole): a busy and an idle connection are timed out and freed
# (user_timeout, keepalive). The access log reports the connections' retransmits and RTT.
#
# The transfers run with the default timeouts and only a second ibgwd has the short ones: on this
# link a round trip fails 1 time in 10 (0.95^2 gets through), and with user_timeout 4s a connection
# whose first 3-4 retransmissions in a row got no answer (200 ms RTO doubling: sent at +0, +0.4,
# +1.2, +2.8 s, given up at +6 s) was dropped though nothing was wrong with it (seen in a frame
# log: a retransmission's ACK lost, the next retransmission lost, twice).
# timeout: 240
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
SIZE=${ETH_FAULT_SIZE:-1000000}
peer() { eth_ns "$PY3" tests/eth/tcp_peer.py "$@"; }

routes=$(gw_routes <<EOF
echo	tcp:7		echo
relay	tcp:8000	tcp:$ETH_PEER_IP:5001
EOF
)
eth_setup_impaired --loss 0.05 --dup 0.01 --delay 0.02 --reorder 0.25
ETH_GW_EXTRA="access_log = $tmp/access.log" eth_gw_start "$tmp/ibgw.conf" "$routes"
eth_bg socat -t 30 TCP-LISTEN:5001,reuseaddr,fork EXEC:cat
eth_wait_listen 5001

head -c "$SIZE" /dev/urandom >"$tmp/in"
want=$(sha256sum <"$tmp/in" | cut -d' ' -f1)
eth_xfer "$ETH_GW_IP" 7 100 "echo: $SIZE bytes each way over the bad link"
eth_xfer "$ETH_GW_IP" 8000 100 "relay: $SIZE bytes each way, both legs over the bad link"
out=$(peer conc "$ETH_GW_IP" 7 20 50000) || fail "20 concurrent connections over the bad link: $out"
ok "20 concurrent echo connections intact"

# the engine's retransmit count is compared with the access log's below: read it once every connection
# has closed (over this link a FIN or its ACK may still be retransmitted for a while)
for i in $(seq 100); do
	[ "$(eth_m0 tcp_connections_active)" = 0 ] && break
	sleep 0.1
done
eth_loss_recovered
# the access log's per-connection facts (read once ibgwd has exited and written every line): the
# transfers' connections retransmitted, no more than the engine did in all, and their smoothed RTT
# shows the link's delay (40 ms a round trip, less for the reordered segments, which skip it; a clean
# veth is ~0.1 ms)
gw_stop || fail "ibgwd exited with $?"
"$PY3" - "$tmp/access.log" "$rexmit" <<'EOF' || fail "access log: TCP retransmits and RTT"
import json, sys
lines = [json.loads(x) for x in open(sys.argv[1])]
ends = [e for o in lines for e in (o['client'], o['backend']) if e['side'] == 'tcp']
total = sum(e['retransmits'] for e in ends)
big = [o['client'] for o in lines if o['client_to_backend']['bytes'] >= 1000000]
print(f'access log: {len(lines)} sessions, {total} retransmits over their connections (engine: {sys.argv[2]}), '
      f'the 1 MB transfers\' client RTT {[e["srtt_us"] for e in big]} us')
assert len(lines) == 22, 'one line per session (2 transfers, 20 concurrent)'
assert 0 < total <= int(sys.argv[2])
assert len(big) == 2 and all(e['srtt_us'] >= 10000 for e in big)
EOF
ok "access log: retransmits counted per connection, RTT measured"

ok "clean shutdown after the transfers"

# the peer vanishes: one connection with data outstanding, one idle
eth_vanish "$ETH_GW_IP" "$routes" "a busy and an idle connection"
