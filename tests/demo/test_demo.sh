#!/bin/bash
# The README's first command must keep working: runs the live demo (tests/demo/run, in the soft-RoCE
# VM) with 4 MiB transfers and requires every one of its checks (sha256 both ways, the allow list,
# the byte counters, a clean drain).
# timeout: 300
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" = 0 ] || { echo "SKIP: the demo needs root"; exit 77; }
out=$(DEMO_SIZE=4194304 tests/demo/run 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || { echo "FAIL: the demo exited $rc"; exit 1; }
n=$(grep -c '\[ok\]' <<<"$out")
grep -q '\[FAILED\]' <<<"$out" && { echo "FAIL: a demo check failed"; exit 1; }
[ "$n" -ge 6 ] || { echo "FAIL: only $n demo checks reported ok (expected 6)"; exit 1; }
grep -q '^demo: every check held' <<<"$out" || { echo "FAIL: no final verdict line"; exit 1; }

# the README's metrics reference lists exactly the families the demo's gateway exported
tests/lib/metrics_doc.py check README.md <"${BUILD:-build}/demo-metrics.txt" || { echo "FAIL: README metrics reference is stale"; exit 1; }
echo "PASS: the demo ran, $n checks held; README metrics reference current"
