#!/usr/bin/env bash
# PROXY protocol v2 through ibgwd's TCP relay (tcp: listener -> tcp: destination, on the host):
#  - proxy_protocol = v2, read by a real consumer: HAProxy 2.6 with accept-proxy logs the client
#    address and port and the unique id it saw (%ci:%cp, %[fc_pp_unique_id]); HAProxy 2.6 has no
#    fc_pp_tlv, so the application TLVs (0xE0 route; 0xE1/0xE2 GID/QPN are for IB peers, see
#    tests/e2e) are checked by pp_peer.py's server, which parses the header with its own code; the
#    header reaches a server that speaks first although the client sends nothing, and is not counted
#    as relayed bytes; payloads are checked by sha256 both ways; health checks open with a LOCAL
#    header, and one with check_send and no check_expect delivers its bytes before it ends;
#  - accept_proxy = v2 with HAProxy's send-proxy-v2 in front (in the client namespace): the allow list
#    judges the address from the header (one source allowed, one refused, while HAProxy's own address
#    is outside the list), and that address goes on in ibgwd's own header; malformed headers,
#    unsupported ones, a header that never comes, and header + data in one segment (data relayed);
#    LOCAL keeps the TCP peer's address. Every refusal is counted in ibgw_proxy_header_errors_total.
#  - IPv6 in the headers (carried over IPv4: the engine's own IPv6 TCP is not needed for this): an
#    AF_INET6 header's source judged by an allow list mixing IPv6 and IPv4 nets (one admitted, one
#    refused, a v4-mapped source admitted by its IPv4 net, an unspecified one and a block cut short
#    refused), the address forwarded in ibgwd's own header as TCP over IPv6, every byte checked, and
#    the access log showing the IPv6 client.
# Before the feature: the config keys did not exist, ibgwd refused the file (this test failed).
# timeout: 240
# concurrent: mostly waits (HAProxy and PROXY peers, the 5 s header limit), little CPU
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
command -v haproxy >/dev/null || { echo "skip: no haproxy (Debian package haproxy)"; exit 77; }
pp() { "$PY3" tests/eth/pp_peer.py "$@"; }
GW=$ETH_GW_IP
PEER=$ETH_PEER_IP
PEER2=$ETH_PEER_IP2

eth_setup
ETH_GW_EXTRA="access_log = $tmp/access.log"
eth_gw_start "$tmp/ibgw.conf" "$(gw_routes <<EOF
pp-hap	tcp:8100	tcp:$PEER:5100	proxy_protocol=v2
pp-tlv	tcp:8101	tcp:$PEER:5102	proxy_protocol=v2
ap	tcp:8102	tcp:$PEER:5102	accept_proxy=v2	proxy_protocol=v2	allow=$PEER2/32
ap6	tcp:8103	tcp:$PEER:5102	accept_proxy=v2	proxy_protocol=v2	allow=2001:db8:5::/64,198.18.0.250/32
apo	tcp:8104	tcp:$PEER:5102	accept_proxy=v2
pph	tcp:8105	tcp:$PEER:5103	proxy_protocol=v2	check_interval=500ms	check_timeout=400ms	rise=2	fall=1	check_expect=OK
ppc	tcp:8106	tcp:$PEER:5104	proxy_protocol=v2	check_interval=500ms	check_timeout=400ms	rise=2	fall=1	check_send=PING\r\n
EOF
)"
m() { gw_metric "$ETH_STATS" "ibgw_$1"; }
mw() { gw_metric_wait "$ETH_STATS" "ibgw_$1" "$2"; } # KEY WANT: m once it reads WANT (3 s at most)
perr() { m "proxy_header_errors_total{route=\"ap\",reason=\"$1\"}"; }

# HAProxy: a consumer of ibgwd's headers (fe_pp, accept-proxy, in front of a kernel echo server) and a
# balancer in front of ibgwd (fe_lb, send-proxy-v2 to the accept_proxy route)
cat >"$tmp/haproxy.cfg" <<EOF
global
	log stdout format raw local0
defaults
	mode tcp
	log global
	timeout connect 5s
	timeout client 60s
	timeout server 60s
frontend fe_pp
	bind $PEER:5100 accept-proxy
	log-format "PPLOG %ci:%cp %fi:%fp uid=%[fc_pp_unique_id]"
	default_backend echo
