#!/bin/bash
# rdma-core's own rstream client against ibgwd's echo route, in the soft-RoCE VM, on both topologies
# (loop: one rxe device for both ends; pair: two rxe devices over a veth pair, traffic crosses the
# link), at the same time. Small (64 B), large (1 MiB) and odd-sized transfers with rstream's data
# verification, and its 64-byte latency test. In-VM half: tests/ib/guest_rstream.sh.
# timeout: 400
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "SKIP: the VM testbed needs root"; exit 77; }
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 missing"; exit 77; }
logs=$(mktemp -d /tmp/test_ib_rstream.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$logs"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for topo in loop pair; do
	VM_DPDK_PMDS='mempool_ring' tests/vm/run -T $topo -t 300 -f tests/ib/guest_rstream.sh >"$logs/$topo" 2>&1 &
	pids+=($!)
done
rc=0 i=0
for topo in loop pair; do
	wait "${pids[$i]}" || rc=1
	i=$((i + 1))
	echo "== topology $topo"
	cat "$logs/$topo"
done
pids=()
[ $rc = 0 ] && echo "PASS: rstream against the echo route on loop and pair" || echo "FAIL: see above"
exit $rc
