#!/bin/bash
# tests/vm/test_vm_smoke.sh: smoke test of the soft-RoCE VM testbed (issue 3).
#
# On the host: builds tests/vm/cm_probe.c into build/vm-smoke/, makes sure the VM image is current
# (tests/vm/mkimage), then boots one VM per topology (loop, pair) running tests/vm/smoke_guest.sh:
# rxe devices active, rstream with data verification, cm_probe (rdma_cm + RC SEND/RECV) verified,
# on pair that traffic crossed the veth; on loop also python3, tests/net/netns.sh with netem, and
# DPDK's EAL with every PMD of the image.
# Exit: 0 all passed, 77 skipped (not root: a prerequisite that cannot be met), else failure.
set -eu
set -o pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: the VM testbed needs root (9p shares, device nodes)"
	exit 77
fi
ms() { echo $(($(date +%s%N) / 1000000)); }
T0=$(ms)

OUT=build/vm-smoke
mkdir -p "$OUT"
echo "== build cm_probe on the host"
cc -O2 -g -Wall -Wextra -Werror -o "$OUT/cm_probe" tests/vm/cm_probe.c -lrdmacm -libverbs
echo "== VM image (tests/vm/mkimage build/vm)"
tests/vm/mkimage "${VM_IMAGE_DIR:-build/vm}"
T1=$(ms)

failed=''
for topo in loop pair; do
	extra=''
	[ $topo = loop ] && extra=extra
	echo "== VM, topology $topo"
	t0=$(ms)
	rc=0
	tests/vm/run -T $topo -t "${VM_TIMEOUT:-120}" -f tests/vm/smoke_guest.sh "$OUT/cm_probe" $extra || rc=$?
	echo "== topology $topo: exit $rc in $((($(ms) - t0) / 1000)).$(printf %03d $((($(ms) - t0) % 1000))) s"
	[ $rc = 0 ] || failed="$failed $topo(exit $rc)"
done

echo "== total $((($(ms) - T0) / 1000)) s (build + image check $(((T1 - T0) / 1000)) s)"
if [ -n "$failed" ]; then
	echo "FAIL: VM smoke test failed on:$failed (logs: build/vm-logs/)"
	exit 1
fi
echo "PASS: VM smoke test"
