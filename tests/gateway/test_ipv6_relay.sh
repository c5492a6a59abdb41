#!/usr/bin/env bash
# IPv6 through a tcp: route end to end (#16), kernel TCP peers in a namespace on both sides of ibgwd's
# own engine (af_packet): an IPv6 client -> the dual-stack `listen = tcp:P` -> `connect =
# tcp:[2001:db8:...]:P2`, and an IPv4 client to the same IPv6 destination, every byte checked by
# sha256 at the client (the echo) and at the server (what it received); an allow list of both families
# (2001:db8:0:1::2/128, 198.18.0.2/32) admits those clients and refuses an IPv6 and an IPv4 source
# outside it, counted as rejected{reason="acl"}, with nothing reaching the server; the access log shows
# the IPv6 addresses of client and backend; an IPv6 client to an IPv4 destination with proxy_protocol
# = v2 sends a TCP-over-IPv6 header (parsed by pp_peer.py's own code) naming it.
# accept_proxy with proxy_from on the dual-stack listener (the review's case: a route firewalled for
# IPv4 only, reached over IPv6 with a forged header): a peer outside proxy_from, over IPv6 and over
# IPv4, sending a valid header whose source the allow list admits, is reset before its header is
# read (a silent one at once, not at the header bound), counted as
# proxy_header_errors_total{reason="untrusted"} and logged (rate-limited: one line a second, with the
# count left out), nothing reaching the server; peers inside it, IPv6 and IPv4,
# are served with the header's source, every byte checked.
# Before #16 the config was refused (IPv6 destination and allow entry), and the engine served no TCP
# over IPv6.
# timeout: 150
# concurrent: mostly waits (small relayed transfers), little CPU
set -u
cd "$(dirname "$0")/../.."
. tests/lib/ibgwd.sh
. tests/eth/lib.sh
eth_test_init
m() { gw_metric "$ETH_STATS" "ibgw_$1"; }
v6p() { eth_ns "$PY3" tests/gateway/v6_peer.py "$@"; }
GW6=$ETH_GW_IP6
C6=$ETH_PEER_IP6     # an allowed IPv6 client (2001:db8:0:1::2)
C6X=2001:db8:0:1::3  # an IPv6 client outside the allow list
S6=2001:db8:0:1::10  # the IPv6 server
C4=$ETH_PEER_IP      # an allowed IPv4 client (198.18.0.2)
C4X=$ETH_PEER_IP2    # an IPv4 client outside the list (198.18.0.3)

eth_setup
eth_peer_v6
for a in $C6X $S6; do eth_ns ip -6 addr add "$a/64" dev "$ETH_PEER" nodad || fail "cannot add $a"; done
ETH_GW_EXTRA="access_log = $tmp/access.log"
eth_gw_start "$tmp/ibgw.conf" "address6 = $GW6/64
$(gw_routes <<EOF
r6	tcp:8200	tcp:[$S6]:5200	allow=$C6/128,$C4/32
pp6	tcp:8201	tcp:$C4:5201	proxy_protocol=v2
apf	tcp:8202	tcp:$C4:5201	accept_proxy=v2	proxy_protocol=v2	allow=198.18.0.0/24	proxy_from=$C6/128,$C4/32
EOF
)"
eth_bg "$PY3" tests/gateway/v6_peer.py server "$S6" 5200 "$tmp/s6.log"
eth_bg "$PY3" tests/eth/pp_peer.py server "$C4" 5201 "$tmp/pp.log" --quiet
eth_wait_listen 5200
eth_wait_listen 5201
: >"$tmp/s6.log"
: >"$tmp/pp.log"
# the server's record of the connection from port $1 (ibgwd's own source port is not known: by order)
srv() { sed -n "$1p" "$tmp/s6.log"; }
srvwait() { for _ in $(seq 100); do [ "$(wc -l <"$tmp/s6.log")" -ge "$1" ] && return 0; sleep 0.1; done; fail "the server logged no connection #$1: $(cat "$tmp/s6.log")"; }

# ---- an IPv6 client -> IPv6 destination, 20 MB; an IPv4 client -> the same destination, 5 MB ----
# relayed N DST SIZE SRC SPORT WHAT: SIZE bytes from SRC:SPORT through DST:8200 echoed intact, and the
# server's record #N shows them all from $GW6 with the same sha256 (the client's $out stays for the ok line)
relayed() {
	local sent
	out=$(v6p xfer "$2" 8200 "$3" --src "$4" --sport "$5" 2>&1) || fail "$6: $out"
	sent=$(echo "$out" | sed -n 's/^sent [0-9]* sha256 \([0-9a-f]*\),.*/\1/p')
	srvwait "$1"
	[ "$(srv "$1" | jq -r '[.src, .bytes, .sha256, .error] | map(tostring) | join(" ")')" = "$GW6 $3 $sent null" ] ||
		fail "the IPv6 server's view of $6: $(srv "$1"), expected $3 bytes from $GW6, sha256 $sent"
}
relayed 1 "$GW6" 20000000 "$C6" 41000 "IPv6 client $C6 -> [$GW6]:8200 -> [$S6]:5200"
ok "IPv6 client $C6 -> [$GW6]:8200 -> [$S6]:5200: 20 MB, sha256 equal at the server (from $GW6) and in the echo ($out)"
relayed 2 "$ETH_GW_IP" 5000000 "$C4" 41001 "IPv4 client $C4 -> IPv6 destination"
ok "IPv4 client $C4 -> $ETH_GW_IP:8200 -> [$S6]:5200: 5 MB, sha256 equal at the server and in the echo"

