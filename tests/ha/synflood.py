#!/usr/bin/env python3
"""Spoofed SYNs as fast as one packet socket sends them (the exception path's rate limit test).

  synflood.py IFACE DST_MAC DST_IP DPORT COUNT
Sources are on-link 198.18.0.150-249 (DST_IP IPv6: 2001:db8::1:150-249; no such hosts: answers go
nowhere), fresh ports and sequence numbers; frames are built first, then sent. Prints "sent N in S s".
"""
import random
import socket
import struct
import sys
import time


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff


def main():
    iface, dmac, dst, dport, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    smac = s.getsockname()[4]
    dmac_b = bytes.fromhex(dmac.replace(":", ""))
    v6 = ":" in dst
    dip = socket.inet_pton(socket.AF_INET6, dst) if v6 else socket.inet_aton(dst)
    frames = []
    for _ in range(count):
        n = random.randint(150, 249)
        sip = socket.inet_pton(socket.AF_INET6, "2001:db8::1:%d" % n) if v6 else socket.inet_aton("198.18.0.%d" % n)
        sport = random.randint(1024, 65535)
        tcp = struct.pack("!HHIIBBHHH", sport, dport, random.getrandbits(32), 0, 5 << 4, 0x02, 65535, 0, 0)
        if v6:
            ph = sip + dip + struct.pack("!I3xB", len(tcp), 6)
            tcp = tcp[:16] + struct.pack("!H", csum(ph + tcp)) + tcp[18:]
            ip = struct.pack("!IHBB16s16s", 6 << 28, len(tcp), 6, 64, sip, dip)
            frames.append(dmac_b + smac + b"\x86\xdd" + ip + tcp)
            continue
        ph = sip + dip + struct.pack("!BBH", 0, 6, len(tcp))
        tcp = tcp[:16] + struct.pack("!H", csum(ph + tcp)) + tcp[18:]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), random.getrandbits(16), 0, 64, 6, 0, sip, dip)
        ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
        frames.append(dmac_b + smac + b"\x08\x00" + ip + tcp)
    t0 = time.monotonic()
    n = 0
    for f in frames:
        try:
            s.send(f)
            n += 1
        except OSError:
            time.sleep(0.001)
    print("sent %d in %.2f s" % (n, time.monotonic() - t0))


if __name__ == "__main__":
    main()
