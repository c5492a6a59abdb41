#!/usr/bin/env python3
"""Writes the fuzz_eth_input seeds for device offloads and mbuf chains (the input format is at the
top of fuzz_eth_input.c): tests/fuzz/seeds_eth_offload.py [DIR], DIR defaulting to
tests/fuzz/corpus/fuzz_eth_input. Each seed opens connections to the echo (or discard) service and
then feeds what a device with LRO and checksum offloads hands the engine, good and hostile."""
import os
import struct
import sys

MODE = 0xF8
TX, TSO, RX, LRO, IPCS, BIG = 1, 2, 4, 8, 16, 32
ALL = TX | TSO | RX | LRO
L4 = {"unknown": 0, "good": 1, "bad": 2, "none": 3}
SYN, FIN, RST, PSH, ACK = 0x02, 0x01, 0x04, 0x08, 0x10


class Seed:
    def __init__(self, mode=None):
        self.b = bytearray() if mode is None else bytearray([MODE, mode])
        self.ts = 1

    def opts(self, syn=False):
        self.ts += 1
        o = b"\x01\x01\x08\x0a" + struct.pack(">II", self.ts, 0)
        return b"\x02\x04\x05\xb4\x04\x02" + o[2:] + b"\x01\x03\x03\x07" if syn else o

    def rx(self, cuts=(), scale=32, tight=False, l4="unknown", lro=False, segsz=0, tweak=None):
        """The reception descriptor; returns the kind-byte bits that announce it."""
        fl = len(cuts) | (8 if tight else 0) | (L4[l4] << 4) | (0x40 if lro else 0) | (0x80 if tweak is not None else 0)
        self.b += bytes([fl, segsz // 8])
        if tweak is not None:
            self.b += struct.pack("b", tweak)
        self.b += bytes(c // scale for c in cuts)
        return {1: 0x08, 8: 0x10, 32: 0x18}[scale]

    def _desc(self, rx):
        """The kind-byte bits and the bytes of reception descriptor RX (None: none)."""
        if rx is None:
            return 0, b""
        save, self.b = self.b, bytearray()
        bits = self.rx(**rx)
        desc, self.b = self.b, save
        return bits, bytes(desc)

    def seg(self, flow, flags, length=0, seq=0, ack=0, opts=b"", step=0, bad=False, rx=None, wshift=0):
        """A relative-sequence segment (kind 3); LENGTH in bytes (rounded down to 8, or 32 with RX)."""
        bits, desc = self._desc(rx)
        ob = len(opts) | (0x80 if bad else 0) | (wshift << 6)
        self.b += bytes([3 | bits | (step << 5)]) + desc
        self.b += struct.pack(">BBhhBB", flow, flags, seq, ack, ob, length // (32 if rx is not None else 8)) + opts

    def raw(self, frame, rx=None, step=0):
        """A raw Ethernet frame (kind 0), its length rounded down to 6."""
        bits, desc = self._desc(rx)
        n = len(frame) // 6
        self.b += bytes([bits | (step << 5)]) + desc + bytes([n]) + frame[: n * 6]

    def write(self, sess, kb, step=0):
        """Session action 3: the session writes KB KiB (1 to 15)."""
        self.b += bytes([6 | (step << 5), sess, 3 + 6 * (kb - 1)])

    def handshake(self, flow):
        self.seg(flow, SYN, opts=self.opts(True))
        self.seg(flow, ACK, opts=self.opts())


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def icmp_frame(n):
    msg = bytearray(struct.pack(">BBHHH", 8, 0, 0, 7, 1) + bytes((i * 7) & 0xFF for i in range(n - 8)))
    struct.pack_into(">H", msg, 2, csum(bytes(msg)))
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + n, 1, 0, 64, 1, 0, bytes([198, 18, 0, 2]), bytes([198, 18, 0, 1])))
    struct.pack_into(">H", ip, 10, csum(bytes(ip)))
    return bytes([2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 8, 0]) + bytes(ip) + bytes(msg)


def seeds():
    out = {}
    # LRO chains into the echo, TSO frames back; acknowledged, then closed
    s = Seed(ALL)
    s.handshake(0)
    s.seg(0, ACK | PSH, 4000, opts=s.opts(), rx=dict(cuts=(1472, 2720), l4="good", lro=True, segsz=1448))
    s.seg(0, ACK, opts=s.opts(), step=2)
    s.seg(0, ACK | PSH, 8160, opts=s.opts(), rx=dict(l4="none", lro=True, segsz=1448))
    s.seg(0, ACK, opts=s.opts(), step=4)
    s.seg(0, ACK | FIN, opts=s.opts(), step=4)
    s.seg(0, ACK, seq=1, ack=0, opts=s.opts(), step=5)
    out["ofl-lro-echo"] = s.b
    # headers cut across segments, empty segments, tiny first segments, tight buffers: all dropped
    # (the fuzzer advances its sequence number on each all the same, hence the SEQ of those taken)
    s = Seed(ALL)
    s.handshake(1)
    for cuts, tight in (((34,), False), ((44,), False), ((47,), True), ((60,), True), ((0, 0, 70), False),
                        ((20,), True)):
        s.seg(1, ACK | PSH, 4000, opts=s.opts(), rx=dict(cuts=cuts, scale=1, tight=tight, l4="good", lro=True, segsz=1448))
    # headers whole in the first segment (tight: it cannot be made one buffer), then cut after them
    s.seg(1, ACK | PSH, 4000, seq=-24000, opts=s.opts(), rx=dict(cuts=(66, 66, 67, 200), scale=1, tight=True, l4="good", lro=True, segsz=1448))
    s.seg(1, ACK | PSH, 4000, seq=-20000, opts=s.opts(), rx=dict(cuts=(2,), scale=1, lro=True, segsz=1448))
    s.seg(1, ACK | PSH, 4000, seq=-20000, opts=s.opts(), rx=dict(cuts=(72, 2000), scale=8, lro=True, segsz=1448))
    s.seg(1, ACK, seq=-16000, opts=s.opts(), step=3)
    out["ofl-split-headers"] = s.b
    # IP total lengths that disagree with the chain's, and a single buffer's padding
    s = Seed(ALL)
    s.handshake(0)
    for tweak in (100, 1, -1, -40, 0):
        s.seg(0, ACK | PSH, 4000, opts=s.opts(), rx=dict(cuts=(1472, 2720), lro=True, segsz=1448, tweak=tweak))
    s.seg(0, ACK | PSH, 96, opts=s.opts(), rx=dict(tweak=20))
    s.seg(0, ACK, opts=s.opts(), step=3)
    out["ofl-ip-length"] = s.b
    # checksums flagged by the device, wrong sums included (taken when GOOD or NONE: the fuzzer does
    # not advance on a bad sum, hence SEQ), LRO with a tso_segsz of 8
    s = Seed(ALL)
    s.handshake(0)
    s.handshake(2)
    for i, l4 in enumerate(("good", "none", "bad", "unknown")):
        s.seg(0, ACK | PSH, 96, seq=96 * min(i, 2), opts=s.opts(), bad=True, rx=dict(l4=l4))
        s.seg(2, ACK | PSH, 4000, seq=4000 * min(i, 2), opts=s.opts(), bad=True, rx=dict(cuts=(1472,), l4=l4, lro=True))
    s.seg(0, ACK | PSH, 4000, seq=192, opts=s.opts(), rx=dict(cuts=(1472,), l4="good", lro=True, segsz=8))
    s.seg(0, ACK, seq=4192, opts=s.opts(), step=3)
    s.seg(2, ACK, seq=8000, opts=s.opts(), step=3)
    out["ofl-csum-flags"] = s.b
    # the same without offloads: chains checked in software (odd boundaries), MSS frames back
    s = Seed()
    s.handshake(0)
    s.seg(0, ACK | PSH, 4000, opts=s.opts(), rx=dict(cuts=(1472, 2720), l4="good", lro=True, segsz=1448))
    s.seg(0, ACK, opts=s.opts(), step=2)
    s.seg(0, ACK | PSH, 4000, opts=s.opts(), rx=dict(cuts=(67,), scale=1, lro=True, segsz=1448))
    s.seg(0, ACK, opts=s.opts(), step=2)
    out["plain-chains"] = s.b
    # ICMP echo requests chained (dropped) and whole or made whole (answered)
    s = Seed(ALL)
    f = icmp_frame(1004)  # (a raw frame is a multiple of 6 bytes)
    s.raw(f, rx=dict(cuts=(600,), scale=8, tight=True))
    s.raw(f, rx=dict(cuts=(600,), scale=8))
    s.raw(f)
    s.raw(icmp_frame(62), rx=dict(cuts=(40, 40), scale=1, tight=True), step=2)
    s.raw(icmp_frame(62), rx=dict(cuts=(40, 40), scale=1), step=2)
    out["ofl-icmp-chain"] = s.b
    # 64 KiB buffers, the IPv4 header checksum offloaded: big writes leave as TSO frames, more of
    # them as the acknowledgements open the congestion window
    s = Seed(ALL | IPCS | BIG)
    s.handshake(0)
    for _ in range(4):
        s.write(0, 15)
    for step in (2, 2, 3, 3, 4, 4):
        s.seg(0, ACK, opts=s.opts(), step=step)
    s.seg(0, ACK | FIN, opts=s.opts(), step=5)
    out["ofl-tso-writes"] = s.b
    return out


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "fuzz_eth_input")
    for name, b in seeds().items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(bytes(b))
        print(name, len(b))


if __name__ == "__main__":
    main()
