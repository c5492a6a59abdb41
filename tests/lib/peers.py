"""What the kernel TCP peers of the tests share (tests/eth/pp_peer.py, tests/gateway/v6_peer.py,
tests/gateway/pool_peer.py): their option parsing, a connect of either family and an echo loop.
A peer puts tests/lib on sys.path and imports it."""
import socket
import sys
import threading


def opt(args, name, default=None):
    """Removes `name VALUE` from args and returns VALUE (default when name is absent)."""
    if name in args:
        i = args.index(name)
        v = args[i + 1]
        del args[i:i + 2]
        return v
    return default


def flag(args, name):
    """Removes the flag name from args; True when it was there."""
    if name in args:
        args.remove(name)
        return True
    return False


def family(addr):
    return socket.AF_INET6 if ':' in addr else socket.AF_INET


def connect(host, port, src=None, sport=0, timeout=30):
    """A TCP connection to host:port (either family, host's), from src:sport when given."""
    c = socket.socket(family(host))
    if src or sport:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        c.bind((src or ('::' if ':' in host else '0.0.0.0'), int(sport or 0)))
    c.settimeout(timeout)
    c.connect((host, int(port)))
    return c


def serve(addr, port, handle, backlog=64):
    """Listens on addr:port (either family) and runs handle(conn, peer address) in a thread for each
    connection; never returns."""
    s = socket.socket(family(addr))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(port)))
    s.listen(backlog)
    while True:
        c, peer = s.accept()
        threading.Thread(target=handle, args=(c, peer), daemon=True).start()


def echo(c, h):
    """Sends back every byte c receives until its EOF, hashing them into h (a hashlib object), then
    ends our side; returns the byte count. An OSError passes to the caller, the count so far in its
    attribute echoed."""
    n = 0
    try:
        while True:
            b = c.recv(1 << 20)
            if not b:
                break
            h.update(b)
            n += len(b)
            c.sendall(b)
        c.shutdown(socket.SHUT_WR)
    except OSError as e:
        e.echoed = n
        raise
    return n


def read_bg(c):
    """Reads c to its EOF in a new thread; returns (the thread, the bytearray it fills, a list that gets
    the OSError that ended it early)."""
    got, err = bytearray(), []

    def run():
        try:
            while True:
                b = c.recv(1 << 20)
                if not b:
                    return
                got.extend(b)
        except OSError as e:
            err.append(e)

    t = threading.Thread(target=run)
    t.start()
    return t, got, err


def main(doc, commands):
    """Runs commands[argv[1]](argv[2:]); the usage (doc) otherwise."""
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit(doc)
    commands[sys.argv[1]](sys.argv[2:])
