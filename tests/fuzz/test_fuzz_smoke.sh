#!/usr/bin/env bash
# Runs every fuzz target briefly (FUZZ_SMOKE_SECONDS, default 4 s each) over its seed corpus: a crash,
# leak or sanitizer report fails the test. `make fuzz` runs them longer.
# Each target is one single-threaded process: as many run at once as there are CPUs
# (FUZZ_SMOKE_JOBS), so each still gets a CPU of its own for its seconds; the output stays in the
# targets' order.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
secs=${FUZZ_SMOKE_SECONDS:-4}
jobs=${FUZZ_SMOKE_JOBS:-$(nproc)}
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; wait; rm -rf "$out"' EXIT
names=()
for f in "$BUILD"/fuzz/fuzz_*; do
	[ -x "$f" ] || continue
	name=$(basename "$f")
	seeds=tests/fuzz/corpus/$name
	while [ "$(jobs -pr | wc -l)" -ge "$jobs" ]; do wait -n; done
	names+=("$name")
	(
		work=$(mktemp -d)
		"$f" -max_total_time="$secs" -max_len=4096 -timeout=5 "$work" ${seeds:+$( [ -d "$seeds" ] && echo "$seeds")} >"$out/$name.log" 2>&1
		echo $? >"$out/$name.rc"
		rm -rf "$work"
	) &
done
wait
[ ${#names[@]} -gt 0 ] || { echo "no fuzz targets built in $BUILD/fuzz"; exit 1; }
for name in "${names[@]}"; do
	echo "== $name for ${secs}s"
	if [ "$(cat "$out/$name.rc" 2>/dev/null)" != 0 ]; then
		tail -40 "$out/$name.log"
		echo "FAIL: $name"
		exit 1
	fi
	grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs)' "$out/$name.log" | tail -1
done
echo "ok: ${#names[@]} fuzz target(s) ran ${secs}s each without a finding"
