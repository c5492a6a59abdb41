#!/bin/bash
# In-VM half of tests/ib/test_ib_interop.sh: rdma-core's stock clients against ibgwd at its default
# [ib] settings (pair topology: the rsocket traffic crosses the veth between rxe0 and rxe1).
#   - rstream, sizes 64 B .. 1 MiB, blocking / non-blocking / async (rpoll), each with rstream's data
#     verification (-T v: a byte pattern checked at the client), against the echo route and against a
#     tcp route (ibgwd -> kernel TCP echo server in a namespace);
#   - rs_peer (stock rsocket API) echoes with SHA-256 of every byte both ways: rstream's pattern
#     repeats every 256 bytes, so it cannot tell a stale ring from fresh data of the same shape;
#   - routes whose buffers are smaller (16K) and larger (1M) than the client's, and a client whose
#     buffers are smaller than ours;
#   - riostream (RDMA writes into a peer's iomapped buffer): ibgwd advertises no iomap, so it must
#     fail at once and cleanly, and the gateway go on serving;
#   - the echo's buffering: rstream sends all -C transfers before it reads any back, so an echo can
#     take at most (client's receive buffer + our receive + send buffer) of it, less up to half of
#     our receive ring (rsocket re-advertises space only a whole half at a time); beyond that the
#     client waits for itself (rstream's own server reads everything first, so it never meets this).
#     Checked: the gateway takes exactly that much and no byte more (strict backpressure), with a
#     client receive buffer that holds the test the same run passes, and a plain rsocket echo server
#     (no ibgwd) makes the same client wait the same way.
# rstream's -C counts are chosen to fit that bound at the defaults (client receive buffer 1 MiB:
# rstream asks for 512K, rsocket doubles it; ours 128K + 128K).
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/guest_lib.sh
IB=$IB_ADDR_B
CAP=$((1048576 + 131072 + 131072)) # what the echo route can hold of one rstream test at the defaults
declare -a TABLE

# Routes under test: the defaults, and two that change [ib] buffers on purpose (the settings cases).
e2e_start "$(gw_routes <<EOF
echo	ib:7471	echo
small	ib:7472	echo	ib_rbuf=16K ib_sbuf=16K
large	ib:7473	echo	ib_rbuf=1M ib_sbuf=1M
tcp	ib:7474	tcp:$ETH_PEER_IP:5000
EOF
)"
bg tsrv npeer tcp-serve 5000 "$T/tsrv.log"
wait_for "grep -q listening $T/tsrv.out" 30 || fail "the TCP echo server did not start"

row() { TABLE+=("$(printf '%-7s %-34s %-5s %s' "$1" "$2" "$3" "$4")"); }

# rs ROUTE PORT ARGS...: one rstream run, bounded; it passes when rstream exits 0 and printed its
# result line (with -T v it exits non-zero on the first wrong byte)
rs() {
	local route=$1 port=$2 out rc t0 t1
	shift 2
	t0=$(date +%s.%N)
	out=$(timeout 30 rstream -s "$IB" -p "$port" "$@" 2>&1)
	rc=$?
	t1=$(date +%s.%N)
	check "[ $rc = 0 ] && echo \"\$out\" | grep -q '^custom'" "$route: rstream $* (rc $rc)"
	[ $rc = 0 ] || echo "$out" | tail -3 | sed 's/^/    /'
	# a client that hangs: where the bytes are (everything posted both ways: the client's side)
	[ $rc = 124 ] && curl -s "http://127.0.0.1:$STATS/metrics" |
		grep -E '^ibgw_ib_(bytes|messages|control_messages|connections_active|protocol_violations)' | sed 's/^/    /'
	row "$route" "rstream $*" "$([ $rc = 0 ] && echo ok || echo "rc$rc")" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f s", b - a }')"
}

# sha ROUTE PORT BYTES [RS_PEER OPTIONS]: rs_peer echo, SHA-256 of both directions compared
sha() {
	local route=$1 port=$2 bytes=$3 out rc
	shift 3
	out=$(timeout 60 "$TOOLS/rs_peer" -t 50 "$@" -p "$port" "$IB" echo "$bytes" 2>&1)
	rc=$?
	check "[ $rc = 0 ] && echo \"\$out\" | grep -q '^ok .*sent=$bytes recv=$bytes '" "$route: rs_peer echo $bytes B $*, sha256 equal both ways"
	[ $rc = 0 ] || echo "$out" | tail -3 | sed 's/^/    /'
	row "$route" "rs_peer $* echo $bytes (sha256)" "$([ $rc = 0 ] && echo ok || echo "rc$rc")" "$(echo "$out" | sed -n 's/.* secs=\([0-9.]*\).*/\1 s/p')"
}

# ---- the matrix at the defaults: echo route ----
for mode in b n a; do
	rs echo 7471 -T $mode -T v -S 64 -C 200
	rs echo 7471 -T $mode -T v -S 4096 -C 50
	rs echo 7471 -T $mode -T v -S 32768 -C 30
	rs echo 7471 -T $mode -T v -S 65536 -C 16
	rs echo 7471 -T $mode -T v -S 100000 -C 12
	rs echo 7471 -T $mode -T v -S 1048576 -C 1 -I 2
done
sha echo 7471 4000000

