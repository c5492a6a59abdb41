# The host half of a test whose checks run in the soft-RoCE test VM (source it from bash, cwd = project
# root; the in-VM half is a guest_*.sh script):
#
#   vm_test WHAT ARGS...   skips the test (exit 77) without root or qemu, else runs tests/vm/run ARGS
#                          (VM_* variables as tests/vm/run reads them), prints "PASS: WHAT" or
#                          "FAIL: exit N" and exits with tests/vm/run's status; VM_TEST_NEEDS (paths
#                          under the project) must be built first, else the test fails at once
vm_test() {
	local what=$1 rc
	shift
	[ "$(id -u)" = 0 ] || { echo "SKIP: the VM testbed needs root"; exit 77; }
	command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 missing"; exit 77; }
	for t in ${VM_TEST_NEEDS:-}; do
		[ -x "$t" ] || { echo "FAIL: $t not built (make check builds it)"; exit 1; }
	done
	tests/vm/run "$@"
	rc=$?
	[ $rc = 0 ] && echo "PASS: $what" || echo "FAIL: exit $rc"
	exit $rc
}
