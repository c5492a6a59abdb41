#!/bin/bash
# End to end admission and lifecycle in the soft-RoCE VM: allow lists and max_sessions + 1 on both
# route kinds, a SIGHUP that removes and adds routes under load, a SIGTERM drain (one session finishes,
# a stuck one is aborted at the timeout). In-VM half: guest_admin.sh.
# timeout: 360
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "SKIP: the VM testbed needs root"; exit 77; }
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 missing"; exit 77; }
VM_DPDK_PMDS='net_af_packet mempool_ring' VM_ENV='E2E_ADMIN_SIZE' \
	tests/vm/run -T loop -t 300 -f tests/e2e/guest_admin.sh
rc=$?
[ $rc = 0 ] && echo "PASS: end-to-end admission, reload, drain" || echo "FAIL: exit $rc"
exit $rc
