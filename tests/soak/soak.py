#!/usr/bin/env python3
"""The soak driver (in the soft-RoCE VM, started by tests/soak/guest_soak.sh once ibgwd and the far-end
servers run). For SOAK_MINUTES it keeps a bounded number of sessions of random sizes going through
every route kind at once, injects faults, and at the end verifies every completed transfer, explains
every failure and judges ibgwd's memory. One process, one thread, a poll loop: IB clients are
tests/tools/rs_peer processes, Ethernet clients are forks of this process that enter the world
namespace (setns) and run the TCP client below (a Python start costs ~2 s under TCG; a fork costs
nothing), so every client is a process of its own that can be SIGKILLed mid-transfer.

  soak.py routes              prints the static routes (gw_routes table) for the first config
  soak.py run                 the soak; environment below; exit 0 when everything held

Session kinds (client -> route -> far end; what proves the bytes):
  out_echo   rs_peer echo -> ib:7000 -> tcp-serve :5000    echo identical + the server's sha_in
  out_stall  rs_peer stall (a reader that reads nothing for a few s) -> ib:7000 -> tcp-serve
  out_slow   rs_peer send -> ib:7003 -> tcp-sink :5003 reading at SOAK_SLOW_RATE (a slow reader)
  ib_echo    rs_peer echo -> ib:7100 echo (ibgwd's own)    echo identical
  in_rs      TCP client -> tcp:900K -> ib:7600+K (peer.py rs-serve, one session at a time each)
                                                             echo identical + the server's sha_in
  in_echo    TCP client -> tcp:9100 -> ib:7100 -> echo      echo identical
  in_slow    TCP client reading the echo at SOAK_SLOW_RATE -> tcp:9100 (a slow reader, IB credits)
  tcp_echo   TCP client -> tcp:9200 echo
  rot        the rotating route a reload adds and the next removes, alternately ib:720N -> tcp-serve
             and tcp:930N -> ib:7100; sessions started just before its removal must finish

Faults: a client SIGKILLed mid-transfer every SOAK_KILL_EVERY s (IB and Ethernet side in turn);
SIGHUP every 30-60 s (rotating route added/removed, a route's max_sessions and another's
connect_timeout changed); netem bursts (SOAK_NETEM, both directions of the world link) of
SOAK_NETEM_SECS every SOAK_NETEM_EVERY s; a burst of SOAK_FLOOD_SYNS spoofed SYNs from 200 on-link
addresses every SOAK_FLOOD_EVERY s. Failures count as "killed" (we killed it), "netem" (it overlapped
a burst, plus SOAK_NETEM_GRACE s), "flood" (a session through a TCP listener that overlapped a flood
plus SOAK_FLOOD_GRACE s: ibgwd before SYN cookies keeps a half-open entry 63 s), else "unexplained".

Environment (set by guest_soak.sh): SOAK_MINUTES, SOAK_DIR (logs), GW_PID, STATS, IB, ETH_NS,
ETH_GW_IP, ETH_PEER_IP, TOOLS, CONF, SRV_LOGS (name=path ...), SRV_PIDS (name=pid ...); tunables
SOAK_SEED, SOAK_CONC_MIN/MAX (8/24), SOAK_MIN_SIZE/MAX_SIZE (1K/50M), SOAK_WARMUP (s, default
min(180, a third of the run)), SOAK_RSS_SLOPE (KiB/min, 256), SOAK_CHANGE (0: reloads never change a
route), the fault periods and lengths above, SOAK_DRAIN_STALL/MAX, SOAK_LEFTOVER_WAIT (s, 60).
"""
import ctypes
import hashlib
import json
import math
import os
import random
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.request

E = os.environ.get


def env_int(name, default):
    return int(float(E(name, default)))


MINUTES = float(E("SOAK_MINUTES", "30"))
DURATION = MINUTES * 60
WARMUP = float(E("SOAK_WARMUP", str(min(180.0, DURATION / 3))))
CONC_MIN = env_int("SOAK_CONC_MIN", 8)
CONC_MAX = env_int("SOAK_CONC_MAX", 24)
MIN_SIZE = env_int("SOAK_MIN_SIZE", 1024)
MAX_SIZE = env_int("SOAK_MAX_SIZE", 50 * 1000 * 1000)
SLOW_RATE = env_int("SOAK_SLOW_RATE", 256 * 1024)
SLOW_MAX = env_int("SOAK_SLOW_MAX", 3 * 1000 * 1000)
KILL_EVERY = float(E("SOAK_KILL_EVERY", "20"))
NETEM = E("SOAK_NETEM", "delay 5ms 2ms loss 1% reorder 10% 50% duplicate 1%")
NETEM_SECS = float(E("SOAK_NETEM_SECS", "20"))
NETEM_EVERY = float(E("SOAK_NETEM_EVERY", "200"))
NETEM_GRACE = float(E("SOAK_NETEM_GRACE", "15"))
FLOOD_SYNS = env_int("SOAK_FLOOD_SYNS", 3000)
FLOOD_EVERY = float(E("SOAK_FLOOD_EVERY", "300"))
FLOOD_GRACE = float(E("SOAK_FLOOD_GRACE", "75"))
RSS_SLOPE = float(E("SOAK_RSS_SLOPE", "256"))
# a client's own limit (a hung one must end some day); hangs are found by the drain below
CLIENT_TIMEOUT = env_int("SOAK_CLIENT_TIMEOUT", 3000)
DRAIN_STALL = float(E("SOAK_DRAIN_STALL", "120"))
DRAIN_MAX = float(E("SOAK_DRAIN_MAX", "600"))
# once the last client ended, ibgwd must be empty (sessions, IB and TCP connections) within this long:
# the far side of a killed or failed session learns of it by a reset or an rsocket disconnect at once
LEFTOVER_WAIT = float(E("SOAK_LEFTOVER_WAIT", "60"))
CHANGE = env_int("SOAK_CHANGE", 1)  # 0: reloads only add and remove routes, never change one
N_RS = 4  # in_rs servers (peer.py rs-serve serves one connection at a time)

