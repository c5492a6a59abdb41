#!/usr/bin/env python3
"""Kernel TCP peers that stop making progress in one precise way each (tests/eth/test_timeouts.sh).

Clients (HOST PORT) print one line `ok ...` or `fail ...` and exit 0 / 1:
  idle HOST PORT            sends 'hello', reads the echo, then does nothing: waits for the gateway's reset
  zerowin HOST PORT         a tiny receive buffer, sends until the gateway stops taking bytes and never
                            reads: the gateway's echo sees a zero window that never opens
  slow HOST PORT SIZE       like zerowin, but reads 16 KiB every 0.1 s: slow, never stalled; checks that
                            the SIZE bytes sent come back intact (sha256)
  halfclose HOST PORT       sends 'request' and its FIN, then waits (the far side stays silent)
  finwait HOST PORT         sends 'request', reads the answer up to the gateway's FIN, then stays silent
                            without closing: the gateway's side of this connection is in FIN_WAIT_2
  download HOST PORT SIZE   sends 'request', then reads the answer 8 KiB every 0.1 s (a slow reader) up
                            to the gateway's FIN; checks the SIZE bytes (sha256 of bulk-close-server's)
Servers (PORT), in the background: print 'listening', serve connections until killed:
  silent-server PORT        reads up to the client's FIN, then keeps the connection open and silent
  answer-close-server PORT  reads 'request', answers 'answer' and closes
  bulk-close-server PORT SIZE  reads 'request', sends SIZE bytes (the same each time) and closes

A client that waits for a reset polls TCP_INFO until the kernel says CLOSE with ECONNRESET, for at
most --wait seconds (default 30), and prints how long after its last action the reset came.
"""
import errno
import hashlib
import os
import select
import socket
import struct
import sys
import time

TCP_CLOSE, TCP_CLOSE_WAIT = 7, 8


def state(s):
    return struct.unpack('B', s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1))[0]


def wait_reset(s, t0, limit, note='', errs=(errno.ECONNRESET,)):
    seen = set()
    while time.time() - t0 < limit:
        st = state(s)
        seen.add(st)
        if st == TCP_CLOSE:
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err not in errs:
                print(f'fail closed with {errno.errorcode.get(err, err)}, not a reset{note}')
                return 1, seen
            print(f'ok reset after {time.time() - t0:.1f} s{note}')
            return 0, seen
        time.sleep(0.05)
    print(f'fail no reset within {limit} s (tcp state {state(s)}){note}')
    return 1, seen


def connect(host, port, rcvbuf=0):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect((host, port))
    return s


def recv_exact(s, n):
    b = b''
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            break
        b += c
    return b


