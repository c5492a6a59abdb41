#!/bin/bash
# In-VM half of tests/bench/bench_ib.sh. Same device (loop topology: one rxe for both ends), same
# client, same sizes, interleaved runs (A B A B ...) so that both sides see the same noise:
#   throughput: rs_peer send BYTES -> ibgwd discard route   vs   -> rs_peer serve discard (rsocket,
#               busy-polling with non-blocking calls: the fastest rsocket receiver)
#   latency:    rstream 64 B ping-pong -> ibgwd echo route  vs   -> rstream server (rsocket)
#               rs_peer latency 64 B   -> ibgwd echo route  vs   -> rs_peer serve echo (rsocket)
# Each run is a pair measured back to back (order alternating A B, B A, ...); the ratio of a pair
# cancels the load of the moment (this machine is shared), the result is the median over the pairs
# of the pair ratios, with the medians of the raw figures beside it. A run that failed (no figure)
# drops its pair and is reported. BENCH_BYTES, BENCH_REPS, BENCH_SIZES (rsend sizes),
# BENCH_IDLE_SLEEP ([gateway] idle_sleep of ibgwd) tune it.
set -u
cd "$(dirname "$0")/../.."
. tests/ib/guest_lib.sh
IBGWD=$GW_ROOT/${BUILD:-build}/release/ibgwd # a benchmark measures the optimized build
# private copies (bench_ib.sh makes them): a build in the shared tree must not swap binaries mid-run
[ -n "${BENCH_BIN:-}" ] && IBGWD=$BENCH_BIN/ibgwd TOOLS=$BENCH_BIN
BYTES=${BENCH_BYTES:-64M}
REPS=${BENCH_REPS:-5}
SIZES=${BENCH_SIZES:-65536 4096}
H=$IB_ADDR_B
IDLE=${BENCH_IDLE_SLEEP:-100us}
GW_EXTRA="idle_sleep = $IDLE"
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

