#!/usr/bin/env bash
# ibgwd as a daemon on a real DPDK port: af_packet on a veth whose peer lives in a network namespace.
# Checks SIGHUP and SIGUSR1 during start-up (handled once serving, not the daemon's end), the stats
# endpoint (/metrics valid Prometheus text, /stats JSON, /health, 404, 405), that /health 200 means the
# routes listen and a route that cannot be served (no RDMA device) makes it 503 naming it, that the
# worker polls the port (packets sent from the namespace are counted), SIGHUP with a broken file keeps
# the running config and counts a failed reload, a good reload applies, SIGTERM drains and exits 0,
# and nothing is left behind (namespace, veth, process, DPDK runtime dir); SIGTERM during start-up and
# SIGHUP/SIGUSR1 during a stop end it cleanly too.
# timeout: 180
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh

ns=ibgwt$$ gw_if=ibgwg$$ ns_if=ibgwn$$
tmp=$(mktemp -d)
cleanup() {
	gw_cleanup
	gw_veth_del "$ns" "$gw_if"
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

gw_veth "$ns" "$gw_if" "$ns_if" 198.18.7.2/24

port=$(gw_free_port)
conf=$tmp/ibgw.conf
write_conf() { # $1: extra route
	cat >"$conf" <<CONF
[gateway]
stats = 127.0.0.1:$port
drain_timeout = 3s
[eth]
vdev = net_af_packet0,iface=$gw_if,qdisc_bypass=1
eal_args = --no-pci --no-huge -m 256
address = 198.18.7.1/24
mbufs = 4095
[route diag]
listen = tcp:7000
connect = echo
$1
CONF
}
write_conf ""
"$IBGWD" -t -c "$conf" >/dev/null || fail "test config rejected"

gw_start "$conf"
# SIGHUP and SIGUSR1 while the daemon starts (systemctl reload or logrotate right after a start): held
# until the handlers are in place, then handled (a reload of the same file); never the daemon's end
sleep 0.3
early="during its start-up"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] &&
	early="0.3 s after its start (it served already: start-up itself not tested this run)"
kill -HUP "$GW_PID" && kill -USR1 "$GW_PID" || fail "ibgwd gone 0.3 s after its start"
gw_wait_ready "$port"
for i in $(seq 50); do [ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="ok"}')" = 1 ] && break; sleep 0.1; done
[ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="ok"}')" = 1 ] || fail "the SIGHUP sent during start-up was not handled"
ok "ibgwd serving, /health 200; SIGHUP and SIGUSR1 sent $early were handled once it served"
# /health 200 means the routes listen: the echo route answers at once
gw_echo_check "$ns" 198.18.7.1 7000 100000 10 || fail "/health 200 but the echo route tcp:7000 does not serve"
[ "$(gw_metric "$port" 'ibgw_route_ready{route="diag"}')" = 1 ] || fail "ibgw_route_ready of diag not 1"
ok "/health 200: route diag listens (100 KB echoed intact), ibgw_route_ready 1"

