#!/usr/bin/env bash
# IPv6 on the Ethernet side, first part (#16): with [eth] address6, ibgwd answers neighbour discovery
# and ping from a kernel peer for its address and its link-local one, announces itself at start, and
# defends its address against a duplicate address probe. Then hostile IPv6 from scapy: fragments,
# routing headers with segments left, extension-header chains too long or cut short, hop-by-hop not
# first, a payload length beyond the frame, a bad checksum, neighbour discovery that fails RFC 4861's
# checks (hop limit, zero-length option, a source link-layer option from ::, a broadcast one: its
# answer would be a broadcast), a node claiming our address, TCP to a closed port (answered with a
# reset: TCP over IPv6 is served, tests/eth/test_tcp6_*.sh) and to the all-nodes group (refused): each counted under its name, nothing answered that should not
# be, ping still answered, ibgwd alive and a clean shutdown (ASan build). Addresses from 2001:db8::/32
# (documentation) only.
# timeout: 150
# concurrent: mostly waits (neighbour discovery, ping), little CPU
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init

GW6=2001:db8:0:1::1
PEER6=2001:db8:0:1::2
eth_setup
eth_ns sysctl -qw "net.ipv6.conf.$ETH_PEER.disable_ipv6=0" || fail "cannot enable IPv6 in the namespace"
eth_ns ip -6 addr add "$PEER6/64" dev "$ETH_PEER" nodad || fail "cannot add $PEER6"
eth_conf "$tmp/ibgw.conf" "address6 = $GW6/64"
gw_mac=$(cat "/sys/class/net/$ETH_IF/address")
# the unsolicited advertisement at start (RFC 4861 7.2.6)
eth_start_seeing "$tmp/ibgw.conf" ICMPv6ND_NA "p[ICMPv6ND_NA].tgt == '$GW6' and p[ICMPv6ND_NA].S == 0" \
	"unsolicited neighbour advertisement"
ok "unsolicited neighbour advertisement of $GW6 at start"

eth_ns ping -6 -c 5 -i 0.2 -W 2 "$GW6" >"$tmp/ping" || { cat "$tmp/ping"; fail "ping $GW6 failed"; }
grep -q ' 0% packet loss' "$tmp/ping" || { cat "$tmp/ping"; fail "ping lost packets"; }
eth_ns ping -6 -c 2 -i 0.2 -W 2 -s 1452 -M do "$GW6" >/dev/null || fail "1500-byte ping failed"
ok "ping $GW6 answered (5 + 2 full-size)"
eth_ns ip -6 neigh show "$GW6" dev "$ETH_PEER" | grep -qi "lladdr $gw_mac" ||
	fail "the peer's neighbour entry for $GW6 is not ibgwd's MAC $gw_mac: $(eth_ns ip -6 neigh show)"
