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
#   jumbo     [eth] mtu = 9000 (af_packet framesz 16384); every veth of the block, the relays' too, at 9000
#   vhost     DPDK's virtio_user PMD on the kernel's vhost-net instead of af_packet on a veth: a tap in
#             the peer namespace that takes ibgwd's offloads (TCP checksum, TSO, LRO) and signals RX
#             interrupts. Judged against relay[offload], the relay on a link with offloads.
#   vhost-busy  vhost with idle_sleep = 0
#   vhost-lean  vhost with busy_poll = 0 (a worker sleeps as soon as a round finds nothing: the least
#             CPU per byte, the most latency); leanN / vhost-leanN: busy_poll = N us
#   vhost-rbufSIZE  vhost with ib_rbuf = SIZE on the routes (e.g. vhost-rbuf256K)
#   VARIANT+base  VARIANT run by a second build (BENCH_BASE_IBGWD: its path in the tree), an A/B of two
#             builds in one run (e.g. BENCH_VARIANTS="vhost vhost+base")
#   xdp       DPDK's net_af_xdp PMD on the same veth instead of net_af_packet (libxdp's default XDP
#             program; its object files come from the host's libxdp1 via build/bpf)
# rsocket's rpoll (rdma-core 44) misses the wake-up of a listening rsocket when a connection arrives and
# sleeps until its wake_up_interval, 5 s by default (upstream lowered it to 500 ms in "librdmacm: Change
# wake-up timeout from rpoll"): every accept by rs_relay would cost up to 5 s (rs_bulk avoids rpoll).
# The run sets rsocket's own knob /etc/rdma/rsocket/wake_up_interval (BENCH_RS_WAKE ms, default 10) for
# every rsocket program alike (ibgwd does not use librdmacm's rsocket).
# Issue #14's figures (printed last, "BENCH " lines): CPU ms per MB of ibgwd (with its vhost-net kernel
# thread, see gw_vhost_find) against the relay on a link like its own (vhost-net: relay[offload];
# af_packet 1500/9000: relay), per block, target <= 0.5x; bytes copied per byte relayed each way (ibgw_copied_bytes_total over ibgw_route_bytes_total,
# both scraped around ibgwd's own throughput slices only), target 0 on vhost-net (offloads);
# throughput against the direct path, target >= 0.9x on vhost-net; Ethernet -> IB RDMA writes
# (ibgw_ib_messages_total{dir="tx"}) and doorbells (ibgw_ib_send_doorbells_total) per MB of IB
# payload sent (ibgw_ib_bytes_total{dir="tx"}) during the eth->ib slices; and what each MB cost in
# events (IB messages, frames each way, worker rounds, naps, busy_poll windows), each way.
# Env: BENCH_BYTES (16M), BENCH_REPS (5), BENCH_WSIZE (65536: rsend/send size), BENCH_ITERS (200: round
# trips per latency run, split in BENCH_LAT_SPLIT (4) slices; 0: no latency runs), BENCH_TPUT_SPLIT
# (2: transfers of BYTES/2 per path and block), BENCH_VARIANTS ("default jumbo vhost"), BENCH_RS_WAKE
# (10), BENCH_RELAYS ("relay offload": which relay links to measure).
set -u
# run from a copy: bash reads a script as it goes, and this one may be edited while a long run is on
if [ -z "${E2E_ROOT:-}" ]; then
	E2E_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
	cp "$0" /tmp/guest_e2e.$$.sh && E2E_ROOT=$E2E_ROOT exec bash /tmp/guest_e2e.$$.sh "$@"
fi
cd "$E2E_ROOT"
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
VARIANTS=${BENCH_VARIANTS:-default jumbo vhost}
H=$IB_ADDR_A
RL_IF=ibr$$a RL_PEER=ibr$$b RL_IP=198.18.1.1 RL_PEER_IP=198.18.1.2
RO_IF=ibo$$a RO_PEER=ibo$$b RO_IP=198.18.2.1 RO_PEER_IP=198.18.2.2
TB=$GW_ROOT/$TOOLS/tcp_bulk RSB=$GW_ROOT/$TOOLS/rs_bulk RLY=$GW_ROOT/$TOOLS/rs_relay
# private copies: the tree is shared with people rebuilding it while a run is on
mkdir -p /tmp/e2e-bin
cp "$IBGWD" "$TB" "$RSB" "$RLY" /tmp/e2e-bin/ || fail "cannot copy the binaries"
if [ -n "${BENCH_BASE_IBGWD:-}" ]; then
	cp "$GW_ROOT/$BENCH_BASE_IBGWD" /tmp/e2e-bin/ibgwd-base || fail "cannot copy BENCH_BASE_IBGWD"
fi
IBGWD=/tmp/e2e-bin/ibgwd TB=/tmp/e2e-bin/tcp_bulk RSB=/tmp/e2e-bin/rs_bulk RLY=/tmp/e2e-bin/rs_relay
W=${BENCH_WORKDIR:-/tmp/e2e} # BENCH_WORKDIR under the project tree keeps the logs (9p-shared with the host)
mkdir -p $W
pids=()
declare -A PIDOF # bg name -> PID
declare -A RCPU  # relay_i2e etc. -> its CPU ms/MB in the current block

cleanup() {
	local p
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	[ -n "$GW_PID" ] && kill -CONT "$GW_PID" 2>/dev/null
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
	PIDOF[$name]=$!
}
cpu() { # utime + stime of PID, ticks (no subprocess: every exec costs ~0.1-0.3 s on a loaded TCG guest)
	local f
	read -r -a f <"/proc/$1/stat" 2>/dev/null || { echo 0; return; }
	echo $((f[13] + f[14]))
}
HZ=$(getconf CLK_TCK)
vm_ticks() { # "busy total" ticks of all the guest's vCPUs together (/proc/stat's cpu line; no subprocess)
	local f
	read -r -a f </proc/stat
	echo $((f[1] + f[2] + f[3] + f[6] + f[7])) $((f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7] + f[8])) # (steal: not busy)
}
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
	local gwif=$ETH_IF gwx="idle_sleep = 100us" rx="" ex="" vx=",qdisc_bypass=1" mtu=1500 mbufs=8191 pmd=net_af_packet0
	local name=$1 bin=$IBGWD
	# VARIANT+base: the same variant run by the second build (BENCH_BASE_IBGWD), for an A/B in one run
	case $1 in *+base)
		[ -x /tmp/e2e-bin/ibgwd-base ] || fail "variant $1: no BENCH_BASE_IBGWD"
		bin=/tmp/e2e-bin/ibgwd-base
		set -- "${1%+base}" ;;
	esac
	case $1 in
	default | gro) ;;
	busy) gwx="idle_sleep = 0" ;;
	idle[0-9]*) gwx="idle_sleep = ${1#idle}us" ;;
	lean) gwx="busy_poll = 0" ;;
	lean[0-9]*) gwx="busy_poll = ${1#lean}us" ;;
	bigbuf) rx="ib_rbuf = 1M
