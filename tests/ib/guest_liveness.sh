#!/bin/bash
# In-VM half of tests/ib/test_ib_liveness.sh: connections that rdma_cm calls something else than they
# are (tests/tools/ib_badpeer.c modes datafirst, rnr) and connections that come and go (churn), beside
# an idle stock rsocket connection (rs_peer).
set -u
cd "$(dirname "$0")/../.."
. tests/ib/guest_lib.sh
trap 'gw_cleanup; for p in ${IDLE:-} ${DF:-}; do kill -KILL $p 2>/dev/null; done' EXIT
IB=$IB_ADDR_A
ib_gw_start "[ib]
bind = $IB
keepalive = 200ms
[route echo]
listen = ib:7471
connect = echo
max_sessions = 32
[route discard]
listen = ib:7472
connect = discard
max_sessions = 8"


# a stock rsocket connection, idle throughout: the gateway's keepalives (every 200 ms) are answered
$TOOLS/rs_peer -t 120 -p 7471 "$IB" idle 1 100 >/tmp/idle.out 2>&1 &
IDLE=$!
check_m ibgw_ib_connections_active 1 "an idle rsocket connection held"

# ---- (a) data before rdma_cm's ESTABLISHED: the peer's RTU never comes (lost, say: the REP is sent
# again only after seconds), its queue pair is ready and it sends at once. Its first message opens the
# connection and a session takes it; it is no half-open connection for the 5 s deadline to fail ----
ho0=$(m 'ibgw_ib_connections_failed_total{reason="half_open"}') ok0=$(closed ok)
$TOOLS/ib_badpeer -p 7471 -t 30000 "$IB" datafirst 8 >/tmp/df.out 2>&1 &
DF=$!
sleep 3
hoN=$(m ibgw_ib_connections_half_open) actN=$(m ibgw_ib_connections_active)
wait $DF
rc=$?
DF=
check "[ $rc = 0 ]" "(a) 8 s of echoes on a connection whose RTU never came: $(tail -1 /tmp/df.out)"
check "[ $hoN = 0 ] && [ $actN = 2 ]" "(a) not half-open once its data came ($hoN half-open of $actN connections at 3 s)"
check "[ \$(m 'ibgw_ib_connections_failed_total{reason=\"half_open\"}') = $ho0 ]" "(a) never failed as half_open"
check_m 'ibgw_ib_connections_closed_total{worker="0",reason="ok"}' "$((ok0 + 1))" \
	"(a) ended in order by its DISCONNECT (closed ok)"
check_m ibgw_ib_connections_active 1 "(a) only the idle connection left"

# ---- (b) a peer that takes none of our messages: it posts no receive, so each waits in RNR, retried
# for ever (rsocket's rnr_retry 7). It sends to the discard route what makes the gateway owe it a
# credit update, a buffer advert and (its SHUTDOWN) the route's end of stream: with the advert of the
# start, every control slot is stuck, so no keepalive can be posted. Judged by its oldest message
# in flight, unacknowledged for 3 keepalive intervals (600 ms): dropped as keepalive ----
k0=$(closed keepalive)
out=$($TOOLS/ib_badpeer -p 7472 -t 30000 "$IB" rnr 10 2>&1)
rc=$?
cs=$(echo "$out" | sed -n 's/.*reset after \([0-9]*\)\.\([0-9][0-9]\) s.*/\1\2/p') # centiseconds
check "[ $rc = 0 ] && [ -n \"$cs\" ] && [ $cs -le 200 ]" "(b) dropped within 2 s: $(echo "$out" | tr '\n' ' ')"
check_m 'ibgw_ib_connections_closed_total{worker="0",reason="keepalive"}' "$((k0 + 1))" "(b) closed as keepalive"
check_m ibgw_ib_connections_active 1 "(b) only the idle connection left"

# ---- (c) connections that come and go, more of them than one completion queue is sized for (64).
# A queue pair destroyed leaves its flushed receives' completions in the CQ (rxe keeps them): they are
# dropped as stale, and its room in the CQ is promised again only once the worker emptied the CQ since
# (else those completions and the next connections' could overrun it). The room does come back: one
# CQ serves them all ----
s0=$(m 'ibgw_ib_stale_completions_total{worker="0"}') c0=$(m ibgw_ib_completion_queues)
out=$($TOOLS/ib_badpeer -p 7471 -t 30000 "$IB" churn 100 2>&1)
rc=$?
s1=$(m 'ibgw_ib_stale_completions_total{worker="0"}')
check "[ $rc = 0 ] && [ $((s1 - s0)) -ge 100 ]" \
	"(c) $(echo "$out" | tr '\n' ' '): $((s1 - s0)) stale completions of their destroyed queue pairs, dropped"
check_m ibgw_ib_completion_queues "$c0" "(c) their CQ room came back: still $c0 completion queue(s)"
check_m ibgw_ib_connections_active 1 "(c) only the idle connection left"

# ---- still serving, and the idle connection was never dropped ----
out=$($TOOLS/rs_peer -t 60 -p 7471 "$IB" echo 1M 2>&1)
check "echo \"\$out\" | grep -q '^ok '" "still serving (echo 1M)"
check "[ \$(m 'ibgw_ib_keepalives_total{worker=\"0\",dir=\"tx\"}') -gt 0 ]" "keepalives sent (the idle connection's)"
kill -USR1 $IDLE
wait $IDLE
rc=$?
IDLE=
check "[ $rc = 0 ]" "the idle rsocket connection held to the end, never dropped ($(tail -1 /tmp/idle.out))"
check "kill -0 $GW_PID" "ibgwd alive"
ib_done
