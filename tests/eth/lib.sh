# Helpers of the Ethernet-side tests (source it from bash after tests/lib/ibgwd.sh).
#
# Topology: ibgwd's DPDK port is net_af_packet on veth "$ETH_IF" in the root namespace (no IP there:
# DPDK owns it); its peer "$ETH_PEER" lives in namespace "$ETH_NS" with kernel TCP, address
# $ETH_PEER_IP (and $ETH_PEER_IP2 for a second host). ibgwd is $ETH_GW_IP. Names carry the test's PID
# so tests may run side by side; only 198.18.0.0/15 addresses are used.
#
# ETH_LINK=vhost (in the test VM: the host kernel has no vhost-net) puts DPDK's virtio_user PMD on the
# kernel's vhost-net instead: the PMD creates a tap device, which eth_gw_start moves into the namespace
# as "$ETH_PEER" once ibgwd is up (each start makes a new one; it goes away with ibgwd). That link has
# checksum, TSO and LRO offloads, and RX interrupts to wake an idle worker.
#
#   eth_test_init             what a tests/eth script does first: a scratch directory $tmp, and an EXIT
#                             trap that kills the PIDs in the array pids, calls eth_cleanup, removes $tmp
#   eth_setup                 creates the namespace and the veth pair (tx checksum offload off)
#   eth_conf FILE [EXTRA]     writes an ibgwd config for that port (EXTRA: more [eth] lines and routes;
#                             $ETH_GW_EXTRA: more [gateway] lines)
#   eth_gw_start FILE [EXTRA] eth_conf, then starts ibgwd on FILE and waits until /health answers
#                             ($ETH_READY_S seconds at most, default 30)
#   eth_ns CMD...             runs CMD in the peer namespace
#   eth_bg CMD...             runs CMD in the peer namespace in the background (killed by eth_cleanup;
#                             its PID is in $ETH_BG_PID: `eth_ns CMD &` would only give a subshell's)
#   eth_wait_listen PORT      waits (up to 10 s) until a kernel server in the namespace listens on PORT
#                             (in another host's with ETH_FROM, as eth_sha)
#   eth_tap_adopt TAP NAME    (ETH_LINK=vhost) moves virtio_user's tap into the namespace as NAME
#   eth_cleanup               removes what eth_setup made and stops ibgwd (call it from the EXIT trap)
#   eth_peer_v6               IPv6 on the peer's end: $ETH_PEER_IP6/64 (no DAD); ibgwd's [eth] address6 is
#                             then $ETH_GW_IP6/64 (eth_conf's EXTRA: "address6 = $ETH_GW_IP6/64"). With
#                             ETH_LINK=vhost before the link exists: done by eth_gw_start once it does
#   $ETH_GW_MAC               ibgwd's port MAC (both setups; with ETH_LINK=vhost once eth_gw_start returned)
ETH_NS=ibgw-eth-$$
ETH_IF=ibe$$a
ETH_PEER=ibe$$b
ETH_GW_IP=198.18.0.1
ETH_PEER_IP=198.18.0.2
ETH_PEER_IP2=198.18.0.3
ETH_GW_IP6=2001:db8:0:1::1 # (IPv6: 2001:db8::/32 only)
ETH_PEER_IP6=2001:db8:0:1::2
ETH_STATS=
ETH_GW_MAC=
ETH_V6=
mkdir -p "${GW_ROOT}/${BUILD:-build}/test-logs"
PY3=/usr/bin/python3 # Debian's, which has python3-scapy (a python3 earlier in PATH may not)

eth_test_init() {
	tmp=$(mktemp -d)
	pids=()
	trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; eth_cleanup; rm -rf "$tmp"' EXIT
}

eth_ns() { ip netns exec "$ETH_NS" "$@"; }
ETH_BG=()
ETH_BG_PID=
eth_bg() {
	ip netns exec "$ETH_NS" "$@" &
	ETH_BG_PID=$!
	ETH_BG+=("$ETH_BG_PID")
}

