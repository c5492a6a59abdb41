#!/usr/bin/env bash
# Path MTU discovery through a real kernel router (RFC 1191, RFC 8201). ibgwd's link has MTU 1500;
# behind the peer namespace, now a router, lies a far network whose link has MTU 1400, and its hosts
# announce an MSS of a 1500-byte link (route advmss: as a host behind a tunnel whose router does not
# clamp the MSS). ibgwd's full-size segments towards them cannot pass: the router drops each and
# answers with ICMP "fragmentation needed" / ICMPv6 "packet too big". Without path MTU discovery every
# such connection stalls until it times out (a black hole); with it, the segments shrink to 1400 and
# every byte arrives:
#   - a far client through ibgwd's echo service, over IPv4 and over IPv6 (passive opens), 8 MB each
#     way, sha256 equal;
#   - a relay whose destination is a far server (ibgwd's active open over the narrow path), IPv4 and
#     IPv6;
#   - the counters: messages taken, connections lowered;
#   - the same with two workers (messages steered to the worker owning the quoted connection).
# The router's ICMP rate limit (1 message per second and destination, a burst of 6) is Linux's default.
# ASan build. Addresses: 198.18.0.0/15 and 2001:db8::/32 only.
# timeout: 120
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
FAR_NS=ibgw-far-$$
RTR_IF=ibe$$r
FAR_IF=ibe$$f
RTR_FAR=198.18.2.1 FAR_IP=198.18.2.2
RTR_FAR6=2001:db8:0:2::1 FAR_IP6=2001:db8:0:2::2
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; eth_cleanup; ip netns del "$FAR_NS" 2>/dev/null; rm -rf "$tmp"' EXIT
far() { ip netns exec "$FAR_NS" "$@"; }
m() { gw_metric "$ETH_STATS" "ibgw_$1"; }

eth_setup
eth_peer_v6
# the router: forwarding between ibgwd's link and the far one (MTU 1400)
ip netns add "$FAR_NS" || fail "cannot create namespace $FAR_NS"
ip link add "$RTR_IF" netns "$ETH_NS" type veth peer name "$FAR_IF" netns "$FAR_NS" || fail "cannot create the far link"
eth_ns sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 "net.ipv6.conf.$RTR_IF.disable_ipv6=0"
eth_ns ip link set "$RTR_IF" mtu 1400 up
eth_ns ip addr add "$RTR_FAR/24" dev "$RTR_IF"
eth_ns ip -6 addr add "$RTR_FAR6/64" dev "$RTR_IF" nodad
far sysctl -qw "net.ipv6.conf.$FAR_IF.disable_ipv6=0"
far ip link set lo up
far ip link set "$FAR_IF" mtu 1400 up
far ip addr add "$FAR_IP/24" dev "$FAR_IF"
far ip -6 addr add "$FAR_IP6/64" dev "$FAR_IF" nodad
# the far host announces the MSS of a 1500-byte link (1460 / 1440) though its own is 1400
far ip route add 198.18.0.0/24 via "$RTR_FAR" advmss 1460
far ip -6 route add 2001:db8:0:1::/64 via "$RTR_FAR6" advmss 1440
for n in "$ETH_NS:$RTR_IF" "$FAR_NS:$FAR_IF"; do
	ip netns exec "${n%%:*}" ethtool -K "${n#*:}" tx off gso off tso off gro off >/dev/null 2>&1
done

eth_gw_start "$tmp/ibgw.conf" "address6 = $ETH_GW_IP6/64
gateway = $ETH_PEER_IP
gateway6 = $ETH_PEER_IP6
$(gw_routes <<EOF
echo	tcp:7		echo
relay	tcp:8000	tcp:$FAR_IP:5001
relay6	tcp:8006	tcp:[$FAR_IP6]:5001
EOF
)"
far ping -c 1 -W 5 "$ETH_GW_IP" >/dev/null || fail "the far host cannot reach ibgwd over IPv4"
far ping -6 -c 1 -W 5 "$ETH_GW_IP6" >/dev/null || fail "the far host cannot reach ibgwd over IPv6"
ip netns exec "$FAR_NS" socat -t 30 TCP6-LISTEN:5001,ipv6only=0,reuseaddr,fork,backlog=64 EXEC:cat &
pids+=($!)
ETH_FROM=far eth_wait_listen 5001

head -c 8M /dev/urandom >"$tmp/in"
want=$(sha256sum <"$tmp/in" | cut -d' ' -f1)
# FROM DST PORT WHAT: 8 MB each way from host FROM (far, or eth_ns: the router), sha256 equal within
# 60 s (a black hole, the path MTU not learnt, stalls it: "came back different")
xfer() { ETH_FROM=$1 eth_xfer "$2" "$3" 60 "$4: 8 MB each way"; }
xfer far "$ETH_GW_IP" 7 "IPv4 client behind the 1400-byte link, ibgwd's echo"
xfer far "$ETH_GW_IP6" 7 "IPv6 client behind the 1400-byte link, ibgwd's echo"
xfer eth_ns "$ETH_GW_IP" 8000 "relay to an IPv4 server behind the 1400-byte link (ibgwd's active open)"
xfer eth_ns "$ETH_GW_IP" 8006 "relay to an IPv6 server behind the 1400-byte link (ibgwd's active open)"

tb=$(m 'icmp_too_big_total{worker="0"}') ign=$(m 'icmp_too_big_ignored_total{worker="0"}')
low=$(m 'tcp_pmtu_lowered_total{worker="0"}') rx=$(m 'tcp_retransmits_total{worker="0"}')
echo "too-big messages $tb, ignored $ign, connections lowered $low, retransmits $rx"
[ "$low" -ge 4 ] || fail "only $low connections learnt the path MTU (4 crossed the narrow link)"
[ "$tb" -ge "$low" ] || fail "$tb messages for $low connections lowered"
ok "every connection over the narrow link learnt its path MTU ($low lowered by $tb messages, $ign ignored: the router's burst for segments already in flight)"
eth_nothing_left 1
gw_stop || fail "ibgwd exited with $?"
ok "clean shutdown"

# two workers: the kernel spreads frames over both queues by their addresses, so a router's message
# often reaches the worker that does not own the connection it quotes; it is steered to the owner
ETH_WORKERS=2 ETH_VDEV_EXTRA=",qpairs=2" eth_gw_start "$tmp/ibgw.conf" "address6 = $ETH_GW_IP6/64
gateway = $ETH_PEER_IP
gateway6 = $ETH_PEER_IP6
$(gw_routes <<EOF
echo	tcp:7		echo
relay	tcp:8000	tcp:$FAR_IP:5001
EOF
)"
for i in 1 2 3; do
	xfer far "$ETH_GW_IP" 7 "two workers, IPv4 client $i"
	xfer far "$ETH_GW_IP6" 7 "two workers, IPv6 client $i"
	xfer eth_ns "$ETH_GW_IP" 8000 "two workers, relay $i"
done
l0=$(m 'tcp_pmtu_lowered_total{worker="0"}') l1=$(m 'tcp_pmtu_lowered_total{worker="1"}')
echo "connections lowered: worker 0 $l0, worker 1 $l1"
[ $((l0 + l1)) -ge 9 ] || fail "two workers: only $((l0 + l1)) of 9 connections learnt the path MTU"
ok "two workers: all 9 connections learnt the path MTU, each on its own worker"
eth_nothing_left 2
gw_stop || fail "ibgwd exited with $?"
ok "clean shutdown"
