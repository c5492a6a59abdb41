# Shared by the in-VM halves of tests/e2e/test_e2e_*.sh (source it from bash, cwd = project root).
# Reuses tests/ib/guest_lib.sh (check, m, ib_done, which ibgwd) and tests/eth/lib.sh (the namespace
# with kernel TCP on a veth whose other end is ibgwd's af_packet port; ETH_LINK=vhost: on a tap of
# virtio_user on vhost-net, with offloads).
#
#   e2e_start ROUTES          writes a config (both sides: [ib] on $IB_ADDR_A, [eth] on the veth,
#                             plus $GW_EXTRA in [gateway] and $E2E_EXTRA in [eth], drain_timeout
#                             $E2E_DRAIN) with ROUTES, starts ibgwd and waits for /health and for the
#                             namespace to reach it
#   e2e_conf ROUTES           only (re)writes the config (for a SIGHUP reload)
#   peer ARGS...              tests/e2e/peer.py in the VM's root namespace (rsocket side)
#   npeer ARGS...             tests/e2e/peer.py in the Ethernet namespace (kernel TCP side)
#   bg NAME CMD...            runs CMD in the background, output in $T/NAME.out, PID in ${PIDS[NAME]}
#   stop NAME                 kills a background command by its PID and reaps it
#   wait_for COND SECS        polls COND (eval) for SECS seconds; status 0 once it holds
#   echo_both OUT IN SIZE [RS_PEER_OPTION...]
#                             SIZE bytes echoed each way at once: rs_peer through ib:7000 (background
#                             command OUT) and a kernel TCP client through tcp:9000 (IN); waits for both,
#                             sets rc_out and rc_in (their exit statuses) and dt (seconds for both);
#                             the TCP client goes to $ECHO_TCP_GW (default $ETH_GW_IP), from
#                             $ECHO_TCP_SRC if set
#   echo_verify OUT IN SIZE TSRV_LOG RSRV_LOG [LABEL [VIA]]
#                             the checks of an echo_both run: both echoes identical, both far
#                             servers got exactly the clients' bytes (SHA-256)
#   rss                       ibgwd's resident memory in KiB (VmRSS)
#   mf NAME                   like m, as a number (floats kept)
#   scrape; ms NAME           one fetch of /metrics, then samples read from it
#   log_has FILE N            FILE has at least N "conn" lines
#   echk COND MSG             check, with a status (0: passed) to chain diagnostics after ||
#   e2e_done                  drains ibgwd (SIGTERM), checks its exit, prints the summary
# The IB address of the gateway is $IB_ADDR_A (loop topology: rsocket peers use the same rxe device),
# the Ethernet one $ETH_GW_IP; kernel TCP peers are $ETH_PEER_IP in namespace $ETH_NS.
. tests/ib/guest_lib.sh
. tests/eth/lib.sh
T=$(mktemp -d /tmp/e2e.XXXXXX)
declare -A PIDS
trap 'e2e_cleanup' EXIT
IB=$IB_ADDR_A

e2e_cleanup() {
	local p
	for p in "${PIDS[@]}"; do { kill -KILL "$p" && wait "$p"; } 2>/dev/null; done
	eth_cleanup
	rm -rf "$T"
}

peer() { "$PY3" tests/e2e/peer.py "$@"; }
npeer() { eth_ns "$PY3" tests/e2e/peer.py "$@"; }

bg() {
	local name=$1
	shift
	# spelled out, not through the functions: a function would run in a forked shell whose PID is
	# not the peer's (killing it would leave the peer running); ip netns exec execs its command
	case $1 in
	npeer) shift; set -- ip netns exec "$ETH_NS" "$PY3" tests/e2e/peer.py "$@" ;;
	peer) shift; set -- "$PY3" tests/e2e/peer.py "$@" ;;
	eth_ns) shift; set -- ip netns exec "$ETH_NS" "$@" ;;
	esac
	"$@" >"$T/$name.out" 2>&1 &
	PIDS[$name]=$!
}

stop() {
	local p=${PIDS[$1]:-}
	[ -n "$p" ] || return 0
	{ kill "$p" && wait "$p"; } 2>/dev/null
	unset "PIDS[$1]"
}

# waits for background command NAME to end; returns its exit status
reap() {
	local p=${PIDS[$1]:-} rc
	[ -n "$p" ] || return 127
	wait "$p"
	rc=$?
	unset "PIDS[$1]"
	return $rc
}

# by the clock, not by a count of tries: on a loaded host one scrape of /metrics can take seconds
wait_for() {
	local end=$(($(date +%s) + $2))
	while :; do
		eval "$1" && return 0
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.1
	done
}

echo_both() {
	local out=$1 in=$2 size=$3 t0
	shift 3
	t0=$(date +%s)
	bg "$out" "$TOOLS/rs_peer" "$@" -p 7000 "$IB" echo "$size"
	bg "$in" npeer tcp-client "${ECHO_TCP_GW:-$ETH_GW_IP}" 9000 "$size" ${ECHO_TCP_SRC:+--src "$ECHO_TCP_SRC"}
	reap "$out"
	rc_out=$?
	reap "$in"
	rc_in=$?
	dt=$(($(date +%s) - t0))
}

