#!/usr/bin/env python3
"""End-to-end test peers: kernel TCP (run in the Ethernet namespace) and rsocket (librdmacm through
ctypes: the stock rsocket API, no build step, blocking and one connection at a time, which is all a
slow or hashing server needs). Every byte either way is hashed with SHA-256; servers append one line
per connection to LOG:  "conn in=N sha_in=H out=N sha_out=H err=E".

  tcp-serve PORT LOG [--stall S] [--rcvbuf B]   echo server, one thread per connection; --stall:
                                                read nothing for S seconds after accepting
  tcp-sink PORT LOG [--stall S] [--rate BPS] [--progress FILE]
                                                reads to end of stream (optionally S seconds late and
                                                at most BPS bytes/s), never answers, then closes;
                                                --progress: FILE always holds the bytes read so far
  tcp-client HOST PORT SIZE [--rate BPS] [--src ADDR]  sends SIZE random bytes (from ADDR), reads the
                                                echo to EOF, checks it; prints "ok sent=N sha=H secs=S";
                                                SIGUSR1 lifts --rate (send the rest at full speed)
  tcp-send HOST PORT SIZE                       sends SIZE random bytes, half-closes, reads to EOF
                                                (expects nothing back); prints "ok sent=N sha=H secs=S"
  tcp-talk PORT LOG SIZE [--write B] [--gap S]  server that sends SIZE random bytes on each connection in
                                                writes of B bytes (default 200, TCP_NODELAY) S seconds
                                                apart (default 0.001): small segments, which the
                                                gateway copies; reads nothing; logs "conn out=N
                                                sha_out=H err=E" (the bytes it sent)
  tcp-hold HOST PORT [N]                        connects (N connections, default 1), sends a little on
                                                each, waits for the peer's end of each: prints "rst",
                                                "fin" or "timeout" (60 s) per connection
  rs-serve HOST PORT LOG [echo|sink] [--stall S] rsocket server (echo by default); --stall: read
                                                nothing for S seconds after accepting (SIGUSR1 ends
                                                the stall, of this connection and the later ones)
"""
import ctypes
import hashlib
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time

CHUNK = 65536


def opt(args, name, conv=float, default=None):
    if name in args:
        i = args.index(name)
        v = conv(args[i + 1])
        del args[i:i + 2]
        return v
    return default


def log_line(path, text):
    with open(path, "a") as f:
        f.write(text + "\n")


def tcp_listener(port):
    # dual-stack: IPv4 clients arrive as ::ffff:a.b.c.d (a namespace without IPv6 still has the socket)
    ls = socket.socket(socket.AF_INET6)
    ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("::", port))
    ls.listen(512)
    return ls


def tcp_conn(s, log, stall, echo, rate, progress=None):
    hin, hout = hashlib.sha256(), hashlib.sha256()
    nin = nout = 0
    err = "none"
    t0 = time.monotonic()
    try:
        if stall:
            time.sleep(stall)
        while True:
            b = s.recv(CHUNK)
            if not b:
                break
            hin.update(b)
            nin += len(b)
            if progress:
                with open(progress + ".tmp", "w") as f:
                    f.write("%d\n" % nin)
                os.replace(progress + ".tmp", progress)
            if echo:
                s.sendall(b)
                hout.update(b)
                nout += len(b)
            if rate:
                ahead = nin / rate - (time.monotonic() - t0 - (stall or 0))
                if ahead > 0:
                    time.sleep(ahead)
        s.shutdown(socket.SHUT_WR)
    except OSError as e:
        err = type(e).__name__
    s.close()
    log_line(log, "conn in=%d sha_in=%s out=%d sha_out=%s err=%s" % (nin, hin.hexdigest(), nout, hout.hexdigest(), err))


def tcp_serve(args, echo):
    stall = opt(args, "--stall")
    rcvbuf = opt(args, "--rcvbuf", int)
    rate = opt(args, "--rate")
    progress = opt(args, "--progress", str)
    port, log = int(args[0]), args[1]
    ls = tcp_listener(port)
    if rcvbuf:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # inherited by accepted sockets
    print("listening", port, flush=True)
    while True:
        s, _ = ls.accept()
        threading.Thread(target=tcp_conn, args=(s, log, stall, echo, rate, progress), daemon=True).start()


def tcp_talk_conn(s, log, size, write, gap):
    h = hashlib.sha256()
    n = 0
    err = "none"
    data = os.urandom(size)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while n < size:
            b = data[n:n + write]
            s.sendall(b)
            h.update(b)
            n += len(b)
            if gap:
                time.sleep(gap)
        s.shutdown(socket.SHUT_WR)
    except OSError as e:
        err = type(e).__name__
    s.close()
    log_line(log, "conn out=%d sha_out=%s err=%s" % (n, h.hexdigest(), err))


def tcp_talk(args):
    write = opt(args, "--write", int, 200)
    gap = opt(args, "--gap", float, 0.001)
    port, log, size = int(args[0]), args[1], int(args[2])
    ls = tcp_listener(port)
    print("listening", port, flush=True)
    while True:
        s, _ = ls.accept()
        threading.Thread(target=tcp_talk_conn, args=(s, log, size, write, gap), daemon=True).start()


