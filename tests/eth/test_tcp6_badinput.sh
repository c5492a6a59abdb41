#!/usr/bin/env bash
# Crafted bad input over IPv6 (tests/eth/badinput6.py, scapy in the peer namespace): bad TCP checksums,
# extension-header chains before TCP (good ones skipped, bad ones dropped), malformed options, closed
# ports, TCP to a multicast group of ours and from an IPv4-mapped source, RSTs and SYNs on an
# established connection's tuple (RFC 5961), a SYN flood past syn_backlog answered with SYN cookies and
# a cookie handshake validated. Each attack must move exactly the counters it should; the established
# connection's data must all come back (sha256); the ASan ibgwd must not crash and must shut down cleanly.
# timeout: 90
# concurrent: mostly waits (scapy's crafted segments, timers), little CPU
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
BACKLOG=16

eth_setup
eth_peer_v6
eth_gw_start "$tmp/ibgw.conf" "syn_backlog = $BACKLOG
address6 = $ETH_GW_IP6/64
$(echo 'echo tcp:7 echo' | gw_routes)"
eth_ns "$PY3" tests/eth/badinput6.py "$ETH_PEER" "$ETH_GW_IP6" "$ETH_PEER_IP6" "$(cat "/sys/class/net/$ETH_IF/address")" \
	"http://127.0.0.1:$ETH_STATS/metrics" "/proc/$$/ns/net" "$BACKLOG"
eth_survived $? "$ETH_GW_IP6"
gw_stop || fail "ibgwd exited with $? (sanitizer report or shutdown error)"
ok "clean shutdown (ASan: no error, no leak)"
