#!/bin/bash
# In-VM half of tests/e2e/test_e2e_faults.sh: faults around sessions of both route kinds.
#   - netem (loss, duplication, delay with jitter, reordering) on the Ethernet link, both directions
#     (egress of the namespace's veth, and its ingress through an ifb), during transfers both ways;
#   - the kernel TCP server of an outbound route killed mid-stream: the rsocket client sees its stream
#     end in error, the session is freed (reason reset);
#   - the rsocket client of an outbound route killed mid-stream: the kernel TCP server gets a reset
#     (design.md: IB error <-> abort the other side), the session is freed;
#   - the TCP client of an inbound route to ibgwd's own IB echo killed mid-stream: the echo session's
#     rsocket peer (ibgwd's outbound connection) DISCONNECTs while the echo still owes it bytes; that
#     session must end at once as a reset, not wait for a reader that is gone (the soak found it
#     held until stall_timeout);
#   - destinations down, each route kind: refused (nobody listens) and timeout (nobody answers),
#     the clients turned away and the sessions counted by reason.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/guest_lib.sh
SIZE=${E2E_FAULT_SIZE:-3000000}
e2e_start "$(gw_routes <<EOF
out		ib:7000		tcp:$ETH_PEER_IP:5000
in		tcp:9000	ib:$IB:7600
kill_srv	ib:7001		tcp:$ETH_PEER_IP:5001
kill_cli	ib:7002		tcp:$ETH_PEER_IP:5002
out_refused	ib:7010		tcp:$ETH_PEER_IP:5999
out_silent	ib:7011		tcp:198.18.0.99:5000	connect_timeout=2s
in_refused	tcp:9010	ib:$IB:7699
in_silent	tcp:9011	ib:198.19.0.99:7600	connect_timeout=2s
loop		tcp:9020	ib:$IB:7020
iecho		ib:7020		echo
EOF
)"
bg techo npeer tcp-serve 5000 "$T/techo.log"
bg tkill npeer tcp-serve 5001 "$T/tkill.log"
bg tvict npeer tcp-serve 5002 "$T/tvict.log"
bg recho peer rs-serve "$IB" 7600 "$T/recho.log"
wait_for "grep -q listening $T/techo.out && grep -q listening $T/tkill.out && grep -q listening $T/tvict.out && grep -q listening $T/recho.out" 30 ||
	fail "peers did not start"
ended() { m "ibgw_route_sessions_ended_total{route=\"$1\",reason=\"$2\"}"; }

# ---- netem both ways on the Ethernet link, transfers through both route kinds ----
eth_ns ip link add ifbe2e type ifb
eth_ns ip link set ifbe2e up
eth_ns tc qdisc add dev "$ETH_PEER" handle ffff: ingress
eth_ns tc filter add dev "$ETH_PEER" parent ffff: matchall action mirred egress redirect dev ifbe2e
IMPAIR="delay 10ms 5ms reorder 25% 50% loss 2% duplicate 1%"
eth_ns tc qdisc add dev "$ETH_PEER" root netem $IMPAIR
eth_ns tc qdisc add dev ifbe2e root netem $IMPAIR
check "eth_ns tc qdisc show dev ifbe2e | grep -q 'loss 2%' && eth_ns tc qdisc show dev $ETH_PEER | grep -q 'duplicate 1%'" \
	"netem on the Ethernet link both ways: $IMPAIR"
