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
max_sessions = 8
[route one]
listen = ib:7474
connect = echo
max_sessions = 1"

rss() { awk '/^VmRSS:/ {print $2 * 1024}' /proc/$GW_PID/status; }
# resident memory of the verbs queues (queue pair rings, completion queues): the provider maps them
# from the uverbs device
vq() { awk '/^[0-9a-f]+-[0-9a-f]+ / {u = /uverbs/} u && /^Rss:/ {s += $2} END {print s * 1024}' /proc/$GW_PID/smaps; }

# 0. memory: 100 connections held open (silent) against none
rss0=$(rss) vq0=$(vq) buf0=$(m ibgw_ib_buffer_bytes) st0=$(m ibgw_ib_connection_state_bytes)
$P "$IB_ADDR_B" idle 100 120 >/tmp/hold.out 2>&1 &
hp=$!
for _ in $(seq 600); do [ "$(m ibgw_ib_connections_active)" = 100 ] && break; kill -0 $hp 2>/dev/null || break; sleep 0.1; done
act=$(m ibgw_ib_connections_active) rss1=$(rss) vq1=$(vq) buf1=$(m ibgw_ib_buffer_bytes) st1=$(m ibgw_ib_connection_state_bytes)
regs=$(m ibgw_ib_buffer_registrations_total)
kill -USR1 $hp # measured: the idle connections close now
wait $hp
hrc=$?
sed 's/^/    /' /tmp/hold.out
per_buf=$(((buf1 - buf0) / 100)) per_st=$(((st1 - st0) / 100)) per_rss=$(((rss1 - rss0) / 100)) per_vq=$(((vq1 - vq0) / 100))
echo "    0 connections: RSS $rss0 B (verbs queues $vq0 B), registered buffers $buf0 B, connection state $st0 B"
echo "    $act connections: RSS $rss1 B (verbs queues $vq1 B), registered buffers $buf1 B, connection state $st1 B"
echo "    per connection: registered $per_buf B = configured rbuf 131072 + sbuf 131072 + 128 B (our target_sgl,"
echo "    4 control slots); state $per_st B; RSS $per_rss B, of which verbs queues $per_vq B, the rest $((per_rss - per_vq)) B"
check "[ $hrc = 0 ] && [ $act = 100 ]" "100 IB connections open at once, none closed while idle"
check "[ $((buf1 - buf0)) = $((100 * ONE_CONN)) ]" "registered memory grew by exactly 100 x the configured buffers"
check "[ $regs = 100 ]" "100 buffer sets registered"
# (8 KiB: about half of it is the ring of lent segments an Ethernet -> IB write sends from, IB_LENT_MAX)
check "[ $per_st -gt 0 ] && [ $per_st -le 8192 ]" "connection state besides the buffers: $per_st B each (<= 8 KiB)"
# RSS: the registered buffers are pinned, hence resident; besides them a connection owns its state
# and its page rounding; the verbs queues (provider rings, counted apart) come on top
check "[ $((per_rss - per_vq)) -ge $ONE_CONN ] && [ $((per_rss - per_vq)) -le $((ONE_CONN + 32768)) ]" "RSS per connection besides the verbs queues: $((per_rss - per_vq)) B, the buffers + at most 32 KiB"

