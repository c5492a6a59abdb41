#!/bin/bash
# In-VM half of tests/e2e/test_e2e_lend.sh: IB -> TCP without copies, and its reference lifetimes.
#   1. rs_peer sends $E2E_LEND_SIZE (8 MB) through ib:7000 to a kernel TCP sink. Once it runs, the link
#      towards the sink goes black (netem loss 100% on the sink's ingress) for a few seconds: the TCP
#      peer acknowledges nothing more, so the IB peer may have sent at most the receive ring (the
#      route's ib_rbuf, the [ib] default 128K) beyond what the sink received. The copying path
#      consumed IB bytes as soon as they were in the TCP send buffer: it let the IB peer send
#      ib_rbuf + tcp_sbuf (384K at the defaults) ahead, and fails this. Then 2% loss until the end:
#      retransmissions (after the black-out: of bytes whose IB credits would have gone back long
#      before) read the ring again; the sink's SHA-256 must be the sender's, and the copied-bytes
#      metric says nothing was copied ib_to_eth (af_packet takes lent memory).
#   2. $E2E_LEND_LOOPS (4) sessions reset with references in flight: a stalled sink killed (TCP RST)
#      while the sender waits on it, and an IB sender killed while its bytes wait for a stalled
#      sink, in turn (4: each way twice, the last an IB sender killed; the rounds are alike, ~5 s
#      each under TCG, and guest_lend_workers.sh resets 4 more, 2 each way, on 2 workers).
#      Afterwards ibgwd is alive, holds no session or connection, and every IB buffer set is back
#      in its pool (registered bytes = idle bytes, none kept for references); ibgwd drains and
#      exits 0 (the ASan build where the image has libasan). Each buffer set registered was the
#      receive ring and its 128 bytes of target_sgl and control slots, not ib_rbuf + ib_sbuf: the
#      routes relay by reference, and copy into frames of the port's pool (conf.h).
# Settings are the defaults a user gets (the check's bound is the [ib] rbuf_size default).
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/guest_lib.sh
SIZE=${E2E_LEND_SIZE:-8000000}
LOOPS=${E2E_LEND_LOOPS:-4}
RBUF=131072 # [ib] rbuf_size's default (conf/ibgw.conf)

e2e_start "$(gw_routes <<EOF
out	ib:7000		tcp:$ETH_PEER_IP:5000
stall	ib:7001		tcp:$ETH_PEER_IP:5001
EOF
)"
bg sink npeer tcp-sink 5000 "$T/sink.log" --progress "$T/sink.got"
wait_for "grep -q listening $T/sink.out" 30 || fail "sink did not start"
# (virtio_user, ETH_LINK=vhost: lent-dpdk-memory-tx, the IB buffer sets in DPDK's memory)
grep -qE 'offloads:.* lent-(dpdk-)?memory-tx' "$GW_LOG" && ext=1 || ext=0
echo "    port takes lent memory: $ext ($(grep -o 'offloads:.*' "$GW_LOG" | head -1))"

# the sink's ingress through an ifb, where netem drops what ibgwd sends it
eth_ns ip link add ifblend type ifb
eth_ns ip link set ifblend up
eth_ns tc qdisc add dev "$ETH_PEER" handle ffff: ingress
eth_ns tc filter add dev "$ETH_PEER" parent ffff: matchall action mirred egress redirect dev ifblend
# paced until the black-out: on a fast port (vhost-net) the whole transfer would otherwise be over
# before the black-out begins (16 Mbit/s: 8 MB take 4 s)
eth_ns tc qdisc add dev ifblend root netem rate 16mbit || fail "netem"
# bytes the sink read so far: at least what its kernel acknowledged once it has read all that arrived
# (it reads as fast as it can; during the black-out nothing arrives)
peer_got() { cat "$T/sink.got" 2>/dev/null; }

# ---- 1. credits follow the ACKs; retransmissions from the ring ----
rx0=$(m 'ibgw_tcp_retransmits_total{worker="0"}')
bg snd "$TOOLS/rs_peer" -t 200 -p 7000 "$IB" send "$SIZE"
wait_for "[ \$(m 'ibgw_route_bytes_total{route=\"out\",dir=\"ib_to_eth\"}') -gt 0 ]" 60 || fail "the transfer did not start"
eth_ns tc qdisc change dev ifblend root netem loss 100% || fail "netem"
eth_ns tc qdisc show dev ifblend
sleep 4 # the IB peer sends all it is allowed meanwhile; the TCP side retransmits into the void
got1=$(peer_got) ib1=$(m 'ibgw_ib_bytes_total{worker="0",dir="rx"}')
sleep 2
got2=$(peer_got) ib2=$(m 'ibgw_ib_bytes_total{worker="0",dir="rx"}')
ahead=$((ib2 - ${got2:-0}))
echo "    black-out: the sink got ${got2:-?} bytes, the IB peer had sent $ib2 ($ib1 2 s before): $ahead ahead (receive ring $RBUF)"
check "[ -n \"$got2\" ] && [ \"$got1\" = \"$got2\" ] && [ $got2 -lt $SIZE ]" "black-out: the sink receives nothing meanwhile"
check "[ $ahead -gt 0 ] && [ $ahead -le $RBUF ]" \
	"black-out: the IB peer got no credit for bytes the TCP peer did not acknowledge ($ahead bytes ahead <= the $RBUF-byte ring)"
