#!/usr/bin/env bash
# Memory benchmark (issue #14): the buffer bytes one session is budgeted, as ibgwd itself accounts
# them (`ibgwd -t` prints each route's "up to N MiB" of buffers, max_sessions x the session's
# buffers: the figure memory_limit is checked against, the IB buffer sets are allocated and
# registered at (conf_route_ib_copy_bytes: tests/e2e/guest_lend.sh checks the registered bytes) and
# the DPDK-memory arena is sized by), against the four buffers of a copying relay (ib_rbuf + ib_sbuf +
# tcp_rbuf + tcp_sbuf at the route's sizes).
# Target: a relay session of each direction holds two buffers instead of four, <= 0.5x. A route
# between IB and TCP ("relays by reference") holds its two receive buffers and none of its send
# buffers (what cannot be lent, small or out-of-order TCP segments, a PROXY header, is copied into
# frames of the port's pool, a fixed pool of its own size: conf.h): the line splits the budget into
# the two receive buffers and what comes beyond them, whose share of the send buffers is printed too
# (0.00 by reference; 1.00 by copy).
# The routes keep the defaults a user gets (no buffer key set); max_sessions = 1024 only makes the
# printed MiB figure exact to 1 KiB per session, and memory_limit = 8G only makes room for the three
# routes' 3 x 1024 sessions (neither changes a buffer's size). Takes well under a second; no root, no VM.
# Exits non-zero only when ibgwd could not check the configuration or its summary could not be read.
set -u
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build}
make -s "$BUILD/release/ibgwd" >/dev/null || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/ibgw.conf" <<'EOF'
[gateway]
memory_limit = 8G
[eth]
vdev = net_null0
address = 198.18.0.1/24
[ib]
bind = 198.19.0.1
[route ib_to_eth]
listen = ib:7460
connect = tcp:198.18.0.2:5001
max_sessions = 1024
[route eth_to_ib]
listen = tcp:9000
connect = ib:198.19.0.2:7480
max_sessions = 1024
[route eth_to_eth]
listen = tcp:8000
connect = tcp:198.18.0.2:5001
max_sessions = 1024
EOF
"$BUILD/release/ibgwd" -t -c "$tmp/ibgw.conf" >"$tmp/summary" 2>&1 || {
	cat "$tmp/summary"
	echo "BENCH memory: FAIL (ibgwd -t rejected the configuration)"
	exit 1
}
grep -E '^  (ib_to_eth|eth_to_ib|eth_to_eth) ' "$tmp/summary"
rc=0
for r in ib_to_eth eth_to_ib eth_to_eth; do
	line=$(grep -E "^  $r " "$tmp/summary")
	# "... max 1024 sessions, buffers ib 128K/128K tcp 256K/256K, relays by reference (copies in
	# frames: ib 16K, tcp 8K at most), ..., up to 384 MiB"
	re='max ([0-9]+) sessions, buffers ib ([0-9.]+[KMG]?)/([0-9.]+[KMG]?) tcp ([0-9.]+[KMG]?)/([0-9.]+[KMG]?), relays by ([a-z]+) [(]([^)]*)[)],.*up to ([0-9]+) MiB'
	if [[ $line =~ $re ]]; then
		n=${BASH_REMATCH[1]}
		read -r ibr ibs tcr tcs < <(numfmt --from=iec "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "${BASH_REMATCH[4]}" "${BASH_REMATCH[5]}" | tr '\n' ' ')
		how=${BASH_REMATCH[6]}
		mib=${BASH_REMATCH[8]}
	else
		echo "BENCH memory $r: FAIL (cannot read ibgwd's summary line: $line)"
		rc=1
		continue
	fi
	# a copying relay: ib rbuf + sbuf and the TCP connection's rbuf + sbuf (a tcp -> tcp relay: two
	# TCP connections, four TCP buffers; it has no IB side to lend from, so it is only reported)
	if [ "$r" = eth_to_eth ]; then
		four=$((2 * (tcr + tcs))) two=$((2 * tcr)) sends=$((2 * tcs))
	else
		four=$((ibr + ibs + tcr + tcs)) two=$((ibr + tcr)) sends=$((ibs + tcs))
	fi
	awk -v r="$r" -v mib="$mib" -v n="$n" -v four="$four" -v two="$two" -v sends="$sends" -v how="$how" 'BEGIN {
		per = mib * 1048576 / n; ratio = per / four; rest = per - two
		v = r == "eth_to_eth" ? "(report)" : "(target <= 0.5: " (ratio <= 0.5 ? "met" : "MISSED") ")"
		side = how == "reference" ? "beyond them" : "send buffers"
		printf "BENCH memory per session %s: by %s, budgeted %.0f KiB = receive buffers %.0f KiB + %s %.0f KiB (%.2f of the send buffers); four buffers %.0f KiB, ratio %.2f %s\n", r, how, per / 1024, two / 1024, side, rest / 1024, rest / sends, four / 1024, ratio, v
	}'
done
exit $rc
