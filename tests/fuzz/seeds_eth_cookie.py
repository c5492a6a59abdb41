#!/usr/bin/env python3
"""Writes the fuzz_eth_input seeds for SYN cookies, the ACK rate limits and out-of-order expiry (the
input format is at the top of fuzz_eth_input.c): tests/fuzz/seeds_eth_cookie.py [DIR], DIR defaulting
to tests/fuzz/corpus/fuzz_eth_input. The fuzzer's engine keeps 4 half-open connections (2 per
listener): two raw SYNs from other ports fill the echo listener's share, so the flows' own SYNs to
it get cookie SYN-ACKs, whose sequence numbers the fuzzer learns like any other, and their ACKs
(relative sequence numbers 0) complete cookie handshakes."""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seeds_eth_offload import ACK, FIN, PSH, RST, SYN, Seed  # noqa: E402


def raw_syn(s, sport, dport=7, seq=1000):
    """A raw SYN (kind 2: the fuzzer adds Ethernet and IPv4 and fixes the checksum), MSS 1460."""
    tcp = struct.pack(">HHIIBBHHH", sport, dport, seq, 0, 6 << 4, SYN, 65535, 0, 0) + b"\x02\x04\x05\xb4"
    s.b += bytes([2, len(tcp) // 6]) + tcp


def fill_echo(s, base=50000):
    raw_syn(s, base)
    raw_syn(s, base + 1, seq=2000)


def idle(s, steps, step=7):
    """Records that only move the clock (a session action on a slot nobody uses: 63)."""
    for _ in range(steps):
        s.b += bytes([6 | (step << 5), 63, 5])


def seeds():
    out = {}
    # a cookie handshake without options, data echoed, an orderly close
    s = Seed()
    fill_echo(s)
    s.seg(0, SYN)
    s.seg(0, ACK)
    s.seg(0, ACK | PSH, 256)
    s.seg(0, ACK, step=3)
    s.seg(0, ACK | FIN, step=4)
    s.seg(0, ACK, seq=1, ack=0, step=5)
    out["cookie-echo"] = s.b
    # with Linux's options: the ACK's timestamp echo is not ours (a failed cookie, a reset), then one
    # without timestamps (dropped), then flow 1 without options gets through; data and a FIN in the ACK
    s = Seed()
    fill_echo(s)
    s.seg(0, SYN, opts=s.opts(True))
    s.seg(0, ACK, opts=s.opts())
    s.seg(0, ACK)
    s.seg(1, SYN)
    s.seg(1, ACK | PSH | FIN, 64)
    s.seg(1, ACK, seq=65, step=4)
    out["cookie-options"] = s.b
    # wrong ACK numbers and sequence numbers, RST and SYN|ACK to the listener, then the right ACK;
    # then a cookie left to expire (130 s) before its ACK comes
    s = Seed()
    fill_echo(s)
    s.seg(1, SYN)
    s.seg(1, ACK, ack=1)
    s.seg(1, ACK, ack=-1)
    s.seg(1, ACK, seq=1)
    s.seg(1, RST | ACK)
    s.seg(1, ACK)
    s.seg(1, ACK | PSH, 64, step=2)
    s.seg(0, SYN, step=1)
    idle(s, 13)
    s.seg(0, ACK)
    out["cookie-invalid"] = s.b
    # a flood past both listeners' shares (raw SYNs), the half-open blocks draining under pressure
    s = Seed()
    for i in range(12):
        raw_syn(s, 51000 + i, 7 if i % 2 else 9, seq=1000 * i)
    s.seg(2, SYN)
    s.seg(2, ACK)
    idle(s, 8, step=6)
    s.seg(0, SYN, opts=s.opts(True))
    s.seg(0, ACK, opts=s.opts())
    out["cookie-flood-drain"] = s.b
    # out-of-order data that nobody fills: expired after seconds, not SACKed any more; then in order
    s = Seed()
    s.handshake(0)
    s.seg(0, ACK | PSH, 8, seq=4000, opts=s.opts())
    s.seg(0, ACK | PSH, 8, seq=6000, opts=s.opts())
    idle(s, 4, step=6)
    s.seg(0, ACK | PSH, 800, opts=s.opts())
    s.seg(0, ACK | PSH, 8, seq=3000, opts=s.opts(), step=5)
    s.seg(0, ACK, opts=s.opts(), step=4)
    out["ooo-expire"] = s.b
    # invalid segments in bursts: out of the window (empty and with data), SYN and inexact RST in it
    s = Seed()
    s.handshake(0)
    for _ in range(4):
        s.seg(0, ACK, seq=0x7FFF, opts=s.opts())
    s.seg(0, ACK | PSH, 64, seq=0x7FFF, opts=s.opts())
    s.seg(0, ACK, ack=3000, opts=s.opts())
    s.seg(0, SYN, seq=100, opts=s.opts(), step=6)
    s.seg(0, RST, seq=100, step=1)
    s.seg(0, ACK | PSH, 64, opts=s.opts(), step=5)
    out["oow-ratelimit"] = s.b
    return out


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "fuzz_eth_input")
    for name, b in seeds().items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(bytes(b))
        print(name, len(b))


if __name__ == "__main__":
    main()
