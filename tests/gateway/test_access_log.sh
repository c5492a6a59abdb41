#!/usr/bin/env bash
# The access log ([gateway] access_log, access_log_interval) on a tcp: -> tcp: route, on the host
# (DPDK af_packet on a veth; kernel TCP client and backend in a namespace, tests/gateway/alog_peer.py).
# First, a start whose access_log names a path through a symbolic link to a directory (made by anyone
# where the directory above is writable by all: /var/tmp/ibgw -> /etc) fails, saying so, and writes
# nothing through the link. Then one ibgwd runs through five parts; what the clients moved is known
# byte for byte:
#  1. 200 concurrent sessions of different random sizes, and one the client resets: exactly one JSON
#     line per session, found by the client's source port, with the byte counts the peers moved (and
#     the data checked by sha256 end to end), reason ok (reset for the reset one), distinct uids;
#  2. logrotate: the file is renamed and SIGUSR1 sent while sessions run: later sessions land in the
#     new file, and every session has its one line in one of the two files (none lost, none doubled);
#  3. access_log_interval = 1s (set by SIGHUP, which applies it at once): a session that lasts ~4 s
#     gets progress lines before its end line, in that file even though reloads to a file that
#     cannot be opened, to a symbolic link and to a path through a linked directory came in between
#     (each fails whole; a link is never followed); a SIGUSR1 after the log's directory was swapped
#     for a link keeps the open file, and the lines go on there;
#  4. a full log disk (a 64 KiB tmpfs with 8 KiB free; the log moved there by SIGHUP): sessions still
#     pass with sha256 intact, the lines that did not fit are counted in
#     ibgw_access_log_write_errors_total, /health answers; once there is room again every line is
#     written whole (a line the full disk cut is ended first), and written + lost = every session;
#  5. access_log = syslog:SOCKET (a receiver of the test's own): one datagram per line, "<30>" (daemon
#     facility, info), the lines right; the receiver gone, sessions pass and the lost lines are counted.
# Before the access log existed ibgwd refused the config (unknown key access_log): every part fails.
# timeout: 240
# concurrent: mostly waits (log intervals, reopen), little CPU
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
full=$tmp/full
# (the tmpfs goes after ibgwd, which holds the log open there)
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; eth_cleanup; mountpoint -q "$full" && umount -l "$full"; rm -rf "$tmp"' EXIT
peer() { eth_ns "$PY3" tests/gateway/alog_peer.py "$@"; }
check() { "$PY3" tests/gateway/alog_check.py "$@"; }
m() { gw_metric "$ETH_STATS" "ibgw_$1"; }
BACKEND=$ETH_PEER_IP:5001

# writes the config: access_log = $1, access_log_interval = $2 (a real user's are in conf/ibgw.conf;
# the route's max_sessions is raised from 256 so that 201 sessions fit at once)
mkconf() {
	eth_conf "$tmp/ibgw.conf" "$(gw_routes <<EOF
relay	tcp:8000	tcp:$BACKEND	max_sessions=512
EOF
)"
	sed -i "/^\[gateway\]/a access_log = $1\naccess_log_interval = $2" "$tmp/ibgw.conf"
}
# FILE:LINE of the access_log key, which a start's or a reload's refusal names
al_where() { echo "$tmp/ibgw.conf:$(grep -n '^access_log =' "$tmp/ibgw.conf" | cut -d: -f1)"; }
reloads=0
reload() {
	local i
	mkconf "$1" "$2"
	reloads=$((reloads + 1))
	kill -HUP "$GW_PID"
	for i in $(seq 100); do
		[ "$(m 'config_reloads_total{result="ok"}')" = "$reloads" ] && return 0
		sleep 0.1
	done
	fail "reload $reloads not applied"
}
# waits (bounded) until FILE has N lines or more
wait_lines() {
	local i
	for i in $(seq 300); do
		[ "$(cat "$@" 2>/dev/null | wc -l)" -ge "$N" ] && return 0
		sleep 0.1
	done
	return 1
}

eth_setup

# 0. a start through a linked directory: O_NOFOLLOW alone refuses a link as the file only, and a link
# as one of its directories redirects the appends as surely (to $tmp/elsewhere here, to /etc there)
mkdir "$tmp/elsewhere"
echo keep >"$tmp/elsewhere/access.log"
ln -s "$tmp/elsewhere" "$tmp/pub"
mkconf "$tmp/pub/access.log" 0
gw_start "$tmp/ibgw.conf"
for i in $(seq 300); do
	kill -0 "$GW_PID" 2>/dev/null || break
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ETH_STATS/health")" = 200 ] && break
	sleep 0.1
