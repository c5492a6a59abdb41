#!/bin/bash
# In-VM half of tests/ib/test_ib_fail.sh: the IB connection failures and refusals that need a fault
# of their own to happen (ib_connections_failed_total reasons unreachable, protocol, resources, accept;
# ib_connections_rejected_total reason resources). refused and timeout are in guest_tcp2ib.sh, the
# other rejections in guest_peer.sh.
#
# ibgwd runs without CAP_IPC_LOCK (dropped from its bounding set before exec) under RLIMIT_MEMLOCK
# $LOCK_KIB KiB: what it registers with the RDMA device counts against that limit (rxe pins user
# memory like a real HCA), so a route whose IB buffers are larger than the limit cannot get any,
# while the other routes' buffers fit many times over.
set -u
cd "$(dirname "$0")/../.."
. tests/ib/guest_lib.sh
. tests/eth/lib.sh
trap 'eth_cleanup; for p in ${BY:-} ${SRV:-}; do kill -KILL $p 2>/dev/null; done' EXIT
IB=$IB_ADDR_A
NOROUTE=198.19.250.1 # no route in the VM (checked below)
LOCK_KIB=4096
FAT=8M # IB buffers of routes fat and in_fat: beyond LOCK_KIB on their own

GW_REAL=$IBGWD
IBGWD=/tmp/ibgwd-memlock
cat >$IBGWD <<EOF
#!/bin/sh
# $GW_REAL without CAP_IPC_LOCK, RLIMIT_MEMLOCK $LOCK_KIB KiB (same PID: each step execs the next)
exec $PY3 -c 'import ctypes, os, resource, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(24, 14, 0, 0, 0): # PR_CAPBSET_DROP, CAP_IPC_LOCK: not regained at exec
    sys.exit("prctl: errno %d" % ctypes.get_errno())
resource.setrlimit(resource.RLIMIT_MEMLOCK, ($LOCK_KIB * 1024, $LOCK_KIB * 1024))
os.execv(sys.argv[1], sys.argv[1:])' "$GW_REAL" "\$@"
EOF
chmod 755 $IBGWD

eth_setup
ETH_STATS=$STATS
eth_conf /tmp/ibgw.conf "[ib]
bind = $IB
$(gw_routes <<ROUTES
echo       ib:7471  echo                max_sessions=8
fat        ib:7472  echo                ib_rbuf=$FAT max_sessions=2
in_ok      tcp:9000 ib:$IB:7471        max_sessions=4
in_fat     tcp:9003 ib:$IB:7471        ib_rbuf=$FAT max_sessions=2
in_noroute tcp:9004 ib:$NOROUTE:7471   max_sessions=2
in_badpd   tcp:9005 ib:$IB:7480        max_sessions=2
ROUTES
)"
gw_start /tmp/ibgw.conf
gw_wait_ready $STATS 60
eth_ns ping -c 1 -W 5 "$ETH_GW_IP" >/dev/null || fail "the namespace cannot reach ibgwd"
cap=$(awk '/^CapBnd:/ {print $2}' /proc/$GW_PID/status)
lim=$(awk '/^Max locked memory/ {print $4}' /proc/$GW_PID/limits)
check "[ \$(( 0x$cap >> 14 & 1 )) = 0 ] && [ '$lim' = $((LOCK_KIB * 1024)) ]" \
	"ibgwd (pid $GW_PID) runs without CAP_IPC_LOCK (bounding set $cap), locked memory limit $lim bytes"
check "! ip route get $NOROUTE >/dev/null 2>&1" "no route to $NOROUTE in the VM"

# every IB connection counter, from one scrape: "name=value ..." in a fixed order
IBC="failed:refused failed:timeout failed:unreachable failed:protocol failed:resources failed:accept
  rejected:version rejected:malformed rejected:acl rejected:limit rejected:resources accepted connects established"
