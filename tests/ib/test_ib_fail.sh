#!/bin/bash
# IB connections that fail or are refused for local reasons or a broken handshake, in the soft-RoCE VM
# (loop topology, with the Ethernet side for active opens): no route to an ib:HOST destination
# (failed unreachable), an rsocket server whose accept carries bad private data (failed protocol),
# IB buffers that cannot be registered (ibgwd without CAP_IPC_LOCK under a small RLIMIT_MEMLOCK:
# failed resources for an active open, rejected resources for a connect request), and a client that
# answers the gateway's accept with a REJ (failed accept). Each one: the exact counter deltas (every
# other IB counter unchanged), the connection freed, a session in progress intact (SHA-256), ibgwd
# alive and serving. In-VM half: tests/ib/guest_fail.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "SKIP: the VM testbed needs root"; exit 77; }
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 missing"; exit 77; }
for t in build/release/tools/rs_peer build/release/tools/ib_badpeer build/release/ibgwd; do
	[ -x "$t" ] || { echo "FAIL: $t not built (make check builds it)"; exit 1; }
done
VM_DPDK_PMDS='net_af_packet mempool_ring' tests/vm/run -T loop -t 240 -f tests/ib/guest_fail.sh
rc=$?
[ $rc = 0 ] && echo "PASS: IB connection failures and refusals by reason" || echo "FAIL: exit $rc"
exit $rc
