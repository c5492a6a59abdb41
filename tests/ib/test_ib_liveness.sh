#!/bin/bash
# IB peers whose connections are alive or dead in ways rdma_cm does not tell, in the soft-RoCE VM (loop
# topology), with [ib] keepalive 200ms and a stock rsocket connection held idle throughout (kept): (a)
# a peer whose RTU never reaches the gateway but which sends at once (ib_badpeer datafirst: its own
# queue pair, moved to RTS on the accept): its data establishes the connection, which works past the
# handshake deadline and is never counted half-open; (b) a peer that posts no receive (ib_badpeer rnr:
# the gateway's messages wait in RNR for ever, its control slots all stuck, so no keepalive can go):
# dropped as keepalive within 2 s; (c) 100 connections one after another (ib_badpeer churn), more than
# a completion queue is sized for: their destroyed queue pairs' flushed receives come back as stale
# completions, dropped, and the CQ's room is promised again once they are (one CQ serves them all).
# Then the gateway still serves, the idle connection ends in order, ibgwd drains cleanly (ASan).
# In-VM half: tests/ib/guest_liveness.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
export IBGW_VM_ASAN=1
VM_TEST_NEEDS='build/release/tools/rs_peer build/release/tools/ib_badpeer build/release/ibgwd build/asan/ibgwd' \
	VM_DPDK_PMDS='mempool_ring' \
	vm_test "IB connections alive or dead behind rdma_cm's back" -T loop -t 240 -f tests/ib/guest_liveness.sh
