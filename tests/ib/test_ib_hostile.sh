#!/bin/bash
# Hostile IB peers against ibgwd, in the soft-RoCE VM (loop topology), with a raw-verbs client
# (tests/tools/ib_badpeer.c) on valid connections to an echo route: (a) RDMA writes with the key of
# its own closed connection while a victim session holds that connection's old buffers; (b) writes
# with the key of its other, concurrent connection; (c) a zero-length DATA message claiming 64 KiB
# after a tenant left 64 KiB of markers in the ring; (d) an SGL message granting impossible credits,
# an absurd buffer advert, and floods of messages that cost their sender nothing (keepalives, credit
# updates that grant nothing, a repeated end of stream, empty data, buffer adverts no byte earned),
# and credit updates wrapping the edge round from a peer of 0xFFFE credits; (e) 1000 connect requests
# whose accept is never answered; (f) requests to a full route, (f2) also after a reload changed it
# (a half-open connection of its older version gives up its slot); (g) keepalives back to back after an
# orderly end, on a connection a session still holds for its TCP side (a server in a namespace behind
# ibgwd's af_packet port). Each: the gateway refuses it (remote access error / reset / nothing stale
# relayed / half-open connections within max_sessions and memory_limit, expired at the deadline and
# counted / no receive posted past the costless window), legitimate clients served meanwhile, the
# victim's 3 MB echo intact (SHA-256), ibgwd alive, a clean drain.
# In-VM half: tests/ib/guest_hostile.sh.
# timeout: 560
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
# (the release ibgwd: its check (e) holds RSS growth under a flood within memory_limit, which ASan's
# quarantine and shadow memory would swamp; test_ib_fail and test_e2e_faults run ASan in the VM)
VM_TEST_NEEDS='build/release/tools/rs_peer build/release/tools/ib_badpeer build/release/ibgwd' \
	VM_DPDK_PMDS='net_af_packet mempool_ring' \
	vm_test "IB side against hostile peers" -T loop -t 480 -f tests/ib/guest_hostile.sh
