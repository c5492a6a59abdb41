#!/bin/bash
# ibgwd unprivileged in the soft-RoCE VM: started as root with `[gateway] user = ibgw`, it switches user
# before DPDK starts and every one of its threads keeps only the capabilities its port needs
# (checked in /proc/PID/task/*/status: uid, gid, no_new_privs, effective/permitted/bounding sets), while
# transfers through both route kinds (sha256 at both ends), concurrent new IB connections and TCP
# sessions, and a SIGHUP reload that adds an IB listener below 1024 keep working. In-VM half:
# guest_unpriv.sh. The same on virtio_user/vhost-net (CAP_NET_ADMIN only; the user reaches
# /dev/vhost-net and /dev/net/tun through its group), by hand:
#   VM_DPDK_PMDS='net_virtio mempool_ring bus_vdev' VM_ENV=ETH_LINK ETH_LINK=vhost \
#   tests/vm/run -T loop -f tests/e2e/guest_unpriv.sh
# timeout: 420
set -u
cd "$(dirname "$0")/../.."
. tests/lib/vm_test.sh
VM_DPDK_PMDS='net_af_packet mempool_ring' VM_ENV='E2E_SIZE E2E_CONC E2E_CONC_BYTES' \
	vm_test "ibgwd unprivileged, end to end" -T loop -t 400 -f tests/e2e/guest_unpriv.sh
