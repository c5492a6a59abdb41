#!/usr/bin/env bash
# ARP under abuse (scapy in the peer namespace, tests/eth/arp_flood.py):
#  1. bounded queues: SYNs from 155 spoofed on-link sources that never answer ARP make ibgwd queue
#     SYN-ACKs for neighbours that never resolve; the queue of one worker holds at most 256 packets
#     (ETH_ARP_QUEUE; before: 8 per neighbour x 256 neighbours), the oldest are dropped and counted,
#     and the port's packet buffers in use grow by no more than that;
#  2. a pinned gateway: the configured [eth] gateway (198.18.0.3, an address of the kernel peer) is
#     resolved at start; then its address is claimed for another MAC every way ARP allows, among
#     requests from 200 other spoofed sources: the claims are counted as errors, ignored, and traffic
#     to an off-link host still goes to the real gateway's MAC (before: the first gratuitous reply
#     re-pointed all off-link traffic at the spoofer).
# Fails before the fix: no arp_queue_drops_total (and ~1200 buffers held), and the off-link SYN went
# to the spoofed MAC.
# timeout: 150
# concurrent: mostly waits (a bounded ARP flood, entry timers), little CPU
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
flood() { eth_ns "$PY3" tests/eth/arp_flood.py "$@"; }
metric() { gw_metric "$ETH_STATS" "ibgw_$1{worker=\"0\"}"; }
GATEWAY=$ETH_PEER_IP2 OFFLINK=198.18.9.9 EVIL=02:66:66:66:66:66

routes=$(gw_routes <<EOF
echo	tcp:7		echo
out	tcp:8000	tcp:$OFFLINK:5000
EOF
)
eth_setup
eth_gw_start "$tmp/ibgw.conf" "gateway = $GATEWAY
$routes"
eth_ns ping -c 1 -W 2 "$ETH_GW_IP" >/dev/null || fail "ping $ETH_GW_IP failed"
GW_MAC=$(eth_ns ip neigh show "$ETH_GW_IP" | awk '{ print $5 }')
PEER_MAC=$(eth_ns cat "/sys/class/net/$ETH_PEER/address")
[ -n "$GW_MAC" ] || fail "no ARP entry for ibgwd in the peer"

# --- 1. bounded queues
mb0=$(gw_metric "$ETH_STATS" 'ibgw_port_mbufs_in_use{port="0"}')
flood synflood "$ETH_PEER" "$GW_MAC" "$ETH_GW_IP" 7 100 254 6 >"$tmp/syn" || fail "SYN flood failed"
q_max=0 mb_max=0
for i in $(seq 15); do # the unanswered entries live 3 s (3 requests, 1 s apart)
	curl -s "http://127.0.0.1:$ETH_STATS/metrics" >"$tmp/m"
	q=$(awk '$1 == "ibgw_arp_queued{worker=\"0\"}" { print $2 }' "$tmp/m")
	mb=$(awk '$1 == "ibgw_port_mbufs_in_use{port=\"0\"}" { print $2 }' "$tmp/m")
	[ "${q:-0}" -gt "$q_max" ] && q_max=$q
	[ "${mb:-0}" -gt "$mb_max" ] && mb_max=$mb
	sleep 0.2
done
drops=$(metric arp_queue_drops_total)
echo "    $(cat "$tmp/syn"); queued at most $q_max, $drops dropped from the full queue; mbufs in use $mb0 -> max $mb_max"
[ "$drops" -gt 0 ] || fail "no packet dropped from a full ARP queue (arp_queue_drops_total $drops)"
[ "$q_max" -gt 0 ] && [ "$q_max" -le 256 ] || fail "ARP queue held $q_max packets (bound 256)"
[ $((mb_max - mb0)) -le $((256 + 128)) ] || fail "packet buffers in use grew by $((mb_max - mb0)) (bound 256 queued + slack)"
ok "ARP queue bounded: at most $q_max of 256 queued, $drops oldest dropped and counted, buffers +$((mb_max - mb0))"
# SYN-ACK retransmissions queue again in waves (1, 2, 4, 8, 16 s apart) until the half-open
# connections are given up; between waves, once each wave's neighbours were given up, it is empty
for i in $(seq 600); do [ "$(metric arp_queued)" = 0 ] && break; sleep 0.1; done
[ "$(metric arp_queued)" = 0 ] || fail "ARP queue never empty again after the flood"
ok "queue empty again once the unanswered neighbours were given up"

# --- 2. the pinned gateway
# ibgwd asked for the gateway at start (the kernel peer answers for 198.18.0.3)
eth_ns ip neigh show "$GATEWAY" >/dev/null
err0=$(metric arp_errors_total)
flood spoof "$ETH_PEER" "$GW_MAC" "$ETH_GW_IP" "$GATEWAY" "$EVIL" >"$tmp/spoof" || fail "spoofing failed"
err1=$(metric arp_errors_total)
echo "    $(cat "$tmp/spoof"); arp_errors_total +$((err1 - err0)); neighbour entries $(metric arp_entries)"
# an off-link destination: the relay's connect goes out through the gateway; see to which MAC
eth_bg "$PY3" tests/eth/arp_flood.py sniff "$ETH_PEER" "$GW_MAC" "$OFFLINK" 20 >"$tmp/sniff"
sniffer=$ETH_BG_PID
sleep 2 # scapy needs a moment to open its socket
eth_ns "$PY3" -c "
import socket
s = socket.create_connection(('$ETH_GW_IP', 8000), timeout=5)
s.sendall(b'x')
import time; time.sleep(2)" 2>/dev/null
wait "$sniffer"
to=$(cat "$tmp/sniff")
[ "$to" = "$PEER_MAC" ] || fail "traffic to the off-link $OFFLINK went to $to, not the gateway's $PEER_MAC (spoofer $EVIL)"
[ $((err1 - err0)) -ge 60 ] || fail "claims on the gateway's address not counted (arp_errors_total +$((err1 - err0)), expected >= 60)"
ok "spoofed claims on the gateway ignored (+$((err1 - err0)) counted); off-link traffic still to the real gateway $to"

kill -0 "$GW_PID" 2>/dev/null || fail "ibgwd died"
gw_stop || fail "ibgwd exited with $? (sanitizer report or shutdown error)"
ok "clean shutdown"
