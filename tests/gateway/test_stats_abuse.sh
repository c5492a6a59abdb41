#!/usr/bin/env bash
# The stats endpoint against hostile clients (ASan build): 200 /metrics clients that reset mid-reply
# (the daemon must live on: a write to a reset socket raises SIGPIPE), a slowloris sending one byte
# every 3 s (cut at the request deadline), 100 idle connections (64 kept, the rest closed at once,
# counted; once they have been idle a while a new connection closes the oldest and is answered), 40
# /metrics at once (renders reused, every answer whole; a reload shows at once), 64 clients that ask
# and read nothing (the oldest gives way to a new one), a web page's GET (403), an oversized request
# head (431; also one still being sent, and a request pipelined behind /metrics: each reply whole,
# the connection not reset), a slow but steady reader kept while stalled ones are evicted, 500 POSTs refused in a loop (each answered 403, but logged at most once a second with
# the count of those not logged: every refusal accounted for, the log not flooded), a HEAD of a POST-only
# path (405 without a body). Also prints how long
# /metrics takes to render and send with 256 routes, the most a file may hold.
# timeout: 180
# concurrent: mostly waits (slow and idle HTTP clients, eviction timers), little CPU
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
tmp=$(mktemp -d)
# (a killed ibgwd leaves its EAL runtime directory behind)
trap 'pid=$GW_PID; gw_cleanup; [ -n "$pid" ] && rm -rf "/var/run/dpdk/ibgwd-$pid"; rm -rf "$tmp"' EXIT
port=$(gw_free_port)
abuse() { python3 tests/gateway/stats_abuse.py "$@"; }
health() { curl -s -o /dev/null -m 5 -w '%{http_code}' "http://127.0.0.1:$port/health"; }
dropped() { gw_metric "$port" 'ibgw_stats_connections_dropped_total{reason="'"$1"'"}'; }

{
	cat <<EOF
[gateway]
stats = 127.0.0.1:$port
[eth]
eal_args = --no-pci --no-huge -m 128
EOF
	# 256 routes, each max_sessions = 1 (default 256) so that they fit the default memory_limit:
	# a /metrics of ~0.5 MB, which a reset reaches mid-reply
	for i in $(seq 256); do printf '[route r%d]\nlisten = ib:%d\nconnect = echo\nmax_sessions = 1\n' "$i" $((20000 + i)); done
} >"$tmp/ibgw.conf"
gw_start "$tmp/ibgw.conf"
# this host has no RDMA device: the ib: routes cannot be served and /health says so with a 503
# ("degraded", tests/gateway/test_daemon.sh); what matters here is that it keeps answering the same
serving=$(gw_wait_serving "$port" 60)
ok "ibgwd serving with 256 routes (/health $serving)"

for i in 1 2 3 4 5; do
	curl -s -o /dev/null -w '%{time_starttransfer} %{time_total} %{size_download}\n' "http://127.0.0.1:$port/metrics"
	sleep 0.5 # (each a render of its own, not the last one reused)
done | sort -n >"$tmp/times"
read -r first total size <<<"$(sed -n 3p "$tmp/times")"
[ "${size:-0}" -gt 100000 ] || fail "/metrics only $size bytes with 256 routes"
ok "/metrics with 256 routes: $size bytes, median of 5: first byte after ${first}s, all after ${total}s (render on the control thread)"

# a write to a socket whose reset was already reported raises SIGPIPE: ignored, or a client could kill
# a daemon started from a shell (libevent stops at the first error, so the resets below rarely get
# there; the disposition is checked directly)
sigign=$(awk '/^SigIgn:/ { print $2 }' "/proc/$GW_PID/status")
(((0x$sigign >> 12) & 1)) || fail "SIGPIPE is not ignored (SigIgn $sigign)"
ok "SIGPIPE ignored"
out=$(abuse reset "$port" 200) || fail "reset client: $out"
kill -0 "$GW_PID" 2>/dev/null || fail "ibgwd died after /metrics clients reset mid-reply"
[ "$(health)" = "$serving" ] || fail "/health after the resets"
curl -sf "http://127.0.0.1:$port/metrics" | python3 tests/lib/prom_check.py --require ibgw_route_sessions_active ||
	fail "/metrics after the resets"
ok "200 /metrics clients reset mid-reply: ibgwd alive, /health and /metrics still served"

