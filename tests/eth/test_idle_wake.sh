#!/usr/bin/env bash
# An idle worker sleeps, yet wakes when a frame arrives: with idle_sleep at its maximum (100 ms), pings
# and TCP round trips through the echo route still take about a millisecond, not up to 100 ms, because
# the worker sleeps in poll() on its af_packet ring socket (gateway/worker.c). The worker's sleep
# counter shows that it did sleep in between, its wake-up counter that the fd ended those sleeps, and
# its busy_poll window counter that the windows opened where they should.
# Then at the default idle_sleep (100 us), an idle worker whose fds announce all its work sleeps at
# least a millisecond at a time (the timer wheel's resolution), not 10000 times a second: its CPU
# when idle is what a gateway at rest costs.
# timeout: 120
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init

eth_setup
ETH_IDLE_SLEEP=100ms eth_gw_start "$tmp/ibgw.conf" "$(gw_routes <<<'echo tcp:7 echo')"
grep -q "idle workers wake on arriving frames" "$GW_LOG" || fail "ibgwd has no fd to sleep on for its RX queue (see $GW_LOG)"
ok "the worker sleeps on its RX queue's fd"

sleeps0=$(gw_metric "$ETH_STATS" 'ibgw_worker_idle_sleeps_total{worker="0"}')
eth_ns ping -c 10 -i 0.25 -W 2 "$ETH_GW_IP" >"$tmp/ping" || { cat "$tmp/ping"; fail "ping failed"; }
avg=$(sed -n 's|.* = [0-9.]*/\([0-9.]*\)/.*|\1|p' "$tmp/ping")
sleeps1=$(gw_metric "$ETH_STATS" 'ibgw_worker_idle_sleeps_total{worker="0"}')
[ "$sleeps1" -gt "$sleeps0" ] || fail "the worker never slept between pings"
# 100 ms naps would average ~50 ms; a woken worker answers in well under 20 ms even on a loaded host
awk -v a="$avg" 'BEGIN { exit !(a < 20) }' || { cat "$tmp/ping"; fail "ping rtt avg $avg ms: the worker was not woken"; }
ok "10 pings with 250 ms gaps: rtt avg $avg ms, $((sleeps1 - sleeps0)) sleeps in between"

wake0=$(gw_metric "$ETH_STATS" 'ibgw_worker_idle_wakeups_total{worker="0"}')
miss0=$(gw_metric "$ETH_STATS" 'ibgw_worker_poll_windows_total{worker="0",outcome="miss"}')
hit0=$(gw_metric "$ETH_STATS" 'ibgw_worker_poll_windows_total{worker="0",outcome="hit"}')
[ -n "$miss0" ] && [ -n "$hit0" ] || fail "no ibgw_worker_poll_windows_total{outcome=\"hit\"|\"miss\"} in /metrics"
out=$(eth_ns "$PY3" - "$ETH_GW_IP" <<'EOF'
import socket, sys, time
s = socket.create_connection((sys.argv[1], 7), timeout=5)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
rtts = []
for i in range(20):
    time.sleep(0.2)  # let the worker fall asleep
    msg = b"%05d" % i * 13
    t = time.monotonic()
    s.sendall(msg)
    got = b""
    while len(got) < len(msg):
        got += s.recv(len(msg) - len(got))
    rtts.append((time.monotonic() - t) * 1000)
    assert got == msg, "echo differs"
s.close()
rtts.sort()
print("%.2f %.2f" % (rtts[len(rtts) // 2], rtts[-1]))
EOF
) || fail "TCP echo round trips failed: $out"
read -r med max <<<"$out"
awk -v m="$med" 'BEGIN { exit !(m < 20) }' || fail "TCP echo median round trip $med ms: the worker was not woken"
ok "20 TCP echo round trips after 200 ms pauses: median $med ms, max $max ms"
# each of those found the worker asleep (100 ms naps): the frame's fd ended the nap, and the worker
# counts it, so an operator can see that the device's wake-ups arrive (15 of 20: a frame that lands
# while the worker is between two naps is found without one)
wake1=$(gw_metric "$ETH_STATS" 'ibgw_worker_idle_wakeups_total{worker="0"}')
[ $((wake1 - wake0)) -ge 15 ] || fail "naps ended by the RX queue's fd: $((wake1 - wake0)) during 20 round trips"
ok "naps ended by the RX queue's fd counted: $((wake1 - wake0)) during the 20 round trips"
# busy_poll windows: a port that wakes the worker by interrupt (virtio_user on vhost-net) gets one
# after Ethernet work, which ends in a miss when nothing comes within busy_poll (the 200 ms pauses
# here) or is never opened when the worker gets the CPU back only after it (under TCG vhost-net's
# thread takes it for longer than that: 13 windows for 20 exchanges seen); af_packet's ring socket
# wakes the worker directly, so none opens there
miss1=$(gw_metric "$ETH_STATS" 'ibgw_worker_poll_windows_total{worker="0",outcome="miss"}')
hit1=$(gw_metric "$ETH_STATS" 'ibgw_worker_poll_windows_total{worker="0",outcome="hit"}')
if [ "${ETH_LINK:-}" = vhost ]; then
	[ $((miss1 - miss0)) -ge 1 ] || fail "no busy_poll window ran out during 20 round trips 200 ms apart ($((hit1 - hit0)) hits)"
else
	[ $((miss1 - miss0 + hit1 - hit0)) = 0 ] || fail "busy_poll windows on af_packet: $((hit1 - hit0)) hits, $((miss1 - miss0)) misses"
fi
ok "busy_poll windows during the round trips: $((hit1 - hit0)) hits, $((miss1 - miss0)) misses (link ${ETH_LINK:-af_packet})"
gw_stop || fail "ibgwd exited with $? (sanitizer report or shutdown error)"
ok "clean shutdown"

# default idle_sleep: naps per second of an idle worker (a loaded host only makes naps longer, so
# this cannot fail for slowness; 100 us naps made ~5000-10000 a second)
GW_PID=
eth_gw_start "$tmp/ibgw2.conf" "$(gw_routes <<<'echo tcp:7 echo')"
sleep 1
s0=$(gw_metric "$ETH_STATS" 'ibgw_worker_idle_sleeps_total{worker="0"}')
t0=$(date +%s%N)
sleep 3
s1=$(gw_metric "$ETH_STATS" 'ibgw_worker_idle_sleeps_total{worker="0"}')
rate=$(( (s1 - s0) * 1000000000 / ($(date +%s%N) - t0) ))
[ "$rate" -le 1100 ] || fail "an idle worker at the default idle_sleep took $rate naps a second (at most ~1000 expected)"
ok "idle at the default idle_sleep: $rate naps a second"
gw_stop || fail "ibgwd exited with $? (second run)"
ok "clean shutdown (second run)"
