#!/usr/bin/env bash
# The exception path ([eth] kernel_tap): ibgwd gives the kernel of its host a TAP with the port's MAC.
# A gateway host (namespace) runs ibgwd on af_packet into a LAN where a client lives; the TAP carries
# the gateway's address too, as an operator would configure it. Checks: ibgwd still answers ping and
# serves its own TCP listener (the kernel never answers for it); a kernel TCP server on the TAP is
# reached through ibgwd (sha256 of 1 MB); an address added to the TAP is announced (gratuitous ARP)
# and served by ibgwd's listener; once removed, a session in flight on it finishes intact and new
# connections to it fail, also when it was removed while ibgwd's netlink notifications overflowed;
# the rtnetlink socket ibgwd keeps cannot configure the network; a SYN flood at a kernel port is cut to
# kernel_tap_rate (counted), while
# ibgwd's own listener keeps answering, and a flood at ibgwd's listener never reaches the kernel.
# Then with removed_addr_reset = 1: the session in flight on a removed address is reset.
# timeout: 150
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/ha/lib.sh
ha_init

ha_gw_add 1
GW=$(ha_ip 1)
# kernel_tap_rate lowered from its default (20000/s) to 1000/s: the flood a Python packet socket makes
# here (a few thousand SYNs per second) must exceed it
HA_ETH_EXTRA="kernel_tap_rate = 1000" ha_gw_conf 1 "$tmp/g1.conf" "$(gw_routes <<R
echo tcp:7 echo
R
)"
ha_gw_start 1 "$tmp/g1.conf"

ha_c ping -c 3 -i 0.2 -W 2 "$GW" >"$tmp/ping" || { cat "$tmp/ping"; fail "ping $GW failed"; }
grep -q '3 received' "$tmp/ping" && ! grep -q duplicates "$tmp/ping" || { cat "$tmp/ping"; fail "ping: lost or duplicated replies"; }
ok "ping answered by ibgwd alone (3 replies, no duplicates)"

# the kernel gets a copy of every ARP frame: it must answer on the TAP for the TAP's own addresses
# only, not for the host's others (here one on the gateway's loopback), which would tell the link the
# gateway's MAC for them
# (twice: with the arp_ignore = 1 ibgwd sets on the TAP, and with the kernel's default 0, as under
# systemd's ProtectKernelTunables, where the write fails: ibgwd then passes the kernel no request for
# an address the TAP does not hold)
[ "$(ha_g 1 cat "/proc/sys/net/ipv4/conf/$HA_TAP/arp_ignore")" = 1 ] || fail "arp_ignore on the TAP is not 1"
ha_g 1 ip addr add 198.19.9.9/32 dev lo
ha_c ip route add 198.19.9.9/32 dev br0
for v in 1 0; do
	ha_g 1 sh -c "echo $v >/proc/sys/net/ipv4/conf/$HA_TAP/arp_ignore"
	ha_c ip neigh flush dev br0 to 198.19.9.9
	ha_c ping -c 2 -i 0.3 -W 1 198.19.9.9 >/dev/null 2>&1
	n=$(ha_c ip neigh show 198.19.9.9 | grep -c lladdr)
	[ "$n" = 0 ] || fail "the kernel answered ARP on the TAP for the host's loopback address 198.19.9.9 (arp_ignore $v)"
done
ha_c ip route del 198.19.9.9/32 dev br0
ha_g 1 ip addr del 198.19.9.9/32 dev lo
ok "an ARP request for another address of the host (198.19.9.9 on its loopback): unanswered, with arp_ignore 1 on the TAP and with 0"

