#!/bin/bash
# Copy buffers held by IB peers that take nothing (hostile tenants withholding credits), in the
# soft-RoCE VM: past the worker's share of the frame pool, the holder whose peer has taken nothing
# longest (5 s at least) is reset, so an honest client on the same route gets its bytes in seconds,
# not after the stall limit; below the share nothing is reset. In-VM half: guest_reclaim.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
# resets of connections with copies in flight: the ASan+UBSan ibgwd (tests/ib/guest_lib.sh)
export IBGW_VM_ASAN=1
VM_DPDK_PMDS='net_af_packet mempool_ring' \
	vm_test "end-to-end copy-buffer reclaim" -T loop -t 240 -f tests/e2e/guest_reclaim.sh
