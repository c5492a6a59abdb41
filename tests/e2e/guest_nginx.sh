#!/bin/bash
# In-VM half of tests/e2e/test_e2e_nginx.sh. The namespace runs one nginx (Debian's build, a config of
# the test's own, every path under $T) with two servers:
#   - 8081, the origin: files of 0 B to 16 MiB from random bytes, sendfile and tcp_nopush on (nginx's
#     usual static setup: the headers and the file leave in large TSO-sized writes);
#   - 8000, a reverse proxy to ibgwd's tcp:9001, set up as proxy_pass usually is (HTTP/1.1, an upstream
#     keepalive pool), whose route leads to rs_http serve, an rsocket HTTP/1.0 service, on ib:9002
#     (which answers HTTP/1.0 and closes: nginx opens one upstream connection per request).
# Cluster -> world: rs_http get (stock rsocket API) -> ibgwd ib:8080 -> nginx:8081, one request per
# connection, each size alone, then 4 at once. World -> cluster: curl -> nginx:8000 -> ibgwd tcp:9001 ->
# rs_http serve, each size alone, then 6 at once (curl --parallel). Every body is checked against what
# was served (SHA-256), every status line and Content-Length too, and ibgwd counted each session as
# ended in order (reason ok), none reset; nginx logged no error.
set -u
cd "$(dirname "$0")/../.."
. tests/e2e/guest_lib.sh
command -v nginx >/dev/null || fail "no nginx in the VM image (tests/vm/mkimage takes it from the host)"
e2e_start "[route web]
listen = ib:8080
connect = tcp:$ETH_PEER_IP:8081

[route api]
listen = tcp:9001
connect = ib:$IB:9002
# rs_http serve takes one connection at a time: the sixth of 6 parallel requests waits for five
# whole responses before it is accepted, longer than the default 5 s on a slow VM
connect_timeout = 30s"

