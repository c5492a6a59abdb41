#!/bin/bash
# End to end on an Ethernet port with offloads, in the soft-RoCE VM: the integrity test (100 MB each way
# through both route kinds, 200 concurrent sessions, all verified by SHA-256) and the backpressure test
# (slow TCP reader stalls the rsocket sender, slow rsocket reader closes the TCP window, memory bounded,
# every byte delivered) and the faults test (netem loss, duplication, delay and reordering both ways:
# whole TSO frames get lost; peers killed; destinations down), with ibgwd's port on DPDK's virtio_user over the kernel's vhost-net
# (ETH_LINK=vhost: TCP checksum, TSO and LRO offloads) instead of af_packet. The IB buffer sets lie in
# DPDK's memory there (vhost-net reads no other), so IB -> Ethernet copies nothing either: the
# integrity test asserts ibgw_copied_bytes_total{dir="ib_to_eth"} = 0 with every set in DPDK's memory,
# and the lending test (guest_lend.sh) runs too: retransmissions over vhost-net read the receive ring
# again (sha256 at the sink, 0 copied), sessions reset with frames in flight, every set back in its pool.
# In-VM halves: guest_integrity.sh, guest_backpressure.sh, guest_faults.sh and guest_lend.sh.
# timeout: 840
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
# Smaller than the af_packet runs (make check's time): 20 MB each way, not guest_integrity's 100
# MB, and 50 concurrent sessions each way, not 100 (test_e2e_integrity moves those on af_packet
# already); 3 lending loops, not guest_lend.sh's 4, and an odd count on purpose: the last loop ends
# with the TCP peer resetting, after which ibgwd has nothing to send, while virtio_user frees sent
# frames only at a TX burst: the last frames pointing into a buffer set stay in its TX ring, and
# only the idle worker's reclaim (eth_port_tx_reclaim) gets the set back to its pool, which
# guest_lend.sh checks. This run's point is the offloads and the lent memory in DPDK's heap, which
# these exercise as well. (The backpressure stalls keep their 10 s: its samples, a /metrics scrape
# each, take seconds apiece under TCG on a loaded host.)
export E2E_SIZE=${E2E_SIZE:-20000000} E2E_CONC=${E2E_CONC:-50} E2E_LEND_LOOPS=${E2E_LEND_LOOPS:-3}
# DPDK's memory in hugepages here, with [eth] eal_args at its default (--no-pci --in-memory), as a
# production gateway has it: the IB buffer sets come from a heap that grows page by page; --no-huge
# with -m, the other way, is what test_vhost, test_vhost6 and the af_packet tests run
export ETH_EAL_ARGS=${ETH_EAL_ARGS:---no-pci --in-memory} E2E_HUGE=1 VM_HUGEPAGES=${VM_HUGEPAGES:-400}
VM_DPDK_PMDS='net_virtio mempool_ring bus_vdev' VM_ENV='E2E_SIZE E2E_CONC E2E_CONC_BYTES E2E_BP_SIZE E2E_STALL E2E_FAULT_SIZE E2E_MAX_WRITES_PER_MB E2E_LEND_SIZE E2E_LEND_LOOPS ETH_EAL_ARGS E2E_HUGE' \
	vm_test "end-to-end integrity, backpressure, faults and lending on virtio_user/vhost-net" -T loop -t 780 \
	'export ETH_LINK=vhost; bash tests/e2e/guest_integrity.sh && bash tests/e2e/guest_backpressure.sh && bash tests/e2e/guest_faults.sh && bash tests/e2e/guest_lend.sh'
