#!/usr/bin/env bash
# The exception path over IPv6 ([eth] kernel_tap with address6, #16 "IPv6 on the TAP"). As
# test_exception.sh for IPv4: a gateway host runs ibgwd (address6 2001:db8::11) on af_packet into a LAN
# where an IPv6 client lives; the TAP carries 2001:db8::11 too, as an operator would configure it.
# Checks: ping6 answered by ibgwd alone; ibgwd's own listener over IPv6; a kernel TCP server on a port
# ibgwd has no listener for, reached over IPv6 through the TAP (sha256 of 1 MB, counted both ways);
# UDP (another next header) reaches the kernel and its answer the client; ICMPv6 the kernel's flows
# need reaches it (the replies to its ping6, a "packet too big" for its connection, an MLD query),
# router advertisements (to all-nodes, to VRRPv3's group) and redirects do not, counted; no address
# with a lifetime (as SLAAC makes) becomes ibgwd's; the kernel's neighbour cache learnt the client
# from the mirrored neighbour discovery; an IPv6 address added to the TAP is announced (unsolicited
# NA) and served by ibgwd's listener and the kernel's; once removed, a session in flight on it
# finishes intact, new connections fail; SYN floods over IPv6 at a kernel port are cut to
# kernel_tap_rate, those at ibgwd's listener stay with it; an address is taken once the kernel's
# duplicate address detection passed it; with removed_addr_reset = 1 the session in flight on it is
# reset.
# timeout: 60
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/ha/lib.sh
ha_init

GW6=2001:db8::11
C6=2001:db8::100
VIP6=2001:db8::20
ha_c sysctl -qw net.ipv6.conf.br0.disable_ipv6=0
ha_c ip -6 addr add "$C6/64" dev br0 nodad || fail "cannot address the client"

ha_gw_add 1
# msum 'name' 'label="v"': a counter of gateway 1 summed over its workers (HA_WORKERS=2 runs too)
msum() { ha_msum 1 "$@"; }
# the TAP's IPv6: enabled on it alone (the port's veth must stay silent), no duplicate address
# detection (its addresses count at once)
tap6() {
	ha_g 1 sysctl -qw "net.ipv6.conf.$HA_TAP.accept_dad=0"
	ha_g 1 sysctl -qw "net.ipv6.conf.$HA_TAP.disable_ipv6=0"
	ha_g 1 ip -6 addr add "$GW6/64" dev "$HA_TAP" nodad || fail "cannot give the TAP $GW6"
}
# kernel_tap_rate lowered to 1000/s, as in test_exception.sh, for the SYN flood to exceed it
HA_ETH_EXTRA=$'address6 = '"$GW6"$'/64\nkernel_tap_rate = 1000' ha_gw_conf 1 "$tmp/g1.conf" "$(gw_routes <<R
echo tcp:7 echo
R
)"
ha_gw_start 1 "$tmp/g1.conf"
tap6

ha_c ping -6 -c 3 -i 0.2 -W 2 "$GW6" >"$tmp/ping" || { cat "$tmp/ping"; fail "ping $GW6 failed"; }
grep -q '3 received' "$tmp/ping" && ! grep -q duplicates "$tmp/ping" || { cat "$tmp/ping"; fail "ping6: lost or duplicated replies"; }
ok "ping6 answered by ibgwd alone (3 replies, no duplicates)"

r=$(ha_c "$PY3" tests/ha/ha_client.py once "$GW6" 7 1000000 20)
[ "$r" = ok ] || fail "ibgwd's echo route over IPv6: $r"
ok "ibgwd's own listener over IPv6: 1 MB echoed intact"

