#!/bin/bash
# In-VM half of tests/e2e/test_e2e_admin.sh: admission, reload and drain around live sessions.
#   - allow lists: a disallowed source refused on the IB side (connect request rejected) and on the
#     TCP side (reset), an allowed one served, counted as rejected{reason="acl"};
#   - max_sessions + 1 refused on an outbound and on an inbound route, counted rejected{reason="limit"},
#     and over the gateway's [gateway] max_sessions, counted rejected{reason="global"};
#   - all of that while a transfer runs on another route: it is not disturbed;
#   - SIGHUP removing two routes (one of each kind) and adding one while sessions run on them: the
#     running sessions finish intact, the removed listeners refuse, the new one serves; a route whose
#     IB buffer and queue depth the reload changes (its listener kept) sets up the connections after
#     it with the new values (credits and receive ring its accept offers), the one before stays;
#   - a reload adding a route whose IB port another rsocket server holds: /health 503 naming it and the
#     cause, ibgw_route_ready 0, logged once; ibgwd retries every second and, the port freed, the route
#     listens and serves with /health 200 again;
#   - SIGTERM: /health turns 503, new sessions refused, a session in progress finishes within the drain
#     timeout, a stuck one is aborted at the timeout and counted (its client told at once), ibgwd exits
#     0 within the drain timeout plus a bounded teardown, whatever the stuck peer does.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/guest_lib.sh
BIG=${E2E_ADMIN_SIZE:-6000000}
E2E_DRAIN=10s
routes_common="[route out]
listen = ib:7000
connect = tcp:$ETH_PEER_IP:5000
[route in]
listen = tcp:9000
connect = ib:$IB:7600"
ETH_MAX_SESSIONS=8 # [gateway] max_sessions: the global limit is tested too
e2e_start "$routes_common
[route echo_hold]
listen = tcp:9050
connect = echo
[route out_acl]
listen = ib:7001
connect = tcp:$ETH_PEER_IP:5000
allow = 198.19.0.99/32
[route in_acl]
listen = tcp:9001
connect = ib:$IB:7601
allow = $ETH_PEER_IP2/32, 198.18.1.0/24
[route out_lim]
listen = ib:7002
connect = tcp:$ETH_PEER_IP:5000
max_sessions = 2
[route in_lim]
listen = tcp:9002
connect = ib:$IB:7601
max_sessions = 2
[route out_rm]
listen = ib:7004
connect = tcp:$ETH_PEER_IP:5000
[route out_chg]
listen = ib:7006
connect = tcp:$ETH_PEER_IP:5000
[route out_par]
listen = ib:7007
connect = tcp:$ETH_PEER_IP:5000"
bg techo npeer tcp-serve 5000 "$T/techo.log"
bg recho peer rs-serve "$IB" 7600 "$T/recho.log"
bg recho4 "$TOOLS/rs_peer" -p 7601 "$IB" serve echo
wait_for "grep -q listening $T/techo.out && grep -q listening $T/recho.out && grep -q listening $T/recho4.out" 30 ||
	fail "peers did not start"
rej() { m "ibgw_route_sessions_rejected_total{route=\"$1\",reason=\"$2\"}"; }

# a transfer that must not notice anything below
bg bystander "$TOOLS/rs_peer" -t 200 -p 7000 "$IB" echo "$BIG"

# ---- allow lists ----
timeout 40 "$TOOLS/rs_peer" -t 20 -p 7001 "$IB" echo 1000 >"$T/acl1.out" 2>&1
rc=$?
check "[ $rc != 0 ] && [ \$(rej out_acl acl) = 1 ] && [ \$(m 'ibgw_ib_connections_rejected_total{reason=\"acl\"}') = 1 ]" \
	"IB side: a source outside allow refused at connect request (rejected acl: route $(rej out_acl acl), IB $(m 'ibgw_ib_connections_rejected_total{reason="acl"}'))"
