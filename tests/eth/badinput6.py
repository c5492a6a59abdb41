#!/usr/bin/env python3
"""Crafted bad input over IPv6 against ibgwd's TCP engine (run by test_tcp6_badinput.sh in the peer namespace).

  badinput6.py IFACE GW6 PEER6 GW_MAC STATS_URL ROOT_NETNS SYN_BACKLOG

The IPv6 counterpart of badinput.py, whose helpers it uses (counters checked before and after each
attack, a kernel "survivor" connection to the echo route carrying data between the attacks, compared
by sha256 at the end): bad TCP checksums (the IPv6 pseudo-header), extension-header chains before TCP
(skipped: the handshake behind them works; too long, a fragment, a routing header with segments
left: dropped), malformed options, closed ports (RST), TCP to a multicast group of ours and from an
IPv4-mapped source (refused), then on the survivor's own 4-tuple: garbage data with bad checksums,
RSTs outside and inside the window (RFC 5961 challenge ACK), a SYN in the window, and finally a SYN
flood from an unanswering on-link address past syn_backlog (SYN cookies) with a cookie handshake that
is validated. Prints one "ok:"/"FAIL:" line per check; exits 1 when any failed.
"""
import os
import struct
import sys
import time

IFACE, GW6, PEER6, GW_MAC, STATS, ROOTNS, BACKLOG = sys.argv[1:8]
BACKLOG = int(BACKLOG)
# badinput.py reads its arguments when imported: the same shape
sys.argv = [sys.argv[0], IFACE, GW6, PEER6, PEER6, STATS, ROOTNS, str(BACKLOG)]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import badinput as b  # noqa: E402

from scapy.all import (TCP, Ether, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop,  # noqa: E402
                       IPv6ExtHdrRouting, Raw)
from scapy.layers.inet6 import in6_chksum  # noqa: E402

b.GW_MAC = GW_MAC
ok, bad, check, send, sniffer, Survivor = b.ok, b.bad, b.check, b.send, b.sniffer, b.Survivor
SPORT, ECHO = 40001, 7


def eth():
    return Ether(src=b.PEER_MAC, dst=GW_MAC, type=0x86dd)


def tcp6(dport, sport=SPORT, ext=None, src=PEER6, dst=GW6, **kw):
    ip = IPv6(src=src, dst=dst)
    return eth() / (ip / ext if ext is not None else ip) / TCP(sport=sport, dport=dport, **kw)


def tcp6_raw(sport, dport, flags, seq, ack, opts=b"", payload=b""):
    """A TCP segment built by hand (scapy would fix up malformed options) with a right checksum."""
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xffffffff, ack & 0xffffffff, (5 + len(opts) // 4) << 4,
                      flags, 65535, 0, 0) + opts + payload
    ck = in6_chksum(6, IPv6(src=PEER6, dst=GW6), seg)
    return eth() / IPv6(src=PEER6, dst=GW6, nh=6) / Raw(seg[:16] + struct.pack("!H", ck) + seg[18:])


