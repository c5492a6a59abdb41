#!/bin/bash
# End to end on an Ethernet port with offloads, in the soft-RoCE VM: the integrity test (100 MB each way
# through both route kinds, 200 concurrent sessions, all verified by SHA-256) and the backpressure test
# (slow TCP reader stalls the rsocket sender, slow rsocket reader closes the TCP window, memory bounded,
# every byte delivered) and the faults test (netem loss, duplication, delay and reordering both ways:
# whole TSO frames get lost; peers killed; destinations down), with ibgwd's port on DPDK's virtio_user over the kernel's vhost-net
# (ETH_LINK=vhost: TCP checksum, TSO and LRO offloads) instead of af_packet.
# In-VM halves: guest_integrity.sh, guest_backpressure.sh and guest_faults.sh.
# timeout: 720
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
VM_DPDK_PMDS='net_virtio mempool_ring bus_vdev' VM_ENV='E2E_SIZE E2E_CONC E2E_CONC_BYTES E2E_BP_SIZE E2E_STALL E2E_FAULT_SIZE E2E_MAX_WRITES_PER_MB' \
	vm_test "end-to-end integrity, backpressure and faults on virtio_user/vhost-net" -T loop -t 660 \
	'export ETH_LINK=vhost; bash tests/e2e/guest_integrity.sh && bash tests/e2e/guest_backpressure.sh && bash tests/e2e/guest_faults.sh'