backend echo
	server e 127.0.0.1:5101
frontend fe_lb
	bind $PEER:6000
	default_backend gw
backend gw
	# one attempt per client: a connection ibgwd resets early (the allow list) would be retried, and
	# counted again, at HAProxy's default of 3 retries
	retries 0
	server g $GW:8102 send-proxy-v2
EOF
eth_bg socat -t 30 TCP-LISTEN:5101,bind=127.0.0.1,reuseaddr,fork EXEC:cat
eth_bg haproxy -db -f "$tmp/haproxy.cfg" >"$tmp/haproxy.log" 2>&1
eth_bg "$PY3" tests/eth/pp_peer.py server "$PEER" 5102 "$tmp/pp.log"
eth_bg "$PY3" tests/eth/pp_peer.py server "$PEER" 5103 "$tmp/pph.log"
eth_bg "$PY3" tests/eth/pp_peer.py server "$PEER" 5104 "$tmp/ppc.log" --record
eth_wait_listen 5100
eth_wait_listen 5102
eth_wait_listen 5103
eth_wait_listen 5104
eth_wait_listen 6000
: >"$tmp/pp.log"
# the Nth JSON line of the python server's log, field F (jq)
ppl() { sed -n "$1p" "$tmp/pp.log" | jq -r "$2"; }
ppwait() { for _ in $(seq 100); do [ "$(wc -l <"$tmp/pp.log")" -ge "$1" ] && return 0; sleep 0.1; done; fail "the server logged no header #$1: $(cat "$tmp/pp.log")"; }

# ---- proxy_protocol = v2 to HAProxy accept-proxy ----
out=$(eth_ns "$PY3" tests/eth/pp_peer.py xfer "$GW" 8100 4000000 --sport 40123 --plain 2>&1) ||
	fail "through HAProxy accept-proxy: $out"
ok "4 MB through ibgwd (proxy_protocol = v2) and HAProxy accept-proxy, echoed intact: $out"
for _ in $(seq 50); do grep -q PPLOG "$tmp/haproxy.log" && break; sleep 0.1; done
line=$(grep PPLOG "$tmp/haproxy.log" | head -1)
[[ "$line" =~ ^PPLOG\ $PEER:40123\ $GW:8100\ uid=([0-9a-f]{16})$ ]] ||
	fail "HAProxy logged '$line', expected the client $PEER:40123, the listener $GW:8100 and a 16-digit uid (log: $(cat "$tmp/haproxy.log"))"
uid_hap=${BASH_REMATCH[1]}
ok "HAProxy saw the client $PEER:40123 -> $GW:8100 and unique id $uid_hap from the header"
# (a tcp -> tcp route: eth_to_eth is client -> server, eth_to_eth_back the way back)
a2b() { m "route_bytes_total{route=\"$1\",dir=\"eth_to_eth\"}"; }
[ "$(a2b pp-hap)" = 4000000 ] || fail "route bytes A->B: $(a2b pp-hap), expected 4000000 (the header is not relayed client data)"
ok "the header is not counted as relayed bytes (route_bytes_total = 4000000)"

