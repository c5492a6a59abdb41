#!/bin/bash
# In-VM half of tests/bench/bench_e2e.sh: end-to-end throughput and 64 B round trip through ibgwd,
# both directions, against the direct rsocket path (upper bound) and the stock relay (rs_relay, the
# baseline), interleaved (A B C A B C ...) so that noise hits all alike; medians and ratios.
#
#   IB side: one rxe device (loop topology), all rsockets on $H. Rsocket peers: rs_peer (client: send
#            and latency; servers: `serve discard` on 7480, `serve echo` on 7481, not spinning).
#   Ethernet side: namespace $ETH_NS running tcp_bulk serve (discard 5001, echo 5002) and the TCP
#            clients (tcp_bulk send/latency). It reaches
#              ibgwd   198.18.0.1 (DPDK net_af_packet on veth $ETH_IF; peer 198.18.0.2, tx offload off)
#              rs_relay 198.18.1.1 (kernel TCP on veth $RL_IF in the main namespace; peer 198.18.1.2,
#                      default offloads: what a stock Linux host would have)
#
#   path          IB -> Ethernet (rs_peer client)             Ethernet -> IB (tcp_bulk client in the ns)
#   direct        rs_peer -> rs_peer serve (7480/7481)        (the same: rsocket to rsocket)
#   ibgw          -> ibgwd ib:7460/7461 -> tcp 198.18.0.2     -> ibgwd tcp:9000/9001 -> ib 7480/7481
#   relay         -> rs_relay out 7490/7491 -> tcp 198.18.1.2 -> rs_relay in 198.18.1.1:9100/9101 -> 7480/7481
#
# ibgwd variants (BENCH_VARIANTS, space separated; each is started, measured and stopped once per round,
# so variants interleave too; busy-polling variants never run while others are measured):
#   default   the shipped defaults ([gateway] idle_sleep 100us, 128K IB / 256K TCP buffers)
#   busy      idle_sleep = 0 (classic DPDK busy polling)
#   bigbuf    ib_rbuf/ib_sbuf 1M and tcp_rbuf/tcp_sbuf 1M on the routes
#   idleN     idle_sleep = N us (e.g. idle10)
# Env: BENCH_BYTES (32M), BENCH_REPS (5), BENCH_WSIZE (65536: rsend/send size), BENCH_ITERS (300: round
# trips per latency run), BENCH_VARIANTS (default).
set -u
cd "$(dirname "$0")/../.."
. tests/ib/guest_lib.sh
. tests/eth/lib.sh
IBGWD=$GW_ROOT/${BUILD:-build}/release/ibgwd # a benchmark measures the optimized build
BYTES=${BENCH_BYTES:-32M}
REPS=${BENCH_REPS:-5}
WSIZE=${BENCH_WSIZE:-65536}
ITERS=${BENCH_ITERS:-300}
VARIANTS=${BENCH_VARIANTS:-default}
H=$IB_ADDR_A
RL_IF=ibr$$a RL_PEER=ibr$$b
RL_IP=198.18.1.1 RL_PEER_IP=198.18.1.2
TB=$GW_ROOT/$TOOLS/tcp_bulk RSP=$GW_ROOT/$TOOLS/rs_peer RLY=$GW_ROOT/$TOOLS/rs_relay
W=/tmp/e2e
mkdir -p $W
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	ip link del "$RL_IF" 2>/dev/null
	eth_cleanup
}
trap cleanup EXIT

bg() { # NAME CMD...: background helper, its output in $W/NAME.out
	local name=$1; shift
	"$@" >"$W/$name.out" 2>&1 &
	pids+=($!)
}
wait_for() { # FILE PATTERN
	for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	echo "did not start: $1"; cat "$1"; exit 1
}

# ---- topology ----
eth_setup
ip link add "$RL_IF" type veth peer name "$RL_PEER" netns "$ETH_NS" || fail "cannot create the relay veth"
sysctl -qw "net.ipv6.conf.$RL_IF.disable_ipv6=1" >/dev/null 2>&1
ip addr add "$RL_IP/24" dev "$RL_IF"
ip link set "$RL_IF" up
eth_ns sysctl -qw "net.ipv6.conf.$RL_PEER.disable_ipv6=1" >/dev/null 2>&1
eth_ns ip addr add "$RL_PEER_IP/24" dev "$RL_PEER"
eth_ns ip link set "$RL_PEER" up

