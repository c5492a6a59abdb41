#!/usr/bin/env python3
"""Kernel TCP peers of either family for tests/gateway/test_ipv6_relay.sh (run inside the namespace).

  v6_peer.py server ADDR PORT LOG
      accepts connections on ADDR (IPv4 or IPv6); echoes every byte back until the client's EOF, then
      appends one JSON line to LOG: the client's address and port, the bytes received and their sha256
  v6_peer.py xfer HOST PORT SIZE [--src IP] [--sport N]
      connects (from IP:N; the family is HOST's), sends SIZE random bytes while it reads the echo, then
      half-closes and reads to EOF; prints the sha256 of what it sent and of what came back, exits 0
      when they are equal
  v6_peer.py refused HOST PORT [--src IP]
      connects, sends 1000 bytes and expects the far end to reset or close without sending a byte
      (within 10 s); exits 0 then
"""
import hashlib
import json
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from peers import connect, echo, main, opt, read_bg, serve  # noqa: E402


def serve_one(c, peer, log, lock):
    h, err = hashlib.sha256(), None
    try:
        n = echo(c, h)
    except OSError as e:
        n, err = e.echoed, str(e)
    with lock, open(log, 'a') as f:
        f.write(json.dumps({'src': peer[0], 'sport': peer[1], 'bytes': n, 'sha256': h.hexdigest(),
                            'error': err}) + '\n')
    c.close()


def server(addr, port, log):
    lock = threading.Lock()
    serve(addr, port, lambda c, peer: serve_one(c, peer, log, lock))


def xfer(args):
    src, sport = opt(args, '--src'), opt(args, '--sport')
    host, port, size = args[0], args[1], int(args[2])
    data = os.urandom(size)
    c = connect(host, port, src, sport)
    t, got, err = read_bg(c)
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    t.join(120)
    if err:
        sys.exit(f'xfer: {err[0]} after {len(got)} bytes back')
    want, have = hashlib.sha256(data).hexdigest(), hashlib.sha256(got).hexdigest()
    print(f'sent {size} sha256 {want}, echoed {len(got)} sha256 {have}')
    sys.exit(0 if want == have else 1)


def refused(args):
    src = opt(args, '--src')
    try:
        c = connect(args[0], args[1], src, None)  # (the reset may come before connect() returns)
        c.settimeout(10)
        c.sendall(os.urandom(1000))
        b = c.recv(100)
    except (ConnectionResetError, BrokenPipeError):
        b = b''
    except socket.timeout:
        sys.exit('refused: still open after 10 s')
    print('closed' + (f' with {b!r}' if b else ''))
    sys.exit(0 if not b else 1)


if __name__ == '__main__':
    main(__doc__, {'server': lambda a: server(*a), 'xfer': xfer, 'refused': refused})