rx0=$(m 'ibgw_tcp_retransmits_total{worker="0"}') ooo0=$(m 'ibgw_tcp_out_of_order_segments_total{worker="0"}')
echo_both nout nin "$SIZE" -t 200
echk "[ $rc_out = 0 ] && grep -q '^ok .*sent=$SIZE recv=$SIZE ' $T/nout.out" "impaired link: outbound $SIZE bytes each way, echo identical" || cat "$T/nout.out"
sha=$(sed -n 's/.* sha_sent=\([0-9a-f]*\).*/\1/p' "$T/nout.out")
check "wait_for 'log_has $T/techo.log 1' 10 && grep -q \"^conn in=$SIZE sha_in=$sha \" $T/techo.log" "impaired link: the TCP server received the exact bytes"
echk "[ $rc_in = 0 ] && grep -q '^ok sent=$SIZE got=$SIZE ' $T/nin.out" "impaired link: inbound $SIZE bytes each way, echo identical" || cat "$T/nin.out"
sha=$(sed -n 's/.* sha=\([0-9a-f]*\).*/\1/p' "$T/nin.out")
check "wait_for 'log_has $T/recho.log 1' 10 && grep -q \"^conn in=$SIZE sha_in=$sha \" $T/recho.log" "impaired link: the rsocket server received the exact bytes"
rx1=$(m 'ibgw_tcp_retransmits_total{worker="0"}') ooo1=$(m 'ibgw_tcp_out_of_order_segments_total{worker="0"}')
echo "    both transfers in ${dt} s; $((rx1 - rx0)) retransmits, $((ooo1 - ooo0)) out-of-order segments"
check "[ $rx1 -gt $rx0 ] && [ $ooo1 -gt $ooo0 ]" "the impairments were felt (retransmits and out-of-order segments counted)"
eth_ns tc qdisc del dev "$ETH_PEER" root
eth_ns tc qdisc del dev "$ETH_PEER" ingress
eth_ns ip link del ifbe2e

# ---- the TCP server dies mid-stream ----
bg kc "$TOOLS/rs_peer" -t 60 -p 7001 "$IB" echo 200000000
wait_for "[ \$(m 'ibgw_route_bytes_total{route=\"kill_srv\",dir=\"eth_to_ib\"}') -gt 1000000 ]" 30
{ kill -KILL "${PIDS[tkill]}" && wait "${PIDS[tkill]}"; } 2>/dev/null
unset "PIDS[tkill]"
reap kc; rc=$?
echo "    rs_peer: $(tr '\n' ' ' <"$T/kc.out" | cut -c1-160)"
check "[ $rc != 0 ] && grep -qi 'reset\|refused\|error' $T/kc.out" "TCP server killed: the rsocket client's stream ended in error (exit $rc)"
check "wait_for '[ \$(m \"ibgw_route_sessions_active{route=\\\"kill_srv\\\"}\") = 0 ]' 10" "TCP server killed: the session was freed"
check "[ \$(ended kill_srv reset) = 1 ]" "TCP server killed: counted as reset"

# ---- the rsocket client dies mid-stream ----
bg vc "$TOOLS/rs_peer" -t 60 -p 7002 "$IB" echo 200000000
wait_for "[ \$(m 'ibgw_route_bytes_total{route=\"kill_cli\",dir=\"eth_to_ib\"}') -gt 1000000 ]" 30
{ kill -KILL "${PIDS[vc]}" && wait "${PIDS[vc]}"; } 2>/dev/null
unset "PIDS[vc]"
check "wait_for 'log_has $T/tvict.log 1' 20" "rsocket client killed: the TCP server's connection ended"
echo "    TCP server: $(cut -c1-30 "$T/tvict.log") ... $(sed -n 's/.*\(err=.*\)/\1/p' "$T/tvict.log")"
check "grep -q 'err=ConnectionResetError' $T/tvict.log" "rsocket client killed: the TCP server got a reset"
check "wait_for '[ \$(m \"ibgw_route_sessions_active{route=\\\"kill_cli\\\"}\") = 0 ]' 10" "rsocket client killed: the session was freed"
check "[ \$(ended kill_cli reset) = 1 ]" "rsocket client killed: counted as reset"

# ---- the TCP client of tcp -> ib -> (ibgwd's) echo dies mid-stream ----
bg lc npeer tcp-client "$ETH_GW_IP" 9020 200000000
wait_for "[ \$(m 'ibgw_route_bytes_total{route=\"iecho\",dir=\"ib_to_diag\"}') -gt 1000000 ] || [ \$(m 'ibgw_route_bytes_total{route=\"loop\",dir=\"eth_to_ib\"}') -gt 2000000 ]" 30
{ kill -KILL "${PIDS[lc]}" && wait "${PIDS[lc]}"; } 2>/dev/null
unset "PIDS[lc]"
check "wait_for '[ \$(m \"ibgw_route_sessions_active{route=\\\"loop\\\"}\") = 0 ]' 10" "TCP client killed: the inbound session was freed"
check "wait_for '[ \$(m \"ibgw_route_sessions_active{route=\\\"iecho\\\"}\") = 0 ]' 10" \
	"TCP client killed: the IB echo session, whose peer left while it owed bytes, was freed at once ($(m 'ibgw_route_sessions_active{route="iecho"}') active)"
