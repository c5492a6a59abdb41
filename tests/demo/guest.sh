#!/bin/bash
# The live demo (in-VM half of tests/demo/run; `make demo`). Runs ibgwd with conf/demo.conf between
#   the cluster: the soft-RoCE device (rxe0, $IB_ADDR_A = 198.19.0.1), where rsocket programs live, and
#   the world:   a network namespace "world" (198.18.0.2 and 198.18.0.200) behind a veth whose other end,
#                demo-gw, is ibgwd's DPDK port (af_packet PMD), with ordinary kernel TCP programs,
# and shows both route kinds carrying real traffic, every byte checked by sha256 at both ends:
#   cluster -> world  route web-out: an rsocket HTTP client fetches a file from a web server in the world
#   world -> cluster  route api-in:  curl in the world calls an rsocket service in the cluster
# then the allow list at work, a pool of two web servers failing over when one dies (health checks),
# the live /metrics, and a graceful drain. Exit 0 when all checks held.
#
# DEMO_SIZE (bytes fetched each way, default 16 MiB) tunes it. Outside the VM (DEMO_ON_HOST=1, see
# tests/demo/run) the same steps run on the host with IB_ADDR_A set to a real IB device's address.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
IBGWD=$GW_ROOT/${BUILD:-build}/release/ibgwd
TOOLS=$GW_ROOT/${BUILD:-build}/release/tools
SIZE=${DEMO_SIZE:-16777216}
IB=${IB_ADDR_A:-198.19.0.1}
STATS=9100
W=/tmp/ibgw-demo
nfail=0
pids=()
mkdir -p $W
GW_LOG=$W/ibgwd.log

cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	gw_cleanup
	ip netns del world 2>/dev/null
	ip link del demo-gw 2>/dev/null
}
trap cleanup EXIT

# bold step titles when a person watches (the VM's stdout is not a tty: ask the host's)
if [ -n "${DEMO_COLOR:-}" ]; then B=$'\e[1m' G=$'\e[32m' R=$'\e[31m' N=$'\e[0m'; else B= G= R= N=; fi
step() { printf '\n%s== %s%s\n' "$B" "$*" "$N"; }
say() { printf '   %s\n' "$*"; }
verdict() { # COND TEXT
	if eval "$1"; then printf '   %s[ok]%s %s\n' "$G" "$N" "$2"; else printf '   %s[FAILED]%s %s\n' "$R" "$N" "$2"; nfail=$((nfail + 1)); fi
}
ms() { date +%s%3N; }
rate() { awk -v b="$1" -v t="$2" 'BEGIN { t = t > 0 ? t : 1; printf "%.1f MB/s", b / t / 1000 }'; } # bytes, ms
wait_port() { # NS_CMD PORT: until something listens on PORT
	local i
	for i in $(seq 100); do $1 ss -ltn 2>/dev/null | grep -q ":$2 " && return 0; sleep 0.1; done
	return 1
}

step "The setup"
# the world: a namespace on a veth; ibgwd owns the other end through DPDK. `tx off` on the kernel end:
# af_packet would otherwise hand DPDK frames whose checksums the kernel never filled in.
ip netns add world
ip link add demo-gw type veth peer name world0 netns world
ip link set demo-gw up
ip -n world addr add 198.18.0.2/24 dev world0
ip -n world addr add 198.18.0.200/24 dev world0
ip -n world link set world0 up
ip -n world link set lo up
ip netns exec world ethtool -K world0 tx off >/dev/null
ethtool -K demo-gw tx off >/dev/null 2>&1
say "world:   namespace 'world', 198.18.0.2 and 198.18.0.200 on world0 <-veth-> demo-gw (ibgwd's DPDK port)"

head -c "$SIZE" /dev/urandom >$W/demo.bin
web_sum=$(sha256sum <$W/demo.bin | cut -c1-64)
(cd $W && exec ip netns exec world python3 -m http.server --bind 198.18.0.2 80) >$W/web.log 2>&1 &
pids+=($!)
wait_port "ip netns exec world" 80 || { echo "web server did not start"; exit 1; }
say "world:   a web server (python3 http.server) at 198.18.0.2:80 serving demo.bin, $SIZE bytes"

head -c 1048576 /dev/urandom >$W/pool.bin
pool_sum=$(sha256sum <$W/pool.bin | cut -c1-64)
pool_pids=()
for port in 8001 8002; do
	(cd $W && exec ip netns exec world python3 -m http.server --bind 198.18.0.2 $port) >$W/web$port.log 2>&1 &
	pids+=($!)
	pool_pids+=($!)
	wait_port "ip netns exec world" $port || { echo "web server $port did not start"; exit 1; }