check "[ \$(m 'ibgw_ib_credit_withheld_total{worker=\"0\"}') -gt 0 ]" "black-out: the IB peer waited for credits"
eth_ns tc qdisc change dev ifblend root netem loss 2%
reap snd; rc=$?
out=$(cat "$T/snd.out")
echo "    rs_peer: $out"
sha=$(echo "$out" | sed -n 's/.* sha_sent=\([0-9a-f]*\).*/\1/p')
check "[ $rc = 0 ] && echo \"\$out\" | grep -q '^ok .*sent=$SIZE '" "2% loss: rs_peer sent $SIZE bytes and saw an orderly end"
check "wait_for 'log_has $T/sink.log 1' 20 && grep -q \"^conn in=$SIZE sha_in=$sha \" $T/sink.log" \
	"2% loss: the sink received exactly the sender's bytes (sha256 $(echo "$sha" | cut -c1-12))"
eth_ns tc qdisc del dev ifblend root
rx1=$(m 'ibgw_tcp_retransmits_total{worker="0"}')
ci=$(m 'ibgw_copied_bytes_total{dir="ib_to_eth",worker="0"}') to=$(m 'ibgw_tcp_bytes_out_total{worker="0"}')
echo "    $((rx1 - rx0)) TCP retransmits; copied ib_to_eth $ci bytes for $SIZE relayed ($to sent)"
check "[ $((rx1 - rx0)) -gt 0 ]" "the TCP side retransmitted lent bytes"
if [ $ext = 1 ]; then
	check "[ $ci = 0 ]" "copied ib_to_eth = 0: frames carried the IB receive ring's memory"
else
	check "[ $ci = $to ]" "copied ib_to_eth = the bytes put into frames only ($to; the port takes no lent memory)"
fi
check "wait_for '[ \$(m \"ibgw_route_sessions_active{route=\\\"out\\\"}\") = 0 ]' 20" "the session ended"
check "[ \$(m 'ibgw_route_sessions_ended_total{route=\"out\",reason=\"ok\"}') = 1 ]" "... ok"
eth_ns tc qdisc del dev "$ETH_PEER" ingress
eth_ns ip link del ifblend

# ---- 2. resets with references in flight ----
last=0
for i in $(seq 1 "$LOOPS"); do
	bg st npeer tcp-sink 5001 "$T/st.log" --stall 60 --rcvbuf 65536
	wait_for "grep -q listening $T/st.out" 30 || fail "stalled sink did not start"
	bg ls "$TOOLS/rs_peer" -t 60 -p 7001 "$IB" send 50000000
	# the sink's window closes: ibgwd's send queue holds references, its ring is full
	# (the send queue may take more than the ring holds: it is the IB peer that waits, for credits)
	wait_for "route_stuck stall" 30 || echo "    (loop $i: the transfer never stopped)"
	last=$(m 'ibgw_route_bytes_total{route="stall",dir="ib_to_eth"}')
	if [ $((i % 2)) = 1 ]; then
		stop st # the TCP peer resets: the session aborts the IB side
		reap ls
	else
		stop ls # the IB peer dies: the session aborts the TCP side
		stop st
	fi
	wait_for "[ \$(m 'ibgw_route_sessions_active{route=\"stall\"}') = 0 ]" 30 || echo "    (loop $i: session still active)"
done
check "curl -sf -m 10 http://127.0.0.1:$STATS/health >/dev/null" "after $LOOPS resets in flight: ibgwd alive"
check "[ \$(m 'ibgw_route_sessions_total{route=\"stall\"}') = $LOOPS ] && [ \$(m 'ibgw_route_sessions_active{route=\"stall\"}') = 0 ]" \
	"$LOOPS sessions, none left"
wait_for "[ \$(m ibgw_ib_connections_active) = 0 ] && [ \$(m ibgw_ib_buffer_bytes) = \$(m ibgw_ib_buffer_idle_bytes) ]" 20
echo "    IB buffers: $(m ibgw_ib_buffer_bytes) registered, $(m ibgw_ib_buffer_idle_bytes) idle, $(m ibgw_ib_buffer_lent_sets) kept for references; TCP buffers $(m 'ibgw_tcp_buffer_bytes{worker="0"}')"
check "[ \$(m ibgw_ib_connections_active) = 0 ] && [ \$(m 'ibgw_tcp_connections_active{worker=\"0\"}') = 0 ]" "no IB or TCP connection left"
check "[ \$(m ibgw_ib_buffer_bytes) = \$(m ibgw_ib_buffer_idle_bytes) ] && [ \$(m ibgw_ib_buffer_lent_sets) = 0 ]" \
	"every IB buffer set back in its pool, none kept for references"
check "[ \$(m 'ibgw_tcp_tx_mbufs_lent{worker=\"0\"}') = 0 ]" \
	"no frame points into lent memory any more (the device freed them all, its TX ring included)"
check "[ \$(m 'ibgw_tcp_buffer_bytes{worker=\"0\"}') = 0 ] && [ \$(m 'ibgw_tcp_send_lent_bytes{worker=\"0\"}') = 0 ]" \
	"no TCP buffer held, no lent byte in a send queue (send queues and their entries freed)"
# (no set was freed: the pool keeps up to 256 per device)
sets=$(m ibgw_ib_buffer_registrations_total) bb=$(m ibgw_ib_buffer_bytes)
per=$((sets > 0 ? bb / sets : 0))
check "[ $sets -gt 0 ] && [ $bb = $((sets * (RBUF + 128))) ]" \
	"$sets IB buffer set(s) of $per bytes each: the receive ring and 128 bytes of control slots (ib_sbuf's 128K not allocated)"
e2e_done