check "[ \$(m 'ibgw_route_sessions_total{route=\"out_acl\"}') = 0 ]" "IB side: no session was started for it"
npeer tcp-client "$ETH_GW_IP" 9001 1000 >"$T/acl2.out" 2>&1
rc=$?
check "[ $rc != 0 ] && [ \$(rej in_acl acl) = 1 ]" "TCP side: a source outside allow refused ($(tail -1 "$T/acl2.out" | cut -c1-60))"
npeer tcp-client "$ETH_GW_IP" 9001 100000 --src "$ETH_PEER_IP2" >"$T/acl3.out" 2>&1
check "grep -q '^ok ' $T/acl3.out && [ \$(rej in_acl acl) = 1 ]" "TCP side: an allowed source ($ETH_PEER_IP2) served"

# ---- max_sessions + 1, each route kind ----
# the 2 admitted sessions stall until the checks below are done (SIGUSR1), whatever the machine's
# speed: the 8 s stall used before both cost its full length and could run out on a loaded host
bg l1 "$TOOLS/rs_peer" -t 120 -p 7002 "$IB" stall 2000000 90
bg l2 "$TOOLS/rs_peer" -t 120 -p 7002 "$IB" stall 2000000 90
wait_for "[ \$(m 'ibgw_route_sessions_active{route=\"out_lim\"}') = 2 ]" 10
timeout 40 "$TOOLS/rs_peer" -t 20 -p 7002 "$IB" echo 1000 >"$T/lim3.out" 2>&1
rc=$?
check "[ $rc != 0 ] && [ \$(rej out_lim limit) = 1 ]" "outbound route: session 3 of max_sessions 2 refused, counted rejected limit"
bg h npeer tcp-hold "$ETH_GW_IP" 9002 2 # (2 connections, one python: each start costs ~1 s here)
wait_for "[ \$(m 'ibgw_route_sessions_active{route=\"in_lim\"}') = 2 ]" 10
npeer tcp-client "$ETH_GW_IP" 9002 1000 >"$T/lim4.out" 2>&1
rc=$?
check "[ $rc != 0 ] && [ \$(rej in_lim limit) = 1 ]" "inbound route: session 3 of max_sessions 2 refused, counted rejected limit"
stop h
kill -USR1 "${PIDS[l1]}" "${PIDS[l2]}"
reap l1; rc1=$?
reap l2; rc2=$?
echk "[ $rc1 = 0 ] && [ $rc2 = 0 ]" "the 2 admitted outbound sessions completed intact (stalled reader, 2 MB each)" || cat "$T/l1.out" "$T/l2.out"
check "wait_for '[ \$(m \"ibgw_route_sessions_active{route=\\\"in_lim\\\"}\") = 0 ]' 10" "the 2 held inbound sessions were freed when their clients left"
reap bystander; rc=$?
echk "[ $rc = 0 ] && grep -q '^ok .*sent=$BIG recv=$BIG ' $T/bystander.out" "a $BIG-byte transfer on another route was not disturbed" || cat "$T/bystander.out"

# ---- [gateway] max_sessions + 1 (over all routes) ----
wait_for "[ \$(m 'ibgw_worker_sessions_active{worker=\"0\"}') = 0 ]" 10
bg g npeer tcp-hold "$ETH_GW_IP" 9050 $ETH_MAX_SESSIONS
wait_for "[ \$(m 'ibgw_worker_sessions_active{worker=\"0\"}') = $ETH_MAX_SESSIONS ]" 30
npeer tcp-client "$ETH_GW_IP" 9050 1000 >"$T/glob.out" 2>&1
rc=$?
check "[ $rc != 0 ] && [ \$(rej echo_hold global) = 1 ]" "gateway: session $((ETH_MAX_SESSIONS + 1)) of max_sessions $ETH_MAX_SESSIONS refused, counted rejected global"
stop g
check "wait_for '[ \$(m \"ibgw_worker_sessions_active{worker=\\\"0\\\"}\") = 0 ]' 10" "the held sessions were freed"

