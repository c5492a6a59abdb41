#!/usr/bin/env bash
# ibgwd's command line: -t on the example config, -t on a file with several kinds of errors (each one
# reported as FILE:LINE, exit 1), --version, -h, bad usage, a missing file, and the README's config
# reference being exactly what the keyword table prints (so the docs cannot drift); IPv6 destinations
# and allow lists in -t; the access log opened as start-up opens it.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

out=$("$IBGWD" -t -c conf/ibgw.conf) || fail "conf/ibgw.conf rejected: $out"
grep -q "config conf/ibgw.conf: OK" <<<"$out" || fail "no summary"
grep -q "web-out *ib:8080 *-> tcp:198.18.0.10:80" <<<"$out" || fail "summary lacks the routes"
ok "-t accepts conf/ibgw.conf and prints a summary"

cat >"$tmp/bad.conf" <<'EOF2'
[gateway]
wokers = 2
[ib]
rbuf_size = 12X
[route a]
listen = ib:7000
connect = echo
[route b]
listen = ib:7000
connect = discard
EOF2
"$IBGWD" -t -c "$tmp/bad.conf" >"$tmp/out" 2>&1
rc=$?
[ $rc = 1 ] || fail "bad file: exit $rc, expected 1"
grep -qx "$tmp/bad.conf:2: unknown key 'wokers' in \[gateway\]" "$tmp/out" || fail "unknown key not reported: $(cat "$tmp/out")"
grep -q "^$tmp/bad.conf:4: rbuf_size: unknown size unit" "$tmp/out" || fail "bad size not reported"
grep -q "^$tmp/bad.conf:9: route 'b' listens on ib:7000 like route 'a' (line 6)" "$tmp/out" || fail "shared listener not reported"
[ "$(grep -c "^$tmp/bad.conf:[0-9]*:" "$tmp/out")" = 3 ] || fail "expected exactly 3 errors: $(cat "$tmp/out")"
ok "-t rejects a bad file with all three errors as FILE:LINE, exit 1"

# a config path of ~4000 characters (PATH_MAX is 4096): each error message is built in a 1 KiB
# buffer, which such a path once overran (an ASan stack-buffer-overflow); now the path's tail is kept
long=$tmp
for i in $(seq 20); do long=$long/$(printf 'd%.0s' $(seq 195)); done
mkdir -p "$long" || fail "cannot make a long path"
cp "$tmp/bad.conf" "$long/bad.conf"
"$IBGWD" -t -c "$long/bad.conf" >"$tmp/out" 2>&1
rc=$?
[ $rc = 1 ] || fail "bad file at a ${#long}-character path: exit $rc, expected 1: $(tail -c 2000 "$tmp/out")"
grep -q 'AddressSanitizer' "$tmp/out" && fail "sanitizer report for a long path: $(head -c 3000 "$tmp/out")"
grep -qx "\.\.\.[d/]*/bad.conf:2: unknown key 'wokers' in \[gateway\]" "$tmp/out" ||
	fail "long path: error not reported with the path's tail: $(grep -v '^=' "$tmp/out" | cut -c1-200)"
ok "a ${#long}-character config path: errors reported with the path's tail, no overflow"

"$IBGWD" --version | grep -q '^ibgwd [0-9]' || fail "--version"
"$IBGWD" -h | grep -q -- '--config' || fail "-h"
"$IBGWD" --bogus >/dev/null 2>&1; [ $? = 2 ] || fail "bad option should exit 2"
"$IBGWD" -t -c "$tmp/none.conf" 2>"$tmp/err"; [ $? = 1 ] || fail "missing file should exit 1"
grep -q "No such file" "$tmp/err" || fail "missing file message"
ok "--version, -h, bad usage, missing file"

# IPv6 above the engine: a destination in brackets and a mixed allow list in the -t summary; a bare
# IPv6 destination and one without [eth] address6 each named FILE:LINE
cat >"$tmp/v6.conf" <<'EOF2'
[eth]
vdev = net_null0
address = 198.18.0.1/24
address6 = 2001:db8::1/64
[route v6]
listen = tcp:8000
connect = tcp:[2001:db8::10]:80 weight=2, tcp:198.18.0.10:80
allow = 198.18.0.0/15, 2001:db8:100::/48
EOF2
out=$("$IBGWD" -t -c "$tmp/v6.conf" 2>&1) || fail "IPv6 destination rejected: $out"
grep -q "v6 *tcp:8000 *-> tcp:\[2001:db8::10\]:80 +1 (roundrobin) .* allow 198.18.0.0/15 2001:db8:100::/48," <<<"$out" ||
	fail "summary of the IPv6 route: $out"
