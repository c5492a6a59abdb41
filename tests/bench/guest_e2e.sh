#!/bin/bash
# In-VM half of tests/bench/bench_e2e.sh: end-to-end throughput and 64 B round trip through ibgwd,
# both directions, against the direct rsocket path (upper bound) and the stock relay (rs_relay, the
# baseline), interleaved so that noise hits all alike; medians and ratios.
#
#   IB side: one rxe device (loop topology), all rsockets on $H. Rsocket peers: rs_bulk (client: send
#            and latency; servers: `serve discard` on 7480, `serve echo` on 7481; blocking calls, no
#            hashing: rs_peer's SHA-256 would cap the sender at a few MB/s under TCG).
#   Ethernet side: namespace $ETH_NS running tcp_bulk serve (discard 5001, echo 5002) and the TCP
#            clients (tcp_bulk send/latency). It reaches
#              ibgwd    198.18.0.1 (DPDK net_af_packet on veth $ETH_IF; peer 198.18.0.2)
#              relay    198.18.1.1 rs_relay on kernel TCP over veth $RL_IF, the link set up exactly like
#                       ibgwd's (same ethtool settings: 1500 B frames, checksums computed in software)
#              relay[offload] 198.18.2.1 rs_relay over veth $RO_IF with the kernel's default veth
#                       offloads (64 KiB TSO/GRO super-frames, no checksum at all: a testbed artefact
#                       that ibgwd's af_packet port cannot have; shown for reference)
#
#   path          IB -> Ethernet (rs_bulk client)             Ethernet -> IB (tcp_bulk client in the ns)
#   direct        rs_bulk -> rs_bulk serve (7480/7481)        (the same: rsocket to rsocket)
#   ibgw          -> ibgwd ib:7460/7461 -> tcp 198.18.0.2     -> ibgwd tcp:9000/9001 -> ib 7480/7481
#   relay         -> rs_relay out 7490/7491 -> tcp 198.18.1.2 -> rs_relay in 198.18.1.1:9100/9101 -> 7480/7481
#   relay[offload]   rs_relay out 7492/7493 -> tcp 198.18.2.2    rs_relay in 198.18.2.1:9100/9101
#
# Each block (one per round and ibgwd variant) starts ibgwd, measures every path's throughput in turn,
# then the round trips in BENCH_LAT_SPLIT interleaved slices, and stops ibgwd. Ratios are computed per
# block (same minute, same noise) and their median is what the targets are checked against; the
# medians of the raw figures are printed too. This machine is shared: absolute figures drift by 2-5x
# from one minute to the next, ratios within a block much less.
#
# ibgwd variants (BENCH_VARIANTS, space separated; busy-polling variants never run while others are
# measured, since each block runs one ibgwd):
#   default   the shipped defaults ([gateway] idle_sleep 100us, 128K IB / 256K TCP buffers)
#   busy      idle_sleep = 0 (classic DPDK busy polling)
#   idleN     idle_sleep = N us (e.g. idle10)
#   bigbuf    ib_rbuf/ib_sbuf 1M and tcp_rbuf/tcp_sbuf 1M on the routes
# rsocket's rpoll (rdma-core 44) misses the wake-up of a listening rsocket when a connection arrives and
# sleeps until its wake_up_interval, 5 s by default (upstream lowered it to 500 ms in "librdmacm: Change
# wake-up timeout from rpoll"): every accept by rs_relay would cost up to 5 s (rs_bulk avoids rpoll).
# The run sets rsocket's own knob /etc/rdma/rsocket/wake_up_interval (BENCH_RS_WAKE ms, default 10) for
# every rsocket program alike (ibgwd does not use librdmacm's rsocket).
# Env: BENCH_BYTES (16M), BENCH_REPS (5), BENCH_WSIZE (65536: rsend/send size), BENCH_ITERS (200: round
# trips per latency run, split in BENCH_LAT_SPLIT (4) slices), BENCH_TPUT_SPLIT (2: transfers of
# BYTES/2 per path and block), BENCH_VARIANTS (default), BENCH_RS_WAKE (10), BENCH_RELAYS ("relay
# offload": which relay links to measure).
set -u
cd "$(dirname "$0")/../.."
. tests/ib/guest_lib.sh
. tests/eth/lib.sh
IBGWD=$GW_ROOT/${BUILD:-build}/release/ibgwd # a benchmark measures the optimized build
BYTES=${BENCH_BYTES:-16M}
REPS=${BENCH_REPS:-5}
WSIZE=${BENCH_WSIZE:-65536}
ITERS=${BENCH_ITERS:-200}
SPLIT=${BENCH_LAT_SPLIT:-4}
LAT_N=$((ITERS / SPLIT))
TSPLIT=${BENCH_TPUT_SPLIT:-2}
SLICE_N=$(($(numfmt --from=iec "$BYTES") / TSPLIT))
SLICE=$SLICE_N
blk=0
RELAYS=${BENCH_RELAYS:-relay offload}
VARIANTS=${BENCH_VARIANTS:-default}
H=$IB_ADDR_A
RL_IF=ibr$$a RL_PEER=ibr$$b RL_IP=198.18.1.1 RL_PEER_IP=198.18.1.2
RO_IF=ibo$$a RO_PEER=ibo$$b RO_IP=198.18.2.1 RO_PEER_IP=198.18.2.2
TB=$GW_ROOT/$TOOLS/tcp_bulk RSB=$GW_ROOT/$TOOLS/rs_bulk RLY=$GW_ROOT/$TOOLS/rs_relay
W=/tmp/e2e
mkdir -p $W
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	ip link del "$RL_IF" 2>/dev/null
	ip link del "$RO_IF" 2>/dev/null
	eth_cleanup
}
trap cleanup EXIT