def tcp_client(args, expect_echo):
    rate = [opt(args, "--rate")]  # a list: the SIGUSR1 handler clears it
    signal.signal(signal.SIGUSR1, lambda *_: rate.__setitem__(0, None))
    src = opt(args, "--src", str)
    host, port, size = args[0], int(args[1]), int(args[2])
    t0 = time.monotonic()
    s = socket.create_connection((host, port), timeout=30, source_address=(src, 0) if src else None)
    s.setblocking(False)
    hs, hr = hashlib.sha256(), hashlib.sha256()
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
    sent = got = 0
    buf = b""
    eof = False
    deadline = time.monotonic() + 600
    while not eof:
        if time.monotonic() > deadline:
            print("FAIL timeout sent=%d got=%d" % (sent, got))
            sys.exit(1)
        for _, ev in sel.select(5):
            if ev & selectors.EVENT_WRITE and sent < size:
                if not buf:
                    buf = os.urandom(min(CHUNK, size - sent))
                if rate[0] and sent / rate[0] > time.monotonic() - t0:
                    continue
                try:
                    n = s.send(buf)
                except BlockingIOError:
                    n = 0
                except OSError as e:
                    print("FAIL send %s sent=%d got=%d" % (type(e).__name__, sent, got))
                    sys.exit(1)
                hs.update(buf[:n])
                buf = buf[n:]
                sent += n
                if sent == size:
                    s.shutdown(socket.SHUT_WR)
                    sel.modify(s, selectors.EVENT_READ)
            if ev & selectors.EVENT_READ:
                try:
                    b = s.recv(CHUNK)
                except BlockingIOError:
                    continue
                except OSError as e:
                    print("FAIL recv %s sent=%d got=%d" % (type(e).__name__, sent, got))
                    sys.exit(1)
                if not b:
                    eof = True
                hr.update(b)
                got += len(b)
    dt = time.monotonic() - t0
    ok = sent == size and (hs.hexdigest() == hr.hexdigest() if expect_echo else got == 0)
    print("%s sent=%d got=%d sha=%s sha_back=%s secs=%.2f mbit_s=%.1f" % (
        "ok" if ok else "FAIL", sent, got, hs.hexdigest(), hr.hexdigest(), dt, (sent + got) * 8 / dt / 1e6))
    sys.exit(0 if ok else 1)


def tcp_hold(args):
    # N connections from one process: each python start costs ~1 s under TCG
    n = int(args[2]) if len(args) > 2 else 1
    socks = []
    for _ in range(n):
        s = socket.create_connection((args[0], int(args[1])), timeout=60)
        s.sendall(b"h" * 1000)
        socks.append(s)
    print("connected", flush=True)
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    while socks:
        evs = sel.select(60)
        if not evs:
            for _ in socks:
                print("timeout")
            return
        for key, _ in evs:
            s = key.fileobj
            try:
                if s.recv(CHUNK):
                    continue
                print("fin", flush=True)
            except ConnectionResetError:
                print("rst", flush=True)
            sel.unregister(s)
            socks.remove(s)
            s.close()


# ---- rsocket through ctypes ----

def rs_lib():
    rs = ctypes.CDLL("librdmacm.so.1", use_errno=True)
    for f in ("rrecv", "rsend"):
        getattr(rs, f).restype = ctypes.c_ssize_t
        getattr(rs, f).argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return rs


def rs_check(rs, ret, what):
    if ret < 0:
        e = ctypes.get_errno()
        raise OSError(e, "%s: %s" % (what, os.strerror(e)))
    return ret


def rs_serve(args):
    stall = opt(args, "--stall")
    host, port, log = args[0], int(args[1]), args[2]
    echo = (args[3] if len(args) > 3 else "echo") == "echo"
    go = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: go.set())
    rs = rs_lib()
    sa = struct.pack("=H", socket.AF_INET) + struct.pack("!H", port) + socket.inet_aton(host) + b"\0" * 8
    lfd = rs_check(rs, rs.rsocket(socket.AF_INET, socket.SOCK_STREAM, 0), "rsocket")
    one = ctypes.c_int(1)
    rs.rsetsockopt(lfd, socket.SOL_SOCKET, socket.SO_REUSEADDR, ctypes.byref(one), 4)
    rs_check(rs, rs.rbind(lfd, sa, len(sa)), "rbind")
    rs_check(rs, rs.rlisten(lfd, 16), "rlisten")
    print("listening", host, port, flush=True)
    buf = ctypes.create_string_buffer(CHUNK)
    while True:
        fd = rs_check(rs, rs.raccept(lfd, None, None), "raccept")
        hin, hout = hashlib.sha256(), hashlib.sha256()
        nin = nout = 0
        err = "none"
        try:
            if stall:
                go.wait(stall)
            while True:
                n = rs_check(rs, rs.rrecv(fd, buf, CHUNK, 0), "rrecv")
                if n == 0:
                    break
                data = buf.raw[:n]
                hin.update(data)
                nin += n
                if echo:
                    off = 0
                    while off < n:
                        off += rs_check(rs, rs.rsend(fd, buf[off:n], n - off, 0), "rsend")
                    hout.update(data)
                    nout += n
            rs.rshutdown(fd, socket.SHUT_WR)
        except OSError as e:
            err = "errno%d" % e.errno
        rs.rclose(fd)
        log_line(log, "conn in=%d sha_in=%s out=%d sha_out=%s err=%s" % (nin, hin.hexdigest(), nout, hout.hexdigest(), err))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "tcp-serve":
        tcp_serve(args, True)
    elif cmd == "tcp-sink":
        tcp_serve(args, False)
    elif cmd == "tcp-client":
        tcp_client(args, True)
    elif cmd == "tcp-send":
        tcp_client(args, False)
    elif cmd == "tcp-talk":
        tcp_talk(args)
    elif cmd == "tcp-hold":
        tcp_hold(args)
    elif cmd == "rs-serve":
        rs_serve(args)
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
