# Helpers to run ibgwd in tests (source it from bash). Works on the host and inside the test VM.
#
#   gw_free_port                 prints a free TCP port on 127.0.0.1 for the stats endpoint
#   gw_start CONF [ARGS...]      starts $IBGWD (default build/asan/ibgwd) -f -c CONF in the background;
#                                sets GW_PID and GW_LOG (kept in build/test-logs/); ended by gw_cleanup
#   gw_wait_ready STATS_PORT [S] waits until /health answers 200 (default 30 s); fails if ibgwd died
#   gw_wait_serving STATS_PORT [S] the same, but a 503 "degraded" answer (serving, some route cannot be:
#                                an ib: route on a host without RDMA) is enough; prints the code
#   gw_metric STATS_PORT 'name{labels}'  prints the value of one sample of /metrics (0 if absent)
#   gw_stop [SIGNAL] [S]         sends SIGNAL (TERM) and waits up to S s (20); returns ibgwd's exit code
#   gw_cleanup                   kills a still-running ibgwd (by PID); call it from your EXIT trap
#   gw_routes                    prints the [route NAME] sections of a config from a table on stdin, a
#                                route a line: NAME LISTEN CONNECT [KEY=VALUE...] (values without spaces;
#                                blank lines and # comments skipped)
#   gw_veth NS GW_IF NS_IF ADDR/LEN
#                                a namespace NS and a veth pair: GW_IF on the host (up) for ibgwd's
#                                af_packet port, NS_IF in NS with ADDR/LEN, its TX checksum offload
#                                off (af_packet hands frames over as they are: a checksum left to an
#                                offload would arrive unfilled); gw_veth_del NS GW_IF removes them
#   gw_echo_check NS HOST PORT BYTES [S]
#                                from namespace NS, sends BYTES random bytes to the echo route at
#                                HOST:PORT while reading what comes back, then ends its side; true
#                                only when exactly those bytes came back (sha256); S s of silence at
#                                most (default 30), twice that in all
#   fail MSG / ok MSG            print and exit 1 / print a check that passed
GW_ROOT=${GW_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
IBGWD=${IBGWD:-$GW_ROOT/${BUILD:-build}/asan/ibgwd}
GW_PID=
GW_LOG=
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:exitcode=66:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

fail() { echo "FAIL: $*"; [ -n "$GW_LOG" ] && [ -f "$GW_LOG" ] && { echo "--- ibgwd log (tail)"; tail -n 40 "$GW_LOG"; }; exit 1; }
ok() { echo "ok: $*"; }

gw_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

gw_start() {
	local conf=$1; shift
	mkdir -p "$GW_ROOT/${BUILD:-build}/test-logs"
	GW_LOG=${GW_LOG:-$GW_ROOT/${BUILD:-build}/test-logs/$(basename "$0" .sh).ibgwd-$$.log}
	"$IBGWD" -f -c "$conf" "$@" >>"$GW_LOG" 2>&1 &
	GW_PID=$!
}

gw_wait_ready() {
	local port=$1 limit=${2:-30} i
	for ((i = 0; i < limit * 10; i++)); do
		# (-m: an ibgwd whose control thread hangs must fail the test, not hang it with no word)
		[ "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" 2>/dev/null)" = 200 ] && return 0
		kill -0 "$GW_PID" 2>/dev/null || fail "ibgwd exited during start-up"
		sleep 0.1
	done
	fail "ibgwd not ready on port $port after ${limit}s"
}

gw_wait_serving() {
	local port=$1 limit=${2:-30} i got code
	for ((i = 0; i < limit * 10; i++)); do
		got=$(curl -s -m 10 -w '\n%{http_code}' "http://127.0.0.1:$port/health" 2>/dev/null)
		code=${got##*$'\n'}
		[ "$code" = 200 ] && echo 200 && return 0
		[ "$code" = 503 ] && [ "${got%%$'\n'*}" = degraded ] && echo 503 && return 0
		kill -0 "$GW_PID" 2>/dev/null || fail "ibgwd exited during start-up"
		sleep 0.1
	done
	fail "ibgwd not serving on port $port after ${limit}s"
}

gw_metric() {
	curl -s -m 20 "http://127.0.0.1:$1/metrics" | awk -v k="$2" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }'
}

# gw_metric_wait PORT KEY WANT: sample KEY once it reads WANT, within 3 s; else what it read last.
# /metrics may answer with a render up to ten times its own duration old (stats.c), so a count read
# right after the event that moved it can still show the count before.
gw_metric_wait() {
	local i v
	for i in $(seq 30); do
		v=$(gw_metric "$1" "$2")
		[ "$v" = "$3" ] && break
		sleep 0.1
	done
	echo "$v"
}

gw_stop() {
	local sig=${1:-TERM} limit=${2:-20} i rc
	[ -n "$GW_PID" ] || return 0
	kill -"$sig" "$GW_PID" 2>/dev/null
	for ((i = 0; i < limit * 10; i++)); do
		kill -0 "$GW_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$GW_PID" 2>/dev/null; then
		kill -KILL "$GW_PID" 2>/dev/null
		wait "$GW_PID" 2>/dev/null
		GW_PID=
		return 124
	fi
	wait "$GW_PID"
	rc=$?
	GW_PID=
	return $rc
}

gw_cleanup() {
	if [ -n "$GW_PID" ] && kill -0 "$GW_PID" 2>/dev/null; then
		kill -KILL "$GW_PID" 2>/dev/null
		wait "$GW_PID" 2>/dev/null
	fi
	GW_PID=
}

gw_veth() {
	ip netns add "$1" || fail "cannot create namespace $1"
	ip link add "$2" type veth peer name "$3" netns "$1" || fail "cannot create veth $2"
	ip link set "$2" up
	ip netns exec "$1" ip link set "$3" up
	ip netns exec "$1" ip addr add "$4" dev "$3"
	ip netns exec "$1" ethtool -K "$3" tx off >/dev/null
}

gw_veth_del() {
	ip netns del "$1" 2>/dev/null
	ip link del "$2" 2>/dev/null
}

gw_echo_check() {
	local t=${5:-30}
	ip netns exec "$1" timeout $((2 * t)) python3 - "$2" "$3" "$4" "$t" <<'PY'
import hashlib, os, socket, sys, threading
host, port, n, t = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
data = os.urandom(n)
s = socket.create_connection((host, port), timeout=t)
w = threading.Thread(target=lambda: (s.sendall(data), s.shutdown(socket.SHUT_WR)))
w.start()
got = bytearray()
while True:
    chunk = s.recv(1 << 16)
    if not chunk:
        break
    got += chunk
w.join()
assert len(got) == n and hashlib.sha256(got).digest() == hashlib.sha256(data).digest(), "echo differs"
PY
}

gw_routes() {
	local name listen connect rest kv
	while read -r name listen connect rest; do
		case $name in '' | '#'*) continue ;; esac
		printf '[route %s]\nlisten = %s\nconnect = %s\n' "$name" "$listen" "$connect"
		for kv in $rest; do printf '%s = %s\n' "${kv%%=*}" "${kv#*=}"; done
	done
}