t0=$(dropped timeout)
out=$(abuse slowloris "$port" 3 60)
case $out in
"cut after "*) ;;
*) fail "slowloris: $out" ;;
esac
s=${out#cut after }
s=${s%% *}
awk -v s="$s" 'BEGIN { exit !(s >= 8 && s <= 30) }' || fail "slowloris: $out (the deadline is 10 s)"
[ "$(dropped timeout)" -gt "$t0" ] || fail "slowloris cut but not counted"
ok "slowloris (one byte every 3 s): $out, counted"

l0=$(dropped limit)
e0=$(dropped evicted)
abuse hold "$port" 100 4 >"$tmp/hold" &
hold=$!
for ((i = 0; i < 100; i++)); do [ -s "$tmp/hold" ] && break; sleep 0.1; done
read -r _ open _ closed <"$tmp/hold"
[ "$open" = 64 ] && [ "$closed" = 36 ] || fail "100 idle connections: $(cat "$tmp/hold"), expected 64 open, 36 closed"
# all 64 taken by connections idle for 2 s: a new one closes the oldest of them and is answered
[ "$(health)" = "$serving" ] || fail "a 65th connection got no answer while 64 idle ones were held (the oldest idle one not closed for it)"
# (a render is reused for ten times its duration: with 256 routes under ASan, a few hundred ms)
for i in $(seq 30); do [ "$(dropped evicted)" -gt "$e0" ] && break; sleep 0.1; done
[ "$(dropped evicted)" -gt "$e0" ] || fail "the closed idle connection not counted (evicted $e0 -> $(dropped evicted))"
wait "$hold"
for ((i = 0; i < 50; i++)); do [ "$(health)" = "$serving" ] && break; sleep 0.1; done
[ "$(health)" = "$serving" ] || fail "/health does not answer after the idle connections went"
l1=$(dropped limit)
[ "$((l1 - l0))" -ge 36 ] || fail "refusals not counted: $l0 -> $l1"
ok "100 idle connections: 64 held, the rest closed at once and counted ($l0 -> $l1); with all 64 idle for 2 s, /health closed the oldest (counted evicted) and was answered"

# 64 clients that ask for /metrics (~0.5 MB) and read nothing: their replies cannot leave, and such a
# connection was never evicted (every new one refused until the 10 s deadline: repeated every 10 s,
# /health kept out, a failover); now the oldest stalled one gives way
e0=$(dropped evicted)
abuse stall "$port" 64 4 >"$tmp/stall" &
hold=$!
for ((i = 0; i < 100; i++)); do [ -s "$tmp/stall" ] && break; sleep 0.1; done
read -r _ open _ closed <"$tmp/stall"
[ "$open" = 64 ] || fail "64 stalled readers: $(cat "$tmp/stall"), expected all 64 open"
[ "$(health)" = "$serving" ] || fail "a 65th connection got no answer while 64 stalled readers were held"
[ "$(dropped evicted)" -gt "$e0" ] || fail "the stalled reader closed for it not counted (evicted $e0 -> $(dropped evicted))"
wait "$hold"
ok "64 clients asked for /metrics and read nothing: /health closed the oldest of them (counted evicted) and was answered"

# a web page's own request for /metrics (Origin, or Sec-Fetch-Site other than none: a script of a page
# whose name was rebound to 127.0.0.1 would read routes and backends) gets 403; the address opened in
# the browser (Sec-Fetch-Site: none) and command-line clients get the metrics
for h in 'Sec-Fetch-Site: same-origin' 'Origin: http://rebound.example:'"$port"; do
	code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' -H "$h" "http://127.0.0.1:$port/metrics")
	[ "$code" = 403 ] || fail "GET /metrics with '$h': $code, expected 403"
done
[ "$(curl -s -o /dev/null -m 5 -w '%{http_code}' -H 'Sec-Fetch-Site: none' "http://127.0.0.1:$port/metrics")" = 200 ] &&
	[ "$(curl -s -o /dev/null -m 5 -w '%{http_code}' "http://127.0.0.1:$port/metrics")" = 200 ] ||
	fail "GET /metrics typed in a browser or from curl not answered 200"
grep -q "refused a read made by a web page (Origin, Sec-Fetch-Site, or a host name without it) from 127.0.0.1" "$GW_LOG" || fail "the refused read not logged"
ok "GET /metrics from a web page's script (Sec-Fetch-Site: same-origin, Origin) refused 403 and logged; typed in a browser (Sec-Fetch-Site: none) or from curl: 200"

# a browser too old for Sec-Fetch-Site sends no Origin with a page's own GET: after DNS rebinding
# its request names the page's host; one naming the address (or localhost) is the operator's, and
# so is a client that is no browser (Prometheus scrapes by a name)
old_ua='User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:60.0) Gecko/20100101 Firefox/60.0'
code() { curl -s -o /dev/null -m 5 -w '%{http_code}' "$@" "http://127.0.0.1:$port/metrics"; }
[ "$(code -H "$old_ua" -H "Host: rebound.example:$port")" = 403 ] || fail "an old browser's GET by a host name: $(code -H "$old_ua" -H "Host: rebound.example:$port")"
[ "$(code -H "$old_ua" -H "Host: rebound.example")" = 403 ] || fail "an old browser's GET by a host name without a port"
[ "$(code -H "$old_ua")" = 200 ] && [ "$(code -H "$old_ua" -H "Host: localhost:$port")" = 200 ] &&
	[ "$(code -H "$old_ua" -H "Host: localhost.:$port")" = 200 ] &&
	[ "$(code -H "$old_ua" -H "Host: [::1]:$port")" = 200 ] || fail "an old browser's GET by the address or localhost refused"
[ "$(code -H "$old_ua" -H 'Sec-Fetch-Site: none' -H "Host: gw1.example:$port")" = 200 ] ||
	fail "a new browser's GET typed by a host name refused"
[ "$(code -H 'User-Agent: Prometheus/2.45.0' -H "Host: gw1.example:$port")" = 200 ] || fail "a scrape by a host name refused"
code=$(curl -s -o /dev/null -m 5 -w '%{http_code}' -X POST -H "$old_ua" -H "Host: rebound.example:$port" "http://127.0.0.1:$port/backends/r1/b?state=ready")
[ "$code" = 403 ] || fail "an old browser's POST by a host name: $code"
ok "an old browser (no Sec-Fetch-Site) naming the endpoint by a host name (DNS rebinding) refused 403, GET and POST; by the address, localhost, with Sec-Fetch-Site: none, or not a browser: 200"

# /metrics asked for in a loop: a render is reused for ten times its own duration, every answer whole
r0=$(gw_metric "$port" 'ibgw_stats_renders_total{format="prometheus",result="rendered"}')
u0=$(gw_metric "$port" 'ibgw_stats_renders_total{format="prometheus",result="reused"}')
cp=()
for i in $(seq 40); do
	curl -s "http://127.0.0.1:$port/metrics" >"$tmp/m.$i" &
	cp+=($!)
done
wait "${cp[@]}" # (not a bare wait: ibgwd is a child too)
for i in 1 20 40; do
	python3 tests/lib/prom_check.py --require ibgw_route_sessions_active <"$tmp/m.$i" >/dev/null ||
		fail "/metrics answer $i of 40 at once is not whole"
done
# (read once the reuse window is over: a reused answer shows the counters as they were)
sleep 1
r1=$(gw_metric "$port" 'ibgw_stats_renders_total{format="prometheus",result="rendered"}')
u1=$(gw_metric "$port" 'ibgw_stats_renders_total{format="prometheus",result="reused"}')
[ "$((u1 - u0))" -ge 20 ] && [ "$((r1 - r0))" -le 20 ] || fail "40 /metrics at once: rendered $((r1 - r0)), reused $((u1 - u0))"
# a reload is seen by the very next request, reuse or not
kill -HUP "$GW_PID"
for i in $(seq 100); do grep -q "reload done" "$GW_LOG" && break; sleep 0.1; done
[ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="ok"}')" = 1 ] || fail "the reload not in the next /metrics"
ok "40 /metrics at once: $((r1 - r0)) rendered, $((u1 - u0)) reused, all valid; a reload shows in the next one"

code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 9000 /dev/zero | tr '\0' a)" "http://127.0.0.1:$port/health")
[ "$code" = 431 ] || fail "a 9 KB header: $code, expected 431"
[ "$(health)" = "$serving" ] || fail "/health after the oversized request"
ok "an oversized request head is answered 431"

# a reply leaves whole whatever the client still sends: the daemon closed with unread bytes in the
# socket, which resets the connection and throws away what the kernel had not sent of the reply
out=$(abuse pipelined "$port")
case $out in complete*) ;; *) fail "/metrics with a second request behind it: $out" ;; esac
ok "/metrics with a pipelined request behind it, read through a small window: $out bytes, whole"
out=$(abuse bighead "$port" 256)
case $out in "HTTP/1.1 431 "*) ;; *) fail "a 256 KiB head still being sent: '$out', expected the 431" ;; esac
ok "a 256 KiB request head, still being sent when the answer came: the client read '$out'"
# the oldest connection gives way to a new one when it stalls, not when it reads slowly
e0=$(dropped evicted)
out=$(abuse slowread "$port" 63)
case $out in "slow complete "*"; health HTTP/1.1 $serving "*) ;; *) fail "a slow reader among 63 stalled ones, then /health: $out" ;; esac
[ "$(dropped evicted)" -gt "$e0" ] || fail "no stalled reader evicted for /health: $out (evicted $e0 -> $(dropped evicted))"
ok "a reader taking /metrics 4 KiB every 10 ms kept its connection while 63 others stalled; /health evicted a stalled one: $out"