def main():
    a = sys.argv[1:]
    wait = 30.0
    if '--wait' in a:
        i = a.index('--wait')
        wait = float(a[i + 1])
        del a[i:i + 2]
    mode = a[0]
    if mode.endswith('-server'):
        serve(mode, int(a[1]), int(a[2]) if len(a) > 2 else 0)
        return 0
    host, port = a[1], int(a[2])
    if mode == 'idle':
        s = connect(host, port)
        s.sendall(b'hello')
        if recv_exact(s, 5) != b'hello':
            print('fail no echo')
            return 1
        return wait_reset(s, time.time(), wait)[0]
    if mode == 'zerowin':
        # SO_RCVBUF 4096 (the kernel doubles it): the window shuts after a few KiB
        s = connect(host, port, rcvbuf=4096)
        s.setblocking(False)
        chunk, sent, t_last = os.urandom(65536), 0, time.time()
        while time.time() - t_last < 1.0:  # until the gateway took nothing for 1 s
            if select.select([], [s], [], 0.2)[1]:
                try:
                    n = s.send(chunk)
                    sent += n
                    t_last = time.time()
                except BlockingIOError:
                    pass
                except ConnectionResetError:  # the reset came while we still tried
                    print(f'ok reset after {time.time() - t_last:.1f} s (sent {sent} bytes, read none)')
                    return 0
        s.setblocking(True)
        rc, _ = wait_reset(s, t_last, wait, f' (sent {sent} bytes, read none)')
        return rc
    if mode == 'slow':
        size = int(a[3])
        s = connect(host, port, rcvbuf=16384)
        s.setblocking(False)
        data = os.urandom(size)
        sent, got, h = 0, 0, hashlib.sha256()
        t0, next_read = time.time(), 0.0
        while got < size and time.time() - t0 < wait:
            w = [s] if sent < size else []
            r, w, _ = select.select([s], w, [], 0.05)
            if w:
                try:
                    sent += s.send(data[sent:sent + 65536])
                except BlockingIOError:
                    pass
            if r and time.time() >= next_read:  # 16 KiB every 0.1 s: slow, never stopped
                next_read = time.time() + 0.1
                try:
                    c = s.recv(16384)
                except ConnectionResetError:
                    print(f'fail reset after {got} of {size} bytes back')
                    return 1
                if not c:
                    break
                got += len(c)
                h.update(c)
        if got != size or h.hexdigest() != hashlib.sha256(data).hexdigest():
            print(f'fail got {got} of {size} bytes back, sha equal: {h.hexdigest() == hashlib.sha256(data).hexdigest()}')
            return 1
        print(f'ok {size} bytes back intact in {time.time() - t0:.1f} s')
        return 0
    if mode == 'halfclose':
        s = connect(host, port)
        s.sendall(b'request')
        s.shutdown(socket.SHUT_WR)
        return wait_reset(s, time.time(), wait)[0]
    if mode == 'finwait':
        s = connect(host, port)
        s.sendall(b'request')
        b = b''
        while True:
            c = s.recv(4096)
            if not c:
                break
            b += c
        if b != b'answer':
            print(f'fail answer {b!r}')
            return 1
        t0 = time.time()
        # our end got the gateway's FIN and acknowledged it (CLOSE_WAIT here, FIN_WAIT_2 there)
        # (a reset in CLOSE_WAIT reads as EPIPE in Linux: tcp_reset)
        rc, seen = wait_reset(s, t0, wait, ' (in CLOSE_WAIT until then)', (errno.ECONNRESET, errno.EPIPE))
        if rc == 0 and TCP_CLOSE_WAIT not in seen:
            print('fail never saw CLOSE_WAIT')
            return 1
        return rc
    if mode == 'download':
        size = int(a[3])
        s = connect(host, port, rcvbuf=16384)
        s.sendall(b'request')
        got, h, t0 = 0, hashlib.sha256(), time.time()
        while time.time() - t0 < wait:
            try:
                c = s.recv(8192)
            except ConnectionResetError:
                print(f'fail reset after {got} of {size} bytes')
                return 1
            if not c:
                break
            got += len(c)
            h.update(c)
            time.sleep(0.1)
        if got != size or h.hexdigest() != hashlib.sha256(bulk(size)).hexdigest():
            print(f'fail got {got} of {size} bytes, sha equal: {h.hexdigest() == hashlib.sha256(bulk(size)).hexdigest()}')
            return 1
        print(f'ok {size} bytes intact in {time.time() - t0:.1f} s')
        return 0
    print(__doc__)
    return 2


def bulk(size):
    return hashlib.shake_256(b'bulk-close-server').digest(size)


def serve(mode, port, size):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(('0.0.0.0', port))
    ls.listen(16)
    print('listening', flush=True)
    keep = []
    while True:
        c, _ = ls.accept()
        if mode == 'silent-server':
            while c.recv(4096):
                pass
            keep.append(c)  # open and silent: never answers, never closes
        elif mode == 'bulk-close-server':
            recv_exact(c, len(b'request'))
            c.sendall(bulk(size))
            c.close()
        else:
            recv_exact(c, len(b'request'))
            c.sendall(b'answer')
            c.close()


if __name__ == '__main__':
    sys.exit(main())
