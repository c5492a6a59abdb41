#!/usr/bin/env bash
# Least privilege and config trust on the host (af_packet on a veth; the host has no RDMA device, the
# IB side stays closed: tests/e2e/test_e2e_unpriv.sh covers it in the VM):
#   - `[gateway] user = nobody`, started with the bounding set of conf/ibgwd.service (the drop needs no
#     capability the unit leaves out): every thread of ibgwd runs as nobody with no_new_privs and exactly the
#     capabilities an af_packet port needs (CAP_NET_RAW, CAP_NET_ADMIN; plus CAP_IPC_LOCK when this
#     machine does not let RLIMIT_MEMLOCK be lifted), in the effective, permitted and bounding sets;
#     and the seccomp filter (Seccomp: 2) that refuses what those would still allow (the filter itself:
#     tests/unit/test_privs_filter.c); /metrics answers; 1 MB echoes through the port; SIGHUP as nobody re-reads the root-owned 0644 file;
#     a reload adding an ib: listener below 1024 (none at start: CAP_NET_BIND_SERVICE not kept) is
#     refused, saying why; SIGTERM drains, exit 0;
#   - a user that does not exist fails at start and with -t, naming it;
#   - a world-writable or group-writable config is refused, the file named; root's 0644 is accepted;
#   - `eal_args = -d /tmp/x.so` is refused as FILE:LINE.
# timeout: 120
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (switching user)"; exit 77; }
getent passwd nobody >/dev/null || { echo "SKIP: no user nobody"; exit 77; }

