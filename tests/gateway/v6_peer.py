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


def family(addr):
    return socket.AF_INET6 if ':' in addr else socket.AF_INET


def opt(args, name, default=None):
    if name in args:
        i = args.index(name)
        v = args[i + 1]
        del args[i:i + 2]
        return v
    return default


def serve_one(c, peer, log, lock):
    h, n, err = hashlib.sha256(), 0, None
    try:
        while True:
            b = c.recv(1 << 20)
            if not b:
                break
            h.update(b)
            n += len(b)
            c.sendall(b)
        c.shutdown(socket.SHUT_WR)
    except OSError as e:
        err = str(e)
    with lock, open(log, 'a') as f:
        f.write(json.dumps({'src': peer[0], 'sport': peer[1], 'bytes': n, 'sha256': h.hexdigest(),
                            'error': err}) + '\n')
    c.close()


def server(addr, port, log):
    s = socket.socket(family(addr))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(port)))
    s.listen(64)
    lock = threading.Lock()
    while True:
        c, peer = s.accept()
        threading.Thread(target=serve_one, args=(c, peer, log, lock), daemon=True).start()


def connect(host, port, src, sport):
    c = socket.socket(family(host))
    if src or sport:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        c.bind((src or ('::' if ':' in host else '0.0.0.0'), int(sport or 0)))
    c.settimeout(30)
    c.connect((host, int(port)))
    return c


def xfer(args):
    src, sport = opt(args, '--src'), opt(args, '--sport')
    host, port, size = args[0], args[1], int(args[2])
    data = os.urandom(size)
    c = connect(host, port, src, sport)
    got = hashlib.sha256()
    n, err = [0], []

    def reader():
        try:
            while True:
                b = c.recv(1 << 20)
                if not b:
                    return
                got.update(b)
                n[0] += len(b)
        except OSError as e:
            err.append(e)

    t = threading.Thread(target=reader)
    t.start()
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    t.join(120)
    if err:
        sys.exit(f'xfer: {err[0]} after {n[0]} bytes back')
    want = hashlib.sha256(data).hexdigest()
    print(f'sent {size} sha256 {want}, echoed {n[0]} sha256 {got.hexdigest()}')
    sys.exit(0 if want == got.hexdigest() else 1)


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


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'server':
        server(*args)
    elif cmd == 'xfer':
        xfer(args)
    elif cmd == 'refused':
        refused(args)
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
