#!/usr/bin/env bash
# Backend pools on tcp: routes (tcp listener -> pool of three kernel TCP backends in a namespace,
# through the DPDK port on af_packet): round robin spreads 100 sessions evenly, weights are respected,
# leastconn follows held sessions, source hashing is stable per client, spreads clients and moves only
# the clients of a backend that leaves; drain through POST /backends/... lets a held session finish
# while new ones go elsewhere, the log naming the client that asked (and a POST from a non-management
# source, or from a browser, gets 403; 500 of them in a loop write a line a second at most);
# a reload that changes a pool keeps the sessions and counters of the backends it keeps; a backend
# killed mid-run is marked down within fall x check_interval + check_timeout by the health checks, its
# session ends (not hangs), new sessions go to the others with every byte verified (sha256), a route
# without checks retries a refused connect on another backend; the backend comes back up after rise
# checks; an IPv6 backend is named [v6]:port in /metrics, /stats and a POST; connect_timeout bounds
# all tries (a silent backend takes its share, the live one after it is reached in time); the access
# log names the backend that refused, not the route's first; a reload that turns checks off while one
# is out ignores its verdict; a reload that shortens check_interval applies it to the next check.
# Each backend logs the sessions it carried: the test checks the clients' view against theirs.
# timeout: 240
# concurrent: mostly waits (health checks, ejection timers), little CPU
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
# the management-side veth (the 403 check) goes explicitly: a namespace whose sockets linger in
# TIME_WAIT outlives `ip netns del`, and so would its veth with 198.18.7.1 on this side
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; ip link del "ibm$$b" 2>/dev/null; eth_cleanup; rm -rf "$tmp"' EXIT
m() { gw_metric "$ETH_STATS" "ibgw_$1"; }
peer() { eth_ns "$PY3" tests/gateway/pool_peer.py "$@"; }
post() { curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$ETH_STATS/backends/$1"; }

eth_setup
IP=$ETH_PEER_IP
B=("" "$IP:7001" "$IP:7002" "$IP:7003")
SRCS=
for i in $(seq 10 41); do
	eth_ns ip addr add "198.18.0.$i/24" dev "$ETH_PEER"
	SRCS=${SRCS:+$SRCS,}198.18.0.$i
done
start_backend() { # N: backend N on port 700N, logging to $tmp/bN.log; its PID in BPID[N]
	eth_bg "$PY3" tests/gateway/pool_peer.py server "$1" "$IP" "700$1" "$tmp/b$1.log"
	BPID[$1]=$ETH_BG_PID
	eth_wait_listen "700$1"
}
BPID=()
for n in 1 2 3; do start_backend $n; done

POOL="tcp:$IP:7001, tcp:$IP:7002, tcp:$IP:7003"
routes() { # $1: the rr route's pool, $2 wrr's extra, $3 hc's check_interval line ([eth] address6
	# first: the v6 route's IPv6 backend needs it)
	cat <<EOF
address6 = 2001:db8:7::1/64

[route rr]
listen = tcp:8001
connect = $1

# a pool may go on over several connect lines (one line holds about 8 IPv4 backends): the second
# line's backend is the pool's third, its weights and a reload's state= hold the same
[route wrr]
listen = tcp:8002
connect = tcp:$IP:7001 weight=2, tcp:$IP:7002
connect = tcp:$IP:7003 ${2:-}

[route lc]
listen = tcp:8003
connect = $POOL
balance = leastconn

[route src]
listen = tcp:8004
connect = $POOL
balance = source

# health checks are off by default (check_interval = 0): this route turns them on, at a pace a
# test can wait for; check_expect checks the backends' greeting
[route hc]
listen = tcp:8005
connect = $POOL
${3:-check_interval = 500ms}
check_timeout = 400ms
rise = 2
fall = 2
check_expect = backend-

# no checks: a refused connect is retried on another backend
[route rt]
listen = tcp:8006
connect = $POOL

# a backend that never answers (198.18.0.99: no such host) before a live one: each try gets its
# share of connect_timeout, so the live one is reached within it
[route to]
listen = tcp:8008
connect = tcp:198.18.0.99:7001, tcp:$IP:7001
connect_timeout = 2s
max_sessions = 16

# the usable backend refuses (nothing listens on 7009): the access log names it, not the first
# configured one (in maint, never tried)
[route rf]
listen = tcp:8009
connect = tcp:$IP:7001 state=maint, tcp:$IP:7009
max_sessions = 16

# a backend that accepts and resets at once (7010) beside a good one, leastconn (the worst case: its
# sessions end at once, so it looks least loaded), eject_after and eject_time at their defaults
[route ej]
listen = tcp:8010
connect = tcp:$IP:7010, tcp:$IP:7001
balance = leastconn
max_sessions = 16

# the same resetting backend as the only usable one: never ejected (that would refuse every session)
[route ej1]
listen = tcp:8011
connect = tcp:$IP:7010, tcp:$IP:7001 state=maint
max_sessions = 16

# a backend that answers and resets at once (7011): it sent bytes, which is not an early reset, even
# when its reply and its RST arrive together and the reset throws the reply away unread
[route ej2]
listen = tcp:8012
connect = tcp:$IP:7011, tcp:$IP:7001
balance = leastconn
max_sessions = 16

# a backend that closes a connection its client left idle (7012, as web servers do after their
# header timeout): the client's next bytes meet its reset, which follows its own end of stream, so
# it is no early reset, whoever sends them
[route ej3]
listen = tcp:8013
connect = tcp:$IP:7012, tcp:$IP:7001
balance = leastconn
max_sessions = 16

# the same resetting backend met by one client alone (a client can make a healthy server reset:
# bytes it rejects by closing with unread data): its resets count, but from one client they eject
# nothing (GW_RUN_SOURCES: three clients must meet them)
[route ej4]
listen = tcp:8014
connect = tcp:$IP:7010, tcp:$IP:7001
balance = leastconn
max_sessions = 16

[route v6]
listen = tcp:8007
connect = tcp:[2001:db8:7::12]:80 state=maint, tcp:$IP:7001
EOF
}
eth_conf "$tmp/ibgw.conf" "$(routes "$POOL")"
# the stats endpoint on every address (reading is harmless), so that a client that is neither
# loopback nor the management address can try a POST (and be refused)
sed -i -e "s/^stats = 127.0.0.1:/stats = 0.0.0.0:/" -e "/^\[gateway\]/a access_log = $tmp/access.log" "$tmp/ibgw.conf"
gw_start "$tmp/ibgw.conf"
gw_wait_ready "$ETH_STATS" 30

# tally FILE WHAT: c1 c2 c3 = the sessions of FILE ("ok ID" lines) each backend served; fails on any
# failed session
tally() {
	grep -v '^ok ' "$1" && fail "$2: sessions failed (above)"
	c1=$(grep -c '^ok 1$' "$1")
	c2=$(grep -c '^ok 2$' "$1")
	c3=$(grep -c '^ok 3$' "$1")
	c=("" "$c1" "$c2" "$c3")
}
# hold NAME PORT: one session held half-way (pool_peer.py hold) until release NAME; its backend is
# printed by held NAME
hold() {
	mkfifo "$tmp/f_$1"
	# (not through peer: $! must be python's own PID, for the EXIT trap)
	ip netns exec "$ETH_NS" "$PY3" tests/gateway/pool_peer.py hold "$ETH_GW_IP" "$2" 200000 "$tmp/f_$1" >"$tmp/$1.out" &
	pids+=($!)
	HOLD_PID[$1]=$!
	for i in $(seq 100); do grep -q held "$tmp/$1.out" && return 0; sleep 0.1; done
	fail "session $1 not held: $(cat "$tmp/$1.out")"
}
declare -A HOLD_PID
held() { awk '/held/ {print $2}' "$tmp/$1.out"; }
release() { echo x >"$tmp/f_$1"; wait "${HOLD_PID[$1]}"; }
logged() { cat "$tmp/b$1.log" 2>/dev/null | wc -l; }
snap() { L1=$(logged 1); L2=$(logged 2); L3=$(logged 3); }
# the backends' own logs grew by the clients' counts C1 C2 C3 since snap (sessions are logged when
# they end, which may follow the client's end by a moment)
check_logged() {
	local i
	for i in $(seq 50); do
		[ $(($(logged 1) - L1)) = "$1" ] && [ $(($(logged 2) - L2)) = "$2" ] && [ $(($(logged 3) - L3)) = "$3" ] && return 0
		sleep 0.1
	done
	fail "backends logged $(($(logged 1) - L1)) $(($(logged 2) - L2)) $(($(logged 3) - L3)) sessions, clients saw $1 $2 $3"
}

# ---- round robin, weights ----
snap
peer run "$ETH_GW_IP" 8001 100 20000 >"$tmp/rr.out"
tally "$tmp/rr.out" "roundrobin"
echo "roundrobin: 100 sessions -> $c1 $c2 $c3"
for c in $c1 $c2 $c3; do [ "$c" -ge 33 ] && [ "$c" -le 34 ] || fail "roundrobin uneven: $c1 $c2 $c3"; done
check_logged "$c1" "$c2" "$c3"
ok "roundrobin: 100 sessions spread $c1/$c2/$c3 over three backends, each verified, as the backends counted"
snap
peer run "$ETH_GW_IP" 8002 100 20000 >"$tmp/wrr.out"
tally "$tmp/wrr.out" "weighted roundrobin"
echo "weights 2:1:1: 100 sessions -> $c1 $c2 $c3"
[ "$c1" = 50 ] && [ "$c2" = 25 ] && [ "$c3" = 25 ] || fail "weights 2:1:1 not respected: $c1 $c2 $c3"
check_logged "$c1" "$c2" "$c3"
ok "weights 2:1:1 give 50/25/25"

# ---- leastconn follows held sessions ----
hold l1 8003
hold l2 8003
h1=$(held l1)
h2=$(held l2)
[ "$h1" != "$h2" ] || fail "leastconn: two held sessions on backends $h1 and $h2 (want two different)"
free=$((6 - h1 - h2))
peer run "$ETH_GW_IP" 8003 10 20000 >"$tmp/lc.out"
tally "$tmp/lc.out" "leastconn"
[ "${c[$free]}" = 10 ] || fail "leastconn: with sessions held on $h1 and $h2, 10 new ones went $c1/$c2/$c3"
release l1
release l2
grep -q "^ok $h1$" "$tmp/l1.out" && grep -q "^ok $h2$" "$tmp/l2.out" || fail "leastconn: held sessions: $(cat "$tmp/l1.out" "$tmp/l2.out")"
ok "leastconn: sessions held on backends $h1 and $h2, the 10 new ones all went to backend $free; the held ones then finished intact"

# ---- source hashing ----
peer run "$ETH_GW_IP" 8004 64 2000 --src "$SRCS" >"$tmp/src1.out"
tally "$tmp/src1.out" "source"
# session i came from source i % 32: sessions i and i+32 must have gone to the same backend
paste <(head -32 "$tmp/src1.out") <(tail -32 "$tmp/src1.out") | awk '$2 != $4 {bad++} END {exit bad > 0}' ||
	fail "source: a client's sessions went to different backends"
[ "$c1" -gt 0 ] && [ "$c2" -gt 0 ] && [ "$c3" -gt 0 ] || fail "source: 32 clients all on too few backends: $c1 $c2 $c3"
ok "source: each of 32 clients kept its backend over two sessions; they spread $((c1 / 2))/$((c2 / 2))/$((c3 / 2))"

# ---- drain through the management call; refused from elsewhere ----
[ "$(post "src/${B[2]}?state=drain")" = 200 ] || fail "POST drain of backend 2 of route src"
peer run "$ETH_GW_IP" 8004 32 2000 --src "$SRCS" >"$tmp/src2.out"
tally "$tmp/src2.out" "source, backend 2 drained"
paste <(head -32 "$tmp/src1.out") "$tmp/src2.out" | awk '
	$2 == 2 && $4 == 2 { print "client " NR " still on the drained backend"; bad++ }
	$2 != 2 && $2 != $4 { print "client " NR " moved from " $2 " to " $4 " though its backend stayed"; bad++ }
	END { exit bad > 0 }' || fail "source: draining one backend moved more than its own clients"
[ "$(post "src/${B[2]}?state=ready")" = 200 ] || fail "POST ready"
peer run "$ETH_GW_IP" 8004 32 2000 --src "$SRCS" >"$tmp/src3.out"
diff <(head -32 "$tmp/src1.out") "$tmp/src3.out" >/dev/null || fail "source: the mapping did not come back once backend 2 was ready"
ok "source: with backend 2 drained only its clients moved; ready again, every client is back where it was"

hold d1 8001
hd=$(held d1)
[ "$(post "rr/${B[$hd]}?state=drain")" = 200 ] || fail "POST drain"
grep -q "route rr: backend ${B[$hd]} set to drain (was [a-z]*) by 127\.0\.0\.1 port [0-9][0-9]*$" "$GW_LOG" ||
	fail "drain: the log line of the change does not name the client (address and port)"
[ "$(m "backend_state{route=\"rr\",backend=\"${B[$hd]}\",state=\"drain\"}")" = 1 ] || fail "drain: state metric"
[ "$(m "backend_sessions_active{route=\"rr\",backend=\"${B[$hd]}\"}")" = 1 ] || fail "drain: the held session is not counted on its backend"
peer run "$ETH_GW_IP" 8001 20 20000 >"$tmp/dr.out"
tally "$tmp/dr.out" "drain"
[ "${c[$hd]}" = 0 ] && [ $((c1 + c2 + c3)) = 20 ] || fail "drain: new sessions went $c1/$c2/$c3 with backend $hd drained"
release d1
grep -q "^ok $hd$" "$tmp/d1.out" || fail "drain: the held session did not finish intact: $(cat "$tmp/d1.out")"
eth_ns ip link add "ibm$$" type veth peer name "ibm$$b"
eth_ns ip link set "ibm$$b" netns 1
ip addr add 198.18.7.1/24 dev "ibm$$b" && ip link set "ibm$$b" up
eth_ns ip addr add 198.18.7.2/24 dev "ibm$$" && eth_ns ip link set "ibm$$" up
code=$(eth_ns curl -s -o /dev/null -w '%{http_code}' -m 5 -X POST "http://198.18.7.1:$ETH_STATS/backends/rr/${B[$hd]}?state=ready")
[ "$code" = 403 ] || fail "a POST from 198.18.7.2 (not loopback or the management address) got $code, want 403"
# refused in a loop: each one 403, but a line a second at most in the log (a client could flood it
# otherwise, and use up journald's rate limit, which then drops every later line of the daemon)
refused='refused a backend state change from 198\.18\.7\.2 port [0-9]* (not loopback'
n0=$(grep -c "$refused" "$GW_LOG")
[ "$n0" -ge 1 ] || fail "the refused POST from 198.18.7.2 not logged with its address and port"
t0=$(date +%s)
# (curl's URL glob: 500 POSTs, one connection each)
eth_ns curl -s -o /dev/null -w '%{http_code}\n' -m 30 -X POST "http://198.18.7.1:$ETH_STATS/backends/rr/b[1-500]?state=ready" >"$tmp/refused"
dt=$(($(date +%s) - t0))
[ "$(grep -c '^403$' "$tmp/refused")" = 500 ] || fail "500 POSTs from 198.18.7.2: $(sort "$tmp/refused" | uniq -c | tr -s '\n ' ' '), want 500 x 403"
n1=$(grep -c "$refused" "$GW_LOG")
[ $((n1 - n0)) -le $((dt + 2)) ] || fail "500 refused POSTs from 198.18.7.2 in ${dt}s wrote $((n1 - n0)) log lines (at most one a second)"
code=$(eth_ns curl -s -o /dev/null -w '%{http_code}' -m 5 "http://198.18.7.1:$ETH_STATS/health")
[ "$code" = 200 ] || fail "GET /health from 198.18.7.2 got $code (the refusal must be the POST's only)"
[ "$(m "backend_state{route=\"rr\",backend=\"${B[$hd]}\",state=\"drain\"}")" = 1 ] || fail "the refused POST changed the state"
# a web page can make a browser on this host send a form POST to loopback: browsers name the page's
# origin (Origin, Sec-Fetch-Site), command-line clients do not
for h in 'Origin: http://attacker.example' 'Sec-Fetch-Site: cross-site'; do
	code=$(curl -s -o /dev/null -w '%{http_code}' -m 5 -X POST -H "$h" "http://127.0.0.1:$ETH_STATS/backends/rr/${B[$hd]}?state=ready")
	[ "$code" = 403 ] || fail "a POST from loopback with '$h' (a browser's form post) got $code, want 403"
done
[ "$(m "backend_state{route=\"rr\",backend=\"${B[$hd]}\",state=\"drain\"}")" = 1 ] || fail "a browser's POST changed the state"
[ "$(post "rr/${B[$hd]}?state=bogus")" = 400 ] || fail "a bad state was not refused with 400"
[ "$(post "rr/198.18.0.99:1?state=ready")" = 404 ] || fail "an unknown backend was not 404"
# a 404 echoes the decoded name as text/plain, which no browser may take for HTML
curl -s -i -X POST "http://127.0.0.1:$ETH_STATS/backends/rr/%3Cscript%3E?state=ready" >"$tmp/404" || fail "POST <script>"
grep -q '^HTTP/1.1 404 ' "$tmp/404" && grep -qi '^Content-Type: text/plain' "$tmp/404" &&
	grep -qi '^X-Content-Type-Options: nosniff' "$tmp/404" || fail "a 404 naming <script>: $(head -c 400 "$tmp/404")"
[ "$(post "rr/${B[$hd]}?state=ready")" = 200 ] || fail "POST ready"
# changes flipped in a loop (60, from one curl) are logged up to 20 a second; the next line says how
# many were not, so that every change is accounted for (a local client could flood the log otherwise)
mark=$(wc -l <"$GW_LOG")
url="http://127.0.0.1:$ETH_STATS/backends/rr/${B[$hd]}"
curl -s -o /dev/null -w '%{http_code}\n' -m 30 -X POST $(for i in $(seq 30); do echo "$url?state=drain $url?state=ready"; done) >"$tmp/flips"
[ "$(grep -c '^200$' "$tmp/flips")" = 60 ] || fail "60 state changes: $(sort "$tmp/flips" | uniq -c | tr -s '\n ' ' ')"
sleep 1.1
[ "$(post "rr/${B[$hd]}?state=drain")" = 200 ] && [ "$(post "rr/${B[$hd]}?state=ready")" = 200 ] || fail "POST after the flips"
tail -n +"$((mark + 1))" "$GW_LOG" | grep "route rr: backend ${B[$hd]} set to" >"$tmp/flips.log"
quiet=$(grep -o '(\([0-9]*\) earlier changes not logged)' "$tmp/flips.log" | tr -dc '0-9\n' | awk '{ s += $1 } END { print s + 0 }')
[ "$(wc -l <"$tmp/flips.log")" -lt 62 ] && [ $(($(wc -l <"$tmp/flips.log") + quiet)) = 62 ] ||
	fail "62 state changes: $(wc -l <"$tmp/flips.log") lines logged, $quiet reported not logged"
peer run "$ETH_GW_IP" 8001 30 20000 >"$tmp/dr2.out"
tally "$tmp/dr2.out" "after drain"
[ "$c1" = 10 ] && [ "$c2" = 10 ] && [ "$c3" = 10 ] || fail "ready again: 30 sessions went $c1/$c2/$c3"
ok "drain: the held session on backend $hd finished intact while 20 new ones went to the others (the log names the client); a 404 echoing a name is text/plain with nosniff; a POST from 198.18.7.2 got 403 (500 more: $((n1 - n0)) log lines in ${dt}s), and so did a browser's (Origin, Sec-Fetch-Site); 62 changes in a loop: $(wc -l <"$tmp/flips.log") lines and $quiet reported not logged; ready again, it takes its share"

# ---- reload that changes a pool ----
hold r1 8001
hr=$(held r1)
gone=$((hr % 3 + 1)) # another backend, dropped from the pool
keep=$((6 - hr - gone))
tot_before=$(m "backend_sessions_total{route=\"rr\",backend=\"${B[$hr]}\"}")
eth_conf "$tmp/ibgw.conf" "$(routes "tcp:${B[$hr]} weight=1, tcp:${B[$keep]}" state=drain)"
sed -i -e "s/^stats = 127.0.0.1:/stats = 0.0.0.0:/" -e "/^\[gateway\]/a access_log = $tmp/access.log" "$tmp/ibgw.conf"
kill -HUP "$GW_PID"
for i in $(seq 100); do [ "$(m 'config_reloads_total{result="ok"}')" = 1 ] && break; sleep 0.1; done
[ "$(m 'config_reloads_total{result="ok"}')" = 1 ] || fail "the reload did not apply"
[ "$(m "backend_sessions_active{route=\"rr\",backend=\"${B[$hr]}\"}")" = 1 ] || fail "reload: the held session is not on its backend any more"
peer run "$ETH_GW_IP" 8001 20 20000 >"$tmp/rl.out"
tally "$tmp/rl.out" "after reload"
[ "${c[$hr]}" = 10 ] && [ "${c[$keep]}" = 10 ] && [ "${c[$gone]}" = 0 ] || fail "after the reload 20 sessions went $c1/$c2/$c3 (pool: $hr $keep)"
release r1
grep -q "^ok $hr$" "$tmp/r1.out" || fail "reload: the held session did not finish intact: $(cat "$tmp/r1.out")"
peer run "$ETH_GW_IP" 8002 12 20000 >"$tmp/rlw.out"
tally "$tmp/rlw.out" "wrr after reload"
[ "$c3" = 0 ] && [ $((c1 + c2)) = 12 ] || fail "wrr with state=drain on backend 3 in the file: 12 sessions went $c1/$c2/$c3"
[ "$(m "backend_state{route=\"wrr\",backend=\"${B[3]}\",state=\"drain\"}")" = 1 ] || fail "wrr: state=drain from the file not shown"
tot_after=$(m "backend_sessions_total{route=\"rr\",backend=\"${B[$hr]}\"}")
[ "$tot_after" -ge $((tot_before + 10)) ] || fail "reload: backend $hr's sessions_total went from $tot_before to $tot_after"
ok "reload: pool changed to backends $hr and $keep; the held session on $hr finished intact, its counters went on ($tot_before -> $tot_after), new sessions split 10/10, none to $gone; state=drain set in the file took backend 3 of wrr out"

# stats_admin = 0 (by a reload): a POST /backends is refused even from loopback; 1 again: accepted
reload_wait() {
	local r0=$1
	kill -HUP "$GW_PID"
	for i in $(seq 100); do [ "$(m 'config_reloads_total{result="ok"}')" -gt "$r0" ] && return 0; sleep 0.1; done
	fail "the reload did not apply"
}
r0=$(m 'config_reloads_total{result="ok"}')
sed -i "/^\[gateway\]/a stats_admin = 0" "$tmp/ibgw.conf"
reload_wait "$r0"
[ "$(post "rr/${B[$hr]}?state=drain")" = 403 ] || fail "stats_admin = 0: a POST from loopback was not refused"
[ "$(m "backend_state{route=\"rr\",backend=\"${B[$hr]}\",state=\"up\"}")" = 1 ] || fail "stats_admin = 0: the refused POST changed the state"
grep -q "refused a backend state change from 127\.0\.0\.1 port [0-9]* (stats_admin = 0" "$GW_LOG" || fail "stats_admin = 0: the refusal was not logged"
r0=$(m 'config_reloads_total{result="ok"}')
sed -i "/^stats_admin = 0$/d" "$tmp/ibgw.conf"
reload_wait "$r0"
[ "$(post "rr/${B[$hr]}?state=ready")" = 200 ] || fail "stats_admin back to 1: the POST was refused"
ok "stats_admin = 0 (reloaded): a POST from loopback refused (403, logged), the state unchanged; back to 1: accepted"

# ---- a backend killed mid-run: health checks, retries, back up ----
[ "$(m "backend_up{route=\"hc\",backend=\"${B[2]}\"}")" = 1 ] || fail "hc: backend 2 not up before the kill"
[ "$(m "backend_checks_total{route=\"hc\",backend=\"${B[2]}\",result=\"passed\"}")" -gt 0 ] || fail "hc: no check passed"
hold k1 8005
hold k2 8005
hold k3 8005
[ "$(held k1)$(held k2)$(held k3)" = 123 ] || fail "hc: three held sessions on $(held k1)$(held k2)$(held k3), want 1 2 3"
t0=$(date +%s%N)
kill -KILL "${BPID[2]}"
down=
for i in $(seq 100); do
	if [ "$(m "backend_up{route=\"hc\",backend=\"${B[2]}\"}")" = 0 ]; then down=$((($(date +%s%N) - t0) / 1000000)); break; fi
	sleep 0.05
done
[ -n "$down" ] || fail "hc: backend 2 not marked down 5 s after it was killed"
echo "backend 2 marked down ${down} ms after the kill (bound: fall 2 x 500 ms + timeout 400 ms = 1400 ms, + the 100 ms tick)"
# a loaded host delays the control thread's tick and this poll: 1 s of slack on top of the bound
[ "$down" -le 2500 ] || fail "hc: marked down after $down ms"
[ "$(m "backend_state{route=\"hc\",backend=\"${B[2]}\",state=\"down\"}")" = 1 ] || fail "hc: state metric not down"
release k1
release k2
release k3
grep -q "^ok 1$" "$tmp/k1.out" && grep -q "^ok 3$" "$tmp/k3.out" || fail "hc: sessions on the live backends: $(cat "$tmp/k1.out" "$tmp/k3.out")"
grep -Eq "^fail (reset|short-or-different.*) 2$" "$tmp/k2.out" ||
	fail "hc: the session on the killed backend did not end with a reset or a cut stream: $(cat "$tmp/k2.out")"
# (the client may see the reset a moment before a scrape sees the session counted: wait for it)
for i in $(seq 50); do [ "$(m 'route_sessions_ended_total{route="hc",reason="reset"}')" -ge 1 ] && break; sleep 0.1; done
[ "$(m 'route_sessions_ended_total{route="hc",reason="reset"}')" -ge 1 ] ||
	fail "hc: ibgwd did not count the cut session as reset (5 s): $(curl -s -m 5 "http://127.0.0.1:$ETH_STATS/metrics" |
		grep '^ibgw_route_sessions_ended_total{route="hc"' | grep -v ' 0$' | tr '\n' ' ')"
ok "hc: sessions on backends 1 and 3 finished intact; the one on the killed backend 2 ended ($(tail -1 "$tmp/k2.out" | cut -d' ' -f2)), not hung"
peer run "$ETH_GW_IP" 8005 40 20000 --conc 4 >"$tmp/hc.out"
tally "$tmp/hc.out" "backend 2 down"
[ "$c2" = 0 ] && [ $((c1 + c3)) = 40 ] || fail "hc: with backend 2 down, 40 sessions went $c1/$c2/$c3"
ok "hc: 40 sessions (4 at once) all went to backends 1 and 3 ($c1/$c3), every byte verified"
f0=$(m "backend_connect_failures_total{route=\"rt\",backend=\"${B[2]}\"}")
peer run "$ETH_GW_IP" 8006 30 20000 >"$tmp/rt.out"
tally "$tmp/rt.out" "retry"
f1=$(m "backend_connect_failures_total{route=\"rt\",backend=\"${B[2]}\"}")
[ "$c2" = 0 ] && [ $((c1 + c3)) = 30 ] || fail "rt: 30 sessions went $c1/$c2/$c3"
[ "$f1" -ge $((f0 + 5)) ] || fail "rt: backend 2's connect failures went $f0 -> $f1 (round robin tried it about every third session)"
[ "$(m 'route_sessions_ended_total{route="rt",reason="connect_refused"}')" = 0 ] || fail "rt: a session ended refused"
ok "rt (no checks): 30 sessions all served by 1 and 3 ($c1/$c3); $((f1 - f0)) refused connects to 2 were retried on another backend"
start_backend 2
t0=$(date +%s%N)
up=
for i in $(seq 100); do
	if [ "$(m "backend_up{route=\"hc\",backend=\"${B[2]}\"}")" = 1 ]; then up=$((($(date +%s%N) - t0) / 1000000)); break; fi
	sleep 0.05
done
[ -n "$up" ] || fail "hc: backend 2 not up again 5 s after it came back"
echo "backend 2 up ${up} ms after it listened again (rise 2 x 500 ms)"
peer run "$ETH_GW_IP" 8005 30 20000 >"$tmp/hc2.out"
tally "$tmp/hc2.out" "backend 2 back"
[ "$c1" = 10 ] && [ "$c2" = 10 ] && [ "$c3" = 10 ] || fail "hc: backend 2 back, 30 sessions went $c1/$c2/$c3"
ok "hc: backend 2 up after rise checks ($up ms), takes its share again"

# IPv6 backend names: /metrics and /stats name an IPv6 backend in brackets, a POST reaches it by that
# name (the v6 route's IPv6 backend is in maint: no session tries it, all go to backend 1)
V6B='[2001:db8:7::12]:80'
peer run "$ETH_GW_IP" 8007 10 20000 >"$tmp/v6.out"
tally "$tmp/v6.out" "v6 route"
[ "$c1" = 10 ] || fail "v6 route: 10 sessions went $c1/$c2/$c3, expected all to backend 1"
[ "$(m "backend_state{route=\"v6\",backend=\"$V6B\",state=\"maint\"}")" = 1 ] ||
	fail "v6: no maint state for $V6B in /metrics: $(curl -s "http://127.0.0.1:$ETH_STATS/metrics" | grep 'route="v6"')"
st=$(curl -s "http://127.0.0.1:$ETH_STATS/stats" |
	jq -r --arg b "$V6B" '.ibgw_backend_state[] | select(.labels.route == "v6" and .labels.backend == $b and .labels.state == "maint") | .value')
[ "$st" = 1 ] || fail "v6: /stats has no maint state for $V6B (got '$st')"
code=$(curl -g -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$ETH_STATS/backends/v6/$V6B?state=drain")
[ "$code" = 200 ] || fail "POST drain of $V6B: $code"
[ "$(m "backend_state{route=\"v6\",backend=\"$V6B\",state=\"drain\"}")" = 1 ] || fail "v6: the POST did not drain $V6B"
# the same name percent-encoded (what curl sends without -g, and other clients always): decoded
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$ETH_STATS/backends/v6/%5B2001:db8:7::12%5D:80?state=maint")
[ "$code" = 200 ] && [ "$(m "backend_state{route=\"v6\",backend=\"$V6B\",state=\"maint\"}")" = 1 ] ||
	fail "POST maint of %5B2001:db8:7::12%5D:80: $code"
for bad in '%5B2001:db8:7::12%5:80' '%zz' '%00x'; do
	code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$ETH_STATS/backends/v6/$bad?state=ready")
	[ "$code" = 400 ] || fail "POST to a backend name with a bad escape ($bad): $code, expected 400"
done
ok "IPv6 backend named $V6B in /metrics and /stats, set to drain by a POST with that name and back to maint with it percent-encoded (bad escapes: 400); 10 sessions all on backend 1, verified"

# connect_timeout is the bound of all tries: a silent first backend takes its share (1 s of 2), the
# live one is reached within the bound (before, the silent one took all 2 s and the live one was
# tried with 2 s more, or not at all)
t0=$(date +%s.%N)
peer run "$ETH_GW_IP" 8008 1 20000 >"$tmp/to.out"
t1=$(date +%s.%N)
grep -q '^ok 1$' "$tmp/to.out" || fail "to: the session behind a silent backend: $(cat "$tmp/to.out")"
took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
awk -v t="$took" 'BEGIN { exit !(t < 2.0) }' || fail "to: the session took $took s, beyond connect_timeout (2 s)"
[ "$(m 'backend_connect_failures_total{route="to",backend="198.18.0.99:7001"}')" = 1 ] || fail "to: the silent backend's failure not counted"
ok "to: behind a backend that never answers, the session reached the live one in $took s (connect_timeout 2 s, shared by the tries)"

# passive check: a backend that accepts and resets at once passes connects, so only its sessions show
# it. After eject_after (5) in a row it takes no new session for eject_time (10 s); then once more,
# and the next ejection lasts twice as long
eth_bg "$PY3" -c "
import socket, struct
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('$IP', 7010)); s.listen(64)
while True:
    c, _ = s.accept()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    c.close()"
eth_wait_listen 7010
eth_bg "$PY3" -c "
import socket, struct
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('$IP', 7011)); s.listen(64)
while True:
    c, _ = s.accept()
    c.sendall(b'no\\n')
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    c.close()"
eth_wait_listen 7011
EB=$IP:7010
peer run "$ETH_GW_IP" 8014 12 20000 --timeout 5 >"$tmp/ej4.out"
er4=$(m "backend_early_resets_total{route=\"ej4\",backend=\"$EB\"}")
[ "$er4" -ge 5 ] && [ "$(m "backend_ejected{route=\"ej4\",backend=\"$EB\"}")" = 0 ] ||
	fail "ej4: one client's $er4 early resets (eject_after 5) ejected the backend, or were not counted"
ok "ej4: one client met the resetting backend $er4 times in a row: counted, not ejected (one client must not steer everyone's sessions)"
# (from 32 clients, as ordinary traffic comes)
peer run "$ETH_GW_IP" 8010 30 20000 --src "$SRCS" --timeout 5 >"$tmp/ej.out"
nf=$(grep -vc '^ok 1$' "$tmp/ej.out")
for i in $(seq 20); do [ "$(m "backend_ejected{route=\"ej\",backend=\"$EB\"}")" = 1 ] && break; sleep 0.05; done # (the 100 ms tick)
[ "$(m "backend_ejected{route=\"ej\",backend=\"$EB\"}")" = 1 ] || fail "ej: the resetting backend not ejected ($nf of 30 sessions failed, $(m "backend_early_resets_total{route=\"ej\",backend=\"$EB\"}") early resets; $(grep '"route":"ej"' "$tmp/access.log" | grep -v '"reason":"ok"' | head -2))"
er=$(m "backend_early_resets_total{route=\"ej\",backend=\"$EB\"}")
[ "$er" -ge 5 ] && [ "$nf" = "$er" ] && [ "$nf" -le 6 ] || fail "ej: $nf of 30 sessions failed, $er early resets counted (5 to eject: the next pick passes it over)"
tail -n 15 "$tmp/ej.out" | grep -qv '^ok 1$' && fail "ej: sessions failed after the ejection: $(tail -n 15 "$tmp/ej.out" | grep -v '^ok 1$' | head -3)"
[ "$(m "backend_state{route=\"ej\",backend=\"$EB\",state=\"down\"}")" = 1 ] || fail "ej: the ejected backend's state is not down"
grep -q "route ej: backend $EB ejected for 10000 ms: it reset [0-9]* session(s) in a row" "$GW_LOG" || fail "ej: the ejection not logged"
ok "ej: a backend that resets at once, leastconn: ejected after $er early resets of 30 sessions (the rest, the last 15 among them, all on the good backend, verified), state down"
peer run "$ETH_GW_IP" 8011 8 20000 --timeout 5 >"$tmp/ej1.out"
[ "$(grep -c '^ok' "$tmp/ej1.out")" = 0 ] || fail "ej1: sessions through the only, resetting backend succeeded"
[ "$(m "backend_ejected{route=\"ej1\",backend=\"$EB\"}")" = 0 ] || fail "ej1: the pool's last usable backend was ejected"
ok "ej1: the same backend as its pool's only usable one: 8 sessions reset, never ejected"
peer run "$ETH_GW_IP" 8012 20 20000 --timeout 5 >"$tmp/ej2r.out"
[ "$(m "backend_early_resets_total{route=\"ej2\",backend=\"$IP:7011\"}")" = 0 ] &&
	[ "$(m "backend_ejected{route=\"ej2\",backend=\"$IP:7011\"}")" = 0 ] ||
	fail "ej2: a backend that answered before its reset counted as an early reset ($(m "backend_early_resets_total{route=\"ej2\",backend=\"$IP:7011\"}"))"
ok "ej2: a backend that answers, then resets: $(grep -vc '^ok 1$' "$tmp/ej2r.out") of 20 sessions broken by it, none counted as an early reset, not ejected"
eth_bg "$PY3" -c "
import socket, threading, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('$IP', 7012)); s.listen(64)
def idle_close(c):
    time.sleep(0.3)
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=idle_close, args=(c,), daemon=True).start()"
eth_wait_listen 7012
# 12 clients (leastconn's ties rotate: every other one meets it) that wait for the end of stream the
# backend's close brings, then send a byte into it
eth_ns "$PY3" -c "
import socket, time
for i in range(12):
    c = socket.create_connection(('$ETH_GW_IP', 8013), timeout=5)
    if c.recv(100) == b'':  # (the other backend greets: not this case)
        c.sendall(b'x')
        try:
            c.recv(100)
        except OSError:
            pass
    c.close()
    time.sleep(0.2)  # the session over before the next" || fail "ej3: the clients could not run"
for i in $(seq 30); do [ "$(grep -c '"route":"ej3"' "$tmp/access.log")" -ge 12 ] && break; sleep 0.1; done
[ "$(grep '"route":"ej3".*"addr":"'"$IP"'","port":7012' "$tmp/access.log" | grep -c '"reason":"reset"')" -ge 6 ] ||
	fail "ej3: the idle-closing backend did not carry the sessions ($(grep '"route":"ej3"' "$tmp/access.log" | head -2))"
[ "$(m "backend_early_resets_total{route=\"ej3\",backend=\"$IP:7012\"}")" = 0 ] &&
	[ "$(m "backend_ejected{route=\"ej3\",backend=\"$IP:7012\"}")" = 0 ] ||
	fail "ej3: a reset after the backend's own end of stream counted as early: $(m "backend_early_resets_total{route=\"ej3\",backend=\"$IP:7012\"}") early resets, ejected $(m "backend_ejected{route=\"ej3\",backend=\"$IP:7012\"}")"
ok "ej3: a backend that closes idle connections, each client sending a byte after its end of stream (the backend resets it): $(grep '"route":"ej3".*"port":7012' "$tmp/access.log" | grep -c '"reason":"reset"') such sessions (eject_after 5), none counted as an early reset, not ejected"
for i in $(seq 130); do [ "$(m "backend_ejected{route=\"ej\",backend=\"$EB\"}")" = 0 ] && break; sleep 0.1; done
[ "$(m "backend_ejected{route=\"ej\",backend=\"$EB\"}")" = 0 ] || fail "ej: not back after eject_time (10 s)"
peer run "$ETH_GW_IP" 8010 20 20000 --src "$SRCS" --timeout 5 >"$tmp/ej2.out"
for i in $(seq 20); do [ "$(m "backend_ejected{route=\"ej\",backend=\"$EB\"}")" = 1 ] && break; sleep 0.05; done
[ "$(m "backend_ejected{route=\"ej\",backend=\"$EB\"}")" = 1 ] || fail "ej: the backend not ejected again"
grep -q "route ej: backend $EB ejected for 20000 ms" "$GW_LOG" || fail "ej: the second ejection does not last twice as long"
# an operator may bring it back at once
[ "$(post "ej/$EB?state=ready")" = 200 ] || fail "ej: POST ready refused"
[ "$(m "backend_ejected{route=\"ej\",backend=\"$EB\"}")" = 0 ] && [ "$(m "backend_state{route=\"ej\",backend=\"$EB\",state=\"up\"}")" = 1 ] ||
	fail "ej: POST ready did not lift the ejection"
ok "ej: back after 10 s, ejected again after $(grep -vc '^ok 1$' "$tmp/ej2.out") more resets, for 20 s; POST ready lifts it at once"

peer run "$ETH_GW_IP" 8009 1 20000 --timeout 5 >"$tmp/rf.out"
grep -q '^ok' "$tmp/rf.out" && fail "rf: a session through a refusing backend succeeded"
for i in $(seq 30); do grep -q '"route":"rf"' "$tmp/access.log" 2>/dev/null && break; sleep 0.1; done
line=$(grep '"route":"rf"' "$tmp/access.log") || fail "rf: no access log line"
echo "$line" | jq -e --arg ip "$IP" '.backend.addr == $ip and .backend.port == 7009 and .reason == "connect_refused"' >/dev/null ||
	fail "rf: the access log does not name the backend tried (7009, refused): $line"
ok "rf: a session whose backend refused is logged with that backend ($IP:7009), not the route's first"

# a reload that turns hc's checks off while a check of backend 2 is out, one failure from its fall: that
# check's verdict no longer counts (nothing would check the backend again to undo it)
kill -STOP "${BPID[2]}" # (it accepts no more: its checks time out, its greeting missing)
f0=$(m "backend_checks_total{route=\"hc\",backend=\"${B[2]}\",result=\"failed\"}")
for i in $(seq 40); do
	[ "$(m "backend_checks_total{route=\"hc\",backend=\"${B[2]}\",result=\"failed\"}")" -gt "$f0" ] && break
	sleep 0.05
done
# the first failure is in (fall 2: still up); the next check starts 500 ms after the first did and
# times out 400 ms later: the reload lands while it is out
sleep 0.2
eth_conf "$tmp/ibgw.conf" "$(routes "tcp:${B[$hr]} weight=1, tcp:${B[$keep]}" state=drain "check_interval = 0")"
sed -i -e "s/^stats = 127.0.0.1:/stats = 0.0.0.0:/" -e "/^\[gateway\]/a access_log = $tmp/access.log" "$tmp/ibgw.conf"
r0=$(m 'config_reloads_total{result="ok"}')
kill -HUP "$GW_PID"
for i in $(seq 100); do [ "$(m 'config_reloads_total{result="ok"}')" -gt "$r0" ] && break; sleep 0.1; done
[ "$(m 'config_reloads_total{result="ok"}')" -gt "$r0" ] || fail "the reload turning hc's checks off did not apply"
sleep 1
kill -CONT "${BPID[2]}"
[ "$(m "backend_up{route=\"hc\",backend=\"${B[2]}\"}")" = 1 ] ||
	fail "hc: backend 2 down after a reload turned its checks off (the verdict of a check out at the reload)"
peer run "$ETH_GW_IP" 8005 30 20000 >"$tmp/hc3.out"
tally "$tmp/hc3.out" "hc without checks"
[ "$c1" = 10 ] && [ "$c2" = 10 ] && [ "$c3" = 10 ] || fail "hc without checks: 30 sessions went $c1/$c2/$c3"
ok "hc: a reload turned the checks off while one of backend 2 was out: its verdict ignored, backend 2 up and taking its share (10/10/10)"

# a reload that changes hc's check_interval applies it to the next check: backend 2 down under checks
# an hour apart comes back within the new interval once a reload sets 500 ms (it waited out the hour)
reload_hc() { # $1: hc's check_interval line
	local r0
	eth_conf "$tmp/ibgw.conf" "$(routes "tcp:${B[$hr]} weight=1, tcp:${B[$keep]}" state=drain "$1")"
	sed -i -e "s/^stats = 127.0.0.1:/stats = 0.0.0.0:/" -e "/^\[gateway\]/a access_log = $tmp/access.log" "$tmp/ibgw.conf"
	r0=$(m 'config_reloads_total{result="ok"}')
	kill -HUP "$GW_PID"
	for i in $(seq 100); do [ "$(m 'config_reloads_total{result="ok"}')" -gt "$r0" ] && return 0; sleep 0.1; done
	fail "the reload to hc's $1 did not apply"
}
kill -STOP "${BPID[2]}"
reload_hc "check_interval = 500ms"
for i in $(seq 60); do [ "$(m "backend_up{route=\"hc\",backend=\"${B[2]}\"}")" = 0 ] && break; sleep 0.1; done
[ "$(m "backend_up{route=\"hc\",backend=\"${B[2]}\"}")" = 0 ] || fail "hc: backend 2 (stopped) not down under 500 ms checks"
reload_hc "check_interval = 1h"
# one check under the hour's route (its next is an hour after it)
f0=$(m "backend_checks_total{route=\"hc\",backend=\"${B[2]}\",result=\"failed\"}")
for i in $(seq 40); do
	[ "$(m "backend_checks_total{route=\"hc\",backend=\"${B[2]}\",result=\"failed\"}")" -gt "$f0" ] && break
	sleep 0.1
done
kill -CONT "${BPID[2]}"
sleep 1.5
[ "$(m "backend_up{route=\"hc\",backend=\"${B[2]}\"}")" = 0 ] || fail "hc: backend 2 checked again within the hour"
reload_hc "check_interval = 500ms"
t0=$(date +%s%N)
for i in $(seq 50); do [ "$(m "backend_up{route=\"hc\",backend=\"${B[2]}\"}")" = 1 ] && break; sleep 0.1; done
[ "$(m "backend_up{route=\"hc\",backend=\"${B[2]}\"}")" = 1 ] ||
	fail "hc: backend 2 still down 5 s after a reload set 500 ms checks (the hour's next check kept)"
ok "hc: a reload from 1h to 500 ms checks applies to the next check: backend 2 up again in $((($(date +%s%N) - t0) / 1000000)) ms (rise 2)"

sleep 0.5
[ "$(m 'worker_sessions_active{worker="0"}')" = 0 ] || fail "sessions left"
for n in 1 2 3; do
	[ "$(m "backend_sessions_active{route=\"rr\",backend=\"${B[$n]}\"}")" = 0 ] || fail "backend $n of rr still counts sessions"
done
ok "nothing left over"
gw_stop || fail "ibgwd exited with $?"
ok "clean shutdown"
