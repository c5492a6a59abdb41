#!/usr/bin/env python3
"""Checks ibgwd access log files against what the test's clients know (tests/gateway/test_access_log.sh).

  ends EXPECT.json ROUTE CLIENT_IP BACKEND_IP:PORT LOG...
      every line of the LOGs is one JSON object of the documented shape; the sessions of EXPECT
      (alog_peer.py's output: {client port: {"up", "down", "reset"}}) each have exactly one "end"
      line (found by the client's source port), whose byte counts are what the client sent and got
      (reason "ok"), or reason "reset" for the session the client reset; there is no other line
  e2e LOG IB_ADDR SIZE N EACH
      tests/e2e/guest_integrity.sh's sessions: routes out (N + 1), in (1), in_many (N), ib_echo (N),
      all ended ok, IB clients and IB backends with their address, GID, QPN and credit stalls, bytes
      as moved; the N small sessions of routes out and in_many overlapped: at least N / 2 open at
      once (from each line's end time and duration: exact, where sampling the metrics while they run
      misses short sessions on a fast host)
  disk LOG EXPECT.json NLINES
      after a full disk: LOG holds NLINES whole lines (what ibgwd counted as written), at most one
      line cut short, and a line for every session of EXPECT (those after space came back)
  progress SPORT LOG
      the session from SPORT has at least 2 "progress" lines before its one "end" line, all with its
      uid, times and byte counts never going backwards
Prints what it checked; exits 1 naming the first problem.
"""
import datetime
import json
import re
import sys

TIME = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$')
UID = re.compile(r'^[0-9a-f]{16}$')


def die(msg):
    print(f'FAIL: {msg}')
    sys.exit(1)


def lines_of(paths):
    out = []
    for p in paths:
        with open(p) as f:
            for n, line in enumerate(f, 1):
                try:
                    o = json.loads(line)
                except ValueError as e:
                    die(f'{p}:{n}: not JSON ({e}): {line[:200]!r}')
                shape(o, f'{p}:{n}')
                out.append(o)
    return out


def shape(o, where):
    def need(cond, what):
        if not cond:
            die(f'{where}: {what}: {json.dumps(o)[:400]}')
    need(isinstance(o, dict), 'not an object')
    need(TIME.match(o.get('time', '')), 'time is not RFC 3339 UTC with ms')
    need(o.get('event') in ('end', 'progress'), 'event')
    need(UID.match(o.get('uid', '')), 'uid is not 16 lowercase hex digits')
    need(isinstance(o.get('route'), str), 'route')
    need(isinstance(o.get('duration_ms'), (int, float)) and o['duration_ms'] >= 0, 'duration_ms')
    need(o.get('connect_ms') is None or o['connect_ms'] >= 0, 'connect_ms')
    for end in ('client', 'backend'):
        e = o.get(end)
        need(isinstance(e, dict) and e.get('side') in ('tcp', 'ib', 'echo', 'discard'), f'{end}.side')
        if e['side'] in ('tcp', 'ib'):
            need(isinstance(e.get('addr'), str) and isinstance(e.get('port'), int), f'{end} addr/port')
        if e['side'] == 'tcp' and 'retransmits' in e:
            need(e['retransmits'] >= 0 and e['srtt_us'] >= 0, f'{end} retransmits/srtt_us')
    for d in ('client_to_backend', 'backend_to_client'):
        x = o.get(d)
        need(isinstance(x, dict) and x.get('bytes', -1) >= 0 and x.get('blocked_ms', -1) >= 0, d)
    if o['event'] == 'end':
        need(isinstance(o.get('reason'), str), 'reason')


def ends(expect_path, route, client_ip, backend, logs):
    expect = {int(k): v for k, v in json.load(open(expect_path)).items()}
    bhost, bport = backend.rsplit(':', 1)
    seen, uids = {}, set()
    lines = lines_of(logs)
    for o in lines:
        if o['event'] != 'end':
            die(f'unexpected {o["event"]} line: {json.dumps(o)[:300]}')
        if o['uid'] in uids:
            die(f'uid {o["uid"]} on two end lines')
        uids.add(o['uid'])
        c, b = o['client'], o['backend']
        if o['route'] != route or c['side'] != 'tcp' or c['addr'] != client_ip:
            die(f'route/client: {json.dumps(o)[:300]}')
        if b['side'] != 'tcp' or b['addr'] != bhost or b['port'] != int(bport):
            die(f'backend is not {backend}: {json.dumps(o)[:300]}')
        if c['port'] not in expect:
            die(f'a line for a session the client did not make (port {c["port"]})')
        if c['port'] in seen:
            die(f'two end lines for the session from port {c["port"]}')
        seen[c['port']] = o
    missing = sorted(set(expect) - set(seen))
    if missing:
        die(f'{len(missing)} session(s) without an end line, e.g. ports {missing[:5]}')
    resets = 0
    for port, x in expect.items():
        o = seen[port]
        up, down = o['client_to_backend']['bytes'], o['backend_to_client']['bytes']
        if x['reset']:
            resets += 1
            if o['reason'] != 'reset' or up != x['up'] or not 32 <= down <= x['down']:
                die(f'reset session from {port}: reason {o["reason"]}, {up} bytes up (sent {x["up"]}), '
                    f'{down} down')
            continue
        if o['reason'] != 'ok':
            die(f'session from {port}: reason {o["reason"]}, expected ok')
        if (up, down) != (x['up'], x['down']):
            die(f'session from {port}: logged {up} up / {down} down, the peers moved {x["up"]} / {x["down"]}')
        if o['connect_ms'] is None or 'srtt_us' not in o['client'] or 'srtt_us' not in o['backend']:
            die(f'session from {port}: no connect time or TCP facts: {json.dumps(o)[:300]}')
    print(f'ok: {len(lines)} end line(s), one per session, valid JSON, byte counts equal to what the peers '
          f'moved, {resets} reset session(s) with reason reset')