ok "neighbour discovery resolved $GW6 to $gw_mac"
# the link-local address (modified EUI-64 of the MAC)
ll=$("$PY3" -c "
m = [int(x, 16) for x in '$gw_mac'.split(':')]
m[0] ^= 2
e = m[:3] + [0xff, 0xfe] + m[3:]
print('fe80::' + ':'.join('%x' % (e[i] << 8 | e[i + 1]) for i in range(0, 8, 2)))")
eth_ns ping -6 -c 3 -i 0.2 -W 2 "$ll%$ETH_PEER" >/dev/null || fail "ping $ll failed"
ok "ping of the link-local address $ll answered"

m() { gw_metric "$ETH_STATS" "ibgw_$1{worker=\"0\"}"; }
names="ip6_header_errors_total ip6_extension_drops_total ip6_tcp_refused_total tcp_rsts_out_total icmp6_errors_total
	nd_errors_total nd_conflicts_total nd_dad_defended_total ip6_martians_total icmp6_echo_replies_total"
for n in $names; do eval "before_$n=$(m $n)"; done

# hostile IPv6: each kind sent 3 times; what each should do is counted, and the sniffer records
# every frame ibgwd sends meanwhile (only the DAD defence and the control ping may draw one)
eth_ns "$PY3" - "$ETH_PEER" "$GW6" "$PEER6" "$gw_mac" "$tmp/seen" <<'EOF' || fail "the scapy attacker failed"
import sys, time, logging
logging.getLogger('scapy.runtime').setLevel(logging.ERROR)
from scapy.all import (Ether, IPv6, IPv6ExtHdrFragment, IPv6ExtHdrRouting, IPv6ExtHdrDestOpt,
                       IPv6ExtHdrHopByHop, ICMPv6EchoRequest, ICMPv6ND_NS, ICMPv6ND_NA,
                       ICMPv6NDOptSrcLLAddr, ICMPv6NDOptDstLLAddr, TCP, Raw, sendp, AsyncSniffer,
                       in6_getnsma, in6_getnsmac, inet_pton, inet_ntop, socket, get_if_hwaddr)
iface, gw, me, gwmac, seen = sys.argv[1:6]
# (the source MAC given: scapy finds none for a multicast destination and would send from 00:00:00:00:00:00,
# which no station has and ibgwd drops)
mymac = get_if_hwaddr(iface)
snm = inet_ntop(socket.AF_INET6, in6_getnsma(inet_pton(socket.AF_INET6, gw)))
snmac = in6_getnsmac(inet_pton(socket.AF_INET6, snm))
E = Ether(src=mymac, dst=gwmac)
echo = ICMPv6EchoRequest(id=7, seq=1, data=b'x' * 32)
bad = {
 'fragment': E / IPv6(src=me, dst=gw) / IPv6ExtHdrFragment(m=1) / echo,
 'routing': E / IPv6(src=me, dst=gw) / IPv6ExtHdrRouting(addresses=['2001:db8::99'], segleft=1) / echo,
 'long_chain': E / IPv6(src=me, dst=gw) / (IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() /
     IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt() /
     IPv6ExtHdrDestOpt() / IPv6ExtHdrDestOpt()) / echo,
 'hbh_not_first': E / IPv6(src=me, dst=gw) / IPv6ExtHdrDestOpt() / IPv6ExtHdrHopByHop() / echo,
 'cut_ext': E / IPv6(src=me, dst=gw, nh=60, plen=8) / Raw(bytes([58, 5]) + bytes(6)),
 'plen_beyond': E / IPv6(src=me, dst=gw, plen=1400) / echo,
 'bad_cksum': E / IPv6(src=me, dst=gw) / ICMPv6EchoRequest(id=7, seq=2, cksum=0x1234),
 'ns_hlim': Ether(src=mymac, dst=snmac) / IPv6(src=me, dst=snm, hlim=64) / ICMPv6ND_NS(tgt=gw) / ICMPv6NDOptSrcLLAddr(),
 'ns_zero_opt': Ether(src=mymac, dst=snmac) / IPv6(src=me, dst=snm, hlim=255) / ICMPv6ND_NS(tgt=gw) / Raw(bytes([1, 0]) + bytes(6)),
 'ns_dad_sll': Ether(src=mymac, dst=snmac) / IPv6(src='::', dst=snm, hlim=255) / ICMPv6ND_NS(tgt=gw) / ICMPv6NDOptSrcLLAddr(),
 'ns_bcast_sll': E / IPv6(src=me, dst=gw, hlim=255) / ICMPv6ND_NS(tgt=gw) / ICMPv6NDOptSrcLLAddr(lladdr='ff:ff:ff:ff:ff:ff'),
 'martian': E / IPv6(src='ff02::1', dst=gw) / echo,
 'tcp6_mcast': Ether(src=mymac, dst='33:33:00:00:00:01') / IPv6(src=me, dst='ff02::1') / TCP(sport=40001, dport=80, flags='S'),
}
good = {
 'na_conflict': Ether(src=mymac, dst='33:33:00:00:00:01') / IPv6(src=me, dst='ff02::1', hlim=255) /
     ICMPv6ND_NA(tgt=gw, R=0, S=0, O=1) / ICMPv6NDOptDstLLAddr(lladdr='02:00:00:00:00:99'),
 'dad_probe': Ether(src=mymac, dst=snmac) / IPv6(src='::', dst=snm, hlim=255) / ICMPv6ND_NS(tgt=gw),
 'tcp6_closed': E / IPv6(src=me, dst=gw) / TCP(sport=40000, dport=80, flags='S'),
}
sn = AsyncSniffer(iface=iface, lfilter=lambda p: IPv6 in p and p[Ether].src == gwmac)
sn.start()
time.sleep(1)
for name, pkt in list(bad.items()) + list(good.items()):
    sendp(pkt, iface=iface, count=3, verbose=False)
time.sleep(1.5)
got = sn.stop()
with open(seen, 'w') as f:
    for p in got:
        f.write('%s %s\n' % (p[IPv6].dst, ('NA' if p[Ether].dst != 'ff:ff:ff:ff:ff:ff' else 'NA-to-broadcast')
                               if ICMPv6ND_NA in p else 'NS' if ICMPv6ND_NS in p else
                               'RST' if TCP in p and p[TCP].flags == 'RA' and p[TCP].ack == 1 else p.summary()))
EOF
for n in $names; do eval "d_$n=\$(( \$(m $n) - before_$n ))"; done
echo "    deltas: header_errors $d_ip6_header_errors_total, extension_drops $d_ip6_extension_drops_total," \
	"tcp refused $d_ip6_tcp_refused_total, rsts out $d_tcp_rsts_out_total, icmp6_errors $d_icmp6_errors_total, nd_errors $d_nd_errors_total," \
	"conflicts $d_nd_conflicts_total, dad_defended $d_nd_dad_defended_total, martians $d_ip6_martians_total," \
	"echo replies $d_icmp6_echo_replies_total"
# fragment + routing: 3 each; long chain, hbh not first, cut ext, plen beyond: 3 each
[ "$d_ip6_extension_drops_total" = 6 ] || fail "fragments and routing headers: $d_ip6_extension_drops_total drops, expected 6"
[ "$d_ip6_header_errors_total" = 12 ] || fail "bad headers/chains: $d_ip6_header_errors_total errors, expected 12"
[ "$d_icmp6_errors_total" = 3 ] || fail "bad checksum: $d_icmp6_errors_total icmp6 errors, expected 3"
[ "$d_nd_errors_total" = 12 ] || fail "bad neighbour discovery: $d_nd_errors_total errors, expected 12"
[ "$d_ip6_martians_total" = 3 ] || fail "multicast source: $d_ip6_martians_total martians, expected 3"
[ "$d_ip6_tcp_refused_total" = 3 ] || fail "TCP to all-nodes: $d_ip6_tcp_refused_total refused, expected 3"
[ "$d_tcp_rsts_out_total" = 3 ] || fail "TCP to a closed port: $d_tcp_rsts_out_total resets, expected 3"
[ "$d_nd_conflicts_total" = 3 ] || fail "advertisements of our address by another node: $d_nd_conflicts_total, expected 3"
[ "$d_nd_dad_defended_total" = 3 ] || fail "duplicate address probes: $d_nd_dad_defended_total defended, expected 3"
[ "$d_icmp6_echo_replies_total" = 0 ] || fail "$d_icmp6_echo_replies_total echo replies to hostile requests"
ok "hostile IPv6 counted by kind, none answered"
# what ibgwd sent meanwhile: the 3 DAD defences (advertisements to all-nodes) and the 3 resets for the
# closed port, nothing else (a solicited advertisement to the peer itself may come too, if its kernel
# re-checked us meanwhile, and ibgwd's own re-check of the peer: a solicitation)
n_all=$(grep -c "^ff02::1 NA$" "$tmp/seen")
n_rst=$(grep -c "^$PEER6 RST$" "$tmp/seen")
n_other=$(grep -vc "^ff02::1 NA$\|^$PEER6 NA$\|^$PEER6 RST$\| NS$" "$tmp/seen")
[ "$n_all" = 3 ] && [ "$n_rst" = 3 ] && [ "$n_other" = 0 ] || { cat "$tmp/seen"; fail "ibgwd sent $n_all advertisements to all-nodes, $n_rst resets and $n_other other frames, expected the 3 DAD defences and 3 resets"; }
ok "only the duplicate address probes (advertisements to all-nodes) and the closed port (resets) were answered"

eth_ns ping -6 -c 3 -i 0.2 -W 2 "$GW6" >/dev/null || fail "ping after the hostile frames failed"
ok "still answers ping"
gw_stop || fail "ibgwd exited with $? (sanitizer report or shutdown error)"
ok "clean shutdown"
