#!/bin/bash
# tests/vm/test_vm_smoke.sh: smoke test of the soft-RoCE VM testbed (issue 3).
#
# On the host: builds tests/vm/cm_probe.c into build/vm-smoke/, makes sure the VM image is current
# (tests/vm/mkimage), then boots one VM per topology (loop and pair, at the same time: about half
# the wall time of one after the other, as a TCG guest spends much of its time waiting), each
# running tests/vm/smoke_guest.sh: rxe devices active, rstream with data verification, cm_probe
# (rdma_cm + RC SEND/RECV) verified, on pair that traffic crossed the veth; on loop also python3,
# tests/net/netns.sh with netem, and DPDK's EAL with every PMD of the image.
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

# The two VMs run at the same time (about half the wall time of one after the other: much of a
# TCG guest's time is spent waiting); each one's output is shown when both are done.
LOGS=$(mktemp -d /tmp/test_vm_smoke.XXXXXX)
declare -A PID T0 RC TOOK
cleanup() {
	local t
	for t in "${!PID[@]}"; do kill -TERM "${PID[$t]}" 2>/dev/null || true; done
	for t in "${!PID[@]}"; do wait "${PID[$t]}" 2>/dev/null || true; done
	rm -rf "$LOGS"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for topo in loop pair; do
	extra=''
	[ $topo = loop ] && extra=extra
	T0[$topo]=$(ms)
	tests/vm/run -T $topo -t "${VM_TIMEOUT:-120}" -f tests/vm/smoke_guest.sh "$OUT/cm_probe" $extra \
		>"$LOGS/$topo.out" 2>&1 &
	PID[$topo]=$!
done
while [ ${#PID[@]} -gt 0 ]; do
	sleep 0.2
	for topo in "${!PID[@]}"; do
		kill -0 "${PID[$topo]}" 2>/dev/null && continue
		rc=0
		wait "${PID[$topo]}" || rc=$?
		RC[$topo]=$rc
		TOOK[$topo]=$(($(ms) - T0[$topo]))
		unset "PID[$topo]"
	done
done
failed='' npass=0 nfail=0 counts=
for topo in loop pair; do
	took=${TOOK[$topo]}
	echo "== VM, topology $topo: exit ${RC[$topo]} in $((took / 1000)).$(printf %03d $((took % 1000))) s"
	cat "$LOGS/$topo.out"
	[ "${RC[$topo]}" = 0 ] || failed="$failed $topo(exit ${RC[$topo]})"
	counts=$(sed -n 's/^smoke \[.*\]: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$LOGS/$topo.out")
	if [ -n "$counts" ]; then
		npass=$((npass + ${counts% *}))
		nfail=$((nfail + ${counts#* }))
	fi
	# a VM that failed without reporting a failed check (crash, timeout) counts as one failure
	if [ "${RC[$topo]}" != 0 ] && { [ -z "$counts" ] || [ "${counts#* }" = 0 ]; }; then
		nfail=$((nfail + 1))
	fi
done

echo "== total $((($(ms) - T0) / 1000)) s (build + image check $(((T1 - T0) / 1000)) s)"
echo "vm_smoke: $npass passed, $nfail failed"
if [ -n "$failed" ]; then
	echo "FAIL: VM smoke test failed on:$failed (logs: build/vm-logs/)"
	exit 1
fi
echo "PASS: VM smoke test"
