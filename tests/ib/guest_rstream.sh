#!/bin/bash
# In-VM half of tests/ib/test_ib_rstream.sh: rdma-core's own rstream client against ibgwd's echo
# route, small and large transfers with data verification, and the small-message latency test.
set -u
cd "$(dirname "$0")/../.."
. tests/ib/guest_lib.sh

# rstream sends a whole test (plus 16 sync bytes) before it reads the echo back, so the echo must
# hold it: the client's receive buffer (1 MiB), our send buffer, and what fits in our receive buffer
# by whole halves (rsocket re-advertises space a half at a time). 4 MiB tests fit in 8 MiB.
# idle_sleep at its maximum: the idle worker sleeps on its CQs' event channels and must be woken by
# each completion (the latency run below would take ~50 ms a message otherwise).
GW_EXTRA="idle_sleep = 100ms"
ib_gw_start "[ib]
bind = $IB_ADDR_B
[route echo]
listen = ib:7471
connect = echo
ib_rbuf = 8M
ib_sbuf = 1M
max_sessions = 4"

run() { # NAME ARGS...: rstream client against the gateway
	local name=$1 out
	shift
	out=$(timeout 120 rstream -s "$IB_ADDR_B" -T v "$@" 2>&1)
	local rc=$?
	echo "$out" | sed 's/^/    /'
	check "[ $rc = 0 ] && echo \"\$out\" | grep -q '^custom\|_lat\|_bw'" "rstream $name ($*)"
}
run "small 64 B x 1000" -S 64 -C 1000
run "large 1 MiB x 4" -S 1048576 -C 4
run "mid 100000 B x 40 (odd size, ring wrap)" -S 100000 -C 40
run "latency 64 B x 300" -S 64 -C 1 -I 300
lat=$(timeout 120 rstream -s "$IB_ADDR_B" -S 64 -C 1 -I 100 2>&1 | awk 'NR == 2 {print $NF}')
echo "    latency: ${lat:-none} us per transfer with idle_sleep 100ms"
check "[ -n \"\$lat\" ] && awk -v l=\"\$lat\" 'BEGIN { exit !(l < 10000) }'" \
	"64 B transfers take ${lat:-?} us (< 10 ms): completions wake the sleeping worker"
check "[ \$(m ibgw_ib_connections_accepted_total) = 5 ]" "5 connections accepted"
check "[ \$(m 'ibgw_route_sessions_ended_total{route=\"echo\",reason=\"ok\"}') = 5 ]" "5 sessions ended ok"
check "[ \$(m ibgw_ib_connections_active) = 0 ]" "no connection left"
check "[ \$(m 'ibgw_ib_completion_errors_total{worker=\"0\"}') = 0 ]" "no completion errors"
ib_done
