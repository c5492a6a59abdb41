#!/usr/bin/env python3
"""Borrows every rtnetlink socket a process holds (pidfd_getfd: a copy of its descriptor, the very
socket) and asks each to configure the network: RTM_NEWLINK on ifindex 1 (lo) with no attribute, a
request that changes nothing but that rtnetlink allows only when both its sender and the socket's
opener hold CAP_NET_ADMIN. This process is root: a refusal (EPERM) comes from the opener's
credentials, i.e. the socket can never configure, whoever uses it.

    nl_borrow.py PID     prints "N rtnetlink socket(s): fd F refused (EPERM) ..." and exits 0 when every
                         one refused; 1 when one accepted (named) or none was found

The process should be stopped (SIGSTOP) meanwhile: the answer lands on the shared socket, which the
owner would otherwise read too."""
import ctypes
import errno
import os
import socket
import struct
import sys

SYS_PIDFD_GETFD = 438  # x86_64 and aarch64 alike
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
RTM_NEWLINK = 16
SEQ = 0x7E57


def main():
    pid = int(sys.argv[1])
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    found, accepted = [], []
    for name in os.listdir(f'/proc/{pid}/fd'):
        try:
            target = os.readlink(f'/proc/{pid}/fd/{name}')
        except OSError:
            continue
        if not target.startswith('socket:['):
            continue
        fd = libc.syscall(SYS_PIDFD_GETFD, pidfd, int(name), 0)
        if fd < 0:
            sys.exit(f'pidfd_getfd of fd {name}: {os.strerror(ctypes.get_errno())}')
        s = socket.socket(fileno=fd)  # (its family and protocol read from the socket)
        if s.family != socket.AF_NETLINK or s.proto != 0:  # 0: NETLINK_ROUTE
            s.close()
            continue
        s.settimeout(2)
        # struct ifinfomsg: family, pad, type, index, flags, change
        body = struct.pack('=BBHiII', socket.AF_UNSPEC, 0, 0, 1, 0, 0)
        s.send(struct.pack('=IHHII', 16 + len(body), RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, SEQ, 0) + body)
        err = None
        while err is None:  # (address notifications queued meanwhile are skipped)
            data = s.recv(65536)
            off = 0
            while off + 16 <= len(data):
                ln, typ, _, seq, _ = struct.unpack_from('=IHHII', data, off)
                if typ == NLMSG_ERROR and seq == SEQ:
                    err = -struct.unpack_from('=i', data, off + 16)[0]
                off += (ln + 3) & ~3
                if ln < 16:
                    break
        s.close()
        found.append(f'fd {name} ' + ('refused (EPERM)' if err == errno.EPERM else
                                      f'ACCEPTED' if err == 0 else f'answered {os.strerror(err)}'))
        if err != errno.EPERM:
            accepted.append(name)
    print(f'{len(found)} rtnetlink socket(s): ' + ', '.join(found))
    sys.exit(1 if accepted or not found else 0)


main()
