#!/bin/bash
# nginx, Debian's stock web server, on the Ethernet side of ibgwd in the soft-RoCE VM, both ways, at the
# default buffers: as the origin that rsocket clients fetch files from (cluster -> world), and as a
# reverse proxy whose upstream is an rsocket HTTP service behind ibgwd (world -> cluster), fetched by
# curl. Every body is checked byte for byte (SHA-256). In-VM half: guest_nginx.sh.
# timeout: 400
set -u
cd "$(dirname "$0")/../.."
command -v nginx >/dev/null || { echo "SKIP: no nginx (Debian package nginx-light; make deps installs it)"; exit 77; }
. tests/lib/vm_test.sh
VM_TEST_NEEDS=build/release/tools/rs_http VM_DPDK_PMDS='net_af_packet mempool_ring' \
	vm_test "nginx both ways through ibgwd" -T loop -t 340 -f tests/e2e/guest_nginx.sh