ha_g_bg 1 "$PY3" tests/ha/ha_client.py serve :: 2222 0
for i in $(seq 50); do [ -n "$(ha_g 1 ss -Hltn 'sport = :2222')" ] && break; sleep 0.1; done
k0=$(msum ibgw_exception_frames_total 'dir="to_kernel"')
f0=$(msum ibgw_exception_frames_total 'dir="from_kernel"')
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$GW6" 2222 1000000 20)
[ "$r" = ok ] || fail "kernel echo server through the TAP over IPv6: $r"
k1=$(msum ibgw_exception_frames_total 'dir="to_kernel"')
f1=$(msum ibgw_exception_frames_total 'dir="from_kernel"')
[ $((k1 - k0)) -ge 20 ] && [ $((f1 - f0)) -ge 20 ] || fail "the kernel's IPv6 session did not cross the exception path ($k0 -> $k1 to, $f0 -> $f1 from)"
[ "$(msum ibgw_tcp_rsts_out_total worker)" -eq 0 ] || fail "ibgwd reset a segment for the kernel's port"
ok "kernel TCP server on the TAP over IPv6: 1 MB echoed intact ($((k1 - k0)) frames to the kernel, $((f1 - f0)) from it)"
ha_g 1 ip -6 neigh show "$C6" dev "$HA_TAP" | grep -q lladdr ||
	fail "the kernel's neighbour cache has no entry for $C6: $(ha_g 1 ip -6 neigh show)"
ok "the kernel's neighbour cache learnt $C6 ($(ha_g 1 ip -6 neigh show "$C6" dev "$HA_TAP" | awk '{ print $3, $4 }'))"

# snmp6 NAME: the kernel's ICMPv6 counter NAME on gateway 1
snmp6() { ha_g 1 awk -v n="$1" '$1 == n { print $2 }' /proc/net/snmp6; }
# send6 LAYERS DMAC: 3 frames from the client's LAN to DMAC carrying LAYERS (scapy)
send6() {
	ha_c "$PY3" - <<EOF 2>/dev/null || fail "scapy: cannot send $1"
from scapy.all import *
sendp(Ether(src=get_if_hwaddr('br0'), dst='$2') / $1, iface='br0', count=3, verbose=False)
EOF
}
# UDP (a next header ibgwd does not consume): the kernel's
ha_g_bg 1 "$PY3" -c "
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.bind(('::', 5353))
while True:
    b, a = s.recvfrom(2048)
    s.sendto(b[::-1], a)"
sleep 0.3
r=$(ha_c "$PY3" -c "
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.settimeout(1)
for i in range(5):
    s.sendto(b'ibgw-udp6', ('$GW6', 5353))
    try:
        print(s.recv(2048).decode()); break
    except socket.timeout:
        pass")
[ "$r" = 6pdu-wgbi ] || fail "UDP over IPv6 to the kernel: '$r'"
ok "UDP over IPv6 answered by the kernel"

# what the kernel's own flows need: the replies to its ping6, a "packet too big" for its connection
# (its path MTU discovery), an MLD query (it reports its groups to the switches that snoop)
e0=$(snmp6 Icmp6InEchoReplies)
ha_g 1 ping -6 -c 3 -i 0.2 -W 2 "$C6" >"$tmp/kping" ||
	{ cat "$tmp/kping"; fail "the kernel's ping6 to $C6 failed"; }
[ $(($(snmp6 Icmp6InEchoReplies) - e0)) -ge 3 ] || fail "the kernel counted no echo replies to its ping6"
p0=$(snmp6 Icmp6InPktTooBigs)
q0=$(snmp6 Icmp6InGroupMembQueries)
mac=$(ha_c ip -6 neigh show "$GW6" | awk '{ print $5 }')
[ -n "$mac" ] || fail "no neighbour entry for $GW6"
send6 "IPv6(src='$C6', dst='$GW6') / ICMPv6PacketTooBig(mtu=1280) /
      IPv6(src='$GW6', dst='$C6') / TCP(sport=2222, dport=40000, flags='A') / Raw(b'x' * 1300)" "$mac"
send6 "IPv6(src='fe80::1', dst='ff02::1', hlim=1) / IPv6ExtHdrHopByHop(options=[RouterAlert()]) /
      ICMPv6MLQuery()" 33:33:00:00:00:01
sleep 0.5
[ $(($(snmp6 Icmp6InPktTooBigs) - p0)) -ge 3 ] || fail "packet too big for the kernel's flow did not reach it"
[ $(($(snmp6 Icmp6InGroupMembQueries) - q0)) -ge 3 ] || fail "MLD queries did not reach the kernel"
ok "ICMPv6 for the kernel's flows reached it: echo replies to its ping6, packet too big, MLD queries"

# router advertisements (to all-nodes; to VRRPv3's group, which keepalived joins) and a redirect from
# an on-link router: refused, counted, never seen by the kernel (which would take a default router, a
# prefix, a route to the redirect's destination from any sender on the link)
ra0=$(snmp6 Icmp6InRouterAdvertisements)
rd0=$(snmp6 Icmp6InRedirects)
n0=$(msum ibgw_icmp_refused_total worker)
# (the kernel joins VRRPv3's group as keepalived would: it takes what is sent to a group it joined)
ha_g_bg 1 "$PY3" -c "
import socket, struct, time
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
g = socket.inet_pton(socket.AF_INET6, 'ff02::12') + struct.pack('@I', socket.if_nametoindex('$HA_TAP'))
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, g)
time.sleep(600)"
for _ in $(seq 50); do
	ha_g 1 grep -q ' ff020000000000000000000000000012 ' /proc/net/igmp6 && break
	sleep 0.1
