#!/bin/bash
# Ethernet -> IB without copies (issue #14), in the soft-RoCE VM: the lifetimes of frames lent to RDMA
# writes. Sessions reset while writes from frames are in flight (the rsocket server killed, the TCP
# client resetting), in a loop: ibgwd lives, every frame goes back to the pool, none is leaked; a
# peer of 1-byte segments pins no frame; a transfer's bytes are written from the frames, intact.
# In-VM half: guest_lent.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
# the lifetimes of frames under resets are what this test is for: the ASan+UBSan ibgwd (tests/ib/guest_lib.sh)
export IBGW_VM_ASAN=1
VM_DPDK_PMDS='net_af_packet mempool_ring' VM_ENV='E2E_LENT_ROUNDS' \
	vm_test "end-to-end lent frames" -T loop -t 240 -f tests/e2e/guest_lent.sh
