#!/usr/bin/env bash
# A DPDK ibgwd (af_packet on a veth) answers ARP and ping from a kernel peer in a namespace, sends a
# gratuitous ARP at start, and counts what it saw. The issue-3 smoke test builds on this.
# timeout: 120
# concurrent: mostly waits (pings), little CPU
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init

eth_setup
eth_conf "$tmp/ibgw.conf"
eth_start_seeing "$tmp/ibgw.conf" ARP "p[ARP].op == 1 and p[ARP].psrc == '$ETH_GW_IP' and p[ARP].pdst == '$ETH_GW_IP'" \
	"gratuitous ARP"
ok "gratuitous ARP at start"

eth_ns ping -c 5 -i 0.2 -W 2 "$ETH_GW_IP" >"$tmp/ping" || { cat "$tmp/ping"; fail "ping $ETH_GW_IP failed"; }
grep -q ' 0% packet loss' "$tmp/ping" || { cat "$tmp/ping"; fail "ping lost packets"; }
ok "5 pings answered"
# a large ping (fills a whole 1500-byte frame)
eth_ns ping -c 2 -i 0.2 -W 2 -s 1472 -M do "$ETH_GW_IP" >/dev/null || fail "1500-byte ping failed"
ok "full-size ping answered"
eth_ns ip neigh show "$ETH_GW_IP" | grep -q lladdr || fail "the peer has no ARP entry for ibgwd"
ok "ARP resolved"

replies=$(gw_metric "$ETH_STATS" 'ibgw_icmp_echo_replies_total{worker="0"}')
arp_in=$(gw_metric "$ETH_STATS" 'ibgw_arp_in_total{worker="0"}')
[ "$replies" -ge 7 ] || fail "icmp_echo_replies_total is $replies, expected >= 7"
[ "$arp_in" -ge 1 ] || fail "arp_in_total is $arp_in"
ok "counters: $replies echo replies, $arp_in ARP in"

gw_stop || fail "ibgwd exited with $? (sanitizer report or shutdown error)"
ok "clean shutdown"