# 1. bulk echo, verified both ways; the byte and message counters follow it exactly
W='worker="0"'
b_rx0=$(m "ibgw_ib_bytes_total{$W,dir=\"rx\"}") b_tx0=$(m "ibgw_ib_bytes_total{$W,dir=\"tx\"}")
m_rx0=$(m "ibgw_ib_messages_total{$W,dir=\"rx\"}") m_tx0=$(m "ibgw_ib_messages_total{$W,dir=\"tx\"}")
c_rx0=$(m "ibgw_ib_control_messages_total{$W,dir=\"rx\"}") c_tx0=$(m "ibgw_ib_control_messages_total{$W,dir=\"tx\"}")
out=$($P "$IB_ADDR_B" echo "$ECHO_BYTES")
echo "    $out"
check "echo \"\$out\" | grep -q '^ok '" "echo $ECHO_BYTES each way, sha256 equal both ways"
nb=$(echo "$out" | sed -n 's/.* sent=\([0-9]*\) .*/\1/p')
d_brx=$(($(m "ibgw_ib_bytes_total{$W,dir=\"rx\"}") - b_rx0)) d_btx=$(($(m "ibgw_ib_bytes_total{$W,dir=\"tx\"}") - b_tx0))
d_mrx=$(($(m "ibgw_ib_messages_total{$W,dir=\"rx\"}") - m_rx0)) d_mtx=$(($(m "ibgw_ib_messages_total{$W,dir=\"tx\"}") - m_tx0))
d_crx=$(($(m "ibgw_ib_control_messages_total{$W,dir=\"rx\"}") - c_rx0)) d_ctx=$(($(m "ibgw_ib_control_messages_total{$W,dir=\"tx\"}") - c_tx0))
echo "    counters: bytes rx $d_brx tx $d_btx, data messages rx $d_mrx tx $d_mtx, control messages rx $d_crx tx $d_ctx"
check "[ \"$d_brx\" = \"${nb:-x}\" ] && [ \"$d_btx\" = \"${nb:-x}\" ]" "bytes counted exactly, each way ($d_brx)"
check "[ $d_mrx -ge $((nb / 65536)) ] && [ $d_mrx -le $nb ] && [ $d_mtx -ge $((nb / 65536)) ] && [ $d_mtx -le $nb ]" "data messages counted each way (at most 64 KiB each)"
check "[ $d_crx -ge $((nb / 131072)) ] && [ $d_ctx -ge $((nb / 131072)) ]" "credit messages counted each way (one per half buffer at least)"

# 2. half-close: towards discard the client's SHUTDOWN is answered by the gateway's own (end of
#    stream with nothing back); towards echo (above) the client half-closed and kept receiving
out=$($P -p 7472 "$IB_ADDR_B" send 8M)
echo "    $out"
check "echo \"\$out\" | grep -q '^ok '" "half-close: 8M to discard, SHUTDOWN answered, end of stream"

# 3. many at once, again: the pooled buffers serve them, nothing new is registered
out=$($P "$IB_ADDR_B" conns 100 64K | grep -v '^ok conn=')
echo "    $out"
check "echo \"\$out\" | grep -q '^ok conns=100'" "100 concurrent echo connections, again"
check "[ \$(m 'ibgw_route_sessions_ended_total{route=\"echo\",reason=\"ok\"}') = 201 ]" "201 echo sessions ended ok (100 idle, 1 bulk, 100 concurrent)"
check "[ \$(m ibgw_ib_buffer_registrations_total) = 100 ]" "buffers reused from the pool: still 100 registrations"

# 4. a reader that stops reading: the gateway stops sending and holds no more than the buffers
w0=$(m 'ibgw_ib_credit_withheld_total{worker="0"}')
s0=$(m 'ibgw_ib_credit_stalls_total{worker="0"}')
k0=$(m 'ibgw_ib_keepalives_total{worker="0",dir="tx"}')
ws0=$(m ibgw_ib_credit_withheld_seconds_total) ss0=$(m ibgw_ib_credit_stall_seconds_total)
t_st=$(date +%s%N)
$P "$IB_ADDR_B" stall 2M 60 >/tmp/stall.out 2>&1 &
sp=$!
# wait until the gateway holds credits back and the client has filled what it was given (nothing
# arrived for 0.3 s), look, then end the stall (SIGUSR1) once it lasted 3 s at least
for _ in $(seq 50); do
	ra=$(m 'ibgw_ib_bytes_total{worker="0",dir="rx"}')
	sleep 0.3
	[ "$(m 'ibgw_ib_credit_withheld_total{worker="0"}')" -gt "$w0" ] && [ "$(m 'ibgw_ib_bytes_total{worker="0",dir="rx"}')" = "$ra" ] && break
