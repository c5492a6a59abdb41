#!/bin/bash
# End to end under faults, in the soft-RoCE VM: netem loss/duplication/delay/reordering on the
# Ethernet link during transfers both ways; a TCP server and an rsocket client killed mid-stream; the
# destinations of both route kinds refusing or silent, counted by reason. In-VM half: guest_faults.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
# the ASan+UBSan ibgwd in the VM: these peers misbehave, which is where memory errors would hide
export IBGW_VM_ASAN=1
VM_DPDK_PMDS='net_af_packet mempool_ring' VM_ENV='E2E_FAULT_SIZE' \
	vm_test "end-to-end faults" -T loop -t 240 -f tests/e2e/guest_faults.sh