bg() { # NAME CMD...: background helper, its output in $W/NAME.out
	local name=$1; shift
	"$@" >"$W/$name.out" 2>&1 &
	pids+=($!)
	echo $! >"$W/$name.pid"
}
cpu() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; } # utime + stime, ticks
HZ=$(getconf CLK_TCK)
wait_for() { # FILE PATTERN
	for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	echo "did not start: $1"; cat "$1"; exit 1
}

mkdir -p /etc/rdma/rsocket && echo "${BENCH_RS_WAKE:-10}" >/etc/rdma/rsocket/wake_up_interval

# ---- topology ----
eth_setup
veth() { # IF PEER IP PEER_IP: a kernel-TCP link from the main namespace to the peer namespace
	ip link add "$1" type veth peer name "$2" netns "$ETH_NS" || fail "cannot create veth $1"
	sysctl -qw "net.ipv6.conf.$1.disable_ipv6=1" >/dev/null 2>&1
	ip addr add "$3/24" dev "$1"
	ip link set "$1" up
	eth_ns sysctl -qw "net.ipv6.conf.$2.disable_ipv6=1" >/dev/null 2>&1
	eth_ns ip addr add "$4/24" dev "$2"
	eth_ns ip link set "$2" up
}
veth "$RL_IF" "$RL_PEER" "$RL_IP" "$RL_PEER_IP"
# as eth_setup does for ibgwd's link (tests/eth/lib.sh), plus tx off on the relay's end: the kernel
# then computes checksums and sends MTU-sized frames, like ibgwd's engine must on af_packet
ethtool -K "$RL_IF" tx off gro off gso off tso off >/dev/null 2>&1
eth_ns ethtool -K "$RL_PEER" tx off gro off >/dev/null || fail "ethtool on the relay link failed"
veth "$RO_IF" "$RO_PEER" "$RO_IP" "$RO_PEER_IP"

# ---- peers that stay up the whole run (all block when idle) ----
bg tcpsrv ip netns exec "$ETH_NS" "$TB" serve 5001 5002
bg rsdiscard "$RSB" serve "$H" 7480 discard
bg rsecho "$RSB" serve "$H" 7481 echo
bg relay_out "$RLY" out "$H:7490" "$RL_PEER_IP:5001"
bg relay_out_echo "$RLY" out "$H:7491" "$RL_PEER_IP:5002"
bg relay_in "$RLY" in "$RL_IP:9100" "$H:7480"
bg relay_in_echo "$RLY" in "$RL_IP:9101" "$H:7481"
bg relayo_out "$RLY" out "$H:7492" "$RO_PEER_IP:5001"
bg relayo_out_echo "$RLY" out "$H:7493" "$RO_PEER_IP:5002"
bg relayo_in "$RLY" in "$RO_IP:9100" "$H:7480"
bg relayo_in_echo "$RLY" in "$RO_IP:9101" "$H:7481"
wait_for $W/tcpsrv.out listening
wait_for $W/rsdiscard.out listening
wait_for $W/rsecho.out listening
for f in relay_out relay_out_echo relay_in relay_in_echo relayo_out relayo_out_echo relayo_in relayo_in_echo; do
	wait_for $W/$f.out ready
