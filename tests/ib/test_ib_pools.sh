#!/bin/bash
# A pool of two rsocket services behind a tcp: listener, in the soft-RoCE VM: round robin, IB health
# checks, a killed service marked down and failed over, retries of refused IB connects, back up after
# rise checks, a reload from tcp: to ib: on the same address (no duplicate series in /metrics).
# In-VM half: tests/ib/guest_pools.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
VM_TEST_NEEDS="${BUILD:-build}/release/tools/rs_peer" VM_DPDK_PMDS='net_af_packet mempool_ring' \
	vm_test "IB pools" -T loop -t 240 -f tests/ib/guest_pools.sh
