#!/usr/bin/env python3
"""PROXY protocol v2 peers for tests/eth/test_proxy_protocol.sh, with their own parser (written from
HAProxy's doc/proxy-protocol.txt, independent of ibgwd's C one).

  pp_peer.py server ADDR PORT LOG [--quiet] [--record]
      accepts connections; each must open with a v2 header, which it parses (signature, version,
      command, family, addresses, every TLV) and appends to LOG as one JSON line; it then greets
      with b"OK\\n" (a server that speaks first: the header must come even when the client sends
      nothing; not with --quiet) and echoes every byte after the header until the client's EOF;
      with --record it says nothing, and logs the header's line once the client's end of stream
      (or a reset: "end") came, with what followed the header ("after", latin-1)
  pp_peer.py xfer HOST PORT SIZE [--src IP] [--sport N] [--pre HEX] [--plain] [--pause S]
      connects (from IP:N), sends the bytes HEX and SIZE random bytes in ONE send() (so a header
      and data share a segment; with --pause, the first 8 bytes of HEX go S seconds before the
      rest), and reads b"OK\\n" (not with --plain: a plain echo server) + the echo concurrently;
      exits 0 when the echo is the payload, sha256 equal, and prints both digests
  pp_peer.py silent HOST PORT
      connects, sends nothing, and waits up to 10 s for the greeting
  pp_peer.py expect-reset HOST PORT HEX LIMIT [--src IP] [--eof]
      sends the bytes HEX (then its end of stream with --eof) and nothing more; exits 0 when the connection is reset or closed without
      a byte from the far end within LIMIT seconds, printing how long it took
  pp_peer.py flood HOST PORT N [--src IP]
      opens N connections that send nothing; 2 s later prints how many the far end has already
      closed or reset ("early=K"), then waits until every one is closed (30 s at most: "all closed")
  pp_peer.py header [local] [--src IP:PORT --dst IP:PORT] [--tlv TYPE:HEX ...] [--ver V] [--cmd C] [--fam F] [--len L]
      prints a v2 header in hex (fields may be overridden to make malformed ones); an address
      [IPv6]:PORT makes it TCP over IPv6 (the 36-byte block, an IPv4 other end v4-mapped)
The server logs AF_INET6 addresses as Python's inet_ntop writes them (v4-mapped: ::ffff:a.b.c.d).
"""
import hashlib
import json
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from peers import connect, flag, main, opt, read_bg, serve  # noqa: E402

SIG = b'\r\n\r\n\x00\r\nQUIT\n'


def recv_exact(c, n):
    buf = b''
    while len(buf) < n:
        b = c.recv(n - len(buf))
        if not b:
            raise EOFError(f'EOF after {len(buf)} of {n} header bytes')
        buf += b
    return buf


def parse_header(c):
    head = recv_exact(c, 16)
    if head[:12] != SIG:
        raise ValueError('bad signature')
    ver, cmd = head[12] >> 4, head[12] & 15
    fam, proto = head[13] >> 4, head[13] & 15
    (length,) = struct.unpack('!H', head[14:16])
    if ver != 2 or cmd > 1:
        raise ValueError(f'bad version/command {head[12]:#x}')
    body = recv_exact(c, length)
    out = {'cmd': 'PROXY' if cmd else 'LOCAL', 'fam': fam, 'proto': proto, 'len': 16 + length, 'tlv': {}}
    off = 0
    if fam == 1 and proto:
        src, dst, sp, dp = struct.unpack('!4s4sHH', body[:12])
        out.update(src=socket.inet_ntoa(src), dst=socket.inet_ntoa(dst), sport=sp, dport=dp)
        off = 12
    elif fam == 2 and proto:
        if length < 36:
            raise ValueError(f'IPv6 block cut short: length {length}')
        src, dst, sp, dp = struct.unpack('!16s16sHH', body[:36])
        out.update(src=socket.inet_ntop(socket.AF_INET6, src), dst=socket.inet_ntop(socket.AF_INET6, dst),
                   sport=sp, dport=dp)
        off = 36
    elif fam != 0:
        raise ValueError(f'family {fam} not expected from ibgwd')
    while off < length:
        if length - off < 3:
            raise ValueError('TLV header cut short')
        t, l = body[off], struct.unpack('!H', body[off + 1:off + 3])[0]
        if off + 3 + l > length:
            raise ValueError('TLV overruns the header')
        out['tlv'][f'0x{t:02X}'] = body[off + 3:off + 3 + l].hex()
        off += 3 + l
    return out


def serve_one(c, log, lock, greet, record=False):
    try:
        info = parse_header(c)
    except Exception as e:  # a bad header is the test's failure: record it
        info = {'error': str(e)}
        with lock, open(log, 'a') as f:
            f.write(json.dumps(info) + '\n')
        c.close()
        return
    if record:  # what followed the header, up to the client's end of stream (or a reset)
        data, end = b'', 'eof'
        c.settimeout(10)
        try:
            while b := c.recv(65536):
                data += b
        except OSError as e:
            end = type(e).__name__
        info.update(after=data.decode('latin1'), end=end)
        with lock, open(log, 'a') as f:
            f.write(json.dumps(info) + '\n')
        c.close()
        return
    with lock, open(log, 'a') as f:
        f.write(json.dumps(info) + '\n')
    if greet:
        c.sendall(b'OK\n')
    while True:
        try:
            b = c.recv(65536)
        except OSError:
            break
        if not b:
            break
        c.sendall(b)
    try:
        c.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    c.close()