def progress(sport, log):
    mine = [o for o in lines_of([log]) if o['client']['port'] == sport]
    ev = [o['event'] for o in mine]
    if ev.count('end') != 1 or ev[-1] != 'end' or ev.count('progress') < 2:
        die(f'session from {sport}: events {ev}, expected >= 2 progress then one end')
    if len({o['uid'] for o in mine}) != 1:
        die(f'session from {sport}: more than one uid')
    for a, b in zip(mine, mine[1:]):
        for k in ('client_to_backend', 'backend_to_client'):
            if b[k]['bytes'] < a[k]['bytes']:
                die(f'session from {sport}: {k} bytes went backwards')
        if b['time'] < a['time'] or b['duration_ms'] < a['duration_ms']:
            die(f'session from {sport}: time went backwards')
    print(f'ok: session from {sport}: {ev.count("progress")} progress line(s), then its end line, one uid')


def e2e(log, ib, size, n, each):
    lines = lines_of([log])
    if len(lines) != 3 * n + 2 or len({o['uid'] for o in lines}) != len(lines):
        die(f'{len(lines)} line(s), expected {3 * n + 2} with distinct uids')
    by = {}
    for o in lines:
        if o['event'] != 'end' or o['reason'] != 'ok':
            die(f'not an ok end: {json.dumps(o)[:300]}')
        by.setdefault(o['route'], []).append(o)

    def moved(o):
        return o['client_to_backend']['bytes'], o['backend_to_client']['bytes']

    def ib_peer(e):
        return (e['side'] == 'ib' and e['addr'] == ib and ':' in e.get('gid', '') and e['gid'] != '::'
                and e.get('qpn', 0) > 0
                and e.get('credit_stalls', -1) >= 0)
    want = {'out': n + 1, 'in': 1, 'in_many': n, 'ib_echo': n}
    if {k: len(v) for k, v in by.items()} != want:
        die(f'lines per route {({k: len(v) for k, v in by.items()})}, expected {want}')
    for o in by['out'] + by['ib_echo']:
        if not ib_peer(o['client']):
            die(f'IB client without its address, GID, QPN or credit stalls: {json.dumps(o)[:400]}')
    if sorted(moved(o) for o in by['out']) != sorted([(each, each)] * n + [(size, size)]):
        die('route out: byte counts differ from what the clients moved')
    o = by['in'][0]
    if moved(o) != (size, size) or not ib_peer(o['backend']) or o['backend']['port'] != 7600 \
            or o['client']['side'] != 'tcp':
        die(f'route in: {json.dumps(o)[:400]}')
    if any(moved(o) != (each, each) for o in by['in_many'] + by['ib_echo']):
        die('routes in_many/ib_echo: byte counts differ from what the clients moved')
    if not all(ib_peer(o['backend']) and o['backend']['port'] == 7100 for o in by['in_many']):
        die('route in_many: the IB backend without its address, GID, QPN or credit stalls')
    if any(o['backend']['side'] != 'echo' for o in by['ib_echo']):
        die('route ib_echo: backend is not echo')
    peak = overlap([o for o in by['out'] if moved(o) == (each, each)] + by['in_many'])
    if peak < n // 2:
        die(f'the {2 * n} concurrent sessions did not overlap: at most {peak} open at once')
    print(f'ok: {len(lines)} access log lines, one per session of each route, IB clients and backends with GID and QPN, '
          f'byte counts equal to what the clients moved; up to {peak} of the {2 * n} concurrent sessions open at once')


def stamp(o):
    """A line's end time in ms since the epoch (its time has millisecond precision)."""
    t = datetime.datetime.strptime(o['time'], '%Y-%m-%dT%H:%M:%S.%fZ').replace(tzinfo=datetime.timezone.utc)
    return t.timestamp() * 1000


def overlap(sessions):
    """The most sessions open at the same time, each open from its end minus its duration to its end."""
    ev = sorted([(stamp(o) - o['duration_ms'], 1) for o in sessions] + [(stamp(o), -1) for o in sessions])
    cur = peak = 0
    for _, d in ev:
        cur += d
        peak = max(peak, cur)
    return peak


def disk(log, expect_path, nlines):
    expect = {int(k) for k in json.load(open(expect_path))}
    good, bad = [], []
    with open(log, errors='replace') as f:
        for line in f:
            try:
                o = json.loads(line)
                shape(o, log)
                good.append(o)
            except (ValueError, SystemExit):
                bad.append(line)
    if len(bad) > 1:
        die(f'{len(bad)} broken lines (at most the one a full disk cut may be): {bad[:2]!r}')
    if len(good) != nlines:
        die(f'{len(good)} whole lines in the file, ibgwd counted {nlines} written')
    missing = expect - {o['client']['port'] for o in good}
    if missing:
        die(f'sessions after the disk had room again without their line: ports {sorted(missing)[:5]}')
    print(f'ok: {len(good)} whole line(s) (all it counted as written), {len(bad)} cut by the full disk, '
          f'every session after space came back logged')


def main():
    a = sys.argv[1:]
    if len(a) >= 5 and a[0] == 'ends':
        ends(a[1], a[2], a[3], a[4], a[5:])
    elif len(a) == 6 and a[0] == 'e2e':
        e2e(a[1], a[2], int(a[3]), int(a[4]), int(a[5]))
    elif len(a) == 4 and a[0] == 'disk':
        disk(a[1], a[2], int(a[3]))
    elif len(a) == 3 and a[0] == 'progress':
        progress(int(a[1]), a[2])
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