# ---- reload under load: remove one route of each kind and add one ----
for r in out in out_rm; do m "ibgw_route_sessions_total{route=\"$r\"}" >"$T/tot_$r"; done
# the sessions must outlast the reload whatever the machine's speed: readers that pause, a paced sender,
# for far longer than the reload checks take (~90 s, below the default stall_timeout of 2 min; they took
# 14 s on a loaded host, where the 20 s stall used before ran out); SIGUSR1 after
# those checks lets them finish at once
bg ld_out "$TOOLS/rs_peer" -t 200 -p 7000 "$IB" stall "$BIG" 90
bg ld_rm "$TOOLS/rs_peer" -t 200 -p 7004 "$IB" stall "$BIG" 90
bg ld_in npeer tcp-client "$ETH_GW_IP" 9000 "$BIG" --rate 70000
bg ld_chg "$TOOLS/rs_peer" -t 200 -p 7006 "$IB" stall "$BIG" 90
# out_par's accept offers [ib]'s defaults (128K receive ring, 128 credits) until the reload; one
# connection made before it stays open across it
bg par_old "$TOOLS/ib_badpeer" -p 7007 -t 30000 "$IB" hold 1 200
act() { echo "out=$(m 'ibgw_route_sessions_active{route="out"}') out_rm=$(m 'ibgw_route_sessions_active{route="out_rm"}') in=$(m 'ibgw_route_sessions_active{route="in"}')"; }
wait_for '[ "$(act)" = "out=1 out_rm=1 in=1" ]' 40
wait_for "grep -q '^held' $T/par_old.out" 40
a=$(act) tl=$(date +%s%N)
check "[ \"$a\" = 'out=1 out_rm=1 in=1' ]" "3 sessions running before the reload ($a)"
check "grep -q '^held 1 credits 128 ring 131072$' $T/par_old.out" "out_par before the reload: its accept offers 128 credits and a 128 KiB receive ring ($(cat $T/par_old.out))"
# the routes after the reload (2 removed, 1 added, 2 changed)
reloaded="[route out]
listen = ib:7000
connect = tcp:$ETH_PEER_IP:5000
[route out_new]
listen = ib:7005
connect = tcp:$ETH_PEER_IP:5000
[route out_chg]
listen = ib:7006
connect = tcp:$ETH_PEER_IP:5000
max_sessions = 4
[route out_par]
listen = ib:7007
connect = tcp:$ETH_PEER_IP:5000
ib_rbuf = 256K
ib_rq_depth = 48"
e2e_conf "$reloaded"
kill -HUP "$GW_PID"
check "wait_for '[ \$(m \"ibgw_config_reloads_total{result=\\\"ok\\\"}\") = 1 ]' 10" "SIGHUP: reload applied (2 routes removed, 1 added, 2 changed) while 5 sessions run"
a=$(act)
check "[ \"$a\" = 'out=1 out_rm=1 in=1' ]" "the removed routes' sessions are still running (and still reported: $a, $((($(date +%s%N) - tl) / 1000000)) ms later)"
timeout 40 "$TOOLS/rs_peer" -t 30 -p 7005 "$IB" echo 100000 >"$T/new.out" 2>&1
check "grep -q '^ok ' $T/new.out" "the added route serves at once"
out=$(timeout 40 "$TOOLS/ib_badpeer" -p 7007 -t 30000 "$IB" hold 1 0 2>&1)
check "[ \"$out\" = 'held 1 credits 48 ring 262144' ]" "out_par after the reload: a new connection gets the new ib_rq_depth and ib_rbuf (48 credits, 256 KiB ring: $out)"
check "wait_for '[ \$(m \"ibgw_route_sessions_active{route=\\\"out_par\\\"}\") = 1 ]' 10" "out_par: the session of the connection made before the reload is still there"
kill -USR1 "${PIDS[par_old]}"
reap par_old; r0=$?
check "[ $r0 = 0 ]" "out_par: the connection made before the reload held until released (exit $r0)"
timeout 40 "$TOOLS/rs_peer" -t 20 -p 7004 "$IB" echo 1000 >"$T/rm1.out" 2>&1
check "[ \$? != 0 ]" "the removed IB listener refuses new sessions"
npeer tcp-client "$ETH_GW_IP" 9000 1000 >"$T/rm2.out" 2>&1
check "[ \$? != 0 ]" "the removed TCP listener refuses new sessions"
# the reload is over: the four sessions that had to outlast it may finish now (SIGUSR1 ends the
# readers' stall and lifts the sender's pace)
for p in ld_out ld_rm ld_in ld_chg; do kill -USR1 "${PIDS[$p]}" 2>/dev/null; done
reap ld_out; r1=$?
reap ld_rm; r2=$?
reap ld_in; r3=$?
echk "[ $r1 = 0 ] && grep -q '^ok .*sent=$BIG recv=$BIG ' $T/ld_out.out" "kept route: its session finished intact across the reload" || cat "$T/ld_out.out"
echk "[ $r2 = 0 ] && grep -q '^ok .*sent=$BIG recv=$BIG ' $T/ld_rm.out" "removed IB-side route: its session finished intact" || cat "$T/ld_rm.out"
echk "[ $r3 = 0 ] && grep -q '^ok sent=$BIG got=$BIG ' $T/ld_in.out" "removed TCP-side route: its session finished intact" || cat "$T/ld_in.out"
check "grep -q 'route in: last session gone, freed' $GW_LOG || wait_for 'grep -q \"route in: last session gone\" $GW_LOG' 5" "removed route freed once its last session ended"
# a changed route: its old object ends with its session and is freed; the route's series go on, and
# they must not go backwards (they add up both objects while both exist, and keep the old one's counts)
reap ld_chg; r4=$?
echk "[ $r4 = 0 ] && grep -q '^ok .*sent=$BIG recv=$BIG ' $T/ld_chg.out" "changed route: its session finished intact" || cat "$T/ld_chg.out"
check "wait_for 'grep -q \"route out_chg: last session gone, freed\" $GW_LOG' 5" "changed route: the old object freed once its session ended"
scrape
c="$(ms 'ibgw_route_sessions_total{route="out_chg"}') $(ms 'ibgw_route_sessions_ended_total{route="out_chg",reason="ok"}') $(ms 'ibgw_route_bytes_total{route="out_chg",dir="ib_to_eth"}') $(ms 'ibgw_route_bytes_total{route="out_chg",dir="eth_to_ib"}')"
check "[ \"$c\" = \"1 1 $BIG $BIG\" ]" "changed route: its counters kept the freed object's counts (sessions, ended ok, bytes each way: $c)"