done
kill -0 "$GW_PID" 2>/dev/null &&
	fail "ibgwd started with access_log = $tmp/pub/access.log, $tmp/pub a symbolic link (the file it points to: $(head -c 200 "$tmp/elsewhere/access.log"))"
wait "$GW_PID"
rc=$?
GW_PID=
[ "$rc" != 0 ] || fail "ibgwd exited 0 with access_log through a symbolic link"
[ "$(cat "$tmp/elsewhere/access.log")" = keep ] || fail "written through the link: $(head -c 200 "$tmp/elsewhere/access.log")"
grep -qF "$(al_where): access log: cannot open $tmp/pub/access.log: a component of the path is a symbolic link" "$GW_LOG" ||
	fail "the start through a linked directory does not say why (nor where): $(grep 'access log' "$GW_LOG" | head -3)"
ok "start with the access log's directory a symbolic link: refused (exit $rc), saying so, nothing written through it"

log=$tmp/access.log
mkconf "$log" 0
gw_start "$tmp/ibgw.conf"
gw_wait_ready "$ETH_STATS" 30
eth_bg "$PY3" tests/gateway/alog_peer.py server 5001
eth_wait_listen 5001

# 1. 200 concurrent sessions + 1 reset
out=$(peer conc "$ETH_GW_IP" 8000 "$ETH_PEER_IP" 20000 200 "$tmp/a.json") || fail "part 1 sessions: $out"
echo "$out"
N=201 wait_lines "$log" || fail "part 1: $(wc -l <"$log") line(s) in the access log, expected 201 ($(m 'route_sessions_active{route="relay"}') session(s) still open; $(check ends "$tmp/a.json" relay "$ETH_PEER_IP" "$BACKEND" "$log"))"
sleep 0.3 # (a line too many would come now)
check ends "$tmp/a.json" relay "$ETH_PEER_IP" "$BACKEND" "$log" || fail "part 1: access log"
[ "$(m access_log_dropped_total)" = 0 ] || fail "part 1: records dropped: $(m access_log_dropped_total)"
ok "200 concurrent sessions and a reset one: one line each, right byte counts and reasons"

