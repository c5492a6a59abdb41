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
# rstream's receive buffer is twice -B (default 512 KiB, so 1 MiB): it advertises half of it each time
# it consumed that much of the echo, so small buffers mean hundreds of adverts a second, each one the
# gateway must count as earned (a flood of unearned ones is reset past 100 a second). (Its sends are
# then small too, and the echo's receive side holds 384 messages: 1 MiB fits, 4 MiB would wait for
# itself, as above.)
run "receive buffer 8 KiB (adverts of 4 KiB)" -S 65536 -C 16 -B 4096
run "receive buffer 512 B (adverts of 256 B)" -S 1000 -C 100 -B 256
run "receive buffer 8 MiB" -S 1048576 -C 4 -B 4194304
lat=$(timeout 120 rstream -s "$IB_ADDR_B" -S 64 -C 1 -I 100 2>&1 | awk 'NR == 2 {print $NF}')
echo "    latency: ${lat:-none} us per transfer with idle_sleep 100ms"
check "[ -n \"\$lat\" ] && awk -v l=\"\$lat\" 'BEGIN { exit !(l < 10000) }'" \
	"64 B transfers take ${lat:-?} us (< 10 ms): completions wake the sleeping worker"
check "[ \$(m ibgw_ib_connections_accepted_total) = 8 ]" "8 connections accepted"
check "[ \$(m 'ibgw_route_sessions_ended_total{route=\"echo\",reason=\"ok\"}') = 8 ]" "8 sessions ended ok"
check "[ \$(m 'ibgw_ib_protocol_violations_total{worker=\"0\",reason=\"message\"}') = 0 ]" "no protocol violation"
check "[ \$(m ibgw_ib_connections_active) = 0 ]" "no connection left"
check "[ \$(m 'ibgw_ib_completion_errors_total{worker=\"0\"}') = 0 ]" "no completion errors"
ib_done
