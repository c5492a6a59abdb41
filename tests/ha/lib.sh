# Helpers of the several-gateway tests (source it from bash after tests/lib/ibgwd.sh).
#
# Topology: a LAN is a bridge in the client namespace $HA_C (the client, 198.18.0.100/24 on it). Each
# gateway K (1, 2) is a namespace $HA_NS_K (the gateway host: its kernel runs keepalived or bgpd on
# ibgwd's TAP) holding ibgwd's DPDK port, af_packet on veth "gp" whose peer is a bridge port; ibgwd
# is 198.18.0.1K and puts its kernel_tap "ibk" beside it (the test gives the TAP the same address, as
# an operator would, so the kernel has a source address for VRRP/BGP and sees the LAN). Stats of
# gateway K on 127.0.0.1:$HA_STATS in its namespace (ha_curl K PATH). Only 198.18.0.0/15 is used.
#
#   ha_init                     scratch $tmp, an EXIT trap running ha_cleanup, the LAN namespace
#   ha_gw_add K                 gateway host K and its link to the LAN
#   ha_gw_start K CONF          starts ibgwd K in its namespace (PID in HA_PID[K]), waits for /health
#                               and the TAP, gives the TAP the gateway's address
#   ha_gw_conf K FILE [EXTRA]   writes gateway K's config (EXTRA: routes)
#   ha_curl K PATH              curl of gateway K's stats endpoint (body on stdout)
#   ha_metric K 'name{labels}'  one sample of gateway K's /metrics (0 when absent)
#   ha_c CMD...                 runs CMD in the client namespace; ha_g K CMD... in gateway host K's
#   ha_g_bg K CMD...            runs CMD in gateway host K in the background (killed by ha_cleanup)
#   ha_bg_pid PID               adds PID to what ha_cleanup kills
#   ha_cleanup                  kills what was started (by PID), removes the namespaces
#
# VRRP (keepalived with conf/ha-vrrp/ on the gateways' TAPs), the VIP $HA_VIP of either family (the
# test sets it; an IPv6 one takes the place of the conf's 198.18.0.10/24, as a /64):
#   ha_ka_start K               starts keepalived on gateway K (PID in HA_KA_PID[K], killed by ha_cleanup)
#   ha_vip_on K                 true while the VIP is on gateway K's TAP
#   ha_wait_vip K S             waits up to S s for the VIP on gateway K; prints the seconds it took
#   ha_master_back              gateway 1 (priority 150) back after its ibgwd died: its keepalived
#                               restarted, ibgwd started again by the test's own `gw_up 1`; waits
#                               until the VIP is on gateway 1 again and no longer on gateway 2
HA_C=ibgw-hac-$$
HA_STATS=9100
HA_CLIENT_IP=198.18.0.100
HA_TAP=ibk
HA_BG=()
declare -A HA_PID HA_LOG HA_KA_PID
HA_VIP=
PY3=/usr/bin/python3

ha_ns() { echo "ibgw-ha$1-$$"; }
ha_ip() { echo "198.18.0.1$1"; }
ha_c() { ip netns exec "$HA_C" "$@"; }
ha_g() { local k=$1; shift; ip netns exec "$(ha_ns "$k")" "$@"; }
ha_bg_pid() { HA_BG+=("$1"); }
ha_g_bg() {
	local k=$1
	shift
	ip netns exec "$(ha_ns "$k")" "$@" &
	HA_BG+=("$!")
}
ha_curl() { ha_g "$1" curl -s -m 5 "http://127.0.0.1:$HA_STATS$2"; }
ha_metric() { ha_curl "$1" /metrics | awk -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }'; }
# ha_msum K NAME LABEL: family NAME of gateway K summed over its samples whose labels hold LABEL
# ('dir="to_kernel"', or worker for all: HA_WORKERS=2 runs too)
ha_msum() { ha_curl "$1" /metrics | awk -v n="$2{" -v l="$3" 'index($1, n) == 1 && index($1, l) { s += $2 } END { print s + 0 }'; }

ha_vip_family() { case $HA_VIP in *:*) echo 6 ;; *) echo 4 ;; esac; }

ha_ka_start() {
	local k=$1 len=24
	[ "$(ha_vip_family)" = 6 ] && len=64
	sed -e "s/interface ibgw0/interface $HA_TAP/" -e "s|198.18.0.10/24|$HA_VIP/$len|" \
		"conf/ha-vrrp/keepalived-gw$k.conf" >"$tmp/ka$k.conf"
	ip netns exec "$(ha_ns "$k")" keepalived -n -l -P -f "$tmp/ka$k.conf" -p "$tmp/ka$k.pid" \
		-r "$tmp/ka$k-vrrp.pid" >>"$GW_ROOT/${BUILD:-build}/test-logs/$(basename "$0" .sh).ka$k-$$.log" 2>&1 &
	HA_KA_PID[$k]=$!
	ha_bg_pid "${HA_KA_PID[$k]}"
}

ha_vip_on() { ha_g "$1" ip "-$(ha_vip_family)" -o addr show dev "$HA_TAP" 2>/dev/null | grep -q " $HA_VIP/"; }

ha_wait_vip() {
	local k=$1 t0 i
	t0=$(date +%s.%N)
	for ((i = 0; i < $2 * 20; i++)); do
		ha_vip_on "$k" && { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; return 0; }
		sleep 0.05
	done
	return 1
}