# broadcast to the kernel: our network's only; another network's x.x.x.255 sent to our MAC is a
# unicast address elsewhere, not for the kernel to route (ip_not_for_us)
GW_MAC=$(ha_c ip neigh show "$GW" | awk '{ print $5 }')
bcast=$(awk -v ip="$GW" 'BEGIN { split(ip, o, "."); printf "%d.%d.%d.255", o[1], o[2], o[3] }')
udp_to() { # DST: 20 UDP datagrams to ibgwd's MAC; prints the kernel's share of them
	local k0 k1
	k0=$(ha_metric 1 'ibgw_exception_frames_total{worker="0",dir="to_kernel"}')
	ha_c "$PY3" - "$GW_MAC" "$1" <<'EOF' 2>/dev/null || fail "scapy: cannot send to $1"
import sys
from scapy.all import Ether, IP, UDP, sendp, get_if_hwaddr
sendp(Ether(src=get_if_hwaddr('br0'), dst=sys.argv[1]) / IP(dst=sys.argv[2]) / UDP(dport=9999) / b'x',
      iface='br0', count=20, verbose=False)
EOF
	sleep 0.5
	k1=$(ha_metric 1 'ibgw_exception_frames_total{worker="0",dir="to_kernel"}')
	echo $((k1 - k0))
}
nf0=$(ha_metric 1 'ibgw_ip_not_for_us_total{worker="0"}')
n=$(udp_to 198.19.5.255)
nf1=$(ha_metric 1 'ibgw_ip_not_for_us_total{worker="0"}')
# (the 20 would all go to the kernel; a frame or two of the link's own, an IPv6 router solicitation
# or MLD report of a namespace just up, may fall in the window: make check saw 1)
[ "$n" -le 2 ] && [ $((nf1 - nf0)) -ge 20 ] || fail "another network's .255: $n to the kernel, $((nf1 - nf0)) not for us"
n_other=$n
n=$(udp_to "$bcast")
[ "$n" -ge 20 ] || fail "our network's broadcast $bcast: $n of 20 to the kernel"
ok "broadcast to the kernel: $bcast (20 of 20), never another network's 198.19.5.255 (counted not for us; $n_other frames to the kernel meanwhile)"

r=$(ha_c "$PY3" tests/ha/ha_client.py once "$GW" 7 1000000 20)
[ "$r" = ok ] || fail "ibgwd's echo route: $r"
[ "$(ha_metric 1 'ibgw_route_sessions_total{route="echo"}')" -ge 1 ] || fail "the echo session was not ibgwd's"
ok "ibgwd's own listener: 1 MB echoed intact"

ha_g_bg 1 "$PY3" tests/ha/ha_client.py serve 0.0.0.0 2222 0
for i in $(seq 50); do [ -n "$(ha_g 1 ss -Hltn 'sport = :2222')" ] && break; sleep 0.1; done
k0=$(ha_metric 1 'ibgw_exception_frames_total{worker="0",dir="to_kernel"}')
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$GW" 2222 1000000 20)
[ "$r" = ok ] || fail "kernel echo server through the TAP: $r"
k1=$(ha_metric 1 'ibgw_exception_frames_total{worker="0",dir="to_kernel"}')
f1=$(ha_metric 1 'ibgw_exception_frames_total{worker="0",dir="from_kernel"}')
[ $((k1 - k0)) -ge 20 ] && [ "$f1" -ge 20 ] || fail "the kernel's session did not cross the exception path ($k0 -> $k1 to, $f1 from)"
ok "kernel TCP server on the TAP: 1 MB echoed intact ($((k1 - k0)) frames to the kernel, $f1 from it)"

# an address the kernel gains: announced, ARP answered, served by ibgwd's listener
VIP=198.18.0.20
ha_c timeout 10 "$PY3" -c "
from scapy.all import sniff, ARP
p = sniff(iface='br0', timeout=8, count=1,
          lfilter=lambda p: ARP in p and p[ARP].psrc == '$VIP' and p[ARP].pdst == '$VIP')
print('garp' if p else 'none')" >"$tmp/garp" 2>/dev/null &
sniffer=$!
sleep 1.5
ha_g 1 ip addr add "$VIP/24" dev "$HA_TAP"
wait $sniffer
grep -q '^garp$' "$tmp/garp" || fail "no gratuitous ARP for $VIP"
ok "address added to the TAP: gratuitous ARP for $VIP"
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$VIP" 7 1000000 20)
[ "$r" = ok ] || fail "ibgwd's echo on $VIP: $r"
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$VIP" 2222 100000 20)
[ "$r" = ok ] || fail "kernel echo on $VIP: $r"
ok "$VIP served: ibgwd's listener and the kernel's (1 MB / 100 KB intact)"

