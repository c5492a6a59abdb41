#!/usr/bin/env python3
"""ARP abuse from the peer namespace (tests/eth/test_arp_bounds.sh), scapy on the peer's interface.

  arp_flood.py spoof IFACE GW_MAC GW_IP GATEWAY_IP EVIL_MAC
      claims the default gateway's address for EVIL_MAC every way ARP allows (gratuitous requests and
      replies, broadcast and aimed at ibgwd, unsolicited replies), interleaved with requests for ibgwd
      from 200 other spoofed on-link addresses (each a new cache entry), 3 rounds
  arp_flood.py synflood IFACE GW_MAC GW_IP PORT FIRST LAST PER_SOURCE
      SYNs to GW_IP:PORT from the spoofed on-link sources 198.18.0.FIRST..LAST (nobody answers ARP for
      them), PER_SOURCE each: every SYN-ACK waits for an ARP answer that never comes
  arp_flood.py sniff IFACE GW_MAC DST_IP SECONDS
      prints the destination MAC of the first IPv4 frame from GW_MAC to DST_IP (or 'none')
"""
import random
import sys

from scapy.all import ARP, IP, TCP, Ether, sendp, sniff

BCAST = 'ff:ff:ff:ff:ff:ff'


def main():
    mode, iface = sys.argv[1], sys.argv[2]
    if mode == 'spoof':
        gw_mac, gw_ip, gateway, evil = sys.argv[3:7]
        frames = []
        for rnd in range(3):
            for i in range(200):
                mac = '02:66:%02x:%02x:%02x:%02x' % (rnd, i, random.randrange(256), random.randrange(256))
                ip = '198.18.0.%d' % (4 + i % 250)
                frames.append(Ether(src=mac, dst=BCAST) / ARP(op=1, hwsrc=mac, psrc=ip, pdst=gw_ip))
                if i % 10 == 0:
                    # the gateway's address claimed for EVIL: gratuitous request and reply, broadcast
                    # and unicast, and an unsolicited reply to ibgwd itself
                    frames.append(Ether(src=evil, dst=BCAST) / ARP(op=1, hwsrc=evil, psrc=gateway, pdst=gateway))
                    frames.append(Ether(src=evil, dst=BCAST) / ARP(op=2, hwsrc=evil, psrc=gateway, pdst=gateway,
                                                                    hwdst=BCAST))
                    frames.append(Ether(src=evil, dst=gw_mac) / ARP(op=2, hwsrc=evil, psrc=gateway, pdst=gw_ip,
                                                                     hwdst=gw_mac))
                    frames.append(Ether(src=evil, dst=gw_mac) / ARP(op=1, hwsrc=evil, psrc=gateway, pdst=gw_ip))
        sendp(frames, iface=iface, verbose=False)
        print(f'sent {len(frames)} frames')
    elif mode == 'synflood':
        gw_mac, gw_ip, port, first, last, per = sys.argv[3:10]
        frames = []
        for k in range(int(per)):
            for h in range(int(first), int(last) + 1):
                src = '198.18.0.%d' % h
                frames.append(Ether(dst=gw_mac) / IP(src=src, dst=gw_ip) /
                              TCP(sport=20000 + k, dport=int(port), flags='S', seq=random.randrange(1 << 32)))
        sendp(frames, iface=iface, verbose=False)
        print(f'sent {len(frames)} SYNs')
    elif mode == 'sniff':
        gw_mac, dst, secs = sys.argv[3], sys.argv[4], float(sys.argv[5])
        p = sniff(iface=iface, timeout=secs, count=1,
                  lfilter=lambda p: Ether in p and p[Ether].src == gw_mac and IP in p and p[IP].dst == dst)
        print(p[0][Ether].dst if p else 'none', flush=True)
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
