#!/bin/bash
# In-VM half of tests/ib/test_ib_hostile.sh: hostile IB peers (tests/tools/ib_badpeer.c modes stale,
# cross, claim, absurd, halfopen, postclose) against an echo route (and, for postclose, a route to a TCP
# server in a namespace behind ibgwd's af_packet port), a victim session (rs_peer, stock rsocket) held
# open through all of it and verified at the end.
set -u
cd "$(dirname "$0")/../.."
. tests/ib/guest_lib.sh
. tests/eth/lib.sh
trap 'for p in ${VICTIM:-} ${FLOOD:-} ${HOLD:-} ${HO:-} ${PC:-}; do kill -KILL $p 2>/dev/null; done; eth_cleanup' EXIT
IB=$IB_ADDR_A
BAD="timeout 150 $TOOLS/ib_badpeer -p 7471 -t 30000 $IB" # generous waits: a loaded host slows the VM
# max_sessions and memory_limit are lowered from their defaults (256, 1G) so that case (e), 1000
# connect requests, is about them: without reservations at the request, the requests would pin
# 1000 x 256 KiB, eight times the limit. memory_limit counts buffers only: besides its 256 KiB of
# buffers a connection costs its provider queues (~150-450 KiB on rxe, at the default depths),
# which case (e) bounds by the connection count, apart from the rest of ibgwd's memory.
MAXS=32
LIMIT_MIB=32
GW_EXTRA="memory_limit = ${LIMIT_MIB}M"
# (g) needs a TCP destination: a kernel server in a namespace, behind ibgwd's port on a veth
eth_setup
GW_VDEV="net_af_packet0,iface=$ETH_IF,qdisc_bypass=1"
GW_ETH_EXTRA="address = $ETH_GW_IP/24
mbufs = 4095"
ib_gw_start "[ib]
bind = $IB
[route echo]
listen = ib:7471
connect = echo
max_sessions = $MAXS
# (the victim's reader stalls through the whole test: more than the default 2 minutes on a slow host)
stall_timeout = 10m
[route full]
listen = ib:7472
connect = echo
max_sessions = 1
[route tcp]
listen = ib:7473
connect = tcp:$ETH_PEER_IP:5009
max_sessions = 1"

# closed connections by reason, "access=N error=N reset=N ..." (one scrape)
closes() {
	curl -s -m 20 "http://127.0.0.1:$STATS/metrics" |
		awk -F'"' '/^ibgw_ib_connections_closed_total\{/ { split($0, v, " "); printf "%s=%s ", $4, v[2] }'
}
# the number of connections that ended: closed for any reason, or failed before establishment
closed_all() {
	echo $(($(closes | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); n += kv[2] } } END { print n + 0 }') +
		$(m 'ibgw_ib_connections_failed_total{reason="accept"}')))
}
# resident memory of the verbs queues (queue pair rings, completion queues): mapped from the uverbs device
vq() { awk '/^[0-9a-f]+-[0-9a-f]+ / {u = /uverbs/} u && /^Rss:/ {s += $2} END {print s * 1024}' /proc/$GW_PID/smaps; }
rss() { awk '/^VmRSS:/ {print $2 * 1024}' /proc/$GW_PID/status; }

# ---- (a) stale key: the attacker's connection A closes, a victim gets its buffers, B writes ----
rm -f /tmp/go
$BAD stale /tmp/go >/tmp/stale.out 2>&1 &
ATT=$!
for _ in $(seq 300); do grep -q 'A closed' /tmp/stale.out && break; sleep 0.1; done
m_is ibgw_ib_connections_active 0 # A is freed: its buffer set is in the pool, next in line
# the victim: an echo whose reader stalls, so its bytes sit in the gateway's ring while B writes
$TOOLS/rs_peer -t 250 -p 7471 "$IB" stall 3M 250 >/tmp/victim.out 2>&1 &
VICTIM=$!
check_m 'ibgw_route_sessions_active{route="echo"}' "1" "the victim's session runs"
check "[ \$(m ibgw_ib_buffer_registrations_total) = 1 ] && [ \$(m ibgw_ib_buffer_rekeys_total) = 1 ]" \
	"the victim reuses A's buffer set (one registration so far), under a new key"
