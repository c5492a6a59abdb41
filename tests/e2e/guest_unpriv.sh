#!/bin/bash
# In-VM half of tests/e2e/test_e2e_unpriv.sh: ibgwd started as root with `[gateway] user = ibgw` runs
# unprivileged and still does all its work.
#   - every thread of the process (control, EAL interrupt thread, 2 workers) has the ibgw uid/gid
#     (real, effective, saved, fs), no_new_privs, no ambient or inheritable capabilities, and exactly
#     CAP_NET_RAW and CAP_NET_ADMIN (af_packet's sockets; starting the port sets the interface's MAC
#     and promiscuous mode) and CAP_NET_BIND_SERVICE (one ib: listener is below 1024, `low` on
#     ib:700, and rdma_cm wants it for such ports) as effective, permitted and bounding sets;
#     RLIMIT_MEMLOCK is unlimited in the VM, so CAP_IPC_LOCK is not kept; the seccomp filter that
#     refuses new raw sockets and network configuration is on in every thread (Seccomp: 2);
#   - after the drop: $E2E_SIZE (default 8 MB) each way through both route kinds (ib -> tcp and
#     tcp -> ib), sha256 checked at the far servers and the echoes, then 10 concurrent sessions each
#     way (new IB connections: memory registered after the drop, counted), each verified;
#   - SIGHUP as ibgw: the file (root-owned 0644, as the trust check wants) is re-read, a route on
#     ib:701 is added and carries an echo (rdma_cm binds a port < 1024 after the drop); the threads are
#     checked again; SIGTERM drains and ibgwd exits 0 (sanitizers quiet).
# Two workers (af_packet qpairs=2) so that more than one lcore thread exists when privileges drop.
set -u
cd "$(dirname "$0")/../.."
# the guest's /etc lives in its RAM root: a system user for the test, as useradd --system would make it
grep -q '^ibgw:' /etc/passwd || echo 'ibgw:x:990:990:ibgw test user:/nonexistent:/usr/sbin/nologin' >>/etc/passwd
grep -q '^ibgw:' /etc/group || echo 'ibgw:x:990:' >>/etc/group
export ETH_WORKERS=2 ETH_VDEV_EXTRA=,qpairs=2
GW_EXTRA='user = ibgw'
. tests/e2e/guest_lib.sh
SIZE=${E2E_SIZE:-8000000}
N=${E2E_CONC:-10}
EACH=${E2E_CONC_BYTES:-50000}
UID_IBGW=$(awk -F: '$1 == "ibgw" { print $3 }' /etc/passwd)
GID_IBGW=$(awk -F: '$1 == "ibgw" { print $4 }' /etc/passwd)
KEPT=0000000000003400 # CAP_NET_RAW (13), CAP_NET_ADMIN (12), CAP_NET_BIND_SERVICE (10)
KEPT_NAMES='cap_net_bind_service cap_net_admin cap_net_raw'
if [ "${ETH_LINK:-}" = vhost ]; then
	# virtio_user: its tap needs CAP_NET_ADMIN, no raw socket; /dev/vhost-net and /dev/net/tun are
	# root's 0600 here (no udev), so the user gets them through its group, as a udev rule would
	KEPT=0000000000001400 KEPT_NAMES='cap_net_bind_service cap_net_admin'
	modprobe vhost_net
	chgrp ibgw /dev/vhost-net /dev/net/tun && chmod 660 /dev/vhost-net /dev/net/tun
fi

ROUTES="$(gw_routes <<EOF
out	ib:7000		tcp:$ETH_PEER_IP:5000	max_sessions=64 connect_timeout=30s
in	tcp:9000	ib:$IB:7600		max_sessions=64 connect_timeout=30s
in_many	tcp:9100	ib:$IB:7100		max_sessions=64 connect_timeout=30s
ib_echo	ib:7100		echo			max_sessions=64
low	ib:700		echo			max_sessions=4
EOF
)"
e2e_start "$ROUTES"
check "[ \"\$(stat -c %U:%a /tmp/ibgw.conf)\" = root:644 ]" "the config file is root's, 0644 (the trust check accepts it, ibgw can read it)"
check "grep -Eq 'privileges: [0-9]+ thread\(s\) run as ibgw \(uid $UID_IBGW, gid $GID_IBGW\) with capabilities $KEPT_NAMES only' $GW_LOG" \
	"ibgwd logs the switch: $(grep -o 'privileges: .*' $GW_LOG | head -1)"