# ---- peers that stay up the whole run (all block in poll when idle) ----
bg tcpsrv ip netns exec "$ETH_NS" "$TB" serve 5001 5002
bg rsdiscard "$RSP" -t 600 -p 7480 "$H" serve discard
bg rsecho "$RSP" -t 600 -p 7481 "$H" serve echo
bg relay_out "$RLY" out "$H:7490" "$RL_PEER_IP:5001"
bg relay_out_echo "$RLY" out "$H:7491" "$RL_PEER_IP:5002"
bg relay_in "$RLY" in "$RL_IP:9100" "$H:7480"
bg relay_in_echo "$RLY" in "$RL_IP:9101" "$H:7481"
wait_for $W/tcpsrv.out listening
wait_for $W/rsdiscard.out listening
wait_for $W/rsecho.out listening
for f in relay_out relay_out_echo relay_in relay_in_echo; do wait_for $W/$f.out ready; done
eth_ns ping -c 1 -W 5 "$RL_IP" >/dev/null || fail "relay veth: no ping"

# ---- ibgwd, one variant at a time ----
gw_up() { # VARIANT
	local gwx="idle_sleep = 100us" rx=""
	case $1 in
	default) ;;
	busy) gwx="idle_sleep = 0" ;;
	idle[0-9]*) gwx="idle_sleep = ${1#idle}us" ;;
	bigbuf) rx="ib_rbuf = 1M
ib_sbuf = 1M
tcp_rbuf = 1M
tcp_sbuf = 1M" ;;
	*) fail "unknown variant $1" ;;
	esac
	cat >$W/ibgw.conf <<EOC
[gateway]
workers = 1
stats = 127.0.0.1:$ETH_STATS
drain_timeout = 2s
memory_limit = 2G
$gwx
[eth]
vdev = net_af_packet0,iface=$ETH_IF,qdisc_bypass=1
eal_args = --no-pci --no-huge -m 512
address = $ETH_GW_IP/24
mbufs = 8191
[ib]
bind = $H
[route out]
listen = ib:7460
connect = tcp:$ETH_PEER_IP:5001
max_sessions = 4
$rx
[route out_echo]
listen = ib:7461
connect = tcp:$ETH_PEER_IP:5002
max_sessions = 4
$rx
[route in]
listen = tcp:9000
connect = ib:$H:7480
max_sessions = 4
$rx
[route in_echo]
listen = tcp:9001
connect = ib:$H:7481
max_sessions = 4
$rx
EOC
	GW_LOG=$W/ibgwd-$1.log
	gw_start $W/ibgw.conf
	gw_wait_ready "$ETH_STATS" 60
	eth_ns ping -c 1 -W 5 "$ETH_GW_IP" >/dev/null || fail "ibgwd ($1): no ping"
}
gw_down() {
	local rc
	gw_stop TERM 20
	rc=$?
	[ $rc = 0 ] || { echo "ibgwd exited $rc"; tail -n 20 "$GW_LOG"; }
	rm -rf "/var/run/dpdk/ibgwd-"* 2>/dev/null
}

# ---- measurements: one value per call on stdout (MB/s or us), empty on failure ----
mbs() { awk '{for (i = 1; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]} if ($1 == "ok" && v["secs"] > 0) printf "%.2f\n", v["sent"] / v["secs"] / 1e6}'; }
rtt() { sed -n 's/^ok latency.*rtt_us=\([0-9.]*\).*/\1/p'; }
ib_tput() { "$RSP" -t 120 -m "$WSIZE" -p "$1" "$H" send "$BYTES" 2>>$W/errors | mbs; }
eth_tput() { eth_ns "$TB" -t 120 -m "$WSIZE" send "$1" "$2" "$BYTES" 2>>$W/errors | mbs; }
ib_lat() { "$RSP" -t 120 -p "$1" "$H" latency 64 "$ITERS" 2>>$W/errors | rtt; }
eth_lat() { eth_ns "$TB" -t 120 latency "$1" "$2" 64 "$ITERS" 2>>$W/errors | rtt; }
rec() { # KEY VALUE: appends to $W/KEY.v and echoes
	echo "${2:-0}" >>"$W/$1.v"
	printf ' %s=%s' "$1" "${2:-FAIL}"
}

