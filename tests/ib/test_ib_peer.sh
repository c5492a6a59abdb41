#!/bin/bash
# The IB side against the project's own rsocket peer (tests/tools/rs_peer.c, the stock rsocket API)
# and a raw librdmacm client (tests/tools/ib_badpeer.c), in the soft-RoCE VM (pair topology: two rxe
# devices, traffic crosses a veth): memory with 100 connections open vs none (exactly the configured
# buffers plus ~2 KiB of state each, registered once and reused from the pool), 100 MB each way
# through echo with SHA-256 comparison and exact byte/message counters, half-close, 100 concurrent
# connections, a reader that stops reading (backpressure: the gateway holds exactly its buffers,
# withholds credits, counts stall and withheld time, sends keepalives), a peer killed mid-transfer
# (its session is freed: metrics show it), bad private data, a disallowed source and a full route
# (rejected, counted, daemon alive), a CTRL KEEPALIVE received, a peer vanishing behind a blackholed
# link (found by keepalive), then a clean drain. In-VM half: tests/ib/guest_peer.sh. ECHO_BYTES=10M
# for a quicker run.
# timeout: 500
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
export IBGW_ECHO_BYTES=${ECHO_BYTES:-100M}
VM_TEST_NEEDS='build/release/tools/rs_peer build/release/tools/ib_badpeer build/release/ibgwd' \
	VM_DPDK_PMDS='mempool_ring' VM_ENV='ECHO_BYTES' ECHO_BYTES=$IBGW_ECHO_BYTES \
	vm_test "IB side against rs_peer and ib_badpeer" -T "${VM_TOPO_IB:-pair}" -t 420 -f tests/ib/guest_peer.sh
