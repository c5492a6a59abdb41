#!/bin/bash
# TCP over IPv6 on a port with offloads, in the test VM (the host kernel has no vhost-net): DPDK's
# virtio_user PMD on the kernel's vhost-net (ETH_LINK=vhost in tests/eth/lib.sh), the kernel peer on
# its tap in the namespace with IPv6. Checks that ibgwd takes the TCP checksum, TSO and LRO offloads for
# IPv6 too: 20 MB echoed through TSO frames out and merged (LRO) frames in, sha256 of every byte, the
# counters showing several segments a frame each way and no checksum or header error, and the kernel
# peer measuring 1428-byte segments both ways (MTU 1500 less IPv6, TCP and timestamps); then
# tests/eth/test_tcp6_integrity.sh on that link (link-local and IPv4 beside IPv6 on one listener, 300
# connections, half-close, resets). In-VM half: tests/eth/guest_vhost6.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
VM_TEST_NEEDS="build/release/ibgwd" VM_DPDK_PMDS='net_virtio mempool_ring bus_vdev' VM_ENV='ETH_V6_SIZE' \
	vm_test "TCP over IPv6 on virtio_user/vhost-net (offloads)" -T none -t 260 -f tests/eth/guest_vhost6.sh