all0=$(closed_all)
touch /tmp/go
wait $ATT
rc=$?
check "[ $rc = 0 ]" "(a) writes with the stale key of A through B: remote access error, nothing delivered ($(tail -1 /tmp/stale.out))"
# B's queue pair went to the error state with its write: the gateway learns it from the receive that
# write consumed (closed, reason access), or from the flush of its queue pair or B's disconnect
# (failed accept, when B's write came before the gateway saw it established)
check_m ibgw_ib_connections_active "1" "(a) B dropped: only the victim's connection left"
check "[ \$(closed_all) = $((all0 + 1)) ]" "(a) B's end counted ($(closes)failed_accept=$(m 'ibgw_ib_connections_failed_total{reason="accept"}'))"

# ---- (b) a key of the attacker's other connection ----
acc0=$(closed access)
out=$($BAD cross 2>&1)
rc=$?
check "[ $rc = 0 ]" "(b) B writes into A's buffer with A's key: remote access error; A unaffected ($out)"
check_m 'ibgw_ib_connections_closed_total{worker="0",reason="access"}' "$((acc0 + 1))" \
	"(b) B dropped and counted (closed, reason access)"
check_m ibgw_ib_connections_active "1" "(b) A and B gone, the victim still there"

# ---- (c) a zero-length write claiming 64 KiB: the previous tenant's bytes never come back ----
out=$($BAD claim 2>&1)
rc=$?
check "[ $rc = 0 ]" "(c) nothing of the previous tenant relayed ($(echo "$out" | tail -1))"
check_m ibgw_ib_connections_active "1" "(c) both connections gone"

# ---- (d) absurd credits, adverts, floods of keepalives and of other costless messages: the connection is
# reset, nobody else notices ----
p0=$(closed protocol)
out=$($BAD absurd credits 2>&1)
rc=$?
check "[ $rc = 0 ]" "(d) $out"
out=$($BAD absurd sgl 2>&1)
rc2=$?
check "[ $rc2 = 0 ]" "(d) $out"
# keepalives cost their sender no credit: a flood of them is a violation past 100 in a second
out=$($BAD absurd keepalives 2>&1)
rc3=$?
check "[ $rc3 = 0 ]" "(d) $(echo "$out" | tr '\n' ' ')"
check_m 'ibgw_ib_connections_closed_total{worker="0",reason="protocol"}' "$((p0 + 3))" \
	"(d) all three reset as protocol errors, counted"
# messages that cost their sender nothing but a completion, a receive and most a session's wake-up
# each (credit updates that grant nothing, an end of stream again and again, empty data, buffer adverts
# that no byte of ours earned): past 100 in a second, reset as the keepalives are, and counted the same
# (violation "message"). And credit updates that each move the edge 2 further, from a peer that granted
# 0xFFFE credits: in 16-bit arithmetic each looks forward, yet with nothing of ours consumed none can
# move the edge at all (violation "credit": at the first)
for what in sgls shutdowns zeroes adverts wrap; do
	why=message
	[ $what = wrap ] && why=credit
	v0=$(m "ibgw_ib_protocol_violations_total{worker=\"0\",reason=\"$why\"}") p0=$(closed protocol)
	out=$($BAD absurd $what 2>&1)
	rc=$?
	cs=$(echo "$out" | sed -n 's/.*reset after \([0-9]*\)\.\([0-9][0-9]\) s.*/\1\2/p') # centiseconds
	check "[ $rc = 0 ] && [ -n \"$cs\" ] && [ $cs -le 300 ]" "(d) reset within 3 s: $(echo "$out" | tr '\n' ' ')"
	check_m "ibgw_ib_protocol_violations_total{worker=\"0\",reason=\"$why\"}" "$((v0 + 1))" \
		"(d) $what: counted as a protocol violation ($why)"
	check_m 'ibgw_ib_connections_closed_total{worker="0",reason="protocol"}' "$((p0 + 1))" \
		"(d) $what: its connection closed as protocol"
