#!/usr/bin/env python3
"""Broadcast ARP requests at RATE frames/s for SECONDS (the exception path's classes:
tests/ha/test_ha_vrrp_flood.sh).

  arpflood.py IFACE RATE SECONDS TARGET_IP...
Who-has requests for each TARGET_IP in turn, from IFACE's own MAC and on-link source addresses
198.18.0.150-249 (no such hosts). Every gateway on the segment gets each one; the kernel behind its
TAP gets a copy and answers for the addresses it holds. Prints "sent N in S s".
"""
import socket
import struct
import sys
import time


def main():
    iface, rate, secs, targets = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    smac = s.getsockname()[4]
    frames = []
    for i in range(100):
        for t in targets:
            arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, smac,
                              socket.inet_aton("198.18.0.%d" % (150 + i)), b"\0" * 6, socket.inet_aton(t))
            frames.append(b"\xff" * 6 + smac + b"\x08\x06" + arp + b"\0" * 18)
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