median() { sort -g "$W/$1.v" | awk '{a[NR] = $1} END {if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; else print 0}'; }
rm -f $W/*.v $W/errors
echo "== $BYTES per transfer (write size $WSIZE), $ITERS x 64 B round trips, $REPS rounds, ibgwd variants: $VARIANTS"
for r in $(seq "$REPS"); do
	printf 'round %s:' "$r"
	rec direct_tput "$(ib_tput 7480)"
	rec direct_rtt "$(ib_lat 7481)"
	for v in $VARIANTS; do
		gw_up "$v"
		rec "ibgw_${v}_i2e_tput" "$(ib_tput 7460)"
		rec "ibgw_${v}_e2i_tput" "$(eth_tput "$ETH_GW_IP" 9000)"
		rec "ibgw_${v}_i2e_rtt" "$(ib_lat 7461)"
		rec "ibgw_${v}_e2i_rtt" "$(eth_lat "$ETH_GW_IP" 9001)"
		if [ "$r" = 1 ]; then
			curl -s "http://127.0.0.1:$ETH_STATS/metrics" >"$W/metrics-$v.txt"
		fi
		gw_down
	done
	rec relay_i2e_tput "$(ib_tput 7490)"
	rec relay_e2i_tput "$(eth_tput "$RL_IP" 9100)"
	rec relay_i2e_rtt "$(ib_lat 7491)"
	rec relay_e2i_rtt "$(eth_lat "$RL_IP" 9101)"
	echo
done
[ -s $W/errors ] && { echo "--- errors"; sort $W/errors | uniq -c | head -20; }

echo "== medians of $REPS rounds (throughput MB/s = 1e6 B/s, round trip us)"
fails=0
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}'; }
d_t=$(median direct_tput) d_r=$(median direct_rtt)
for dir in i2e e2i; do
	name=$([ $dir = i2e ] && echo "ib->eth" || echo "eth->ib")
	rt=$(median relay_${dir}_tput) rr=$(median relay_${dir}_rtt)
	for v in $VARIANTS; do
		gt=$(median ibgw_${v}_${dir}_tput) gr=$(median ibgw_${v}_${dir}_rtt)
		tag=$([ "$v" = default ] && echo "ibgw" || echo "ibgw[$v]")
		echo "$name throughput: direct $d_t MB/s, $tag $gt ($(ratio "$gt" "$d_t") x direct), relay $rt (ibgw/relay $(ratio "$gt" "$rt"))"
		echo "$name 64B rtt: direct $d_r us, $tag $gr us (+$(awk -v a="$gr" -v b="$d_r" 'BEGIN {printf "%.0f", a - b}') us), relay $rr us (+$(awk -v a="$rr" -v b="$d_r" 'BEGIN {printf "%.0f", a - b}') us)"
		t1=$(awk -v g="$gt" -v d="$d_t" 'BEGIN {print (g >= 0.7 * d) ? "met" : "MISSED"}')
		t2=$(awk -v g="$gt" -v r="$rt" 'BEGIN {print (g >= 1.5 * r) ? "met" : "MISSED"}')
		t3=$(awk -v g="$gr" -v r="$rr" 'BEGIN {print (g > 0 && g < r) ? "met" : "MISSED"}')
		echo "RESULT $name $tag tput_mb_s=$gt direct=$d_t relay=$rt x_direct=$(ratio "$gt" "$d_t") x_relay=$(ratio "$gt" "$rt") rtt_us=$gr direct_rtt_us=$d_r relay_rtt_us=$rr  targets: >=0.7x direct $t1, >=1.5x relay $t2, less added latency than relay $t3"
		for t in $t1 $t2 $t3; do [ "$t" = met ] || fails=$((fails + 1)); done
	done
done
for v in $VARIANTS; do
	[ -f "$W/metrics-$v.txt" ] || continue
	echo "-- ibgwd [$v] after round 1 (selected metrics)"
	grep -E '^ibgw_(worker_(loop|busy|idle)|route_(bytes|backpressure_(seconds|events))|tcp_(retrans|zero|dup|ooo|rto)|ib_(credit|stall))' \
		"$W/metrics-$v.txt" | grep -v ' 0$' | head -40
done
echo "targets missed: $fails"
exit 0
