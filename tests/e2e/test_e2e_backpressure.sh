#!/bin/bash
# End to end, slow receivers in the soft-RoCE VM: a slow kernel TCP reader behind an outbound route
# stalls the rsocket sender (credits withheld), a slow rsocket reader behind an inbound route closes
# the TCP window; memory stays within the configured buffers; every byte arrives (sha256).
# In-VM half: guest_backpressure.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "SKIP: the VM testbed needs root"; exit 77; }
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 missing"; exit 77; }
VM_DPDK_PMDS='net_af_packet mempool_ring' VM_ENV='E2E_BP_SIZE E2E_STALL' \
	tests/vm/run -T loop -t 240 -f tests/e2e/guest_backpressure.sh
rc=$?
[ $rc = 0 ] && echo "PASS: end-to-end backpressure" || echo "FAIL: exit $rc"
exit $rc
