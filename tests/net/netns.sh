# tests/net/netns.sh -- Ethernet test hosts in network namespaces, for bash and dash, on the host or
# inside the test VM (tests/vm/run). Source it:   . tests/net/netns.sh
#
# A "test host" is a network namespace holding one end of a veth pair; the other end stays in the
# current namespace, without an address, for a DPDK net_af_packet port (iface=<X>_IF,qdisc_bypass=1)
# or any other consumer. Addresses must lie in 198.18.0.0/15 (198.18.x.y for Ethernet test hosts;
# 198.19.x.y is the VM's soft-RoCE side). Names derive from the shell's PID, so concurrent tests
# never collide; interface names stay within Linux's 15 characters.
#
#   nt_init                  install the cleanup traps (EXIT INT TERM HUP); called implicitly by
#                            the first nt_host. A script with its own EXIT trap must call nt_cleanup.
#                            (A shell runs traps only after its foreground command ends: wait for
#                            long commands with `cmd & wait $!` so that a signal cleans up at once.)
#   nt_host X ADDR/PLEN [MTU]
#                            create test host X: namespace $X_NS; veth end $X_PEER inside it with
#                            ADDR, up, lo up, `ethtool -K $X_PEER tx off` (else af_packet/af_xdp
#                            PMDs see CHECKSUM_PARTIAL frames with bad-looking checksums), IPv6 off;
#                            veth end $X_IF here, up, no address, IPv6 off. Also sets $X_ADDR
#                            (address without /PLEN) and $X_MAC (MAC of $X_PEER).
#   nt_route X GW            default route of test host X via GW (e.g. the gateway's Ethernet address)
#   nt_exec X CMD...         run CMD inside test host X (foreground)
#   nt_bg X CMD...           start CMD inside test host X in the background; its PID is in $NT_PID
#                            and is killed (by PID) at cleanup
#   nt_track PID...          also kill these PIDs at cleanup (e.g. a gateway started by the test)
#   nt_wait_tcp X PORT [SECONDS]
#                            wait until something listens on TCP PORT inside X (default 10 s)
#   nt_netem X out|in ARGS...
#                            netem on traffic leaving (out) or entering (in, via an ifb device)
#                            test host X, e.g. `nt_netem h1 out loss 1% delay 5ms reorder 10%`,
#                            `nt_netem h1 in duplicate 1%`. Replaces earlier settings of that
#                            direction. Returns 77 if this kernel has no netem (the host kernel here
#                            has none: run such tests in the VM), so a test can skip.
#   nt_rate X out|in RATE [BURST]
#                            token-bucket rate limit (tc tbf) on one direction, e.g. 10mbit; BURST
#                            defaults to 64kb (raise it above RATE/250 for rates over ~100mbit)
#   nt_clear X out|in        remove netem / rate settings of that direction
#   nt_have_netem            status 0 if netem works in this kernel
#   nt_cleanup               kill tracked PIDs and every process left in our namespaces (by PID),
#                            delete our namespaces, veths and ifbs. Idempotent.
#
# Example (host or VM):
#   . tests/net/netns.sh
#   nt_host h1 198.18.0.2/24
#   nt_bg h1 socat -t 30 TCP-LISTEN:5001,reuseaddr,fork EXEC:cat
#   dpdk-testpmd --no-pci --vdev=net_af_packet0,iface=$h1_IF,qdisc_bypass=1 ...
#
# Functions print a diagnostic and return non-zero on failure; with `set -e` that ends the test,
# and the traps still clean up.

NT_ID=${NT_ID:-$$}
NT_N=${NT_N:-0}
NT_NSES=${NT_NSES:-}
NT_IFS=${NT_IFS:-}
NT_PIDS=${NT_PIDS:-}
NT_INIT=${NT_INIT:-0}

nt__err() {
	echo "netns.sh: $*" >&2
}

nt_init() {
	[ "$NT_INIT" = 1 ] && return 0
	NT_INIT=1
	trap 'nt_cleanup' EXIT
	trap 'nt_cleanup; trap - EXIT; exit 130' INT
	trap 'nt_cleanup; trap - EXIT; exit 143' TERM
	trap 'nt_cleanup; trap - EXIT; exit 129' HUP
}

