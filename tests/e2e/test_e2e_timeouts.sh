#!/bin/bash
# End to end in the soft-RoCE VM: the session limits on routes with an IB side (an IB peer that
# returns no credits, a TCP peer that never reads, an idle client), each counted by reason.
# In-VM half: guest_timeouts.sh. The TCP-only limits are tests/eth/test_timeouts.sh (host).
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
VM_DPDK_PMDS='net_af_packet mempool_ring' vm_test "end-to-end session limits" -T loop -t 240 -f tests/e2e/guest_timeouts.sh
