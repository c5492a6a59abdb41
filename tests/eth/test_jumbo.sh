#!/usr/bin/env bash
# Jumbo frames on af_packet: [eth] mtu = 9000 without room for such frames in the af_packet ring is
# refused at start with the vdev arguments that fix it; with framesz/blocksz 16384 ibgwd answers
# full 9000-byte pings (DF set) and carries TCP in 8960-byte segments both ways (echo, sha256). Its
# kernel TAP carries 1500 bytes at most (net_tap's limit): an 8000-byte UDP datagram (DF) for a kernel
# socket behind it is dropped and counted, and a 1000-byte one sent right behind it still arrives
# (the TAP stops a burst at a frame it refuses; every frame behind it was dropped too), while a
# 6000-byte TCP segment for a kernel socket is segmented into the TAP and arrives whole, over IPv4
# (net_tap's TSO) and over IPv6 (ibgwd's own segmentation); one with a wrong checksum is not passed.
# timeout: 120
# concurrent: mostly waits (small transfers at MTU 9000, neighbour resolution), little CPU
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init

eth_setup
ip link set "$ETH_IF" mtu 9000
eth_ns ip link set "$ETH_PEER" mtu 9000
routes="mtu = 9000
$(gw_routes <<<'echo tcp:7 echo')"

# 1. default ring frames (2048 bytes): refused, with the fix named
eth_conf "$tmp/small.conf" "$routes"
GW_LOG=$tmp/small.log
"$IBGWD" -f -c "$tmp/small.conf" >"$GW_LOG" 2>&1 &
small=$!
if wait $small; then
	fail "ibgwd started with mtu 9000 on 2048-byte af_packet frames"
fi
grep -q "mtu 9000 does not fit af_packet frames of 2048 bytes (add framesz=16384" "$GW_LOG" ||
	{ cat "$GW_LOG"; fail "no clear error for frames too small for the MTU"; }
ok "mtu 9000 on 2048-byte frames refused: $(grep -o 'mtu 9000 does not fit.*' "$GW_LOG" | head -1)"
rm -rf "/var/run/dpdk/ibgwd-$small" 2>/dev/null # (its own only: another test's ibgwd may be starting)

# 2. 16 KiB frames: jumbo ping and TCP
GW_LOG=
TAP=ibgwj0
eth_peer_v6
ETH_VDEV_EXTRA=,framesz=16384,blocksz=16384,framecnt=512 eth_gw_start "$tmp/ibgw.conf" "kernel_tap = $TAP
address6 = $ETH_GW_IP6/64
$routes"
eth_ns ping -c 3 -i 0.2 -W 2 -s 8972 -M do "$ETH_GW_IP" >"$tmp/ping" || { cat "$tmp/ping"; fail "9000-byte ping failed"; }
ok "9000-byte pings (DF) answered"

head -c 20M /dev/urandom >"$tmp/in"
want=$(sha256sum <"$tmp/in" | cut -d' ' -f1)
rx0=$(gw_metric "$ETH_STATS" 'ibgw_port_rx_packets_total{port="0"}')
rb0=$(gw_metric "$ETH_STATS" 'ibgw_port_rx_bytes_total{port="0"}')
got=$(eth_ns timeout 60 nc -N "$ETH_GW_IP" 7 <"$tmp/in" | sha256sum | cut -d' ' -f1) || fail "echo transfer failed"
[ "$got" = "$want" ] || fail "echo: 20 MiB came back different"
rx1=$(gw_metric "$ETH_STATS" 'ibgw_port_rx_packets_total{port="0"}')
rb1=$(gw_metric "$ETH_STATS" 'ibgw_port_rx_bytes_total{port="0"}')
avg=$(( (rb1 - rb0) / (rx1 - rx0) ))
# the peer sends 8960-byte segments; its ACKs (small frames) pull the average down, but far above
# what 1500-byte frames could give
[ "$avg" -gt 3000 ] || fail "average received frame $avg bytes: no jumbo segments arrived"
big=$(eth_ns ss -tin "dst $ETH_GW_IP" | grep -o 'mss:[0-9]*' | head -1)
ok "echo: 20 MiB each way in jumbo segments, sha256 equal (average frame in $avg bytes${big:+, peer $big})"

