#!/bin/bash
# In-VM half of tests/e2e/test_e2e_timeouts.sh: the session limits with an IB side, each provoked by
# real peers and counted by reason (the TCP-only cases are tests/eth/test_timeouts.sh, on the host):
#   credit stall  (route cs_in, tcp:9000 -> ib:7600): an rsocket server that accepts and then reads
#                 nothing returns no credits while a kernel TCP client keeps sending: the gateway holds
#                 bytes for the IB peer that it never takes -> credit_stall_timeout;
#   zero window   (route zw_out, ib:7000 -> tcp:5000): the mirror image, a kernel TCP server that reads
#                 nothing while an rsocket client sends -> zero_window_timeout;
#   idle          (route idle_in, tcp:9001 -> ib:7601, rsocket echo): a TCP client that sends a little,
#                 gets it back and goes quiet -> idle_timeout, the rsocket peer disconnected too.
# Each route shortens only the limit it tests to 3 s (the test takes seconds, not minutes); the stalled
# peers sleep 120 s, far beyond it. Without the limits nothing ended these sessions (they stayed
# until the peers gave up: fails before the fix).
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/guest_lib.sh
e2e_start "$(gw_routes <<EOF
cs_in		tcp:9000	ib:$IB:7600			stall_timeout=3s
zw_out		ib:7000		tcp:$ETH_PEER_IP:5000	stall_timeout=3s
idle_in		tcp:9001	ib:$IB:7601			idle_timeout=3s
EOF
)"
bg rsink peer rs-serve "$IB" 7600 "$T/rsink.log" sink --stall 120
bg tsink npeer tcp-sink 5000 "$T/tsink.log" --stall 120 --rcvbuf 65536
bg recho peer rs-serve "$IB" 7601 "$T/recho.log"
wait_for "grep -q listening $T/rsink.out && grep -q listening $T/tsink.out && grep -q listening $T/recho.out" 30 ||
	fail "peers did not start"
stalls0=$(m 'ibgw_ib_credit_stalls_total{worker="0"}')

t0=$(date +%s)
bg snd_tcp npeer tcp-send "$ETH_GW_IP" 9000 16000000
bg snd_ib "$TOOLS/rs_peer" -t 100 -p 7000 "$IB" send 16000000
bg hold npeer tcp-hold "$ETH_GW_IP" 9001
ended() { m "ibgw_route_sessions_ended_total{route=\"$1\",reason=\"$2\"}"; }
wait_for '[ "$(ended cs_in credit_stall_timeout)" = 1 ] && [ "$(ended zw_out zero_window_timeout)" = 1 ] && [ "$(ended idle_in idle_timeout)" = 1 ]' 90
echo "    limits hit after $(($(date +%s) - t0)) s (3 s limits; the VM is slow)"

check "[ \"\$(ended cs_in credit_stall_timeout)\" = 1 ]" "IB peer that returns no credits: session reset, counted as credit_stall_timeout"
check "[ \$(m 'ibgw_ib_credit_stalls_total{worker=\"0\"}') -gt $stalls0 ]" "the IB engine saw the credit stall"
reap snd_tcp
check "grep -q '^FAIL .*ConnectionResetError' $T/snd_tcp.out" "  the TCP sender got the reset ($(cat "$T/snd_tcp.out"))"
check "[ \"\$(ended zw_out zero_window_timeout)\" = 1 ]" "TCP peer that never reads: session reset, counted as zero_window_timeout"
reap snd_ib
rc=$?
check "[ $rc != 0 ]" "  the rsocket sender saw its connection end ($(tail -n 1 "$T/snd_ib.out"))"
check "[ \"\$(ended idle_in idle_timeout)\" = 1 ]" "quiet TCP client over an IB route: reset, counted as idle_timeout"
reap hold
check "grep -q '^rst' $T/hold.out" "  the TCP client got the reset ($(tail -n 1 "$T/hold.out"))"
check "wait_for 'log_has $T/recho.log 1' 20 && grep -q 'in=1000 ' $T/recho.log" "  the rsocket echo peer saw its connection end ($(cat "$T/recho.log" 2>/dev/null))"
for r in cs_in zw_out idle_in; do
	check "[ \$(m 'ibgw_route_sessions_active{route=\"$r\"}') = 0 ]" "route $r: no session left"
done
check "[ \$(m ibgw_ib_connections_active) = 0 ]" "no IB connection left"
e2e_done