SOAK_DIR = E("SOAK_DIR", "/tmp/soak")
TOOLS = E("TOOLS", "build/release/tools")
IB = E("IB", "198.19.0.1")
ETH_NS = E("ETH_NS", "")
GW_IP = E("ETH_GW_IP", "198.18.0.1")
PEER_IP = E("ETH_PEER_IP", "198.18.0.2")
STATS = E("STATS", "9100")
CONF = E("CONF", "/tmp/ibgw.conf")

# The route table the soak starts with: NAME LISTEN CONNECT [KEY=VALUE...] (tests/lib/ibgwd.sh
# gw_routes). connect_timeout 30s: under TCG on a loaded host, two dozen IB connects at once take
# seconds each (tests/e2e/guest_integrity.sh); max_sessions 64: the memory budget of ten routes must
# fit the test config's memory_limit (the default 256 would not).
ROUTE_KEYS = "max_sessions=64 connect_timeout=30s"


def static_routes(gen=0):
    """The static routes; GEN flips a setting on two of them (a reload that changes routes)."""
    rows = [
        ("out", "ib:7000", "tcp:%s:5000" % PEER_IP, "max_sessions=%d connect_timeout=30s" % (64 + gen % 2)),
        ("out_slow", "ib:7003", "tcp:%s:5003" % PEER_IP, ROUTE_KEYS),
        ("ib_echo", "ib:7100", "echo", "max_sessions=128"),
        ("in_echo", "tcp:9100", "ib:%s:7100" % IB, "max_sessions=64 connect_timeout=%ds" % (30 + gen % 2)),
        ("tcp_echo", "tcp:9200", "echo", ROUTE_KEYS),
    ]
    rows += [("in%d" % k, "tcp:%d" % (9000 + k), "ib:%s:%d" % (IB, 7600 + k), ROUTE_KEYS) for k in range(N_RS)]
    return rows


def rot_route(n):
    """The rotating route of reload N: outbound on even N, inbound on odd N; ports cycle so a port a
    removed route freed is taken again by a later one."""
    if n % 2 == 0:
        return ("rot%d" % n, "ib:%d" % (7200 + n % 4), "tcp:%s:5000" % PEER_IP, ROUTE_KEYS)
    return ("rot%d" % n, "tcp:%d" % (9300 + n % 4), "ib:%s:7100" % IB, ROUTE_KEYS)


def routes_text(rows):
    out = []
    for name, listen, connect, keys in rows:
        out.append("[route %s]\nlisten = %s\nconnect = %s\n" % (name, listen, connect))
        for kv in keys.split():
            k, v = kv.split("=", 1)
            out.append("%s = %s\n" % (k, v))
    return "".join(out)


# ---- small helpers -----------------------------------------------------------------------------

T0 = time.monotonic()


def now():
    return time.monotonic() - T0