done
say "world:   two more web servers at 198.18.0.2:8001 and :8002 (a pool), serving pool.bin, 1 MiB"

"$TOOLS/rs_http" serve "$IB:9001" >$W/api.log 2>&1 &
pids+=($!)
say "cluster: an rsocket HTTP service (tests/tools/rs_http, stock rsocket API) at $IB:9001"

conf=conf/demo.conf
if [ "$IB" != 198.19.0.1 ]; then # on real hardware: the same file with the device's address
	sed "s/198\.19\.0\.1/$IB/g; s|198\.19\.0\.0/16|$IB/32|" conf/demo.conf >$W/demo.conf
	conf=$W/demo.conf
fi
t0=$(ms)
gw_start "$conf"
gw_wait_ready $STATS 60
say "gateway: ibgwd -f -c $conf (pid $GW_PID), serving after $(($(ms) - t0)) ms; its routes:"
"$IBGWD" -t -c "$conf" 2>&1 | awk '/^routes:/ { f = 1; next } /^memory:/ { f = 0 } f' | sed 's/^ */            /'

step "Cluster -> world (route web-out): an rsocket client fetches a file from the world's web server"
say "rs_http get $IB:8080 /demo.bin   (rsocket to ibgwd, which opens TCP to 198.18.0.2:80)"
t0=$(ms)
"$TOOLS/rs_http" get "$IB:8080" /demo.bin >$W/fetched 2>$W/get.err
rc=$? dt=$(($(ms) - t0))
# the response body starts after the blank line ending the HTTP header
python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); sys.stdout.buffer.write(d[d.index(b"\r\n\r\n") + 4:])' \
	$W/fetched >$W/fetched.body 2>/dev/null
got=$(stat -c %s $W/fetched.body 2>/dev/null || echo 0)
got_sum=$(sha256sum <$W/fetched.body | cut -c1-64)
say "$(head -1 $W/fetched | tr -d '\r')  $got bytes in $dt ms ($(rate "$got" "$dt"))"
verdict "[ $rc = 0 ] && [ $got = $SIZE ] && [ $got_sum = $web_sum ]" \
	"sha256 of what the cluster received = the web server's file (${web_sum:0:16}...)"