ib_sbuf = 1M
tcp_rbuf = 1M
tcp_sbuf = 1M" ;;
	jumbo) mtu=9000 mbufs=4095 vx=",qdisc_bypass=1,blocksz=16384,framesz=16384,framecnt=512" ex="mtu = 9000" ;;
	vhost | vhost-busy | vhost-lean* | vhost-rbuf*) # DPDK virtio_user on the kernel's vhost-net: a tap device that the run moves into the namespace
		modprobe vhost_net || fail "no vhost_net"
		case $1 in
		vhost-busy) gwx="idle_sleep = 0" ;;
		vhost-lean) gwx="busy_poll = 0" ;;
		vhost-lean[0-9]*) gwx="busy_poll = ${1#vhost-lean}us" ;;
		vhost-rbuf*) rx="ib_rbuf = ${1#vhost-rbuf}" ;;
		esac
		pmd=virtio_user0 gwif=ibv$$ vx=",path=/dev/vhost-net,queues=1,queue_size=1024" ;;
	xdp) # libxdp loads its default XDP program from an object file the initrd lacks (bench_e2e.sh copies it)
		pmd=net_af_xdp0 vx=""
		mkdir -p /usr/lib/x86_64-linux-gnu/bpf && cp "$GW_ROOT"/build/bpf/*.o /usr/lib/x86_64-linux-gnu/bpf/ ||
			fail "no libxdp objects in build/bpf" ;;
	*) fail "unknown variant $1" ;;
	esac
	# every Ethernet link of the block gets the variant's MTU: the relays are compared on equal links
	for l in "$ETH_IF" "$RL_IF" "$RO_IF"; do ip link set "$l" mtu "$mtu"; done
	for l in "$ETH_PEER" "$RL_PEER" "$RO_PEER"; do eth_ns ip link set "$l" mtu "$mtu"; done
	# gro: the namespace's ends of ibgwd's and the relay's links merge received segments (GRO, as a
	# server's NIC driver does); the relay[offload] link has it in every variant
	local gro=off; [ "$1" = gro ] && gro=on
	for l in "$ETH_PEER" "$RL_PEER"; do eth_ns ethtool -K "$l" gro $gro >/dev/null || fail "ethtool gro $gro on $l"; done
	cat >$W/ibgw.conf <<EOC
[gateway]
workers = 1
stats = 127.0.0.1:$ETH_STATS
drain_timeout = 2s
memory_limit = 2G
$gwx
[eth]
vdev = $pmd,iface=$gwif$vx
eal_args = --no-pci --no-huge -m 256
address = $ETH_GW_IP/24
mbufs = $mbufs
$ex
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
	GW_LOG=$W/ibgwd-$name.log
	IBGWD=$bin gw_start $W/ibgw.conf
	gw_wait_ready "$ETH_STATS" 60
	if [ "$pmd" = virtio_user0 ]; then
		eth_ns ip addr flush dev "$ETH_PEER" # the peer's address moves to the tap
		eth_tap_adopt "ibv$$" "ibv$$"
		eth_ns ip link set "ibv$$" up
		eth_ns ip addr add "$ETH_PEER_IP/24" dev "ibv$$"
	fi
	eth_ns ping -c 1 -W 5 "$ETH_GW_IP" >/dev/null || fail "ibgwd ($1): no ping"
	gw_vhost_find
}
# vhost-net moves ibgwd's frames between its rings and the tap in a kernel thread, "vhost-TID" (TID:
# the ibgwd thread that opened /dev/vhost-net; Linux < 6.4), whose CPU time is not in ibgwd's own:
# ibgwd's CPU per MB counts it (the relay's kernel TCP runs in the relay's own system time)
GW_VHOST=""
gw_vhost_find() {
	local t c n
	declare -A tid=()
	GW_VHOST=""
	for t in /proc/"$GW_PID"/task/*; do tid[vhost-${t##*/}]=1; done
	for c in /proc/[0-9]*/comm; do
		read -r n <"$c" 2>/dev/null || continue
		[ -n "${tid[$n]:-}" ] && GW_VHOST="$GW_VHOST ${c//[!0-9]/}"
	done
}
gw_cpu() { # ibgwd's ticks, its vhost threads' included
	local p s=0
	for p in $GW_PID $GW_VHOST; do s=$((s + $(cpu "$p"))); done
	echo $s
}
gw_vhost_cpu() { # the ticks of ibgwd's vhost threads alone (0 without vhost-net)
	local p s=0
	for p in $GW_VHOST; do s=$((s + $(cpu "$p"))); done
	echo $s
}
gw_down() {
	local rc
	gw_stop TERM 20
	rc=$?
	if ! eth_ns ip addr show dev "$ETH_PEER" | grep -q "$ETH_PEER_IP"; then
		eth_ns ip addr add "$ETH_PEER_IP/24" dev "$ETH_PEER"
	fi
	[ $rc = 0 ] || { echo "ibgwd exited $rc"; tail -n 20 "$GW_LOG"; }
	rm -rf "/var/run/dpdk/ibgwd-"* 2>/dev/null
}