# eth_start_seeing CONF LAYER FILTER WHAT: starts ibgwd on CONF while a sniffer on the peer's end
# waits for its first frame with scapy layer LAYER matching the python expression FILTER (over p);
# fails the test naming WHAT unless one came by the time ibgwd is ready (its announcements at start).
eth_start_seeing() {
	local conf=$1 layer=$2 filter=$3 what=$4 sniffer
	eth_bg timeout 20 "$PY3" -c "
from scapy.all import sniff, $layer
p = sniff(iface='$ETH_PEER', timeout=15, count=1, lfilter=lambda p: $layer in p and ($filter))
print('seen' if p else 'not seen')" >"$tmp/seen-at-start" 2>/dev/null
	sniffer=$ETH_BG_PID
	sleep 1.5 # scapy needs a moment to open its socket
	gw_start "$conf"
	gw_wait_ready "$ETH_STATS"
	wait $sniffer
	grep -q '^seen$' "$tmp/seen-at-start" || fail "no $what seen at start ($(cat "$tmp/seen-at-start"))"
}

eth_wait_listen() {
	local i
	for i in $(seq 100); do
		[ -n "$("${ETH_FROM:-eth_ns}" ss -Hltn "sport = :$1")" ] && return 0
		sleep 0.1
	done
	fail "nothing listens on port $1 in $ETH_NS"
}

eth_setup() {
	ip netns add "$ETH_NS" || fail "cannot create namespace $ETH_NS"
	if [ "${ETH_LINK:-}" = vhost ]; then
		modprobe vhost_net 2>/dev/null
		[ -c /dev/vhost-net ] || fail "ETH_LINK=vhost: no /dev/vhost-net"
		ETH_STATS=$(gw_free_port)
		return 0 # the link appears with ibgwd (eth_gw_start)
	fi
	ip link add "$ETH_IF" type veth peer name "$ETH_PEER" netns "$ETH_NS" || fail "cannot create veth"
	sysctl -qw "net.ipv6.conf.$ETH_IF.disable_ipv6=1" >/dev/null 2>&1
	ip link set "$ETH_IF" up
	ETH_GW_MAC=$(cat "/sys/class/net/$ETH_IF/address")
	ethtool -K "$ETH_IF" gro off gso off tso off >/dev/null 2>&1
	eth_peer_up
}

# The namespace's end of the link, once it exists (both setups), and a stats port for ibgwd.
eth_peer_up() {
	eth_ns sysctl -qw "net.ipv6.conf.$ETH_PEER.disable_ipv6=1" >/dev/null 2>&1
	eth_ns ip link set lo up
	eth_ns ip addr add "$ETH_PEER_IP/24" dev "$ETH_PEER"
	eth_ns ip addr add "$ETH_PEER_IP2/24" dev "$ETH_PEER"
	eth_ns ip link set "$ETH_PEER" up
	# testbed.md: without this af_packet sees CHECKSUM_PARTIAL frames (and TSO super-frames); the
	# tap of ETH_LINK=vhost is told by ibgwd itself what it may send
	[ "${ETH_LINK:-}" = vhost ] ||
		eth_ns ethtool -K "$ETH_PEER" tx off gro off >/dev/null || fail "ethtool tx off failed"
	[ -n "$ETH_STATS" ] || ETH_STATS=$(gw_free_port)
	# (a vhost tap is new with each ibgwd start: IPv6 again on it if the test asked for it)
	[ -z "$ETH_V6" ] || eth_peer_v6
}

# Like eth_setup, but the link crosses tests/eth/linkem.py (user-space netem: this host kernel has no
# sch_netem): ibgwd's veth $ETH_IF pairs with $ETH_LA, the peer's with $ETH_LB, linkem bridges the two.
# linkem's arguments follow; its PID is in $ETH_LINKEM (SIGUSR1: blackhole on/off, SIGUSR2: clean).
ETH_LA=ibe$$c
ETH_LB=ibe$$d
ETH_LINKEM=
eth_setup_impaired() {
	local i
	ip netns add "$ETH_NS" || fail "cannot create namespace $ETH_NS"
	ip link add "$ETH_IF" type veth peer name "$ETH_LA" || fail "cannot create veth"
	ip link add "$ETH_LB" type veth peer name "$ETH_PEER" netns "$ETH_NS" || fail "cannot create veth"
	for i in "$ETH_IF" "$ETH_LA" "$ETH_LB"; do
		sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1" >/dev/null 2>&1
		ip link set "$i" up
		ethtool -K "$i" tx off gro off gso off tso off >/dev/null 2>&1
	done
	eth_peer_up
	"$PY3" tests/eth/linkem.py "$ETH_LA" "$ETH_LB" "$@" >"${GW_ROOT}/${BUILD:-build}/test-logs/linkem-$$.log" 2>&1 &
	ETH_LINKEM=$!
	for i in $(seq 50); do grep -q ready "${GW_ROOT}/${BUILD:-build}/test-logs/linkem-$$.log" 2>/dev/null && return 0; sleep 0.1; done
	fail "linkem did not start"
}