done
check_m ibgw_ib_connections_active "1" "(d) the victim's connection the only one left"

# ---- (e) 1000 connect requests that never complete ----
vq0=$(vq) rss0=$(rss) ho0=$(m 'ibgw_ib_connections_failed_total{reason="half_open"}') acc0=$(m ibgw_ib_connections_accepted_total)
$BAD halfopen 1000 8 >/tmp/flood.out 2>&1 &
FLOOD=$!
maxbuf=0 maxrss=$rss0 vqmax=$vq0 maxho=0 maxact=0 served=0 tries=0
while kill -0 $FLOOD 2>/dev/null; do
	set -- $(curl -s -m 20 "http://127.0.0.1:$STATS/metrics" | awk '$1 == "ibgw_ib_buffer_bytes" { b = $2 }
		$1 == "ibgw_ib_connections_half_open" { h = $2 } $1 == "ibgw_ib_connections_active" { a = $2 }
		END { print b + 0, h + 0, a + 0 }')
	b=${1:-0} h=${2:-0} a=${3:-0} r=$(rss)
	[ "$a" -gt $maxact ] && maxact=$a
	[ "$b" -gt $maxbuf ] && maxbuf=$b
	[ "$r" -gt $maxrss ] && maxrss=$r && vqmax=$(vq)
	[ "$h" -gt $maxho ] && maxho=$h
	# a legitimate client during the flood (connections besides the victim's exist): 256 KiB echoed intact
	if [ $tries -lt 5 ] && [ "$a" -gt 1 ]; then
		tries=$((tries + 1))
		if timeout 60 $TOOLS/rs_peer -t 50 -p 7471 "$IB" echo 256K >/tmp/legit.out 2>&1; then
			served=$((served + 1))
		else
			echo "    legitimate client $tries failed: $(tail -2 /tmp/legit.out | tr '\n' ' ')"
		fi
	fi
	sleep 0.1
done
wait $FLOOD
rc=$?
FLOOD=
sed 's/^/    /' /tmp/flood.out
acc=$(sed -n 's/.*accepted \([0-9]*\) .*/\1/p' /tmp/flood.out)
exp=$(sed -n 's/.*expired \([0-9]*\) .*/\1/p' /tmp/flood.out)
echo "    during the flood: at most $maxho half-open and $maxact IB connections, registered buffers at most $maxbuf B, RSS $rss0 -> at most $maxrss B (verbs queues $vq0 -> $vqmax B)"
check "[ $rc = 0 ] && [ -n \"$acc\" ] && [ $acc -gt 0 ] && [ $exp -gt 0 ]" \
	"(e) 1000 requests sent, $acc of them accepted and left unanswered, $exp of those refused later by the gateway"
# half-open ones hold a session slot each; those failed but not yet freed are 64 at most (then
# requests wait): the connections that exist stay within the route's sessions + 64
check "[ $maxho -le $MAXS ] && [ $maxact -le $((MAXS + 64)) ]" \
	"(e) half-open connections within max_sessions ($maxho <= $MAXS), all IB connections within it + 64 ($maxact)"
check "[ $maxbuf -le $((LIMIT_MIB << 20)) ]" "(e) registered buffers within memory_limit ($maxbuf <= $((LIMIT_MIB << 20)) B)"
# memory_limit bounds the buffers; the provider's queues are bounded by the connection count: RSS
# besides them within memory_limit, and they within 512 KiB for each connection that may exist
check "[ $((maxrss - rss0 - (vqmax - vq0))) -le $((LIMIT_MIB << 20)) ]" \
	"(e) RSS besides the verbs queues grew by less than memory_limit ($((maxrss - rss0 - (vqmax - vq0))) B)"
check "[ $((vqmax - vq0)) -le $(((MAXS + 64) * 512 << 10)) ]" \
	"(e) verbs queues grew within 512 KiB for each of max_sessions + 64 connections ($((vqmax - vq0)) B)"
check "[ $tries -gt 0 ] && [ $served = $tries ]" "(e) legitimate clients served during the flood ($served of $tries echoes intact)"
check_m ibgw_ib_connections_half_open "0" "(e) every half-open connection gone after the deadline"
# every connection the gateway accepted meanwhile but the legitimate ones ended half-open
gacc=$(($(m ibgw_ib_connections_accepted_total) - acc0))
check_m 'ibgw_ib_connections_failed_total{reason="half_open"}' "$((ho0 + gacc - served))" \
	"(e) each of the $((gacc - served)) accepted by the gateway counted as failed half_open (expired at the deadline or displaced by a newer request)"
check "[ $((gacc - served)) -ge $acc ]" "(e) the attacker's $acc unanswered accepts among them"
check_m ibgw_ib_connections_active "1" "(e) only the victim's connection left"

# ---- (f) requests to a full route end no other route's handshake ----
# A full gateway lets a request in by failing the oldest half-open connection (a SYN queue's rule);
# a full route may only take the slot of a half-open connection of its own: a request that cannot
# get in never ends another route's handshake (one request per attempt would otherwise keep every
# other route's clients from connecting).
$TOOLS/ib_badpeer -p 7472 -t 30000 "$IB" hold 1 60 >/tmp/hold.out 2>&1 &
HOLD=$!
for _ in $(seq 300); do grep -q '^held' /tmp/hold.out && break; sleep 0.1; done
check "grep -q '^held 1' /tmp/hold.out" "(f) route full: its one session held"
ho0=$(m 'ibgw_ib_connections_failed_total{reason="half_open"}') lim0=$(m 'ibgw_route_sessions_rejected_total{route="full",reason="limit"}')
$BAD halfopen 1 8 >/tmp/ho1.out 2>&1 &
HO=$!
m_is ibgw_ib_connections_half_open 1
t0=$SECONDS
out=$(timeout 60 $TOOLS/ib_badpeer -p 7472 -t 30000 "$IB" halfopen 5 0 2>&1)
check "echo '$out' | grep -q 'rejected 5' && [ \$(m 'ibgw_route_sessions_rejected_total{route=\"full\",reason=\"limit\"}') = $((lim0 + 5)) ]" \
	"(f) 5 requests to the full route refused, counted rejected limit ($out)"
# (within the 5 s the half-open one has before its deadline)
check "[ \$(m ibgw_ib_connections_half_open) = 1 ] && [ \$(m 'ibgw_ib_connections_failed_total{reason=\"half_open\"}') = $ho0 ] && [ $((SECONDS - t0)) -lt 5 ]" \
	"(f) the echo route's half-open connection still there ($((SECONDS - t0)) s after it)"
wait $HO
check_m 'ibgw_ib_connections_failed_total{reason="half_open"}' "$((ho0 + 1))" "(f) it ended at its deadline, counted half_open"
kill -USR1 $HOLD
wait $HOLD
check_m ibgw_ib_connections_active "1" "(f) only the victim's connection left"

# ---- (f2) the same after a reload changed the route: a half-open connection admitted on its older
# version holds a slot of the limit both versions share, and is the route's own to give up (it was
# thought another route's, and the full route refused every request for the 5 s of its deadline) ----
ho0=$(m 'ibgw_ib_connections_failed_total{reason="half_open"}')
$TOOLS/ib_badpeer -p 7472 -t 30000 "$IB" halfopen 1 8 >/tmp/ho2.out 2>&1 &
HO=$!
m_is ibgw_ib_connections_half_open 1
r0=$(m 'ibgw_config_reloads_total{result="ok"}')
sed -i 's/^\[route full\]$/[route full]\nidle_timeout = 10m/' /tmp/ibgw.conf
kill -HUP "$GW_PID"
m_is 'ibgw_config_reloads_total{result="ok"}' $((r0 + 1))
check "[ $? = 0 ] && grep -q '^idle_timeout = 10m' /tmp/ibgw.conf" "(f2) reloaded with route full changed (its half-open connection on the older version)"
# (the half-open one still there, within the 5 s before its deadline: else it would make room by itself)
check "[ \$(m ibgw_ib_connections_half_open) = 1 ] && [ \$(m 'ibgw_ib_connections_failed_total{reason=\"half_open\"}') = $ho0 ]" \
	"(f2) the half-open connection still there after the reload"
t0=$SECONDS
out=$(timeout 60 $TOOLS/ib_badpeer -p 7472 -t 30000 "$IB" hold 1 1 2>&1 | tr '\n' ' ')
check "echo '$out' | grep -q 'held 1' && [ $((SECONDS - t0)) -lt 5 ]" \
	"(f2) a request to the full route got in at once ($((SECONDS - t0)) s), in the slot of the half-open one ($out)"
check_m 'ibgw_ib_connections_failed_total{reason="half_open"}' "$((ho0 + 1))" "(f2) the half-open one displaced, counted half_open"
wait $HO
HO=

# ---- (g) messages after the end: the peer ends in order both ways (DISCONNECT), so the gateway closes
# its end, but the session holds the stream while its TCP side is open (the server never closes), and
# the queue pair with it. Nothing checks what the peer sends then but the costless window: past it no
# receive is posted again, so the peer's writes wait in RNR (hurting it alone) ----
eth_bg "$PY3" -c "
import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', 5009))
s.listen(4)
c, _ = s.accept()
time.sleep(300)"
SRV=$ETH_BG_PID
eth_wait_listen 5009
v0=$(m 'ibgw_ib_protocol_violations_total{worker="0",reason="message"}') ok0=$(closed ok)
rm -f /tmp/go2
timeout 150 $TOOLS/ib_badpeer -p 7473 -t 30000 "$IB" postclose /tmp/go2 >/tmp/pc.out 2>&1 &
PC=$!
for _ in $(seq 300); do
	grep -q '^postclose: open' /tmp/pc.out && [ -n "$(eth_ns ss -Htn state established '( sport = :5009 )')" ] && break
	sleep 0.1
done
check "[ -n \"\$(eth_ns ss -Htn state established '( sport = :5009 )')\" ]" "(g) the session's TCP side connected to the server"
touch /tmp/go2
wait $PC
rc=$?
PC=
out=$(tr '\n' ' ' </tmp/pc.out)
cr=$(sed -n 's/.*open, credits \([0-9]*\).*/\1/p' /tmp/pc.out)
n=$(sed -n 's/.*stopped after \([0-9]*\) .*/\1/p' /tmp/pc.out)
# the window's 100 (twice, across the turn of its second), then the receives already posted: the
# credits + 4, and the rest of a post of 16
check "[ $rc = 0 ] && [ -n \"$n\" ] && [ -n \"$cr\" ] && [ $n -le $((200 + ${cr:-0} + 4 + 16)) ]" \
	"(g) the gateway stopped taking messages after the end ($out)"
check_m 'ibgw_ib_protocol_violations_total{worker="0",reason="message"}' "$((v0 + 1))" \
	"(g) counted as a protocol violation (message)"
check "[ \$(closed ok) = $((ok0 + 1)) ]" "(g) the connection had ended in order (closed ok), once"
check "[ \$(m 'ibgw_route_sessions_active{route=\"tcp\"}') = 1 ]" "(g) its session still held for its TCP side"
kill $SRV 2>/dev/null # the server's end closes: the session ends, the stream is let go
check_m 'ibgw_route_sessions_active{route="tcp"}' "0" "(g) the session ended with its TCP side"
check_m ibgw_ib_connections_active "1" "(g) only the victim's connection left"

# ---- the victim, all along ----
check "kill -0 $GW_PID" "ibgwd alive"
kill -USR1 $VICTIM
wait $VICTIM
rc=$?
VICTIM=
check "[ $rc = 0 ] && grep -q '^ok .*sent=3145728 recv=3145728 ' /tmp/victim.out" \
	"the victim's session through all of it: 3 MB echoed intact, SHA-256 ($(grep '^ok\|^FAIL' /tmp/victim.out | cut -c1-70))"
ib_done
