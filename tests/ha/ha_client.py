#!/usr/bin/env python3
"""Kernel TCP clients of the several-gateway tests: every byte checked by SHA-256 against an echo.

  ha_client.py once HOST PORT BYTES [TIMEOUT]
        one session: sends BYTES random bytes, reads them back, compares; exit 0 when intact
  ha_client.py loop HOST PORT BYTES SECONDS
        sessions back to back for SECONDS (each with a 1 s connect timeout and 5 s to finish); one line
        per session on stdout: "START END ok|fail REASON" (monotonic seconds since the loop began)
  ha_client.py slow HOST PORT BYTES SECONDS
        one session that spreads BYTES over SECONDS (the echo read as it comes): a session in flight
        while a gateway drains; prints "ok" or "fail REASON", exit 0 when intact
  ha_client.py serve ADDR PORT 0
        a kernel TCP echo server (a thread per connection) until killed (ADDR :: : both families)
"""
import hashlib
import os
import socket
import sys
import time


def session(host, port, data, connect_timeout=1.0, total_timeout=5.0, pace_s=0.0):
    want = hashlib.sha256(data).hexdigest()
    s = socket.create_connection((host, port), timeout=connect_timeout)
    s.setblocking(False)
    got = hashlib.sha256()
    n_got = sent = 0
    start = time.monotonic()
    deadline = start + total_timeout
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
    try:
        while n_got < len(data):
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError("timed out after %d/%d bytes back" % (n_got, len(data)))
            allowed = len(data) if not pace_s else min(len(data), int(len(data) * (now - start) / pace_s) + 1)
            ev = sel.select(0.05)
            for _, mask in ev:
                if mask & selectors.EVENT_READ:
                    b = s.recv(65536)
                    if not b:
                        raise ConnectionError("closed after %d/%d bytes back" % (n_got, len(data)))
                    got.update(b)
                    n_got += len(b)
                if mask & selectors.EVENT_WRITE and sent < allowed:
                    try:
                        sent += s.send(data[sent:allowed])
                    except BlockingIOError:
                        pass
            if sent >= len(data):
                sel.modify(s, selectors.EVENT_READ)
        if got.hexdigest() != want:
            raise ValueError("sha256 mismatch")
    finally:
        s.close()


def main():
    mode, host, port, nbytes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if mode == "once":
        to = float(sys.argv[5]) if len(sys.argv) > 5 else 10.0
        try:
            session(host, port, os.urandom(nbytes), connect_timeout=to, total_timeout=to)
        except Exception as e:
            print("fail %s" % e)
            return 1
        print("ok")
        return 0
    if mode == "loop":
        secs = float(sys.argv[5])
        t0 = time.monotonic()
        while time.monotonic() - t0 < secs:
            a = time.monotonic() - t0
            try:
                session(host, port, os.urandom(nbytes))
                r = "ok -"
            except Exception as e:
                r = "fail " + str(e).replace(" ", "_")
                time.sleep(0.05)
            print("%.3f %.3f %s" % (a, time.monotonic() - t0, r), flush=True)
        return 0
    if mode == "serve":
        import threading

        def echo(c):
            with c:
                while True:
                    b = c.recv(65536)
                    if not b:
                        return
                    c.sendall(b)

        # an IPv6 address (:: included) serves both families
        srv = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        if ":" in host:
            srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((host, port))
        srv.listen(128)
        while True:
            c, _ = srv.accept()
            threading.Thread(target=echo, args=(c,), daemon=True).start()
    if mode == "slow":
        secs = float(sys.argv[5])
        try:
            session(host, port, os.urandom(nbytes), connect_timeout=5, total_timeout=secs + 20, pace_s=secs)
        except Exception as e:
            print("fail %s" % e, flush=True)
            return 1
        print("ok", flush=True)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
