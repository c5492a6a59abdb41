#!/usr/bin/env python3
"""Hostile clients of ibgwd's stats endpoint on 127.0.0.1:PORT.

  reset PORT N            N times: GET /metrics, read a few bytes of the reply, then reset the
                          connection (SO_LINGER 0 close) while the daemon is still writing it
  slowloris PORT EVERY MAX  sends a request one byte every EVERY seconds; prints "cut after S s" when
                          the daemon closes the connection, or "not cut after MAX s"
  hold PORT N SECS        opens N idle connections; after 2 s prints "open A closed B" (closed: the
                          daemon closed or reset it), keeps the open ones SECS seconds, closes them
  stall PORT N SECS       N connections with a small receive buffer each ask for /metrics and read
                          nothing; after 2 s prints "open A closed B" as hold does, keeps the open
                          ones SECS seconds, closes them
  head PORT PATH          sends HEAD PATH and reads until the daemon closes; prints the status line
                          and how many bytes came after the headers (a HEAD answer has none)
"""
import socket
import struct
import sys
import time

REQ = b"GET /metrics HTTP/1.1\r\nHost: x\r\nUser-Agent: slow\r\nAccept: */*\r\n\r\n"


def closed_by_peer(s):
    """True when the peer closed or reset S (without blocking)."""
    try:
        return s.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def reset(port, n):
    for _ in range(n):
        s = socket.socket()
        # a small receive buffer: the daemon cannot hand the whole reply to the kernel at once
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        s.recv(16)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    print(f"ok {n}")


def slowloris(port, every, limit):
    s = socket.create_connection(("127.0.0.1", port))
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < limit:
        try:
            s.send(REQ[i % len(REQ) : i % len(REQ) + 1])
        except OSError:
            break
        i += 1
        end = time.monotonic() + every
        cut = False
        while time.monotonic() < end:
            if closed_by_peer(s):
                cut = True
                break
            time.sleep(0.1)
        if cut:
            break
    else:
        print(f"not cut after {limit} s ({i} bytes sent)")
        return
    print(f"cut after {time.monotonic() - t0:.1f} s ({i} bytes sent)")


def report_and_hold(socks, secs):
    """After 2 s prints "open A closed B" (closed: the daemon closed or reset it), keeps SOCKS SECS
    seconds, closes them."""
    for s in socks:
        s.settimeout(None)  # (with a timeout, a MSG_DONTWAIT recv would raise a timeout, not EAGAIN)
    time.sleep(2)
    closed = [s for s in socks if closed_by_peer(s)]
    print(f"open {len(socks) - len(closed)} closed {len(closed)}", flush=True)
    time.sleep(secs)
    for s in socks:
        s.close()


def hold(port, n, secs):
    report_and_hold([socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(n)], secs)


def stall(port, n, secs):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)  # (before connect: the window it offers)
        s.settimeout(10)
        s.connect(("127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        socks.append(s)
    report_and_hold(socks, secs)


def head(port, path):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"HEAD " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    d = b""
    while b := s.recv(65536):
        d += b
    hdr, _, rest = d.partition(b"\r\n\r\n")
    print(hdr.split(b"\r\n")[0].decode(), len(rest))


def main():
    cmd = sys.argv[1]
    if cmd == "head":
        head(int(sys.argv[2]), sys.argv[3])
        return
    a = [float(x) if "." in x else int(x) for x in sys.argv[2:]]
    {"reset": reset, "slowloris": slowloris, "hold": hold, "stall": stall}[cmd](*a)


if __name__ == "__main__":
    main()
