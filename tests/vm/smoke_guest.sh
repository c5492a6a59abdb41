#!/bin/dash
# tests/vm/smoke_guest.sh CM_PROBE [extra]: the in-VM half of tests/vm/test_vm_smoke.sh.
# Runs under tests/vm/run on the loop or pair topology. Checks: the rxe devices exist and are
# ACTIVE; rstream (rdma-core's own rsocket client/server) moves data with verification; cm_probe
# (librdmacm connect + RC SEND/RECV, built on the host) passes; on `pair`, that the traffic really
# crossed the veth and each end used its own rxe device. With "extra": python3, the netns helpers
# with netem, and DPDK's EAL with all PMDs also work in the image.
# Prints one "ok"/"FAIL" line per check and "N passed, N failed"; exit 0 only if all passed.
set -u
CM_PROBE=${1:?usage: smoke_guest.sh CM_PROBE [extra]}
EXTRA=${2:-}
pass=0 fail=0
ok() {
	pass=$((pass + 1))
	echo "ok   - [$VM_TOPO] $*"
}
bad() {
	fail=$((fail + 1))
	echo "FAIL - [$VM_TOPO] $*"
}
ms() { echo $(($(date +%s%N) / 1000000)); }
tx_bytes() { cat "/sys/class/net/$1/statistics/tx_bytes"; }
# wait_listen PORT: until an RDMA CM id listens on PORT (at most 10 s)
wait_listen() {
	i=0
	while ! rdma resource show cm_id 2>/dev/null | grep "state LISTEN" | grep -q ":$1 "; do
		i=$((i + 1))
		[ $i -gt 100 ] && return 1
		sleep 0.1
	done
}
LOG=/tmp/smoke.$$
DEVS=$IB_DEV_A
[ "$IB_DEV_B" != "$IB_DEV_A" ] && DEVS="$DEVS $IB_DEV_B"

# 1. devices
for d in $DEVS; do
	if ibv_devices | grep -qw "$d"; then ok "ibv_devices lists $d"; else bad "ibv_devices does not list $d"; fi
	if ibv_devinfo -d "$d" | grep -q PORT_ACTIVE; then ok "$d port is PORT_ACTIVE"; else bad "$d port not active"; fi
done

# 2. rstream: 50 x 64 KiB each way, data verified (-T v), server on B, client bound to A (rstream's
#    -b binds the client to the server's port too, so on loop, where A = B, the client must not bind)
N=50 SZ=65536 PORT=7471
BIND=''
[ "$IB_ADDR_A" != "$IB_ADDR_B" ] && BIND="-b $IB_ADDR_A"
tx0=$(tx_bytes "$IB_NETDEV_A")
t0=$(ms)
# (each stock tool bounded: a hang says which one, instead of the VM's own time limit)
timeout 75 rstream -b "$IB_ADDR_B" -p $PORT -C $N -S $SZ -T v >$LOG.srv 2>&1 &
spid=$!
if wait_listen $PORT; then
	# shellcheck disable=SC2086
	timeout 60 rstream -s "$IB_ADDR_B" $BIND -p $PORT -C $N -S $SZ -T v >$LOG.cli 2>&1
	crc=$?
else
	crc=255
	echo "rstream server did not listen within 10 s" >$LOG.cli
fi
[ $crc = 0 ] || kill $spid 2>/dev/null
wait $spid
src=$?
t1=$(ms)
if [ $crc = 0 ] && [ $src = 0 ]; then
	ok "rstream $N x $SZ B verified, $IB_ADDR_A -> $IB_ADDR_B ($((t1 - t0)) ms): $(tail -n1 $LOG.cli | tr -s ' ')"
else
	bad "rstream: client exit $crc, server exit $src"
	sed 's/^/    client: /' $LOG.cli
	sed 's/^/    server: /' $LOG.srv
fi
if [ "$VM_TOPO" = pair ]; then
	moved=$(($(tx_bytes "$IB_NETDEV_A") - tx0))
	if [ $moved -ge $((N * SZ)) ]; then
		ok "rstream traffic crossed the veth ($IB_NETDEV_A sent $moved bytes)"
	else
		bad "only $moved bytes left $IB_NETDEV_A (want >= $((N * SZ))): traffic short-cut the link?"
	fi
fi

# 3. cm_probe: librdmacm listen/connect + RC SEND/RECV, verified both ways
t0=$(ms)
timeout 30 "$CM_PROBE" -p 7472 -c 50 -n 4096 "$IB_ADDR_B" "$IB_ADDR_A" >$LOG.cm 2>&1
rc=$?
if [ $rc = 0 ] && grep -q PASS $LOG.cm; then
	ok "cm_probe 50 x 4 KiB request/reply verified ($(($(ms) - t0)) ms)"
else
	# (124: still running after 30 s; where it stopped is the last line it printed)
	bad "cm_probe failed: exit $rc after $(($(ms) - t0)) ms"
	sed 's/^/    /' $LOG.cm
fi
if [ "$VM_TOPO" = pair ]; then
	if grep -q "client: connected on $IB_DEV_A" $LOG.cm && grep -q "server: connected on $IB_DEV_B" $LOG.cm; then
		ok "cm_probe client used $IB_DEV_A, server used $IB_DEV_B"
	else
		bad "cm_probe did not use $IB_DEV_A -> $IB_DEV_B"
		sed 's/^/    /' $LOG.cm
	fi
fi

if [ "$EXTRA" = extra ]; then
	# 4. python3 with the stdlib modules tests use
	if out=$(python3 -c 'import hashlib, json, socket, subprocess; print(hashlib.sha256(b"ibgw").hexdigest()[:12])' 2>&1) &&
		[ "$out" = "$(printf ibgw | sha256sum | cut -c1-12)" ]; then
		ok "python3 hashlib/json/socket work"
	else
		bad "python3: $out"
	fi
	# 5. netns helpers: a test host with tx off and netem, frames reach the DPDK-side end
	if sh -c '
		set -e
		. tests/net/netns.sh
		nt_host h1 198.18.0.2/24
		nt_netem h1 out delay 1ms loss 0%
		nt_exec h1 tc qdisc show dev "$h1_PEER" | grep -q netem
		nt_exec h1 ethtool -k "$h1_PEER" | grep -q "^tx-checksumming: off"
		rx0=$(cat /sys/class/net/$h1_IF/statistics/rx_packets)
		nt_exec h1 ping -c 1 -W 1 198.18.0.1 >/dev/null 2>&1 || true
		[ $(cat /sys/class/net/$h1_IF/statistics/rx_packets) -gt $rx0 ]
	' >$LOG.nt 2>&1 && [ -z "$(ip netns list)" ]; then
		ok "netns.sh: test host with tx off + netem, frames reach the veth, cleaned up"
	else
		bad "netns.sh in the VM"
		sed 's/^/    /' $LOG.nt
		ip netns list | sed 's/^/    left: /'
	fi
	# 6. DPDK: EAL loads every PMD of the image and testpmd forwards on net_null
	t0=$(ms)
	if dpdk-testpmd --no-pci --no-huge -m 256 --file-prefix smoke$$ --vdev net_null0 -- \
		--stats-period 0 --total-num-mbufs 2048 >$LOG.dpdk 2>&1 && grep -q 'Bye' $LOG.dpdk; then
		ok "dpdk-testpmd (all PMDs, net_null) starts and exits ($(($(ms) - t0)) ms)"
	else
		bad "dpdk-testpmd"
		tail -n 20 $LOG.dpdk | sed 's/^/    /'
	fi
fi

echo "smoke [$VM_TOPO]: $pass passed, $fail failed"
[ $fail = 0 ]
