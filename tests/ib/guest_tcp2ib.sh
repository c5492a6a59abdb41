#!/bin/bash
# In-VM half of tests/ib/test_ib_tcp2ib.sh: active IB opens (gw_ib_side.connect). A kernel TCP client in a
# namespace reaches ibgwd's DPDK port (af_packet on a veth); the route connects to an rsocket service,
# here ibgwd's own IB echo route: TCP -> gateway -> rsocket connect -> gateway IB echo -> back.
# Also a destination nobody listens on (refused) and one that does not answer (timeout).
set -u
cd "$(dirname "$0")/../.."
. tests/ib/guest_lib.sh
. tests/eth/lib.sh
trap 'eth_cleanup' EXIT
eth_setup
ETH_STATS=$STATS
ETH_READY_S=60 eth_gw_start /tmp/ibgw.conf "[ib]
bind = $IB_ADDR_B
$(gw_routes <<EOF
ingest	tcp:9000	ib:$IB_ADDR_B:7471	max_sessions=16
echo	ib:7471		echo			max_sessions=16
refused	tcp:9001	ib:$IB_ADDR_B:7499	max_sessions=4
silent	tcp:9002	ib:198.19.0.99:7471	connect_timeout=2s max_sessions=4
EOF
)"
eth_ns ping -c 1 -W 5 "$ETH_GW_IP" >/dev/null

client() { # PORT BYTES: echo check over TCP, half-close after sending
	eth_ns timeout 120 "$PY3" - "$ETH_GW_IP" "$1" "$2" <<'PY'
import hashlib, os, socket, sys, selectors
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = os.urandom(n)
s = socket.create_connection((host, port), timeout=60)
s.setblocking(False)
sel = selectors.DefaultSelector()
sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
off, got, eof = 0, bytearray(), False
while not eof:
    for key, ev in sel.select(60):
        if ev & selectors.EVENT_WRITE and off < n:
            off += s.send(data[off:off + 65536])
            if off == n:
                s.shutdown(socket.SHUT_WR)
                sel.modify(s, selectors.EVENT_READ)
        if ev & selectors.EVENT_READ:
            try:
                b = s.recv(65536)
            except ConnectionResetError:
                print("reset after", len(got)); sys.exit(1)
            if not b:
                eof = True
            got += b
ok = hashlib.sha256(got).hexdigest() == hashlib.sha256(data).hexdigest()
print("ok" if ok else "FAIL", "sent", n, "got", len(got), hashlib.sha256(got).hexdigest()[:16])
sys.exit(0 if ok else 1)
PY
}
out=$(client 9000 4000000)
echo "    $out"
check "echo \"\$out\" | grep -q '^ok'" "TCP -> IB connect -> IB echo: 4 MB back intact, half-close both ways"
out=$(client 9000 1)
check "echo \"\$out\" | grep -q '^ok'" "one byte"
check "[ \$(m ibgw_ib_connects_established_total) = 2 ]" "2 active IB opens established"
check "[ \$(m 'ibgw_route_sessions_ended_total{route=\"ingest\",reason=\"ok\"}') = 2 ]" "ingest sessions ended ok"
out=$(client 9001 100 2>&1)
check "! echo \"\$out\" | grep -q '^ok'" "destination without a listener: the TCP client is turned away"
for _ in $(seq 50); do [ "$(m 'ibgw_ib_connections_failed_total{reason="refused"}')" = 1 ] && break; sleep 0.1; done
check "[ \$(m 'ibgw_ib_connections_failed_total{reason=\"refused\"}') = 1 ]" "counted: failed, refused"
for _ in $(seq 50); do [ "$(m 'ibgw_route_sessions_ended_total{route="refused",reason="connect_refused"}')" = 1 ] && break; sleep 0.1; done
check "[ \$(m 'ibgw_route_sessions_ended_total{route=\"refused\",reason=\"connect_refused\"}') = 1 ]" "route refused: connect_refused"
t0=$(date +%s%N)
out=$(client 9002 100 2>&1)
dt=$((($(date +%s%N) - t0) / 1000000))
check "! echo \"\$out\" | grep -q '^ok'" "silent destination: turned away after ${dt} ms"
check "[ $dt -ge 1900 ] && [ $dt -lt 30000 ]" "the open was given connect_timeout (2 s), not much more"
for _ in $(seq 50); do [ "$(m 'ibgw_route_sessions_ended_total{route="silent",reason="connect_timeout"}')" = 1 ] && break; sleep 0.1; done
check "[ \$(m 'ibgw_ib_connections_failed_total{reason=\"timeout\"}') = 1 ]" "counted: failed, timeout"
check "[ \$(m 'ibgw_route_sessions_ended_total{route=\"silent\",reason=\"connect_timeout\"}') = 1 ]" "route silent: connect_timeout"
check "[ \$(m 'ibgw_route_sessions_ended_total{route=\"refused\",reason=\"connect_failed\"}') = 0 ] && [ \$(m 'ibgw_route_sessions_ended_total{route=\"silent\",reason=\"connect_failed\"}') = 0 ]" "no open counted as a vague connect_failed"
for _ in $(seq 50); do [ "$(m ibgw_ib_connections_active)" = 0 ] && break; sleep 0.1; done
check "[ \$(m ibgw_ib_connections_active) = 0 ]" "no IB connection left"
ib_done