eth_peer_v6() {
	ETH_V6=1
	eth_ns ip link show "$ETH_PEER" >/dev/null 2>&1 || return 0 # (vhost: eth_gw_start makes it)
	eth_ns sysctl -qw "net.ipv6.conf.$ETH_PEER.disable_ipv6=0" || fail "cannot enable IPv6 in the namespace"
	eth_ns ip -6 addr add "$ETH_PEER_IP6/64" dev "$ETH_PEER" nodad || fail "cannot add $ETH_PEER_IP6"
}

eth_conf() {
	local file=$1 extra=${2:-}
	cat >"$file" <<EOC
[gateway]
workers = ${ETH_WORKERS:-1}
stats = 127.0.0.1:$ETH_STATS
log_level = ${ETH_LOG_LEVEL:-info}
idle_sleep = ${ETH_IDLE_SLEEP:-100us}
drain_timeout = 2s
max_sessions = ${ETH_MAX_SESSIONS:-2048}
memory_limit = ${ETH_MEMORY_LIMIT:-2G}
${ETH_GW_EXTRA:-}

[eth]
vdev = $(eth_vdev)
eal_args = ${ETH_EAL_ARGS:---no-pci --no-huge -m 512}
address = $ETH_GW_IP/24
mbufs = ${ETH_MBUFS:-8191}
$extra
EOC
}

eth_vdev() {
	if [ "${ETH_LINK:-}" = vhost ]; then
		# (ETH_VDEV_EXTRA holds af_packet arguments: not for this device)
		echo "virtio_user0,path=/dev/vhost-net,queues=${ETH_WORKERS:-1},queue_size=1024,iface=$ETH_IF"
	else
		echo "net_af_packet0,iface=$ETH_IF,qdisc_bypass=1${ETH_VDEV_EXTRA:-}"
	fi
}

eth_gw_start() {
	eth_conf "$@"
	gw_start "$1"
	gw_wait_ready "$ETH_STATS" "${ETH_READY_S:-30}"
	if [ "${ETH_LINK:-}" = vhost ]; then
		eth_tap_adopt "$ETH_IF" "$ETH_PEER"
		eth_peer_up
	fi
}

# eth_tap_adopt TAP NAME: moves the tap virtio_user made into the namespace as NAME
eth_tap_adopt() {
	local i
	for i in $(seq 50); do ip link show "$1" >/dev/null 2>&1 && break; sleep 0.1; done
	ip link set "$1" netns "$ETH_NS" || fail "cannot move the tap $1 into $ETH_NS"
	[ "$1" = "$2" ] || eth_ns ip link set "$1" name "$2" || fail "cannot rename the tap"
	ETH_GW_MAC=$(eth_ns cat "/sys/class/net/$2/address")
	# virtio_user gives the tap the port's own MAC: the kernel end needs another one
	eth_ns ip link set "$2" address 02:00:00:00:00:02
}

eth_cleanup() {
	local pid=$GW_PID p # (gw_cleanup forgets it; a killed ibgwd leaves its EAL runtime directory)
	# (a forking server's children first: one still serving a stuck transfer outlives its parent)
	for p in "${ETH_BG[@]}"; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	gw_cleanup
	[ -n "$ETH_LINKEM" ] && kill "$ETH_LINKEM" 2>/dev/null && wait "$ETH_LINKEM" 2>/dev/null
	ip link del "$ETH_LB" 2>/dev/null
	ip link del "$ETH_IF" 2>/dev/null
	ip netns del "$ETH_NS" 2>/dev/null
	[ -n "$pid" ] && rm -rf "/var/run/dpdk/ibgwd-$pid" 2>/dev/null
	true
}

