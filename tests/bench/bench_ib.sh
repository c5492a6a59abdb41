#!/bin/bash
# IB side benchmark, in the soft-RoCE VM (one run, ratios side by side; see tests/ib/guest_bench.sh):
# an rsocket client sending to ibgwd's discard route vs the same client sending to a receiver on
# librdmacm's own rsocket, same device, same sizes (target ratio >= 1.0); and 64-byte round-trip
# latency through the echo route vs rstream's own server and an rsocket echo. Run twice: with the
# default [gateway] idle_sleep (100us: a napping worker) and with 0 (busy polling).
# Env: BENCH_BYTES (64M), BENCH_REPS (3), BENCH_SIZES ("65536 4096"), BENCH_TOPO (loop).
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "SKIP: the VM testbed needs root"; exit 77; }
make -s build/release/ibgwd build/release/tools/rs_peer >/dev/null || exit 1
rc=0
for idle in 100us 0; do
	echo "=== [gateway] idle_sleep = $idle"
	BENCH_IDLE_SLEEP=$idle VM_ENV='BENCH_IDLE_SLEEP BENCH_BYTES BENCH_REPS BENCH_SIZES' VM_DPDK_PMDS='mempool_ring' \
		tests/vm/run -T "${BENCH_TOPO:-loop}" -t 900 -f tests/ib/guest_bench.sh || rc=1
done
exit $rc