# nt__get X FIELD: value of ${X}_FIELD
nt__get() {
	eval "printf '%s' \"\${${1}_${2}:-}\""
}

nt__check_name() {
	case $1 in
	'' | [0-9]* | *[!A-Za-z0-9_]*)
		nt__err "bad test host name '$1' (letters, digits, _)"
		return 1
		;;
	esac
}

nt__check_addr() {
	case $1 in
	198.18.*.*/* | 198.19.*.*/*) return 0 ;;
	esac
	nt__err "address '$1' is not ADDR/PLEN in 198.18.0.0/15 (the only range tests may use)"
	return 1
}

nt_host() {
	local x=$1 addr=${2:-} mtu=${3:-} ns peer here
	nt__check_name "$x" || return 1
	nt__check_addr "$addr" || return 1
	nt_init
	NT_N=$((NT_N + 1))
	ns=nt$NT_ID-$x
	here=nt${NT_ID}x$NT_N # ntPIDxN here, ntPIDpN in the namespace, ntPIDiN its ifb: <= 15 chars
	peer=nt${NT_ID}p$NT_N
	if [ ${#here} -gt 15 ]; then
		nt__err "interface name $here too long"
		return 1
	fi
	# A leftover with our PID in its name can only be stale (PIDs are unique among live processes).
	ip netns del "$ns" 2>/dev/null || true
	ip link del "$here" 2>/dev/null || true
	ip netns add "$ns" || { nt__err "ip netns add $ns failed"; return 1; }
	NT_NSES="$NT_NSES $ns"
	ip link add "$here" type veth peer name "$peer" netns "$ns" || {
		nt__err "cannot create veth $here/$peer"
		return 1
	}
	NT_IFS="$NT_IFS $here"
	if [ -n "$mtu" ]; then
		ip link set "$here" mtu "$mtu" && ip -n "$ns" link set "$peer" mtu "$mtu" || return 1
	fi
	echo 1 >"/proc/sys/net/ipv6/conf/$here/disable_ipv6" 2>/dev/null || true
	ip netns exec "$ns" sh -c "echo 1 >/proc/sys/net/ipv6/conf/$peer/disable_ipv6" 2>/dev/null || true
	ip -n "$ns" link set lo up &&
		ip -n "$ns" addr add "$addr" dev "$peer" &&
		ip -n "$ns" link set "$peer" up &&
		ip link set "$here" up || {
		nt__err "cannot configure test host $x"
		return 1
	}
	ip netns exec "$ns" ethtool -K "$peer" tx off >/dev/null || {
		nt__err "ethtool -K $peer tx off failed"
		return 1
	}
	eval "${x}_NS=\$ns ${x}_IF=\$here ${x}_PEER=\$peer ${x}_ADDR=\${addr%/*}"
	eval "${x}_MAC=\$(ip -n \"\$ns\" -br link show \"\$peer\" | awk '{print \$3}')"
}

nt_route() {
	local ns
	ns=$(nt__get "$1" NS)
	[ -n "$ns" ] || { nt__err "no test host '$1'"; return 1; }
	ip -n "$ns" route replace default via "$2" dev "$(nt__get "$1" PEER)"
}

nt_exec() {
	local ns
	ns=$(nt__get "$1" NS)
	[ -n "$ns" ] || { nt__err "no test host '$1'"; return 1; }
	shift
	ip netns exec "$ns" "$@"
}

nt_bg() {
	local ns
	ns=$(nt__get "$1" NS)
	[ -n "$ns" ] || { nt__err "no test host '$1'"; return 1; }
	shift
	ip netns exec "$ns" "$@" </dev/null &
	NT_PID=$!
	NT_PIDS="$NT_PIDS $NT_PID"
}

nt_track() {
	NT_PIDS="$NT_PIDS $*"
}

nt_wait_tcp() {
	local ns i=0 max
	ns=$(nt__get "$1" NS)
	[ -n "$ns" ] || { nt__err "no test host '$1'"; return 1; }
	max=$((${3:-10} * 10))
	while ! ip netns exec "$ns" ss -Hltn "sport = :$2" 2>/dev/null | grep -q .; do
		i=$((i + 1))
		if [ "$i" -gt "$max" ]; then
			nt__err "nothing listens on TCP port $2 in $1 after ${3:-10} s"
			return 1
		fi
		sleep 0.1
	done
}

nt_have_netem() {
	local ns=nt$NT_ID-netemprobe rc
	ip netns add "$ns" 2>/dev/null || return 1
	ip -n "$ns" link set lo up
	ip netns exec "$ns" tc qdisc add dev lo root netem delay 0ms 2>/dev/null
	rc=$?
	ip netns del "$ns"
	return $rc
}

# nt__dir_dev X out|in: the device whose root qdisc shapes that direction (creating the ifb for in)
nt__dir_dev() {
	local ns peer ifb
	ns=$(nt__get "$1" NS)
	peer=$(nt__get "$1" PEER)
	[ -n "$ns" ] || { nt__err "no test host '$1'"; return 1; }
	case $2 in
	out) echo "$peer" ;;
	in)
		ifb=$(echo "$peer" | sed 's/p\([0-9]*\)$/i\1/')
		if ! ip -n "$ns" link show "$ifb" >/dev/null 2>&1; then
			ip -n "$ns" link add "$ifb" type ifb &&
				ip -n "$ns" link set "$ifb" up &&
				ip netns exec "$ns" tc qdisc add dev "$peer" ingress &&
				ip netns exec "$ns" tc filter add dev "$peer" parent ffff: protocol all u32 \
					match u32 0 0 action mirred egress redirect dev "$ifb" || {
				nt__err "cannot set up ingress redirection on $peer (ifb, u32, mirred)"
				return 1
			}
		fi
		echo "$ifb"
		;;
	*)
		nt__err "direction must be out or in, not '$2'"
		return 1
		;;
	esac
}

