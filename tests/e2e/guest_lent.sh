#!/bin/bash
# In-VM half of tests/e2e/test_e2e_lent.sh: frames lent to RDMA writes (Ethernet -> IB, issue #14).
#   in    tcp:9000 -> ib:7600  an rsocket sink, killed (SIGKILL) mid-transfer each round
#   inrst tcp:9001 -> ib:7601  an rsocket sink; the TCP client resets (SO_LINGER 0) mid-transfer
#   tiny  tcp:9002 -> ib:7602  an rsocket sink that reads nothing for a while; the client sends
#                              1-byte segments
# A frame whose payload an RDMA write gathers is held (a reference) until that write completes or is
# flushed; the TCP receive queue holds its own until the session consumes the bytes. The checks:
# ibgwd survives every reset, the pool's in-use count comes back to where it was before (nothing
# held by a dead session), no hold was late (ib_lent_holds_late_total), no frame stays pinned, and
# the relayed bytes were written from frames (ib_lent_bytes_total; 0 when every byte is copied).
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/guest_lib.sh
ROUNDS=${E2E_LENT_ROUNDS:-4}
SIZE=200000000 # more than a round moves before it is cut: the sender is always mid-stream

e2e_start "$(gw_routes <<EOF
in	tcp:9000	ib:$IB:7600
inrst	tcp:9001	ib:$IB:7601
tiny	tcp:9002	ib:$IB:7602
EOF
)"
bg s1 peer rs-serve "$IB" 7601 "$T/s1.log" sink
# (s2 stalls until the check below is done, SIGUSR1, whatever the machine's speed: a fixed 8 s stall
# both cost its full length and could run out before the check on a loaded host)
bg s2 peer rs-serve "$IB" 7602 "$T/s2.log" sink --stall 90
wait_for "grep -q listening $T/s1.out && grep -q listening $T/s2.out" 30 || fail "peers did not start"
alive() { kill -0 "$GW_PID" 2>/dev/null && curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$STATS/health" | grep -q 200; }
active() { m "ibgw_route_sessions_active{route=\"$1\"}"; }
mbufs() { m "ibgw_port_mbufs_in_use{port=\"0\"}"; }
moved() { m "ibgw_route_bytes_total{route=\"$1\",dir=\"eth_to_ib\"}"; }

# ---- a clean transfer first: the bytes go out of the frames, and where the pool idles ----
bg s0 peer rs-serve "$IB" 7600 "$T/s0.log" sink
wait_for "grep -q listening $T/s0.out" 30
bg c0 npeer tcp-send "$ETH_GW_IP" 9000 20000000
reap c0; rc=$?
sha=$(sed -n 's/.* sha=\([0-9a-f]*\).*/\1/p' "$T/c0.out")
check "[ $rc = 0 ] && wait_for 'log_has $T/s0.log 1' 20 && grep -q \"^conn in=20000000 sha_in=$sha \" $T/s0.log" \
	"20 MB TCP -> IB intact (sha256 $(echo "$sha" | cut -c1-12))"
scrape
lent=$(ms 'ibgw_ib_lent_bytes_total{worker="0"}') copied=$(ms 'ibgw_copied_bytes_total{dir="eth_to_ib",worker="0"}')
echo "    written from frames: $lent bytes; copied eth_to_ib: $copied bytes"
check "[ $lent -ge 19000000 ]" "the RDMA writes gathered the bytes from the frames ($lent of 20000000)"
check "[ $((lent + copied)) -ge 20000000 ] && [ $copied -le 1000000 ]" "copies only for what could not be lent ($copied bytes)"
check "wait_for '[ \$(active in) = 0 ]' 20" "the session ended"
idle=$(mbufs)
echo "    mbufs in use at rest: $idle"
regs=$(ms 'ibgw_ib_extmem_registrations_total') rs=$(ms 'ibgw_ib_extmem_registration_seconds_total') xb=$(ms 'ibgw_ib_extmem_bytes')
echo "    frame memory registered per buffer set: $xb bytes; $regs registration(s) took $rs s ($(awk -v r="$regs" -v s="$rs" 'BEGIN { printf "%.2f", r ? s * 1000 / r : 0 }') ms each)"

# ---- resets while writes from frames are in flight, both ways of dying ----
for r in $(seq 1 "$ROUNDS"); do
	# the rsocket server is killed: its queue pair dies, our writes in flight fail or flush
	[ "$r" = 1 ] || { bg s0 peer rs-serve "$IB" 7600 "$T/s0.log" sink; wait_for "grep -q listening $T/s0.out" 30; }
	b0=$(moved in)
	bg c0 npeer tcp-send "$ETH_GW_IP" 9000 "$SIZE"
	wait_for "[ \$(moved in) -gt $((b0 + 3000000)) ]" 60
	{ kill -KILL "${PIDS[s0]}" && wait "${PIDS[s0]}"; } 2>/dev/null
	unset "PIDS[s0]"
	reap c0
	# the TCP client resets mid-stream (SO_LINGER 0): its session aborts the IB side with writes out
	b1=$(moved inrst)
	bg c1 eth_ns "$PY3" -c "
import os, socket, struct, time
s = socket.create_connection(('$ETH_GW_IP', 9001), timeout=30)
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
b = os.urandom(65536); t = time.monotonic() + 60
sent = 0
while sent < 4000000 and time.monotonic() < t:
    sent += s.send(b)
s.close()
print('reset after', sent)"
	reap c1
	check "wait_for '[ \$(active in) = 0 ] && [ \$(active inrst) = 0 ]' 30 && alive" \
		"round $r: IB peer killed and TCP client reset mid-stream ($(($(moved in) - b0)) and $(($(moved inrst) - b1)) bytes relayed): both sessions freed, ibgwd alive"
	echo "    after round $r: $(mbufs) mbufs in use, $(m 'ibgw_tcp_rx_mbufs_pinned{worker="0"}') pinned, $(m 'ibgw_ib_lent_holds_late_total{worker="0"}') holds late"
done
check "wait_for '[ \$(mbufs) -le $((idle + 16)) ]' 20" \
	"the pool is back to idle: $(mbufs) mbufs in use (at rest before: $idle)"
check "[ \$(m 'ibgw_ib_lent_holds_late_total{worker=\"0\"}') = 0 ] && [ \$(m 'ibgw_tcp_rx_mbufs_pinned{worker=\"0\"}') = 0 ]" \
	"no hold late, no frame pinned"
echo "    resets: $(m 'ibgw_tcp_rsts_in_total{worker="0"}') TCP resets in, IB closed reset/error: $(m 'ibgw_ib_connections_closed_total{worker="0",reason="reset"}')/$(m 'ibgw_ib_connections_closed_total{worker="0",reason="error"}')"

# ---- 1-byte segments: copied, none pinned, the pool stays at rest ----
pc0=$(m 'ibgw_tcp_rx_pin_copies_total{worker="0"}')
bg c2 eth_ns "$PY3" -c "
import socket, time
s = socket.create_connection(('$ETH_GW_IP', 9002), timeout=30)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
for i in range(3000):
    s.send(b'x')
    time.sleep(0.0005)
print('sent', flush=True)
time.sleep(30)"
wait_for "grep -q sent $T/c2.out" 60
pinned=$(m 'ibgw_tcp_rx_mbufs_pinned{worker="0"}') inuse=$(mbufs) pc1=$(m 'ibgw_tcp_rx_pin_copies_total{worker="0"}')
echo "    3000 1-byte sends: $((pc1 - pc0)) segments copied, $pinned frames pinned, $inuse mbufs in use"
check "[ $pinned = 0 ] && [ $inuse -le $((idle + 16)) ] && [ $((pc1 - pc0)) -gt 100 ]" \
	"1-byte segments are copied, not pinned: the pool stays at rest while the reader stalls"
stop c2
kill -USR1 "${PIDS[s2]}"
check "wait_for '[ \$(active tiny) = 0 ]' 30 && alive" "that session ended, ibgwd alive"
e2e_done
