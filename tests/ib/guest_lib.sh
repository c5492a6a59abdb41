# Shared by the in-VM halves of tests/ib/test_*.sh (source it from bash, cwd = project root).
#   ib_gw_start CONF_TEXT   writes the config (with the [gateway]/[eth] lines every test needs
#                           prepended, plus $GW_EXTRA in [gateway], $GW_VDEV as [eth] vdev (default
#                           none) and $GW_ETH_EXTRA in [eth]) and starts ibgwd; waits until /health
#                           answers
#   m NAME                  one sample of /metrics (0 if absent)
#   closed REASON           worker 0's IB connections closed for REASON
#   m_is NAME VALUE / check_m NAME VALUE MSG
#                           wait for a sample's value (about 15 s) / a check of it
#   check COND MSG          counts an ok/FAIL line; summary and exit status come from ib_done
#   ib_done                 stops ibgwd (a check: drained, exit 0), runs the test's ib_after_stop if it
#                           defines one (checks of what follows the exit), prints the summary
# ibgwd is the release build, or the ASan+UBSan build where the host half asks for it with
# IBGW_VM_ASAN=1 (the tests of hostile and failing peers: sanitizers under TCG cost ~1.5-2x CPU, so the
# throughput tests stay on release to keep make check short). IBGWD_FORCE=1 keeps $IBGWD as set.
. tests/lib/ibgwd.sh
STATS=9100
TOOLS=${BUILD:-build}/release/tools
npass=0 nfail=0
chmod 755 / 2>/dev/null # older images had a world-writable root, which DPDK's EAL refuses
if [ -z "${IBGWD_FORCE:-}" ]; then
	if [ "${IBGW_VM_ASAN:-0}" != 1 ] || [ ! -x "$GW_ROOT/${BUILD:-build}/asan/ibgwd" ] ||
		ldd "$GW_ROOT/${BUILD:-build}/asan/ibgwd" 2>/dev/null | grep -q 'not found'; then
		IBGWD=$GW_ROOT/${BUILD:-build}/release/ibgwd
	fi
fi
GW_LOG=/tmp/ibgwd.log

# (each line ends with the script's elapsed seconds: where a slow test spends its time)
check() {
	if eval "$1"; then
		npass=$((npass + 1))
		echo "ok   - [$VM_TOPO] $2 [${SECONDS}s]"
	else
		nfail=$((nfail + 1))
		echo "FAIL - [$VM_TOPO] $2   ($1) [${SECONDS}s]"
	fi
}

m() { gw_metric $STATS "$1"; }
# worker 0's IB connections closed for REASON (ibgw_ib_connections_closed_total)
closed() { m "ibgw_ib_connections_closed_total{worker=\"0\",reason=\"$1\"}"; }
# m_is NAME VALUE: waits (about 15 s) until sample NAME equals VALUE; SEEN: the last value read
m_is() {
	local i
	for i in $(seq 30); do SEEN=$(m "$1"); [ "$SEEN" = "$2" ] && return 0; sleep 0.3; done
	return 1
}
# check_m NAME VALUE MSG: a check that sample NAME reaches VALUE (about 15 s)
check_m() {
	m_is "$1" "$2"
	check "[ $? = 0 ]" "$3 (saw $SEEN)"
}

ib_gw_start() {
	cat >/tmp/ibgw.conf <<CONF
[gateway]
workers = 1
stats = 127.0.0.1:$STATS
drain_timeout = 3s
${GW_EXTRA:-}
[eth]
vdev = ${GW_VDEV:-}
eal_args = --no-pci --no-huge -m 256
${GW_ETH_EXTRA:-}
$1
CONF
	gw_start /tmp/ibgw.conf
	gw_wait_ready $STATS 60
	echo "ibgwd: $(basename "$(dirname "$IBGWD")")/ibgwd, pid $GW_PID"
}

ib_done() {
	local rc
	gw_stop TERM 30
	rc=$?
	check "[ $rc = 0 ]" "ibgwd drained and exited 0 (sanitizers quiet)"
	# (a test's checks of what follows ibgwd's exit)
	! declare -F ib_after_stop >/dev/null || ib_after_stop
	if [ $nfail -gt 0 ]; then
		echo "--- ibgwd log (tail)"
		tail -n 30 $GW_LOG
	fi
	echo "ib [$VM_TOPO]: $npass passed, $nfail failed"
	[ $nfail = 0 ]
}
trap gw_cleanup EXIT