# it leaves: the session in flight finishes, new ones fail
ha_c "$PY3" tests/ha/ha_client.py slow "$VIP" 7 2000000 4 >"$tmp/slow" &
slow=$!
sleep 1.5
ha_g 1 ip addr del "$VIP/24" dev "$HA_TAP"
sleep 0.5
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$VIP" 7 1000 2)
[ "$r" != ok ] || fail "a new connection to the removed $VIP succeeded"
wait $slow
[ "$(cat "$tmp/slow")" = ok ] || fail "the session in flight on the removed address: $(cat "$tmp/slow")"
ok "address removed: the session in flight finished intact (2 MB), a new one failed ($r)"

# it leaves while ibgwd's address notifications overflow (its control thread held up: the kernel drops
# what no longer fits in the netlink socket, ENOBUFS): the dump ibgwd asks for then does not list it,
# and ibgwd stops serving it as if it had heard (it went on answering for a VIP that keepalived had
# moved to the other gateway)
ha_g 1 ip addr add "$VIP/24" dev "$HA_TAP"
for i in $(seq 50); do r=$(ha_c "$PY3" tests/ha/ha_client.py once "$VIP" 7 1000 2); [ "$r" = ok ] && break; sleep 0.1; done
[ "$r" = ok ] || fail "$VIP added again: not served ($r)"
{
	for i in $(seq 1 250); do
		echo "addr add 198.19.200.$i/32 dev $HA_TAP"
		echo "addr del 198.19.200.$i/32 dev $HA_TAP"
	done
	echo "addr del $VIP/24 dev $HA_TAP" # (its notification after the socket is full: lost)
} >"$tmp/batch"
n0=$(grep -c "kernel_tap: address $VIP removed" "${HA_LOG[1]}")
kill -STOP "${HA_PID[1]}"
ha_g 1 ip -batch "$tmp/batch" || { kill -CONT "${HA_PID[1]}"; fail "ip -batch"; }
kill -CONT "${HA_PID[1]}"
for i in $(seq 30); do grep -q "netlink overrun" "${HA_LOG[1]}" && break; sleep 0.1; done
grep -q "netlink overrun" "${HA_LOG[1]}" || fail "500 address changes while ibgwd was stopped: no overrun (the test shows nothing)"
sleep 0.5
[ "$(grep -c "kernel_tap: address $VIP removed" "${HA_LOG[1]}")" -gt "$n0" ] || fail "$VIP left during the overrun: still served"
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$VIP" 7 1000 2)
[ "$r" != ok ] || fail "a new connection to $VIP, removed during the overrun, succeeded"
ok "$VIP removed among 500 address changes while ibgwd's notifications overflowed: the dump after the overrun found it gone, new connections fail ($r)"

# the rtnetlink socket ibgwd keeps for the TAP's addresses only reads: code running in the daemon
# (which keeps CAP_NET_ADMIN for the port) must not be able to configure the network through it. A
# root process borrows it (pidfd_getfd) and asks it to: rtnetlink judges the socket's opener too
kill -STOP "${HA_PID[1]}"
out=$("$PY3" tests/ha/nl_borrow.py "${HA_PID[1]}" 2>&1)
rc=$?
kill -CONT "${HA_PID[1]}"
[ $rc = 0 ] || fail "ibgwd's rtnetlink socket can configure the network: $out"
ok "ibgwd's rtnetlink socket, borrowed by a root process, cannot configure the network ($out)"