done
eth_ns ping -c 1 -W 5 "$RL_IP" >/dev/null || fail "relay veth: no ping"
eth_ns ping -c 1 -W 5 "$RO_IP" >/dev/null || fail "relay[offload] veth: no ping"

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
eal_args = --no-pci --no-huge -m 256
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
secs() { awk '{for (i = 1; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]} if ($1 == "ok" && v["secs"] > 0) print v["secs"]}'; }
rtt() { sed -n 's/^ok latency.*rtt_us=\([0-9.]*\).*/\1/p'; }
ib_tput() { "$RSB" -t 120 -m "$WSIZE" send "$H" "$1" "$SLICE" 2>>$W/errors | secs; }
eth_tput() { eth_ns "$TB" -t 120 -m "$WSIZE" send "$1" "$2" "$SLICE" 2>>$W/errors | secs; }
# one slice of path P: its seconds appended to $W/t_P, the CPU ticks of the process relaying it to $W/c_P
tput_slice() {
	local pid= c0 t
	case $1 in
	gi | ge) pid=$GW_PID ;;
	relay_i | relayo_i) pid=$(cat "$W/${1%_i}_out.pid") ;;
	relay_e | relayo_e) pid=$(cat "$W/${1%_e}_in.pid") ;;
	esac
	[ -n "$pid" ] && c0=$(cpu "$pid")
	case $1 in
	direct) t=$(ib_tput 7480) ;;
	gi) t=$(ib_tput 7460) ;;
	ge) t=$(eth_tput "$ETH_GW_IP" 9000) ;;
	relay_i) t=$(ib_tput 7490) ;;
	relay_e) t=$(eth_tput "$RL_IP" 9100) ;;
	relayo_i) t=$(ib_tput 7492) ;;
	relayo_e) t=$(eth_tput "$RO_IP" 9100) ;;
	esac
	[ -n "$t" ] && echo "$t" >>"$W/t_$1"
	[ -n "$pid" ] && echo $(($(cpu "$pid") - c0)) >>"$W/c_$1"
}
# MB/s of path P in this block (empty if a slice failed)
tput_of() {
	[ "$(wc -l <"$W/t_$1" 2>/dev/null || echo 0)" = "$TSPLIT" ] || return 0
	awk -v b="$SLICE_N" '{s += $1} END {if (s > 0) printf "%.2f\n", NR * b / s / 1e6}' "$W/t_$1"
}
# CPU ms per MB of the relaying process of P in this block
cpu_of() { awk -v b="$SLICE_N" -v hz="$HZ" '{s += $1; n++} END {if (n) printf "%.1f\n", s * 1000 / hz / (n * b / 1e6)}' "$W/c_$1"; }
ib_lat() { "$RSB" -t 120 latency "$H" "$1" 64 "$LAT_N" 2>>$W/errors | rtt; }
eth_lat() { eth_ns "$TB" -t 120 latency "$1" "$2" 64 "$LAT_N" 2>>$W/errors | rtt; }
rec() { # KEY VALUE: appends to $W/KEY.v (a failed run records nothing)
	[ -n "$2" ] && echo "$2" >>"$W/$1.v"
	printf ' %s=%s' "$1" "${2:-FAIL}"
}
recr() { # KEY A B: appends the ratio A/B to $W/KEY.v when both exist
	[ -n "$2" ] && [ -n "$3" ] && awk -v a="$2" -v b="$3" 'BEGIN {if (b > 0) printf "%.4f\n", a / b}' >>"$W/$1.v"
}
mean() { awk '{s += $1; n++} END {if (n) printf "%.1f", s / n}'; }
median() { [ -f "$W/$1.v" ] || { echo 0; return; }; sort -g "$W/$1.v" | awk '{a[NR] = $1} END {if (NR) print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; else print 0}'; }
# relay paths: name -> IB port (out route, echo = +1), TCP address (in route: 9100/9101)
relay_port() { [ "$1" = relay ] && echo 7490 || echo 7492; }
relay_ip() { [ "$1" = relay ] && echo "$RL_IP" || echo "$RO_IP"; }

