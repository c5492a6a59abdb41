#!/bin/bash
# In-VM half of tests/eth/test_vhost.sh (see there).
set -u
cd "$(dirname "$0")/../.."
export ETH_LINK=vhost IBGWD=$PWD/${BUILD:-build}/release/ibgwd # ASan cannot run in the VM
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
# the tests' nc is OpenBSD's (-N), which the VM has under its own name (busybox's nc comes first)
mkdir -p /tmp/vhost-bin && ln -sf "$(command -v nc.openbsd)" /tmp/vhost-bin/nc && export PATH=/tmp/vhost-bin:$PATH

# offloads: negotiated, used both ways, and every byte intact (16 MiB: over 11000 segments each way,
# enough to show merging both ways; more only costs make check's time under TCG)
MB=16
offload_run() { # OFFLOADS(0|1) EXPECTED-LOG-WORDS
	(
		eth_test_init
		eth_setup
		eth_gw_start "$tmp/ibgw.conf" "offloads = $1
$(gw_routes <<<'echo tcp:7 echo')"
		grep -q "offloads: $2\$" "$GW_LOG" || fail "offloads = $1: log does not say 'offloads: $2' (see $GW_LOG)"
		head -c ${MB}M /dev/urandom >"$tmp/in"
		want=$(sha256sum <"$tmp/in" | cut -d' ' -f1)
		got=$(eth_ns timeout 120 nc -N "$ETH_GW_IP" 7 <"$tmp/in" | sha256sum | cut -d' ' -f1)
		[ "$got" = "$want" ] || fail "offloads = $1: ${MB}M echoed differently"
		w='{worker="0"}' p='{port="0"}'
		rx=$(gw_metric "$ETH_STATS" "ibgw_port_rx_packets_total$p") tx=$(gw_metric "$ETH_STATS" "ibgw_port_tx_packets_total$p")
		sin=$(gw_metric "$ETH_STATS" "ibgw_tcp_segments_in_total$w") sout=$(gw_metric "$ETH_STATS" "ibgw_tcp_segments_out_total$w")
		csum=$(gw_metric "$ETH_STATS" "ibgw_tcp_checksum_errors_total$w")
		# for the log: how often the worker's busy_poll windows found work (test_idle_wake.sh checks
		# the counters)
		hit=$(gw_metric "$ETH_STATS" 'ibgw_worker_poll_windows_total{worker="0",outcome="hit"}')
		miss=$(gw_metric "$ETH_STATS" 'ibgw_worker_poll_windows_total{worker="0",outcome="miss"}')
		echo "offloads = $1: busy_poll windows: $hit hit, $miss missed"
		# the echo sends from the received frames (DPDK's memory, which vhost-net reads): copies
		# only where the receive queue copied (small segments, and frames past the pinned-frame
		# budget), a small share that follows the timing (offloads off, 16 MiB under TCG: 0.4-5.2%
		# seen; every byte was copied before the zero-copy path)
		cp=$(gw_metric "$ETH_STATS" 'ibgw_copied_bytes_total{dir="ib_to_eth",worker="0"}')
		echo "offloads = $1: $cp bytes copied into frames for ${MB} MiB echoed"
		[ "$cp" -le $((MB * 1048576 / 10)) ] || fail "offloads = $1: $cp bytes copied into frames (at most 10% of ${MB} MiB)"
		echo "offloads = $1: frames in $rx for $sin segments, frames out $tx for $sout segments"
		[ "$csum" = 0 ] || fail "$csum checksum errors"
		[ "$sin" -ge $((MB * 1048576 / 1460)) ] && [ "$sout" -ge $((MB * 1048576 / 1460)) ] || fail "segment counters too low"
		if [ "$1" = 1 ]; then
			# merged frames: several segments a frame each way (1 a frame without offloads)
			[ $((rx * 4)) -lt "$sin" ] || fail "LRO: $rx frames for $sin segments"
			[ $((tx * 4)) -lt "$sout" ] || fail "TSO: $tx frames for $sout segments"
		else
			[ "$rx" -ge "$sin" ] && [ "$tx" -ge "$sout" ] || fail "offloads = 0 yet frames merged"
		fi
		gw_stop || fail "ibgwd exited with $?"
		ok "offloads = $1: ${MB}M echoed intact; $rx frames in / $sin segments, $tx frames out / $sout segments"
	) || exit 1
}
# (lent-dpdk-memory-tx is no device offload: frames may point into lent memory in DPDK's heap, the IB
# buffer sets, whatever offloads says)
offload_run 1 "tx-checksum tso rx-checksum lro lent-dpdk-memory-tx"
offload_run 0 "lent-dpdk-memory-tx"

# the engine's own tests, on this link
ETH_BIG_SIZE=20M bash tests/eth/test_tcp_integrity.sh || exit 1
bash tests/eth/test_idle_wake.sh || exit 1
ETH_WORKERS_SIZE=20M bash tests/eth/test_tcp_workers.sh || exit 1 # two queues: the tap spreads flows, the engines steer
echo "PASS: vhost-net link"