# Shared checks of the IPv4 and IPv6 variants of a test: each takes the address (family) to use.
#
#   eth_m0 NAME               worker 0's counter ibgw_NAME
#   eth_sha DST PORT [S [FILE]]
#                             sends FILE (default $tmp/in) to DST:PORT from the namespace (nc, S seconds
#                             at most, default 60) and prints the sha256 of what came back; from
#                             another host when ETH_FROM names a function that runs a command there
#                             (as eth_ns does)
#   eth_xfer DST PORT S WHAT  as eth_sha, compared with $want: fails "WHAT: came back different" (with
#                             how nc ended, how much came back and where it differs, and
#                             eth_stuck_state as it was 3 s before the limit and at the end), else
#                             ok "WHAT, sha256 equal (its seconds)"
#   eth_stuck_state           the namespace's TCP sockets (ss) and ibgwd's non-zero TCP, session,
#                             route and port counters
#   eth_loss_recovered [MORE] prints worker 0's loss-recovery counters (and MORE), fails unless
#                             retransmits, fast retransmits and out-of-order segments all moved; the
#                             retransmits stay in $rexmit
#   eth_vanish DST ROUTES WHAT
#                             (eth_setup_impaired) starts ibgwd with short user_timeout and keepalive
#                             and ROUTES (echo on tcp:7), opens a busy and an idle connection to DST,
#                             then blackholes the link: both must be timed out and freed; WHAT names
#                             them in the ok line; stops ibgwd
#   eth_nothing_left N        (after a settling pause) no connection and no session left on workers
#                             0..N-1
#   eth_survived RC DST       after an attack script that exited RC: ibgwd alive, RC 0, ping to DST
#                             (either family) answered
eth_m0() { gw_metric "$ETH_STATS" "ibgw_$1{worker=\"0\"}"; }

eth_sha() { "${ETH_FROM:-eth_ns}" timeout "${3:-60}" nc -N "$1" "$2" <"${4:-$tmp/in}" | sha256sum | cut -d' ' -f1; }

eth_xfer() {
	local t0 got w rc
	t0=$(date +%s.%N)
	rm -f "$tmp/xfer-stuck" # (an earlier transfer's)
	# a transfer still running 3 s before its limit is stuck: what both ends' TCP show then (the
	# kernel peers' sockets, ibgwd's TCP counters) goes with the failure
	(
		trap 'kill "$s" 2>/dev/null; exit 0' TERM
		sleep $(($3 > 6 ? $3 - 3 : 3)) &
		s=$!
		wait "$s" && eth_stuck_state >"$tmp/xfer-stuck" 2>&1
	) >/dev/null 2>&1 &
	w=$!
	"${ETH_FROM:-eth_ns}" timeout "$3" nc -v -N "$1" "$2" <"$tmp/in" >"$tmp/xfer-out" 2>"$tmp/xfer-err"
	rc=$?
	got=$(sha256sum <"$tmp/xfer-out" | cut -d' ' -f1)
	kill "$w" 2>/dev/null
	wait "$w" 2>/dev/null
	if [ "$got" != "$want" ]; then
		# what came back (how much, where it first differs) and how nc ended tell a cut stream from
		# altered bytes
		echo "diag: nc exit $rc, $(stat -c %s "$tmp/xfer-out") of $(stat -c %s "$tmp/in") bytes back;" \
			"$(cmp "$tmp/in" "$tmp/xfer-out" 2>&1 | head -1); nc said: $(head -c 300 "$tmp/xfer-err" | tr '\n' ' ')"
		[ -s "$tmp/xfer-stuck" ] && sed 's/^/diag: /' "$tmp/xfer-stuck"
		echo "diag: now: $(eth_stuck_state | tr '\n' ' ')"
		echo "diag: the sender's neighbours: $("${ETH_FROM:-eth_ns}" ip neigh | tr '\n' ';') TCP: $("${ETH_FROM:-eth_ns}" nstat -az 2>/dev/null |
			awk '$1 ~ /^Tcp(ActiveOpens|AttemptFails|InErrs|OutRsts|InRsts|RetransSegs)$|TCPSynRetrans/ { printf "%s %s ", $1, $2 }')"
		fail "$4: came back different"
	fi
	rm -f "$tmp/xfer-out"
	ok "$4, sha256 equal ($(echo "$(date +%s.%N) - $t0" | bc | cut -c1-5) s)"
}