def stamp():
    t = now()
    return "%3d:%02d" % (t // 60, t % 60)


def say(msg):
    print("soak %s %s" % (stamp(), msg), flush=True)


def human(n):
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return ("%.1f %s" % (n, unit)) if unit != "B" else "%d B" % n
        n /= 1000.0


LOG = None  # the detailed log (one line per session and event) under SOAK_DIR


def log(msg):
    LOG.write("%8.1f %s\n" % (now(), msg))
    LOG.flush()


def scrape(timeout=20):
    """One fetch of /metrics as {sample: value}; {} when it failed."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % STATS, timeout=timeout) as r:
            text = r.read().decode()
    except OSError as e:
        log("scrape failed: %s" % e)
        return {}
    m = {}
    for line in text.splitlines():
        if line and line[0] != "#":
            k, _, v = line.rpartition(" ")
            try:
                m[k] = float(v)
            except ValueError:
                pass
    return m


def msum(m, family, **labels):
    """Sum of the samples of FAMILY whose labels include LABELS."""
    tot = 0.0
    for k, v in m.items():
        name, _, rest = k.partition("{")
        if name != family:
            continue
        if all(('%s="%s"' % (a, b)) in rest for a, b in labels.items()):
            tot += v
    return tot


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    # a zombie (not reaped by its parent, the shell) is dead too
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def linfit(xs, ys):
    """Least-squares slope and intercept."""
    n = len(xs)
    if n < 2:
        return 0.0, ys[0] if ys else 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0, my
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


# ---- the Ethernet-side clients: forks of this process in the world namespace -------------------

CLONE_NEWNET = 0x40000000
LIBC = ctypes.CDLL(None, use_errno=True)


def enter_world():
    fd = os.open("/run/netns/%s" % ETH_NS, os.O_RDONLY)
    if LIBC.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")
    os.close(fd)


def tcp_client(port, size, seed, read_rate):
    """Sends SIZE pseudo-random bytes to GW_IP:PORT, half-closes, reads the echo to its end (at most
    READ_RATE bytes/s when set: a slow reader). Returns the verdict as a dict: ok (echo identical and
    complete), or what went wrong; "short" is an orderly end of stream before all bytes came back."""
    rng = random.Random(seed)
    hs, hr = hashlib.sha256(), hashlib.sha256()
    sent = got = 0
    t0 = time.monotonic()
    res = {"sent": 0, "got": 0}
    try:
        s = socket.create_connection((GW_IP, port), timeout=30)
    except OSError as e:
        res.update(err="connect " + type(e).__name__)
        return res
    s.setblocking(False)
    buf = b""
    wr_done = size == 0
    if wr_done:
        s.shutdown(socket.SHUT_WR)
    eof = False
    deadline = t0 + CLIENT_TIMEOUT
    try:
        while not eof:
            tnow = time.monotonic()
            if tnow > deadline:
                res.update(err="timeout")
                break
            want_r = not (read_rate and got > read_rate * (tnow - t0))
            rl = [s] if want_r else []
            wl = [s] if not wr_done else []
            r, w, _ = select.select(rl, wl, [], 0.05 if not want_r else 5)
            if w and not wr_done:
                if not buf:
                    buf = rng.randbytes(min(65536, size - sent))
                try:
                    n = s.send(buf)
                except BlockingIOError:
                    n = 0
                hs.update(buf[:n])
                buf = buf[n:]
                sent += n
                if sent == size:
                    s.shutdown(socket.SHUT_WR)
                    wr_done = True
            if r:
                try:
                    b = s.recv(65536 if not read_rate else 16384)
                except BlockingIOError:
                    continue
                if not b:
                    eof = True
                hr.update(b)
                got += len(b)
    except OSError as e:
        res.update(err=type(e).__name__)
    s.close()
    res.update(sent=sent, got=got, sha=hs.hexdigest(), secs=round(time.monotonic() - t0, 3))
    if "err" not in res:
        if sent == size and got == size and hs.hexdigest() == hr.hexdigest():
            res["ok"] = True
        else:
            res["err"] = "short" if got < size else "corrupt"
    return res


def close_fds_but(keep):
    """In a fork: closes every descriptor above stderr but KEEP (the pipes to other clients above all:
    a client holding one would keep the driver from seeing that pipe's end)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass


def fork_tcp(port, size, seed, read_rate):
    """Forks a TCP client; returns (pid, read end of its result pipe)."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            close_fds_but(wfd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            enter_world()
            res = tcp_client(port, size, seed, read_rate)
            os.write(wfd, (json.dumps(res) + "\n").encode())
            code = 0
        except BaseException as e:  # the child never returns into the driver
            try:
                os.write(wfd, (json.dumps({"err": "client " + repr(e)}) + "\n").encode())
            except OSError:
                pass
        os._exit(code)
    os.close(wfd)
    os.set_blocking(rfd, False)
    return pid, rfd


# ---- the SYN flood: a fork in the world namespace, raw IPv4 with spoofed on-link sources ---------

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def syn_packet(src, dst, sport, dport, seq):
    opts = struct.pack("!BBH", 2, 4, 1460)  # MSS
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, (5 + 1) << 4, 0x02, 64240, 0, 0) + opts
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(tcp))
    c = csum(pseudo + tcp)
    tcp = tcp[:16] + struct.pack("!H", c) + tcp[18:]
    # id 0 and checksum 0: the kernel fills them in (IP_HDRINCL)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, socket.inet_aton(src),
                     socket.inet_aton(dst))
    return ip + tcp


def fork_flood(ports, n):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            close_fds_but(-1)
            enter_world()
            s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
            rng = random.Random()
            for i in range(n):
                src = "198.18.0.%d" % (10 + i % 200)  # on-link, nobody answers ARP for them
                pkt = syn_packet(src, GW_IP, rng.randrange(1024, 65535), ports[i % len(ports)],
                                 rng.randrange(1 << 32))
                try:
                    s.sendto(pkt, (GW_IP, 0))
                except OSError:
                    time.sleep(0.001)  # ENOBUFS: the veth queue is full
            code = 0
        finally:
            os._exit(code)
    return pid


# ---- sessions ------------------------------------------------------------------------------------

class Session:
    __slots__ = ("id", "kind", "route", "size", "t0", "t1", "pid", "proc", "rfd", "killed", "res",
                 "status", "cause", "far", "sha", "dirs", "server", "detail", "outlived", "res_rc")

    def __init__(self, sid, kind, route, size):
        self.id, self.kind, self.route, self.size = sid, kind, route, size
        self.t0, self.t1 = now(), None
        self.pid = self.proc = self.rfd = None
        self.killed = False
        self.res = None
        self.status = self.cause = None
        self.far = None  # the far server's log to find the bytes in (name), or None
        self.sha = None
        self.dirs = (0, 0)  # bytes (ib->eth, eth->ib) this session moves when it completes
        self.server = None  # in_rs: the index of its rs-serve
        self.detail = ""
        self.outlived = False  # its route was removed by a reload while it ran
        self.res_rc = None


def log_uniform(lo, hi):
    return int(math.exp(random.uniform(math.log(lo), math.log(hi))))


RS_LINE = re.compile(r"^(ok|FAIL) conn=\d+ sent=(\d+) recv=(\d+) sha_sent=([0-9a-f]+) sha_recv=([0-9a-f]+)")


class Soak:
    def __init__(self):
        self.gw_pid = int(E("GW_PID"))
        self.srv_logs = dict(kv.split("=", 1) for kv in E("SRV_LOGS", "").split())
        self.srv_pids = {k: int(v) for k, v in (kv.split("=", 1) for kv in E("SRV_PIDS", "").split())}
        with open(CONF) as f:
            text = f.read()
        self.conf_head = text[:text.index("[route ")] if "[route " in text else text
        self.active = {}  # id -> Session
        self.done = []
        self.next_id = 0
        self.rs_busy = [None] * N_RS  # in_rs server k: the session using it, or the time it is free again
        self.rs_free_at = [0.0] * N_RS
        self.rot = None  # the rotating route's row, or None
        self.rot_n = -1
        self.rot_ready_at = 0.0
        self.gen = 0
        self.reloads = 0
        self.reload_failures = []
        self.netem_windows = []  # (start, end)
        self.flood_windows = []
        self.kills = 0
        self.kill_side = 0
        self.rss = []  # (t, KiB)
        self.gauges = []  # (t, {name: value})
        self.problems = []  # reasons to fail that are not sessions
        self.conc = CONC_MAX
        self.gw_dead = False
        self.ended = {}

    # -- sessions --
    def pick_kind(self):
        kinds = [("out_echo", 3), ("out_stall", 1), ("out_slow", 1), ("ib_echo", 1), ("in_echo", 3),
                 ("in_slow", 1), ("tcp_echo", 1)]
        t = now()
        if any(self.rs_busy[k] is None and self.rs_free_at[k] <= t for k in range(N_RS)):
            kinds.append(("in_rs", 3))
        if self.rot and t >= self.rot_ready_at:
            kinds.append(("rot", 3))
        tot = sum(w for _, w in kinds)
        x = random.uniform(0, tot)
        for k, w in kinds:
            x -= w
            if x <= 0:
                return k
        return kinds[-1][0]

    def start(self, kind):
        size = log_uniform(MIN_SIZE, MAX_SIZE)
        if kind in ("out_slow", "in_slow"):
            size = min(size, SLOW_MAX)
        if kind == "out_stall":
            size = min(size, 8 * 1000 * 1000)
        self.next_id += 1
        sid = self.next_id
        route = {"out_echo": "out", "out_stall": "out", "out_slow": "out_slow", "ib_echo": "ib_echo",
                 "in_echo": "in_echo", "in_slow": "in_echo", "tcp_echo": "tcp_echo"}.get(kind)
        s = Session(sid, kind, route, size)
        if kind == "in_rs":
            k = next(k for k in range(N_RS) if self.rs_busy[k] is None and self.rs_free_at[k] <= now())
            s.route, s.server = "in%d" % k, k
            self.rs_busy[k] = sid
        if kind == "rot":
            s.route = self.rot[0]
        listen = {r[0]: r[1] for r in self.routes()}[s.route]
        port = int(listen.split(":")[1])
        if listen.startswith("ib:"):
            ib_side = True
            rs = [os.path.join(TOOLS, "rs_peer"), "-t", str(CLIENT_TIMEOUT), "-p", str(port), IB]
            if kind == "out_stall":
                rs += ["stall", str(size), "%.1f" % random.uniform(2, 8)]
            elif kind == "out_slow":
                rs += ["send", str(size)]
            else:
                rs += ["echo", str(size)]
            s.proc = subprocess.Popen(rs, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            s.pid = s.proc.pid
        else:
            ib_side = False
            s.pid, s.rfd = fork_tcp(port, size, sid * 7919 + 1, SLOW_RATE if kind == "in_slow" else 0)
        # where the far end logs what it received, and the bytes each way once it completes
        if s.route in ("out", "out_slow") or (kind == "rot" and ib_side):
            s.far = "tsrv" if s.route != "out_slow" else "tsink"
        elif kind == "in_rs":
            s.far = "rs%d" % s.server
        crosses = s.route not in ("ib_echo", "tcp_echo")
        if crosses:
            s.dirs = (size, 0) if kind == "out_slow" else (size, size)
        self.active[sid] = s
        log("start %d %s route=%s size=%d pid=%d" % (sid, kind, s.route, size, s.pid))

    def finish(self, s, output):
        s.t1 = now()
        rc = s.proc.returncode if s.proc else s.res_rc
        if s.proc:
            m = None
            for line in output.splitlines():
                m = RS_LINE.match(line) or m
            if rc == 0 and m and m.group(1) == "ok":
                s.status, s.sha = "ok", m.group(4)
            elif m and m.group(1) == "FAIL":
                # the stream ended in order but the bytes were not all there, or not the same
                s.status = "lost"
            else:
                s.status = "failed"
            tail = " | ".join(output.strip().splitlines()[-3:])
            s.detail = "rc=%s %s" % (rc, tail[-300:])
        else:
            res = s.res or {"err": "no result (rc %s)" % rc}
            if res.get("ok"):
                s.status, s.sha = "ok", res["sha"]
            elif res.get("err") in ("short", "corrupt"):
                s.status = "lost"
            else:
                s.status = "failed"
            s.detail = json.dumps(res)
        if s.killed and s.status != "ok":
            s.status, s.cause = "killed", "killed"
        elif s.killed:
            s.killed = False  # it was over before the signal came
        if s.status == "failed":
            s.cause = self.explain(s)
        if s.server is not None:
            self.rs_busy[s.server] = None
            # a failed session's server may still be tearing its connection down
            self.rs_free_at[s.server] = now() + (0.5 if s.status == "ok" else 3)
        del self.active[s.id]
        self.done.append(s)
        log("end %d %s %s%s %.1fs %s" % (s.id, s.kind, s.status, "" if not s.cause else "/" + s.cause,
                                        s.t1 - s.t0, s.detail[:400]))
        if s.status == "lost" or s.cause == "unexplained":
            say("%s: session %d (%s, route %s, %d bytes, %.0f-%.0f s): %s" % (
                "BYTES LOST" if s.status == "lost" else "unexplained failure", s.id, s.kind, s.route, s.size,
                s.t0, s.t1, s.detail[:300]))

    def explain(self, s):
        def overlaps(wins, grace):
            return any(s.t0 <= b + grace and s.t1 >= a for a, b in wins)
        through_tcp_listener = s.kind in ("in_rs", "in_echo", "in_slow", "tcp_echo") or (
            s.kind == "rot" and s.proc is None)
        if through_tcp_listener and overlaps(self.flood_windows, FLOOD_GRACE):
            return "flood"
        if s.route != "ib_echo" and overlaps(self.netem_windows, NETEM_GRACE):
            return "netem"
        return "unexplained"

    def poll_sessions(self):
        for s in list(self.active.values()):
            if s.proc:
                if s.proc.poll() is None:
                    continue
                out = s.proc.stdout.read().decode(errors="replace")
                s.proc.stdout.close()
                self.finish(s, out)
            else:
                pid, status = os.waitpid(s.pid, os.WNOHANG)
                if pid == 0:
                    continue
                s.res_rc = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                data = b""
                try:
                    while True:
                        b = os.read(s.rfd, 65536)
                        if not b:
                            break
                        data += b
                except OSError:
                    pass
                os.close(s.rfd)
                try:
                    s.res = json.loads(data.decode().strip().splitlines()[-1]) if data.strip() else None
                except (ValueError, IndexError):
                    s.res = {"err": "bad result %r" % data[:100]}
                self.finish(s, "")

    # -- config and reloads --
    def routes(self):
        rows = static_routes(self.gen)
        if self.rot:
            rows.append(self.rot)
        return rows

    def write_conf(self):
        tmp = CONF + ".new"
        with open(tmp, "w") as f:
            f.write(self.conf_head + routes_text(self.routes()))
        os.rename(tmp, CONF)

    def reload(self):
        old = self.rot
        # sessions on the route about to go must be known to ibgwd first (a client still connecting
        # when its listener closes is refused, rightly): wait until its session counter caught up
        if old:
            started = sum(1 for s in self.active.values() if s.route == old[0])
            started += sum(1 for s in self.done if s.route == old[0])
            t = now()
            while now() < t + 20:
                m = scrape()
                if msum(m, "ibgw_route_sessions_total", route=old[0]) >= started:
                    break
                self.poll_sessions()
                time.sleep(0.3)
        m0 = scrape()
        self.note_ended(m0)
        ok0 = msum(m0, "ibgw_config_reloads_total", result="ok")
        self.rot_n += 1
        self.rot = rot_route(self.rot_n)
        if CHANGE:
            self.gen += 1
        self.write_conf()
        os.kill(self.gw_pid, signal.SIGHUP)
        log("SIGHUP sent (reload %d)" % (self.reloads + 1))
        self.reloads += 1
        outlive = [s for s in self.active.values() if old and s.route == old[0]]
        for s in outlive:
            s.outlived = True
        t = now()
        while now() < t + 30:
            m = scrape()
            if msum(m, "ibgw_config_reloads_total", result="ok") > ok0 and \
                    ("ibgw_route_sessions_total{route=\"%s\"}" % self.rot[0]) in m:
                break
            if msum(m, "ibgw_config_reloads_total", result="failed") > msum(m0, "ibgw_config_reloads_total",
                                                                             result="failed"):
                self.reload_failures.append(now())
                break
            time.sleep(0.3)
        else:
            self.reload_failures.append(now())
        # new sessions on the new route after its listener had a moment to open
        self.rot_ready_at = now() + 1
        log("reload %d: route %s (%s) replaces %s; %d session(s) on the removed route" % (
            self.reloads, self.rot[0], self.rot[1], old[0] if old else "-", len(outlive)))
        say("SIGHUP %d: +%s (%s -> %s)%s%s" % (
            self.reloads, self.rot[0], self.rot[1], self.rot[2],
            ", -%s with %d session(s) running" % (old[0], len(outlive)) if old else "",
            ", out.max_sessions=%d, in_echo.connect_timeout=%ds" % (64 + self.gen % 2, 30 + self.gen % 2)
            if CHANGE else ""))

    # -- faults --
    def kill_one(self):
        side_ib = self.kill_side % 2 == 0
        cands = [s for s in self.active.values() if (s.proc is not None) == side_ib and now() - s.t0 > 1 and
                 not s.killed and s.kind not in ("out_slow", "in_slow")]
        if not cands:
            cands = [s for s in self.active.values() if now() - s.t0 > 1 and not s.killed]
        if not cands:
            return
        s = random.choice(cands)
        s.killed = True
        self.kills += 1
        self.kill_side += 1
        os.kill(s.pid, signal.SIGKILL)
        log("kill %d %s (%s side)" % (s.id, s.kind, "IB" if s.proc else "Ethernet"))

    def tc(self, *args):
        r = subprocess.run(["ip", "netns", "exec", ETH_NS, "tc"] + list(args), capture_output=True, text=True)
        if r.returncode:
            log("tc %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.returncode

    def netem_setup(self):
        dev = E("ETH_PEER")
        sh = lambda *a: subprocess.run(["ip", "netns", "exec", ETH_NS] + list(a), capture_output=True)
        sh("ip", "link", "add", "ifbsoak", "type", "ifb")
        sh("ip", "link", "set", "ifbsoak", "up")
        self.tc("qdisc", "add", "dev", dev, "handle", "ffff:", "ingress")
        self.tc("filter", "add", "dev", dev, "parent", "ffff:", "matchall", "action", "mirred", "egress",
                "redirect", "dev", "ifbsoak")

    def netem(self, on):
        dev = E("ETH_PEER")
        for d in (dev, "ifbsoak"):
            if on:
                if self.tc("qdisc", "replace", "dev", d, "root", "netem", *NETEM.split()):
                    self.problems.append("netem could not be set on %s" % d)
            else:
                self.tc("qdisc", "del", "dev", d, "root")

    def sample(self):
        r = rss_kib(self.gw_pid)
        if r is not None:
            self.rss.append((now(), r))
        m = scrape()
        if m:
            g = {
                "sessions": msum(m, "ibgw_route_sessions_active"),
                "ib_conns": msum(m, "ibgw_ib_connections_active"),
                "tcp_conns": msum(m, "ibgw_tcp_connections_active"),
                "time_wait": msum(m, "ibgw_tcp_connections_time_wait"),
                "syn_recv": msum(m, "ibgw_tcp_connections_syn_received"),
                "mbufs": msum(m, "ibgw_port_mbufs_in_use"),
                "tcp_buf": msum(m, "ibgw_tcp_buffer_bytes"),
                "ib_buf": msum(m, "ibgw_ib_buffer_bytes"),
                "arp": msum(m, "ibgw_arp_entries"),
            }
            self.gauges.append((now(), g))
            self.note_ended(m)
            self.samples_f.write("%.0f %d %s\n" % (now(), r or 0, " ".join("%s=%d" % kv for kv in g.items())))
            self.samples_f.flush()

    def note_ended(self, m):
        """Keeps the last value of every ibgw_route_sessions_ended_total and a few IB counters: a
        removed route's series disappear once its last session ended."""
        for k, v in m.items():
            if k.startswith(("ibgw_route_sessions_ended_total{", "ibgw_ib_connections_failed_total{",
                             "ibgw_ib_connections_closed_total{", "ibgw_route_sessions_rejected_total{")):
                self.ended[k] = max(v, self.ended.get(k, 0))

    # -- the run --
    def run(self):
        random.seed(int(E("SOAK_SEED", str(int(time.time())))))
        self.samples_f = open(os.path.join(SOAK_DIR, "samples.log"), "w")
        self.netem_setup()
        say("%.0f min, warm-up %.0f s, %d-%d sessions at once, sizes %s..%s (log-uniform), ibgwd pid %d" % (
            MINUTES, WARMUP, CONC_MIN, CONC_MAX, human(MIN_SIZE), human(MAX_SIZE), self.gw_pid))
        # the first of each fault comes early (inside the warm-up where the run is long enough: the
        # memory they make ibgwd touch belongs to its working set, not to a trend)
        t_reload = random.uniform(20, 40)
        t_kill = KILL_EVERY / 2
        t_netem = min(NETEM_EVERY, max(30.0, WARMUP / 3))
        t_flood = min(FLOOD_EVERY, max(60.0, WARMUP * 2 / 3))
        netem_end = None
        flood_pid, flood_t0 = None, 0
        t_sample = 0
        t_conc = WARMUP
        t_progress = 60
        while now() < DURATION:
            t = now()
            if not alive(self.gw_pid):
                self.gw_dead = True
                say("ibgwd (pid %d) DIED" % self.gw_pid)
                break
            for name, pid in self.srv_pids.items():
                if not alive(pid):
                    self.problems.append("far-end server %s (pid %d) died at %.0f s" % (name, pid, t))
                    say("far-end server %s died" % name)
                    self.srv_pids = {k: v for k, v in self.srv_pids.items() if k != name}
            self.poll_sessions()
            if t >= t_conc:
                self.conc = random.randint(CONC_MIN, CONC_MAX)
                t_conc = t + 60
            while len(self.active) < self.conc:
                self.start(self.pick_kind())
            if t >= t_sample:
                self.sample()
                t_sample = t + 10
            if t >= t_kill:
                self.kill_one()
                t_kill = t + random.uniform(0.5, 1.5) * KILL_EVERY
            if netem_end is None and t >= t_netem:
                self.netem(True)
                netem_end = t + NETEM_SECS
                say("netem on (%s) for %.0f s, both directions" % (NETEM, NETEM_SECS))
            elif netem_end is not None and t >= netem_end:
                self.netem(False)
                self.netem_windows.append((netem_end - NETEM_SECS, now()))
                say("netem off")
                netem_end = None
                t_netem = t + NETEM_EVERY * random.uniform(0.8, 1.2)
            if flood_pid is None and t >= t_flood:
                ports = [9000 + k for k in range(N_RS)] + [9100, 9200]
                flood_pid, flood_t0 = fork_flood(ports, FLOOD_SYNS), t
                say("SYN flood: %d spoofed SYNs from 200 on-link sources to tcp:%s" % (
                    FLOOD_SYNS, ",".join(map(str, ports))))
            if flood_pid is not None:
                pid, st = os.waitpid(flood_pid, os.WNOHANG)
                if pid:
                    self.flood_windows.append((flood_t0, now()))
                    say("SYN flood sent in %.1f s%s" % (now() - flood_t0, "" if st == 0 else " (sender failed)"))
                    if st:
                        self.problems.append("the SYN flood sender failed")
                    flood_pid = None
                    t_flood = t + FLOOD_EVERY * random.uniform(0.9, 1.1)
            if t >= t_reload:
                self.reload()
                t_reload = now() + random.uniform(30, 60)
            if t >= t_progress:
                self.progress()
                t_progress = t + 60
            time.sleep(0.1)
        if netem_end is not None:
            self.netem(False)
            self.netem_windows.append((netem_end - NETEM_SECS, now()))
        if flood_pid is not None:
            os.waitpid(flood_pid, 0)
            self.flood_windows.append((flood_t0, now()))
        self.drain()
        return self.report()

    def progress(self):
        c = self.counts()
        r = self.rss[-1][1] if self.rss else 0
        say("%d started, %d ok, %d killed, %d failed, %d lost; %d running; ib->eth %s, eth->ib %s; RSS %d KiB" % (
            self.next_id, c["ok"], c["killed"], c["failed"], c["lost"], len(self.active), human(c["ib2eth"]),
            human(c["eth2ib"]), r))

    def counts(self):
        c = {"ok": 0, "killed": 0, "failed": 0, "lost": 0, "ib2eth": 0, "eth2ib": 0, "echo": 0}
        for s in self.done:
            c[s.status] += 1
            if s.status == "ok":
                c["ib2eth"] += s.dirs[0]
                c["eth2ib"] += s.dirs[1]
                if s.dirs == (0, 0):
                    c["echo"] += 2 * s.size
        return c

    def drain(self):
        """No new sessions; the running ones may take their time (a 50 MB echo on a loaded host under
        TCG takes minutes) as long as bytes keep moving: DRAIN_STALL s without a byte through ibgwd
        while sessions remain is a hang (or DRAIN_MAX s in all). Then the gateway must be empty."""
        say("run over: waiting for the %d running session(s)" % len(self.active))
        t_end = now() + DRAIN_MAX
        last, t_moved, t_check = -1.0, now(), 0.0
        while self.active and now() < t_end:
            if not alive(self.gw_pid):
                self.gw_dead = True
                break
            self.poll_sessions()
            if now() >= t_check:
                moved = msum(scrape(), "ibgw_route_bytes_total")
                if moved != last:
                    last, t_moved = moved, now()
                elif now() - t_moved > DRAIN_STALL:
                    break
                t_check = now() + 5
            time.sleep(0.2)
        for s in list(self.active.values()):
            os.kill(s.pid, signal.SIGKILL)
            self.problems.append("session %d (%s, route %s, %d bytes, started at %.0f s) still running at the end, "
                                 "no byte moved through ibgwd for %.0f s" % (s.id, s.kind, s.route, s.size, s.t0,
                                                                             now() - t_moved))
        while self.active:
            self.poll_sessions()
            time.sleep(0.1)
        self.sample()
        # the gateway's side of killed and failed sessions is over within a few seconds (resets,
        # rsocket disconnects); TIME_WAIT is not a session
        t = now()
        while now() < t + LEFTOVER_WAIT and not self.gw_dead:
            m = scrape()
            left = (msum(m, "ibgw_route_sessions_active"), msum(m, "ibgw_ib_connections_active"),
                    msum(m, "ibgw_tcp_connections_active"))
            if m and left == (0, 0, 0):
                break
            time.sleep(1)
        else:
            if not self.gw_dead:
                per = ", ".join("%s %d" % (re.search(r'route="([^"]*)"', k).group(1), v) for k, v in m.items()
                                if k.startswith("ibgw_route_sessions_active{") and v)
                self.problems.append("ibgwd still holds %d session(s) (%s), %d IB and %d TCP connection(s) %.0f s "
                                     "after the last client ended" % (left[0], per, left[1], left[2], LEFTOVER_WAIT))
                # the sessions that ended abnormally are where to look (an in_echo session's far end
                # is an ib_echo session)
                for s in [s for s in self.done if s.status != "ok"][:10]:
                    self.problems.append("  ended abnormally: session %d %s route %s %s at %.0f-%.0f s" % (
                        s.id, s.kind, s.route, s.status, s.t0, s.t1))
        self.final_metrics = scrape()
        with open(os.path.join(SOAK_DIR, "metrics-end.txt"), "w") as f:  # every sample, for a post-mortem
            f.writelines("%s %s\n" % kv for kv in sorted(self.final_metrics.items()))
        self.note_ended(self.final_metrics)

    # -- the verdict --
    def far_check(self):
        """Every completed session with a far-end server: that server logged a connection that received
        exactly its bytes (size and SHA-256). Returns the sessions not found there. The far ends' other
        connections belong to sessions that failed or were killed; one of those that the far end saw
        end in order (err=none) with fewer bytes than its session sent is a cut stream that looked
        complete: on a TCP far end that is a defect (ibgwd must reset it), on an rsocket one it is
        what the protocol allows (rsocket has no reset: an aborted stream reads as end of stream)."""
        left = {}
        for name, path in self.srv_logs.items():
            bag = []
            try:
                with open(path) as f:
                    for line in f:
                        kv = dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
                        bag.append((int(kv.get("in", -1)), kv.get("sha_in"), kv.get("err")))
            except OSError:
                pass
            left[name] = bag
        missing = []
        for s in self.done:
            if s.status != "ok" or not s.far:
                continue
            bag = left.get(s.far, [])
            hit = next((i for i, (n, h, _) in enumerate(bag) if n == s.size and h == s.sha), None)
            if hit is None:
                missing.append(s)
            else:
                del bag[hit]
        # the failed and killed sessions' far ends: whole input (the client was done sending) is fine
        for s in self.done:
            if s.status == "ok" or not s.far:
                continue
            bag = left.get(s.far, [])
            hit = next((i for i, (n, _, _) in enumerate(bag) if n == s.size), None)
            if hit is not None:
                del bag[hit]
        self.far_cut = {name: sum(1 for n, _, e in bag if e == "none") for name, bag in left.items()}
        self.far_err = {name: sum(1 for n, _, e in bag if e != "none") for name, bag in left.items()}
        return missing

    def report(self):
        # the far ends log a connection when it is over: give the last ones a moment
        time.sleep(2)
        missing = self.far_check()
        for s in missing:
            s.status = "lost"
            s.detail = "the far end (%s) has no connection that received these %d bytes (sha %s)" % (
                s.far, s.size, s.sha)
            say("BYTES LOST: session %d (%s, route %s): %s" % (s.id, s.kind, s.route, s.detail))
        tcp_cut = sum(v for k, v in self.far_cut.items() if k.startswith("t"))
        if tcp_cut:
            self.problems.append("%d stream(s) of failed or killed sessions ended in order at a TCP far end "
                                 "with bytes missing (ibgwd must reset them)" % tcp_cut)
        c = self.counts()
        causes = {}
        for s in self.done:
            if s.status in ("failed", "killed"):
                causes[s.cause] = causes.get(s.cause, 0) + 1
        print()
        print("==== soak summary (%.0f min, ibgwd pid %d) ====" % (now() / 60, self.gw_pid))
        print("bytes moved, verified: ib->eth %s, eth->ib %s; echo routes %s" % (
            human(c["ib2eth"]), human(c["eth2ib"]), human(c["echo"])))
        print("sessions: %d started, %d completed and verified, %d failed (%d killed by us), %d lost bytes" % (
            self.next_id, c["ok"], c["failed"] + c["killed"], c["killed"], c["lost"]))
        kinds = {}
        for s in self.done:
            k = kinds.setdefault(s.kind, [0, 0, 0])
            k[0] += 1
            k[1] += s.status == "ok"
            k[2] += s.status == "ok" and 2 * s.size or 0
        print("  by kind: " + ", ".join("%s %d/%d" % (k, v[1], v[0]) for k, v in sorted(kinds.items())))
        outl = [s for s in self.done if s.outlived]
        print("  sessions whose route a reload removed while they ran: %d, %d completed (%d killed by us)" % (
            len(outl), sum(s.status == "ok" for s in outl), sum(s.status == "killed" for s in outl)))
        print("failures by cause: killed %d, flood %d, netem %d, unexplained %d" % (
            causes.get("killed", 0), causes.get("flood", 0), causes.get("netem", 0), causes.get("unexplained", 0)))
        for cause in ("flood", "netem", "unexplained"):
            for s in [s for s in self.done if s.cause == cause][:8]:
                print("  %s: session %d %s route %s %d bytes %.0f-%.0f s: %s" % (
                    cause, s.id, s.kind, s.route, s.size, s.t0, s.t1, s.detail[:200]))
        print("far ends, connections of failed or killed sessions: %d ended in error; ended in order with bytes "
              "missing: %d at TCP servers, %d at rsocket servers (rsocket has no reset)" % (
                  sum(self.far_err.values()), tcp_cut, sum(v for k, v in self.far_cut.items() if k.startswith("rs"))))
        print("faults: %d kills, %d reloads (%d failed), %d netem bursts, %d SYN floods" % (
            self.kills, self.reloads, len(self.reload_failures), len(self.netem_windows), len(self.flood_windows)))
        fm = getattr(self, "final_metrics", {})
        for fam in ("ibgw_route_sessions_ended_total", "ibgw_route_sessions_rejected_total",
                    "ibgw_ib_connections_failed_total", "ibgw_ib_connections_closed_total"):
            agg = {}
            for k, v in self.ended.items():
                if k.startswith(fam + "{") and v:
                    r = re.search(r'reason="([^"]*)"', k).group(1)
                    agg[r] = agg.get(r, 0) + int(v)
            print("ibgwd: %s by reason: %s" % (fam[5:], ", ".join("%s %d" % kv for kv in sorted(agg.items()))
                                               or "none"))
        if fm:
            print("ibgwd: SYN backlog drops %d, retransmits %d, out-of-order segments %d, RSTs out %d" % (
                msum(fm, "ibgw_tcp_syn_backlog_drops_total"), msum(fm, "ibgw_tcp_retransmits_total"),
                msum(fm, "ibgw_tcp_out_of_order_segments_total"), msum(fm, "ibgw_tcp_rsts_out_total")))
            print("ibgwd: TCP connections timed out %d, reset by RSTs in %d; out-of-order data expired %d times; "
                  "RTO expiries %d" % (
                      msum(fm, "ibgw_tcp_connections_timed_out_total"), msum(fm, "ibgw_tcp_rsts_in_total"),
                      msum(fm, "ibgw_tcp_out_of_order_expired_total"), msum(fm, "ibgw_tcp_rto_expiries_total")))
        # RSS trend after the warm-up
        flat = True
        post = [(t, r) for t, r in self.rss if t >= WARMUP]
        if len(post) >= 3:
            slope, _ = linfit([t / 60 for t, _ in post], [r for _, r in post])
            first, mx, last = post[0][1], max(r for _, r in post), post[-1][1]
            flat = slope <= RSS_SLOPE
            print("RSS (KiB): at start %d, first after the %.0f s warm-up %d, max %d, last %d; slope %+.1f KiB/min "
                  "over %d samples (flat: <= %.0f KiB/min) -> %s" % (
                      self.rss[0][1], WARMUP, first, mx, last, slope, len(post), RSS_SLOPE,
                      "not judged (SOAK_RSS_SLOPE=inf)" if RSS_SLOPE == float("inf") else "flat" if flat else "GROWING"))
        else:
            print("RSS: too few samples after the warm-up (%d)" % len(post))
            flat = False
        if self.gauges:
            keys = list(self.gauges[0][1])
            post_g = [g for t, g in self.gauges if t >= WARMUP] or [g for _, g in self.gauges]
            print("gauges after the warm-up (max / last): " + ", ".join(
                "%s %d/%d" % (k, max(g[k] for g in post_g), post_g[-1][k]) for k in keys))
        for p in self.problems:
            print("problem: " + p)
        bad = []
        if c["lost"]:
            bad.append("%d session(s) lost or corrupted bytes" % c["lost"])
        if causes.get("unexplained"):
            bad.append("%d unexplained failure(s)" % causes["unexplained"])
        if self.gw_dead:
            bad.append("ibgwd died")
        if not flat:
            bad.append("RSS not flat")
        if self.reload_failures:
            bad.append("%d reload(s) not applied" % len(self.reload_failures))
        if self.problems:
            bad.append("%d problem(s)" % len(self.problems))
        if c["ok"] == 0:
            bad.append("no session completed")
        print("verdict: " + ("PASS" if not bad else "FAIL: " + "; ".join(bad)))
        return 0 if not bad else 1


def main():
    global LOG
    if len(sys.argv) > 1 and sys.argv[1] == "routes":
        sys.stdout.write(routes_text(static_routes()))
        return 0
    os.makedirs(SOAK_DIR, exist_ok=True)
    LOG = open(os.path.join(SOAK_DIR, "sessions.log"), "w")
    return Soak().run()


if __name__ == "__main__":
    sys.exit(main())