# (the echo's end reads as orderly when its peer left just after taking every byte it was owed: an
# rsocket DISCONNECT looks the same whether the peer closed or aborted)
check "[ \$(ended loop reset) = 1 ] && [ \$((\$(ended iecho reset) + \$(ended iecho ok))) = 1 ]" \
	"TCP client killed: the inbound session counted as reset, the echo session once (reset $(ended iecho reset), ok $(ended iecho ok))"

# ---- destinations down ----
# the four clients at once, each on its own route (one after the other, the two 2 s connect timeouts
# and the client starts took ~7 s under TCG); down NAME CMD...: CMD in the background, output in
# $T/NAME.out, "exit-status milliseconds" in $T/NAME.rc
down() {
	local name=$1
	shift
	{
		local t0
		t0=$(date +%s%N)
		"$@" >"$T/$name.out" 2>&1
		echo "$? $((($(date +%s%N) - t0) / 1000000))" >"$T/$name.rc"
	} &
	PIDS[$name]=$!
}
down d1 "$TOOLS/rs_peer" -t 30 -p 7010 "$IB" echo 1000
down d2 "$TOOLS/rs_peer" -t 30 -p 7011 "$IB" echo 1000
down d3 npeer tcp-client "$ETH_GW_IP" 9010 1000
down d4 npeer tcp-client "$ETH_GW_IP" 9011 1000
for d in d1 d2 d3 d4; do reap $d; done
read -r rc1 _ <"$T/d1.rc"
read -r rc2 dt2 <"$T/d2.rc"
read -r rc3 _ <"$T/d3.rc"
read -r rc4 dt4 <"$T/d4.rc"
check "[ $rc1 != 0 ] && [ \$(ended out_refused connect_refused) = 1 ]" "outbound, nobody listening: the rsocket client turned away, counted connect_refused"
check "[ $rc2 != 0 ] && [ \$(ended out_silent connect_timeout) = 1 ]" "outbound, nobody answering: turned away after ${dt2} ms, counted connect_timeout"
check "[ $rc3 != 0 ] && wait_for '[ \$(ended in_refused connect_refused) = 1 ]' 5" "inbound, nobody listening: the TCP client turned away, counted connect_refused"
check "[ $rc4 != 0 ] && wait_for '[ \$(( \$(ended in_silent connect_timeout) + \$(ended in_silent connect_failed) )) = 1 ]' 5" \
	"inbound, nobody answering: turned away after ${dt4} ms, counted connect_timeout or connect_failed ($(ended in_silent connect_timeout)/$(ended in_silent connect_failed))"
for r in out_refused out_silent in_refused in_silent; do
	[ "$(m "ibgw_route_connects_total{route=\"$r\"}")" = 0 ] || check false "route $r: no connect counted as established"
done

# nothing else disturbed: the healthy routes still work, nothing is left behind
"$TOOLS/rs_peer" -p 7000 "$IB" echo 100000 >"$T/after1.out" 2>&1
check "grep -q '^ok ' $T/after1.out" "afterwards: outbound route still relays"
npeer tcp-client "$ETH_GW_IP" 9000 100000 >"$T/after2.out" 2>&1
check "grep -q '^ok ' $T/after2.out" "afterwards: inbound route still relays"
check "wait_for '[ \$(m ibgw_ib_connections_active) = 0 ] && [ \$(m \"ibgw_tcp_connections_active{worker=\\\"0\\\"}\") = 0 ]' 10" \
	"no IB or TCP connection left ($(m ibgw_ib_connections_active) IB, $(m 'ibgw_tcp_connections_active{worker="0"}') TCP)"
e2e_done
