#!/bin/bash
# In-VM half of tests/eth/test_vhost6.sh (see there).
set -u
cd "$(dirname "$0")/../.."
export ETH_LINK=vhost IBGWD=$PWD/${BUILD:-build}/release/ibgwd # ASan cannot run in the VM
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
# the tests' nc is OpenBSD's (-N), which the VM has under its own name (busybox's nc comes first)
mkdir -p /tmp/vhost-bin && ln -sf "$(command -v nc.openbsd)" /tmp/vhost-bin/nc && export PATH=/tmp/vhost-bin:$PATH
SIZE=${ETH_V6_SIZE:-20M}

# TCP over IPv6 with the offloads: negotiated, used both ways (TSO frames out, merged frames in),
# every byte intact, the MSS of IPv6 on the wire (as guest_vhost.sh's offload_run for IPv4)
(
	eth_test_init
	eth_setup
	eth_peer_v6
	eth_gw_start "$tmp/ibgw.conf" "offloads = 1
address6 = $ETH_GW_IP6/64
$(gw_routes <<<'echo tcp:7 echo')"
	grep -q 'offloads: tx-checksum tso rx-checksum lro' "$GW_LOG" || fail "offloads not all taken (see $GW_LOG)"
	head -c "$SIZE" /dev/urandom >"$tmp/in"
	want=$(sha256sum <"$tmp/in" | cut -d' ' -f1)
	got=$(eth_ns timeout 120 nc -N "$ETH_GW_IP6" 7 <"$tmp/in" | sha256sum | cut -d' ' -f1)
	[ "$got" = "$want" ] || fail "$SIZE echoed over IPv6 differently"
	w='{worker="0"}' p='{port="0"}'
	m() { gw_metric "$ETH_STATS" "ibgw_$1"; }
	rx=$(m "port_rx_packets_total$p") tx=$(m "port_tx_packets_total$p")
	sin=$(m "tcp_segments_in_total$w") sout=$(m "tcp_segments_out_total$w")
	# 1428 bytes of payload a segment: 1500 - 40 (IPv6) - 20 (TCP) - 12 (timestamps)
	n=$(($(stat -c %s "$tmp/in") / 1428))
	echo "IPv6, offloads = 1: frames in $rx for $sin segments, frames out $tx for $sout segments"
	[ "$(m "tcp_checksum_errors_total$w")" = 0 ] || fail "$(m "tcp_checksum_errors_total$w") TCP checksum errors"
	[ "$(m "tcp_header_errors_total$w")" = 0 ] && [ "$(m "ip6_header_errors_total$w")" = 0 ] ||
		fail "header errors: TCP $(m "tcp_header_errors_total$w"), IPv6 $(m "ip6_header_errors_total$w")"
	[ "$sin" -ge "$n" ] && [ "$sout" -ge "$n" ] || fail "segment counters too low (< $n)"
	[ $((rx * 4)) -lt "$sin" ] || fail "LRO over IPv6: $rx frames for $sin segments"
	[ $((tx * 4)) -lt "$sout" ] || fail "TSO over IPv6: $tx frames for $sout segments"
	ok "IPv6 with offloads: $SIZE echoed intact; $rx frames in / $sin segments, $tx frames out / $sout segments, no checksum or header error"

	# the segment sizes the kernel peer sees: it sends 1428-byte segments (ibgwd's MSS 1440 less the
	# timestamps) and measures ibgwd's (the TSO frames cut by the device, gso_size) as the same
	out=$(eth_ns timeout 30 "$PY3" -c "
import socket, struct, threading, os
s = socket.create_connection(('$ETH_GW_IP6', 7))
data = os.urandom(1 << 20)
threading.Thread(target=lambda: (s.sendall(data), s.shutdown(socket.SHUT_WR))).start()
got = bytearray()
while True:
    b = s.recv(1 << 16)
    if not b:
        break
    got += b
assert got == data, 'echo differs'
i = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
snd_mss, rcv_mss = struct.unpack_from('II', i, 16)
print(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG), snd_mss, rcv_mss)") || fail "1 MB echo over IPv6 for the MSS: $out"
	[ "$out" = "1428 1428 1428" ] || fail "IPv6 segment sizes (TCP_MAXSEG, snd_mss, rcv_mss) $out, not 1428"
	ok "IPv6 MSS: the peer sends and receives 1428-byte segments (TCP_MAXSEG, snd_mss, rcv_mss $out)"
	gw_stop || fail "ibgwd exited with $?"
) || exit 1

# the engine's IPv6 test on this link (the link-local address, the dual-stack listener, 300 connections)
ETH_BIG_SIZE=$SIZE bash tests/eth/test_tcp6_integrity.sh || exit 1
echo "PASS: TCP over IPv6 on the vhost-net link"
