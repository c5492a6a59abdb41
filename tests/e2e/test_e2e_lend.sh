#!/bin/bash
# End to end, the IB -> Ethernet direction by reference (issue #14), in the soft-RoCE VM: the TCP send
# queue holds references into the IB receive ring, so the IB peer gets its credits back only as the
# TCP peer acknowledges (checked while the TCP peer hears nothing: what the IB peer could send beyond
# what the TCP peer got stays within the receive ring), retransmissions read the ring again (loss on
# the link, sha256 of every byte at the far end), nothing is copied; sessions reset with references
# in flight, both ways, twice each: no crash, every buffer set back in its pool, nothing held. Then
# the same with 2 workers: concurrent sessions on both, credits per worker under a black-out, sha256
# of every byte, resets with references in flight on each worker.
# In-VM halves: guest_lend.sh (1 worker), guest_lend_workers.sh (2 workers).
# timeout: 480
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
# the ASan+UBSan ibgwd in the VM: sessions reset with references in flight
export IBGW_VM_ASAN=1
VM_DPDK_PMDS='net_af_packet mempool_ring' VM_ENV='E2E_LEND_SIZE E2E_LEND_LOOPS' \
	vm_test "end-to-end lending" -T loop -t 440 'bash tests/e2e/guest_lend.sh && bash tests/e2e/guest_lend_workers.sh'