eth_stuck_state() {
	eth_ns ss -tnoi 2>/dev/null | grep -v '^State' | paste -d' ' - -
	[ -n "$ETH_STATS" ] && curl -s -m 2 "http://127.0.0.1:$ETH_STATS/metrics" |
		grep -E '^ibgw_(tcp|session|route|eth)[a-z_]*\{(worker="0"|route=)' | grep -v ' 0$' |
		sed 's/^ibgw_//; s/{worker="0"}//' | tr '\n' ' '
	echo
}

eth_loss_recovered() {
	local fast ooo rto
	rexmit=$(eth_m0 tcp_retransmits_total) fast=$(eth_m0 tcp_fast_retransmits_total)
	ooo=$(eth_m0 tcp_out_of_order_segments_total) rto=$(eth_m0 tcp_rto_expiries_total)
	echo "retransmits $rexmit, fast retransmits $fast, RTO expiries $rto, out-of-order segments $ooo${1:+, $1}"
	[ "$rexmit" -gt 0 ] && [ "$fast" -gt 0 ] && [ "$ooo" -gt 0 ] || fail "loss recovery counters did not move"
	ok "loss recovery seen in the counters"
}

eth_vanish() {
	local dst=$1 routes=$2 what=$3 i to0 to1
	eth_gw_start "$tmp/ibgw.conf" "user_timeout = 4s
keepalive = 2s
keepalive_interval = 500ms
keepalive_probes = 3
$routes"
	kill -USR2 "$ETH_LINKEM" # clean link while they open
	eth_bg "$PY3" tests/eth/tcp_peer.py hold "$dst" 7 1 60 >/dev/null
	eth_bg "$PY3" -c "
import socket, time
s = socket.create_connection(('$dst', 7))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.send(b'z' * 20000)   # the echo cannot all come back: ibgwd keeps data in flight
time.sleep(60)"
	# both open and the busy one's 20000 bytes in (their echo is then in flight), or 15 s
	for i in $(seq 150); do
		[ "$(eth_m0 tcp_connections_active)" = 2 ] && [ "$(eth_m0 tcp_bytes_in_total)" -ge 20000 ] && break
		sleep 0.1
	done
	[ "$(eth_m0 tcp_connections_active)" = 2 ] || fail "expected 2 active connections, have $(eth_m0 tcp_connections_active)"
	to0=$(eth_m0 tcp_connections_timed_out_total)
	kill -USR1 "$ETH_LINKEM" # blackhole
	for i in $(seq 100); do
		[ "$(eth_m0 tcp_connections_active)" = 0 ] && break
		sleep 0.2
	done
	[ "$(eth_m0 tcp_connections_active)" = 0 ] || fail "vanished peers not timed out: $(eth_m0 tcp_connections_active) still active"
	to1=$(eth_m0 tcp_connections_timed_out_total)
	[ $((to1 - to0)) -ge 2 ] || fail "tcp_connections_timed_out_total moved by $((to1 - to0)), expected 2"
	[ "$(eth_m0 worker_sessions_active)" = 0 ] || fail "sessions left"
	ok "$what to a vanished peer were timed out and freed ($(eth_m0 tcp_keepalive_probes_total) keepalive probes)"
	gw_stop || fail "ibgwd exited with $?"
	ok "clean shutdown"
}

eth_nothing_left() {
	local w
	sleep 0.5
	for ((w = 0; w < $1; w++)); do
		[ "$(gw_metric "$ETH_STATS" "ibgw_tcp_connections_active{worker=\"$w\"}")" = 0 ] || fail "connections left on worker $w"
		[ "$(gw_metric "$ETH_STATS" "ibgw_worker_sessions_active{worker=\"$w\"}")" = 0 ] || fail "sessions left on worker $w"
	done
	ok "nothing left over"
}

eth_survived() {
	local rc=$1 dst=$2 v=
	kill -0 "$GW_PID" 2>/dev/null || fail "ibgwd died under bad input"
	[ "$rc" = 0 ] || fail "bad-input checks failed (see above)"
	case $dst in *:*) v=" over IPv6" ;; esac
	eth_ns ping ${v:+-6} -c 2 -i 0.2 -W 2 "$dst" >/dev/null || fail "ping after the attacks failed"
	ok "ibgwd alive and answering ping$v after the attacks"
}
