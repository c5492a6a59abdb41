#!/bin/bash
# In-VM half of tests/e2e/test_e2e_lend.sh, its second part: lending with 2 workers (guest_lend.sh
# runs one). The IB side gives each connection the least loaded worker, so connections opened one
# after the other while the earlier ones last alternate: 0, 1, 0, 1 (checked: each worker's IB bytes
# are exactly those of its sessions).
#   1. 4 concurrent rs_peer senders through 4 routes to 4 kernel TCP sinks, paced; once all relay,
#      the link towards the sinks goes black for a few seconds: on EACH worker, what its IB peers
#      sent beyond what their sinks received stays within their receive rings (credits only for
#      acknowledged bytes), and each worker withheld credits. Then 2% loss to the end: every sink's
#      SHA-256 is its sender's, each worker retransmitted and put its sessions' bytes into frames
#      without a copy (copied ib_to_eth = 0 per worker, af_packet takes lent memory).
#   2. Resets with references in flight on both workers: two stalled sessions at once (one per
#      worker, checked), their sink reset (TCP RST: the sessions abort the IB side); then two more,
#      their IB peers killed (the sessions abort the TCP side). Then no session or connection is left
#      on either worker, every IB buffer set is back in its pool (none kept for references, none
#      pointed at by a frame), and ibgwd drains and exits 0 (ASan where the image has it).
# Counters are summed over the workers where the check is about the gateway as a whole.
set -u
cd "$(dirname "$0")/../.."
export ETH_WORKERS=2 ETH_VDEV_EXTRA=,qpairs=2
. tests/e2e/guest_lib.sh
N=4
RBUF=131072 # [ib] rbuf_size's default (conf/ibgw.conf)
size() { echo $((1000000 + $1 * 100003)); } # a size per session: a sink that got another's bytes fails
mw() { m "ibgw_$1{worker=\"$2\"}"; }               # NAME WORKER
msum() { echo $(($(mw "$1" 0) + $(mw "$1" 1))); } # NAME: over both workers

routes=""
for i in $(seq 0 $((N - 1))); do
	routes+="out$i	ib:$((7100 + i))	tcp:$ETH_PEER_IP:$((5100 + i))
"
done
e2e_start "$(gw_routes <<EOF
$routes
stall	ib:7001		tcp:$ETH_PEER_IP:5001
EOF
)"
grep -qE 'offloads:.* lent-(dpdk-)?memory-tx' "$GW_LOG" && ext=1 || ext=0
for i in $(seq 0 $((N - 1))); do
	bg "sink$i" npeer tcp-sink $((5100 + i)) "$T/sink$i.log" --progress "$T/sink$i.got"
done
for i in $(seq 0 $((N - 1))); do
	wait_for "grep -q listening $T/sink$i.out" 30 || fail "sink $i did not start"
done

# the sinks' ingress through an ifb, paced (100 kbit/s, a short queue: the round trip stays short)
# until the black-out, so that every session still runs when it begins however slowly they start
eth_ns ip link add ifblw type ifb
eth_ns ip link set ifblw up
eth_ns tc qdisc add dev "$ETH_PEER" handle ffff: ingress
# SYNs pass unpaced: the queue is kept full by the sessions already running, and a later session's
# SYN tail-dropped at every retry would not connect within the test's minute (seen once in 3 runs);
# the u32 match reads TCP's flags byte of an IPv4 header without options (20 + 13)
eth_ns tc filter add dev "$ETH_PEER" parent ffff: prio 1 protocol ip u32 match ip protocol 6 0xff \
	match u8 0x02 0x02 at 33 action pass || fail "tc u32 filter"
eth_ns tc filter add dev "$ETH_PEER" parent ffff: prio 2 matchall action mirred egress redirect dev ifblw
eth_ns tc qdisc add dev ifblw root netem rate 100kbit limit 10 || fail "netem"