# 3. the kernel TAP: a frame it refuses is dropped alone. (Strict reverse-path filtering on the port's
# veth: the host kernel sees the peer's frames there too, and would take them for its address.)
[ "$(cat "/sys/class/net/$TAP/mtu")" = 1500 ] || fail "the kernel TAP's MTU is $(cat "/sys/class/net/$TAP/mtu")"
KIP=198.18.0.77
ip addr add "$KIP/24" dev "$TAP"
sysctl -qw "net.ipv4.conf.$ETH_IF.rp_filter=1"
for _ in $(seq 50); do eth_ns ping -c 1 -W 1 "$KIP" >/dev/null 2>&1 && break; sleep 0.1; done
d0=$(gw_metric "$ETH_STATS" 'ibgw_exception_tap_write_drops_total')
"$PY3" -c '
import hashlib, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 9999))
s.settimeout(10)
d = s.recv(65535)
print(len(d), hashlib.sha256(d).hexdigest())
' "$KIP" >"$tmp/udp" 2>&1 &
rcv=$!
sleep 0.5
want=$(eth_ns "$PY3" -c '
import hashlib, os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = IP_PMTUDISC_DO: never fragmented
s.sendto(os.urandom(8000), (sys.argv[1], 9999))
d = os.urandom(1000)
s.sendto(d, (sys.argv[1], 9999))
print(len(d), hashlib.sha256(d).hexdigest())
' "$KIP") || fail "the peer could not send the datagrams"
wait "$rcv" || fail "no datagram reached the kernel socket behind the TAP: $(cat "$tmp/udp")"
[ "$(cat "$tmp/udp")" = "$want" ] || fail "the kernel socket got '$(cat "$tmp/udp")', expected '$want'"
d1=$(gw_metric "$ETH_STATS" 'ibgw_exception_tap_write_drops_total')
[ "$d1" = $((d0 + 1)) ] || fail "TAP write drops $d0 -> $d1, expected the jumbo frame alone"
ok "kernel TAP (1500 bytes at most): the 8000-byte datagram dropped alone and counted, the 1000-byte one right behind it reached the kernel socket (sha256 equal)"

# 4. a TCP segment longer than the TAP carries, for a kernel socket (what the port's LRO makes of
# several, or a jumbo segment): segmented on its way into the TAP, the kernel gets every byte at once
# (it was dropped, leaving the kernel's TCP to the sender's retransmissions). A kernel client in the
# namespace connects to a kernel server behind the TAP (MSS 1460 both ways: it never sends more), then
# stops its socket (TCP_REPAIR: it sends nothing more, and closes silently) and sends the next 6000
# bytes as one segment, with its sequence numbers, from a packet socket (scapy). Then the 6000 after
# them with one payload bit flipped (their checksum now wrong): cut into segments they would reach the
# kernel with new, right sums; the engine's checksum check drops them (counted) before they are punted
# (the exception path checks too: tests/unit/test_eth_input.c), and the kernel's stream stays as it was.
# tap_segment ADDR PORT: that, to a kernel server on ADDR:PORT
tap_segment() {
	local kip=$1 port=$2 srv want d0 d1 c0 c1
	"$PY3" -c '
import hashlib, socket, sys
l = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET)
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], int(sys.argv[2]))); l.listen(1); l.settimeout(20)
c, _ = l.accept(); c.settimeout(6)
d = b""
try:
    while len(d) < 12100:
        k = c.recv(65536)
        if not k:
            break
        d += k
except socket.timeout:
    pass
