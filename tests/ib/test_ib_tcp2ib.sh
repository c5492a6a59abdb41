#!/bin/bash
# Active IB opens (routes to ib:HOST:PORT), in the soft-RoCE VM: a kernel TCP client in a namespace
# -> ibgwd's DPDK port (af_packet on a veth) -> rsocket connect -> ibgwd's own IB echo route -> back,
# 4 MB verified with half-close both ways; a destination with no listener (refused, counted) and one
# that does not answer (connect_timeout, counted). In-VM half: tests/ib/guest_tcp2ib.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
VM_DPDK_PMDS='net_af_packet mempool_ring' vm_test "TCP -> IB routes" -T loop -t 240 -f tests/ib/guest_tcp2ib.sh
