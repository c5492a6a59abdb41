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
  pipelined PORT          GET /metrics from a socket with a small receive buffer, and a second request
                          behind it once the reply is under way; reads to the end: prints
                          "complete N" when the body came whole (Content-Length), else "cut GOT/N: ERROR"
  bighead PORT KB         a request head of KB KiB, sent while the reply is read; prints the status
                          line, or "reset" when the connection was reset before one came
  slowread PORT STALLED   a client reads /metrics slowly but steadily (4 KiB every 10 ms) while
                          STALLED others ask for it and read nothing, then a /health client comes:
                          prints "slow complete N|cut GOT/N: ERROR; health STATUS"
"""
import threading
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


def read_reply(s, pace=0.0, d=b""):
    """Reads S to the end (4 KiB at a time, PACE seconds apart) after D; returns (status line, body
    length, Content-Length, the error that ended it or None)."""
    err = None
    try:
        while b := s.recv(4096):
            d += b
            if pace:
                time.sleep(pace)
    except OSError as e:
        err = e
    hdr, _, body = d.partition(b"\r\n\r\n")
    lines = hdr.split(b"\r\n")
    n = next((int(l.split(b":")[1]) for l in lines if l.lower().startswith(b"content-length:")), -1)
    return lines[0].decode(errors="replace"), len(body), n, err


def verdict(body, n, err):
    return f"complete {n}" if body == n and n > 0 else f"cut {body}/{n}: {err}"


def pipelined(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    first = s.recv(1)  # the reply has begun: the daemon reads no more
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")  # (left in its socket)
    _, body, n, err = read_reply(s, d=first)
    print(verdict(body, n, err))


def bighead(port, kb):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X-Big: " + b"a" * (kb * 1024) + b"\r\n\r\n"

    def send():
        try:
            s.sendall(head)
        except OSError:
            pass  # (the daemon stopped reading: its answer is what counts)

    t = threading.Thread(target=send, daemon=True)
    t.start()
    status, _, _, err = read_reply(s)
    print(status if status else f"reset ({err})")


def slowread(port, stalled):
    out = {}
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(15)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")

    def reader():
        _, body, n, err = read_reply(s, 0.01)
        out["slow"] = verdict(body, n, err)

    t = threading.Thread(target=reader)
    t.start()
    time.sleep(0.3)
    socks = []
    for _ in range(stalled):
        x = socket.socket()
        x.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        x.settimeout(10)
        x.connect(("127.0.0.1", port))
        x.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        socks.append(x)
    time.sleep(0.6)  # every reply older than the eviction grace
    # ... if the daemon accepted the stalled ones by then: starved of CPU (the second lane of make
    # check runs at nice 10 beside the VM tests) it may take them just before /health, whose
    # connection is then closed at once, as the cap says, every stalled one being younger than the
    # grace. So /health is asked again for 3 s at most, well within the stalled ones' 10 s deadline:
    # what serves it is still an eviction, not a deadline.
    tries, status, end = 0, "", time.monotonic() + 3
    while not status and time.monotonic() < end:
        if tries:
            time.sleep(0.3)
        tries += 1
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as h:
                h.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                status, _, _, _ = read_reply(h)
        except OSError:
            status = ""  # (closed at once: the request met the reset)
    t.join()
    print(f"slow {out.get('slow')}; health {status} (try {tries})")
    for x in socks:
        x.close()


def main():
    cmd = sys.argv[1]
    if cmd == "head":
        head(int(sys.argv[2]), sys.argv[3])
        return
    if cmd in ("pipelined", "bighead", "slowread"):
        {"pipelined": pipelined, "bighead": bighead, "slowread": slowread}[cmd](*map(int, sys.argv[2:]))
        return
    a = [float(x) if "." in x else int(x) for x in sys.argv[2:]]
    {"reset": reset, "slowloris": slowloris, "hold": hold, "stall": stall}[cmd](*a)


if __name__ == "__main__":
    main()