grep -q "eth: IPv6 address 2001:db8::1/64" <<<"$out" || fail "summary lacks the IPv6 address: $out"
sed -i '/^address6/d; s|^connect = .*|connect = tcp:2001:db8::10:80\nconnect = tcp:[2001:db8::10]:80|' "$tmp/v6.conf"
"$IBGWD" -t -c "$tmp/v6.conf" >"$tmp/out" 2>&1
rc=$?
[ $rc = 1 ] || fail "bad IPv6 file: exit $rc, expected 1: $(cat "$tmp/out")"
grep -qx "$tmp/v6.conf:6: connect: an IPv6 destination needs brackets: \[2001:db8::10\]:80" "$tmp/out" ||
	fail "bare IPv6 destination not reported: $(cat "$tmp/out")"
# (the second connect line goes on with the pool: its backend is checked as the pool's, so its
# missing address6 is the one other error)
grep -qx "$tmp/v6.conf:6: route 'v6': backend tcp:\[2001:db8::10\]:80 is IPv6 but \[eth\] has no address6" "$tmp/out" &&
	[ "$(grep -c "^$tmp/v6.conf:[0-9]" "$tmp/out")" = 2 ] || fail "a second connect line: $(cat "$tmp/out")"
sed -i '6d' "$tmp/v6.conf"
"$IBGWD" -t -c "$tmp/v6.conf" >"$tmp/out" 2>&1
[ $? = 1 ] || fail "IPv6 destination without address6 accepted"
grep -qx "$tmp/v6.conf:6: route 'v6': backend tcp:\[2001:db8::10\]:80 is IPv6 but \[eth\] has no address6" "$tmp/out" ||
	fail "missing address6 not reported: $(cat "$tmp/out")"
ok "-t: an IPv6 destination and a mixed allow list in the summary; a bare IPv6 destination and one without address6 named FILE:LINE"

# accept_proxy without proxy_from: accepted (existing configs keep working), with a warning naming
# FILE:LINE on stderr; with proxy_from: no warning, the summary says whose headers are believed
cat >"$tmp/pp.conf" <<'EOF2'
[eth]
vdev = net_null0
address = 198.18.0.1/24
[route lb]
listen = tcp:8000
connect = tcp:198.18.0.10:80
accept_proxy = v2
EOF2
"$IBGWD" -t -c "$tmp/pp.conf" >"$tmp/out" 2>"$tmp/err" || fail "accept_proxy without proxy_from rejected: $(cat "$tmp/out" "$tmp/err")"
grep -q "^$tmp/pp.conf:4: warning: route 'lb': accept_proxy without proxy_from: any peer" "$tmp/err" ||
	fail "no proxy_from warning: $(cat "$tmp/err")"
grep -q "lb .*accepts PROXY v2 from any peer" "$tmp/out" || fail "summary: $(cat "$tmp/out")"
echo "proxy_from = 198.18.0.5/32, 2001:db8::5" >>"$tmp/pp.conf"
"$IBGWD" -t -c "$tmp/pp.conf" >"$tmp/out" 2>"$tmp/err" || fail "proxy_from rejected: $(cat "$tmp/out" "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "a warning with proxy_from set: $(cat "$tmp/err")"
grep -q "lb .*accepts PROXY v2 from 198.18.0.5/32 2001:db8::5/128" "$tmp/out" || fail "summary with proxy_from: $(cat "$tmp/out")"
ok "-t: accept_proxy without proxy_from warns with FILE:LINE; with it, no warning and the summary lists the peers"

# the access log opens as start-up opens it, as the user it runs as: a path that would fail start-up
# fails -t (it used to pass -t, then the daemon refused to start)
mkdir "$tmp/logs" && chmod 755 "$tmp" "$tmp/logs"
printf '[gateway]\naccess_log = %s\n[route a]\nlisten = ib:7000\nconnect = echo\n' "$tmp/logs/none/access.log" >"$tmp/al.conf"
"$IBGWD" -t -c "$tmp/al.conf" >"$tmp/out" 2>&1 && fail "-t accepts an access log in a directory that does not exist: $(cat "$tmp/out")"
grep -q "$tmp/al.conf:2: access log: cannot open $tmp/logs/none/access.log: No such file or directory" "$tmp/out" ||
	fail "-t, an access log it cannot open: $(cat "$tmp/out")"
