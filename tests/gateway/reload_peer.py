#!/usr/bin/env python3
"""Kernel-side TCP clients of the live-reload test (run inside the peer namespace).

  live HOST PORT N STOPFILE   opens N connections to an echo route and keeps every one of them busy:
                              each sends random chunks (1 B to 64 KiB) and reads the echo back, until
                              STOPFILE exists; then half-closes, reads the rest to EOF and compares the
                              sha256 of all it sent with the sha256 of all it got. Prints
                              "ready" once all N are open, then "ok N BYTES". Any difference, reset or
                              stall (30 s without progress) fails it.
  try HOST PORT N             opens N more connections and holds them open while it checks each one:
                              one byte out, the same byte back = admitted; a reset or EOF = refused.
                              Prints "admitted A refused R", then closes them all.
  churn HOST PORT STOPFILE    one short session after another (connect, 1 KiB out and back, half-close,
                              EOF, close) until STOPFILE exists: prints "ok N" or "failed F of N: FIRST
                              ERROR". Each waits for the gateway's end of stream before the next one
                              opens, so a client holds one session (and its global slot) at a time: the
                              test's limits leave room for that, not for sessions piling up in their
                              close behind a client that races ahead.
"""
import hashlib
import os
import random
import socket
import sys
import threading
import time


def connect(host, port):
    s = socket.create_connection((host, port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Live(threading.Thread):
    def __init__(self, host, port, stopfile, i):
        super().__init__(daemon=True)
        self.s = connect(host, port)
        self.stopfile = stopfile
        self.rnd = random.Random(i)
        self.sent = hashlib.sha256()
        self.got = hashlib.sha256()
        self.n_sent = self.n_got = 0
        self.err = None

    def recv_exact(self, n):
        while n:
            b = self.s.recv(min(n, 1 << 16))
            if not b:
                raise RuntimeError("EOF in the middle of an echo")
            self.got.update(b)
            self.n_got += len(b)
            n -= len(b)

    def run(self):
        try:
            while not os.path.exists(self.stopfile):
                size = self.rnd.choice((1, 7, 1460, 4096, 65536, self.rnd.randint(1, 65536)))
                data = os.urandom(size)
                self.s.sendall(data)
                self.sent.update(data)
                self.n_sent += size
                self.recv_exact(size)
            self.s.shutdown(socket.SHUT_WR)
            while True:
                b = self.s.recv(1 << 16)
                if not b:
                    break
                self.got.update(b)
                self.n_got += len(b)
            if self.n_got != self.n_sent or self.got.digest() != self.sent.digest():
                raise RuntimeError(f"sent {self.n_sent} B, got {self.n_got} B back, sha256 differ")
        except Exception as e:  # reported by the main thread
            self.err = e
        finally:
            self.s.close()


def live(host, port, n, stopfile):
    ts = [Live(host, port, stopfile, i) for i in range(n)]
    for t in ts:
        t.start()
    print("ready", flush=True)
    for t in ts:
        t.join()
    bad = [t.err for t in ts if t.err]
    if bad:
        print(f"{len(bad)} of {n} sessions failed, first: {bad[0]!r}", flush=True)
        sys.exit(1)
    print(f"ok {n} {sum(t.n_sent for t in ts)}", flush=True)


def try_open(host, port, n):
    socks, admitted = [], 0
    for _ in range(n):
        try:
            s = connect(host, port)
            socks.append(s)
            s.sendall(b"x")
            s.settimeout(10)
            admitted += s.recv(1) == b"x"
        except OSError:  # refused: reset (or never connected)
            pass
    refused = n - admitted
    print(f"admitted {admitted} refused {refused}", flush=True)
    for s in socks:
        s.close()


def churn(host, port, stopfile):
    n, fails, first = 0, 0, None
    while not os.path.exists(stopfile):
        n += 1
        try:
            s = connect(host, port)
            try:
                s.settimeout(10)
                data = os.urandom(1024)
                s.sendall(data)
                got = b""
                while len(got) < len(data):
                    b = s.recv(len(data) - len(got))
                    if not b:
                        raise RuntimeError("EOF before the echo")
                    got += b
                if got != data:
                    raise RuntimeError("echo differs")
                s.shutdown(socket.SHUT_WR)
                if s.recv(1):
                    raise RuntimeError("bytes after the echo")
            finally:
                s.close()
        except (OSError, RuntimeError) as e:
            fails += 1
            first = first or e
    print(f"failed {fails} of {n}: {first!r}" if fails else f"ok {n}", flush=True)


def main():
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == "live":
        live(a[0], int(a[1]), int(a[2]), a[3])
    elif cmd == "try":
        try_open(a[0], int(a[1]), int(a[2]))
    elif cmd == "churn":
        churn(a[0], int(a[1]), a[2])
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