ns=ibgwp$$ gw_if=ibgpg$$ ns_if=ibgpn$$
tmp=$(mktemp -d)
chmod 755 "$tmp" # nobody must reach the file to reload it
cleanup() {
	local pid=$GW_PID
	gw_cleanup
	[ -n "$pid" ] && for d in /tmp/ibgwd.*/dpdk/ibgwd-"$pid"; do [ -d "$d" ] && rm -rf "${d%/dpdk/*}"; done
	[ -n "${made_tmp_dpdk:-}" ] && rm -rf /tmp/dpdk
	gw_veth_del "$ns" "$gw_if"
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

gw_veth "$ns" "$gw_if" "$ns_if" 198.18.8.2/24

port=$(gw_free_port)
conf=$tmp/ibgw.conf
write_conf() { # $1: [gateway] extra, $2: eal_args
	cat >"$conf" <<CONF
[gateway]
workers = 2
stats = 127.0.0.1:$port
drain_timeout = 2s
$1
[eth]
vdev = net_af_packet0,iface=$gw_if,qdisc_bypass=1,qpairs=2
eal_args = $2
address = 198.18.8.1/24
mbufs = 4095
[route diag]
listen = tcp:7
connect = echo
CONF
	chmod 644 "$conf"
}

# ---- refusals ----
write_conf "user = ibgw-no-such-user-$$" "--no-pci --no-huge -m 256"
"$IBGWD" -t -c "$conf" >/dev/null 2>"$tmp/err" && fail "-t accepted an unknown user"
grep -q "user 'ibgw-no-such-user-$$': no such user" "$tmp/err" || fail "unknown user message: $(cat "$tmp/err")"
"$IBGWD" -f -c "$conf" >/dev/null 2>"$tmp/err" && fail "ibgwd started with an unknown user"
grep -q "no such user" "$tmp/err" || fail "unknown user at start: $(cat "$tmp/err")"
ok "an unknown user fails with -t and at start, named"

write_conf "" "--no-pci --no-huge -m 256"
for mode in 666 646 664 620; do
	chmod "$mode" "$conf"
	"$IBGWD" -t -c "$conf" >/dev/null 2>"$tmp/err" && fail "a mode $mode config was accepted"
	grep -q "^$conf: refusing a config file writable by .* (mode 0$mode)" "$tmp/err" || fail "mode $mode: $(cat "$tmp/err")"
done
chmod 644 "$conf"
"$IBGWD" -t -c "$conf" >/dev/null 2>"$tmp/err" || fail "root's 0644 config refused: $(cat "$tmp/err")"
ok "configs writable by group or others are refused with the file named; root's 0644 is accepted"

write_conf "" "-d /tmp/x.so"
"$IBGWD" -t -c "$conf" >/dev/null 2>"$tmp/err" && fail "eal_args -d accepted"
line=$(grep -n '^eal_args' "$conf" | cut -d: -f1)
grep -q "^$conf:$line: eal_args: '-d' loads shared objects" "$tmp/err" || fail "eal_args -d: $(cat "$tmp/err")"
ok "eal_args = -d /tmp/x.so refused as $conf:$line"

# ---- running as nobody ----
# a local user made /tmp/dpdk first (DPDK's default runtime directory for a user that is not root,
# where it keeps its shared config): ibgwd must keep its files in a directory of its own instead
made_tmp_dpdk=
if [ ! -e /tmp/dpdk ]; then
	mkdir -m 0777 /tmp/dpdk && chown daemon /tmp/dpdk && made_tmp_dpdk=1
fi
write_conf "user = nobody" "--no-pci --no-huge -m 256"
uid=$(id -u nobody) gid=$(id -g nobody)
want=$((1 << 12 | 1 << 13)) # CAP_NET_ADMIN, CAP_NET_RAW
[ "$(ulimit -Hl)" = unlimited ] || want=$((want | 1 << 14)) # CAP_IPC_LOCK: the limit cannot be lifted here
# started with the bounding set the shipped systemd unit gives (CapabilityBoundingSet): the drop must
# need nothing beyond it (a chown of the runtime directory needed CAP_CHOWN, and the unit's service
# restart-looped)
bset=$(sed -n 's/^CapabilityBoundingSet=//p' conf/ibgwd.service | tr 'A-Z ' 'a-z\n' | sed -n 's/^cap_/+/p' | paste -sd, -)
[ -n "$bset" ] || fail "no CapabilityBoundingSet in conf/ibgwd.service"
GW_LOG=${BUILD:-build}/test-logs/test_privs.ibgwd-$$.log
mkdir -p "$(dirname "$GW_LOG")"
setpriv --bounding-set "-all,$bset" "$IBGWD" -f -c "$conf" >>"$GW_LOG" 2>&1 &
GW_PID=$!
gw_wait_ready "$port"
grep -Eq "privileges: [0-9]+ thread\(s\) run as nobody \(uid $uid, gid $gid\)" "$GW_LOG" || fail "no privileges line"
bad=0 n=0
for st in /proc/$GW_PID/task/*/status; do
	n=$((n + 1))
	line=$(awk '/^(Name|Uid|Gid|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):/ { printf "%s %s ", $1, $2 }' "$st")
	eval "$(awk -v w="$want" '
		/^Uid:/ { printf "u=\"%s %s %s %s\"\n", $2, $3, $4, $5 } /^Gid:/ { printf "g=\"%s %s %s %s\"\n", $2, $3, $4, $5 }
		/^Cap(Inh|Prm|Eff|Bnd|Amb):/ { k = substr($1, 1, length($1) - 1); printf "%s=$((16#%s))\n", k, $2 }
		/^NoNewPrivs:/ { printf "nnp=%s\n", $2 } /^Seccomp:/ { printf "sec=%s\n", $2 }' "$st")"
	if [ "$u" = "$uid $uid $uid $uid" ] && [ "$g" = "$gid $gid $gid $gid" ] && [ "$CapPrm" = "$want" ] &&
		[ "$CapEff" = "$want" ] && [ "$CapBnd" = "$want" ] && [ "$CapInh" = 0 ] && [ "$CapAmb" = 0 ] && [ "$nnp" = 1 ] && [ "$sec" = 2 ]; then
		echo "    $line"
	else
		echo "    $line <- WRONG"
		bad=1
	fi
done
[ $bad = 0 ] && [ $n -ge 4 ] || fail "threads not dropped as expected ($n threads)"
ok "all $n threads: uid/gid nobody, no_new_privs, seccomp filter, capabilities $(printf '%x' $want) only"
[ -z "$(ls -A /tmp/dpdk 2>/dev/null)" ] || fail "ibgwd put its runtime files in /tmp/dpdk, a directory another user made: $(ls -A /tmp/dpdk)"
rundir=$(ls -d /tmp/ibgwd.*/dpdk/ibgwd-"$GW_PID" 2>/dev/null | head -1)
rundir=${rundir%/dpdk/*}
[ -n "$rundir" ] && [ "$(stat -c '%U %a' "$rundir")" = "nobody 700" ] ||
	fail "no private runtime directory /tmp/ibgwd.*/dpdk/ibgwd-$GW_PID ($(ls -ld /tmp/ibgwd.* 2>&1))"
ok "DPDK's runtime files in $rundir (nobody's, 0700, made by ibgwd), not in the /tmp/dpdk another user made"
curl -sf "http://127.0.0.1:$port/metrics" | grep -q '^ibgw_build_info' || fail "/metrics"
# the datapath as nobody: 1 MB through the echo route, checked byte for byte
gw_echo_check "$ns" 198.18.8.1 7 $((1 << 20)) || fail "echo through tcp:7 as nobody"
ok "1 MB echoed through tcp:7 (af_packet, DPDK TCP engine) by the unprivileged daemon, sha256 identical"
kill -HUP "$GW_PID"
for i in $(seq 100); do
	[ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="ok"}')" = 1 ] && break
	sleep 0.1
done
[ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="ok"}')" = 1 ] || fail "SIGHUP as nobody did not reload"
ok "SIGHUP as nobody re-read the root-owned 0644 file"
# a reload that adds an ib: listener below 1024 is refused: the file at start had none, so
# CAP_NET_BIND_SERVICE was not kept, and rdma_cm would refuse the bind after the reload said it was done
cat >>"$conf" <<CONF
[route low]
listen = ib:701
connect = echo
CONF
kill -HUP "$GW_PID"
for i in $(seq 100); do
	[ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="failed"}')" = 1 ] && break
	sleep 0.1
done
[ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="failed"}')" = 1 ] ||
	fail "a reload adding ib:701 as nobody without CAP_NET_BIND_SERVICE was not refused"
grep -qF "$conf:$(grep -n '^\[route low\]' "$conf" | cut -d: -f1): route low listens on ib:701, below 1024, which needs CAP_NET_BIND_SERVICE" "$GW_LOG" ||
	fail "the refusal does not say why, or not where: $(grep 'ib:701' "$GW_LOG")"
[ "$(gw_metric "$port" ibgw_routes)" = 1 ] || fail "the refused reload changed the routes"
ok "a reload adding ib:701 (below 1024, CAP_NET_BIND_SERVICE not kept) refused, saying why; the routes unchanged"
gw_stop TERM 20
rc=$?
[ $rc = 0 ] || fail "ibgwd exited $rc"
ok "SIGTERM: drained, exit 0"
[ ! -e "$rundir" ] || fail "the runtime directory $rundir left behind: $(ls -R "$rundir")"
[ -n "$made_tmp_dpdk" ] && rmdir /tmp/dpdk
ok "its runtime directory removed at exit"
