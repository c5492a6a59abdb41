#!/bin/bash
# In-VM half of tests/e2e/test_e2e_reclaim.sh: copy buffers held by IB peers that take nothing.
#   talk  ib:7700 -> tcp:9200  a TCP server that sends small segments (200-byte writes, TCP_NODELAY),
#                              which the gateway copies into buffers of the frame pool to RDMA-write
# Hostile tenants (tests/tools/ib_badpeer.c hold: valid rsocket connections that grant 16 credits,
# then never return one) open sessions whose copies pile up in copy buffers until each holds its
# 16 KiB; enough of them hold the worker's whole share of the pool (an eighth of it). The checks:
#   - below the share, nothing is reclaimed, however long the peers stall (no pressure, no reset);
#   - past it, a stock rsocket client on the same route still gets its bytes, intact, within
#     seconds (of the hostile connections, the one whose peer has taken nothing longest, 5 s at
#     least, is reset),
#     where the stall limit (2 minutes) would have kept it waiting;
#   - the resets are counted (ib_connections_closed_total{reason="reclaimed"}, sessions ended
#     credit_stall_timeout), ibgwd lives, and the pool comes back to rest once the peers are gone.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/guest_lib.sh
# bytes the TCP server sends on each connection: more than a hostile peer's 16 credits can take (its
# ring: 256 KiB), so its session always has copies left waiting; 1500 small segments
SIZE=300000
# A pool of 2047 frames (8191 in the other tests, 16383 by default): its copy share, an eighth, is
# reached with some 40 hostile sessions, which a TCG VM opens and feeds in seconds; the share, the
# reclaim and its age are the same at every pool size.
export ETH_MBUFS=2047

e2e_start "$(gw_routes <<EOF
talk	ib:7700	tcp:$ETH_PEER_IP:9200
EOF
)"
# small segments stay small: no autocorking of the writes into bigger segments (those would be lent
# frames, not copies)
eth_ns sysctl -qw net.ipv4.tcp_autocorking=0 || fail "cannot turn autocorking off in the namespace"
bg tk npeer tcp-talk 9200 "$T/tk.log" "$SIZE"
wait_for "grep -q listening $T/tk.out" 30 || fail "the talker did not start"
active() { m 'ibgw_route_sessions_active{route="talk"}'; }
mbufs() { m 'ibgw_port_mbufs_in_use{port="0"}'; }
reclaimed() { closed reclaimed; }
waits() { m 'ibgw_ib_copy_waits_total{worker="0"}'; }
idle=$(mbufs)
# the worker's share: an eighth of the pool (one worker); each hostile session holds 8 buffers
pool=$(sed -n 's/^mbufs = //p' /tmp/ibgw.conf)
share=$((pool / 8))
fill=$((share / 8 + 16))
few=$((share / 8 / 2))
echo "    pool $pool mbufs: copy share $share buffers, $few sessions below it, $fill past it"

# ---- below the share: peers that stall for longer than the reclaim age lose nothing ----
bg h1 "$TOOLS/ib_badpeer" -p 7700 -t 30000 "$IB" hold "$few" 300
wait_for "grep -q '^held' $T/h1.out" 120 || fail "hold: $(cat "$T/h1.out")"
check "grep -q '^held $few ' $T/h1.out && wait_for '[ \$(active) = $few ]' 30" \
	"$few hostile sessions open ($(cat "$T/h1.out"))"
sleep 7
echo "    7 s later: $(waits) copies waited, $(reclaimed) reclaimed, $(active) sessions, $(mbufs) mbufs in use"
[ "$(active)" = "$few" ] || curl -s http://127.0.0.1:$STATS/metrics | grep -E '^ibgw_(route|tcp_conn|ib_conn|session)' | grep -v ' 0$'
check "[ \$(reclaimed) = 0 ] && [ \$(waits) = 0 ] && [ \$(active) = $few ]" \
	"7 s later, below the share: no copy waited, none reclaimed, all $few still open"

# ---- past the share ----
bg h2 "$TOOLS/ib_badpeer" -p 7700 -t 30000 "$IB" hold $((fill - few)) 300
wait_for "grep -q '^held' $T/h2.out" 180 || fail "hold: $(cat "$T/h2.out")"
wait_for '[ $(waits) -gt 0 ]' 30
check "[ \$(waits) -gt 0 ]" "$fill hostile sessions: the worker's copy buffers ran out ($(waits) copies waited)"
t0=$(date +%s)
bg v "$TOOLS/rs_peer" -p 7700 -t 60 "$IB" recv
reap v
rc=$?
dt=$(($(date +%s) - t0))
echo "    honest client: $(cat "$T/v.out")"
sha=$(sed -n 's/.* recv=[0-9]* sha_sent=[0-9a-f]* sha_recv=\([0-9a-f]*\).*/\1/p' "$T/v.out")
check "[ $rc = 0 ] && grep -q '^ok .* recv=$SIZE ' $T/v.out && [ $dt -le 40 ]" \
	"an honest rsocket client got its $SIZE bytes past them, in $dt s"
check "[ -n '$sha' ] && grep -q '^conn out=$SIZE sha_out=$sha err=none' $T/tk.log" \
	"intact: the bytes the TCP server sent (sha256 $(echo "$sha" | cut -c1-12))"
n=$(reclaimed) ends=$(m 'ibgw_route_sessions_ended_total{route="talk",reason="credit_stall_timeout"}')
check "[ $n -ge 1 ] && [ $ends -ge $n ]" \
	"hostile connections reset for their copy buffers: $n reclaimed, $ends sessions ended credit_stall_timeout"

# ---- the hostile peers go: every session ends, the pool comes back to rest ----
kill -USR1 "${PIDS[h1]}" "${PIDS[h2]}" 2>/dev/null
reap h1
reap h2
check "wait_for '[ \$(active) = 0 ]' 60 && kill -0 $GW_PID" "every session ended, ibgwd alive"
check "wait_for '[ \$(mbufs) -le $((idle + 16)) ]' 30" \
	"the pool is back to rest: $(mbufs) mbufs in use (before: $idle)"
e2e_done
