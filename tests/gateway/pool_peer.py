#!/usr/bin/env python3
"""Backends and clients of tests/gateway/test_pools.sh (kernel TCP, run inside the test namespace).

  pool_peer.py server ID ADDR PORT LOG
      A backend: for each connection it first sends "backend-ID\\n", then echoes every byte; when the
      client has ended its side it appends "session BYTES SHA256" to LOG (a session that sent nothing,
      e.g. a health check, is not logged), so the test counts the sessions each backend carried.
  pool_peer.py run HOST PORT N SIZE [--src A,B,..] [--conc K] [--timeout S]
      N sessions to HOST:PORT (K at once, default 1), each sending SIZE random bytes and reading them
      back: prints one line per session, "ok ID", or "fail REASON ID" (ID "-" when unknown), in order.
      A session is ok only when the echo's sha256 equals what was sent. --src: source addresses, used
      in turn (session i from src[i % len]).
  pool_peer.py hold HOST PORT SIZE FIFO
      One session that sends half of SIZE, prints "held ID" (flushed), waits until a line arrives on
      FIFO, sends the rest and prints "ok ID" or "fail REASON ID".
"""
import errno
import hashlib
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from peers import echo, serve  # noqa: E402


def server(ident, addr, port, log):
    lock = threading.Lock()

    def backend(c, _):
        h = hashlib.sha256()
        try:
            c.sendall(b'backend-%s\n' % ident.encode())
            n = echo(c, h)
        except OSError:
            return
        finally:
            c.close()
        if n:
            with lock, open(log, 'a') as f:
                f.write('session %d %s\n' % (n, h.hexdigest()))

    serve(addr, port, backend, 256)


def read_ident(s, buf):
    while b'\n' not in buf:
        b = s.recv(65536)
        if not b:
            raise ConnectionError('closed before the backend named itself')
        buf += b
    line, rest = buf.split(b'\n', 1)
    if not line.startswith(b'backend-'):
        raise ConnectionError('bad greeting %r' % line[:40])
    return line[8:].decode(), rest


def session(host, port, size, src, timeout, hold=None):
    data = os.urandom(size)
    ident = '-'
    s = socket.socket()
    s.settimeout(timeout)
    try:
        if src:
            s.bind((src, 0))
        s.connect((host, port))
        got = bytearray()
        ident, rest = read_ident(s, b'')
        got += rest
        if hold:
            half = size // 2
            s.sendall(data[:half])
            print('held', ident, flush=True)
            with open(hold) as f:
                f.readline()
            s.sendall(data[half:])
        else:
            # the echo of a small session fits the buffers on the way: send it all, then read
            s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
        if hashlib.sha256(got).digest() != hashlib.sha256(data).digest():
            return 'fail short-or-different(%d/%d)' % (len(got), size), ident
        return 'ok', ident
    except socket.timeout:
        return 'fail timeout', ident
    except OSError as e:
        # a reset shows as ECONNRESET, as EPIPE on a write, or as ENOTCONN on shutdown() after it
        if e.errno in (errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN):
            return 'fail reset', ident
        return 'fail %s' % type(e).__name__, ident
    finally:
        s.close()


def run(host, port, n, size, srcs, conc, timeout):
    res = [None] * n
    nxt = [0]
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= n:
                return
            res[i] = session(host, port, size, srcs[i % len(srcs)] if srcs else None, timeout)

    ts = [threading.Thread(target=worker) for _ in range(conc)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for r, ident in res:
        print(r, ident)


def main():
    a = sys.argv[1:]
    if a[0] == 'server':
        server(a[1], a[2], int(a[3]), a[4])
    elif a[0] == 'run':
        srcs, conc, timeout = None, 1, 30.0
        rest = a[5:]
        while rest:
            if rest[0] == '--src':
                srcs = rest[1].split(',')
            elif rest[0] == '--conc':
                conc = int(rest[1])
            elif rest[0] == '--timeout':
                timeout = float(rest[1])
            rest = rest[2:]
        run(a[1], int(a[2]), int(a[3]), int(a[4]), srcs, conc, timeout)
    elif a[0] == 'hold':
        r, ident = session(a[1], int(a[2]), int(a[3]), None, 60.0, hold=a[4])
        print(r, ident, flush=True)
    else:
        sys.exit('usage: see the docstring')


if __name__ == '__main__':
    main()
