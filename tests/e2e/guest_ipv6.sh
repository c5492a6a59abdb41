#!/bin/bash
# In-VM half of tests/e2e/test_e2e_ipv6.sh: IPv6 on the Ethernet side, both route kinds (#16).
#   inbound:  kernel TCP client in the namespace, from 2001:db8:0:1::2 -> [2001:db8:0:1::1]:9000 ->
#             ibgwd -> ib:7600 (rsocket echo server through librdmacm, hashing what it receives)
#   outbound: rs_peer (stock rsocket client) -> ib:7000 -> ibgwd -> tcp:[2001:db8:0:1::2]:5000 (kernel
#             TCP echo server, hashing)
# $E2E_SIZE6 (20 MB) each way through each, both at once; the SHA-256 of what each far server got must
# be the sender's, and each echo identical. The inbound route's allow list holds the client's /128
# only: the namespace's second IPv6 address and its IPv4 address are refused (rejected acl), and the
# route's listener is dual-stack (it answers the IPv4 client, with a reset). The access log names the
# IPv6 ends. Documentation addresses (2001:db8::/32) only.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/guest_lib.sh
SIZE=${E2E_SIZE6:-20000000}
GW6=2001:db8:0:1::1
PEER6=2001:db8:0:1::2
PEER6B=2001:db8:0:1::3

GW_EXTRA="access_log = $T/access.log"
E2E_EXTRA="address6 = $GW6/64"
e2e_start "$(gw_routes <<EOF
out6	ib:7000		tcp:[$PEER6]:5000	connect_timeout=30s
in6	tcp:9000	ib:$IB:7600		connect_timeout=30s allow=$PEER6/128
EOF
)"
eth_ns sysctl -qw "net.ipv6.conf.$ETH_PEER.disable_ipv6=0" || fail "cannot enable IPv6 in the namespace"
eth_ns ip -6 addr add "$PEER6/64" dev "$ETH_PEER" nodad || fail "cannot add $PEER6"
eth_ns ip -6 addr add "$PEER6B/64" dev "$ETH_PEER" nodad || fail "cannot add $PEER6B"
wait_for "eth_ns ping -6 -c 1 -W 1 $GW6 >/dev/null 2>&1" 20 || fail "the namespace cannot reach $GW6"
bg tsrv npeer tcp-serve 5000 "$T/tsrv.log"
bg rsrv peer rs-serve "$IB" 7600 "$T/rsrv.log"
wait_for "grep -q listening $T/tsrv.out && grep -q listening $T/rsrv.out" 30 || fail "peers did not start"

# ---- SIZE each way through both routes at once ----
ECHO_TCP_GW=$GW6 ECHO_TCP_SRC=$PEER6 echo_both outc inc "$SIZE" -t 300
echo_verify outc inc "$SIZE" "$T/tsrv.log" "$T/rsrv.log" "" " over IPv6"

# ---- the allow list: an IPv6 /128 ----
rej() { m "ibgw_route_sessions_rejected_total{route=\"in6\",reason=\"acl\"}"; }
npeer tcp-client "$GW6" 9000 1000 --src "$PEER6B" >"$T/acl1.out" 2>&1
rc=$?
check "[ $rc != 0 ] && [ \$(rej) = 1 ]" "a second IPv6 source ($PEER6B) outside allow = $PEER6/128 refused, counted rejected acl"
npeer tcp-client "$ETH_GW_IP" 9000 1000 >"$T/acl2.out" 2>&1
rc=$?
check "[ $rc != 0 ] && [ \$(rej) = 2 ]" \
	"the dual-stack listener takes an IPv4 client too, and the IPv6 allow list refuses it ($(tail -1 "$T/acl2.out" | cut -c1-50))"
npeer tcp-client "$GW6" 9000 100000 --src "$PEER6" >"$T/acl3.out" 2>&1
check "grep -q '^ok ' $T/acl3.out && [ \$(rej) = 2 ]" "the allowed source served again"

# ---- the access log ----
wait_for "[ \$(grep -c '\"route\":\"in6\"' $T/access.log 2>/dev/null) -ge 2 ]" 10
check "grep '\"route\":\"in6\"' $T/access.log | grep -q '\"addr\":\"$PEER6\"'" \
	"access log: the inbound client's IPv6 address"
check "grep '\"route\":\"out6\"' $T/access.log | grep -q '\"addr\":\"$PEER6\",\"port\":5000'" \
	"access log: the outbound destination's IPv6 address"
echo "    e.g. $(grep -m1 '"route":"in6"' "$T/access.log" | cut -c1-300)"
check "[ \$(m ibgw_ib_connections_active) = 0 ] && [ \$(m 'ibgw_tcp_connections_active{worker=\"0\"}') = 0 ]" \
	"no IB or TCP connection left"
e2e_done
