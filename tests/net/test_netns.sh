#!/bin/bash
# tests/net/test_netns.sh: checks tests/net/netns.sh on the host, under both dash and bash:
# test hosts get their names, addresses and `tx off`; frames from a test host reach the DPDK-side
# veth end; background PIDs and namespaces are cleaned up on normal exit AND on SIGTERM; rate
# limits work in both directions; netem either works or reports 77 (this host kernel has none).
# Exit 0 pass, 77 skip (not root), 1 fail.
# concurrent: mostly waits (namespace set-up), little CPU
set -eu
set -o pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (network namespaces)"
	exit 77
fi
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   - $*"; }
bad() { fail=$((fail + 1)); echo "FAIL - $*"; }
TMP=$(mktemp -d /tmp/test_netns.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

cat >"$TMP/scenario.sh" <<EOF
set -eu
. "$HERE/netns.sh"
nt_host h1 198.18.0.2/24
nt_host h2 198.18.0.3/24 9000
echo "\$\$ \$h1_NS \$h1_IF \$h1_PEER \$h1_ADDR \$h1_MAC \$h2_IF" >"$TMP/names"
[ \${#h1_IF} -le 15 ] && [ \${#h1_PEER} -le 15 ]
nt_exec h1 ethtool -k "\$h1_PEER" | grep -q '^tx-checksumming: off'
[ "\$(nt_exec h2 cat /sys/class/net/\$h2_PEER/mtu)" = 9000 ]
nt_exec h1 ip -br addr show "\$h1_PEER" | grep -q 198.18.0.2/24
rx0=\$(cat /sys/class/net/\$h1_IF/statistics/rx_packets)
nt_exec h1 ping -c 1 -W 1 198.18.0.1 >/dev/null 2>&1 || true
[ \$(cat /sys/class/net/\$h1_IF/statistics/rx_packets) -gt \$rx0 ]
nt_bg h1 socat -t 30 TCP-LISTEN:5001,reuseaddr,fork EXEC:cat
echo \$NT_PID >"$TMP/pid"
nt_wait_tcp h1 5001 5
nt_rate h1 out 10mbit
nt_rate h1 in 10mbit
nt_exec h1 tc qdisc show | grep -q 'tbf.*dev nt[0-9]*i1'
nt_clear h1 out
set +e
nt_netem h1 out delay 1ms loss 1%
echo \$? >"$TMP/netem"
set -e
if ! nt_host bad 10.0.0.1/24 2>/dev/null; then echo refused >"$TMP/range"; fi
echo done >"$TMP/done"
if [ "\${1:-}" = wait ]; then sleep 60 & nt_track \$!; wait \$!; fi
exit 0
EOF

leftovers() { # $1: pid of the scenario shell
	ip netns list | grep -q "^nt$1-" && echo "namespaces" && return
	ip -br link | grep -q "^nt$1x" && echo "veths" && return
	[ -s "$TMP/pid" ] && kill -0 "$(cat "$TMP/pid")" 2>/dev/null && echo "socat" && return
	true
}

for sh in dash bash; do
	rm -f "$TMP/names" "$TMP/pid" "$TMP/done" "$TMP/netem" "$TMP/range"
	if $sh "$TMP/scenario.sh" >"$TMP/out" 2>&1 && [ -f "$TMP/done" ]; then
		ok "$sh: hosts, names <= 15 chars, tx off, MTU, address, frames reach the veth, listener, tbf both ways"
	else
		bad "$sh: scenario failed"
		sed 's/^/    /' "$TMP/out"
	fi
	pid=$(cut -d' ' -f1 "$TMP/names" 2>/dev/null || echo none)
	l=$(leftovers "$pid")
	if [ -z "$l" ]; then ok "$sh: nothing left after a normal exit"; else bad "$sh: $l left after exit"; fi
	case $(cat "$TMP/netem" 2>/dev/null) in
	0) ok "$sh: netem available and applied" ;;
	77) ok "$sh: netem unavailable in this kernel, reported as 77" ;;
	*) bad "$sh: nt_netem returned $(cat "$TMP/netem" 2>/dev/null)" ;;
	esac
	if [ "$(cat "$TMP/range" 2>/dev/null)" = refused ]; then ok "$sh: 10.0.0.1 refused"; else bad "$sh: 10.0.0.1 accepted"; fi

	# SIGTERM while running: the traps must clean up too
	rm -f "$TMP/names" "$TMP/pid" "$TMP/done"
	$sh "$TMP/scenario.sh" wait >"$TMP/out" 2>&1 &
	spid=$!
	for _ in $(seq 100); do [ -f "$TMP/done" ] && break; sleep 0.1; done
	kill -TERM $spid
	wait $spid 2>/dev/null || true
	l=$(leftovers "$spid")
	if [ -f "$TMP/done" ] && [ -z "$l" ]; then ok "$sh: nothing left after SIGTERM"; else bad "$sh: after SIGTERM: ${l:-scenario did not get ready}"; fi
done

echo "test_netns: $pass passed, $fail failed"
[ $fail = 0 ]