# as root without [gateway] user the capabilities stay, but the seccomp filter is on in every thread
# (what they were for at start-up is done): no_new_privs and Seccomp 2 everywhere
bad=$(for st in /proc/$GW_PID/task/*/status; do
	awk '/^NoNewPrivs:/ { n = $2 } /^Seccomp:/ { s = $2 } END { if (n != 1 || s != 2) print FILENAME, n, s }' "$st"
done)
[ -z "$bad" ] || fail "threads without no_new_privs or the seccomp filter: $bad"
grep -q "privileges: running as uid 0 with the capabilities it was started with .*; seccomp refuses" "$GW_LOG" ||
	fail "the privileges line does not say the filter is on: $(grep 'privileges:' "$GW_LOG")"
ok "as root without user: every thread has no_new_privs and the seccomp filter"

curl -sf "http://127.0.0.1:$port/metrics" >"$tmp/m1" || fail "GET /metrics"
python3 tests/lib/prom_check.py --require ibgw_build_info ibgw_uptime_seconds ibgw_config_reloads_total \
	ibgw_worker_loop_iterations_total ibgw_port_rx_packets_total ibgw_port_rx_nombuf_total \
	ibgw_port_rx_missed_total <"$tmp/m1" || fail "/metrics is not valid Prometheus text"
ok "/metrics is valid Prometheus text"
ctype=$(curl -s -o /dev/null -w '%{content_type}' "http://127.0.0.1:$port/metrics")
[[ $ctype == "text/plain; version=0.0.4"* ]] || fail "content type $ctype"
curl -sf "http://127.0.0.1:$port/stats" | jq -e '.ibgw_build_info[0].value == 1 and (.ibgw_worker_loop_iterations_total | length) == 1' >/dev/null ||
	fail "/stats is not the expected JSON"
ok "/stats parses as JSON"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/metrics")" = 405 ] || fail "POST not 405"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/nope")" = 404 ] || fail "unknown path not 404"
ok "POST 405, unknown path 404"

# the worker polls the port: frames sent into the veth are received and counted
before=$(gw_metric "$port" 'ibgw_port_rx_packets_total{port="0"}')
ip netns exec "$ns" ping -c 5 -i 0.2 -W 1 198.18.7.1 >/dev/null 2>&1
after=$(gw_metric "$port" 'ibgw_port_rx_packets_total{port="0"}')
[ "${after%.*}" -gt "${before%.*}" ] || fail "port counters did not move ($before -> $after)"
loops=$(gw_metric "$port" 'ibgw_worker_loop_iterations_total{worker="0"}')
[ "${loops%.*}" -gt 0 ] || fail "worker loop not running"
ok "port polled by the worker: rx packets $before -> $after"

# a broken file on SIGHUP: errors logged with FILE:LINE, config kept, failure counted, still serving
cp "$conf" "$tmp/good.conf"
printf '[gateway]\nworkers = many\n[route x]\nlisten = ib:7000\n' >"$conf"
kill -HUP "$GW_PID"
for i in $(seq 50); do [ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="failed"}')" = 1 ] && break; sleep 0.1; done
[ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="failed"}')" = 1 ] || fail "failed reload not counted"
grep -q "$conf:2: workers: expected a number" "$GW_LOG" || fail "reload error without FILE:LINE"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] || fail "not serving after bad reload"
[ "$(gw_metric "$port" ibgw_routes)" = 1 ] || fail "running config changed by a broken file"
ok "broken reload rejected with FILE:LINE, still serving the old config"
# a valid file whose routes need more buffers than the arenas sized at start (memory_limit 1G, the
# default; 4096 + diag's 256 echo sessions of 512 KiB: 2176 MiB): refused, naming the line of the
# memory_limit it raised
write_conf "[route big]
listen = tcp:7003
connect = echo
max_sessions = 4096"
sed -i '/^\[gateway\]/a memory_limit = 4G' "$conf"
"$IBGWD" -t -c "$conf" >/dev/null || fail "the 4G file is not valid on its own"
kill -HUP "$GW_PID"
for i in $(seq 50); do [ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="failed"}')" = 2 ] && break; sleep 0.1; done
[ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="failed"}')" = 2 ] || fail "a reload needing more memory than at start not refused"
grep -qF "$conf:$(grep -n '^memory_limit' "$conf" | cut -d: -f1): routes need up to 2176 MiB of buffers, above the 1024 MiB of memory_limit" "$GW_LOG" ||
	fail "the memory refusal without FILE:LINE: $(grep 'routes need' "$GW_LOG")"
[ "$(gw_metric "$port" ibgw_routes)" = 1 ] || fail "running config changed by a refused reload"
ok "a reload needing more buffers than memory_limit gave at start: refused at memory_limit's FILE:LINE, nothing changed"

# a good file with one more route applies
reload_ok() { # SIGHUP, and wait until one more good reload is counted
	local n=$(($(gw_metric "$port" 'ibgw_config_reloads_total{result="ok"}') + 1))
	kill -HUP "$GW_PID"
	for i in $(seq 50); do [ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="ok"}')" = "$n" ] && break; sleep 0.1; done
	[ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="ok"}')" = "$n" ] || fail "good reload $n not counted"
}
write_conf "[route diag2]
listen = tcp:7001
connect = discard"
reload_ok
[ "$(gw_metric "$port" ibgw_routes)" = 2 ] || fail "new route not applied"
grep -q "route diag2 added" "$GW_LOG" || fail "route addition not logged"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] || fail "/health not 200 after a reload adding a tcp route"
for i in $(seq 30); do [ "$(gw_metric "$port" 'ibgw_route_ready{route="diag2"}')" = 1 ] && break; sleep 0.1; done
[ "$(gw_metric "$port" 'ibgw_route_ready{route="diag2"}')" = 1 ] || fail "route diag2 not ready after the reload"
ok "good reload applied: 2 routes, /health 200 throughout, diag2 ready"

# a route that cannot be served makes /health 503, saying which and why, so that keepalived or the
# BGP health watch withdraws the gateway; /health answers 200 again once the route is gone. This host
# has no RDMA device, so an ib: route stays closed (where one exists, the route listens: skipped)
if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
	write_conf "[route diag2]
listen = tcp:7001
connect = discard
[route toib]
listen = ib:7002
connect = echo"
	reload_ok
	curl -s "http://127.0.0.1:$port/health" >"$tmp/h"
	code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")
	[ "$code" = 503 ] && [ "$(head -n 1 "$tmp/h")" = degraded ] &&
		grep -qx "route toib: cannot be served: no RDMA device" "$tmp/h" && [ "$(wc -l <"$tmp/h")" = 2 ] ||
		fail "/health with an ib: route and no RDMA device: $code $(cat "$tmp/h")"
	[ "$(gw_metric "$port" 'ibgw_route_ready{route="toib"}')" = 0 ] &&
		[ "$(gw_metric "$port" 'ibgw_route_ready{route="diag"}')" = 1 ] || fail "ibgw_route_ready: toib not 0 or diag not 1"
	gw_echo_check "$ns" 198.18.7.1 7000 100000 10 || fail "the echo route stopped serving beside the degraded one"
	ok "a route that cannot be served (ib:, no RDMA device): /health 503 'route toib: cannot be served: no RDMA device', ibgw_route_ready 0; the other routes serve"
	write_conf "[route diag2]
listen = tcp:7001
connect = discard"
	reload_ok
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] || fail "/health not 200 once the ib: route was removed"
	ok "the route removed: /health 200 again"
fi

# a restart-only key the file changed stays pending through later reloads of that file (user and
# group were put back to the running values only where they differed: the next reload compared the
# file with itself and said nothing waited)
cp "$conf" "$tmp/before-user.conf"
sed -i '/^\[gateway\]/a user = nobody' "$conf"
reload_ok
[ "$(gw_metric "$port" ibgw_config_restart_pending)" = 1 ] || fail "user changed: restart_pending not 1"
reload_ok
[ "$(gw_metric "$port" ibgw_config_restart_pending)" = 1 ] || fail "user changed, the same file reloaded again: restart_pending $(gw_metric "$port" ibgw_config_restart_pending)"
cp "$tmp/before-user.conf" "$conf"
reload_ok
[ "$(gw_metric "$port" ibgw_config_restart_pending)" = 0 ] || fail "user back as it runs: restart_pending not 0"
ok "[gateway] user changed: a restart pending through a second reload of the file, none once it is back"

# a file with 256 tcp: routes, the most there may be, that moves one to another port: the new port
# opens once the old one closed (every listener slot was taken, and it stayed closed: /health 503)
write_many() { # $1: route m0's port
	{
		sed -n '1,/^\[route diag\]/p' "$tmp/before-many.conf" | sed '$d'
		for k in $(seq 0 255); do
			printf '[route m%d]\nlisten = tcp:%d\nconnect = echo\nmax_sessions = 1\n' "$k" $((k ? 21000 + k : $1))
		done
	} >"$tmp/many.conf"
	cp "$tmp/many.conf" "$conf"
}
cp "$conf" "$tmp/before-many.conf"
write_many 21000
reload_ok
for i in $(seq 30); do [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] && break; sleep 0.1; done
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] || fail "256 routes: /health $(curl -s "http://127.0.0.1:$port/health" | head -3)"
write_many 31000
reload_ok
for i in $(seq 30); do [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] && break; sleep 0.1; done
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] ||
	fail "256 routes, one moved to another port: /health $(curl -s "http://127.0.0.1:$port/health" | head -3)"
gw_echo_check "$ns" 198.18.7.1 31000 10000 10 || fail "route m0 moved to tcp:31000 does not serve"
ok "256 routes, one moved to another port by a reload (every listener slot taken): it listens there and serves, /health 200"
cp "$tmp/before-many.conf" "$conf"
reload_ok

# SIGTERM: drain, exit 0, no DPDK runtime dir left
pid=$GW_PID
gw_stop TERM 20
rc=$?
[ $rc = 0 ] || fail "ibgwd exited $rc on SIGTERM"
grep -q "draining" "$GW_LOG" || fail "no drain on SIGTERM"
[ ! -e "/var/run/dpdk/ibgwd-$pid" ] || fail "DPDK runtime dir left behind"
grep -q "ERROR: AddressSanitizer\|runtime error:" "$GW_LOG" && fail "sanitizer report"
ok "SIGTERM drained and exited 0"

# -v (debug logging) outlasts a reload: the reload applied the file's log_level (the default, info), and
# the debug lines (a session's end other than a clean one: here a client's reset) stopped
gw_start "$conf" -v
gw_wait_ready "$port"
mark=$(wc -l <"$GW_LOG")
reload_ok
ip netns exec "$ns" python3 -c 'import socket, struct
s = socket.create_connection(("198.18.7.1", 7000), timeout=5)
s.sendall(b"x")
assert s.recv(1) == b"x"
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()' || fail "-v: route diag does not echo"
for i in $(seq 30); do
	tail -n +"$mark" "$GW_LOG" | sed -n '/reload done/,$p' | grep -q "route diag: session [0-9]* ended" && break
	sleep 0.1
done
tail -n +"$mark" "$GW_LOG" | sed -n '/reload done/,$p' | grep -q "route diag: session [0-9]* ended" ||
	fail "started with -v: no debug line after a reload"
gw_stop TERM 30 || fail "-v: ibgwd did not stop cleanly"
ok "-v: debug lines go on after a reload"

# SIGTERM during start-up (systemctl stop right after a start): held until the handlers are in place,
# then a drain and exit 0, the runtime dir removed (the default action left it behind)
gw_start "$conf"
pid=$GW_PID
sleep 0.1
when="during its start-up"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] &&
	when="0.1 s after its start (it served already: start-up itself not tested this run)"
gw_stop TERM 30
rc=$?
[ $rc = 0 ] || fail "SIGTERM $when: ibgwd exited $rc"
[ ! -e "/var/run/dpdk/ibgwd-$pid" ] || fail "SIGTERM $when: DPDK runtime dir left behind"
ok "SIGTERM $when: exit 0, nothing left behind"

# SIGHUP and SIGUSR1 every 10 ms while ibgwd stops (a reload or logrotate during a stop): never its
# end (once the handlers are freed their default action would end it mid-teardown)
gw_start "$conf"
gw_wait_ready "$port"
pid=$GW_PID
(while kill -HUP "$pid" 2>/dev/null && kill -USR1 "$pid" 2>/dev/null; do sleep 0.01; done) &
spam=$!
sleep 0.2
gw_stop TERM 30
rc=$?
kill "$spam" 2>/dev/null
wait "$spam" 2>/dev/null
[ $rc = 0 ] || fail "SIGHUP/SIGUSR1 during the stop: ibgwd exited $rc"
[ ! -e "/var/run/dpdk/ibgwd-$pid" ] || fail "SIGHUP/SIGUSR1 during the stop: DPDK runtime dir left behind"
grep -q "ERROR: AddressSanitizer\|runtime error:" "$GW_LOG" && fail "sanitizer report"
ok "SIGHUP and SIGUSR1 every 10 ms during a stop: exit 0, nothing left behind"
echo "all daemon checks passed"