# every thread, by the kernel's account; prints one line per thread, status 1 if one is wrong
threads_ok() {
	local st tid bad=0 n=0
	for st in /proc/$GW_PID/task/*/status; do
		tid=$(basename "$(dirname "$st")")
		n=$((n + 1))
		awk -v want="$KEPT" -v bnd="$KEPT" -v uid="$UID_IBGW" -v gid="$GID_IBGW" -v tid="$tid" '
			/^Name:/ { name = $2 }
			/^Uid:/ { u = ($2 == uid && $3 == uid && $4 == uid && $5 == uid) }
			/^Gid:/ { g = ($2 == gid && $3 == gid && $4 == gid && $5 == gid) }
			/^CapInh:/ { inh = $2 } /^CapPrm:/ { prm = $2 } /^CapEff:/ { eff = $2 }
			/^CapBnd:/ { b = $2 } /^CapAmb:/ { amb = $2 } /^NoNewPrivs:/ { nnp = $2 } /^Seccomp:/ { sec = $2 }
			END {
				ok = u && g && inh == "0000000000000000" && amb == "0000000000000000" && prm == want &&
					eff == want && b == bnd && nnp == 1 && sec == 2
				printf "    thread %s %-16s uid/gid %s CapPrm %s CapEff %s CapBnd %s NoNewPrivs %s Seccomp %s %s\n",
					tid, name, (u && g) ? "ibgw" : "WRONG", prm, eff, b, nnp, sec, ok ? "" : "<- WRONG"
				exit !ok
			}' "$st" || bad=1
	done
	[ "$n" -ge 4 ] || { echo "    only $n thread(s)"; bad=1; }
	return $bad
}
check "threads_ok" "every thread: uid/gid ibgw, no_new_privs, seccomp filter, capabilities $KEPT_NAMES only"
regs0=$(m ibgw_ib_buffer_registrations_total)

bg tsrv npeer tcp-serve 5000 "$T/tsrv.log"
bg rsrv peer rs-serve "$IB" 7600 "$T/rsrv.log"
wait_for "grep -q listening $T/tsrv.out && grep -q listening $T/rsrv.out" 30 || fail "peers did not start"

# ---- both route kinds at once, after the drop ----
echo_both outc inc "$SIZE" -t 300
echo_verify outc inc "$SIZE" "$T/tsrv.log" "$T/rsrv.log"

# ---- concurrent sessions: new IB connections and TCP sessions, all after the drop ----
bg outm "$TOOLS/rs_peer" -t 300 -p 7000 "$IB" conns "$N" "$EACH"
bg inm eth_ns "$PY3" tests/eth/tcp_peer.py conc "$ETH_GW_IP" 9100 "$N" "$EACH"
reap outm; rc_out=$?
reap inm; rc_in=$?
echk "[ $rc_out = 0 ] && tail -1 $T/outm.out | grep -q '^ok conns=$N '" "outbound: $N concurrent sessions, each echo identical" ||
	grep -v '^ok' "$T/outm.out" | head -5
echk "[ $rc_in = 0 ] && grep -q '^ok $N' $T/inm.out" "inbound: $N concurrent sessions, each echo identical" ||
	head -3 "$T/inm.out"
regs1=$(m ibgw_ib_buffer_registrations_total)
check "[ $regs1 -gt $regs0 ]" "IB buffers registered for new connections without CAP_IPC_LOCK ($regs0 -> $regs1 registrations)"

# ---- SIGHUP as ibgw: a new route on a port below 1024 ----
e2e_conf "$ROUTES
$(gw_routes <<EOF
low2	ib:701		echo			max_sessions=4
EOF
)"
kill -HUP "$GW_PID"
check "wait_for '[ \$(m ibgw_config_reloads_total{result=\\\"ok\\\"}) = 1 ]' 20" "SIGHUP: the unprivileged daemon re-read its file (reloads ok = 1)"
check "wait_for '[ \$(m ibgw_ib_listeners) = 4 ]' 20" "the reload opened the ib:701 listener (4 IB listeners)"
r=$("$TOOLS/rs_peer" -t 60 -p 701 "$IB" echo 1000000 2>&1)
check "echo \"\$r\" | grep -q '^ok .*sent=1000000 recv=1000000 '" "an rsocket client echoes 1 MB through the new route ib:701"
check "threads_ok" "after the reload every thread is still ibgw with the same capabilities"

e2e_done