NG=$T/ngx
mkdir -p "$NG" "$T/www"
cat >"$NG/nginx.conf" <<CONF
master_process off;
daemon off;
pid $NG/nginx.pid;
error_log $NG/error.log notice;
events { worker_connections 256; }
http {
	access_log $NG/access.log;
	client_body_temp_path $NG/body;
	proxy_temp_path $NG/proxy;
	fastcgi_temp_path $NG/fastcgi;
	uwsgi_temp_path $NG/uwsgi;
	scgi_temp_path $NG/scgi;
	default_type application/octet-stream;
	sendfile on;
	tcp_nopush on;
	server {
		listen $ETH_PEER_IP:8081;
		root $T/www;
	}
	upstream cluster {
		server $ETH_GW_IP:9001;
		keepalive 4;
	}
	server {
		listen $ETH_PEER_IP:8000;
		location / {
			proxy_pass http://cluster;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
CONF
SIZES="0 1 1460 65536 1048576 16777216"
declare -A SUM
for s in $SIZES; do
	head -c "$s" /dev/urandom >"$T/www/f$s"
	SUM[$s]=$(sha256sum <"$T/www/f$s" | cut -c1-64)
done
bg ngx eth_ns nginx -e "$NG/error.log" -c "$NG/nginx.conf"
wait_for "[ -n \"\$(eth_ns ss -Hltn 'sport = :8081')\" ] && [ -n \"\$(eth_ns ss -Hltn 'sport = :8000')\" ]" 30 ||
	fail "nginx did not start: $(cat "$T/ngx.out" "$NG/error.log" 2>/dev/null)"
bg api "$TOOLS/rs_http" serve "$IB:9002"
wait_for "grep -q serving $T/api.out" 30 || fail "rs_http serve did not start: $(cat "$T/api.out")"

# split FILE: an HTTP response; prints "STATUS CONTENT_LENGTH BODY_SHA256 BODY_BYTES"
split() {
	"$PY3" - "$1" <<'PY'
import hashlib, sys
raw = open(sys.argv[1], "rb").read()
head, sep, body = raw.partition(b"\r\n\r\n")
if not sep:
    print("no-headers - - %d" % len(raw)); sys.exit()
lines = head.decode("latin-1").split("\r\n")
cl = next((l.split(":", 1)[1].strip() for l in lines[1:] if l.lower().startswith("content-length:")), "-")
print("%s %s %s %d" % (lines[0].split(" ")[1] if " " in lines[0] else "?", cl, hashlib.sha256(body).hexdigest(), len(body)))
PY
}
# what the service itself sends for /bytes/N, fetched straight from it over rsocket (no gateway): the
# reference for the bodies that come through nginx and ibgwd
bytes_sum() {
	"$TOOLS/rs_http" get "$IB:9002" "/bytes/$1" >"$T/ref" && split "$T/ref" | awk -v n="$1" '$1 == 200 && $2 == n { print $3 }'
}

# ---- cluster -> world: rsocket clients fetch from nginx through ib:8080 ----
gets=0
for s in $SIZES; do
	"$TOOLS/rs_http" get "$IB:8080" "/f$s" >"$T/get$s" 2>"$T/get$s.err"
	rc=$?
	gets=$((gets + 1))
	read -r st cl sum n <<<"$(split "$T/get$s")"
	check "[ $rc = 0 ] && [ \"$st\" = 200 ] && [ \"$cl\" = $s ] && [ \"$sum\" = ${SUM[$s]} ]" \
		"cluster -> world: rs_http GET /f$s from nginx: status $st, Content-Length $cl, $n body bytes, sha256 equal$([ $rc = 0 ] || echo "; rs_http exit $rc: $(cat "$T/get$s.err")")"
done
for k in 1 2 3 4; do bg "pget$k" "$TOOLS/rs_http" get "$IB:8080" /f16777216; done
for k in 1 2 3 4; do
	reap "pget$k"
	rc=$?
	gets=$((gets + 1))
	read -r st cl sum n <<<"$(split "$T/pget$k.out")"
	check "[ $rc = 0 ] && [ \"$st\" = 200 ] && [ \"$sum\" = ${SUM[16777216]} ]" \
		"cluster -> world: 4 GETs of 16 MiB at once, #$k: status $st, $n body bytes, sha256 equal"
done

# ---- world -> cluster: curl -> nginx (proxy_pass, upstream keepalive) -> tcp:9001 -> rs_http serve ----
prox=0
for s in 0 1 100000 8388608; do
	out=$(eth_ns curl -sS -m 120 -o "$T/px$s" -w '%{http_code} %{size_download}' "http://$ETH_PEER_IP:8000/bytes/$s" 2>&1)
	prox=$((prox + 1))
	want=$(bytes_sum "$s")
	got=$(sha256sum <"$T/px$s" | cut -c1-64)
	check "[ -n \"$want\" ] && [ \"$out\" = \"200 $s\" ] && [ \"$got\" = \"$want\" ]" \
		"world -> cluster: curl GET /bytes/$s through nginx's proxy and ibgwd: $out, sha256 equal"
done
urls=()
for k in 1 2 3 4 5 6; do urls+=(-o "$T/pp$k" "http://$ETH_PEER_IP:8000/bytes/1048576"); done
out=$(eth_ns curl -sS --no-progress-meter -m 180 --parallel --parallel-max 6 -w '%{http_code}\n' "${urls[@]}" 2>&1)
prox=$((prox + 6))
want=$(bytes_sum 1048576)
good=0
for k in 1 2 3 4 5 6; do [ "$(sha256sum <"$T/pp$k" | cut -c1-64)" = "$want" ] && good=$((good + 1)); done
check "[ -n \"$want\" ] && [ \"$(echo "$out" | grep -c '^200$')\" = 6 ] && [ $good = 6 ]" \
	"world -> cluster: 6 GETs of 1 MiB at once (curl --parallel) through nginx and ibgwd: $good of 6 bodies intact ($(echo "$out" | tr '\n' ' '))"

# ---- what ibgwd and nginx saw ----
wait_for "[ \"\$(m 'ibgw_route_sessions_active{route=\"web\"}')\" = 0 ] && [ \"\$(m 'ibgw_route_sessions_active{route=\"api\"}')\" = 0 ]" 30
scrape
for r in web api; do
	# (the reasons with a count, for the check's line)
	ends=$(for k in "${!SCRAPE[@]}"; do
		[[ $k == "ibgw_route_sessions_ended_total{route=\"$r\","* ]] && [ "${SCRAPE[$k]}" != 0 ] &&
			echo "${k#*reason=}=${SCRAPE[$k]}"
	done | tr -d '"}' | tr '\n' ' ')
	n=$([ $r = web ] && echo $gets || echo $prox)
	# (nginx opens one upstream connection per request here: rs_http answers HTTP/1.0 and closes)
	check "[ \"$(ms "ibgw_route_sessions_ended_total{route=\"$r\",reason=\"ok\"}")\" = $n ] && [ \"$(ms "ibgw_route_sessions_total{route=\"$r\"}")\" = $n ]" \
		"route $r: $n sessions, every one ended in order (ended: ${ends% })"
done
check "[ -f $NG/error.log ] && ! grep -E '\\[(error|crit|alert|emerg)\\]' $NG/error.log" "nginx logged no error$(grep -E '\[(error|crit|alert|emerg)\]' "$NG/error.log" | head -3 | sed 's/^/: /')"
stop api
stop ngx
e2e_done
