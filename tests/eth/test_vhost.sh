#!/bin/bash
# The Ethernet engine on a port with offloads, in the test VM (the host kernel has no vhost-net):
# DPDK's virtio_user PMD on the kernel's vhost-net, its tap in the peer namespace (ETH_LINK=vhost in
# tests/eth/lib.sh). Checks that ibgwd takes the TCP checksum, TSO and LRO offloads, that merged
# (LRO) frames in and TSO frames out carry every byte (sha256 both ways, the integrity test's
# connections, half-closes and resets), that offloads = 0 still works on the same link, that an
# idle worker sleeping on the queue's RX interrupt eventfd is woken by a frame, and two workers on two
# queues (the workers test: steering between them).
# In-VM half: tests/eth/guest_vhost.sh.
# timeout: 400
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
VM_TEST_NEEDS="build/release/ibgwd" VM_DPDK_PMDS='net_virtio mempool_ring bus_vdev' \
	vm_test "Ethernet engine on virtio_user/vhost-net (offloads)" -T none -t 360 -f tests/eth/guest_vhost.sh