# 2. logrotate: rename, SIGUSR1, while sessions run
peer stream "$ETH_GW_IP" 8000 "$ETH_PEER_IP" 21000 4 "$tmp/b.json" >"$tmp/b.out" 2>&1 &
spid=$!
pids+=("$spid")
sleep 1.5
mv "$log" "$log.1"
kill -USR1 "$GW_PID"
wait "$spid" || fail "part 2 sessions: $(cat "$tmp/b.out")"
cat "$tmp/b.out"
nb=$("$PY3" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$tmp/b.json")
[ "$nb" -ge 4 ] || fail "part 2: only $nb session(s) ran"
N=$((201 + nb)) wait_lines "$log.1" "$log" || fail "part 2: $(cat "$log.1" "$log" | wc -l) line(s), expected $((201 + nb))"
sleep 0.3
[ -s "$log" ] || fail "part 2: nothing in the reopened file"
"$PY3" -c 'import json,sys; a=json.load(open(sys.argv[1])); a.update(json.load(open(sys.argv[2]))); json.dump(a, open(sys.argv[3], "w"))' \
	"$tmp/a.json" "$tmp/b.json" "$tmp/ab.json"
check ends "$tmp/ab.json" relay "$ETH_PEER_IP" "$BACKEND" "$log.1" "$log" || fail "part 2: access log"
ok "SIGUSR1 reopen: $(wc -l <"$log") line(s) in the new file, $(wc -l <"$log.1") in the renamed one, none lost or doubled"
[ "$(m access_log_lines_total)" = "$((201 + nb))" ] || fail "ibgw_access_log_lines_total is $(m access_log_lines_total), expected $((201 + nb))"
ok "ibgw_access_log_lines_total counts every line"

# 3. progress lines
log3=$tmp/progress.log
reload "$log3" 1s
# a target that cannot be opened fails the reload whole: the log and the interval stay as they are
mkconf "$tmp/no-such-dir/access.log" 0
kill -HUP "$GW_PID"
for i in $(seq 100); do [ "$(m 'config_reloads_total{result="failed"}')" = 1 ] && break; sleep 0.1; done
[ "$(m 'config_reloads_total{result="failed"}')" = 1 ] || fail "part 3: a reload to an unopenable access log did not fail"
# nor is a symbolic link followed (planted where others may write, it would make ibgwd, root by
# default, append to any file): that reload fails too, the file it names untouched
echo keep >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/link.log"
mkconf "$tmp/link.log" 0
kill -HUP "$GW_PID"
for i in $(seq 100); do [ "$(m 'config_reloads_total{result="failed"}')" = 2 ] && break; sleep 0.1; done
[ "$(m 'config_reloads_total{result="failed"}')" = 2 ] && [ "$(cat "$tmp/victim")" = keep ] ||
	fail "part 3: a reload to a symbolic link did not fail ($(m 'config_reloads_total{result="failed"}') failed; the file: $(head -c 200 "$tmp/victim"))"
grep -qF "$(al_where): access log: cannot open $tmp/link.log: a component of the path is a symbolic link" "$GW_LOG" ||
	fail "part 3: the symbolic link not named in the log (nor where it was set)"
# a link as a directory of the path is as good as one as the file: refused too, the file where it points
# untouched, the path named
mkconf "$tmp/pub/access.log" 0
kill -HUP "$GW_PID"
for i in $(seq 100); do [ "$(m 'config_reloads_total{result="failed"}')" = 3 ] && break; sleep 0.1; done
[ "$(m 'config_reloads_total{result="failed"}')" = 3 ] && [ "$(cat "$tmp/elsewhere/access.log")" = keep ] ||
	fail "part 3: a reload through a linked directory did not fail ($(m 'config_reloads_total{result="failed"}') failed; the file: $(head -c 200 "$tmp/elsewhere/access.log"))"
[ "$(grep -cF "$(al_where): access log: cannot open $tmp/pub/access.log: a component of the path is a symbolic link" "$GW_LOG")" = 2 ] ||
	fail "part 3: the reload through a linked directory does not say why"
peer slow "$ETH_GW_IP" 8000 "$ETH_PEER_IP" 23000 4 "$tmp/c.json" || fail "part 3: the slow session failed"
N=1 wait_lines "$log3" && sleep 0.3
check progress 23000 "$log3" || fail "part 3: progress lines"
ok "access_log_interval: progress lines for a long session (reloads to an unopenable file, to a symbolic link and through a linked directory failed and changed nothing)"
# the log's directory swapped for a link before logrotate's SIGUSR1: the reopen refuses it, says so,
# and the lines go on in the file that was open
mkdir "$tmp/rot"
reload "$tmp/rot/access.log" 0
mv "$tmp/rot" "$tmp/rot.real"
ln -s "$tmp/elsewhere" "$tmp/rot"
kill -USR1 "$GW_PID"
for i in $(seq 100); do grep -q "access log: SIGUSR1: keeping the old file" "$GW_LOG" && break; sleep 0.1; done
grep -q "access log: cannot open $tmp/rot/access.log: a component of the path is a symbolic link" "$GW_LOG" &&
	grep -q "access log: SIGUSR1: keeping the old file" "$GW_LOG" || fail "part 3: a reopen through a linked directory not refused"
out=$(peer conc "$ETH_GW_IP" 8000 "$ETH_PEER_IP" 23500 2 "$tmp/r.json") || fail "part 3: sessions after the refused reopen: $out"
N=3 wait_lines "$tmp/rot.real/access.log" && sleep 0.3
[ "$(cat "$tmp/elsewhere/access.log")" = keep ] || fail "part 3: the reopen wrote through the link: $(head -c 200 "$tmp/elsewhere/access.log")"
check ends "$tmp/r.json" relay "$ETH_PEER_IP" "$BACKEND" "$tmp/rot.real/access.log" || fail "part 3: lines after the refused reopen"
ok "SIGUSR1 with the log's directory swapped for a link: refused, the open file goes on"

# 4. a full disk: a 64 KiB tmpfs with 8 KiB free, so that some lines fit and the rest do not
mkdir -p "$full"
mount -t tmpfs -o size=64k tmpfs "$full" || fail "cannot mount a tmpfs"
dd if=/dev/zero of="$full/filler" bs=4k count=14 2>/dev/null
reload "$full/access.log" 0
l0=$(m access_log_lines_total) e0=$(m access_log_write_errors_total)
# every record is either written or lost (none dropped: the rings never filled): N of them so far
settled() {
	local i
	for i in $(seq 100); do
		[ $(($(m access_log_lines_total) - l0 + $(m access_log_write_errors_total) - e0)) -ge "$1" ] && break
		sleep 0.1
	done
	sleep 0.3
	[ $(($(m access_log_lines_total) - l0 + $(m access_log_write_errors_total) - e0)) = "$1" ]
}
out=$(peer conc "$ETH_GW_IP" 8000 "$ETH_PEER_IP" 24000 50 "$tmp/d.json") || fail "part 4: sessions failed with a full log disk: $out"
echo "$out"
settled 51 || fail "part 4: $(($(m access_log_lines_total) - l0)) line(s) written + $(($(m access_log_write_errors_total) - e0)) lost, expected 51"
errs=$(($(m access_log_write_errors_total) - e0))
[ "$errs" -ge 1 ] || fail "part 4: no write error counted, yet 51 lines cannot fit in 8 KiB"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ETH_STATS/health")" = 200 ] || fail "part 4: /health"
ok "full log disk: 51 sessions intact (sha256), $errs lost line(s) counted, the daemon answers"
rm -f "$full/filler"
out=$(peer conc "$ETH_GW_IP" 8000 "$ETH_PEER_IP" 25000 20 "$tmp/e.json") || fail "part 4: sessions after the disk had room: $out"
settled 72 || fail "part 4: $(($(m access_log_lines_total) - l0)) line(s) written + $(($(m access_log_write_errors_total) - e0)) lost, expected 72"
[ "$(($(m access_log_write_errors_total) - e0))" = "$errs" ] || fail "part 4: lines lost after the disk had room again"
check disk "$full/access.log" "$tmp/e.json" "$(($(m access_log_lines_total) - l0))" || fail "part 4: the file after the full disk"
ok "room again: the next lines are whole and all there; written + lost = every session"

