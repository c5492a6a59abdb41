#!/usr/bin/env python3
"""A netem-like impaired Ethernet link in user space, for hosts whose kernel has no sch_netem.

Bridges two interfaces with AF_PACKET sockets and impairs each direction on its own: loss, duplication,
delay (with jitter) and reordering (like netem's "reorder": that share of frames skips the delay and so
overtakes the ones before it).

  linkem.py IF_A IF_B [--loss P] [--dup P] [--delay S] [--jitter S] [--reorder P]

SIGUSR1 toggles a blackhole (every frame dropped: a peer that vanishes); SIGUSR2 toggles the
impairments off and on. Counts are printed on SIGTERM.
"""
import argparse
import heapq
import random
import select
import signal
import socket
import sys
import time

ETH_P_ALL = 3
PACKET_OUTGOING = 4

state = {"blackhole": False, "clean": False, "stop": False}
counts = {"in": 0, "dropped": 0, "dup": 0, "reordered": 0}


def open_if(name):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
    s.bind((name, 0))
    s.setblocking(False)
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--loss", type=float, default=0.0)
    ap.add_argument("--dup", type=float, default=0.0)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--jitter", type=float, default=0.0)
    ap.add_argument("--reorder", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=None)
    o = ap.parse_args()
    rnd = random.Random(o.seed)
    a, b = open_if(o.a), open_if(o.b)
    peer = {a: b, b: a}
    heap = []
    seq = 0

    def toggle(key):
        state[key] = not state[key]

    signal.signal(signal.SIGUSR1, lambda *_: toggle("blackhole"))
    signal.signal(signal.SIGUSR2, lambda *_: toggle("clean"))
    signal.signal(signal.SIGTERM, lambda *_: state.update(stop=True))
    print("linkem ready", flush=True)
    while not state["stop"]:
        now = time.monotonic()
        timeout = min(0.05, max(0.0, heap[0][0] - now)) if heap else 0.05
        try:
            ready, _, _ = select.select([a, b], [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        for s in ready:
            for _ in range(256):
                try:
                    frame, addr = s.recvfrom(65535)
                except (BlockingIOError, InterruptedError):
                    break
                if addr[2] == PACKET_OUTGOING:
                    continue
                counts["in"] += 1
                if state["blackhole"]:
                    counts["dropped"] += 1
                    continue
                out = peer[s]
                if state["clean"]:
                    heapq.heappush(heap, (now, seq, out, frame))
                    seq += 1
                    continue
                if rnd.random() < o.loss:
                    counts["dropped"] += 1
                    continue
                copies = 2 if rnd.random() < o.dup else 1
                counts["dup"] += copies - 1
                for _ in range(copies):
                    if rnd.random() < o.reorder:
                        d = 0.0
                        counts["reordered"] += 1
                    else:
                        d = o.delay + (rnd.uniform(-o.jitter, o.jitter) if o.jitter else 0.0)
                    heapq.heappush(heap, (now + max(0.0, d), seq, out, frame))
                    seq += 1
        while heap and heap[0][0] <= time.monotonic():
            _, _, out, frame = heapq.heappop(heap)
            try:
                out.send(frame)
            except OSError:
                counts["dropped"] += 1
    print("linkem %s" % " ".join("%s=%d" % kv for kv in counts.items()), flush=True)


if __name__ == "__main__":
    sys.exit(main())
