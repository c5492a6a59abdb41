#!/usr/bin/env python3
"""Kernel-side TCP peers for the Ethernet-side tests (run inside the peer namespace).

  conc HOST PORT N SIZE        N concurrent connections, each sends SIZE random bytes and must get
                               exactly them back (echo route); prints "ok N"
  hc-client HOST PORT SIZE     half-close from our side: send SIZE bytes, shut down, read the echo to
                               EOF and compare
  hc-server-listen PORT SIZE OUT  server that sends SIZE bytes then half-closes, then reads to EOF and
                               writes the sha256 of what it read to OUT
  hc-server-client HOST PORT SIZE  its client (through the relay): reads SIZE bytes to EOF, checks
                               them, then sends SIZE bytes and closes; prints their sha256
  rst-client HOST PORT         connects, sends a little, resets (SO_LINGER 0); prints "ok"
  rst-server-listen PORT       accepts one connection, reads a little and resets it
  expect-reset HOST PORT       connects, sends a little, expects the connection to be reset
  hold HOST PORT N SECS        opens N idle connections and holds them SECS seconds
"""
import asyncio
import hashlib
import os
import socket
import struct
import sys
import threading
import time


def pattern(size, seed):
    out = bytearray()
    h = hashlib.sha256(seed.encode()).digest()
    while len(out) < size:
        h = hashlib.sha256(h).digest()
        out += h * 64
    return bytes(out[:size])


async def one(host, port, size, i, sem):
    async with sem:
        data = os.urandom(size)
        for attempt in range(3):
            try:
                r, w = await asyncio.wait_for(asyncio.open_connection(host, port), 20)
                break
            except (OSError, asyncio.TimeoutError):
                if attempt == 2:
                    raise
                await asyncio.sleep(0.5)
        w.write(data)
        await w.drain()
        got = await asyncio.wait_for(r.readexactly(size), 60)
        w.close()
        if got != data:
            raise RuntimeError(f"connection {i}: echo differs")
        return True


async def conc(host, port, n, size):
    sem = asyncio.Semaphore(n)
    res = await asyncio.gather(*(one(host, port, size, i, sem) for i in range(n)), return_exceptions=True)
    bad = [r for r in res if r is not True]
    if bad:
        print(f"{len(bad)} of {n} connections failed, first: {bad[0]!r}")
        sys.exit(1)
    print(f"ok {n}")


def recv_all(s):
    chunks = []
    while True:
        b = s.recv(1 << 16)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def main():
    cmd = sys.argv[1]
    a = sys.argv[2:]
    if cmd == "conc":
        asyncio.run(conc(a[0], int(a[1]), int(a[2]), int(a[3])))
    elif cmd == "hc-client":
        size = int(a[2])
        data = pattern(size, "hc")
        s = socket.create_connection((a[0], int(a[1])), timeout=30)
        box = []
        t = threading.Thread(target=lambda: box.append(recv_all(s)))
        t.start()  # read while sending: the echo must not back up into our own window
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        t.join(60)
        got = box[0] if box else b""
        s.close()
        if got != data:
            print(f"echo after half-close differs: {len(got)} of {size} bytes")
            sys.exit(1)
        print("ok")
    elif cmd == "hc-server-listen":
        size = int(a[1])
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("0.0.0.0", int(a[0])))
        ls.listen(4)
        ls.settimeout(60)
        s, _ = ls.accept()
        s.settimeout(60)
        s.sendall(pattern(size, "srv"))
        s.shutdown(socket.SHUT_WR)
        got = recv_all(s)
        s.close()
        with open(a[2], "w") as f:
            f.write(hashlib.sha256(got).hexdigest() + " %d\n" % len(got))
    elif cmd == "hc-server-client":
        size = int(a[2])
        s = socket.create_connection((a[0], int(a[1])), timeout=30)
        got = recv_all(s)  # the server half-closed: EOF while we can still send
        if got != pattern(size, "srv"):
            print(f"data before the server's half-close differs: {len(got)} of {size} bytes")
            sys.exit(1)
        data = pattern(size, "cli")
        s.sendall(data)
        s.close()
        print(hashlib.sha256(data).hexdigest() + " %d" % len(data))
    elif cmd == "rst-client":
        s = socket.create_connection((a[0], int(a[1])), timeout=10)
        s.sendall(b"x" * 1000)
        time.sleep(0.2)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        print("ok")
    elif cmd == "rst-server-listen":
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("0.0.0.0", int(a[0])))
        ls.listen(4)
        ls.settimeout(30)
        s, _ = ls.accept()
        s.recv(100)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    elif cmd == "expect-reset":
        s = socket.create_connection((a[0], int(a[1])), timeout=10)
        s.sendall(b"y" * 100)
        try:
            while True:
                b = s.recv(1000)
                if not b:
                    print("orderly EOF instead of a reset")
                    sys.exit(1)
        except ConnectionResetError:
            print("ok")
        except socket.timeout:
            print("no reset within 10 s")
            sys.exit(1)
    elif cmd == "hold":
        n, secs = int(a[2]), float(a[3])
        socks = []
        for _ in range(n):
            socks.append(socket.create_connection((a[0], int(a[1])), timeout=10))
        print("holding %d" % n, flush=True)
        time.sleep(secs)
        for s in socks:
            s.close()
    else:
        print(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
