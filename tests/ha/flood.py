#!/usr/bin/env python3
"""Floods at RATE frames/s for SECONDS (the exception path's classes: tests/ha/test_ha_vrrp_flood.sh).

  flood.py IFACE RATE SECONDS arp TARGET_IP...
      broadcast who-has requests for each TARGET_IP in turn, from IFACE's own MAC and on-link source
      addresses 198.18.0.150-249 (no such hosts): every gateway on the segment gets each one, the
      kernel behind its TAP a copy, which it answers for the addresses it holds
  flood.py IFACE RATE SECONDS bgp DST_MAC DST_IP [DST_MAC DST_IP...]
      SYNs from port 179 (BGP's) of those sources to each DST_IP's port 22 in turn: what anyone can
      aim at a BGP speaker from afar; the kernel answers each with a reset to port 179
Prints "sent N in S s".
"""
import socket
import struct
import sys
import time

from synflood import csum  # (tests/ha/, the script's own folder)


def arp_frames(smac, targets):
    frames = []
    for i in range(100):
        for t in targets:
            arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, smac,
                              socket.inet_aton("198.18.0.%d" % (150 + i)), b"\0" * 6, socket.inet_aton(t))
            frames.append(b"\xff" * 6 + smac + b"\x08\x06" + arp + b"\0" * 18)
    return frames


def bgp_frames(smac, dsts):
    frames = []
    for i in range(100):
        for dmac, dst in zip(dsts[::2], dsts[1::2]):
            dip = socket.inet_aton(dst)
            sip = socket.inet_aton("198.18.0.%d" % (150 + i))
            tcp = struct.pack("!HHIIBBHHH", 179, 22, 1000 + i, 0, 5 << 4, 0x02, 65535, 0, 0)
            tcp = tcp[:16] + struct.pack("!H", csum(sip + dip + struct.pack("!BBH", 0, 6, len(tcp)) + tcp)) + tcp[18:]
            ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), i, 0, 64, 6, 0, sip, dip)
            ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
            frames.append(bytes.fromhex(dmac.replace(":", "")) + smac + b"\x08\x00" + ip + tcp)
    return frames


def main():
    iface, rate, secs, mode = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    smac = s.getsockname()[4]
    frames = arp_frames(smac, sys.argv[5:]) if mode == "arp" else bgp_frames(smac, sys.argv[5:])
    t0 = time.monotonic()
    n = 0
    # bursts of a thousandth of a second's frames, each at its time: a flood with gaps of 10 ms would
    # leave a token bucket's refill to whatever comes in the gap
    burst = max(1, rate // 1000)
    while (now := time.monotonic()) - t0 < secs:
        due = int((now - t0) * rate)
        if n >= due:
            time.sleep(min(0.001, (n + burst - due) / rate))
            continue
        for _ in range(min(burst, due - n)):
            try:
                s.send(frames[n % len(frames)])
            except OSError:
                pass
            n += 1
    print("sent %d in %.2f s" % (n, time.monotonic() - t0))


if __name__ == "__main__":
    main()