def main():
    sv = Survivor(SPORT)
    sv.phase(200000)
    ok("survivor connection over IPv6 established, 200000 bytes echoed")

    def tcp_cksum():
        fr = []
        for i in range(5):
            p = tcp6(ECHO, sport=41300 + i, flags="S")
            p = Ether(bytes(p))
            p[TCP].chksum ^= 0x5555
            fr.append(p)
        send(fr)
    check("bad TCP checksums over IPv6 (5 SYNs)",
          {"tcp_checksum_errors_total": 5, "tcp_segments_in_total": 0, "tcp_connections_syn_received": 0},
          tcp_cksum)

    # a SYN behind hop-by-hop, destination options and a routing header with no segments left: answered
    def ext_ok():
        sn = sniffer(lfilter=lambda p: TCP in p and p[TCP].sport == ECHO and p[TCP].dport == 41350)
        time.sleep(0.2)
        send([tcp6(ECHO, sport=41350, flags="S", seq=7000,
                   ext=IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() / IPv6ExtHdrRouting(segleft=0))])
        time.sleep(0.4)
        got = [p for p in sn.stop() if p[TCP].flags == "SA" and p[TCP].ack == 7001]
        if not got:
            bad("a SYN behind three extension headers got no SYN-ACK")
        else:
            ok(f"a SYN behind three extension headers is answered (SYN-ACK from {got[0][IPv6].src}, "
               f"hop limit {got[0][IPv6].hlim}, MSS {dict((o[0], o[1]) for o in got[0][TCP].options).get('MSS')})")
        # (the peer's kernel resets the SYN-ACK it did not ask for: that RST ends it)
    check("extension headers before TCP", {"ip6_header_errors_total": 0, "tcp_header_errors_total": 0,
                                           "tcp_rsts_in_total": 1}, ext_ok, 0.6)

    def ext_bad():
        chain = IPv6ExtHdrDestOpt()
        for _ in range(8):
            chain = chain / IPv6ExtHdrDestOpt()
        send([tcp6(ECHO, sport=41360, flags="S", ext=chain),
              tcp6(ECHO, sport=41361, flags="S", ext=IPv6ExtHdrFragment(m=0, offset=0)),
              tcp6(ECHO, sport=41362, flags="S", ext=IPv6ExtHdrRouting(addresses=["2001:db8::99"], segleft=1)),
              tcp6(ECHO, sport=41363, flags="S", ext=IPv6ExtHdrDestOpt() / IPv6ExtHdrHopByHop())])
    check("TCP behind a chain too long, a fragment, a routing header with segments left, hop-by-hop not first",
          {"ip6_header_errors_total": 2, "ip6_extension_drops_total": 2, "tcp_segments_in_total": 0}, ext_bad)

    bogus = [b"\x02\x00\x05\xb4", b"\x02\x03\x05\x00", b"\x03\x04\x07\x00", b"\x04\x03\x00\x00",
             b"\x08\x09" + b"\x00" * 10, b"\x05\x0b" + b"\x00" * 10, b"\x1e\x28\x00\x00", b"\x01\x01\x01\x02"]

    def opts():
        send([tcp6_raw(41500 + i, ECHO, 0x02, 1000, 0, o) for i, o in enumerate(bogus)])
    check(f"malformed TCP options over IPv6 ({len(bogus)} SYNs)",
          {"tcp_header_errors_total": len(bogus), "tcp_checksum_errors_total": 0, "tcp_segments_in_total": 0,
           "tcp_connections_syn_received": 0}, opts)

    b.closed_ports(tcp6, IPv6, " over IPv6")

    def refused():
        send([Ether(src=b.PEER_MAC, dst="33:33:00:00:00:01") / IPv6(src=PEER6, dst="ff02::1") /
              TCP(sport=41800, dport=ECHO, flags="S"),
              tcp6(ECHO, sport=41801, src="::ffff:198.18.0.2", flags="S")])
    check("TCP to the all-nodes group and from an IPv4-mapped source",
          {"ip6_tcp_refused_total": 1, "ip6_martians_total": 1, "tcp_segments_in_total": 0}, refused)

    sv.phase(100000)
    ok("survivor still echoes after the header attacks")

    rcv, snd, _ = b.learn_state(sv, SPORT)
    ok(f"survivor state sniffed: ibgwd rcv_nxt {rcv}, snd_nxt {snd}")
    junk = b"\xee" * 500

    def data_bad_cksum():
        fr = []
        for _ in range(3):
            p = Ether(bytes(tcp6(ECHO, flags="PA", seq=rcv, ack=snd) / junk))
            p[TCP].chksum ^= 0x0101
            fr.append(p)
        send(fr)
    check("garbage data at the survivor's next sequence number with bad TCP checksums",
          {"tcp_checksum_errors_total": 3, "tcp_bytes_in_total": 0}, data_bad_cksum)

    def rst_oow():
        send([tcp6(ECHO, flags="R", seq=(rcv + (1 << 30)) & 0xffffffff),
              tcp6(ECHO, flags="RA", seq=(rcv - (1 << 20)) & 0xffffffff, ack=snd)])
    check("RSTs outside the window: dropped silently",
          {"tcp_rsts_in_total": 2, "tcp_out_of_window_total": 2, "tcp_challenge_acks_total": 0,
           "tcp_connections_reset_total": 0}, rst_oow)

    def challenge(pkt, what):
        def run():
            acks = b.survivor_acks([pkt], rcv, IPv6)
            if len(acks) != 1:
                bad(f"{what}: {len(acks)} challenge ACKs seen, expected 1")
            else:
                ok(f"{what}: one challenge ACK on the wire, ack = rcv_nxt")
        return run
    time.sleep(0.6)
    check("RST inside the window but not at rcv_nxt (RFC 5961 3.2)",
          {"tcp_challenge_acks_total": 1, "tcp_connections_reset_total": 0},
          challenge(tcp6(ECHO, flags="R", seq=(rcv + 1000) & 0xffffffff), "in-window RST"))
    time.sleep(0.6)
    check("a SYN inside the window (RFC 5961 4.2)",
          {"tcp_challenge_acks_total": 1, "tcp_connections_syn_received": 0},
          challenge(tcp6(ECHO, flags="S", seq=(rcv + 500) & 0xffffffff), "SYN"))

    sv.phase(200000)
    ok("survivor still echoes after the attacks on its own connection")

    # SYN flood from an on-link address nobody answers for: the half-open table holds BACKLOG, the rest
    # get cookies; then a cookie handshake from the peer is validated (its kernel resets the SYN-ACK
    # first, which finds no connection: cookies keep no state)
    def flood():
        send([tcp6(ECHO, sport=42000 + i, src="2001:db8:0:1::99", flags="S", seq=i * 1000)
              for i in range(BACKLOG + 24)])
    check(f"SYN flood of {BACKLOG + 24} over IPv6 from an unanswering address (syn_backlog {BACKLOG})",
          {"tcp_connections_syn_received": BACKLOG, "tcp_syncookies_sent_total": 24}, flood, 0.6)

    def cookie():
        sn = sniffer(lfilter=lambda p: TCP in p and IPv6 in p and p[TCP].sport == ECHO and p[TCP].dport == 43000)
        time.sleep(0.2)
        send([tcp6(ECHO, sport=43000, flags="S", seq=90000, options=[("MSS", 1400)])])
        time.sleep(0.4)
        sa = [p for p in sn.stop() if p[TCP].flags == "SA" and p[TCP].ack == 90001]
        if not sa:
            bad("no cookie SYN-ACK")
            return
        send([tcp6(ECHO, sport=43000, flags="A", seq=90001, ack=(sa[0][TCP].seq + 1) & 0xffffffff)])
        time.sleep(0.3)
        send([tcp6(ECHO, sport=43000, flags="R", seq=90001)])
    check("a cookie handshake over IPv6 while the table is full",
          {"tcp_syncookies_validated_total": 1, "tcp_syncookies_failed_total": 0}, cookie, 0.5)
    sv.phase(100000)
    ok("survivor still echoes during the SYN flood")

    sv.finish()
    return 1 if b.failures else 0


if __name__ == "__main__":
    b.run(main)