# ---- the allow list of both families refuses an IPv6 and an IPv4 source outside it ----
acl0=$(m 'route_sessions_rejected_total{route="r6",reason="acl"}')
out=$(v6p refused "$GW6" 8200 --src "$C6X" 2>&1) || fail "IPv6 client $C6X (not in the allow list) was served: $out"
out=$(v6p refused "$ETH_GW_IP" 8200 --src "$C4X" 2>&1) || fail "IPv4 client $C4X (not in the allow list) was served: $out"
acl1=$(m 'route_sessions_rejected_total{route="r6",reason="acl"}')
[ "$acl1" = $((acl0 + 2)) ] || fail "acl rejections $acl0 -> $acl1, expected two more"
sleep 0.3
[ "$(wc -l <"$tmp/s6.log")" = 2 ] || fail "a refused client reached the server: $(cat "$tmp/s6.log")"
ok "allow = $C6/128, $C4/32: $C6X and $C4X refused at once (rejected acl $acl0 -> $acl1), the server saw neither"

# ---- PROXY v2 from an IPv6 client to an IPv4 destination: TCP over IPv6 ----
out=$(v6p xfer "$GW6" 8201 1000000 --src "$C6" --sport 41002 2>&1) || fail "IPv6 client -> IPv4 destination with PROXY v2: $out"
for _ in $(seq 50); do [ -s "$tmp/pp.log" ] && break; sleep 0.1; done
[ "$(jq -r '[.fam, .proto, .src, .sport, .dst, .dport] | map(tostring) | join(" ")' "$tmp/pp.log")" = "2 1 $C6 41002 $GW6 8201" ] ||
	fail "PROXY header of the IPv6 client: $(cat "$tmp/pp.log"), expected TCP over IPv6 [$C6]:41002 -> [$GW6]:8201"
ok "IPv6 client -> IPv4 destination with proxy_protocol = v2: header TCP over IPv6 [$C6]:41002 -> [$GW6]:8201, 1 MB intact after it"

# ---- the access log: IPv6 addresses as text, both ends ----
for _ in $(seq 50); do [ "$(grep -c '"event":"end"' "$tmp/access.log" 2>/dev/null)" -ge 3 ] && break; sleep 0.1; done
al() { jq -r "select(.client.port == $1) | [.route, .client.addr, .backend.addr, .backend.port, .client_to_backend.bytes, .backend_to_client.bytes, .reason] | map(tostring) | join(\" \")" "$tmp/access.log"; }
[ "$(al 41000)" = "r6 $C6 $S6 5200 20000000 20000000 ok" ] || fail "access log of the IPv6 session: '$(al 41000)' ($(cat "$tmp/access.log"))"
[ "$(al 41001)" = "r6 $C4 $S6 5200 5000000 5000000 ok" ] || fail "access log of the IPv4 client's session: '$(al 41001)'"
[ "$(al 41002)" = "pp6 $C6 $C4 5201 1000000 1000000 ok" ] || fail "access log of the PROXY session: '$(al 41002)'"
ok "access log: client $C6 -> backend $S6:5200 (20 MB each way), $C4 -> $S6, $C6 -> $C4; no brackets, no v4-mapped text"

# ---- accept_proxy on the dual-stack listener: only proxy_from's peers may send a header ----
unt() { m 'proxy_header_errors_total{route="apf",reason="untrusted"}'; }
ulines() { grep -c 'route apf: connection from .* reset: not in proxy_from' "$GW_LOG"; }
ppsport() { jq -c "select(.sport == $1)" "$tmp/pp.log"; }
pph() { "$PY3" tests/eth/pp_peer.py header --src "$1" --dst "$2"; }
u0=$(unt) acl0=$(m 'route_sessions_rejected_total{route="apf",reason="acl"}') n0=$(wc -l <"$tmp/pp.log")
# the review's reproduction: from IPv6, outside proxy_from, an AF_INET header naming an allowed source
out=$(eth_ns "$PY3" tests/eth/pp_peer.py expect-reset "$GW6" 8202 "$(pph 198.18.0.2:44001 "$ETH_GW_IP:8202")" 5 --src "$C6X" 2>&1) ||
	fail "IPv6 peer $C6X (not in proxy_from) with a header from 198.18.0.2 was not reset: $out"
out2=$(eth_ns "$PY3" tests/eth/pp_peer.py expect-reset "$ETH_GW_IP" 8202 "$(pph 198.18.0.2:44002 "$ETH_GW_IP:8202")" 5 --src "$C4X" 2>&1) ||
	fail "IPv4 peer $C4X (not in proxy_from) with a header from 198.18.0.2 was not reset: $out2"
