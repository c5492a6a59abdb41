#!/usr/bin/env python3
"""Kernel TCP peers for tests/gateway/test_access_log.sh (run inside the peer namespace).

Every session: the client sends a 24-byte header (up, down, seed: three little-endian u64), then up
random bytes, and shuts its side down; the server reads them all, answers with sha256(those bytes)
followed by down - 32 bytes of Random(seed), reads to EOF and closes. The client checks every byte
it got back, so a session that passes moved exactly 24 + up bytes one way and down bytes the other,
intact.

  server PORT                        the server (listens on 0.0.0.0:PORT until killed)
  conc HOST PORT SRC BASE N OUT      N concurrent sessions from SRC:BASE.. (one source port each),
                                     sizes random and all different; then one more from BASE+N that
                                     the client resets (SO_LINGER 0) mid-transfer. OUT: JSON of
                                     {sport: {"up": bytes client->backend, "down": ..., "reset": bool}}
  stream HOST PORT SRC BASE SECS OUT sessions 4 at a time from SRC:BASE.. for SECS seconds; OUT as above
  slow HOST PORT SRC SPORT SECS OUT  one session that trickles its bytes over SECS seconds; OUT as above
Exits 1 when a session failed (its reason on stdout).
"""
import asyncio
import hashlib
import json
import random
import socket
import struct
import sys
import time

HDR = struct.Struct('<QQQ')


def reply_of(payload, down, seed):
    return hashlib.sha256(payload).digest() + random.Random(seed).randbytes(down - 32)


async def serve_one(r, w):
    try:
        up, down, seed = HDR.unpack(await r.readexactly(HDR.size))
        payload = await r.readexactly(up)
        w.write(reply_of(payload, down, seed))
        await w.drain()
        while await r.read(65536):
            pass
    except (OSError, asyncio.IncompleteReadError):
        pass  # the reset session, or a test that gave up
    finally:
        w.close()


async def server(port):
    srv = await asyncio.start_server(serve_one, '0.0.0.0', port, backlog=1024, reuse_address=True)
    async with srv:
        await srv.serve_forever()


async def connect(host, port, src, sport):
    return await asyncio.wait_for(asyncio.open_connection(host, port, local_addr=(src, sport)), 30)


async def session(host, port, src, sport, up, down, seed, trickle=0.0):
    payload = random.Random(seed ^ 0x5A5A).randbytes(up)
    r, w = await connect(host, port, src, sport)
    w.write(HDR.pack(up, down, seed))
    if trickle:
        chunks = 20
        step = (up + chunks - 1) // chunks
        for i in range(0, up, step):
            w.write(payload[i:i + step])
            await w.drain()
            await asyncio.sleep(trickle / chunks)
    else:
        w.write(payload)
    await w.drain()
    w.write_eof()
    got = await asyncio.wait_for(r.read(-1), 120)
    w.close()
    if got != reply_of(payload, down, seed):
        raise RuntimeError(f'sport {sport}: {len(got)} bytes back, expected {down}, or they differ')
    return {'up': HDR.size + up, 'down': down, 'reset': False}


async def reset_session(host, port, src, sport):
    # asks for 1 MB at once (no payload) and resets while it comes: the client reads a little to
    # know the answer flows, and its small receive buffer keeps most of it in the gateway, which
    # therefore goes on sending (data, window probes) after the reset. A reset lost on a loaded host
    # (af_packet drops frames there) is then answered by the next one, since the kernel resets what
    # arrives for a closed socket; a gateway with nothing to send would keep such a session until
    # its idle_timeout, as any TCP endpoint would.
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.bind((src, sport))
    sock.setblocking(False)
    await asyncio.wait_for(asyncio.get_running_loop().sock_connect(sock, (host, port)), 30)
    r, w = await asyncio.open_connection(sock=sock)
    w.write(HDR.pack(0, 1 << 20, 1))
    await w.drain()
    await asyncio.wait_for(r.readexactly(32), 60)
    await asyncio.sleep(0.2)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
    w.transport.abort()
    return {'up': HDR.size, 'down': 1 << 20, 'reset': True}


def sizes(n, lo, hi, rng):
    return rng.sample(range(lo, hi), n)  # all different


async def conc(host, port, src, base, n, rng):
    ups, downs = sizes(n, 1000, 200000, rng), sizes(n, 64, 200000, rng)
    jobs = [session(host, port, src, base + i, ups[i], downs[i], rng.getrandbits(48)) for i in range(n)]
    jobs.append(reset_session(host, port, src, base + n))
    res = await asyncio.gather(*jobs, return_exceptions=True)
    return {base + i: x for i, x in enumerate(res)}


async def stream(host, port, src, base, secs, rng):
    out, end, nxt = {}, time.monotonic() + secs, [base]

    async def lane():
        while time.monotonic() < end and nxt[0] < base + 1000:  # (the next part's ports start there)
            sport = nxt[0]
            nxt[0] += 1
            try:
                out[sport] = await session(host, port, src, sport, rng.randrange(1000, 100000),
                                           rng.randrange(64, 100000), rng.getrandbits(48))
            except Exception as e:  # noqa: BLE001 (reported below)
                out[sport] = e
            await asyncio.sleep(0.02)  # at most ~200 sessions/s: the run lasts SECS, within 1000 ports
    await asyncio.gather(*(lane() for _ in range(4)))
    return out


async def slow(host, port, src, sport, secs, rng):
    try:
        x = await session(host, port, src, sport, 200000, 5000, rng.getrandbits(48), trickle=secs)
    except Exception as e:  # noqa: BLE001
        x = e
    return {sport: x}


def main():
    a = sys.argv[1:]
    if not a:
        sys.exit(__doc__)
    if a[0] == 'server':
        asyncio.run(server(int(a[1])))
        return
    rng = random.Random(int(time.time() * 1000))
    host, port, src = a[1], int(a[2]), a[3]
    if a[0] == 'conc':
        res = asyncio.run(conc(host, port, src, int(a[4]), int(a[5]), rng))
    elif a[0] == 'stream':
        res = asyncio.run(stream(host, port, src, int(a[4]), float(a[5]), rng))
    elif a[0] == 'slow':
        res = asyncio.run(slow(host, port, src, int(a[4]), float(a[5]), rng))
    else:
        sys.exit(__doc__)
    bad = {k: v for k, v in res.items() if not isinstance(v, dict)}
    with open(a[-1], 'w') as f:
        json.dump({k: v for k, v in res.items() if isinstance(v, dict)}, f)
    for k, v in list(bad.items())[:5]:
        print(f'session from port {k}: {v!r}')
    print(f'{len(res) - len(bad)} session(s) ok, {len(bad)} failed')
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