done
used=$(($(m ibgw_ib_buffer_bytes) - $(m ibgw_ib_buffer_idle_bytes)))
rx1=$(m 'ibgw_ib_bytes_total{worker="0",dir="rx"}')
sleep 0.5
rx2=$(m 'ibgw_ib_bytes_total{worker="0",dir="rx"}')
while [ $((($(date +%s%N) - t_st) / 1000000)) -lt 3000 ]; do sleep 0.1; done
kill -USR1 $sp
wait $sp
src=$?
sed 's/^/    /' /tmp/stall.out | grep -v 'conn=0 sent=' ; grep '^ok\|^FAIL' /tmp/stall.out | sed 's/^/    /'
sent=$(sed -n 's/.*sent_while_stalled=\([0-9]*\).*/\1/p' /tmp/stall.out)
check "[ $src = 0 ]" "stalled reader: all 2M verified once it read again"
# what the client could push while not reading: our receive and send buffers, its own receive
# buffer (the echo fills it), 64K of slack for writes in flight
check "[ \"${sent:-99999999}\" -le $((131072 * 3 + 65536)) ]" "stalled reader: the client could send ${sent:-?} bytes, no more than the buffers"
check "[ $rx1 = $rx2 ]" "stalled reader: nothing arrives while the gateway withholds credits"
check "[ $used = $ONE_CONN ]" "stalled reader: the gateway holds exactly one connection's buffers ($used bytes)"
check "[ \$(m 'ibgw_ib_credit_withheld_total{worker=\"0\"}') -gt $w0 ]" "stalled reader: credit withholding counted"
check "[ \$(m 'ibgw_ib_credit_stalls_total{worker=\"0\"}') -gt $s0 ]" "stalled reader: credit stall counted"
# the client stopped reading for 3 s or more: the gateway held the echo without credits, and the client's
# writes waited for credits the gateway withheld, for most of that time
ws1=$(m ibgw_ib_credit_withheld_seconds_total) ss1=$(m ibgw_ib_credit_stall_seconds_total)
check "awk -v a=$ws1 -v b=$ws0 'BEGIN {exit !(a - b >= 1.5)}'" "stalled reader: credits withheld for $(awk -v a=$ws1 -v b=$ws0 'BEGIN {printf "%.1f", a - b}') s (>= 1.5 of the 3+ s)"
check "awk -v a=$ss1 -v b=$ss0 'BEGIN {exit !(a - b >= 1.5)}'" "stalled reader: data waited for credits $(awk -v a=$ss1 -v b=$ss0 'BEGIN {printf "%.1f", a - b}') s (>= 1.5 of the 3+ s)"
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
for mode in version short none garbage sgl depth; do
	out=$($TOOLS/ib_badpeer "$IB_ADDR_B" $mode 2>&1)
	rc=$?
	check "[ $rc = 0 ]" "bad private data ($mode): rejected ($out)"
