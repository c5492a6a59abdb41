#!/usr/bin/env bash
# conf/ibgwd.service against what ibgwd does. systemd does not run here (no PID 1 of its), so the
# unit's sandbox is checked against a trace instead: ibgwd (the release build, as installed) runs under
# strace the way the unit's comments tell an operator to run it ([gateway] user, kernel_tap, a file
# access log), through start-up, a relayed session, /metrics, SIGHUP, SIGUSR1 and SIGTERM, and
#   - every system call it made must be one the unit's SystemCallFilter admits (the groups expanded
#     by systemd-analyze; under the unit any other call fails with EPERM), seccomp among them (the
#     privilege drop ran);
#   - every socket family it opened must be in RestrictAddressFamilies.
# (The IB side does not run on this host: tests/e2e/test_e2e_unpriv.sh runs it unprivileged in the VM.)
# timeout: 180
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (switching user)"; exit 77; }
command -v strace >/dev/null || fail "strace missing (make deps installs it)"
command -v systemd-analyze >/dev/null || fail "systemd-analyze missing (package systemd; make deps installs it)"
getent passwd nobody >/dev/null || { echo "SKIP: no user nobody"; exit 77; }
IBGWD=$GW_ROOT/${BUILD:-build}/release/ibgwd
unit=conf/ibgwd.service

ns=ibgwu$$ gw_if=ibgug$$ ns_if=ibgun$$ tap=ibgut$$
tmp=$(mktemp -d)
chmod 755 "$tmp" # nobody reads the file on SIGHUP and writes the access log here
STRACE_PID=
cleanup() {
	[ -n "${UNIT_TRACE_KEEP:-}" ] && cp "$tmp/trace" "$UNIT_TRACE_KEEP" # (to read what it did)
	[ -n "$STRACE_PID" ] && kill "$STRACE_PID" 2>/dev/null
	gw_cleanup
	gw_veth_del "$ns" "$gw_if"
	ip link del "$tap" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

gw_veth "$ns" "$gw_if" "$ns_if" 198.18.9.2/24

port=$(gw_free_port)
conf=$tmp/ibgw.conf
touch "$tmp/access.log" && chown nobody "$tmp/access.log"
cat >"$conf" <<CONF
[gateway]
workers = 2
stats = 127.0.0.1:$port
drain_timeout = 2s
user = nobody
access_log = $tmp/access.log
[eth]
vdev = net_af_packet0,iface=$gw_if,qdisc_bypass=1,qpairs=2
eal_args = --no-pci --no-huge -m 256
address = 198.18.9.1/24
mbufs = 4095
kernel_tap = $tap
[route diag]
listen = tcp:7
connect = echo
CONF
chmod 644 "$conf"

# -f: every thread; the trace is written by strace, not by the traced daemon
strace -f -qq -o "$tmp/trace" "$IBGWD" -f -c "$conf" >"$tmp/log" 2>&1 &
STRACE_PID=$!
GW_LOG=$tmp/log
for ((i = 0; i < 600; i++)); do
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] && break
	kill -0 "$STRACE_PID" 2>/dev/null || fail "ibgwd exited during start-up under strace"
	sleep 0.1
done
GW_PID=$(pgrep -P "$STRACE_PID" -x ibgwd | head -1)
[ -n "$GW_PID" ] || fail "no ibgwd under strace"
grep -q "run as nobody" "$tmp/log" || fail "the privilege drop did not run: $(grep privileges "$tmp/log")"
gw_echo_check "$ns" 198.18.9.1 7 $((256 << 10)) || fail "echo through tcp:7"
curl -sf "http://127.0.0.1:$port/metrics" | grep -q '^ibgw_build_info' || fail "/metrics"
kill -HUP "$GW_PID"
for i in $(seq 100); do [ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="ok"}')" = 1 ] && break; sleep 0.1; done
[ "$(gw_metric "$port" 'ibgw_config_reloads_total{result="ok"}')" = 1 ] || fail "SIGHUP did not reload"
kill -USR1 "$GW_PID"
sleep 0.5
grep -q '"route":"diag"' "$tmp/access.log" || fail "no access log line for the session"
kill -TERM "$GW_PID"
wait "$STRACE_PID"
rc=$?
STRACE_PID= GW_PID=
[ "$rc" = 0 ] || fail "ibgwd exited $rc under strace"
ok "under strace as nobody with kernel_tap and an access log: start, 256 KiB echoed intact, /metrics, SIGHUP, SIGUSR1, SIGTERM (exit 0)"

# ---- the calls against SystemCallFilter ----
python3 - "$unit" "$tmp/trace" <<'PY' || fail "the unit's sandbox refuses what ibgwd does (above)"
import re, subprocess, sys
unit, trace = sys.argv[1], sys.argv[2]
out = subprocess.run(['systemd-analyze', 'syscall-filter'], capture_output=True, text=True, check=True).stdout
groups, cur = {}, None
for line in out.split('\n'):
    if line.startswith('@'):
        cur = line.strip()
        groups[cur] = []
    elif cur and line.strip() and not line.strip().startswith('#'):
        groups[cur].append(line.strip())
def expand(x):
    return set().union(*(expand(y) for y in groups[x])) if x.startswith('@') else {x}
allowed, families = set(), set()
for line in open(unit):
    line = line.strip()
    if line.startswith('SystemCallFilter='):
        for item in line.split('=', 1)[1].split():
            assert not item.startswith('~'), 'a deny list: this check reads allow lists only'
            allowed |= expand(item)
    elif line.startswith('RestrictAddressFamilies='):
        families |= set(line.split('=', 1)[1].split())
assert allowed and families, 'no SystemCallFilter or RestrictAddressFamilies in ' + unit
# a call's name opens its line, or its "<... NAME resumed>" line (-f splits calls that block); its
# result ends the line that finishes it
made, worked, opened = {}, set(), set()
for line in open(trace):
    m = re.match(r'\d+\s+(?:<\.\.\. )?([a-z0-9_]+)[( ]', line)
    if not m or m.group(1) in ('exit', 'resumed', 'killed'):
        continue
    name = m.group(1)
    if 'resumed>' not in line:
        made[name] = made.get(name, 0) + 1
    if 'unfinished ...>' not in line and not re.search(r'= -1 E[A-Z]+ ', line):
        worked.add(name)
    s = re.match(r'\d+\s+socket(?:pair)?\((AF_[A-Z0-9]+)', line)
    if s:
        opened.add(s.group(1))
# a call the filter would refuse is harmless where it failed here too and ibgwd went on without it
# (DPDK's iopl: ENOSYS on this kernel, EPERM without CAP_SYS_RAWIO)
bad = sorted(c for c in set(made) - allowed if c in worked)
for c in bad:
    print(f'  {c}: {made[c]} call(s), not in SystemCallFilter (EPERM under the unit)')
for c in sorted(set(made) - allowed - set(bad)):
    print(f'  ({c}: outside SystemCallFilter, but it failed here too and ibgwd went on)')
badf = sorted(opened - families)
for f in badf:
    print(f'  socket({f}): not in RestrictAddressFamilies')
if 'seccomp' not in made:
    print('  no seccomp call in the trace: the privilege drop did not run, the check proves little')
    sys.exit(1)
print(f'{len(made)} distinct calls, {sum(made.values())} in all; families {sorted(opened)}')
sys.exit(1 if bad or badf else 0)
PY
ok "every system call ibgwd made is in $unit's SystemCallFilter, every socket family in RestrictAddressFamilies"