done
ra() {
	echo "IPv6(src='fe80::1', dst='$1', hlim=255) / ICMPv6ND_RA(routerlifetime=1800) /
      ICMPv6NDOptPrefixInfo(prefix='2001:db8:66::', prefixlen=64, L=1, A=1, validlifetime=600,
                            preferredlifetime=300)"
}
send6 "$(ra ff02::1)" 33:33:00:00:00:01
send6 "$(ra ff02::12)" 33:33:00:00:00:12
send6 "IPv6(src='fe80::1', dst='$GW6', hlim=255) /
      ICMPv6ND_Redirect(tgt='fe80::1', dst='2001:db8:77::1')" "$mac"
sleep 0.5
[ "$(snmp6 Icmp6InRouterAdvertisements)" = "$ra0" ] ||
	fail "router advertisements reached the kernel ($ra0 -> $(snmp6 Icmp6InRouterAdvertisements))"
[ "$(snmp6 Icmp6InRedirects)" = "$rd0" ] ||
	fail "redirects reached the kernel ($rd0 -> $(snmp6 Icmp6InRedirects))"
n1=$(msum ibgw_icmp_refused_total worker)
# (at least: the client's own router solicitations, if any, are refused too)
[ $((n1 - n0)) -ge 9 ] || fail "ibgw_icmp_refused_total went $n0 -> $n1, expected 9 more"
! ha_g 1 ip -6 addr show dev "$HA_TAP" | grep -q '2001:db8:66:' ||
	fail "the TAP took an address from a forged router advertisement: $(ha_g 1 ip -6 addr show dev "$HA_TAP" | grep 2001:db8:66:)"
ok "router advertisements (to all-nodes, to ff02::12) and a redirect refused ($((n1 - n0)) counted), none reached the kernel"
[ "$(ha_g 1 sysctl -n "net.ipv6.conf.$HA_TAP.autoconf")" = 0 ] || fail "autoconf is on on the TAP"
# where that sysctl cannot be written (systemd's ProtectKernelTunables makes /proc/sys read-only,
# conf/ibgwd.service sets it) an address with a lifetime (SLAAC's, were an advertisement to come
# another way) must not become ibgwd's own (2001:db8::77, added by hand as keepalived adds a VIP, is
# the control: that one ibgwd takes)
slaac=2001:db8:66::5
ha_g 1 ip -6 addr add 2001:db8::77/64 dev "$HA_TAP" nodad
ha_g 1 ip -6 addr add "$slaac/64" dev "$HA_TAP" nodad valid_lft 600 preferred_lft 300
sleep 0.5
! grep -q "kernel_tap: address $slaac " "${HA_LOG[1]}" ||
	fail "ibgwd made the address with a lifetime $slaac its own: $(grep "kernel_tap: address $slaac" "${HA_LOG[1]}")"
