#!/bin/bash
# End to end under faults, in the soft-RoCE VM: netem loss/duplication/delay/reordering on the
# Ethernet link during transfers both ways; a TCP server and an rsocket client killed mid-stream; the
# destinations of both route kinds refusing or silent, counted by reason. In-VM half: guest_faults.sh.
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "SKIP: the VM testbed needs root"; exit 77; }
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 missing"; exit 77; }
VM_DPDK_PMDS='net_af_packet mempool_ring' VM_ENV='E2E_FAULT_SIZE' \
	tests/vm/run -T loop -t 240 -f tests/e2e/guest_faults.sh
rc=$?
[ $rc = 0 ] && echo "PASS: end-to-end faults" || echo "FAIL: exit $rc"
exit $rc
