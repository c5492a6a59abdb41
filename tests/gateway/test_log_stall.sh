#!/usr/bin/env bash
# A log that stops taking lines must not stop the datapath: ibgwd's stderr is a pipe whose reader is
# stopped and which is full (journald or a syslog daemon that stalls behaves the same), then a worker
# logs (clients of an accept_proxy route that are not in its proxy_from: a rate-limited warning each
# second), and a session through that worker must still complete, byte for byte. The lines the
# worker could not write are dropped and counted (ibgw_log_lines_dropped_total). Before, the worker
# blocked in write() and every session on it stopped until the reader read again.
# timeout: 120
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh

ns=ibgwl$$ gw_if=ibglg$$ ns_if=ibgln$$
tmp=$(mktemp -d)
READER= FILLER=
cleanup() {
	[ -n "$READER" ] && kill -CONT "$READER" 2>/dev/null
	[ -n "$FILLER" ] && kill "$FILLER" 2>/dev/null
	local pid=$GW_PID
	gw_cleanup
	[ -n "$pid" ] && rm -rf "/var/run/dpdk/ibgwd-$pid"
	[ -n "$READER" ] && kill "$READER" 2>/dev/null
	gw_veth_del "$ns" "$gw_if"
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

gw_veth "$ns" "$gw_if" "$ns_if" 198.18.6.2/24

port=$(gw_free_port)
conf=$tmp/ibgw.conf
cat >"$conf" <<CONF
[gateway]
stats = 127.0.0.1:$port
drain_timeout = 2s
[eth]
vdev = net_af_packet0,iface=$gw_if,qdisc_bypass=1
eal_args = --no-pci --no-huge -m 256
address = 198.18.6.1/24
mbufs = 4095
[route diag]
listen = tcp:7
connect = echo
[route pp]
listen = tcp:8000
connect = echo
accept_proxy = v2
proxy_from = 198.18.99.0/24
CONF

mkfifo "$tmp/err"
GW_LOG=$tmp/log
cat "$tmp/err" >"$GW_LOG" &
READER=$!
"$IBGWD" -f -c "$conf" 2>"$tmp/err" >/dev/null &
GW_PID=$!
gw_wait_ready "$port"
ok "ibgwd serving, its stderr a pipe"
# the workers write through a non-blocking open of that pipe of their own: a check that a line fits
# followed by a blocking write could block all the same, when another thread's line took the room
pipe=$(readlink "/proc/$GW_PID/fd/2")
nb=
for f in /proc/$GW_PID/fd/*; do
	[ "${f##*/}" = 2 ] || [ "$(readlink "$f")" != "$pipe" ] && continue
	flags=$(awk '$1 == "flags:" { print $2 }' "/proc/$GW_PID/fdinfo/${f##*/}")
	[ $((8#$flags & 8#4001)) = $((8#4001)) ] && nb=${f##*/}
done
[ -n "$nb" ] || fail "no non-blocking write descriptor of the stderr pipe ($pipe) for the workers"
ok "the workers' log descriptor: fd $nb, the stderr pipe opened again, O_WRONLY|O_NONBLOCK"

# the reader stops; a writer of our own fills what is left of the pipe (it blocks once it is full)
kill -STOP "$READER"
head -c 1000000 /dev/zero >"$tmp/err" &
FILLER=$!
sleep 0.5
d0=$(gw_metric "$port" ibgw_log_lines_dropped_total)
# three clients not in proxy_from, a second apart: the worker logs a warning for each (rate limit 1/s)
for i in 1 2 3; do
	ip netns exec "$ns" timeout 5 python3 -c "
import socket
s = socket.create_connection(('198.18.6.1', 8000), timeout=3)
try:
    s.recv(1)
except OSError:
    pass" 2>/dev/null
	sleep 1.1
done
gw_echo_check "$ns" 198.18.6.1 7 200000 10 || fail "a session through the worker did not complete while the log was full"
d1=$(gw_metric "$port" ibgw_log_lines_dropped_total)
[ "$((d1 - d0))" -ge 1 ] || fail "no worker log line counted as dropped ($d0 -> $d1)"
ok "log pipe full, its reader stopped: the worker's $((d1 - d0)) warning(s) dropped and counted, a 200 kB echo through it intact"

kill "$FILLER" 2>/dev/null
wait "$FILLER" 2>/dev/null
FILLER=
kill -CONT "$READER"
gw_stop TERM 20
rc=$?
[ "$rc" = 0 ] || fail "ibgwd exited $rc"
wait "$READER" 2>/dev/null
READER=
grep -aq "serving:" "$GW_LOG" || fail "the log lost its start-up lines"
grep -aE 'AddressSanitizer|runtime error' "$GW_LOG" && fail "sanitizer report"
ok "the reader back: ibgwd stopped cleanly, exit 0"