# ---- measurements: one value per call on stdout (MB/s or us), empty on failure ----
# (the value extraction uses bash regexes, not a pipeline: see cpu())
ib_tput() { local o; o=$("$RSB" -t 120 -m "$WSIZE" send "$H" "$1" "$SLICE" 2>>$W/errors); [[ $o =~ ^ok.*secs=([0-9.]+) ]] && echo "${BASH_REMATCH[1]}"; }
eth_tput() { local o; o=$(eth_ns "$TB" -t 120 -m "$WSIZE" send "$1" "$2" "$SLICE" 2>>$W/errors); [[ $o =~ ^ok.*secs=([0-9.]+) ]] && echo "${BASH_REMATCH[1]}"; }
ib_lat() { local o; o=$("$RSB" -t 120 latency "$H" "$1" 64 "$LAT_N" 2>>$W/errors); [[ $o =~ ^ok.*rtt_us=([0-9.]+) ]] && echo "${BASH_REMATCH[1]}"; }
eth_lat() { local o; o=$(eth_ns "$TB" -t 120 latency "$1" "$2" 64 "$LAT_N" 2>>$W/errors); [[ $o =~ ^ok.*rtt_us=([0-9.]+) ]] && echo "${BASH_REMATCH[1]}"; }
# ibgwd's own counters of what its bytes cost (issue #14), one line: bytes relayed ib_to_eth and
# eth_to_ib (ibgw_route_bytes_total, all routes), bytes copied each way (ibgw_copied_bytes_total),
# IB data messages = RDMA writes sent, their bytes, and doorbells (ibv_post_send calls); then the
# events the bytes took: IB data messages received, frames sent and received, the worker's rounds,
# rounds with work, naps, busy_poll windows hit and missed, naps ended by an fd; and the time (us)
# IB peers waited for credits ibgwd held back (their bytes not yet taken by the other side) and
# ibgwd waited for an IB peer's credits
mscrape() {
	curl -s -m 20 "http://127.0.0.1:$ETH_STATS/metrics" | awk '
	/^ibgw_route_bytes_total\{/ { if (/dir="ib_to_eth"/) rbi += $NF; else if (/dir="eth_to_ib"/) rbe += $NF }
	/^ibgw_copied_bytes_total\{/ { if (/dir="ib_to_eth"/) cpi += $NF; else if (/dir="eth_to_ib"/) cpe += $NF }
	/^ibgw_ib_messages_total\{/ { if (/dir="tx"/) wr += $NF; else mr += $NF }
	/^ibgw_ib_bytes_total\{/ && /dir="tx"/ { wb += $NF }
	/^ibgw_ib_send_doorbells_total\{/ { db += $NF }
	/^ibgw_port_tx_packets_total\{/ { ft += $NF }
	/^ibgw_port_rx_packets_total\{/ { fr += $NF }
	/^ibgw_worker_loop_iterations_total\{/ { lo += $NF }
	/^ibgw_worker_busy_iterations_total\{/ { bl += $NF }
	/^ibgw_worker_idle_sleeps_total\{/ { sl += $NF }
	/^ibgw_worker_poll_windows_total\{/ { if (/outcome="hit"/) ph += $NF; else pm += $NF }
	/^ibgw_worker_idle_wakeups_total\{/ { wk += $NF }
	/^ibgw_ib_credit_withheld_seconds_total / { wh += $NF * 1e6 }
	/^ibgw_ib_credit_stall_seconds_total / { cs += $NF * 1e6 }
	END { printf "%.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f\n", rbi, rbe, cpi, cpe, wr, wb, db, mr, ft, fr, lo, bl, sl, ph, pm, wk, wh, cs }'
}
# one slice of path P: its seconds appended to $W/t_P, the CPU ticks of the process relaying it to
# $W/c_P; for ibgwd's paths also its counters before and after (outside the CPU window) to $W/m_P
tput_slice() {
	local pid= c0 t m0= v0= s0 s1
	case $1 in
	gi | ge) pid=$GW_PID ;;
	relay_i | relayo_i) pid=${PIDOF[${1%_i}_out]} ;;
	relay_e | relayo_e) pid=${PIDOF[${1%_e}_in]} ;;
	esac
	focus "$1"
	[ "$pid" = "$GW_PID" ] && m0=$(mscrape)
	if [ "$pid" = "$GW_PID" ]; then v0=$(gw_vhost_cpu); c0=$(gw_cpu); elif [ -n "$pid" ]; then c0=$(cpu "$pid"); fi
	s0=$(vm_ticks)
	case $1 in
	direct) t=$(ib_tput 7480) ;;
	gi) t=$(ib_tput 7460) ;;
	ge) t=$(eth_tput "$ETH_GW_IP" 9000) ;;
	relay_i) t=$(ib_tput 7490) ;;
	relay_e) t=$(eth_tput "$RL_IP" 9100) ;;
	relayo_i) t=$(ib_tput 7492) ;;
	relayo_e) t=$(eth_tput "$RO_IP" 9100) ;;
	esac
	s1=$(vm_ticks)
	[ -n "$t" ] && echo "$t" >>"$W/t_$1"
	echo "$s0 $s1" >>"$W/s_$1"
	if [ "$pid" = "$GW_PID" ]; then
		echo $(($(gw_cpu) - c0)) >>"$W/c_$1"
		echo $(($(gw_vhost_cpu) - v0)) >>"$W/v_$1"
	elif [ -n "$pid" ]; then echo $(($(cpu "$pid") - c0)) >>"$W/c_$1"; fi
	[ -n "$m0" ] && echo "$m0 $(mscrape)" >>"$W/m_$1"
	return 0
}
# the counters' deltas over path P's slices: "copies-per-byte writes-per-MB doorbells-per-MB" of the
# direction P relays (gi: ib_to_eth, ge: eth_to_ib; writes and doorbells only for ge), then per MB of
# that direction: IB data messages (gi: received, ge: sent), frames sent, frames received, rounds,
# rounds with work, naps, busy_poll windows hit, missed, naps ended by an fd, and the ms IB peers
# waited for credits ibgwd held back and ibgwd for theirs; "-" for each figure when no slice was
# scraped
EV_KEYS=(ib fout fin rounds work naps hit miss woken held stall) # the names of those per-MB figures, in order
cost_of() {
	[ -s "$W/m_$1" ] || { echo "- - - - - - - - - - - - - -"; return 0; }
	awk -v p="$1" 'NF == 36 {
		for (i = 1; i <= 18; i++) d[i] += $(i + 18) - $i
		n++
	}
	END {
		if (!n) { print "- - - - - - - - - - - - - -"; exit }
		rb = p == "gi" ? d[1] : d[2]; cp = p == "gi" ? d[3] : d[4]
		printf "%s", (rb > 0 ? sprintf("%.3f", cp / rb) : "-")
		if (p == "ge" && d[6] > 0) printf " %.1f %.1f", d[5] * 1e6 / d[6], d[7] * 1e6 / d[6]
		else printf " - -"
		if (rb <= 0) { print " - - - - - - - - - - -"; exit }
		d[0] = p == "gi" ? d[8] : d[5]
		d[17] /= 1000; d[18] /= 1000 # (us to ms)
		split("0 9 10 11 12 13 14 15 16 17 18", k, " ")
		for (i = 1; i <= 11; i++) printf " %.1f", d[k[i]] * 1e6 / rb
		printf "\n"
	}' "$W/m_$1"
}
# Only the path being measured runs: ibgwd and the relays of the other paths are stopped (SIGSTOP).
# An idle ibgwd polls and naps (it costs a vCPU share, printed as "idle"), an idle rs_relay wakes up
# every wake_up_interval (see above): either would otherwise take CPU from the path being measured.
focus() { # gi|ge|direct|relay_i|relay_e|relayo_i|relayo_e (an i/e suffix or not: both directions)
	local k n sig
	case $1 in g*) kill -CONT "$GW_PID" ;; *) kill -STOP "$GW_PID" ;; esac
	for k in relay relayo; do
		case $1 in "$k" | "${k}_"*) sig=CONT ;; *) sig=STOP ;; esac
		for n in out out_echo in in_echo; do kill -$sig "${PIDOF[${k}_$n]}"; done
	done
}
# MB/s of path P in this block (empty if a slice failed)
tput_of() {
	[ "$(wc -l <"$W/t_$1" 2>/dev/null || echo 0)" = "$TSPLIT" ] || return 0
	awk -v b="$SLICE_N" '{s += $1} END {if (s > 0) printf "%.2f\n", NR * b / s / 1e6}' "$W/t_$1"
}
# CPU ms per MB of path P in this block, from the ticks in $W/KIND_P (one line a slice): KIND c, the
# relaying process (ibgwd with its vhost-net threads); v, ibgwd's vhost-net threads alone
ms_of() { awk -v b="$SLICE_N" -v hz="$HZ" '{s += $1; n++} END {if (n) printf "%.1f\n", s * 1000 / hz / (n * b / 1e6)}' "$W/$1_$2"; }
# the whole guest over path P's slices: "busy-% ms/MB", the share of all its vCPUs' time that was
# busy, and every process's and kernel thread's CPU per MB (the sender, soft-RoCE, the relaying
# process, the link, the receiver): where the vCPUs are always busy, throughput follows this figure
vm_of() { awk -v b="$SLICE_N" -v hz="$HZ" '{bz += $3 - $1; tt += $4 - $2; n++} END {if (n && tt > 0) printf "%.1f %.1f\n", bz * 100 / tt, bz * 1000 / hz / (n * b / 1e6)}' "$W/s_$1"; }
rec() { # KEY VALUE: appends to $W/KEY.v (a failed run records nothing)
	[ -n "$2" ] && echo "$2" >>"$W/$1.v"
	printf ' %s=%s' "$1" "${2:-FAIL}"
}
put() { # KEY VALUE: appends to $W/KEY.v, silently (nothing when VALUE is empty)
	[ -z "$2" ] || echo "$2" >>"$W/$1.v"
}
recr() { # KEY A B: appends the ratio A/B to $W/KEY.v when both exist
	[ -n "$2" ] && [ -n "$3" ] && awk -v a="$2" -v b="$3" 'BEGIN {if (b > 0) printf "%.4f\n", a / b}' >>"$W/$1.v"
}
mean() { awk '{s += $1; n++} END {if (n) printf "%.1f", s / n}'; }
# relay paths: name -> IB port (out route, echo = +1), TCP address (in route: 9100/9101)
relay_port() { [ "$1" = relay ] && echo 7490 || echo 7492; }
relay_ip() { [ "$1" = relay ] && echo "$RL_IP" || echo "$RO_IP"; }