step "World -> cluster (route api-in): curl in the world calls the cluster's rsocket service"
say "curl http://198.18.0.1:9000/hello   (TCP to ibgwd's DPDK port, which opens an rsocket to $IB:9001)"
hello=$(ip netns exec world curl -s -m 20 http://198.18.0.1:9000/hello)
say "answer: $hello"
verdict "[[ \$hello == 'hello from the cluster'* ]]" "the cluster's service answered through the gateway"
say "curl http://198.18.0.1:9000/bytes/$SIZE"
t0=$(ms)
ip netns exec world curl -s -m 120 -o $W/api.body "http://198.18.0.1:9000/bytes/$SIZE"
rc=$? dt=$(($(ms) - t0))
got=$(stat -c %s $W/api.body 2>/dev/null || echo 0)
got_sum=$(sha256sum <$W/api.body | cut -c1-64)
# the reference: the same bytes fetched from the service directly over rsocket, without the gateway
"$TOOLS/rs_http" get "$IB:9001" "/bytes/$SIZE" 2>/dev/null |
	python3 -c 'import sys; d = sys.stdin.buffer.read(); sys.stdout.buffer.write(d[d.index(b"\r\n\r\n") + 4:])' >$W/direct.body
ref_sum=$(sha256sum <$W/direct.body | cut -c1-64)
say "$got bytes in $dt ms ($(rate "$got" "$dt"))"
verdict "[ $rc = 0 ] && [ $got = $SIZE ] && [ $got_sum = $ref_sum ]" \
	"sha256 of what the world received = the service's bytes fetched directly over rsocket (${ref_sum:0:16}...)"

step "The allow list: api-in admits 198.18.0.0/25 only"
say "curl --interface 198.18.0.200 http://198.18.0.1:9000/hello"
denied=$(ip netns exec world curl -s -m 10 --interface 198.18.0.200 -o /dev/null -w '%{http_code}' \
	http://198.18.0.1:9000/hello 2>&1)
rejected=$(gw_metric $STATS 'ibgw_route_sessions_rejected_total{route="api-in",reason="acl"}')
say "curl: HTTP code $denied (000: no connection); ibgw_route_sessions_rejected_total{route=\"api-in\",reason=\"acl\"} $rejected"
verdict "[ '$denied' = 000 ] && [ '${rejected%.*}' -ge 1 ]" "198.18.0.200 refused and counted; 198.18.0.2 still served"

step "A pool with health checks (route web-pool): one of its two web servers dies"
pool_get() { # prints "ok" when one fetch of pool.bin through ib:8081 came back intact
	"$TOOLS/rs_http" get "$IB:8081" /pool.bin 2>/dev/null |
		python3 -c 'import sys, hashlib; d = sys.stdin.buffer.read(); d = d[d.index(b"\r\n\r\n") + 4:]; print("ok" if hashlib.sha256(d).hexdigest() == sys.argv[1] else "bad")' "$pool_sum" 2>/dev/null
}
bk() { gw_metric $STATS "ibgw_backend_$1{route=\"web-pool\",backend=\"198.18.0.2:$2\"$3}"; }
okn=0
for i in 1 2 3 4; do [ "$(pool_get)" = ok ] && okn=$((okn + 1)); done
s1=$(bk sessions_total 8001 "") s2=$(bk sessions_total 8002 "")
say "4 fetches of pool.bin through ib:8081: $okn intact; sessions per backend: 8001: $s1, 8002: $s2"
verdict "[ $okn = 4 ] && [ '$s1' = 2 ] && [ '$s2' = 2 ]" "round robin over both web servers, every fetch intact"
say "kill the web server on :8002; /metrics until ibgw_backend_up for it turns 0"
t0=$(ms)
kill "${pool_pids[1]}"
down=
for i in $(seq 100); do [ "$(bk up 8002 "")" = 0 ] && { down=$(($(ms) - t0)); break; }; sleep 0.05; done
say "backend 198.18.0.2:8002 down after ${down:-(never)} ms (fall 2 x check_interval 500 ms + check_timeout 400 ms, + the 100 ms tick; the emulated CPU of the VM adds its own)"
okn=0
for i in 1 2 3 4; do [ "$(pool_get)" = ok ] && okn=$((okn + 1)); done
n1=$(bk sessions_total 8001 "")
verdict "[ -n '$down' ] && [ $okn = 4 ] && [ '$n1' = 6 ]" "marked down by its checks; 4 more fetches all intact, all from :8001"
curl -s http://127.0.0.1:$STATS/metrics | grep -E '^ibgw_backend_(up|state|sessions_total|connect_failures_total|checks_total|check_seconds)\{route="web-pool"' |
	grep -v 'state="[a-z]*"} 0$' | sed 's/^/   /'

step "Live /metrics (route lines; the full text is at http://127.0.0.1:$STATS/metrics inside the VM)"
curl -s http://127.0.0.1:$STATS/metrics | grep -E '^ibgw_route_(sessions_(total|active|rejected_total|ended_total)|bytes_total|connect)' |
	grep -v ' 0$' | sed 's/^/   /'
curl -s http://127.0.0.1:$STATS/metrics |
	grep -E '^ibgw_(ib_connections_accepted_total|ib_bytes_total|tcp_connections_opened_total|tcp_segments_(in|out)_total|tcp_retransmits_total|uptime_seconds)' |
	sed 's/^/   /'
# (kept for the README's metrics reference, which tests/demo/test_demo.sh checks against it)
curl -s http://127.0.0.1:$STATS/metrics >"$GW_ROOT/${BUILD:-build}/demo-metrics.txt"
web=$(gw_metric $STATS 'ibgw_route_bytes_total{route="web-out",dir="eth_to_ib"}')
api=$(gw_metric $STATS 'ibgw_route_bytes_total{route="api-in",dir="ib_to_eth"}')
verdict "[ '${web%.*}' -ge $SIZE ] && [ '${api%.*}' -ge $SIZE ]" "the route byte counters account for both transfers"

step "Graceful stop: SIGTERM drains the sessions, then ibgwd exits"
gw_stop TERM 30
rc=$?
verdict "[ $rc = 0 ]" "ibgwd exited with status $rc"

echo
if [ $nfail = 0 ]; then
	printf '%sdemo: every check held: both routes carried %s bytes each way intact%s\n' "$B" "$SIZE" "$N"
else
	printf '%sdemo: %d check(s) failed; ibgwd log: %s%s\n' "$B" "$nfail" "$GW_LOG" "$N"
	tail -n 20 "$GW_LOG"
fi
[ $nfail = 0 ]