nt_netem() {
	local x=$1 dir=$2 dev
	shift 2
	if ! nt_have_netem; then
		nt__err "netem is not available in this kernel (run the test in the VM: tests/vm/run)"
		return 77
	fi
	dev=$(nt__dir_dev "$x" "$dir") || return 1
	ip netns exec "$(nt__get "$x" NS)" tc qdisc replace dev "$dev" root netem "$@"
}

nt_rate() {
	local dev
	dev=$(nt__dir_dev "$1" "$2") || return 1
	ip netns exec "$(nt__get "$1" NS)" tc qdisc replace dev "$dev" root tbf rate "$3" \
		burst "${4:-64kb}" latency 400ms
}

nt_clear() {
	local dev
	dev=$(nt__dir_dev "$1" "$2") || return 1
	ip netns exec "$(nt__get "$1" NS)" tc qdisc del dev "$dev" root 2>/dev/null || true
}

nt_cleanup() {
	local p ns i left
	for p in $NT_PIDS; do kill -TERM "$p" 2>/dev/null || true; done
	for ns in $NT_NSES; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -TERM "$p" 2>/dev/null || true; done
	done
	# give them 2 s to go, then SIGKILL what is left (still by PID)
	i=0
	while [ $i -lt 20 ]; do
		left=''
		for ns in $NT_NSES; do left="$left$(ip netns pids "$ns" 2>/dev/null)"; done
		for p in $NT_PIDS; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
		[ -z "$left" ] && break
		sleep 0.1
		i=$((i + 1))
	done
	for p in $NT_PIDS; do kill -KILL "$p" 2>/dev/null || true; done
	for ns in $NT_NSES; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
	done
	for p in $NT_PIDS; do wait "$p" 2>/dev/null || true; done
	for ns in $NT_NSES; do ip netns del "$ns" 2>/dev/null || true; done
	for p in $NT_IFS; do ip link del "$p" 2>/dev/null || true; done
	NT_PIDS='' NT_NSES='' NT_IFS=''
}