grep -q "kernel_tap: address 2001:db8::77 added" "${HA_LOG[1]}" ||
	fail "ibgwd did not take 2001:db8::77, added by hand (the check above proves nothing): $(grep 'kernel_tap: address' "${HA_LOG[1]}" | head -3)"
ha_g 1 ip -6 addr del "$slaac/64" dev "$HA_TAP"
ha_g 1 ip -6 addr del 2001:db8::77/64 dev "$HA_TAP"
ok "autoconf off on the TAP; an address with a lifetime ($slaac) not taken by ibgwd (2001:db8::77, added by hand, was)"

# a SYN flood over IPv6 at the kernel's port: cut to kernel_tap_rate (the same buckets as IPv4's); one at
# ibgwd's listener stays with ibgwd
k0=$(msum ibgw_exception_frames_total 'dir="to_kernel"')
d0=$(msum ibgw_exception_drops_total 'reason="rate"')
t0=$(date +%s.%N)
ha_c "$PY3" tests/ha/synflood.py br0 "$mac" "$GW6" 2222 6000 >"$tmp/flood"
t1=$(date +%s.%N)
sleep 0.5
k1=$(msum ibgw_exception_frames_total 'dir="to_kernel"')
d1=$(msum ibgw_exception_drops_total 'reason="rate"')
passed=$((k1 - k0))
limit=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", (b - a + 1) * 1000 + 60 }')
[ $((d1 - d0)) -gt 0 ] || fail "no rate drops for a flood of 6000 IPv6 SYNs ($(cat "$tmp/flood"))"
[ "$passed" -le "$limit" ] || fail "$passed frames reached the kernel in $(cat "$tmp/flood"), above ${limit}"
k0=$(msum ibgw_exception_frames_total 'dir="to_kernel"')
ha_c "$PY3" tests/ha/synflood.py br0 "$mac" "$GW6" 7 3000 >"$tmp/flood7"
sleep 0.5
k1=$(msum ibgw_exception_frames_total 'dir="to_kernel"')
[ $((k1 - k0)) -le 100 ] || fail "$((k1 - k0)) frames of an IPv6 flood at ibgwd's listener went to the kernel"
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$GW6" 7 100000 10)
[ "$r" = ok ] || fail "ibgwd's listener after the IPv6 floods: $r"
ok "IPv6 SYN floods: at a kernel port ($(cat "$tmp/flood")) $passed frames to the kernel (bound $limit), $((d1 - d0)) dropped by the rate limit; at ibgwd's listener ($(cat "$tmp/flood7")) $((k1 - k0)) to the kernel, the listener answers"

# an IPv6 address the kernel gains: announced, neighbour discovery answered, served by ibgwd's listener
ha_c timeout 10 "$PY3" -c "
from scapy.all import sniff, ICMPv6ND_NA
p = sniff(iface='br0', timeout=8, count=1,
          lfilter=lambda p: ICMPv6ND_NA in p and p[ICMPv6ND_NA].tgt == '$VIP6' and p[ICMPv6ND_NA].S == 0)
print('na' if p else 'none')" >"$tmp/na" 2>/dev/null &
sniffer=$!
sleep 1.5
ha_g 1 ip -6 addr add "$VIP6/64" dev "$HA_TAP" nodad
wait $sniffer
grep -q '^na$' "$tmp/na" || fail "no unsolicited neighbour advertisement for $VIP6"
ok "address added to the TAP: unsolicited neighbour advertisement for $VIP6"
a0=$(ha_metric 1 'ibgw_route_sessions_total{route="echo"}')
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$VIP6" 7 1000000 20)
[ "$r" = ok ] || fail "ibgwd's echo on $VIP6: $r"
[ "$(ha_metric 1 'ibgw_route_sessions_total{route="echo"}')" -gt "$a0" ] || fail "the session on $VIP6 was not ibgwd's"
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$VIP6" 2222 100000 20)
[ "$r" = ok ] || fail "kernel echo on $VIP6: $r"
ok "$VIP6 served: ibgwd's listener and the kernel's (1 MB / 100 KB intact)"