rm -f $W/*.v $W/errors
echo "== $BYTES per path and block in $TSPLIT transfers (write size $WSIZE), $ITERS x 64 B round trips in $SPLIT slices, $REPS rounds, ibgwd variants: $VARIANTS, relays: $RELAYS"
t_start=$SECONDS
for r in $(seq "$REPS"); do
	for v in $VARIANTS; do
		t0=$SECONDS
		gw_up "$v"
		printf 'round %s [%s] (t=%ss, ibgwd up in %ss):' "$r" "$v" $((t0 - t_start)) $((SECONDS - t0))
		# what an idle ibgwd costs the box (2 vCPUs shared by every process of the benchmark)
		c0=$(cpu "$GW_PID"); s0=$(date +%s.%N); sleep 2
		rec "ibgw_${v}_idle_cpu_pct" "$(awk -v a="$c0" -v b="$(cpu "$GW_PID")" -v s0="$s0" -v s1="$(date +%s.%N)" -v hz="$HZ" 'BEGIN {printf "%.1f", (b - a) * 100 / hz / (s1 - s0)}')"
		# throughput: TSPLIT slices of BYTES/TSPLIT per path, the order rotated every slice and block
		# (a path is never always first); a path's figure is its bytes over the sum of its times
		rm -f $W/t_* $W/c_*
		set -- direct gi ge
		for rl in $RELAYS; do
			k=$([ "$rl" = relay ] && echo relay || echo relayo)
			set -- "$@" "${k}_i" "${k}_e"
		done
		for sl in $(seq "$TSPLIT"); do
			blk=$((blk + 1))
			for ((j = 0; j < $#; j++)); do
				idx=$(((blk + j) % $# + 1))
				tput_slice "${!idx}"
			done
		done
		dt=$(tput_of direct); rec direct_tput "$dt"
		gi=$(tput_of gi); rec "ibgw_${v}_i2e_tput" "$gi"; cpu_of gi >>"$W/ibgw_${v}_i2e_cpu.v"
		ge=$(tput_of ge); rec "ibgw_${v}_e2i_tput" "$ge"; cpu_of ge >>"$W/ibgw_${v}_e2i_cpu.v"
		recr "ibgw_${v}_i2e_tput_xd" "$gi" "$dt"; recr "ibgw_${v}_e2i_tput_xd" "$ge" "$dt"
		for rl in $RELAYS; do
			k=$([ "$rl" = relay ] && echo relay || echo relayo)
			ri=$(tput_of "${k}_i"); rec "${k}_i2e_tput" "$ri"; cpu_of "${k}_i" >>"$W/${k}_i2e_cpu.v"
			re=$(tput_of "${k}_e"); rec "${k}_e2i_tput" "$re"; cpu_of "${k}_e" >>"$W/${k}_e2i_cpu.v"
			recr "ibgw_${v}_i2e_tput_x${k}" "$gi" "$ri"; recr "ibgw_${v}_e2i_tput_x${k}" "$ge" "$re"
		done
		# round trips: SPLIT slices of ITERS/SPLIT, interleaved over the paths; a path's figure is
		# the mean of its slices
		for s in $(seq "$SPLIT"); do
			ib_lat 7481 >>$W/lat_direct
			ib_lat 7461 >>$W/lat_gi
			eth_lat "$ETH_GW_IP" 9001 >>$W/lat_ge
			for rl in $RELAYS; do
				ib_lat $(($(relay_port $rl) + 1)) >>$W/lat_${rl}_i
				eth_lat "$(relay_ip $rl)" 9101 >>$W/lat_${rl}_e
			done
		done
		dr=$(mean <$W/lat_direct); rec direct_rtt "$dr"
		gri=$(mean <$W/lat_gi); rec "ibgw_${v}_i2e_rtt" "$gri"
		gre=$(mean <$W/lat_ge); rec "ibgw_${v}_e2i_rtt" "$gre"
		echo "$gri $dr" | awk '{print $1 - $2}' >>"$W/ibgw_${v}_i2e_added.v"
		echo "$gre $dr" | awk '{print $1 - $2}' >>"$W/ibgw_${v}_e2i_added.v"
		for rl in $RELAYS; do
			k=$([ "$rl" = relay ] && echo relay || echo relayo)
			rri=$(mean <$W/lat_${rl}_i); rec "${k}_i2e_rtt" "$rri"
			rre=$(mean <$W/lat_${rl}_e); rec "${k}_e2i_rtt" "$rre"
			# latency added over the direct path, this block
			echo "$rri $dr" | awk '{print $1 - $2}' >>"$W/${k}_i2e_added.v"
			echo "$rre $dr" | awk '{print $1 - $2}' >>"$W/${k}_e2i_added.v"
		done
		rm -f $W/lat_*
		if [ "$r" = 1 ]; then
			curl -s "http://127.0.0.1:$ETH_STATS/metrics" >"$W/metrics-$v.txt"
		fi
		gw_down
		echo
	done
done
echo "(took $((SECONDS - t_start)) s)"
[ -s $W/errors ] && { echo "--- errors"; sort $W/errors | uniq -c | head -20; }

fmt() { awk -v v="$1" 'BEGIN {printf "%.2f", v}'; }
echo "== medians over blocks: throughput MB/s (1e6 B/s), 64 B round trip us (+ latency added over direct);"
echo "   ratios and added latencies are medians of per-block values"
fails=0
for dir in i2e e2i; do
	name=$([ $dir = i2e ] && echo "ib->eth" || echo "eth->ib")
	d_t=$(median direct_tput) d_r=$(median direct_rtt)
	for v in $VARIANTS; do
		tag=$([ "$v" = default ] && echo "ibgw" || echo "ibgw[$v]")
		gt=$(median ibgw_${v}_${dir}_tput) gr=$(median ibgw_${v}_${dir}_rtt)
		xd=$(median ibgw_${v}_${dir}_tput_xd)
		line="$name throughput: direct $(fmt "$d_t") MB/s, $tag $(fmt "$gt") ($(fmt "$xd") x direct)"
		ga=$(median ibgw_${v}_${dir}_added)
		lat="$name 64B rtt: direct $(fmt "$d_r") us, $tag $(fmt "$gr") us (+$(fmt "$ga"))"
		t1=$(awk -v x="$xd" 'BEGIN {print (x >= 0.7) ? "met" : "MISSED"}')
		verdict="$tag $name: >=0.7x direct $t1 ($(fmt "$xd"))"
		[ "$t1" = met ] || fails=$((fails + 1))
		for rl in $RELAYS; do
			k=$([ "$rl" = relay ] && echo relay || echo relayo)
			rn=$([ "$rl" = relay ] && echo relay || echo "relay[offload]")
			rt=$(median ${k}_${dir}_tput) rr=$(median ${k}_${dir}_rtt)
			xr=$(median ibgw_${v}_${dir}_tput_x${k}) ra=$(median ${k}_${dir}_added)
			line="$line, $rn $(fmt "$rt") (ibgw/$rn $(fmt "$xr"))"
			lat="$lat, $rn $(fmt "$rr") us (+$(fmt "$ra"))"
			if [ "$rl" = relay ]; then
				t2=$(awk -v x="$xr" 'BEGIN {print (x >= 1.5) ? "met" : "MISSED"}')
				t3=$(awk -v g="$ga" -v r="$ra" 'BEGIN {print (g < r) ? "met" : "MISSED"}')
				verdict="$verdict, >=1.5x relay $t2 ($(fmt "$xr")), less added latency than relay $t3 (+$(fmt "$ga") vs +$(fmt "$ra") us)"
				[ "$t2" = met ] || fails=$((fails + 1))
				[ "$t3" = met ] || fails=$((fails + 1))
			fi
		done
		line="$line; CPU ms/MB: ibgwd $(median ibgw_${v}_${dir}_cpu)"
		for rl in $RELAYS; do
			k=$([ "$rl" = relay ] && echo relay || echo relayo)
			line="$line, rs_relay${k#relay} $(median ${k}_${dir}_cpu)"
		done
		echo "$line"
		echo "$lat"
		echo "TARGETS $verdict"
	done
done
for v in $VARIANTS; do
	echo "ibgwd [$v] idle: $(median ibgw_${v}_idle_cpu_pct)% of one vCPU"
done
for v in $VARIANTS; do
	[ -f "$W/metrics-$v.txt" ] || continue
	echo "-- ibgwd [$v] after its first block (selected metrics)"
	grep -E '^ibgw_(worker_(loop|busy|idle)|route_(bytes|backpressure_(seconds|events))|tcp_(retrans|zero|dup|ooo|rto)|ib_(credit|stall)|port_(rx|tx)_packets)' \
		"$W/metrics-$v.txt" | grep -v ' 0$' | head -40
done
echo "targets missed: $fails"
exit 0
