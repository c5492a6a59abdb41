#!/usr/bin/env bash
# Runs every fuzz target briefly (FUZZ_SMOKE_SECONDS, default 4 s each) over its seed corpus: a crash,
# leak or sanitizer report fails the test. `make fuzz` runs them longer.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
secs=${FUZZ_SMOKE_SECONDS:-4}
n=0
for f in "$BUILD"/fuzz/fuzz_*; do
	[ -x "$f" ] || continue
	name=$(basename "$f")
	seeds=tests/fuzz/corpus/$name
	work=$(mktemp -d)
	echo "== $name for ${secs}s"
	if ! "$f" -max_total_time="$secs" -max_len=4096 -timeout=5 "$work" ${seeds:+$( [ -d "$seeds" ] && echo "$seeds")} >"$work.log" 2>&1; then
		tail -40 "$work.log"
		rm -rf "$work" "$work.log"
		echo "FAIL: $name"
		exit 1
	fi
	grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs)' "$work.log" | tail -1
	rm -rf "$work" "$work.log"
	n=$((n + 1))
done
[ $n -gt 0 ] || { echo "no fuzz targets built in $BUILD/fuzz"; exit 1; }
echo "ok: $n fuzz target(s) ran ${secs}s each without a finding"
