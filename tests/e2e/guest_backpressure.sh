#!/bin/bash
# In-VM half of tests/e2e/test_e2e_backpressure.sh: slow receivers on either side, at the same time.
#   slow TCP receiver (outbound route slow_tcp): rs_peer sends $SIZE through ib:7000 to a kernel TCP
#     server that reads nothing for $STALL s: the gateway must withhold rsocket credits (the IB sender
#     stalls) instead of buffering;
#   slow IB reader (inbound route slow_ib): a kernel TCP client sends $SIZE through tcp:9000 to an
#     rsocket server that reads nothing for $STALL s: the gateway's TCP window must close.
# While both stall: the bytes the gateway took in stay within the configured buffers, ibgwd's VmRSS
# stays within those buffers plus a constant, and the stall counters grow. Afterwards every byte
# arrives (sha256 at both ends).
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/guest_lib.sh
SIZE=${E2E_BP_SIZE:-16000000}
STALL=${E2E_STALL:-10}
# per-session buffers, the defaults of conf/conf.c spelled out: they are what the bounds below use
IB_RBUF=131072 IB_SBUF=131072 TCP_RBUF=262144 TCP_SBUF=262144
SESSION_BUFS=$((IB_RBUF + IB_SBUF + TCP_RBUF + TCP_SBUF))
KERNEL_SLACK=$((1024 * 1024)) # what the slow peers' own kernels/rsocket may hold (socket buffers)
RSS_CONST_KB=$((12 * 1024))	 # mbufs, IB connection objects and allocator slack touched afresh
bufs="ib_rbuf=$IB_RBUF ib_sbuf=$IB_SBUF tcp_rbuf=$TCP_RBUF tcp_sbuf=$TCP_SBUF"
e2e_start "$(gw_routes <<EOF
slow_tcp	ib:7000		tcp:$ETH_PEER_IP:5000	$bufs
slow_ib		tcp:9000	ib:$IB:7600		$bufs
warm_out	ib:7001		tcp:$ETH_PEER_IP:5001	$bufs
warm_in		tcp:9001	ib:$IB:7601		$bufs
EOF
)"
bg tsink npeer tcp-sink 5000 "$T/tsink.log" --stall "$STALL" --rcvbuf 65536
bg techo npeer tcp-serve 5001 "$T/techo.log"
bg rsink peer rs-serve "$IB" 7600 "$T/rsink.log" sink --stall "$STALL"
bg recho peer rs-serve "$IB" 7601 "$T/recho.log"
wait_for "grep -q listening $T/tsink.out && grep -q listening $T/techo.out && grep -q listening $T/rsink.out && grep -q listening $T/recho.out" 30 ||
	fail "peers did not start"

# warm-up through the same kinds of sessions: pools (mbufs, IB buffers) get touched once, so what
# RSS does afterwards is about the sessions, not first-touch of preallocated memory
bg w1 "$TOOLS/rs_peer" -p 7001 "$IB" echo 8000000
bg w2 npeer tcp-client "$ETH_GW_IP" 9001 8000000
reap w1 && reap w2 || fail "warm-up transfers failed"
rss0=$(rss)
echo "    RSS after warm-up: $rss0 KiB"

