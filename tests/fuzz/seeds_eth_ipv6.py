#!/usr/bin/python3
"""Writes the fuzz_eth_input seeds for IPv6 (the input format is at the top of fuzz_eth_input.c; the
harness gives the engine 2001:db8::1/64): tests/fuzz/seeds_eth_ipv6.py [DIR], DIR defaulting to
tests/fuzz/corpus/fuzz_eth_input. Each seed is one or a few raw frames (kind 0) built with scapy, so
their checksums are right and the fuzzer starts from messages the engine answers: an echo request,
an echo request behind destination options, a neighbour solicitation, a duplicate address probe, an
advertisement of our own address by another node, and a fragment; TCP over IPv6 (issue #16): SYNs
to the echo listener (plain, with Linux's options, behind destination options and hop-by-hop
headers), a SYN then data at a guessed sequence number (a stray segment: a reset), a SYN to a closed
port, TCP to the all-nodes group, a SYN to a device with offloads; and the engine's active open to 2001:db8::2 (kind 7 with bit 3)
answered by a solicited advertisement, then an unsolicited one (the cache's update rules)."""
import logging
import os
import sys

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import (Ether, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop,  # noqa: E402
                       ICMPv6EchoRequest, ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr, ICMPv6NDOptSrcLLAddr,
                       TCP, Raw)

GW_MAC, PEER_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02"
GW, PEER, SNM, SNMAC = "2001:db8::1", "2001:db8::2", "ff02::1:ff00:1", "33:33:ff:00:00:01"


def rec(frame):
    """A kind-0 record: the kind byte (no time step), the length in units of 6 (the harness cuts
    what lies beyond the input), the frame padded to that length."""
    b = bytes(frame)
    n = (len(b) + 5) // 6
    return bytes([0, n]) + b + bytes(n * 6 - len(b))


def seeds():
    e = Ether(src=PEER_MAC, dst=GW_MAC)
    echo = ICMPv6EchoRequest(id=1, seq=1, data=b"ping" * 8)
    ns = Ether(src=PEER_MAC, dst=SNMAC) / IPv6(src=PEER, dst=SNM, hlim=255) / ICMPv6ND_NS(tgt=GW) / \
        ICMPv6NDOptSrcLLAddr(lladdr=PEER_MAC)
    return {
        "ipv6-echo": rec(e / IPv6(src=PEER, dst=GW) / echo),
        "ipv6-destopt-echo": rec(e / IPv6(src=PEER, dst=GW) / IPv6ExtHdrDestOpt() / echo),
        "ipv6-ns-then-echo": rec(ns) + rec(e / IPv6(src=PEER, dst=GW) / echo),
        "ipv6-dad": rec(Ether(src=PEER_MAC, dst=SNMAC) / IPv6(src="::", dst=SNM, hlim=255) / ICMPv6ND_NS(tgt=GW)),
        "ipv6-na-conflict": rec(Ether(src=PEER_MAC, dst="33:33:00:00:00:01") / IPv6(src=PEER, dst="ff02::1", hlim=255) /
                                ICMPv6ND_NA(tgt=GW, S=0, O=1) / ICMPv6NDOptDstLLAddr(lladdr=PEER_MAC)),
        "ipv6-fragment": rec(e / IPv6(src=PEER, dst=GW) / IPv6ExtHdrFragment(m=1) / echo),
        "tcp6-syn": rec(ns) + rec(e / IPv6(src=PEER, dst=GW) / TCP(sport=40000, dport=7, flags="S", seq=1000)),
        "tcp6-syn-opts": rec(ns) + rec(e / IPv6(src=PEER, dst=GW) / TCP(
            sport=40001, dport=7, flags="S", seq=2000,
            options=[("MSS", 1440), ("SAckOK", b""), ("Timestamp", (1, 0)), ("NOP", None), ("WScale", 7)])),
        "tcp6-ext-syn": rec(ns) + rec(e / IPv6(src=PEER, dst=GW) / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() /
                                      TCP(sport=40002, dport=9, flags="S", seq=3000)),
        "tcp6-syn-data": rec(ns) + rec(e / IPv6(src=PEER, dst=GW) / TCP(sport=40000, dport=7, flags="S", seq=1000)) +
        rec(e / IPv6(src=PEER, dst=GW) / TCP(sport=40000, dport=7, flags="PA", seq=1001, ack=1) / Raw(b"hello")),
        "tcp6-closed": rec(e / IPv6(src=PEER, dst=GW) / TCP(sport=40003, dport=1234, flags="S", seq=4000)),
        "tcp6-mcast": rec(Ether(src=PEER_MAC, dst="33:33:00:00:00:01") / IPv6(src=PEER, dst="ff02::1") /
                          TCP(sport=40000, dport=7, flags="S")),
        # (the mode byte: the device does checksums, TSO, RX checksums and LRO, as fuzz_eth_input.c says)
        "tcp6-offloads": bytes([0xf8, 0x0f]) + rec(ns) + rec(e / IPv6(src=PEER, dst=GW) / TCP(
            sport=40001, dport=7, flags="S", seq=2000, options=[("MSS", 1440)])),
        "tcp6-connect-nd": bytes([7 | 8]) +
        rec(Ether(src=PEER_MAC, dst=GW_MAC) / IPv6(src=PEER, dst=GW, hlim=255) /
            ICMPv6ND_NA(tgt=PEER, R=0, S=1, O=1) / ICMPv6NDOptDstLLAddr(lladdr=PEER_MAC)) +
        rec(Ether(src=PEER_MAC, dst="33:33:00:00:00:01") / IPv6(src=PEER, dst="ff02::1", hlim=255) /
            ICMPv6ND_NA(tgt=PEER, R=0, S=0, O=1) / ICMPv6NDOptDstLLAddr(lladdr="02:00:00:00:00:03")),
    }


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "fuzz_eth_input")
    for name, b in seeds().items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(b)
        print(name, len(b))


if __name__ == "__main__":
    main()