# it leaves: the session in flight finishes, new ones fail
ha_c "$PY3" tests/ha/ha_client.py slow "$VIP6" 7 2000000 4 >"$tmp/slow" &
slow=$!
sleep 1.5
ha_g 1 ip -6 addr del "$VIP6/64" dev "$HA_TAP"
sleep 0.5
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$VIP6" 7 1000 2)
[ "$r" != ok ] || fail "a new connection to the removed $VIP6 succeeded"
wait $slow
[ "$(cat "$tmp/slow")" = ok ] || fail "the session in flight on the removed address: $(cat "$tmp/slow")"
ok "address removed: the session in flight finished intact (2 MB), a new one failed ($r)"

# an address under duplicate address detection is taken once the kernel passed it, not before
DAD6=2001:db8::21
ha_g 1 sysctl -qw "net.ipv6.conf.$HA_TAP.accept_dad=1"
ha_g 1 ip -6 addr add "$DAD6/64" dev "$HA_TAP"
sleep 0.2
ha_g 1 ip -6 -o addr show dev "$HA_TAP" | grep " $DAD6/" | grep -q tentative || fail "$DAD6 not tentative on the TAP"
grep -q "address $DAD6 added" "${HA_LOG[1]}" && fail "ibgwd took $DAD6 while tentative"
for i in $(seq 50); do ha_g 1 ip -6 -o addr show dev "$HA_TAP" | grep " $DAD6/" | grep -q tentative || break; sleep 0.1; done
r=$(ha_c "$PY3" tests/ha/ha_client.py once "$DAD6" 7 100000 10)
[ "$r" = ok ] || fail "ibgwd's echo on $DAD6 after its duplicate address detection: $r"
grep -q "address $DAD6 added" "${HA_LOG[1]}" || fail "ibgwd did not log taking $DAD6"
ok "an address under duplicate address detection: taken once the kernel passed it (100 KB intact)"

kill -TERM "${HA_PID[1]}"
ha_gw_wait_exit 1 20 || fail "ibgwd exited with $? (sanitizer report or shutdown error)"
ok "clean shutdown"

# removed_addr_reset = 1: the session in flight on an IPv6 address that leaves the TAP is reset
HA_ETH_EXTRA=$'address6 = '"$GW6"$'/64\nremoved_addr_reset = 1' ha_gw_conf 1 "$tmp/g1r.conf" "$(gw_routes <<R
echo tcp:7 echo
R
)"
ha_gw_start 1 "$tmp/g1r.conf"
tap6
ha_g 1 ip -6 addr add "$VIP6/64" dev "$HA_TAP" nodad
for i in $(seq 50); do ha_c "$PY3" tests/ha/ha_client.py once "$VIP6" 7 1000 2 | grep -q '^ok' && break; done
ha_c "$PY3" tests/ha/ha_client.py slow "$VIP6" 7 2000000 4 >"$tmp/slow" &
slow=$!
sleep 1.5
ha_g 1 ip -6 addr del "$VIP6/64" dev "$HA_TAP"
wait $slow
grep -q reset "$tmp/slow" || fail "removed_addr_reset = 1: the session on the removed address: $(cat "$tmp/slow")"
n=$(msum ibgw_tcp_local_address_resets_total worker)
[ "$n" -eq 1 ] || fail "tcp_local_address_resets_total is $n, expected 1"
# (ibgwd's own abort, not a reset by the peer: a pool would otherwise charge a backend with it)
n=$(ha_metric 1 'ibgw_route_sessions_ended_total{route="echo",reason="aborted"}')
[ "$n" -eq 1 ] || fail "the session reset on the removed address ended $n times as aborted, expected 1"
ok "removed_addr_reset = 1: the IPv6 session in flight on the removed address was reset, counted"
kill -TERM "${HA_PID[1]}"
ha_gw_wait_exit 1 20 || fail "ibgwd exited with $?"