# BENCH_PROFILE=DIR: instead of the benchmark, BENCH_PROFILE_REPS (3) rounds of one BENCH_BYTES transfer
# each way through ibgwd (the first BENCH_VARIANTS variant) and through both stock relays, each under a
# system-wide `perf record -g`
# (perf from $PERF, default build/perf/perf, with its libraries in build/perf/lib: tests/bench/bench_cpu.sh
# copies them from the host's linux-perf); reports go to DIR: per path the samples by process and
# library, by function, the relaying threads' functions, and where the relaying threads' CPU went
# (tests/bench/cpu_split.awk), which ends in one "BENCH cpu split" line per direction (the median
# round's figures).
if [ -n "${BENCH_PROFILE:-}" ]; then
	PERF=${PERF:-$GW_ROOT/build/perf/perf}
	export LD_LIBRARY_PATH=$(dirname "$PERF")/lib
	HZP=${BENCH_PROFILE_HZ:-1999}
	mkdir -p "$BENCH_PROFILE"
	echo 0 >/proc/sys/kernel/kptr_restrict
	echo -1 >/proc/sys/kernel/perf_event_paranoid
	v=${VARIANTS%% *} # the first variant named
	gw_up "$v"
	SLICE=$BYTES
	MB=$(awk -v b="$(numfmt --from=iec "$BYTES")" 'BEGIN { print b / 1e6 }')
	# BENCH_PROFILE_REPS rounds of the six transfers (one transfer's profile under TCG moves by a
	# third from run to run): the ratio is the median of the rounds' (reports kept: the last round's)
	: >"$W/splits"
	# BENCH_RATE (bytes a second, K/M suffixes): every sender paced to it (tool.h's -r), for CPU per MB
	# at a rate the sender sets rather than the one soft-RoCE allows (bench_cpu.sh, BENCH_CPU_RATES)
	W_ARGS=(-m "$WSIZE" ${BENCH_RATE:+-r "$BENCH_RATE"})
	for rep in $(seq "${BENCH_PROFILE_REPS:-3}"); do
		for p in gi ge relay_i relay_e relayo_i relayo_e; do
			case $p in
			gi) cmd=("$RSB" "${W_ARGS[@]}" send "$H" 7460 "$BYTES") ;;
			ge) cmd=(ip netns exec "$ETH_NS" "$TB" "${W_ARGS[@]}" send "$ETH_GW_IP" 9000 "$BYTES") ;;
			relay_i) cmd=("$RSB" "${W_ARGS[@]}" send "$H" 7490 "$BYTES") ;;
			relay_e) cmd=(ip netns exec "$ETH_NS" "$TB" "${W_ARGS[@]}" send "$RL_IP" 9100 "$BYTES") ;;
			relayo_i) cmd=("$RSB" "${W_ARGS[@]}" send "$H" 7492 "$BYTES") ;;
			relayo_e) cmd=(ip netns exec "$ETH_NS" "$TB" "${W_ARGS[@]}" send "$RO_IP" 9100 "$BYTES") ;;
			esac
			focus "$p"
			"$PERF" record -q -F "$HZP" -a -g -o "$W/$p.data" -- "${cmd[@]}" | tee "$BENCH_PROFILE/$p.txt"
			"$PERF" report -i "$W/$p.data" --stdio --no-children --sort comm,dso -g none 2>/dev/null |
				grep -v '^#' | grep -v '^$' | head -40 >"$BENCH_PROFILE/$p-comm.txt"
			"$PERF" report -i "$W/$p.data" --stdio --no-children --sort comm,sym -g none 2>/dev/null |
				grep -v '^#' | grep -v '^$' | head -80 >"$BENCH_PROFILE/$p-sym.txt"
			# the relaying threads: ibgwd's (its vhost-net threads apart), or the relay process's
			case $p in
			g*)
				for t in /proc/"$GW_PID"/task/*; do echo "${t##*/} ibgwd"; done
				for t in $GW_VHOST; do echo "$t ibgwd-vhost"; done
				;;
			*) for t in /proc/"${PIDOF[${p%_[ie]}_$([ "${p##*_}" = i ] && echo out || echo in)]}"/task/*; do echo "${t##*/} relay"; done ;;
			esac >"$W/$p.tids"
			tids=$(awk '{ printf "%s%s", s, $1; s = "," }' "$W/$p.tids")
			"$PERF" report -i "$W/$p.data" --stdio --no-children --tid "$tids" \
				--sort dso,sym -g none --percent-limit 0.2 2>/dev/null | grep -v '^#' | grep -v '^$' >"$BENCH_PROFILE/$p-threads.txt"
			# the relaying threads' samples with their call chains stay (for a closer look at a class)
			"$PERF" script -i "$W/$p.data" --tid "$tids" \
				-F comm,tid,ip,sym,dso >"$BENCH_PROFILE/$p.script" 2>/dev/null
			awk -v tids="$W/$p.tids" -v detail="$BENCH_PROFILE/$p-own.txt" -f "$GW_ROOT/tests/bench/cpu_split.awk" \
				"$BENCH_PROFILE/$p.script" >"$BENCH_PROFILE/$p-split.txt"
			sed "s/^/$rep $p /" "$BENCH_PROFILE/$p-split.txt" >>"$W/splits"
			echo "-- $p: threads, samples (at $HZP Hz), own_user own_kernel link rdma delivery"
			cat "$BENCH_PROFILE/$p-split.txt"
		done
	done
	kill -CONT "$GW_PID"
	gw_down
	# per direction: ms of CPU per MB (1e6 B) by class, ibgwd vs each relay; the target (issue #14:
	# <= 0.5x the relay's) is judged on what would still run on a CPU with an HCA and a NIC doing
	# their work: own = own_user + own_kernel
	# (the program in a file: the guest has no /dev/fd for a process substitution)
	cat >"$W/cpu_median.awk" <<'AWK'
	function ms(x) { return x / hz * 1000 / mb }
	function desc(i, k) {
		return sprintf("%.1f (user %.1f kernel %.1f; all %.1f: link %.1f rdma %.1f delivery %.1f)",
			ms(U[i, k] + K[i, k]), ms(U[i, k]), ms(K[i, k]), ms(N[i, k]), ms(L[i, k]), ms(R[i, k]), ms(D[i, k]))
	}
	# "ROUND PATH LABEL samples own_user own_kernel link rdma delivery"; PATH g[ie], relay_[ie], relayo_[ie]
	{ p = $2; sub(/_?[ie]$/, "", p); k = p " " $3; i = $1; n = i > n ? i : n
	  N[i, k] = $4; U[i, k] = $5; K[i, k] = $6; L[i, k] = $7; R[i, k] = $8; D[i, k] = $9 }
	END {
		cmp = (port ~ /^vhost/) ? "relayo relay" : "relay relay"
		cn = (port ~ /^vhost/) ? "relay[offload]" : "relay"
		line = "BENCH cpu split " dir " " port ": own CPU ms/MB (user + kernel; soft-RoCE, the emulated link and the peers' receive path apart)"
		for (i = 1; i <= n; i++)
			if (((i, "g ibgwd") in U) && U[i, cmp] + K[i, cmp] > 0)
				{ good++; r[good] = (U[i, "g ibgwd"] + K[i, "g ibgwd"]) / (U[i, cmp] + K[i, cmp]); at[good] = i }
		if (!good) { print line ": no profile (target <= 0.5: MISSED)"; exit }
		med = median(r, at, good)
		printf "%s, the median of %d rounds: ibgwd %s, its vhost-net thread %.1f; %s %s; ratio %.2f, rounds %s (target <= 0.5: %s)\n",
			line, good, desc(MEDIAN_AT, "g ibgwd"), ms(N[MEDIAN_AT, "g ibgwd-vhost"]), cn, desc(MEDIAN_AT, cmp), med,
			MEDIAN_LIST, port ~ / at / ? "judged unpaced only; here: report" : med <= 0.5 ? "met" : "MISSED"
	}
AWK
	for d in i e; do
		[ $d = i ] && dir=ib_to_eth || dir=eth_to_ib
		awk -v d="$d" '$2 == "g" d || $2 == "relay_" d || $2 == "relayo_" d' "$W/splits" |
			awk -v hz="$HZP" -v mb="$MB" -v dir="$dir" -v port="$v${BENCH_RATE:+ at $BENCH_RATE/s}" -f "$GW_ROOT/tests/bench/median.awk" -f "$W/cpu_median.awk" ||
			exit 1 # no figure: the run broke
	done
	exit 0
fi

rm -f $W/*.v $W/errors
nblocks=0
echo "== $BYTES per path and block in $TSPLIT transfers (write size $WSIZE), $ITERS x 64 B round trips in $SPLIT slices, $REPS rounds, ibgwd variants: $VARIANTS, relays: $RELAYS"
t_start=$SECONDS
# the VM's limit (BENCH_TIMEOUT, passed in) minus boot and summary: no block is started that would
# not finish in time (the figures of the blocks done are summarised instead of lost)
deadline=$((${BENCH_TIMEOUT:-600} - 45 - $(cut -d. -f1 /proc/uptime)))
last=0
for r in $(seq "$REPS"); do
	for v in $VARIANTS; do
		t0=$SECONDS
		if [ $((t0 + last * 11 / 10)) -gt "$deadline" ]; then
			echo "(time is up: stopping before round $r [$v])"
			break 2
		fi
		gw_up "$v"
		nblocks=$((nblocks + 1))
		printf 'round %s [%s] (t=%ss, ibgwd up in %ss%s):' "$r" "$v" $((t0 - t_start)) $((SECONDS - t0)) "${GW_VHOST:+, vhost threads$GW_VHOST}"
		# what an idle ibgwd costs the box (2 vCPUs shared by every process of the benchmark)
		c0=$(gw_cpu); s0=$(date +%s.%N); sleep 2
		idle=$(awk -v a="$c0" -v b="$(gw_cpu)" -v s0="$s0" -v s1="$(date +%s.%N)" -v hz="$HZ" 'BEGIN {printf "%.1f", (b - a) * 100 / hz / (s1 - s0)}')
		rec "ibgw_${v}_idle_cpu_pct" "$idle"
		# throughput: TSPLIT slices of BYTES/TSPLIT per path, the order rotated every slice and block
		# (a path is never always first); a path's figure is its bytes over the sum of its times
		rm -f $W/t_* $W/c_* $W/m_* $W/v_* $W/s_*
		RCPU=()
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
		dt=$(tput_of direct); rec direct_tput "$dt"; put "direct_${v}_tput" "$dt"
		gi=$(tput_of gi); rec "ibgw_${v}_i2e_tput" "$gi"; cgi=$(ms_of c gi); put "ibgw_${v}_i2e_cpu" "$cgi"
		ge=$(tput_of ge); rec "ibgw_${v}_e2i_tput" "$ge"; cge=$(ms_of c ge); put "ibgw_${v}_e2i_cpu" "$cge"
		recr "ibgw_${v}_i2e_tput_xd" "$gi" "$dt"; recr "ibgw_${v}_e2i_tput_xd" "$ge" "$dt"
		for rl in $RELAYS; do
			k=$([ "$rl" = relay ] && echo relay || echo relayo)
			ri=$(tput_of "${k}_i"); rec "${k}_i2e_tput" "$ri"; cri=$(ms_of c "${k}_i"); put "${k}_i2e_cpu" "$cri"
			re=$(tput_of "${k}_e"); rec "${k}_e2i_tput" "$re"; cre=$(ms_of c "${k}_e"); put "${k}_e2i_cpu" "$cre"
			recr "ibgw_${v}_i2e_tput_x${k}" "$gi" "$ri"; recr "ibgw_${v}_e2i_tput_x${k}" "$ge" "$re"
			# per variant too: a variant sets the relays' links' MTU as well
			put "${k}_${v}_i2e_cpu" "$cri"; put "${k}_${v}_e2i_cpu" "$cre"
			# CPU per MB against the relay's, this block (issue #14: <= 0.5x)
			recr "ibgw_${v}_i2e_cpu_x${k}" "$cgi" "$cri"; recr "ibgw_${v}_e2i_cpu_x${k}" "$cge" "$cre"
			RCPU[${k}_i2e]=$cri RCPU[${k}_e2i]=$cre
			# the same without vhost-net's thread: on hardware a NIC does its work (moving frames
			# between ibgwd's rings and the wire), while the relay's kernel TCP stays on the CPU
			if [ -n "$GW_VHOST" ]; then
				vgi=$(ms_of v gi); vge=$(ms_of v ge)
				put "ibgw_${v}_i2e_vcpu" "$vgi"; put "ibgw_${v}_e2i_vcpu" "$vge"
				recr "ibgw_${v}_i2e_own_x${k}" "$(awk -v c="$cgi" -v h="$vgi" 'BEGIN {printf "%.1f", c - h}')" "$cri"
				recr "ibgw_${v}_e2i_own_x${k}" "$(awk -v c="$cge" -v h="$vge" 'BEGIN {printf "%.1f", c - h}')" "$cre"
			fi
		done
		for p in direct gi ge relay_i relay_e relayo_i relayo_e; do
			[ -s "$W/s_$p" ] || continue
			read -r vb vm <<<"$(vm_of $p)"
			put "vm_${v}_${p}_busy" "$vb"; put "vm_${v}_${p}_ms" "$vm"
		done
		# what ibgwd's idle polling alone costs per MB at the rate it relayed each way (part of its CPU
		# per MB: under TCG rates are low, so this floor weighs much more than it would on hardware)
		# and an estimate of what the bytes themselves cost: its CPU per MB less that floor, against
		# the relay on a like link (an estimate: a worker that relays polls less than an idle one)
		k=relay; [ "${v#vhost}" != "$v" ] && k=relayo
		for d in i2e e2i; do
			if [ $d = i2e ]; then t=$gi c=$cgi; else t=$ge c=$cge; fi
			im=$(awk -v p="$idle" -v t="$t" 'BEGIN { if (t > 0) printf "%.1f", p * 10 / t }')
			put "ibgw_${v}_${d}_idlems" "$im"
			[ -n "$im" ] && [ -n "$c" ] && put "ibgw_${v}_${d}_net_x" \
				"$(awk -v c="$c" -v i="$im" -v r="${RCPU[${k}_$d]:-}" 'BEGIN { if (r > 0) printf "%.4f", (c - i) / r }')"
		done
		# what the bytes cost ibgwd (its own counters over its slices): copies per byte relayed each
		# way, Ethernet -> IB RDMA writes and doorbells per MB
		read -r cpb_i _ _ ev_i <<<"$(cost_of gi)"
		read -r cpb_e wpm dpm ev_e <<<"$(cost_of ge)"
		printf ' copies/B=%s/%s writes/MB=%s' "$cpb_i" "$cpb_e" "$wpm"
		for d in i2e e2i; do
			if [ $d = i2e ]; then ev=$ev_i; else ev=$ev_e; fi
			printf ' %s_events/MB=%s' "$d" "${ev// //}"
			read -r -a evs <<<"$ev"
			for k in "${!EV_KEYS[@]}"; do
				[ "${evs[$k]:--}" = - ] || put "ibgw_${v}_${d}_ev_${EV_KEYS[$k]}" "${evs[$k]}"
			done
		done
		[ "$cpb_i" = - ] || put "ibgw_${v}_i2e_cpb" "$cpb_i"
		[ "$cpb_e" = - ] || put "ibgw_${v}_e2i_cpb" "$cpb_e"
		[ "$wpm" = - ] || put "ibgw_${v}_e2i_wpm" "$wpm"
		[ "$dpm" = - ] || put "ibgw_${v}_e2i_dpm" "$dpm"
		# round trips: SPLIT slices of ITERS/SPLIT, interleaved over the paths; a path's figure is
		# the mean of its slices (BENCH_ITERS=0: none)
		for s in $(seq "$SPLIT"); do
			[ "$LAT_N" -gt 0 ] || break
			focus direct
			ib_lat 7481 >>$W/lat_direct
			focus gi
			ib_lat 7461 >>$W/lat_gi
			eth_lat "$ETH_GW_IP" 9001 >>$W/lat_ge
			for rl in $RELAYS; do
				focus "$([ "$rl" = relay ] && echo relay || echo relayo)"
				ib_lat $(($(relay_port $rl) + 1)) >>$W/lat_${rl}_i
				eth_lat "$(relay_ip $rl)" 9101 >>$W/lat_${rl}_e
			done
		done
		if [ "$LAT_N" -gt 0 ]; then
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
		fi
		rm -f $W/lat_*
		focus gi
		if [ "$r" = 1 ]; then
			curl -s "http://127.0.0.1:$ETH_STATS/metrics" >"$W/metrics-$v.txt"
		fi
		gw_down
		echo
		last=$((SECONDS - t0))
	done
done
echo "(took $((SECONDS - t_start)) s)"
[ -s $W/errors ] && { echo "--- errors"; sort $W/errors | uniq -c | head -20; }

# median of the samples val[k, 1..cnt[k]] (both summaries below use it)
AWK_MED='function med(k,    n, i, j, t, a) {
	n = cnt[k]
	if (!n) return 0
	for (i = 1; i <= n; i++) a[i] = val[k, i]
	for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
'

# the summary: one awk over every $W/*.v (a process costs ~0.1 s under TCG: no per-figure pipelines)
for f in $W/*.v; do k=$(basename "$f" .v); sed "s/^/$k /" "$f"; done >$W/all.tsv
awk -v variants="$VARIANTS" -v relays="$RELAYS" -v nlat="$LAT_N" "$AWK_MED"'
function f2(x) { return sprintf("%.2f", x) }
function f0(x) { return sprintf("%.0f", x) }
{ cnt[$1]++; val[$1, cnt[$1]] = $2 }
END {
	nv = split(variants, V, " "); nr = split(relays, R, " ")
	print "== medians over blocks: throughput MB/s (1e6 B/s), 64 B round trip us (+ latency added over the direct path);"
	print "   ratios and added latencies are medians of per-block values"
	fails = 0
	for (d = 1; d <= 2; d++) {
		dir = d == 1 ? "i2e" : "e2i"; name = d == 1 ? "ib->eth" : "eth->ib"
		for (i = 1; i <= nv; i++) {
			v = V[i]; tag = v == "default" ? "ibgw" : "ibgw[" v "]"; g = "ibgw_" v "_" dir
			line = name " throughput: direct " f2(med("direct_tput")) " MB/s, " tag " " f2(med(g "_tput")) " (" f2(med(g "_tput_xd")) " x direct)"
			lat = name " 64B rtt: direct " f0(med("direct_rtt")) " us, " tag " " f0(med(g "_rtt")) " (+" f0(med(g "_added")) ")"
			cpu = "CPU ms/MB: ibgwd " med(g "_cpu")
			xd = med(g "_tput_xd"); ok1 = xd >= 0.7
			verdict = tag " " name ": >=0.7x direct " (ok1 ? "met" : "MISSED") " (" f2(xd) ")"
			fails += !ok1
			# the relay ibgwd is judged against: the one on a link like its own (vhost has offloads)
			cmp = v ~ /^vhost/ ? "relayo" : "relay"
			for (j = 1; j <= nr; j++) {
				k = R[j] == "relay" ? "relay" : "relayo"; rn = R[j] == "relay" ? "relay" : "relay[offload]"
				line = line ", " rn " " f2(med(k "_" dir "_tput")) " (ibgw/" rn " " f2(med(g "_tput_x" k)) ")"
				lat = lat ", " rn " " f0(med(k "_" dir "_rtt")) " (+" f0(med(k "_" dir "_added")) ")"
				cpu = cpu ", rs_relay" (k == "relayo" ? "[offload]" : "") " " med(k "_" dir "_cpu")
				if (k == cmp) {
					xr = med(g "_tput_x" k); ok2 = xr >= 1.5
					ga = med(g "_added"); ra = med(k "_" dir "_added"); ok3 = ga < ra
					# the direct path bounds every relay: once the stock relay runs at more than
					# 1/1.5 of it, 1.5x the relay is more than the bound itself
					rd = med("direct_tput") > 0 ? med(k "_" dir "_tput") / med("direct_tput") : 0
					bound = ok2 || 1.5 * rd <= 1 ? "" : "; beyond reach here: " rn " already runs at " f2(rd) "x direct, 1.5x it = " f2(1.5 * rd) "x the upper bound"
					verdict = verdict ", >=1.5x " rn " " (ok2 ? "met" : "MISSED") " (" f2(xr) bound ")"
					fails += !ok2
					if (nlat > 0) {
						verdict = verdict ", less added latency than " rn " " (ok3 ? "met" : "MISSED") " (+" f0(ga) " vs +" f0(ra) " us)"
						fails += !ok3
					}
				}
			}
			print line; print "   " cpu
			if (nlat > 0) print lat
			print "TARGETS (issue #6) " verdict
		}
	}
	for (i = 1; i <= nv; i++) print "ibgwd [" V[i] "] idle: " med("ibgw_" V[i] "_idle_cpu_pct") "% of one vCPU"
	print "issue #6 targets missed: " fails
}' $W/all.tsv
for v in $VARIANTS; do
	[ -f "$W/metrics-$v.txt" ] || continue
	echo "-- ibgwd [$v] after its first block (selected metrics)"
	grep -E '^ibgw_(worker_(loop|busy|idle|poll)|route_(bytes|backpressure_(seconds|events))|tcp_(retrans|zero|dup|ooo|rto)|ib_(credit|stall|messages|bytes|send_doorbells)|copied_bytes|port_(rx|tx)_packets)' \
		"$W/metrics-$v.txt" | grep -v ' 0$' | head -60
done

# Issue #14's figures, one line each, "BENCH " first (tests/bench/run collects them into the run's
# summary.txt): every ratio is the median of per-block ratios (both figures from the same minute).
# A figure that should exist and does not (a failed transfer, a variant that did not run in time)
# is printed as FAIL and the run exits 1; a missed target is only reported.
echo "== issue #14 figures"
echo "BENCH e2e setup: $BYTES per path and block (write size $WSIZE), $nblocks blocks of variants $VARIANTS in up to $REPS rounds, relays $RELAYS; figures are medians over the blocks (ratios: of per-block ratios)"
awk -v variants="$VARIANTS" -v relays="$RELAYS" -v lat="$LAT_N" "$AWK_MED"'
function has(k) { return cnt[k] > 0 }
function f(x, d) { return sprintf("%." d "f", x) }
function tgt(ok, t) { return "(target " t ": " (ok ? "met" : "MISSED") ")" }
function fail(what) { print "BENCH " what ": FAIL (no figure: a transfer failed or its block did not run in time; see the log)"; broken++ }
{ cnt[$1]++; val[$1, cnt[$1]] = $2 }
END {
	nv = split(variants, V, " ")
	for (i = 1; i <= nv; i++) {
		v = V[i]
		port[v] = v == "default" ? "af_packet-1500" : v == "jumbo" ? "af_packet-9000" : v == "vhost" ? "vhost-net" : v
		off[v] = v ~ /^vhost/
		# the relay ibgwd is compared with: the one on a link like its own (vhost-net has offloads)
		rk[v] = off[v] ? "relayo" : "relay"; rn[v] = off[v] ? "relay[offload]" : "relay"
		rw[v] = off[v] ? "offload" : "relay"
	}
	for (d = 1; d <= 2; d++) {
		dk = d == 1 ? "i2e" : "e2i"; dn = d == 1 ? "ib_to_eth" : "eth_to_ib"
		for (i = 1; i <= nv; i++) {
			v = V[i]; g = "ibgw_" v "_" dk; k = rk[v]; w = "cpu ms/MB " dn " " port[v]
			if (index(" " relays " ", " " rw[v] " ") == 0)
				print "BENCH " w ": not measured (BENCH_RELAYS lacks " rw[v] ")"
			else if (has(g "_cpu") && has(k "_" v "_" dk "_cpu") && has(g "_cpu_x" k)) {
				r = med(g "_cpu_x" k)
				print "BENCH " w ": ibgwd " f(med(g "_cpu"), 1) " " rn[v] " " f(med(k "_" v "_" dk "_cpu"), 1) " ratio " f(r, 2) " " tgt(r <= 0.5, "<= 0.5")
				if (has(g "_vcpu") && has(g "_own_x" k)) {
					r = med(g "_own_x" k)
					print "BENCH " w ", ibgwd without its vhost-net thread: ibgwd " f(med(g "_cpu") - med(g "_vcpu"), 1) " (vhost-net thread " f(med(g "_vcpu"), 1) ") " rn[v] " " f(med(k "_" v "_" dk "_cpu"), 1) " ratio " f(r, 2) " (report: on hardware a NIC does the work of that thread; target <= 0.5 there: " (r <= 0.5 ? "met" : "MISSED") ")"
				}
			} else fail(w)
		}
		for (i = 1; i <= nv; i++) {
			v = V[i]; g = "ibgw_" v "_" dk; w = "copies/byte " dn " " port[v]
			if (!has(g "_cpb")) { fail(w); continue }
			c = med(g "_cpb")
			print "BENCH " w ": " f(c, 2) " " (off[v] ? tgt(c == 0, "0 with offloads") : "(report: no offloads on this port)")
		}
		for (i = 1; i <= nv; i++) {
			v = V[i]; g = "ibgw_" v "_" dk; w = "throughput " dn " " port[v]
			if (!has(g "_tput_xd")) { fail(w); continue }
			r = med(g "_tput_xd")
			print "BENCH " w ": ibgwd " f(med(g "_tput"), 2) " direct " f(med("direct_" v "_tput"), 2) " MB/s ratio " f(r, 2) " " (off[v] ? tgt(r >= 0.9, ">= 0.9") : "(report)")
		}
	}
	# the whole guest while each path ran (report): how busy its vCPUs were, and the CPU per MB of
	# every process and kernel thread together; where every path keeps them busy, the CPU is what
	# bounds throughput, and what a path spends more than direct (ibgwd: its vhost-net thread, the
	# work of a NIC on hardware) is what its throughput lacks
	for (d = 1; d <= 2; d++) {
		dk = d == 1 ? "i" : "e"; dn = d == 1 ? "ib_to_eth" : "eth_to_ib"
		for (i = 1; i <= nv; i++) {
			v = V[i]; k = rk[v]; g = "vm_" v "_"; w = "guest cpu " dn " " port[v]
			if (!has(g "direct_busy") || !has(g "g" dk "_busy") || !has(g k "_" dk "_busy")) { fail(w); continue }
			x = "ibgw_" v "_" (d == 1 ? "i2e" : "e2i") "_vcpu"
			print "BENCH " w ": vCPUs busy direct " f(med(g "direct_busy"), 0) "% ibgwd " f(med(g "g" dk "_busy"), 0) "% " rn[v] " " f(med(g k "_" dk "_busy"), 0) "%; all processes and kernel threads, CPU ms/MB: direct " f(med(g "direct_ms"), 1) " ibgwd " f(med(g "g" dk "_ms"), 1) (has(x) ? " (its vhost-net thread " f(med(x), 1) ")" : "") " " rn[v] " " f(med(g k "_" dk "_ms"), 1) " (report: with the vCPUs always busy, throughput follows this CPU per MB)"
		}
	}
	for (i = 1; i <= nv; i++) {
		v = V[i]; g = "ibgw_" v; w = "idle polling ibgwd " port[v]
		if (!has(g "_idle_cpu_pct") || !has(g "_i2e_idlems") || !has(g "_e2i_idlems")) { fail(w); continue }
		print "BENCH " w ": " f(med(g "_idle_cpu_pct"), 1) "% of a vCPU, at the rates relayed " f(med(g "_i2e_idlems"), 1) " ms/MB ib_to_eth, " f(med(g "_e2i_idlems"), 1) " eth_to_ib (report: included in its CPU per MB)"
		if (has(g "_i2e_net_x") && has(g "_e2i_net_x"))
			print "BENCH cpu ms/MB less idle polling " port[v] ": ratio to " rn[v] " " f(med(g "_i2e_net_x"), 2) " ib_to_eth, " f(med(g "_e2i_net_x"), 2) " eth_to_ib (report: an estimate, the CPU per MB above less the idle floor)"
	}
	for (d = 1; d <= 2; d++) {
		dk = d == 1 ? "i2e" : "e2i"; dn = d == 1 ? "ib_to_eth" : "eth_to_ib"
		for (i = 1; i <= nv; i++) {
			v = V[i]; g = "ibgw_" v "_" dk "_ev_"; w = "events/MB " dn " " port[v]
			if (!has(g "ib") || !has(g "rounds")) { fail(w); continue }
			print "BENCH " w ": IB data messages " f(med(g "ib"), 1) " (" (d == 1 ? "received" : "sent") "), frames out " f(med(g "fout"), 1) " and in " f(med(g "fin"), 1) "; worker rounds " f(med(g "rounds"), 0) " (" f(med(g "work"), 0) " with work), naps " f(med(g "naps"), 0) " (" f(med(g "woken"), 0) " ended by an fd), busy_poll windows " f(med(g "hit"), 0) " hit and " f(med(g "miss"), 0) " missed" (has(g "held") && has("ibgw_" v "_" dk "_tput") ? "; IB peers waited " f(med(g "held"), 1) " ms per MB for credits ibgwd held back (their bytes not yet taken by the other side), ibgwd " f(med(g "stall"), 1) " for theirs, of the " f(1000 / med("ibgw_" v "_" dk "_tput"), 1) " ms a MB took" : "") " (report: what the bytes cost in events; the counters span each slice whole, the start and end of its clients with it, when the worker naps 1 ms at a time)"
		}
	}
	for (i = 1; i <= nv; i++) {
		v = V[i]; g = "ibgw_" v "_e2i"; w = "rdma writes/MB eth_to_ib " port[v]
		if (!has(g "_wpm")) { fail(w); continue }
		print "BENCH " w ": " f(med(g "_wpm"), 1) ", doorbells/MB " f(med(g "_dpm"), 1) " (report; 15.3 = one 64 KiB write per 64 KiB)"
	}
	exit (broken > 0)
}' $W/all.tsv || { echo "the run broke: figures missing (see above and $W/errors)"; exit 1; }
exit 0
