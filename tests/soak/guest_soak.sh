#!/bin/bash
# In-VM half of tests/soak/run (`make soak`): ibgwd between the rxe "cluster" and a namespace "world"
# with kernel TCP peers (tests/e2e/guest_lib.sh), the far-end servers, then tests/soak/soak.py for
# SOAK_MINUTES, then ibgwd drained (SIGTERM) and its exit checked.
#
# ibgwd is the release build, not the ASan one the e2e tests use: the soak judges ibgwd's memory by its
# RSS, which ASan's quarantine and shadow memory would swamp. SOAK_IBGWD=asan runs the ASan build
# instead (memory errors reported; RSS is then printed but not judged: the quarantine alone grows it
# by megabytes a minute under this load).
set -u
cd "$(dirname "$0")/../.."
if [ "${SOAK_IBGWD:-release}" = asan ]; then
	IBGWD=$PWD/${BUILD:-build}/asan/ibgwd
	export SOAK_RSS_SLOPE=${SOAK_RSS_SLOPE:-inf}
else
	IBGWD=$PWD/${BUILD:-build}/release/ibgwd
fi
IBGWD_FORCE=1
. tests/e2e/guest_lib.sh
SOAK_DIR=${SOAK_DIR:?}
mkdir -p "$SOAK_DIR"
GW_LOG=$SOAK_DIR/ibgwd.log # on the host's disk (9p), not in the guest's tmpfs
export IB ETH_NS ETH_GW_IP ETH_PEER_IP ETH_PEER STATS TOOLS SOAK_DIR

# every session's end (reason, bytes, TCP retransmits and RTT, IB credit stalls) for a post-mortem of
# failed ones: access.log beside the other logs
GW_EXTRA="access_log = $SOAK_DIR/access.log"
e2e_start "$(python3 tests/soak/soak.py routes)"
# the far ends: a TCP echo server and a slow TCP sink (both hash what they receive), and one rsocket
# echo server per in_rs route (each serves one connection at a time)
bg tsrv npeer tcp-serve 5000 "$SOAK_DIR/far-tsrv.log"
bg tsink npeer tcp-sink 5003 "$SOAK_DIR/far-tsink.log" --rate "${SOAK_SLOW_RATE:-262144}"
logs="tsrv=$SOAK_DIR/far-tsrv.log tsink=$SOAK_DIR/far-tsink.log"
pids="tsrv=${PIDS[tsrv]} tsink=${PIDS[tsink]}"
for k in 0 1 2 3; do
	bg "rs$k" peer rs-serve "$IB" $((7600 + k)) "$SOAK_DIR/far-rs$k.log"
	logs="$logs rs$k=$SOAK_DIR/far-rs$k.log"
	pids="$pids rs$k=${PIDS[rs$k]}"
done
wait_for "grep -q listening $T/tsrv.out && grep -q listening $T/tsink.out && grep -q listening $T/rs0.out &&
	grep -q listening $T/rs1.out && grep -q listening $T/rs2.out && grep -q listening $T/rs3.out" 60 ||
	fail "the far-end servers did not start"

GW_PID=$GW_PID CONF=/tmp/ibgw.conf SRV_LOGS=$logs SRV_PIDS=$pids "$PY3" tests/soak/soak.py run
rc=$?
check "[ $rc = 0 ]" "soak: every completed transfer intact, every failure explained, RSS flat, ibgwd alive"
for n in tsrv tsink rs0 rs1 rs2 rs3; do
	[ -s "$T/$n.out" ] && grep -v '^listening' "$T/$n.out" | head -5 | sed "s/^/    far-end $n: /"
done
e2e_done