# ---- 1. concurrent sessions on both workers: credits follow the ACKs on each ----
rx0=$(msum tcp_retransmits_total)
for i in $(seq 0 $((N - 1))); do
	bg "snd$i" "$TOOLS/rs_peer" -t 200 -p $((7100 + i)) "$IB" send "$(size "$i")"
	# its bytes at the sink before the next one connects: its connection counts on its worker (the
	# least loaded), and its TCP connection is up before the black-out
	wait_for "[ -s $T/sink$i.got ]" 60 ||
		fail "session $i did not start (sender: $(tail -n 2 "$T/snd$i.out" 2>/dev/null); $(curl -s -m 20 "http://127.0.0.1:$STATS/metrics" | grep -E '^ibgw_(tcp_connections_opened|tcp_connect_failures|tcp_retransmits|ib_worker_connections|worker_sessions_active)' | tr '\n' ' '))"
done
check "[ \$(mw worker_sessions_active 0) = 2 ] && [ \$(mw worker_sessions_active 1) = 2 ]" \
	"$N concurrent sessions, 2 on each worker"
eth_ns tc qdisc change dev ifblw root netem loss 100% || fail "netem"
sleep 4 # the IB peers send all they are allowed meanwhile
got() { cat "$T/sink$1.got" 2>/dev/null || echo 0; }
declare -a g1 g2
for i in $(seq 0 $((N - 1))); do g1[i]=$(got "$i"); done
sleep 2
for i in $(seq 0 $((N - 1))); do g2[i]=$(got "$i"); done
still=1
for i in $(seq 0 $((N - 1))); do
	[ "${g1[i]}" = "${g2[i]}" ] && [ "${g2[i]}" -lt "$(size "$i")" ] || still=0
done
check "[ $still = 1 ]" "black-out: no sink receives anything meanwhile, none has all (${g2[*]})"
for w in 0 1; do
	ib=$(m "ibgw_ib_bytes_total{worker=\"$w\",dir=\"rx\"}")
	ahead=$((ib - g2[w] - g2[w + 2])) # sessions w and w + 2 are worker w's
	echo "    worker $w: its IB peers had sent $ib bytes, its sinks got $((g2[w] + g2[w + 2])): $ahead ahead (2 rings of $RBUF)"
	check "[ $ahead -gt 0 ] && [ $ahead -le $((2 * RBUF)) ]" \
		"black-out, worker $w: no credit for bytes the TCP peers did not acknowledge ($ahead <= 2 x $RBUF)"
	check "[ \$(mw ib_credit_withheld_total $w) -gt 0 ]" "black-out, worker $w: its IB peers waited for credits"
done
# a new qdisc: a change (or a replace) of netem would keep its rate
eth_ns tc qdisc del dev ifblw root
eth_ns tc qdisc add dev ifblw root netem loss 2% || fail "netem"
for i in $(seq 0 $((N - 1))); do
	reap "snd$i"
	rc=$?
	out=$(cat "$T/snd$i.out")
	sha=$(echo "$out" | sed -n 's/.* sha_sent=\([0-9a-f]*\).*/\1/p')
	check "[ $rc = 0 ] && [ -n \"$sha\" ] && wait_for 'log_has $T/sink$i.log 1' 20 && grep -q \"^conn in=$(size "$i") sha_in=$sha \" $T/sink$i.log" \
		"2% loss, session $i (worker $((i % 2))): the sink received exactly the sender's $(size "$i") bytes (sha256 $(echo "$sha" | cut -c1-12))"
done
eth_ns tc qdisc del dev ifblw root
eth_ns tc qdisc del dev "$ETH_PEER" ingress
eth_ns ip link del ifblw
for w in 0 1; do
	want=$(($(size "$w") + $(size $((w + 2)))))
	ci=$(m "ibgw_copied_bytes_total{dir=\"ib_to_eth\",worker=\"$w\"}") to=$(mw tcp_bytes_out_total "$w")
	echo "    worker $w: IB bytes in $(m "ibgw_ib_bytes_total{worker=\"$w\",dir=\"rx\"}") (its sessions: $want), TCP bytes out $to, copied ib_to_eth $ci, retransmits $(mw tcp_retransmits_total "$w")"
	check "[ \$(m 'ibgw_ib_bytes_total{worker=\"$w\",dir=\"rx\"}') = $want ]" "worker $w relayed exactly its 2 sessions' bytes"
	if [ $ext = 1 ]; then
		check "[ $ci = 0 ] && [ $to -ge $want ]" "worker $w: copied ib_to_eth = 0, $to bytes sent from the IB receive rings"
	else
		check "[ $ci = $to ]" "worker $w: copied ib_to_eth = the bytes put into frames only (the port takes no lent memory)"
	fi
