#!/bin/bash
# In-VM half of tests/ib/test_ib_vip.sh: the IB side of a gateway pair (#16). An IB listener bound to
# 0.0.0.0 (the default) serves an IPoIB/RoCE address that appears on the device after ibgwd started,
# as keepalived adds the VIP on the gateway that takes over, and stops serving it when it leaves;
# a gateway killed mid-session loses that session (RC connections are not migrated by anything):
# a new connection to the VIP, served by the gateway that
# holds it now (here a fresh ibgwd), works at once.
set -u
cd "$(dirname "$0")/../.."
. tests/ib/guest_lib.sh

VIP=198.19.0.77
CONF="[route vip]
listen = ib:7600
connect = echo"
ib_gw_start "$CONF"
peer() { timeout "$1" "$TOOLS/rs_peer" -t "$1" -p 7600 "$VIP" "${@:2}"; }

# (the refused attempts get 5 s: a connection that could succeed here does within one; each waited
# out its full limit, so a longer one only costs make check's time)
out=$(peer 5 echo 100000 2>&1)
echo "    before the VIP is here: $out"
check "! echo '$out' | grep -q '^ok\|result=ok'" "before the VIP is on this host: no connection to it"
ip addr add "$VIP/32" dev "$IB_NETDEV_A"
ok_add=0
for i in $(seq 50); do # (rxe adds the address to its GID table as the netdev gets it)
	peer 30 echo 2000000 >/tmp/vip1 2>&1 && { ok_add=1; break; }
	sleep 0.2
done
echo "    $(cat /tmp/vip1)"
check "[ $ok_add = 1 ]" "VIP added after start (as keepalived does on takeover): a 2 MB echo through it, SHA-256 intact"
ip addr del "$VIP/32" dev "$IB_NETDEV_A"
out=$(peer 5 echo 100000 2>&1)
rc=$?
check "[ $rc != 0 ]" "VIP removed (keepalived on the backup): new connections to it fail (rs_peer exit $rc)"
ip addr add "$VIP/32" dev "$IB_NETDEV_A"

# the master dies mid-session (SIGKILL: no DISCONNECT is sent) while its client writes: the session is
# lost (the client never completes it); whether the client is told before its own 30 s limit (exit 3)
# is printed, not checked: it depends on the fabric's retry timers (README: Several gateways), which
# outlast the client's 10 s limit here. Then the standby (a fresh ibgwd) serves the VIP at once.
"$TOOLS/rs_peer" -t 10 -p 7600 "$VIP" echo 4000000000 >/tmp/vip-c 2>&1 &
cpid=$!
for i in $(seq 100); do [ "$(m ibgw_ib_connections_active)" = 1 ] && break; sleep 0.1; done
check "[ \$(m ibgw_ib_connections_active) = 1 ]" "a session in flight through the VIP"
sleep 1
t0=$(date +%s%N)
kill -KILL "$GW_PID"
wait "$GW_PID" 2>/dev/null
GW_PID=
wait $cpid
crc=$?
dt=$((($(date +%s%N) - t0) / 1000000))
echo "    client after its gateway died: exit $crc, $dt ms after the kill ($([ $crc = 3 ] && echo 'its own time limit: not told' || echo 'told')): $(tail -1 /tmp/vip-c)"
check "[ $crc != 0 ]" "the session through the dead gateway is lost (not completed)"
ib_gw_start "$CONF"
check "peer 60 echo 2000000 >/dev/null 2>&1" "the gateway now holding the VIP serves new connections (2 MB echo intact)"
check "[ \$(m ibgw_ib_connections_active) = 0 ]" "nothing left over"
ib_done
