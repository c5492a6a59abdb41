#!/bin/bash
# In-VM half of tests/ib/test_ib_peer.sh: the project's rsocket peer (tests/tools/rs_peer.c, stock
# rsocket API) and a raw librdmacm client with bad private data against ibgwd.
#   ECHO_BYTES (default 100M): the big echo with SHA-256 both ways
set -u
cd "$(dirname "$0")/../.."
. tests/ib/guest_lib.sh
ECHO_BYTES=${ECHO_BYTES:-100M}
P="$TOOLS/rs_peer -t 200"
ONE_CONN=$((131072 + 131072 + 64 + 64)) # registered bytes of one connection: rbuf + sbuf + our target_sgl and control slots

ib_gw_start "[ib]
bind = $IB_ADDR_B
keepalive = 1s
[route echo]
listen = ib:7471
connect = echo
max_sessions = 128
[route discard]
listen = ib:7472
connect = discard
max_sessions = 8
[route closed]
listen = ib:7473
connect = echo
allow = 198.18.255.0/24
max_sessions = 8"

# 1. bulk echo, verified both ways
out=$($P "$IB_ADDR_B" echo "$ECHO_BYTES")
echo "    $out"
check "echo \"\$out\" | grep -q '^ok '" "echo $ECHO_BYTES each way, sha256 equal both ways"

# 2. half-close: towards discard the client's SHUTDOWN is answered by the gateway's own (end of
#    stream with nothing back); towards echo (above) the client half-closed and kept receiving
out=$($P -p 7472 "$IB_ADDR_B" send 8M)
echo "    $out"
check "echo \"\$out\" | grep -q '^ok '" "half-close: 8M to discard, SHUTDOWN answered, end of stream"

# 3. many at once
out=$($P "$IB_ADDR_B" conns 100 64K | grep -v '^ok conn=')
echo "    $out"
check "echo \"\$out\" | grep -q '^ok conns=100'" "100 concurrent echo connections"
check "[ \$(m 'ibgw_route_sessions_ended_total{route=\"echo\",reason=\"ok\"}') = 101 ]" "101 echo sessions ended ok"

# 4. a reader that stops reading: the gateway stops sending and holds no more than the buffers
w0=$(m 'ibgw_ib_credit_withheld_total{worker="0"}')
s0=$(m 'ibgw_ib_credit_stalls_total{worker="0"}')
k0=$(m 'ibgw_ib_keepalives_total{worker="0",dir="tx"}')
$P "$IB_ADDR_B" stall 8M 4 >/tmp/stall.out 2>&1 &
sp=$!
# wait until the gateway holds credits back (the client filled what it was given), then look
for _ in $(seq 40); do [ "$(m 'ibgw_ib_credit_withheld_total{worker="0"}')" -gt "$w0" ] && break; sleep 0.1; done
sleep 0.3
used=$(($(m ibgw_ib_buffer_bytes) - $(m ibgw_ib_buffer_idle_bytes)))
rx1=$(m 'ibgw_ib_bytes_total{worker="0",dir="rx"}')
sleep 0.5
rx2=$(m 'ibgw_ib_bytes_total{worker="0",dir="rx"}')
wait $sp
src=$?
sed 's/^/    /' /tmp/stall.out | grep -v 'conn=0 sent=' ; grep '^ok\|^FAIL' /tmp/stall.out | sed 's/^/    /'
sent=$(sed -n 's/.*sent_while_stalled=\([0-9]*\).*/\1/p' /tmp/stall.out)
check "[ $src = 0 ]" "stalled reader: all 8M verified once it read again"
# what the client could push while not reading: our receive and send buffers, its own receive
# buffer (the echo fills it), 64K of slack for writes in flight
check "[ \"${sent:-99999999}\" -le $((131072 * 3 + 65536)) ]" "stalled reader: the client could send ${sent:-?} bytes, no more than the buffers"
check "[ $rx1 = $rx2 ]" "stalled reader: nothing arrives while the gateway withholds credits"
check "[ $used = $ONE_CONN ]" "stalled reader: the gateway holds exactly one connection's buffers ($used bytes)"
check "[ \$(m 'ibgw_ib_credit_withheld_total{worker=\"0\"}') -gt $w0 ]" "stalled reader: credit withholding counted"
check "[ \$(m 'ibgw_ib_credit_stalls_total{worker=\"0\"}') -gt $s0 ]" "stalled reader: credit stall counted"
check "[ \$(m 'ibgw_ib_keepalives_total{worker=\"0\",dir=\"tx\"}') -gt $k0 ]" "keepalive sent on the idle connection"

check "[ \$(m 'ibgw_ib_completion_errors_total{worker=\"0\"}') = 0 ]" "no completion errors so far"

# 5. a peer killed mid-transfer: the session is freed, metrics show it
r0=$(m 'ibgw_route_sessions_ended_total{route="echo",reason="reset"}')
$P "$IB_ADDR_B" echo 1G >/dev/null 2>&1 &
kp=$!
for _ in $(seq 50); do [ "$(m 'ibgw_route_sessions_active{route="echo"}')" = 1 ] && break; sleep 0.1; done
sleep 1
kill -KILL $kp
wait $kp 2>/dev/null
for _ in $(seq 100); do [ "$(m ibgw_ib_connections_active)" = 0 ] && break; sleep 0.1; done
check "[ \$(m ibgw_ib_connections_active) = 0 ]" "killed peer: its IB connection is freed"
check "[ \$(m 'ibgw_route_sessions_active{route=\"echo\"}') = 0 ]" "killed peer: no session left"
check "[ \$(m 'ibgw_route_sessions_ended_total{route=\"echo\",reason=\"reset\"}') = $((r0 + 1)) ]" "killed peer: session ended as reset"
check "[ \$(m 'ibgw_ib_worker_connections{worker=\"0\"}') = 0 ]" "killed peer: the worker owns no connection"
check "[ \$(m ibgw_ib_buffer_bytes) = \$(m ibgw_ib_buffer_idle_bytes) ]" "killed peer: all buffers back in the pool"

# 6. bad private data and a disallowed source: rejected, counted, daemon alive
for mode in version short none garbage sgl; do
	out=$($TOOLS/ib_badpeer "$IB_ADDR_B" $mode 2>&1)
	rc=$?
	check "[ $rc = 0 ]" "bad private data ($mode): rejected ($out)"
done
check "[ \$(m 'ibgw_ib_connections_rejected_total{reason=\"version\"}') = 2 ]" "rejections counted: version (version, none)"
check "[ \$(m 'ibgw_ib_connections_rejected_total{reason=\"malformed\"}') = 3 ]" "rejections counted: malformed (short, garbage, sgl)"
$P -p 7473 "$IB_ADDR_B" echo 1K >/dev/null 2>&1
rc=$?
check "[ $rc != 0 ]" "source outside the route's allow list: connect refused"
check "[ \$(m 'ibgw_ib_connections_rejected_total{reason=\"acl\"}') = 1 ]" "rejection counted: acl"
check "kill -0 $GW_PID" "daemon alive"
out=$($P "$IB_ADDR_B" echo 1M)
check "echo \"\$out\" | grep -q '^ok '" "and still serving (echo 1M)"
curl -s 127.0.0.1:$STATS/metrics | grep '^ibgw_ib_' | grep -v ' 0$' | sed 's/^/    /'
ib_done