sed -i "s|/none/|/|" "$tmp/al.conf"
"$IBGWD" -t -c "$tmp/al.conf" >"$tmp/out" 2>&1 || fail "-t rejects a writable access log: $(cat "$tmp/out")"
ok_user=
if [ "$(id -u)" = 0 ] && getent passwd nobody >/dev/null; then
	# root may write there, the user the daemon becomes may not
	rm -f "$tmp/logs/access.log"
	sed -i "1a user = nobody" "$tmp/al.conf"
	"$IBGWD" -t -c "$tmp/al.conf" >"$tmp/out" 2>&1 && fail "-t as root accepts an access log user nobody cannot write: $(cat "$tmp/out")"
	grep -q "cannot open $tmp/logs/access.log: Permission denied" "$tmp/out" || fail "-t, user nobody: $(cat "$tmp/out")"
	[ ! -e "$tmp/logs/access.log" ] || fail "-t created the access log as root"
	chown nobody "$tmp/logs"
	"$IBGWD" -t -c "$tmp/al.conf" >"$tmp/out" 2>&1 || fail "-t rejects an access log user nobody may write: $(cat "$tmp/out")"
	[ "$(stat -c %U "$tmp/logs/access.log")" = nobody ] || fail "-t: the access log is not nobody's, as start-up would make it"
	ok_user=", and as [gateway] user (nobody) where root could but it could not"
	# not root: not the daemon's identity, so not checked (nor the file created as another user)
	rm -f "$tmp/logs/access.log"
	chmod 644 "$tmp/al.conf"
	out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$IBGWD" -t -c "$tmp/al.conf" 2>&1) ||
		fail "-t without root: $out"
	grep -q "access log not checked (-t runs without root)" <<<"$out" || fail "-t without root: $out"
	[ ! -e "$tmp/logs/access.log" ] || fail "-t without root created the access log"
	ok_user="$ok_user; not checked (said) when -t runs without root"
fi
ok "-t opens the access log as start-up would: a path it cannot open is rejected with FILE:LINE$ok_user"

# [eth] flow_peer passes a VIP's segments on, and a VIP is an address of the kernel TAP: without
# kernel_tap it does nothing, which -t says (FILE:LINE); with it, nothing is said
printf '[eth]\naddress = 198.18.0.1/24\nflow_peer = 198.18.0.3\n[route a]\nlisten = ib:7000\nconnect = echo\n' >"$tmp/fp.conf"
"$IBGWD" -t -c "$tmp/fp.conf" >"$tmp/out" 2>"$tmp/err" || fail "flow_peer without kernel_tap rejected: $(cat "$tmp/out" "$tmp/err")"
grep -q "^$tmp/fp.conf:3: warning: flow_peer without kernel_tap" "$tmp/err" || fail "no flow_peer warning: $(cat "$tmp/err")"
sed -i '1a kernel_tap = ibgw0' "$tmp/fp.conf"
"$IBGWD" -t -c "$tmp/fp.conf" >"$tmp/out" 2>"$tmp/err" || fail "flow_peer with kernel_tap rejected: $(cat "$tmp/out" "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "a warning with kernel_tap set: $(cat "$tmp/err")"
ok "-t: flow_peer without kernel_tap (no VIP to pass segments of) warns with FILE:LINE; with it, nothing"

"$IBGWD" --config-reference >"$tmp/ref.md"
awk '/<!-- config-reference:begin -->/{f=1;next}/<!-- config-reference:end -->/{f=0}f' README.md >"$tmp/readme.md"
diff -u "$tmp/ref.md" "$tmp/readme.md" >"$tmp/diff" || fail "README config reference differs from the keyword table (regenerate with: build/ibgwd --config-reference):
$(head -30 "$tmp/diff")"
ok "README config reference matches the keyword table"

# conf/ibgw.conf is the complete, commented example: every key of the table appears in its section,
# set or commented out ("# key = ...")
awk '/^### \[/ { sec = $2; sub(/^\[/, "", sec); sub(/\]$/, "", sec); next }
     /^\| `/ { split($0, f, "`"); print sec, f[2] }' "$tmp/ref.md" >"$tmp/keys"
awk '/^\[/ { sec = $1; sub(/^\[/, "", sec); sub(/\]$/, "", sec); next }
     /^[#;]? *[a-z_][a-z0-9_]* *=/ { k = $0; sub(/^[#;]? */, "", k); sub(/ *=.*/, "", k); print sec, k }' conf/ibgw.conf |
	sort -u >"$tmp/example"
missing=$(sort -u "$tmp/keys" | comm -23 - "$tmp/example")
[ -n "$(cat "$tmp/keys")" ] || fail "no keys parsed from the reference"
[ -z "$missing" ] || fail "conf/ibgw.conf does not show these keys (section key): $missing"
ok "conf/ibgw.conf shows all $(wc -l <"$tmp/keys") keys of the table"