# ---- health checks of a backend that requires the header: each opens with a LOCAL header (a server
# that speaks first, such as pp_peer.py's, says nothing before it; the checks used to send none and
# timed out, and every such backend was down) ----
up=0
for _ in $(seq 50); do [ "$(m "backend_up{route=\"pph\",backend=\"$PEER:5103\"}")" = 1 ] && up=1 && break; sleep 0.1; done
[ $up = 1 ] || fail "pph: the backend behind a PROXY-requiring server never came up: $(cat "$tmp/pph.log")"
[ "$(head -2 "$tmp/pph.log" | jq -r .cmd | sort -u)" = LOCAL ] || fail "pph: the checks sent: $(head -2 "$tmp/pph.log")"
ok "health checks on a proxy_protocol route open with a LOCAL header: the backend that requires one is up ($(wc -l <"$tmp/pph.log") checks logged, LOCAL)"
# a check with check_send and no check_expect passes once connected: what it sends still goes, and
# the check ends (a reset) once it was acknowledged (it used to be reset at once: the backend saw a
# connection that said nothing, not even the header it requires)
for _ in $(seq 50); do grep -q '"after": "PING' "$tmp/ppc.log" 2>/dev/null && break; sleep 0.1; done
line=$(grep -m1 -v '"error"' "$tmp/ppc.log")
[ "$(jq -r '[.cmd, .after] | @json' <<<"$line")" = '["LOCAL","PING\r\n"]' ] ||
	fail "ppc: a check with check_send and no check_expect: the backend got $(cat "$tmp/ppc.log")"
ok "a check with check_send and no check_expect sends the LOCAL header and its bytes ($(jq -r .end <<<"$line") after them)"

# ---- the TLVs, parsed by pp_peer.py; a header without any client byte ----
out=$(eth_ns "$PY3" tests/eth/pp_peer.py silent "$GW" 8101 2>&1) || fail "silent client: no greeting: $out"
ppwait 1
[ "$(ppl 1 .error)" = null ] || fail "header #1: $(ppl 1 .error)"
[ "$(ppl 1 '.src + " " + .dst + ":" + (.dport|tostring)')" = "$PEER $GW:8101" ] ||
	fail "header #1 addresses: $(sed -n 1p "$tmp/pp.log")"
uid1=$(ppl 1 '.tlv["0x05"]' | xxd -r -p)
[[ "$uid1" =~ ^[0-9a-f]{16}$ ]] || fail "UNIQUE_ID '$uid1' is not 16 lowercase hex digits"
[ "$(ppl 1 '.tlv["0xE0"]' | xxd -r -p)" = pp-tlv ] || fail "route TLV: $(sed -n 1p "$tmp/pp.log")"
[ "$(ppl 1 '.tlv | keys | join(",")')" = "0x05,0xE0" ] ||
	fail "TLVs of a TCP client: $(ppl 1 '.tlv | keys | join(",")'), expected 0x05,0xE0 (GID/QPN only for IB peers)"
ok "a server that speaks first got the header with no client byte: $PEER -> $GW:8101, uid $uid1, route pp-tlv"
out=$(eth_ns "$PY3" tests/eth/pp_peer.py xfer "$GW" 8101 3000000 --sport 40124 2>&1) || fail "xfer via pp-tlv: $out"
ppwait 2
[ "$(ppl 2 '.sport')" = 40124 ] || fail "header #2 source port: $(sed -n 2p "$tmp/pp.log")"
uid2=$(ppl 2 '.tlv["0x05"]' | xxd -r -p)
[ "$uid2" != "$uid1" ] && [ "$uid2" != "$uid_hap" ] || fail "unique ids repeat: $uid_hap $uid1 $uid2"
[ "$(a2b pp-tlv)" = 3000000 ] || fail "route bytes pp-tlv: $(a2b pp-tlv)"
ok "3 MB intact after the header ($out); each session has its own uid"

# ---- accept_proxy = v2 behind HAProxy send-proxy-v2 ----
out=$(eth_ns "$PY3" tests/eth/pp_peer.py xfer "$PEER" 6000 2000000 --src "$PEER2" --sport 40200 2>&1) ||
	fail "allowed client through HAProxy send-proxy-v2: $out"
ppwait 3
[ "$(ppl 3 '.src + ":" + (.sport|tostring) + " " + .dst + ":" + (.dport|tostring)')" = "$PEER2:40200 $PEER:6000" ] ||
	fail "forwarded header: $(sed -n 3p "$tmp/pp.log"), expected the real client $PEER2:40200 -> $PEER:6000"
[ "$(ppl 3 '.tlv["0xE0"]' | xxd -r -p)" = ap ] || fail "route TLV of ap"
ok "client $PEER2 via HAProxy (whose own address $PEER is not allowed) admitted by its real address, 2 MB intact, and forwarded as $PEER2:40200 -> $PEER:6000"
acl0=$(m 'route_sessions_rejected_total{route="ap",reason="acl"}')
out=$(eth_ns "$PY3" tests/eth/pp_peer.py xfer "$PEER" 6000 1000 --src "$PEER" --sport 40201 2>&1) &&
	fail "a client outside the allow list got through: $out"
acl1=$(mw 'route_sessions_rejected_total{route="ap",reason="acl"}' $((acl0 + 1)))
[ "$acl1" = $((acl0 + 1)) ] || fail "acl rejections $acl0 -> $acl1, expected one more"
grep -q '"sport": 40201' "$tmp/pp.log" && fail "the refused client reached the server"
ok "client $PEER via HAProxy refused by the allow list on its real address (rejected acl $acl0 -> $acl1)"

# ---- malformed, unsupported, late and incomplete headers: each resets its connection, counted ----
check_reset() { # REASON HEX [LIMIT [FLAGS...]]
	local reason=$1 hex=$2 limit=${3:-15} before after out
	shift $(($# < 3 ? $# : 3))
	before=$(perr "$reason")
	out=$(eth_ns "$PY3" tests/eth/pp_peer.py expect-reset "$GW" 8102 "$hex" "$limit" --src "$PEER2" "$@" 2>&1) ||
		fail "$reason: not reset: $out"
	after=$(mw "proxy_header_errors_total{route=\"ap\",reason=\"$reason\"}" $((before + 1)))
	[ "$after" = $((before + 1)) ] || fail "$reason: counted $before -> $after"
	echo "$out"
}
check_reset signature "$(printf 'GET / HTTP/1.0\r\n\r\n' | xxd -p | tr -d '\n')" >/dev/null
check_reset version "$(pp header --ver 1)" >/dev/null
check_reset command "$(pp header --cmd 2)" >/dev/null
check_reset family "$(pp header --fam 0x41)" >/dev/null
check_reset length "$(pp header --len 8)" >/dev/null
check_reset tlv "$(pp header --tlv 0xE0:6162 --len 16)" >/dev/null
check_reset unsupported "$(pp header --fam 0x00 --len 0)" >/dev/null
ok "malformed headers reset at once, each counted: signature version command family length tlv unsupported"
out=$(check_reset truncated "$(pp header | cut -c1-40)" 15 --eof) || fail "$out"
ok "a header cut short by the client's end of stream: reset, counted as truncated"

# a header that never comes (nothing, or 8 bytes of it): reset after the 5 s bound, not before
for raw in "" "$(pp header | cut -c1-16)"; do
	out=$(check_reset timeout "$raw" 30) || fail "$out"
	t=$(echo "$out" | sed -n 's/^closed after \([0-9.]*\)s.*/\1/p')
	awk -v t="$t" 'BEGIN { exit !(t >= 4.5) }' || fail "reset after ${t}s, before the 5 s bound"
	ok "no complete header (${#raw} hex digits sent): reset after ${t}s, counted as timeout"
done

# header + data in one segment: the data is relayed; the header's source is what goes on
hdr=$(pp header --src "$PEER2:1234" --dst "$GW:8102")
out=$(eth_ns "$PY3" tests/eth/pp_peer.py xfer "$GW" 8102 1000000 --src "$PEER2" --sport 40300 --pre "$hdr" 2>&1) ||
	fail "header + data in one segment: $out"
ppwait 4
[ "$(ppl 4 '.src + ":" + (.sport|tostring)')" = "$PEER2:1234" ] || fail "forwarded: $(sed -n 4p "$tmp/pp.log")"
ok "header + 1 MB sent in one send(): all data relayed intact, source $PEER2:1234 from the header forwarded"
# LOCAL (a balancer's health check): the TCP peer's own address stays, for the allow list too
out=$(eth_ns "$PY3" tests/eth/pp_peer.py xfer "$GW" 8102 100000 --src "$PEER2" --sport 40301 --pre "$(pp header local)" 2>&1) ||
	fail "LOCAL from an allowed address: $out"
ppwait 5
[ "$(ppl 5 '.src + ":" + (.sport|tostring)')" = "$PEER2:40301" ] || fail "LOCAL forwarded: $(sed -n 5p "$tmp/pp.log")"
out=$(eth_ns "$PY3" tests/eth/pp_peer.py xfer "$GW" 8102 1000 --src "$PEER" --sport 40302 --pre "$(pp header local)" 2>&1) &&
	fail "LOCAL from $PEER (not allowed) got through: $out"
ok "LOCAL keeps the TCP peer's address: $PEER2 admitted and forwarded as itself, $PEER refused"

# a connection waiting for its header across a reload that changes its route: admitted under the new
# config when the header completes (the old route object may be freed meanwhile: ASan would see a
# use after free)
eth_bg "$PY3" tests/eth/pp_peer.py xfer "$GW" 8102 100000 --src "$PEER2" --sport 40303 --pause 4 \
	--pre "$(pp header --src "$PEER2:4321" --dst "$GW:8102")"
xp=$ETH_BG_PID
sleep 1
sed -i '/^\[route ap\]/a max_sessions = 100' "$tmp/ibgw.conf"
r0=$(m 'config_reloads_total{result="ok"}')
kill -HUP "$GW_PID"
for _ in $(seq 50); do [ "$(m 'config_reloads_total{result="ok"}')" -gt "$r0" ] && break; sleep 0.1; done
[ "$(m 'config_reloads_total{result="ok"}')" -gt "$r0" ] || fail "the reload was not applied"
wait "$xp" || fail "the connection that waited across the reload failed"
ppwait 6
[ "$(ppl 6 '.src + ":" + (.sport|tostring)')" = "$PEER2:4321" ] || fail "after the reload: $(sed -n 6p "$tmp/pp.log")"
ok "a connection whose header was half there during a reload of its route was admitted after it, data intact"

# the real peer is judged again when its header completes: a reload that narrows proxy_from while it
# waits (the likely answer to an attack) applies to it too (it used to be admitted by the header)
reload_gw() {
	local r0
	r0=$(m 'config_reloads_total{result="ok"}')
	kill -HUP "$GW_PID"
	for _ in $(seq 50); do [ "$(m 'config_reloads_total{result="ok"}')" -gt "$r0" ] && return 0; sleep 0.1; done
	fail "the reload was not applied"
}
u0=$(perr untrusted)
eth_bg "$PY3" tests/eth/pp_peer.py xfer "$GW" 8102 1000 --src "$PEER2" --sport 40304 --pause 3 \
	--pre "$(pp header --src "$PEER2:4322" --dst "$GW:8102")"
xp=$ETH_BG_PID
sleep 1
sed -i '/^\[route ap\]/a proxy_from = 198.18.0.250/32' "$tmp/ibgw.conf"
reload_gw
wait "$xp" && fail "a header completed after a reload took its sender out of proxy_from was believed"
[ "$(mw 'proxy_header_errors_total{route="ap",reason="untrusted"}' $((u0 + 1)))" = $((u0 + 1)) ] ||
	fail "untrusted $u0 -> $(perr untrusted), expected one more"
sed -i '/^proxy_from = 198.18.0.250\/32$/d' "$tmp/ibgw.conf"
reload_gw
ok "a header completed after a reload took its sender out of proxy_from: reset, counted as untrusted"

# more silent connections than the waiting pool holds (1024 per worker): each beyond it resets the
# longest waiting (overload), the others are reset at the bound; all are counted
o0=$(perr overload) t0=$(perr timeout)
out=$(eth_ns "$PY3" tests/eth/pp_peer.py flood "$GW" 8102 1100 --src "$PEER2" 2>&1) || fail "flood: $out"
early=$(echo "$out" | sed -n 's/^early=//p') csecs=$(echo "$out" | sed -n 's/^connect_secs=//p')
if awk -v s="$csecs" 'BEGIN { exit !(s < 4) }'; then
	[ "$early" = 76 ] && [ "$(perr overload)" = $((o0 + 76)) ] && [ "$(perr timeout)" = $((t0 + 1024)) ] ||
		fail "1100 silent connections (made in ${csecs}s): $early reset early, overload $o0 -> $(perr overload), timeout $t0 -> $(perr timeout)"
	ok "1100 silent connections: 76 beyond the 1024 waiting slots, 76 reset early (overload), the rest at the bound (timeout)"
else
	# (a loaded host took longer than the 5 s bound to open them all: the first ones timed out and
	# freed their slots before the last came, so fewer were refused; every one is still counted once)
	[ $(($(perr overload) - o0 + $(perr timeout) - t0)) = 1100 ] && [ "$(perr timeout)" -ge $((t0 + 1024)) ] ||
		fail "1100 silent connections (made in ${csecs}s): overload $o0 -> $(perr overload), timeout $t0 -> $(perr timeout)"
	ok "1100 silent connections made in ${csecs}s (beyond the bound): each reset once, overload or timeout, none left"
fi

# the waiting slots are the worker's, for every accept_proxy route: silent connections filling them
# on one route (apo, any peer may speak PROXY there) do not lock out another route's balancer; the
# connection that waited longest makes room (the newcomer, the balancer's, used to be reset)
apo() { m "proxy_header_errors_total{route=\"apo\",reason=\"$1\"}"; }
active() { m 'tcp_connections_active{worker="0"}'; }
for try in 1 2; do
	o0=$(apo overload) a0=$(perr overload) c0=$(active)
	eth_bg "$PY3" tests/eth/pp_peer.py flood "$GW" 8104 1024 --src "$PEER"
	fl=$ETH_BG_PID
	full=0
	for _ in $(seq 80); do [ "$(active)" -ge $((c0 + 1024)) ] && full=1 && break; sleep 0.05; done
	if [ $full = 1 ]; then
		out=$(eth_ns "$PY3" tests/eth/pp_peer.py xfer "$GW" 8102 100000 --src "$PEER2" --sport 40305 \
			--pre "$(pp header --src "$PEER2:4323" --dst "$GW:8102")" 2>&1) ||
			fail "a balancer's connection to ap while apo's silent connections held every waiting slot: $out"
		[ "$(mw 'proxy_header_errors_total{route="apo",reason="overload"}' $((o0 + 1)))" = $((o0 + 1)) ] &&
			[ "$(perr overload)" = "$a0" ] ||
			fail "overload: apo $o0 -> $(apo overload) (expected one more), ap $a0 -> $(perr overload) (expected none)"
	fi
	wait "$fl"
	[ $full = 1 ] && break
	[ $try = 2 ] && fail "1024 silent connections were never all waiting at once (the host took over 4 s to open them), twice"
done
ok "1024 silent connections to apo held every waiting slot: a balancer's header to ap still got through (100 KB intact), apo's oldest was reset for it (overload)"

# ---- IPv6 in PROXY headers: allow lists of both families, forwarded as TCP over IPv6 ----
perr6() { m "proxy_header_errors_total{route=\"ap6\",reason=\"$1\"}"; }
ppsport() { jq -c "select(.sport == $1)" "$tmp/pp.log"; }
n0=$(wc -l <"$tmp/pp.log")
# the TCP peer ($PEER2) is outside ap6's list: only the header's source can admit it
hdr=$(pp header --src '[2001:db8:5::7]:41234' --dst '[2001:db8::1]:8103')
out=$(eth_ns "$PY3" tests/eth/pp_peer.py xfer "$GW" 8103 1000000 --src "$PEER2" --sport 40400 --pre "$hdr" 2>&1) ||
	fail "IPv6 source 2001:db8:5::7 (inside 2001:db8:5::/64): $out"
ppwait $((n0 + 1))
line=$(ppsport 41234)
[ "$(echo "$line" | jq -r '[.fam, .proto, .src, .sport, .dst, .dport] | map(tostring) | join(" ")')" = "2 1 2001:db8:5::7 41234 2001:db8::1 8103" ] ||
	fail "forwarded header of the IPv6 client: $line, expected TCP over IPv6 2001:db8:5::7:41234 -> 2001:db8::1:8103"
[ "$(echo "$line" | jq -r '.tlv["0xE0"]' | xxd -r -p)" = ap6 ] || fail "route TLV of ap6: $line"
ok "IPv6 source admitted by 2001:db8:5::/64 (the TCP peer $PEER2 is not in the list), forwarded as TCP over IPv6 [2001:db8:5::7]:41234 -> [2001:db8::1]:8103, 1 MB intact ($out)"
# a v4-mapped source in an IPv6 block is the IPv4 address it is: judged by 198.18.0.250/32, and
# forwarded over IPv6 (its destination is IPv6), the source v4-mapped
hdr=$(pp header --src '198.18.0.250:42345' --dst '[2001:db8::1]:8103')
out=$(eth_ns "$PY3" tests/eth/pp_peer.py xfer "$GW" 8103 300000 --src "$PEER2" --sport 40401 --pre "$hdr" 2>&1) ||
	fail "v4-mapped source 198.18.0.250 in an IPv6 block: $out"
ppwait $((n0 + 2))
line=$(ppsport 42345)
[ "$(echo "$line" | jq -r '[.fam, .src, .dst] | map(tostring) | join(" ")')" = "2 ::ffff:198.18.0.250 2001:db8::1" ] ||
	fail "forwarded header of the mixed pair: $line"
ok "v4-mapped source 198.18.0.250 in an IPv6 header admitted by 198.18.0.250/32 and forwarded v4-mapped over IPv6, 300 KB intact"
acl0=$(m 'route_sessions_rejected_total{route="ap6",reason="acl"}')
hdr=$(pp header --src '[2001:db8:6::7]:43456' --dst '[2001:db8::1]:8103')
out=$(eth_ns "$PY3" tests/eth/pp_peer.py xfer "$GW" 8103 1000 --src "$PEER2" --sport 40402 --pre "$hdr" 2>&1) &&
	fail "IPv6 source 2001:db8:6::7 (outside the list) got through: $out"
acl1=$(mw 'route_sessions_rejected_total{route="ap6",reason="acl"}' $((acl0 + 1)))
[ "$acl1" = $((acl0 + 1)) ] || fail "ap6 acl rejections $acl0 -> $acl1, expected one more"
[ -z "$(ppsport 43456)" ] || fail "the refused IPv6 client reached the server"
ok "IPv6 source 2001:db8:6::7 outside 2001:db8:5::/64 refused by the allow list (rejected acl $acl0 -> $acl1)"
# an unspecified source (it would read as "no address"), and an IPv6 block cut to an IPv4 one's length
u0=$(perr6 unsupported) l0=$(perr6 length)
out=$(eth_ns "$PY3" tests/eth/pp_peer.py expect-reset "$GW" 8103 "$(pp header --src '[::]:1' --dst '[2001:db8::1]:8103')" 15 --src "$PEER2" 2>&1) ||
	fail "unspecified IPv6 source: not reset: $out"
out=$(eth_ns "$PY3" tests/eth/pp_peer.py expect-reset "$GW" 8103 "$(pp header --src '[2001:db8:5::8]:1' --dst '[2001:db8::1]:8103' --len 12)" 15 --src "$PEER2" 2>&1) ||
	fail "IPv6 block of 12 bytes: not reset: $out"
[ "$(mw 'proxy_header_errors_total{route="ap6",reason="unsupported"}' $((u0 + 1)))" = $((u0 + 1)) ] &&
	[ "$(mw 'proxy_header_errors_total{route="ap6",reason="length"}' $((l0 + 1)))" = $((l0 + 1)) ] ||
	fail "ap6: unsupported $u0 -> $(perr6 unsupported), length $l0 -> $(perr6 length)"
ok "an IPv6 header with source :: (unsupported) and one whose block is cut to 12 bytes (length) reset, counted"
# the access log has the header's IPv6 client (it is written every 50 ms)
for _ in $(seq 50); do grep -q '"port":41234,' "$tmp/access.log" 2>/dev/null && break; sleep 0.1; done
line=$(grep '"port":41234,' "$tmp/access.log")
[ "$(echo "$line" | jq -r '.route + " " + .client.addr + " " + (.client.port|tostring) + " " + .backend.addr + " " + (.client_to_backend.bytes|tostring)')" = "ap6 2001:db8:5::7 41234 $PEER 1000000" ] ||
	fail "access log line of the IPv6 client: '$line'"
[ "$(echo "$line" | jq -r '.client.via.addr + " " + (.client.via.port|tostring)')" = "$PEER2 40400" ] ||
	fail "access log line of the IPv6 client: no real peer ($PEER2 port 40400) beside the header's: '$line'"
[ "$(grep '"port":42345,' "$tmp/access.log" | jq -r .client.addr)" = 198.18.0.250 ] ||
	fail "access log line of the v4-mapped client: $(grep '"port":42345,' "$tmp/access.log")"
ok "access log: client 2001:db8:5::7 port 41234 via $PEER2 port 40400 with its 1000000 bytes; the v4-mapped one as 198.18.0.250"

# the reasons are in /metrics, and nothing is left behind
curl -s "http://127.0.0.1:$ETH_STATS/metrics" | grep '^ibgw_proxy_header_errors_total{route="ap"' | grep -v ' 0$'
sleep 1
[ "$(m 'worker_sessions_active{worker="0"}')" = 0 ] || fail "sessions left: $(m 'worker_sessions_active{worker="0"}')"
# a connection still waiting for its header when ibgwd stops: it holds no session, the drain does
# not wait for it, and nothing leaks
eth_bg "$PY3" tests/eth/pp_peer.py expect-reset "$GW" 8102 "" 30 --src "$PEER2"
sleep 0.5
gw_stop TERM 20 || fail "ibgwd exited with $? (sanitizer report or leak?)"
ok "no session left; ibgwd (ASan build) stopped cleanly with a connection still waiting for its header"