# ---- a listener that cannot open yet: /health says so, ibgwd keeps trying ----
# an rsocket server holds port 7008 (another program on the host, a previous instance still closing):
# a reload adding a route on it cannot listen; /health turns 503 naming the route and the cause, so
# keepalived or the BGP watch withdraws the gateway, and ibgwd tries again every second: once the
# port is free the route listens and serves, /health is 200 again, without another reload
bg squat "$TOOLS/rs_peer" -p 7008 "$IB" serve echo
wait_for "grep -q listening $T/squat.out" 30 || fail "the rsocket server on 7008 did not start"
e2e_conf "$reloaded
[route out_late]
listen = ib:7008
connect = tcp:$ETH_PEER_IP:5000"
kill -HUP "$GW_PID"
check "wait_for '[ \$(m \"ibgw_config_reloads_total{result=\\\"ok\\\"}\") = 2 ]' 10" "SIGHUP adding route out_late on ib:7008, which an rsocket server holds: reload applied"
health() { curl -s -m 5 -w ' %{http_code}' "http://127.0.0.1:$STATS/health" | tr '\n' '|'; }
h=$(health)
check "[ \"$h\" = 'degraded|route out_late: not listening on ib:7008 (0 of 1 open): Address already in use| 503' ]" "/health 503, naming the route that cannot listen and why ($h)"
check "[ \"$(m 'ibgw_route_ready{route=\"out_late\"}') $(m 'ibgw_route_ready{route=\"out\"}')\" = '0 1' ]" "ibgw_route_ready: out_late 0, out 1"
sleep 2.5 # two retries at least
check "[ \"$(grep -c 'route out_late: cannot listen on ib' $GW_LOG)\" = 1 ]" "the failure logged once in 2.5 s, not once per retry"
kill "${PIDS[squat]}"
reap squat
wait_for '[ "$(health)" = "ok| 200" ]' 5
h=$(health)
check "[ \"$h\" = 'ok| 200' ]" "the port freed: out_late listens within the retry period, /health 200 again ($h)"
check "grep -q 'route out_late: listening on ib .*:7008 at last' $GW_LOG" "its opening logged"
timeout 40 "$TOOLS/rs_peer" -t 30 -p 7008 "$IB" echo 100000 >"$T/late_route.out" 2>&1
check "grep -q '^ok ' $T/late_route.out" "out_late serves (100 KB echoed through the TCP peer, intact)"

