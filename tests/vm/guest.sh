#!/bin/dash
# Guest side of tests/vm/run (copied into the per-run control share; /init execs it as PID 1).
# Mounts the project shares, builds the requested RDMA topology, runs the command, writes its exit
# status and the dmesg into the control share and powers off. If anything fails before the command
# runs, no status is written and the host reports 125.
CTL=/run/vm-ctl
PATH=/usr/sbin:/usr/bin:/bb
export PATH
. "$CTL/vars"

off() {
	sync
	echo 0 >/proc/sys/kernel/printk # no "reboot: Restarting system" on the console
	reboot -f
	sleep 5
	exit 1
}
fail() {
	echo "vm-guest: setup failed: $*" >&2
	dmesg >"$CTL/dmesg" 2>/dev/null
	off
}
v() { [ "$VM_VERBOSE" = 1 ] && echo "vm-guest: $(cut -d' ' -f1 /proc/uptime)s $*" >&2; return 0; }
# How far the guest got, in the control share: a VM that times out says where it was (tests/vm/run
# keeps it with the log), even if the command printed nothing.
stage() { echo "$(cut -d' ' -f1 /proc/uptime)s $*" >>"$CTL/stages"; v "$*"; }

# The command's stdout/stderr go to the virtio serial ports named "out" and "err" (a serial port, or
# a virtio console with its 16-byte tty writes, moves only ~100 KB/s under TCG); the kernel console
# stays on ttyS0, which the host only logs. Like a pipe, they are not ttys: C programs' stdout is
# block-buffered (use stderr or setvbuf/fflush for live progress); python is told not to buffer.
vport() {
	for d in /sys/class/virtio-ports/*; do
		name=''
		read -r name <"$d/name" 2>/dev/null
		[ "$name" = "$1" ] && echo "/dev/${d##*/}" && return 0
	done
	return 1
}
n=0
while ! { out=$(vport out) && err=$(vport err) && [ -c "$out" ] && [ -c "$err" ]; } && [ $n -lt 300 ]; do
	sleep 0.01
	n=$((n + 1))
done
if [ -c "$out" ] && [ -c "$err" ]; then
	exec >"$out" 2>"$err"
else
	echo "vm-guest: no virtio serial ports, command output goes to the kernel console" >&2
fi
stage "booted"

i=0
while [ "$i" -lt "$VM_NSHARES" ]; do
	eval "p=\$VM_SHARE_$i"
	mkdir -p "$p" && mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 "src$i" "$p" ||
		fail "cannot mount the project share $p"
	i=$((i + 1))
done

# gid4 IPV4 -> the IPv4-mapped GID as sysfs prints it
gid4() {
	echo "$1" | awk -F. '{printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n", $1, $2, $3, $4}'
}
# wait_gid DEV IPV4: rdma_cm can only use the address once the GID table lists it (filled async)
wait_gid() {
	g=$(gid4 "$2")
	n=0
	while ! cat /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null | grep -qx "$g"; do
		n=$((n + 1))
		[ $n -gt 500 ] && fail "no GID for $2 on $1 after 5 s"
		sleep 0.01
	done
}
# wait_active DEV
wait_active() {
	n=0
	while ! grep -q ACTIVE /sys/class/infiniband/"$1"/ports/1/state 2>/dev/null; do
		n=$((n + 1))
		[ $n -gt 500 ] && fail "$1 port not ACTIVE after 5 s"
		sleep 0.01
	done
}

# Every exec costs 50-100 ms under TCG: one `ip -batch` and one `rdma -b` per topology, sysctls
# written directly.
B=/tmp/vm-topo
echo "link set lo up" >$B.ip
case $VM_TOPO in
loop)
	IB_ADDR_A=198.19.0.1 IB_ADDR_B=198.19.0.1
	IB_DEV_A=rxe0 IB_DEV_B=rxe0 IB_NETDEV_A=dummy0 IB_NETDEV_B=dummy0
	# (loading the dummy module may already have made dummy0: numdummies defaults to 1)
	if [ -e /sys/class/net/dummy0 ]; then
		echo "link set dummy0 mtu $VM_MTU" >>$B.ip
	else
		echo "link add dummy0 mtu $VM_MTU type dummy" >>$B.ip
	fi
	cat >>$B.ip <<-EOF
		addr add 198.19.0.1/24 dev dummy0
		link set dummy0 up
	EOF
	echo "link add rxe0 type rxe netdev dummy0" >$B.rdma
	ip -batch $B.ip && rdma -b $B.rdma || fail "loop topology"
	wait_active rxe0
	wait_gid rxe0 198.19.0.1
	;;
