#!/bin/bash
# In-VM half of tests/bench/bench_ib.sh. Same device (loop topology: one rxe for both ends), same
# client, same sizes, interleaved runs (A B A B ...) so that both sides see the same noise:
#   throughput: rs_peer send BYTES -> ibgwd discard route   vs   -> rs_peer serve discard (rsocket,
#               busy-polling with non-blocking calls: the fastest rsocket receiver)
#   latency:    rstream 64 B ping-pong -> ibgwd echo route  vs   -> rstream server (rsocket)
#               rs_peer latency 64 B   -> ibgwd echo route  vs   -> rs_peer serve echo (rsocket)
# Prints one line per measurement and the ratios (median of REPS runs). BENCH_BYTES, BENCH_REPS,
# BENCH_SIZES (rsend sizes), BENCH_IDLE_SLEEP ([gateway] idle_sleep of ibgwd) tune it.
set -u
cd "$(dirname "$0")/../.."
. tests/ib/guest_lib.sh
IBGWD=$GW_ROOT/${BUILD:-build}/release/ibgwd # a benchmark measures the optimized build
BYTES=${BENCH_BYTES:-64M}
REPS=${BENCH_REPS:-3}
SIZES=${BENCH_SIZES:-65536 4096}
H=$IB_ADDR_B
GW_EXTRA="idle_sleep = ${BENCH_IDLE_SLEEP:-100us}"
ib_gw_start "[ib]
bind = $H
[route discard]
listen = ib:7472
connect = discard
max_sessions = 4
[route echo]
listen = ib:7471
connect = echo
max_sessions = 4"

median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
ref_pid=
ref_start() { # MODE: rs_peer serve on port 7480
	$TOOLS/rs_peer -p 7480 "$H" serve "$1" spin >/tmp/ref.out 2>&1 &
	ref_pid=$!
	for _ in $(seq 100); do grep -q listening /tmp/ref.out && return 0; sleep 0.05; done
	echo "reference server did not start"; cat /tmp/ref.out; exit 1
}
ref_stop() { kill "$ref_pid" 2>/dev/null; wait "$ref_pid" 2>/dev/null; ref_pid=; }
trap 'ref_stop; gw_cleanup' EXIT

echo "== throughput: $BYTES one way, client rs_peer, receiver = ibgwd discard route vs rsocket (rs_peer serve)"
for sz in $SIZES; do
	ref_start discard
	: >/tmp/gw.v; : >/tmp/rs.v
	for r in $(seq "$REPS"); do
		g=$($TOOLS/rs_peer -m "$sz" -p 7472 "$H" send "$BYTES" | sed -n 's/.*mbit_s=\([0-9.]*\).*/\1/p')
		s=$($TOOLS/rs_peer -m "$sz" -p 7480 "$H" send "$BYTES" | sed -n 's/.*mbit_s=\([0-9.]*\).*/\1/p')
		echo "   rsend ${sz} B, run $r: ibgwd ${g:-?} Mbit/s, rsocket ${s:-?} Mbit/s"
		echo "${g:-0}" >>/tmp/gw.v; echo "${s:-0}" >>/tmp/rs.v
	done
	ref_stop
	g=$(median </tmp/gw.v) s=$(median </tmp/rs.v)
	echo "RESULT throughput rsend=${sz} ibgwd_mbit_s=$g rsocket_mbit_s=$s ratio=$(awk -v a="$g" -v b="$s" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')"
done

echo "== latency: 64 B round trip through the echo route vs an rsocket echo"
: >/tmp/gw.v; : >/tmp/rs.v
for r in $(seq "$REPS"); do
	g=$(timeout 120 rstream -s "$H" -p 7471 -S 64 -C 1 -I 500 | awk 'NR == 2 {print $NF}')
	# rstream's server serves one client and exits: one per run
	timeout 130 rstream -b "$H" -p 7481 -S 64 -C 1 -I 500 >/dev/null 2>&1 &
	rsp=$!
	sleep 1
	s=$(timeout 120 rstream -s "$H" -p 7481 -S 64 -C 1 -I 500 | awk 'NR == 2 {print $NF}')
	wait $rsp
	# rstream's usec/xfer is half a round trip: one transfer each way per iteration
	echo "   rstream run $r: ibgwd ${g:-?} us/xfer, rstream server ${s:-?} us/xfer"
	echo "${g:-0}" >>/tmp/gw.v; echo "${s:-0}" >>/tmp/rs.v
done
g=$(median </tmp/gw.v) s=$(median </tmp/rs.v)
echo "RESULT latency rstream_64B ibgwd_rtt_us=$(awk -v v="$g" 'BEGIN {print 2 * v}') rstream_rtt_us=$(awk -v v="$s" 'BEGIN {print 2 * v}') ratio=$(awk -v a="$g" -v b="$s" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')"
ref_start echo
: >/tmp/gw.v; : >/tmp/rs.v
for r in $(seq "$REPS"); do
	g=$($TOOLS/rs_peer -p 7471 "$H" latency 64 500 | sed -n 's/.*rtt_us=\([0-9.]*\).*/\1/p')
	s=$($TOOLS/rs_peer -p 7480 "$H" latency 64 500 | sed -n 's/.*rtt_us=\([0-9.]*\).*/\1/p')
	echo "   rs_peer run $r: ibgwd ${g:-?} us, rsocket echo ${s:-?} us"
	echo "${g:-0}" >>/tmp/gw.v; echo "${s:-0}" >>/tmp/rs.v
done
ref_stop
g=$(median </tmp/gw.v) s=$(median </tmp/rs.v)
echo "RESULT latency rs_peer_64B ibgwd_rtt_us=$g rsocket_rtt_us=$s ratio=$(awk -v a="$g" -v b="$s" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')"
gw_stop TERM 30