# ---- drain on SIGTERM ----
# (the buffers on the way, kernel TCP's autotuned ones included, often take all 4 MB: the stuck client
# then has nothing left to send and asks rpoll for nothing; rs_peer still acts on the hangup at once)
bg stuck "$TOOLS/rs_peer" -t 60 -p 7000 "$IB" stall 4000000 25
wait_for "[ \$(m 'ibgw_route_sessions_active{route=\"out\"}') = 1 ]" 10
bg finishing "$TOOLS/rs_peer" -t 60 -p 7005 "$IB" stall 1500000 2 # still running at the signal
wait_for "[ \$(m 'ibgw_route_sessions_active{route=\"out_new\"}') = 1 ]" 10
t0=$(date +%s%N)
kill -TERM "$GW_PID"
# the exit time, watched from the signal on whatever the checks below wait for (ibgwd is this shell's
# child: a zombie until reaped, hence the state)
(while [ -d /proc/$GW_PID ] && awk '{exit $3 == "Z"}' /proc/$GW_PID/stat 2>/dev/null; do sleep 0.05; done
	echo $((($(date +%s%N) - t0) / 1000000)) >"$T/gw_exit_ms") &
el() { echo "    [+$((($(date +%s%N) - t0) / 1000000)) ms] $*"; }
check "wait_for '[ \"\$(curl -s -m 2 -o /dev/null -w %{http_code} http://127.0.0.1:$STATS/health)\" = 503 ]' 3" "SIGTERM: /health answers 503 while draining"
timeout 15 "$TOOLS/rs_peer" -t 10 -p 7005 "$IB" echo 1000 >"$T/late.out" 2>&1
rc=$?
# refused, or (seen now and then) its connect request left unanswered while the listener closes
check "[ $rc != 0 ]" "SIGTERM: a new session is not admitted ($([ $rc = 124 ] && echo 'connect request unanswered for 15 s' || echo refused))"
el late: exit $rc
reap finishing; rc=$?
echk "[ $rc = 0 ] && grep -q '^ok .*sent=1500000 recv=1500000 ' $T/finishing.out" "SIGTERM: a session in progress finished within the drain timeout ($((($(date +%s%N) - t0) / 1000000)) ms after the signal)" || cat "$T/finishing.out"
# from here on the log, not /metrics: once the drain is over ibgwd stops serving HTTP and exits
wait_for "grep -q 'drain timeout: aborting 1 session' $GW_LOG" 20
ok=$? ta=$(date +%s%N)
check "[ $ok = 0 ]" "SIGTERM: the stuck session was aborted at the drain timeout and counted ($(((ta - t0) / 1000000)) ms after the signal)"
reap stuck; rc=$?
tr=$((($(date +%s%N) - t0) / 1000000))
# the gateway's abort (rsocket CTRL DISCONNECT) must reach it before the queue pair goes: without it
# an rsocket peer never learns that its stream ended (it ignores the rdma_cm disconnect) and waits
# until its own timeout (seen: 57 s and more, when the teardown flushed the abort)
check "[ $rc != 0 ] && [ $tr -le 22000 ]" "SIGTERM: the stuck rsocket client saw its stream end in error ($tr ms after the signal)"
wait_for "[ -s $T/gw_exit_ms ]" 60
te=$(cat "$T/gw_exit_ms" 2>/dev/null || echo 999999)
gw_stop TERM 30 2>/dev/null
rc=$?
check "[ $rc = 0 ]" "SIGTERM: ibgwd exited 0"
# Whatever the peers do (the stuck one stalls for 25 s, answers nothing meanwhile): the drain timeout,
# the 2 s the aborts get, the teardown, and 10 s of slack for a loaded 2-core host running the VM
# under TCG (seen: 10.5 s idle, 14.3 s with another VM running; before the fix the test saw 57-100 s).
check "[ $te -le $((10000 + 2000 + 10000)) ]" "SIGTERM: ibgwd exited $te ms after the signal (drain timeout 10000 ms, bound 22000 ms)"
echo "ib [$VM_TOPO]: $npass passed, $nfail failed"
[ $nfail -gt 0 ] && { echo "--- ibgwd log (tail)"; tail -n 30 "$GW_LOG"; }
[ $nfail = 0 ]