def server(addr, port, log, *flags):
    lock = threading.Lock()
    serve(addr, port, lambda c, _: serve_one(c, log, lock, '--quiet' not in flags, '--record' in flags))


def xfer(args):
    src, sport, pre = opt(args, '--src'), opt(args, '--sport', 0), bytes.fromhex(opt(args, '--pre', ''))
    greet = b'' if flag(args, '--plain') else b'OK\n'
    pause = float(opt(args, '--pause', 0))
    host, port, size = args[0], args[1], int(args[2])
    data = os.urandom(size)
    c = connect(host, port, src, sport)
    t, got, err = read_bg(c)
    if pause:
        c.sendall(pre[:8])
        time.sleep(pause)
        pre = pre[8:]
    c.sendall(pre + data)  # one call: the header and the first data leave in one segment
    c.shutdown(socket.SHUT_WR)
    t.join(120)
    if err:
        sys.exit(f'xfer: {err[0]} after {len(got)} bytes')
    if bytes(got[:len(greet)]) != greet:
        sys.exit(f'xfer: no greeting, got {bytes(got[:16])!r}')
    want, have = hashlib.sha256(data).hexdigest(), hashlib.sha256(got[len(greet):]).hexdigest()
    print(f'sent {size} sha256 {want}, echoed {len(got) - len(greet)} sha256 {have}')
    sys.exit(0 if want == have else 1)


def silent(args):
    c = connect(args[0], args[1])
    c.settimeout(10)
    b = c.recv(3)
    print(repr(b))
    sys.exit(0 if b == b'OK\n' else 1)


def expect_reset(args):
    src = opt(args, '--src')
    eof = flag(args, '--eof')
    host, port, raw, limit = args[0], args[1], bytes.fromhex(args[2]), float(args[3])
    t0 = time.monotonic()
    try:
        # a connection refused at accept may be reset before the header is out, or connect() returns
        c = connect(host, port, src)
        c.settimeout(limit)
        if raw:
            c.sendall(raw)
        if eof:
            c.shutdown(socket.SHUT_WR)
        b = c.recv(100)
    except (ConnectionResetError, BrokenPipeError):
        b = b''
    except socket.timeout:
        sys.exit(f'expect-reset: still open after {limit}s')
    print(f'closed after {time.monotonic() - t0:.2f}s' + (f', with {b!r}' if b else ''))
    sys.exit(0 if not b else 1)


def flood(args):
    import resource
    src = opt(args, '--src')
    host, port, n = args[0], args[1], int(args[2])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, n + 64)), hard))
    socks, refused = [], 0
    t0 = time.monotonic()
    for _ in range(n):
        try:
            socks.append(connect(host, port, src))
            socks[-1].setblocking(False)
        except ConnectionResetError:  # reset before connect() even returned
            refused += 1
    print(f'connect_secs={time.monotonic() - t0:.2f}', flush=True)
    time.sleep(2)

    def closed(c):
        try:
            return c.recv(1, socket.MSG_DONTWAIT) == b''
        except BlockingIOError:
            return False
        except OSError:
            return True

    print(f'early={refused + sum(closed(c) for c in socks)}', flush=True)
    end = time.monotonic() + 30
    live = [c for c in socks if not closed(c)]
    while live and time.monotonic() < end:
        time.sleep(0.5)  # (select() cannot take descriptors above 1023)
        live = [c for c in live if not closed(c)]
    print('all closed' if not live else f'{len(live)} still open')
    sys.exit(0 if not live else 1)


def header(args):
    src, dst = opt(args, '--src', '198.18.0.3:40000'), opt(args, '--dst', '198.18.0.1:8102')
    ver, cmd = int(opt(args, '--ver', '2')), int(opt(args, '--cmd', '1'))
    tlvs = b''
    while '--tlv' in args:
        t, v = opt(args, '--tlv').split(':')
        v = bytes.fromhex(v)
        tlvs += struct.pack('!BH', int(t, 0), len(v)) + v
    if args[:1] == ['local']:
        cmd, fam, body = 0, 0, b''
    else:
        (sa, sp), (da, dp) = src.rsplit(':', 1), dst.rsplit(':', 1)
        if sa.startswith('[') or da.startswith('['):
            def a16(a):  # [IPv6] as is, IPv4 v4-mapped
                return socket.inet_pton(socket.AF_INET6, a.strip('[]') if a.startswith('[') else '::ffff:' + a)
            fam, body = 0x21, a16(sa) + a16(da) + struct.pack('!HH', int(sp), int(dp))
        else:
            fam, body = 0x11, socket.inet_aton(sa) + socket.inet_aton(da) + struct.pack('!HH', int(sp), int(dp))
    fam = int(opt(args, '--fam', str(fam)), 0)
    body += tlvs
    length = int(opt(args, '--len', str(len(body))))
    print((SIG + bytes([ver << 4 | cmd, fam]) + struct.pack('!H', length) + body).hex())


if __name__ == '__main__':
    main(__doc__, {'server': lambda a: server(*a), 'xfer': xfer, 'silent': silent, 'expect-reset': expect_reset,
                   'flood': flood, 'header': header})
