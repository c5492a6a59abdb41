#!/bin/bash
# Interop matrix: rdma-core's stock clients (rstream in blocking, non-blocking and async modes with
# data verification, rs_peer with SHA-256, riostream) against ibgwd at its default [ib] settings, on
# the echo route and a tcp route to a kernel echo server; routes with buffers smaller and larger than
# the client's; the echo's buffering bound at the defaults (strict backpressure). Pair topology: the
# rsocket traffic crosses the veth between two rxe devices. In-VM half: tests/ib/guest_interop.sh.
# timeout: 400
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
VM_TEST_NEEDS="${BUILD:-build}/release/tools/rs_peer" VM_DPDK_PMDS='net_af_packet mempool_ring' \
	vm_test "stock rsocket clients against ibgwd's defaults" -T pair -t 360 -f tests/ib/guest_interop.sh
