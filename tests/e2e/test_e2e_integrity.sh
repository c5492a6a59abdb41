#!/bin/bash
# End to end, both route kinds (outbound ib -> tcp, inbound tcp -> ib) in the soft-RoCE VM: 100 MB
# each way through each, sha256 checked at both ends; 200 concurrent sessions, 100 each way, each
# verified; per-route metrics (sessions, bytes, connect latency) match. In-VM half: guest_integrity.sh.
# timeout: 600
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
VM_DPDK_PMDS='net_af_packet mempool_ring' VM_ENV='E2E_SIZE E2E_CONC E2E_CONC_BYTES E2E_MAX_WRITES_PER_MB' \
	vm_test "end-to-end integrity" -T loop -t 540 -f tests/e2e/guest_integrity.sh