done
check "[ \$(m 'ibgw_ib_connections_rejected_total{reason=\"version\"}') = 2 ]" "rejections counted: version (version, none)"
check "[ \$(m 'ibgw_ib_connections_rejected_total{reason=\"malformed\"}') = 4 ]" "rejections counted: malformed (short, garbage, sgl, depth)"
$P -p 7473 "$IB_ADDR_B" echo 1K >/dev/null 2>&1
rc=$?
check "[ $rc != 0 ]" "source outside the route's allow list: connect refused"
check "[ \$(m 'ibgw_ib_connections_rejected_total{reason=\"acl\"}') = 1 ]" "rejection counted: acl"
$P -p 7474 "$IB_ADDR_B" idle 1 60 >/tmp/one.out 2>&1 &
op=$!
for _ in $(seq 100); do [ "$(m 'ibgw_route_sessions_active{route="one"}')" = 1 ] && break; sleep 0.1; done
$P -p 7474 "$IB_ADDR_B" echo 1K >/dev/null 2>&1
rc=$?
kill -USR1 $op
wait $op
orc=$?
check "[ $rc != 0 ] && [ $orc = 0 ]" "route at max_sessions (1): a second connect refused, the first unharmed"
check "[ \$(m 'ibgw_ib_connections_rejected_total{reason=\"limit\"}') = 1 ]" "rejection counted: limit"
out=$($TOOLS/ib_badpeer "$IB_ADDR_B" keepalive 2>&1)
rc=$?
out=$(echo "$out" | tr '\n' ' ')
check "[ $rc = 0 ] && [ \$(m 'ibgw_ib_keepalives_total{worker=\"0\",dir=\"rx\"}') = 1 ]" "a CTRL KEEPALIVE message: received, counted, ignored ($out)"
e0=$(m "ibgw_ib_completion_errors_total{$W}") ce0=$(m "ibgw_ib_connections_closed_total{$W,reason=\"error\"}")
out=$($TOOLS/ib_badpeer "$IB_ADDR_B" badkey 2>&1)
rc=$?
out=$(echo "$out" | tr '\n' ' ')
for _ in $(seq 50); do [ "$(m "ibgw_ib_connections_closed_total{$W,reason=\"error\"}")" -gt "$ce0" ] && break; sleep 0.1; done
check "[ $rc = 0 ] && [ \$(m 'ibgw_ib_completion_errors_total{$W}') -gt $e0 ]" "a peer offering its buffer under a wrong key: the echo's write fails, completion error counted ($out)"
check "[ \$(m 'ibgw_ib_connections_closed_total{$W,reason=\"error\"}') = $((ce0 + 1)) ]" "and that connection closed as error"
check "kill -0 $GW_PID" "daemon alive"
out=$($P "$IB_ADDR_B" echo 1M)
check "echo \"\$out\" | grep -q '^ok '" "and still serving (echo 1M)"

# 7. keepalive: a peer that vanishes without a word. Killing its process is not that (the kernel
#    tears the queue pair down and rdma_cm sends a DREQ); a link that silently drops everything
#    is: no DISCONNECT, no DREQ, no error. The gateway's keepalive (1 s here) goes unacknowledged;
#    after 3 intervals the peer counts as gone. (The transport alone would never tell on rxe, which
#    retries forever with rsocket's retry_count 7.) The link comes back afterwards.
ka0=$(m "ibgw_ib_keepalives_total{$W,dir=\"tx\"}")
ck0=$(m "ibgw_ib_connections_closed_total{$W,reason=\"keepalive\"}")
rr0=$(m 'ibgw_route_sessions_ended_total{route="echo",reason="reset"}')
$P "$IB_ADDR_B" idle 1 150 >/tmp/ka.out 2>&1 &
kp=$!
for _ in $(seq 100); do [ "$(m ibgw_ib_connections_active)" = 1 ] && break; sleep 0.1; done
sleep 3.5
ka1=$(m "ibgw_ib_keepalives_total{$W,dir=\"tx\"}")
check "[ \$(m ibgw_ib_connections_active) = 1 ] && [ $((ka1 - ka0)) -ge 2 ] && [ \$(m 'ibgw_ib_connections_closed_total{$W,reason=\"keepalive\"}') = $ck0 ]" "idle connection on a healthy link: $((ka1 - ka0)) keepalives in 3.5 s, connection kept"
for dev in $IB_NETDEV_A $IB_NETDEV_B; do tc qdisc add dev "$dev" root netem loss 100%; done
t0=$(date +%s%N)
for _ in $(seq 300); do [ "$(m ibgw_ib_connections_active)" = 0 ] && break; sleep 0.1; done
dt=$((($(date +%s%N) - t0) / 1000000))
for dev in $IB_NETDEV_A $IB_NETDEV_B; do tc qdisc del dev "$dev" root 2>/dev/null; done
kill -KILL $kp 2>/dev/null
wait $kp 2>/dev/null
check "[ \$(m ibgw_ib_connections_active) = 0 ]" "vanished peer: found by keepalive and freed after $dt ms"
check "[ $dt -ge 2000 ]" "vanished peer: not before the keepalive timeout (3 intervals after the last acknowledged one)"
check "[ \$(m 'ibgw_ib_connections_closed_total{$W,reason=\"keepalive\"}') = $((ck0 + 1)) ]" "vanished peer: IB connection closed as keepalive"
check "[ \$(m 'ibgw_route_sessions_ended_total{route=\"echo\",reason=\"reset\"}') = $((rr0 + 1)) ]" "vanished peer: session ended as reset"
out=$($P "$IB_ADDR_B" echo 1M)
check "echo \"\$out\" | grep -q '^ok '" "link back: serving again (echo 1M)"

curl -s 127.0.0.1:$STATS/metrics | grep '^ibgw_ib_' | grep -v ' 0$' | sed 's/^/    /'
ib_done