# a POST refused in a loop (a browser's, from loopback): 403 each time, but logged at most once a
# second, or a client could flood the log (and use up journald's rate limit, which then drops every
# later line of the daemon). Every refusal is accounted for: the lines written plus the "N more not
# logged" they report add up to the POSTs, once a last one after a second reports the rest.
refused='refused a backend state change sent by a browser'
n0=$(grep -c "$refused" "$GW_LOG")
t0=$(date +%s)
# (curl's URL glob: 500 POSTs, one connection each)
curl -s -o /dev/null -w '%{http_code}\n' -m 30 -X POST -H 'Origin: http://attacker.example' \
	"http://127.0.0.1:$port/backends/r1/b[1-500]?state=ready" >"$tmp/refused"
dt=$(($(date +%s) - t0))
[ "$(grep -c '^403$' "$tmp/refused")" = 500 ] || fail "500 POSTs from a browser: $(sort "$tmp/refused" | uniq -c | tr -s '\n ' ' '), want 500 x 403"
n1=$(grep -c "$refused" "$GW_LOG")
[ $((n1 - n0)) -le $((dt + 2)) ] || fail "500 refused POSTs in ${dt}s wrote $((n1 - n0)) log lines (at most one a second)"
sleep 1.2
code=$(curl -s -o /dev/null -w '%{http_code}' -m 5 -X POST -H 'Origin: http://attacker.example' "http://127.0.0.1:$port/backends/r1/b?state=ready")
[ "$code" = 403 ] || fail "a browser's POST a second later got $code, want 403"
# (the control thread writes its lines before it answers)
tail -n +$((n0 + 1)) <(grep "$refused" "$GW_LOG") >"$tmp/refused.log"
grep -q "from 127.0.0.1 port [0-9]* (" "$tmp/refused.log" || fail "a refusal line does not name the client: $(tail -1 "$tmp/refused.log")"
sum=$(sed -n 's/.*(\([0-9]*\) more not logged)$/\1/p' "$tmp/refused.log" | awk '{ s += $1 + 1 } END { print s + 0 }')
[ "$sum" = 501 ] || fail "501 refused POSTs: $(wc -l <"$tmp/refused.log") lines reporting $sum refusals in all"
ok "500 POSTs refused in a loop (${dt}s) and one more a second later: all 403, $(wc -l <"$tmp/refused.log") log lines that account for all 501"

# HEAD gets no body, whatever its answer (a body after a HEAD's headers is read by a keep-alive client
# as the start of its next response): /backends answers 405 without one (it had one)
out=$(abuse head "$port" /backends/r1/b)
[[ "$out" =~ ^HTTP/1\.[01]\ 405\ .*\ 0$ ]] || fail "HEAD /backends/...: '$out', want a 405 and no body"
ok "HEAD /backends/...: 405 without a body"

gw_stop TERM 20
rc=$?
[ "$rc" = 0 ] || fail "ibgwd exit status $rc after SIGTERM"
grep -E 'AddressSanitizer|LeakSanitizer|runtime error' "$GW_LOG" && fail "sanitizer report"
ok "clean exit, no sanitizer report"
