#!/bin/bash
# In-VM half of tests/e2e/test_e2e_proxy.sh: proxy_protocol = v2 on an ib: listener. An rsocket client
# (rs_peer) goes through ibgwd to a kernel TCP server in the namespace that parses the v2 header with
# its own code (tests/eth/pp_peer.py): source = the client's IPv4 and port as the rdma_cm saw them,
# destination = the listener's; TLVs 0x05 (uid, 16 hex digits), 0xE0 (route), 0xE1 (the client's
# GID: on RoCE its IPv4 as a mapped GID) and 0xE2 (its QPN, cross-checked with `rdma resource show qp`
# while the connection is held open); payload echoed intact (sha256 both ways).
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/guest_lib.sh
e2e_start "[route ppib]
listen = ib:7100
connect = tcp:$ETH_PEER_IP:5102
proxy_protocol = v2"
bg pps eth_ns "$PY3" tests/eth/pp_peer.py server "$ETH_PEER_IP" 5102 "$T/pp.log" --quiet
wait_for "[ -n \"\$(eth_ns ss -Hltn 'sport = :5102')\" ]" 30 || fail "the header server did not start"
: >"$T/pp.log"
field() { "$PY3" -c 'import json,sys; d=json.loads(open(sys.argv[1]).read().splitlines()[int(sys.argv[2])-1]); print(eval(sys.argv[3], {}, {"d": d}))' "$T/pp.log" "$@"; }

# a connection held open (silent), so its QP is there to compare with
bg hold "$TOOLS/rs_peer" -p 7100 "$IB" idle 1 60
wait_for "[ -s $T/pp.log ]" 60 || fail "no header reached the server"
echo "header: $(cat "$T/pp.log")"
check "[ \"$(field 1 'd.get("error", "none")')\" = none ]" "the server parsed the header"
check "[ \"$(field 1 'd["src"] + " " + d["dst"] + ":" + str(d["dport"])')\" = \"$IB $IB:7100\" ]" \
	"source = the rsocket client's IPv4 ($IB), destination = the listener ($IB:7100)"
sport=$(field 1 'd["sport"]')
check "[ \"$sport\" -gt 0 ]" "source port as the rdma_cm saw it ($sport)"
check "[ \"$(field 1 'bytes.fromhex(d["tlv"]["0x05"]).decode()' | grep -cE '^[0-9a-f]{16}$')\" = 1 ]" "UNIQUE_ID: 16 hex digits"
check "[ \"$(field 1 'bytes.fromhex(d["tlv"]["0xE0"]).decode()')\" = ppib ]" "route TLV 0xE0 = ppib"
gid=$(field 1 'd["tlv"].get("0xE1", "")')
want_gid=$("$PY3" -c 'import socket,sys; print(socket.inet_pton(socket.AF_INET6, "::ffff:" + sys.argv[1]).hex())' "$IB")
check "[ \"$gid\" = \"$want_gid\" ]" "GID TLV 0xE1 = the client's RoCE GID ::ffff:$IB ($gid)"
qpn=$(field 1 'int(d["tlv"].get("0xE2", "0"), 16)')
rdma resource show qp >"$T/qp" 2>&1
check "grep -qE \"lqpn $qpn .*comm rs_peer\" $T/qp" "QPN TLV 0xE2 = $qpn, the QP of the rs_peer client (rdma resource show qp)"
grep -q "lqpn $qpn " "$T/qp" || cat "$T/qp"
kill -USR1 "${PIDS[hold]}" 2>/dev/null
reap hold
check "[ $? = 0 ]" "the held connection ended cleanly: $(cat "$T/hold.out")"

# bytes: 4 MB echoed through the header'd route, intact both ways
out=$("$TOOLS/rs_peer" -t 120 -p 7100 "$IB" echo 4000000 2>&1)
check "[ $? = 0 ]" "4 MB echoed through ib -> tcp with the header in front, sha256 equal: $out"
wait_for "[ \$(wc -l <$T/pp.log) -ge 2 ]" 10
check "[ \"$(field 2 'd["tlv"]["0x05"]')\" != \"$(field 1 'd["tlv"]["0x05"]')\" ]" "each session its own uid"
scrape
check "[ \"$(ms 'ibgw_route_bytes_total{route="ppib",dir="ib_to_eth"}')\" = 4000000 ]" \
	"route bytes ib_to_eth = 4000000: the header is not counted"
e2e_done
