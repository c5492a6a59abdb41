#!/bin/bash
# Active IB opens (routes to ib:HOST:PORT), in the soft-RoCE VM: a kernel TCP client in a namespace
# -> ibgwd's DPDK port (af_packet on a veth) -> rsocket connect -> ibgwd's own IB echo route -> back,
# 4 MB verified with half-close both ways; a destination with no listener (refused, counted) and one
# that does not answer (connect_timeout, counted). In-VM half: tests/ib/guest_tcp2ib.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "SKIP: the VM testbed needs root"; exit 77; }
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 missing"; exit 77; }
VM_DPDK_PMDS='net_af_packet mempool_ring' tests/vm/run -T loop -t 240 -f tests/ib/guest_tcp2ib.sh
rc=$?
[ $rc = 0 ] && echo "PASS: TCP -> IB routes" || echo "FAIL: exit $rc"
exit $rc