print(len(d), hashlib.sha256(d[100:]).hexdigest())
' "$kip" "$port" >"$tmp/tcp.$port" 2>&1 &
	srv=$!
	sleep 0.5
	d0=$(gw_metric "$ETH_STATS" 'ibgw_exception_tap_write_drops_total')
	c0=$(gw_metric "$ETH_STATS" 'ibgw_tcp_checksum_errors_total{worker="0"}')
	want=$(eth_ns "$PY3" - "$kip" "$port" "$ETH_GW_MAC" "$ETH_PEER" <<'EOF'
import hashlib, os, socket, sys, time
from scapy.all import Ether, IP, IPv6, TCP, Raw, sendp
kip, port, mac, dev = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = socket.create_connection((kip, port), timeout=10)
s.sendall(os.urandom(100))
time.sleep(0.5)  # acknowledged: nothing of ours left in flight
TCP_REPAIR, TCP_REPAIR_QUEUE, TCP_QUEUE_SEQ, TCP_RECV_QUEUE, TCP_SEND_QUEUE = 19, 20, 21, 1, 2
s.setsockopt(socket.IPPROTO_TCP, TCP_REPAIR, 1)
s.setsockopt(socket.IPPROTO_TCP, TCP_REPAIR_QUEUE, TCP_SEND_QUEUE)
seq = s.getsockopt(socket.IPPROTO_TCP, TCP_QUEUE_SEQ)
s.setsockopt(socket.IPPROTO_TCP, TCP_REPAIR_QUEUE, TCP_RECV_QUEUE)
ack = s.getsockopt(socket.IPPROTO_TCP, TCP_QUEUE_SEQ)
src, sport = s.getsockname()[:2]
def seg(seq, d):
    ip = IPv6(src=src, dst=kip) if ":" in kip else IP(src=src, dst=kip, flags="DF")
    return Ether(dst=mac) / ip / TCP(sport=sport, dport=port, seq=seq & 0xffffffff, ack=ack & 0xffffffff,
                                     flags="PA", window=65535) / Raw(d)
d = os.urandom(6000)
sendp(seg(seq, d), iface=dev, verbose=False)
time.sleep(1)
b = bytearray(bytes(seg(seq + 6000, os.urandom(6000))))
b[-100] ^= 0x10
sendp(Ether(bytes(b)), iface=dev, verbose=False)
time.sleep(3)
print(6100, hashlib.sha256(d).hexdigest())
EOF
) || fail "the peer could not send the segments to $kip"
	wait "$srv" || fail "the kernel server on $kip behind the TAP failed: $(cat "$tmp/tcp.$port")"
	[ "$(cat "$tmp/tcp.$port")" = "$want" ] ||
		fail "the kernel server on $kip got '$(cat "$tmp/tcp.$port")', expected '$want' (6100 bytes: the corrupt segment must not arrive)"
	d1=$(gw_metric "$ETH_STATS" 'ibgw_exception_tap_write_drops_total')
	c1=$(gw_metric "$ETH_STATS" 'ibgw_tcp_checksum_errors_total{worker="0"}')
	[ "$d1" = "$d0" ] && [ "$c1" = $((c0 + 1)) ] ||
		fail "$kip: TAP write drops $d0 -> $d1 (expected none), TCP checksum errors $c0 -> $c1 (expected the corrupt segment)"
}
tap_segment "$KIP" 9998
ok "kernel TAP: a 6000-byte TCP segment for a kernel socket segmented on its way in (net_tap's TSO), the kernel server got all 6100 bytes at once (sha256 equal), no TAP drop; the next one with a flipped bit dropped as a checksum error, nothing of it passed"

# 5. the same over IPv6, which net_tap cannot segment (rte_gso: TCP/IPv4 only): ibgwd cuts it itself.
# The TAP gets an IPv6 address of the port's prefix (no DAD), as an operator gives it one; ibgwd
# announces it
KIP6=2001:db8:0:1::77
sysctl -qw "net.ipv6.conf.$TAP.accept_dad=0"
sysctl -qw "net.ipv6.conf.$TAP.disable_ipv6=0"
ip -6 addr add "$KIP6/64" dev "$TAP" nodad || fail "cannot give the TAP $KIP6"
for _ in $(seq 50); do eth_ns ping -6 -c 1 -W 1 "$KIP6" >/dev/null 2>&1 && break; sleep 0.1; done
tap_segment "$KIP6" 9997
ok "kernel TAP over IPv6: a 6000-byte TCP segment cut by ibgwd, the kernel server got all 6100 bytes at once (sha256 equal), no TAP drop; the next one with a flipped bit dropped as a checksum error, nothing of it passed"
gw_stop || fail "ibgwd exited with $? (sanitizer report or shutdown error)"
ok "clean shutdown"