# a SYN flood at the kernel's port: at most kernel_tap_rate reaches the kernel
mac=$(ha_c ip neigh show "$GW" | awk '{ print $5 }')
[ -n "$mac" ] || fail "no ARP entry for $GW"
k0=$(ha_metric 1 'ibgw_exception_frames_total{worker="0",dir="to_kernel"}')
d0=$(ha_metric 1 'ibgw_exception_drops_total{worker="0",reason="rate"}')
t0=$(date +%s.%N)
ha_c "$PY3" tests/ha/synflood.py br0 "$mac" "$GW" 2222 6000 >"$tmp/flood" &
flood=$!
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$GW" 7 100000 10)
wait $flood
t1=$(date +%s.%N)
sleep 0.5
k1=$(ha_metric 1 'ibgw_exception_frames_total{worker="0",dir="to_kernel"}')
d1=$(ha_metric 1 'ibgw_exception_drops_total{worker="0",reason="rate"}')
[ "$r" = ok ] || fail "ibgwd's listener during the flood: $r"
passed=$((k1 - k0))
limit=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", (b - a + 1) * 1000 + 60 }')
[ $((d1 - d0)) -gt 0 ] || fail "no rate drops for a flood of 6000 SYNs ($(cat "$tmp/flood"))"
[ "$passed" -le "$limit" ] || fail "$passed frames reached the kernel in $(cat "$tmp/flood"), above ${limit}"
ok "SYN flood at a kernel port ($(cat "$tmp/flood")): $passed frames to the kernel (bound $limit), $((d1 - d0)) dropped by the rate limit; ibgwd's listener answered meanwhile"

# a flood at ibgwd's listener stays with ibgwd (SYN cookies), none of it goes to the kernel
k0=$(ha_metric 1 'ibgw_exception_frames_total{worker="0",dir="to_kernel"}')
ha_c "$PY3" tests/ha/synflood.py br0 "$mac" "$GW" 7 3000 >"$tmp/flood"
sleep 0.5
k1=$(ha_metric 1 'ibgw_exception_frames_total{worker="0",dir="to_kernel"}')
[ $((k1 - k0)) -le 100 ] || fail "$((k1 - k0)) frames of a flood at ibgwd's listener went to the kernel"
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$GW" 7 100000 10)
[ "$r" = ok ] || fail "ibgwd's listener after the flood: $r"
ok "SYN flood at ibgwd's listener ($(cat "$tmp/flood")): $((k1 - k0)) frames to the kernel (ARP copies), the listener answers"

kill -TERM "${HA_PID[1]}"
ha_gw_wait_exit 1 20 || fail "ibgwd exited with $? (sanitizer report or shutdown error)"
ha_g 1 ip link show "$HA_TAP" >/dev/null 2>&1 && fail "the TAP outlived ibgwd"
ok "clean shutdown, the TAP is gone"

# removed_addr_reset = 1 (not the default; the key's other behaviour): the session in flight on an
# address that leaves the TAP is reset at its next segment
HA_ETH_EXTRA="removed_addr_reset = 1" ha_gw_conf 1 "$tmp/g1r.conf" "$(gw_routes <<R
echo tcp:7 echo
R
)"
ha_gw_start 1 "$tmp/g1r.conf"
ha_g 1 ip addr add "$VIP/24" dev "$HA_TAP"
for i in $(seq 50); do ha_c "$PY3" tests/ha/ha_client.py once "$VIP" 7 1000 2 | grep -q '^ok' && break; done
ha_c "$PY3" tests/ha/ha_client.py slow "$VIP" 7 2000000 4 >"$tmp/slow" &
slow=$!
sleep 1.5
ha_g 1 ip addr del "$VIP/24" dev "$HA_TAP"
wait $slow
grep -q reset "$tmp/slow" || fail "removed_addr_reset = 1: the session on the removed address: $(cat "$tmp/slow")"
n=$(ha_metric 1 'ibgw_tcp_local_address_resets_total{worker="0"}')
[ "$n" -eq 1 ] || fail "tcp_local_address_resets_total is $n, expected 1"
# (ibgwd's own abort, not a reset by the peer: a pool would otherwise charge a backend with it)
n=$(ha_metric 1 'ibgw_route_sessions_ended_total{route="echo",reason="aborted"}')
[ "$n" -eq 1 ] || fail "the session reset on the removed address ended $n times as aborted, expected 1"
ok "removed_addr_reset = 1: the session in flight on the removed address was reset ($(cat "$tmp/slow")), counted"
kill -TERM "${HA_PID[1]}"
ha_gw_wait_exit 1 20 || fail "ibgwd exited with $?"