[ "$(unt)" = $((u0 + 2)) ] || fail "untrusted $u0 -> $(unt), expected two more"
[ "$(m 'route_sessions_rejected_total{route="apf",reason="acl"}')" = "$acl0" ] || fail "an untrusted peer reached admission (acl)"
sleep 0.3
[ "$(wc -l <"$tmp/pp.log")" = "$n0" ] || fail "an untrusted peer reached the server: $(tail -n +$((n0 + 1)) "$tmp/pp.log")"
ok "peers outside proxy_from, [$C6X] ($out) and $C4X ($out2), sending a valid header from the allowed 198.18.0.2: reset, counted untrusted $u0 -> $(unt), the server saw neither"
# before its header is read: a silent untrusted peer is reset at once, not at the 5 s header bound
out=$(eth_ns "$PY3" tests/eth/pp_peer.py expect-reset "$GW6" 8202 "" 2 --src "$C6X" 2>&1) ||
	fail "a silent peer outside proxy_from was not reset at once: $out"
[ "$(unt)" = $((u0 + 3)) ] || fail "untrusted $u0 -> $(unt), expected three more"
ok "a silent peer outside proxy_from is reset at once ($out), without waiting for a header"
# the log: at most one line a second, each saying how many were left out since the one before; a
# burst of 50 from IPv6, then one more a second later (which reports the burst's remainder)
out=$(eth_ns "$PY3" tests/eth/pp_peer.py flood "$GW6" 8202 50 --src "$C6X" 2>&1) || fail "flood of untrusted peers: $out"
[ "$(echo "$out" | sed -n 's/^early=//p')" = 50 ] || fail "50 untrusted connections: $out, expected all reset at once"
sleep 1.1
eth_ns "$PY3" tests/eth/pp_peer.py expect-reset "$ETH_GW_IP" 8202 "" 2 --src "$C4X" >/dev/null 2>&1 || fail "untrusted IPv4 peer #2 not reset"
[ "$(unt)" = $((u0 + 54)) ] || fail "untrusted $u0 -> $(unt), expected 54 more"
for _ in $(seq 20); do tail -1 <(grep 'not in proxy_from' "$GW_LOG") | grep -q "from $C4X " && break; sleep 0.1; done
grep -q "route apf: connection from $C6X port [0-9]* reset: not in proxy_from" "$GW_LOG" || fail "no log line names $C6X: $(grep 'not in proxy_from' "$GW_LOG")"
tail -1 <(grep 'not in proxy_from' "$GW_LOG") | grep -q "route apf: connection from $C4X port [0-9]* reset: not in proxy_from" ||
	fail "the last refusal is not logged: $(grep 'not in proxy_from' "$GW_LOG")"
l=$(ulines)
told=$(sed -n 's/.*reset: not in proxy_from.*(\([0-9]*\) more not logged)$/\1/p' "$GW_LOG" | awk '{ s += $1 + 1 } END { print s }')
[ "$told" = 54 ] && [ "$l" -le 10 ] || fail "log: $l lines accounting for $told refusals, expected at most 10 lines accounting for 54"
ok "54 refusals logged in $l lines (rate-limited), whose 'more not logged' counts add up to all 54"
# inside proxy_from, both families: served with the header's source
out=$(eth_ns "$PY3" tests/eth/pp_peer.py xfer "$GW6" 8202 1000000 --plain --src "$C6" --pre "$(pph 198.18.0.2:44003 "$ETH_GW_IP:8202")" 2>&1) ||
	fail "IPv6 peer $C6 in proxy_from: $out"
out2=$(eth_ns "$PY3" tests/eth/pp_peer.py xfer "$ETH_GW_IP" 8202 1000000 --plain --src "$C4" --pre "$(pph 198.18.0.9:44004 "$ETH_GW_IP:8202")" 2>&1) ||
	fail "IPv4 peer $C4 in proxy_from: $out2"
for _ in $(seq 50); do [ -n "$(ppsport 44004)" ] && break; sleep 0.1; done
[ "$(ppsport 44003 | jq -r .src)" = 198.18.0.2 ] && [ "$(ppsport 44004 | jq -r .src)" = 198.18.0.9 ] ||
	fail "forwarded sources: $(ppsport 44003) $(ppsport 44004)"
[ "$(unt)" = $((u0 + 54)) ] || fail "untrusted moved for trusted peers: $u0 -> $(unt)"
ok "peers in proxy_from, [$C6] and $C4: served as 198.18.0.2 and 198.18.0.9 from their headers, 1 MB each intact ($out; $out2)"

sleep 0.3
[ "$(m 'worker_sessions_active{worker="0"}')" = 0 ] || fail "sessions left: $(m 'worker_sessions_active{worker="0"}')"
gw_stop || fail "ibgwd exited with $? (sanitizers)"
ok "no session left; ibgwd (ASan build) stopped cleanly"