ibc() {
	curl -s -m 20 "http://127.0.0.1:$STATS/metrics" | awk -v keys="$(echo $IBC)" '
		/^ibgw_ib_connections_failed_total\{/ { split($1, a, "\""); v["failed:" a[2]] = $2 }
		/^ibgw_ib_connections_rejected_total\{/ { split($1, a, "\""); v["rejected:" a[2]] = $2 }
		$1 == "ibgw_ib_connections_accepted_total" { v["accepted"] = $2 }
		$1 == "ibgw_ib_connects_total" { v["connects"] = $2 }
		$1 == "ibgw_ib_connects_established_total" { v["established"] = $2 }
		END { n = split(keys, k, " "); for (i = 1; i <= n; i++) printf "%s%s=%s", (i > 1 ? " " : ""), k[i], ((k[i] in v) ? v[k[i]] : "?"); print "" }'
}
# ib_delta BEFORE "key=n ...": waits (10 s) until the counters are BEFORE plus exactly these deltas,
# every other one unchanged. Sets SEEN to the differences from BEFORE that it last saw.
ib_delta() {
	local want= kv k now i
	declare -A inc=()
	for kv in $2; do inc[${kv%=*}]=${kv#*=}; done
	for kv in $1; do k=${kv%=*}; want="$want $k=$((${kv#*=} + ${inc[$k]:-0}))"; done
	want=${want# }
	for i in $(seq 100); do
		now=$(ibc)
		[ "$now" = "$want" ] && break
		sleep 0.1
	done
	SEEN=$(printf '%s\n%s\n' "$1" "$now" | awk 'NR == 1 { for (i = 1; i <= NF; i++) b[i] = $i; next }
		{ for (i = 1; i <= NF; i++) if ($i != b[i]) { split(b[i], x, "="); split($i, y, "=");
			printf "%s%s %+d", (n++ ? ", " : ""), y[1], y[2] - x[2] } }
		END { if (!n) printf "none" }')
	[ -n "$now" ] && [ "$now" = "$want" ] && ! echo "$now" | grep -q '=?'
}
# waits (10 s, polling every 0.1 s: in place of guest_lib.sh's) until sample NAME equals VALUE; SEEN:
# the last value read
m_is() {
	local i
	for i in $(seq 100); do SEEN=$(m "$1"); [ "$SEEN" = "$2" ] && return 0; sleep 0.1; done
	return 1
}
# the IB connections and sessions that must be there between the faults: the bystander's only
settled() {
	local i
	for i in $(seq 100); do
		[ "$(m ibgw_ib_connections_active)" = 1 ] && [ "$(m 'ibgw_route_sessions_active{route="echo"}')" = 1 ] && return 0
		sleep 0.1
	done
	return 1
}
tcp_client() { eth_ns timeout 60 "$PY3" tests/e2e/peer.py tcp-client "$ETH_GW_IP" "$@" 2>&1 | tail -1; }
ended() { m_is "ibgw_route_sessions_ended_total{route=\"$1\",reason=\"$2\"}" 1; }

# a session in progress through all of it: an rsocket echo whose client reads nothing until SIGUSR1
"$TOOLS/rs_peer" -t 200 -p 7471 "$IB" stall 3M 200 >/tmp/by.out 2>&1 &
BY=$!
settled || fail "the bystander session did not start ($(cat /tmp/by.out))"

# A TCP client through route ROUTE (port PORT) that the IB side cannot serve, for WHY: turned away,
# exactly the IB counter deltas DELTAS (ib_delta's notation), the session ended with reason END.
turned_away() { # PORT WHY DELTAS ROUTE END
	local b out
	b=$(ibc)
	out=$(tcp_client "$1" 1000)
	check "! echo \"\$out\" | grep -q '^ok'" "$2: the TCP client is turned away ($out)"
	ib_delta "$b" "$3"
	check "[ $? = 0 ]" "counted: $3 (deltas: $SEEN)"
	check "ended $4 $5" "route $4: session ended $5"
}

# ---- unreachable: an active open to an address without a route ----
turned_away 9004 "no route to $NOROUTE" "failed:unreachable=1 connects=1" in_noroute connect_failed
check "settled" "no IB connection left over, the bystander's session still there"

# ---- protocol: the destination accepts with private data that is not rsocket's ----
"$TOOLS/ib_badpeer" -p 7480 -n 1 "$IB" serve short >/tmp/srv.out 2>&1 &
SRV=$!
for _ in $(seq 100); do grep -q '^listening' /tmp/srv.out && break; sleep 0.1; done
turned_away 9005 "bad private data in the accept" "failed:protocol=1 connects=1" in_badpd protocol_error
for _ in $(seq 100); do kill -0 $SRV 2>/dev/null || break; sleep 0.1; done
wait $SRV
rc=$?
SRV=
check "[ $rc = 0 ]" "the raw server saw its accepted connection disconnected by the gateway ($(tr '\n' ' ' </tmp/srv.out))"
check "settled" "no IB connection left over, the bystander's session still there"

# ---- resources: IB buffers beyond the locked memory limit, active open and connect request ----
regs=$(m ibgw_ib_buffer_registrations_total)
turned_away 9003 "active open whose $FAT buffers cannot be registered" "failed:resources=1 connects=1" in_fat \
	connect_failed
check "settled" "no IB connection left over, the bystander's session still there"
b=$(ibc)
timeout 40 "$TOOLS/rs_peer" -t 20 -p 7472 "$IB" echo 1000 >/tmp/fat.out 2>&1
rc=$?
check "[ $rc != 0 ]" "connect request whose $FAT buffers cannot be registered: refused ($(tail -1 /tmp/fat.out))"
ib_delta "$b" "rejected:resources=1"
check "[ $? = 0 ]" "counted: rejected resources (deltas: $SEEN)"
check "[ \$(m 'ibgw_route_sessions_total{route=\"fat\"}') = 0 ]" "route fat: no session started"
check "settled" "no IB connection left over, the bystander's session still there"
check "[ \$(m ibgw_ib_buffer_registrations_total) = $regs ]" "the registrations that failed are not counted as registrations"

# ---- accept: the client answers the gateway's accept with a REJ ----
b=$(ibc)
out=$("$TOOLS/ib_badpeer" -p 7471 "$IB" unaccept 2>&1)
rc=$?
check "[ $rc = 0 ]" "a client that rejects the gateway's accept ($out)"
ib_delta "$b" "accepted=1 failed:accept=1"
check "[ $? = 0 ]" "counted: accepted, then failed accept (deltas: $SEEN)"
check "settled" "no IB connection left over, the bystander's session still there"
check "[ \$(m 'ibgw_route_sessions_total{route=\"echo\"}') = 1 ]" "no session was started for it"

# ---- still whole and serving ----
check "kill -0 $GW_PID" "ibgwd alive"
kill -USR1 $BY
wait $BY
rc=$?
BY=
check "[ $rc = 0 ] && grep -q '^ok .*sent=3145728 recv=3145728 ' /tmp/by.out" \
	"the session in progress all along: 3M echoed intact ($(grep '^ok\|^FAIL' /tmp/by.out | cut -c1-60))"
out=$(tcp_client 9000 1000000)
check "echo \"\$out\" | grep -q '^ok '" "TCP -> IB still served: 1000000 bytes echoed intact"

# ---- the RDMA device removed under ibgwd (a driver unload, `rdma link delete`, a device reset) ----
# A fresh ibgwd with its listeners bound to any address, so that once its connections are gone no
# rdma_cm id of its is on the device and no rdma_cm event tells of the removal: the uverbs node the
# kernel deletes first does. The IB routes of both kinds turn not ready (/health 503, so a pair's peer
# takes over), it is said at error level. ibgwd cannot let the device go while it runs (its buffer
# sets, CQs, rdma_cm's context): the kernel's removal waits (rxe cannot take resources from a
# process) until it exits.
gw_stop TERM 30
check "[ $? = 0 ]" "ibgwd drained and exited 0 (sanitizers quiet)"
IBGWD=$GW_REAL
eth_conf /tmp/ibgw.conf "$(gw_routes <<ROUTES
echo  ib:7471  echo
relay tcp:9000 ib:$IB:7471
ROUTES
)"
gw_start /tmp/ibgw.conf
gw_wait_ready $STATS 60
out=$(tcp_client 9000 65536)
check "echo \"\$out\" | grep -q '^ok '" "listening on any address: 64K echoed through TCP -> IB -> echo"
check_m ibgw_ib_connections_active 0 "no IB connection on the device any more"
check "[ \$(m 'ibgw_route_ready{route=\"echo\"}') = 1 ] && [ \$(m 'ibgw_route_ready{route=\"relay\"}') = 1 ] && [ \$(m ibgw_ib_devices_removed) = 0 ]" \
	"both routes ready, no device removed"
ev0=$(m ibgw_ib_cm_events_total)
(timeout -s KILL 120 rdma link delete "$IB_DEV_A"; echo "rc=$?" >/tmp/rm.rc) >/tmp/rm.out 2>&1 &
RM=$!
check_m ibgw_ib_devices_removed 1 "$IB_DEV_A being removed: ibgw_ib_devices_removed 1"
h=$(curl -s -m 10 -w ' %{http_code}' "http://127.0.0.1:$STATS/health" | tr '\n' ' ')
check "echo '$h' | grep -q '^degraded route echo: cannot be served: no RDMA device route relay: cannot be served: no RDMA device  503\$'" \
	"/health 503, both IB routes not ready ($h)"
check "[ \$(m 'ibgw_route_ready{route=\"echo\"}') = 0 ] && [ \$(m 'ibgw_route_ready{route=\"relay\"}') = 0 ]" "ibgw_route_ready 0 for both"
check "grep -q '<3>.*device $IB_DEV_A is being removed (its uverbs node is gone.*restart ibgwd' $GW_LOG && [ \$(m ibgw_ib_cm_events_total) = $ev0 ]" \
	"seen by its uverbs node, no rdma_cm event: said at error level ($(grep -m1 'is being removed' $GW_LOG | cut -c1-90)...)"
sleep 2
check "kill -0 $RM 2>/dev/null" "the kernel's removal waits while ibgwd runs"
ib_after_stop() {
	local i
	for i in $(seq 100); do kill -0 $RM 2>/dev/null || break; sleep 0.1; done
	check "! kill -0 $RM 2>/dev/null && grep -qx 'rc=0' /tmp/rm.rc" \
		"ibgwd exited: the kernel's removal finished within 10 s ($(cat /tmp/rm.rc 2>/dev/null || echo 'still waiting'))"
}
ib_done
