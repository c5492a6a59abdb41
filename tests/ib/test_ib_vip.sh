#!/bin/bash
# The IB side of two gateways sharing a VIP (#16), in the soft-RoCE VM: an IB listener on 0.0.0.0
# serves an address added to the device after start (keepalived's takeover) and stops when it goes;
# a session through a gateway that dies is lost; the next gateway serves new
# connections at once. In-VM half: tests/ib/guest_vip.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
VM_TEST_NEEDS='build/release/tools/rs_peer build/release/ibgwd' VM_DPDK_PMDS='mempool_ring' \
	vm_test "IB listener on a moving VIP" -T loop -t 240 -f tests/ib/guest_vip.sh
