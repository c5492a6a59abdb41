#!/bin/bash
# End to end, slow receivers in the soft-RoCE VM: a slow kernel TCP reader behind an outbound route
# stalls the rsocket sender (credits withheld), a slow rsocket reader behind an inbound route closes
# the TCP window; memory stays within the configured buffers; every byte arrives (sha256).
# In-VM half: guest_backpressure.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
VM_DPDK_PMDS='net_af_packet mempool_ring' VM_ENV='E2E_BP_SIZE E2E_STALL' \
	vm_test "end-to-end backpressure" -T loop -t 240 -f tests/e2e/guest_backpressure.sh