median() { sort -g | awk '{a[NR] = $1} END {if (!NR) print 0; else print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
ref_pid=
ref_start() { # MODE: rs_peer serve on port 7480
	$TOOLS/rs_peer -p 7480 "$H" serve "$1" spin >/tmp/ref.out 2>&1 &
	ref_pid=$!
	for _ in $(seq 100); do grep -q listening /tmp/ref.out && return 0; sleep 0.05; done
	echo "reference server did not start"; cat /tmp/ref.out; exit 1
}
ref_stop() { kill "$ref_pid" 2>/dev/null; wait "$ref_pid" 2>/dev/null; ref_pid=; }
# Each receiver runs alone: the reference server exists only during its own runs (a spinning one
# would take a vCPU from ibgwd's), and ibgwd is frozen (SIGSTOP) during the reference's (its idle
# polling would take CPU from the reference). Both then share the 2 vCPUs only with the client.
gw_freeze() { kill -STOP "$GW_PID"; }
gw_thaw() { kill -CONT "$GW_PID"; sleep 0.2; }
ref_run() { # MODE COMMAND...: the reference server in MODE, the command measured against it
	local mode=$1
	shift
	gw_freeze
	ref_start "$mode"
	"$@"
	ref_stop
	gw_thaw
}
trap 'ref_stop; kill -CONT "$GW_PID" 2>/dev/null; gw_cleanup' EXIT

pairs_reset() { : >/tmp/gw.v; : >/tmp/rs.v; : >/tmp/ratio.v; nfail=0; }
pair() { # G S: one pair of figures (empty: that run failed)
	if [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN {exit !(a > 0 && b > 0)}'; then
		echo "$1" >>/tmp/gw.v; echo "$2" >>/tmp/rs.v
		awk -v a="$1" -v b="$2" 'BEGIN {printf "%.4f\n", a / b}' >>/tmp/ratio.v
	else
		nfail=$((nfail + 1))
	fi
}
result() { # WHAT GW_NAME REF_NAME SCALE NOTE: the RESULT line of the pairs so far
	local g s r
	g=$(median </tmp/gw.v) s=$(median </tmp/rs.v) r=$(median </tmp/ratio.v)
	echo "RESULT idle_sleep=$IDLE $1 $2=$(awk -v v="$g" -v k="$4" 'BEGIN {print v * k}') $3=$(awk -v v="$s" -v k="$4" 'BEGIN {print v * k}') ratio=$(printf '%.2f' "$r") pairs=$(wc -l </tmp/ratio.v) failed=$nfail ($5)"
}
run_gw_first() { [ $(($1 % 2)) = 1 ]; } # A B on odd runs, B A on even ones

echo "== throughput: $BYTES one way, client rs_peer, receiver = ibgwd discard route vs rsocket (rs_peer serve spin)"
send_mbit() { # PORT SIZE: one transfer's Mbit/s, into $fig
	fig=$($TOOLS/rs_peer -m "$2" -p "$1" "$H" send "$BYTES" | sed -n 's/.*mbit_s=\([0-9.]*\).*/\1/p')
}
for sz in $SIZES; do
	pairs_reset
	for r in $(seq "$REPS"); do
		g= s=
		for who in $(run_gw_first "$r" && echo gw ref || echo ref gw); do
			fig=
			if [ $who = gw ]; then
				send_mbit 7472 "$sz"
				g=$fig
			else
				ref_run discard send_mbit 7480 "$sz"
				s=$fig
			fi
		done
		echo "   rsend ${sz} B, run $r: ibgwd ${g:-failed} Mbit/s, rsocket ${s:-failed} Mbit/s"
		pair "$g" "$s"
	done
	result "throughput rsend=${sz}B" ibgwd_mbit_s rsocket_mbit_s 1 "ibgwd/rsocket; target >= 1.0"
done

echo "== latency: 64 B round trip through the echo route vs rstream's server and an rsocket echo"
pairs_reset
for r in $(seq "$REPS"); do
	g= s=
	for who in $(run_gw_first "$r" && echo gw ref || echo ref gw); do
		if [ $who = gw ]; then
			g=$(timeout 120 rstream -s "$H" -p 7471 -S 64 -C 1 -I 500 | awk 'NR == 2 {print $NF}')
		else
			# rstream's server serves one client and exits: one per run
			gw_freeze
			timeout 130 rstream -b "$H" -p 7481 -S 64 -C 1 -I 500 >/dev/null 2>&1 &
			rsp=$!
			sleep 1
			s=$(timeout 120 rstream -s "$H" -p 7481 -S 64 -C 1 -I 500 | awk 'NR == 2 {print $NF}')
			wait $rsp
			gw_thaw
		fi
	done
	echo "   rstream run $r: ibgwd ${g:-failed} us/xfer, rstream server ${s:-failed} us/xfer"
	pair "$g" "$s"
done
# rstream's usec/xfer is half a round trip: one transfer each way per iteration
result "latency rstream_64B" ibgwd_rtt_us rstream_rtt_us 2 "ibgwd/rstream server; <= 1.0: no slower"
rtt_us() { # PORT: one latency run's mean round trip, into $fig
	fig=$($TOOLS/rs_peer -p "$1" "$H" latency 64 500 | sed -n 's/.*rtt_us=\([0-9.]*\).*/\1/p')
}
pairs_reset
for r in $(seq "$REPS"); do
	g= s=
	for who in $(run_gw_first "$r" && echo gw ref || echo ref gw); do
		fig=
		if [ $who = gw ]; then
			rtt_us 7471
			g=$fig
		else
			ref_run echo rtt_us 7480
			s=$fig
		fi
	done
	echo "   rs_peer run $r: ibgwd ${g:-failed} us, rsocket echo ${s:-failed} us"
	pair "$g" "$s"
done
result "latency rs_peer_64B" ibgwd_rtt_us rsocket_rtt_us 1 "ibgwd/rsocket echo; <= 1.0: no slower"
gw_stop TERM 30