done
check "[ $(($(msum tcp_retransmits_total) - rx0)) -gt 0 ]" "the TCP side retransmitted lent bytes ($(($(msum tcp_retransmits_total) - rx0)))"
check "wait_for '[ \$(msum worker_sessions_active) = 0 ]' 20" "the $N sessions ended"

# ---- 2. resets with references in flight, on both workers ----
last=0
for round in 1 2; do
	bg st npeer tcp-sink 5001 "$T/st.log" --stall 60 --rcvbuf 65536
	wait_for "grep -q listening $T/st.out" 30 || fail "stalled sink did not start"
	bg ls0 "$TOOLS/rs_peer" -t 60 -p 7001 "$IB" send 50000000
	wait_for "[ \$(mw worker_sessions_active 0) = 1 ]" 30
	bg ls1 "$TOOLS/rs_peer" -t 60 -p 7001 "$IB" send 50000000
	wait_for "route_stuck stall" 30 || echo "    (round $round: the transfers never stopped)"
	last=$(m 'ibgw_route_bytes_total{route="stall",dir="ib_to_eth"}')
	check "[ \$(mw worker_sessions_active 0) = 1 ] && [ \$(mw worker_sessions_active 1) = 1 ] && [ \$(mw tcp_send_lent_bytes 1) -gt 0 ]" \
		"round $round: a stalled session on each worker, worker 1's send queue holding references"
	if [ $round = 1 ]; then
		stop st # the TCP peer resets both: the sessions abort the IB side
		reap ls0
		reap ls1
	else
		stop ls0 # the IB peers die: the sessions abort the TCP side
		stop ls1
		stop st
	fi
	wait_for "[ \$(m 'ibgw_route_sessions_active{route=\"stall\"}') = 0 ]" 30 || echo "    (round $round: sessions still active)"
done
check "curl -sf -m 10 http://127.0.0.1:$STATS/health >/dev/null" "after 4 resets in flight: ibgwd alive"
check "[ \$(m 'ibgw_route_sessions_total{route=\"stall\"}') = 4 ] && [ \$(m 'ibgw_route_sessions_active{route=\"stall\"}') = 0 ]" \
	"4 stalled sessions, none left"
wait_for "[ \$(m ibgw_ib_connections_active) = 0 ] && [ \$(m ibgw_ib_buffer_bytes) = \$(m ibgw_ib_buffer_idle_bytes) ]" 20
echo "    IB buffers: $(m ibgw_ib_buffer_bytes) registered, $(m ibgw_ib_buffer_idle_bytes) idle, $(m ibgw_ib_buffer_lent_sets) kept for references; TCP buffers $(mw tcp_buffer_bytes 0) + $(mw tcp_buffer_bytes 1)"
check "[ \$(m ibgw_ib_connections_active) = 0 ] && [ \$(msum tcp_connections_active) = 0 ]" "no IB or TCP connection left on either worker"
check "[ \$(m ibgw_ib_buffer_bytes) = \$(m ibgw_ib_buffer_idle_bytes) ] && [ \$(m ibgw_ib_buffer_lent_sets) = 0 ]" \
	"every IB buffer set back in its pool, none kept for references"
check "[ \$(msum tcp_tx_mbufs_lent) = 0 ] && [ \$(msum tcp_buffer_bytes) = 0 ] && [ \$(msum tcp_send_lent_bytes) = 0 ]" \
	"no frame points into lent memory, no TCP buffer held, on either worker"
e2e_done
