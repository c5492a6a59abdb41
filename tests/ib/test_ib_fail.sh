#!/bin/bash
# IB connections that fail or are refused for local reasons or a broken handshake, in the soft-RoCE VM
# (loop topology, with the Ethernet side for active opens): no route to an ib:HOST destination
# (failed unreachable), an rsocket server whose accept carries bad private data (failed protocol),
# IB buffers that cannot be registered (ibgwd without CAP_IPC_LOCK under a small RLIMIT_MEMLOCK:
# failed resources for an active open, rejected resources for a connect request), and a client that
# answers the gateway's accept with a REJ (failed accept). Each one: the exact counter deltas (every
# other IB counter unchanged), the connection freed, a session in progress intact (SHA-256), ibgwd
# alive and serving. Last, the RDMA device removed under ibgwd (`rdma link delete`): seen, said at
# error level, the IB routes not ready (/health 503), the kernel's removal waiting for ibgwd and done
# once it exits. In-VM half: tests/ib/guest_fail.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
# the ASan+UBSan ibgwd in the VM: these peers misbehave, which is where memory errors would hide
export IBGW_VM_ASAN=1
VM_TEST_NEEDS='build/release/tools/rs_peer build/release/tools/ib_badpeer build/release/ibgwd build/asan/ibgwd' \
	VM_DPDK_PMDS='net_af_packet mempool_ring' \
	vm_test "IB connection failures and refusals by reason" -T loop -t 240 -f tests/ib/guest_fail.sh