# echo_verify OUT IN SIZE TSRV_LOG RSRV_LOG [LABEL [VIA]]: the four checks of an echo_both run: each
# echo identical at its client, and the far servers (tcp-serve logging to TSRV_LOG, rs-serve to
# RSRV_LOG) received exactly the clients' bytes (their SHA-256). LABEL prefixes the check lines,
# VIA follows "TCP" in them (e.g. " over IPv6"). Sets sha_out and sha_in.
echo_verify() {
	local o i
	o=$(cat "$T/$1.out") i=$(cat "$T/$2.out")
	echo "    outbound: $o"
	echo "    inbound:  $i"
	sha_out=$(echo "$o" | sed -n 's/.* sha_sent=\([0-9a-f]*\).*/\1/p')
	sha_in=$(echo "$i" | sed -n 's/.* sha=\([0-9a-f]*\).*/\1/p')
	check "[ $rc_out = 0 ] && grep -q '^ok .*sent=$3 recv=$3 ' $T/$1.out" \
		"${6:-}outbound: $3 bytes IB -> TCP${7:-} and back, echo identical at the rsocket client (${dt} s for both)"
	check "[ -n '$sha_out' ] && wait_for 'log_has $4 1' 10 && grep -q \"^conn in=$3 sha_in=$sha_out out=$3 \" $4" \
		"${6:-}outbound: the kernel TCP server received exactly the client's bytes (sha256 $(echo "$sha_out" | cut -c1-12))"
	check "[ $rc_in = 0 ] && grep -q '^ok sent=$3 got=$3 ' $T/$2.out" \
		"${6:-}inbound: $3 bytes TCP${7:-} -> IB and back, echo identical at the TCP client"
	check "[ -n '$sha_in' ] && wait_for 'log_has $5 1' 10 && grep -q \"^conn in=$3 sha_in=$sha_in out=$3 \" $5" \
		"${6:-}inbound: the rsocket server received exactly the client's bytes (sha256 $(echo "$sha_in" | cut -c1-12))"
}

# like check, but its status says whether the check passed (for "echk ... || show details")
echk() {
	local before=$nfail
	check "$@"
	[ "$nfail" = "$before" ]
}

# route_stuck ROUTE: ROUTE's ib_to_eth bytes stopped moving for a second, above $last (the bytes
# of the sessions before): its sink's window is shut and its bytes are in flight
route_stuck() {
	local a b
	a=$(m "ibgw_route_bytes_total{route=\"$1\",dir=\"ib_to_eth\"}")
	sleep 1
	b=$(m "ibgw_route_bytes_total{route=\"$1\",dir=\"ib_to_eth\"}")
	[ "$a" = "$b" ] && [ "$b" -gt "$last" ]
}

# scrape; then ms NAME reads that one scrape (one /metrics fetch can take seconds under load). The
# samples are read into SCRAPE once: ms is then a lookup, not a process (each exec costs ~0.1 s under
# TCG, and the checks read dozens of samples)
declare -A SCRAPE
scrape() {
	local k v
	curl -s -m 20 "http://127.0.0.1:$STATS/metrics" >"$T/scrape"
	SCRAPE=()
	while read -r k v _; do
		[ -n "$k" ] && [ "${k:0:1}" != "#" ] && SCRAPE[$k]=$v
	done <"$T/scrape"
}
ms() { echo "${SCRAPE[$1]:-0}"; }

rss() { awk '/^VmRSS/ { print $2 }' "/proc/$GW_PID/status"; }
mf() { m "$1" | awk '{ printf "%.3f", $1 }'; }
log_has() { [ "$(grep -c '^conn' "$1" 2>/dev/null)" -ge "$2" ]; }

# float comparison: fgt A B is true when A > B
fgt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# e2e_conf ROUTES: (re)writes /tmp/ibgw.conf (also for a reload)
e2e_conf() {
	eth_conf /tmp/ibgw.conf "${E2E_EXTRA:-}
[ib]
bind = $IB
${E2E_IB_EXTRA:-}
$1"
	# [gateway] extras go right after the section header (in bash: a python start costs ~1 s under TCG)
	if [ -n "${GW_EXTRA:-}" ]; then
		local c
		c=$(</tmp/ibgw.conf)
		printf '%s\n' "${c/"[gateway]"$'\n'/"[gateway]"$'\n'"$GW_EXTRA"$'\n'}" >/tmp/ibgw.conf
	fi
	sed -i "s/^drain_timeout = .*/drain_timeout = ${E2E_DRAIN:-2s}/" /tmp/ibgw.conf
}

e2e_start() {
	eth_setup
	ETH_STATS=$STATS
	e2e_conf "$1"
	gw_start /tmp/ibgw.conf
	gw_wait_ready $STATS 60
	if [ "${ETH_LINK:-}" = vhost ]; then # the tap came with ibgwd (tests/eth/lib.sh)
		eth_tap_adopt "$ETH_IF" "$ETH_PEER"
		eth_peer_up
	fi
	eth_ns ping -c 1 -W 5 "$ETH_GW_IP" >/dev/null || fail "the namespace cannot reach ibgwd"
	echo "ibgwd: $(basename "$(dirname "$IBGWD")")/ibgwd, pid $GW_PID, RSS $(rss) KiB"
}

e2e_done() {
	ib_done
}
