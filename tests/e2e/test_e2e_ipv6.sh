#!/bin/bash
# End to end over IPv6 on the Ethernet side (#16), in the soft-RoCE VM: a v6 client through an inbound
# route to the cluster and a cluster client to a v6 destination, every byte hashed; an IPv6 allow list;
# the access log's IPv6 addresses. In-VM half: guest_ipv6.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
# the ASan+UBSan ibgwd in the VM: the IPv6 paths end to end under the sanitizers
export IBGW_VM_ASAN=1
VM_DPDK_PMDS='net_af_packet mempool_ring' VM_ENV='E2E_SIZE6' \
	vm_test "end-to-end IPv6" -T loop -t 270 -f tests/e2e/guest_ipv6.sh