# ---- tcp route (ibgwd -> kernel TCP echo): more buffering on the way, so the issue's own case
# (-S 32768 -C 50) fits ----
rs tcp 7474 -T b -T v -S 64 -C 200
rs tcp 7474 -T a -T v -S 32768 -C 50
rs tcp 7474 -T n -T v -S 100000 -C 12
rs tcp 7474 -T b -T v -S 1048576 -C 1 -I 2
sha tcp 7474 2000000

# ---- settings: our buffers smaller (16K: 8K halves, so rsocket's writes shrink to fit) and larger
# than the client's, and a client with smaller buffers than ours (-B 16384: 32K receive buffer;
# -C 3: see the bound above, less up to a half of our ring, re-advertised only whole) ----
rs small 7472 -T b -T v -S 65536 -C 8
rs small 7472 -T a -T v -S 1048576 -C 1
sha small 7472 1000000
rs large 7473 -T n -T v -S 1048576 -C 2
sha large 7473 2000000
rs echo 7471 -B 16384 -T b -T v -S 65536 -C 3
sha echo 7471 1000000 -B 16384

# ---- riostream: RDMA writes into the peer's iomap; we advertise none ----
out=$(timeout 30 riostream -s "$IB" -p 7471 -S 4096 -C 10 2>&1)
rc=$?
echo "$out" | tail -2 | sed 's/^/    /'
check "[ $rc != 0 ] && [ $rc != 124 ] && echo \"\$out\" | grep -q riomap" "riostream fails at once and cleanly (rc $rc: ibgwd advertises no iomap)"
row echo "riostream -S 4096 -C 10" "$([ $rc != 0 ] && [ $rc != 124 ] && echo "fails" || echo "rc$rc")" "riomap refused"
check "wait_for '[ \$(m ibgw_ib_connections_active) = 0 ]' 30" "its connection is gone"
rs echo 7471 -T b -T v -S 4096 -C 10

v=0
for r in message length space credit advert; do
	v=$((v + $(m "ibgw_ib_protocol_violations_total{worker=\"0\",reason=\"$r\"}")))
done
check "[ $v = 0 ]" "no stock client was taken for a protocol violator"
check "[ \$(m 'ibgw_ib_completion_errors_total{worker=\"0\"}') = 0 ]" "no completion errors"

# ---- the echo's buffering at the defaults (see the top) ----
rx() { m 'ibgw_ib_bytes_total{worker="0",dir="rx"}'; }
rx0=$(rx)
bg cap timeout 60 rstream -s "$IB" -p 7471 -T b -S 32768 -C 50
wait_for '[ $(($(rx) - rx0)) -ge $CAP ] || ! kill -0 ${PIDS[cap]} 2>/dev/null' 40
sleep 3 # and not a byte more
rx1=$(rx)
kill -0 "${PIDS[cap]}" 2>/dev/null
alive=$?
stop cap
check "[ $alive = 0 ] && [ $((rx1 - rx0)) = $CAP ]" "1.6 MB sent before reading: the echo holds exactly $CAP B (client 1 MiB + ours 128K + 128K), took $((rx1 - rx0)) B"
row echo "rstream -T b -S 32768 -C 50" "$([ $alive = 0 ] && echo "waits" || echo "ended")" "took $((rx1 - rx0)) B of 1638416 (bound $CAP)"
check "wait_for '[ \$(m ibgw_ib_connections_active) = 0 ]' 30" "the killed client's connection is gone"
rs echo 7471 -B 4194304 -T b -T v -S 32768 -C 50
# the same runs against a plain rsocket echo server (the rsocket API at its defaults, no ibgwd on the
# way): -C 50 waits for itself as well and -C 30 passes, so the wait is what any bounded echo does with
# a client that writes everything before it reads, not a flaw of ibgwd's credits or rings
bg recho peer rs-serve "$IB" 7480 "$T/recho.log"
wait_for "grep -q listening $T/recho.out" 30 || fail "the rsocket echo server did not start"
# (-C 30 first: the server serves one client at a time, and the one -C 50 leaves behind holds it)
t0=$(date +%s%N)
timeout 30 rstream -s "$IB" -p 7480 -T b -T v -S 32768 -C 30 >"$T/recho30.out" 2>&1
rc30=$?
# -C 50 is given 4 times what -C 30 took (it moves 5/3 of it), at least 8 s: a client that only waits
# for itself never ends, so a longer wait only costs time
t30=$((($(date +%s%N) - t0) / 1000000)) w50=$((t30 * 4 < 8000 ? 8 : (t30 * 4 + 999) / 1000))
timeout $w50 rstream -s "$IB" -p 7480 -T b -S 32768 -C 50 >"$T/recho50.out" 2>&1
rc50=$?
check "[ $rc50 = 124 ] && [ $rc30 = 0 ]" "a stock rsocket echo server (no ibgwd): rstream -S 32768 -C 50 waits too (rc $rc50 after $w50 s), -C 30 passes (rc $rc30, $t30 ms)"
row rsocket "rstream -T b -S 32768 -C 50 (no ibgwd)" "$([ $rc50 = 124 ] && echo waits || echo "rc$rc50")" "plain rsocket echo server"
stop recho

echo "--- interop matrix (route, client, result, time)"
printf '    %s\n' "${TABLE[@]}"
e2e_done