zw0=$(m 'ibgw_tcp_zero_window_total{worker="0",dir="sent"}')
wh0=$(mf ibgw_ib_credit_withheld_seconds_total)
cs0=$(mf ibgw_ib_credit_stall_seconds_total)
ibrx0=$(m 'ibgw_ib_bytes_total{worker="0",dir="rx"}')
tcpin0=$(m 'ibgw_tcp_bytes_in_total{worker="0"}')
t0=$(date +%s.%N)
bg snd_ib "$TOOLS/rs_peer" -t 300 -p 7000 "$IB" send "$SIZE"
bg snd_tcp npeer tcp-send "$ETH_GW_IP" 9000 "$SIZE"
# sample while the receivers sleep
rss_max=$rss0 tcpbuf_max=0 held_out_max=0 held_in_max=0 held_samples= in_ib= in_tcp=
while awk -v t0="$t0" -v s="$STALL" -v now="$(date +%s.%N)" 'BEGIN { exit !(now - t0 < s - 1.5) }'; do
	r=$(rss)
	[ "$r" -gt "$rss_max" ] && rss_max=$r
	# one scrape per sample: under TCG each costs a good fraction of a second
	curl -s "http://127.0.0.1:$STATS/metrics" >"$T/scrape"
	v() { awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' "$T/scrape"; }
	# what got through the gateway so far, from the last scrape that surely ended inside the stall
	# (the receivers' stalls start at their accept, after t0; on a loaded host one loop round can
	# take seconds, so reading the counters after the loop could land after the stall)
	if awk -v t0="$t0" -v s="$STALL" -v now="$(date +%s.%N)" 'BEGIN { exit !(now - t0 < s) }'; then
		in_ib=$(($(v 'ibgw_ib_bytes_total{worker="0",dir="rx"}') - ibrx0))
		in_tcp=$(($(v 'ibgw_tcp_bytes_in_total{worker="0"}') - tcpin0))
	fi
	b=$(v 'ibgw_tcp_buffer_bytes{worker="0"}')
	[ "$b" -gt "$tcpbuf_max" ] && tcpbuf_max=$b
	ho=$(v 'ibgw_route_buffer_bytes{route="slow_tcp",dir="ib_to_eth"}') hi=$(v 'ibgw_route_buffer_bytes{route="slow_ib",dir="eth_to_ib"}')
	held_samples="$held_samples $ho/$hi"
	[ "$ho" -gt "$held_out_max" ] && held_out_max=$ho
	[ "$hi" -gt "$held_in_max" ] && held_in_max=$hi
	sleep 0.4
done
[ -n "$in_ib" ] || fail "no scrape ended inside the ${STALL} s stall"
bp_out=$(mf 'ibgw_route_backpressure_seconds_total{route="slow_tcp",dir="ib_to_eth"}')
bp_in=$(mf 'ibgw_route_backpressure_seconds_total{route="slow_ib",dir="eth_to_ib"}')
zw1=$(m 'ibgw_tcp_zero_window_total{worker="0",dir="sent"}')
limit=$((SESSION_BUFS + KERNEL_SLACK))
echo "    during the ${STALL} s stall: IB sender got $in_ib bytes in, TCP sender $in_tcp; bound $limit"
echo "    RSS max $rss_max KiB (+$((rss_max - rss0)) KiB), TCP buffers max $tcpbuf_max bytes"
check "[ $in_ib -le $limit ]" "slow TCP receiver: the IB sender was held at $in_ib bytes (of $SIZE) by withheld credits"
check "[ $in_tcp -le $limit ]" "slow IB reader: the TCP sender was held at $in_tcp bytes (of $SIZE) by a closed window"
check "[ $((rss_max - rss0)) -le $((2 * SESSION_BUFS / 1024 + RSS_CONST_KB)) ]" \
	"VmRSS grew by $((rss_max - rss0)) KiB <= 2 sessions' buffers ($((2 * SESSION_BUFS / 1024)) KiB) + $RSS_CONST_KB KiB"
check "[ $tcpbuf_max -le $((2 * (TCP_RBUF + TCP_SBUF) + 65536)) ]" "TCP engine buffers stayed within the two sessions' TCP buffers ($tcpbuf_max bytes)"
check "fgt $bp_out $((STALL / 2))" "route slow_tcp: backpressure ib_to_eth counted while under way (${bp_out} s)"
check "fgt $bp_in $((STALL / 2))" "route slow_ib: backpressure eth_to_ib counted while under way (${bp_in} s)"
echo "    buffer occupancy samples (slow_tcp ib_to_eth / slow_ib eth_to_ib):$held_samples"
check "[ $held_out_max -gt 0 ] && [ $held_out_max -le $IB_RBUF ]" "route slow_tcp: buffer occupancy ib_to_eth up to $held_out_max bytes (0 < it <= ib_rbuf $IB_RBUF)"
check "[ $held_in_max -gt 0 ] && [ $held_in_max -le $TCP_RBUF ]" "route slow_ib: buffer occupancy eth_to_ib up to $held_in_max bytes (0 < it <= tcp_rbuf $TCP_RBUF)"
check "[ $zw1 -gt $zw0 ]" "slow IB reader: TCP zero windows sent ($((zw1 - zw0)))"

reap snd_ib; rc1=$?
reap snd_tcp; rc2=$?
dt=$(awk -v t0="$t0" -v now="$(date +%s.%N)" 'BEGIN { printf "%.1f", now - t0 }')
out_ib=$(cat "$T/snd_ib.out") out_tcp=$(cat "$T/snd_tcp.out")
sha_ib=$(echo "$out_ib" | sed -n 's/.* sha_sent=\([0-9a-f]*\).*/\1/p')
sha_tcp=$(echo "$out_tcp" | sed -n 's/.* sha=\([0-9a-f]*\).*/\1/p')
echk "[ $rc1 = 0 ] && echo \"\$out_ib\" | grep -q '^ok .*sent=$SIZE '" "slow TCP receiver: the IB sender finished once the reader resumed (${dt} s)" ||
	echo "      $out_ib"
check "wait_for 'log_has $T/tsink.log 1' 10 && grep -q \"^conn in=$SIZE sha_in=$sha_ib \" $T/tsink.log" \
	"slow TCP receiver: every byte arrived, sha256 equal ($(echo "$sha_ib" | cut -c1-12))"
echk "[ $rc2 = 0 ] && echo \"\$out_tcp\" | grep -q '^ok sent=$SIZE '" "slow IB reader: the TCP sender finished once the reader resumed" ||
	echo "      $out_tcp"
check "wait_for 'log_has $T/rsink.log 1' 10 && grep -q \"^conn in=$SIZE sha_in=$sha_tcp \" $T/rsink.log" \
	"slow IB reader: every byte arrived, sha256 equal ($(echo "$sha_tcp" | cut -c1-12))"
wh1=$(mf ibgw_ib_credit_withheld_seconds_total)
cs1=$(mf ibgw_ib_credit_stall_seconds_total)
echo "    IB credits withheld from the IB sender: $(awk -v a="$wh0" -v b="$wh1" 'BEGIN { print b - a }') s; gateway stalled on IB credits: $(awk -v a="$cs0" -v b="$cs1" 'BEGIN { print b - a }') s; zero windows sent: $((zw1 - zw0))"
check "fgt $(awk -v a="$wh0" -v b="$wh1" 'BEGIN { print b - a }') $((STALL / 2))" "ibgw_ib_credit_withheld_seconds_total rose by more than $((STALL / 2)) s"
check "fgt $(awk -v a="$cs0" -v b="$cs1" 'BEGIN { print b - a }') $((STALL / 2))" "ibgw_ib_credit_stall_seconds_total rose by more than $((STALL / 2)) s"
check "[ \$(m 'ibgw_route_sessions_ended_total{route=\"slow_tcp\",reason=\"ok\"}') = 1 ] && [ \$(m 'ibgw_route_sessions_ended_total{route=\"slow_ib\",reason=\"ok\"}') = 1 ]" \
	"both stalled sessions ended ok"
check "[ \$(m 'ibgw_route_bytes_total{route=\"slow_tcp\",dir=\"ib_to_eth\"}') = $SIZE ] && [ \$(m 'ibgw_route_bytes_total{route=\"slow_ib\",dir=\"eth_to_ib\"}') = $SIZE ]" \
	"route bytes: $SIZE each"
check "[ \$(m 'ibgw_route_buffer_bytes{route=\"slow_tcp\",dir=\"ib_to_eth\"}') = 0 ] && [ \$(m 'ibgw_route_buffer_bytes{route=\"slow_ib\",dir=\"eth_to_ib\"}') = 0 ]" \
	"buffer occupancy back to 0 once the sessions ended"
echo "    RSS at the end: $(rss) KiB"
e2e_done