ha_init() {
	tmp=$(mktemp -d)
	mkdir -p "$GW_ROOT/${BUILD:-build}/test-logs"
	trap 'ha_cleanup; rm -rf "$tmp"' EXIT
	ip netns add "$HA_C" || fail "cannot create namespace $HA_C"
	ha_c ip link set lo up
	ha_c ip link add br0 type bridge
	ha_c sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ha_c ip addr add "$HA_CLIENT_IP/24" dev br0
	ha_c ip link set br0 up
	# testbed.md: frames from this kernel to af_packet must carry full checksums
	ha_c ethtool -K br0 tx off >/dev/null 2>&1
}

ha_gw_add() {
	local k=$1 ns
	ns=$(ha_ns "$k")
	ip netns add "$ns" || fail "cannot create namespace $ns"
	ip netns exec "$ns" ip link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
	ip link add "hab$k-$$" netns "$HA_C" type veth peer name gp netns "$ns" || fail "cannot create veth"
	ha_c ip link set "hab$k-$$" master br0
	ha_c ip link set "hab$k-$$" up
	ha_c ethtool -K "hab$k-$$" tx off gro off >/dev/null 2>&1
	# the gateway host's kernel must not take frames from the port itself (DPDK owns it; with a real
	# NIC bound to DPDK it never sees them): af_packet's socket still gets every frame, the kernel's
	# IP drops them by strict reverse-path filtering (its route to the LAN is the TAP) and runs no ARP
	ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.rp_filter=1
	ip netns exec "$ns" sysctl -qw net.ipv4.conf.default.rp_filter=1
	ip netns exec "$ns" sysctl -qw net.ipv4.conf.gp.rp_filter=1
	ip netns exec "$ns" ip link set gp arp off
	ip netns exec "$ns" ip link set gp up
	ip netns exec "$ns" ethtool -K gp gro off gso off tso off >/dev/null 2>&1
}

ha_gw_conf() {
	local k=$1 file=$2 extra=${3:-}
	cat >"$file" <<EOC
[gateway]
workers = ${HA_WORKERS:-1}
stats = 127.0.0.1:$HA_STATS
log_level = info
idle_sleep = 100us
drain_timeout = ${HA_DRAIN_TIMEOUT:-10s}
max_sessions = 512
memory_limit = 1G

[eth]
vdev = net_af_packet0,iface=gp,qdisc_bypass=1${HA_WORKERS:+,qpairs=$HA_WORKERS}
eal_args = --no-pci --no-huge -m 512
address = $(ha_ip "$k")/24
mbufs = 8191
kernel_tap = $HA_TAP
${HA_ETH_EXTRA:-}

$extra
EOC
}

ha_gw_start() {
	local k=$1 conf=$2 i
	HA_LOG[$k]=$GW_ROOT/${BUILD:-build}/test-logs/$(basename "$0" .sh).gw$k-$$.log
	ip netns exec "$(ha_ns "$k")" "$IBGWD" -f -c "$conf" >>"${HA_LOG[$k]}" 2>&1 &
	HA_PID[$k]=$!
	for ((i = 0; i < 300; i++)); do
		[ "$(ha_g "$k" curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HA_STATS/health" 2>/dev/null)" = 200 ] &&
			ha_g "$k" ip link show "$HA_TAP" >/dev/null 2>&1 && break
		kill -0 "${HA_PID[$k]}" 2>/dev/null || { tail -20 "${HA_LOG[$k]}"; fail "ibgwd $k exited during start-up"; }
		sleep 0.1
	done
	[ "$i" -lt 300 ] || fail "ibgwd $k not ready"
	ha_g "$k" ip addr add "$(ha_ip "$k")/24" dev "$HA_TAP" || fail "cannot address the TAP of gateway $k"
	ha_g "$k" ip link set "$HA_TAP" up
}

# ha_gw_wait_exit K [S]: waits up to S seconds (20) for ibgwd K to end; returns its exit status (124: still up)
ha_gw_wait_exit() {
	local k=$1 limit=${2:-20} i
	for ((i = 0; i < limit * 10; i++)); do
		kill -0 "${HA_PID[$k]}" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "${HA_PID[$k]}" 2>/dev/null && return 124
	wait "${HA_PID[$k]}"
}

ha_cleanup() {
	local p k
	for p in "${HA_BG[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	for k in "${!HA_PID[@]}"; do
		p=${HA_PID[$k]}
		kill -KILL "$p" 2>/dev/null && wait "$p" 2>/dev/null
		rm -rf "/var/run/dpdk/ibgwd-$p" 2>/dev/null
	done
	for k in 1 2; do ip netns del "$(ha_ns "$k")" 2>/dev/null; done
	ip netns del "$HA_C" 2>/dev/null
	true
}

ha_master_back() {
	local i
	kill "${HA_KA_PID[1]}"
	wait "${HA_KA_PID[1]}" 2>/dev/null
	gw_up 1
	ha_ka_start 1
	ha_wait_vip 1 20 >/dev/null || fail "gateway 1 did not take the VIP back"
	for i in $(seq 40); do ha_vip_on 2 || break; sleep 0.1; done
	ha_vip_on 2 && fail "the VIP stayed on gateway 2 too"
}
