#!/usr/bin/env bash
# Crafted bad input (tests/eth/badinput.py, scapy in the peer namespace): bad IPv4 and TCP checksums,
# truncated, oversized and inconsistent headers, malformed TCP options, segments to closed ports,
# ARP garbage, IPv4 fragments (reassembled by the kernel under the af_packet PMD: see badinput.py),
# out-of-window and blind RST/SYN/ACK/data on an established connection
# (RFC 5961 challenge ACKs, PAWS, their rate limits), a SYN flood beyond the backlog (answered with SYN
# cookies; cookie handshakes, good and forged, on the wire). Each attack must move exactly the
# counters it should; an established connection carries data between the attacks and everything it
# sent must come back intact (sha256); the ASan ibgwd must not crash and must shut down cleanly.
# timeout: 180
# concurrent: mostly waits (scapy's crafted segments, timers), little CPU
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
BACKLOG=16

eth_setup
eth_gw_start "$tmp/ibgw.conf" "syn_backlog = $BACKLOG
$(echo 'echo tcp:7 echo' | gw_routes)"
eth_ns "$PY3" tests/eth/badinput.py "$ETH_PEER" "$ETH_GW_IP" "$ETH_PEER_IP" "$ETH_PEER_IP2" \
	"http://127.0.0.1:$ETH_STATS/metrics" "/proc/$$/ns/net" "$BACKLOG"
eth_survived $? "$ETH_GW_IP"
gw_stop || fail "ibgwd exited with $? (sanitizer report or shutdown error)"
ok "clean shutdown (ASan: no error, no leak)"