pair)
	# Both veth ends stay in the main namespace (rxe across namespaces carries no RC traffic).
	# Policy routing makes locally generated traffic for the other end leave by the veth, and
	# traffic arriving on a veth be delivered locally, instead of short-cutting over lo.
	IB_ADDR_A=198.19.1.1 IB_ADDR_B=198.19.1.2
	IB_DEV_A=rxe0 IB_DEV_B=rxe1 IB_NETDEV_A=vib0 IB_NETDEV_B=vib1
	echo "link add vib0 mtu $VM_MTU type veth peer name vib1 mtu $VM_MTU" >>$B.ip
	ip -batch $B.ip || fail "pair topology: veth"
	for c in all default vib0 vib1; do
		echo 0 >/proc/sys/net/ipv4/conf/$c/rp_filter &&
			echo 1 >/proc/sys/net/ipv4/conf/$c/accept_local || fail "pair topology: sysctl $c"
	done
	cat >$B.ip <<-EOF
		addr add 198.19.1.1/24 dev vib0
		addr add 198.19.1.2/24 dev vib1
		link set vib0 up
		link set vib1 up
		rule add pref 10 iif vib0 lookup local
		rule add pref 10 iif vib1 lookup local
		route add 198.19.1.2/32 dev vib0 src 198.19.1.1 table 101
		route add 198.19.1.1/32 dev vib1 src 198.19.1.2 table 102
		rule add pref 20 to 198.19.1.2/32 lookup 101
		rule add pref 20 to 198.19.1.1/32 lookup 102
		rule add pref 100 lookup local
		rule del pref 0
	EOF
	printf 'link add rxe0 type rxe netdev vib0\nlink add rxe1 type rxe netdev vib1\n' >$B.rdma
	ip -batch $B.ip && rdma -b $B.rdma || fail "pair topology"
	wait_active rxe0
	wait_active rxe1
	wait_gid rxe0 198.19.1.1
	wait_gid rxe1 198.19.1.2
	;;
none)
	ip -batch $B.ip || fail "lo"
	IB_ADDR_A='' IB_ADDR_B='' IB_DEV_A='' IB_DEV_B='' IB_NETDEV_A='' IB_NETDEV_B=''
	;;
esac
if [ "${VM_HUGEPAGES:-0}" != 0 ]; then
	echo "$VM_HUGEPAGES" >/proc/sys/vm/nr_hugepages || fail "hugepages"
fi
if [ -n "${VM_DPDK_PMDS:-}" ]; then
	# Only these DPDK drivers in the EAL plugin directory (see tests/vm/mkimage): EAL init in
	# ~0.5 s instead of ~5 s. Names as in librte_<name>.so, e.g. "net_af_packet mempool_ring".
	pmddir=$(echo /usr/lib/x86_64-linux-gnu/dpdk/pmds-*)
	mkdir -p /run/vm-pmds
	set --
	for m in $VM_DPDK_PMDS; do
		f=/usr/lib/x86_64-linux-gnu/librte_$m.so.$(basename "$pmddir" | sed 's/^pmds-//')
		[ -e "$f" ] || fail "VM_DPDK_PMDS: no DPDK driver $m ($f)"
		set -- "$@" "$f"
	done
	ln -s "$@" /run/vm-pmds/ && mount --bind /run/vm-pmds "$pmddir" || fail "VM_DPDK_PMDS"
fi
stage "topology $VM_TOPO ready; the command starts"

export IB_ADDR_A IB_ADDR_B IB_DEV_A IB_DEV_B IB_NETDEV_A IB_NETDEV_B VM_TOPO
export IBGW_VM=1 PYTHONUNBUFFERED=1 HOME=/root TMPDIR=/tmp LANG=C.UTF-8 SHELL=/bin/sh USER=root LOGNAME=root
ulimit -l unlimited
ulimit -c 0
cd "$VM_CWD" || fail "cannot cd to $VM_CWD"

if [ "$VM_MODE" = cmd ]; then
	dash -c "$(cat "$CTL/cmd")" </dev/null
	rc=$?
else
	. "$CTL/script-args"
	if [ -x "$VM_SCRIPT" ]; then
		"$VM_SCRIPT" "$@" </dev/null
	else
		dash "$VM_SCRIPT" "$@" </dev/null
	fi
	rc=$?
fi
stage "command exited $rc"
dmesg >"$CTL/dmesg" 2>/dev/null
echo "$rc" >"$CTL/status"
off