# 5. syslog (a socket of our own: the host has no syslog daemon): one datagram per line, the daemon
# facility at priority info; a syslog that goes away costs lines (counted), never a session
"$PY3" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "ab", 0) as f:
    while True:
        f.write(s.recv(65536) + b"\n")
' "$tmp/dev-log" "$tmp/syslog.out" &
slpid=$!
pids+=("$slpid")
for i in $(seq 50); do [ -S "$tmp/dev-log" ] && break; sleep 0.1; done
reload "syslog:$tmp/dev-log" 0
out=$(peer conc "$ETH_GW_IP" 8000 "$ETH_PEER_IP" 26000 10 "$tmp/f.json") || fail "part 5: sessions: $out"
N=11 wait_lines "$tmp/syslog.out" || fail "part 5: $(wc -l <"$tmp/syslog.out") syslog message(s), expected 11"
sleep 0.3
grep -vcE "^<30>[A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} ibgwd\[$GW_PID\]: \{" "$tmp/syslog.out" | grep -qx 0 ||
	fail "part 5: not every message is <30>TIMESTAMP ibgwd[$GW_PID]: {...}: $(head -2 "$tmp/syslog.out")"
sed 's/^[^{]*//' "$tmp/syslog.out" >"$tmp/syslog.json"
check ends "$tmp/f.json" relay "$ETH_PEER_IP" "$BACKEND" "$tmp/syslog.json" || fail "part 5: syslog lines"
ok "syslog: one message per session, daemon facility, priority info"
kill "$slpid"
wait "$slpid" 2>/dev/null
rm -f "$tmp/dev-log"
e0=$(m access_log_write_errors_total)
out=$(peer conc "$ETH_GW_IP" 8000 "$ETH_PEER_IP" 27000 5 "$tmp/g.json") || fail "part 5: sessions with syslog gone: $out"
for i in $(seq 100); do [ "$(m access_log_write_errors_total)" -ge $((e0 + 6)) ] && break; sleep 0.1; done
[ "$(m access_log_write_errors_total)" -ge $((e0 + 6)) ] || fail "part 5: lines lost to a missing syslog not counted"
ok "syslog gone: sessions pass, the lost lines are counted"

# /dev/stdout (a link, to this test's log file here; a pipe in a container): the daemon's own
# stdout, stderr and /dev/fd/N are the links that are followed, and the lines land there
reload /dev/stdout 0
out=$(peer conc "$ETH_GW_IP" 8000 "$ETH_PEER_IP" 28000 2 "$tmp/h.json") || fail "/dev/stdout: sessions: $out"
for i in $(seq 30); do grep -q '"route":"relay"' "$GW_LOG" && break; sleep 0.1; done
grep -q '"route":"relay"' "$GW_LOG" || fail "/dev/stdout: no access log line in ibgwd's stdout"
ok "access_log = /dev/stdout: accepted (a link under /dev), its lines in ibgwd's stdout"

gw_stop || fail "ibgwd exited with $?"
umount "$full" || fail "cannot unmount the tmpfs"
ok "clean shutdown"
