#!/bin/bash
# PROXY protocol v2 on an ib: listener in the soft-RoCE VM: the header a TCP backend gets carries the
# rsocket client's address and port, the listener's, the session uid, the route, and the client's GID
# and QPN (checked against the kernel's own QP table). In-VM half: guest_proxy.sh. The tcp: listener
# cases (HAProxy both ways, malformed and late headers) run on the host: tests/eth/test_proxy_protocol.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
VM_TEST_NEEDS=build/release/tools/rs_peer VM_DPDK_PMDS='net_af_packet mempool_ring' \
	vm_test "end-to-end PROXY protocol v2 from an IB listener" -T loop -t 240 -f tests/e2e/guest_proxy.sh
