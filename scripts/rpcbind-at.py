#!/usr/bin/env python3
"""Runs rpcbind on one loopback address instead of every address.

    scripts/rpcbind-at.py ADDR V6PORT -- RPCBIND ARGS...

rpcbind binds port 111 on every address, and its -h (addresses to bind)
aborts in Debian's 1.2.6. Like systemd's socket activation, this binds
the sockets itself and hands them over (LISTEN_FDS): TCP and UDP on
ADDR:111, and on [::1]:V6PORT, so that port 111 of another loopback
address (127.0.0.2, a second host for NLM callbacks) stays free for that
host's own portmapper. V6PORT 0 takes any free port, for a second rpcbind
that must not take [::1]:111 from the first.
"""
import os
import socket
import sys

SD_LISTEN_FDS_START = 3


def bound(family: int, kind: int, addr: tuple) -> socket.socket:
    s = socket.socket(family, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind(addr)
    if kind == socket.SOCK_STREAM:
        s.listen(128)
    return s


def main() -> None:
    if len(sys.argv) < 4 or sys.argv[3] != "--":
        sys.exit(__doc__)
    addr, v6port, argv = sys.argv[1], int(sys.argv[2]), sys.argv[4:]
    socks = [
        bound(socket.AF_INET, socket.SOCK_STREAM, (addr, 111)),
        bound(socket.AF_INET, socket.SOCK_DGRAM, (addr, 111)),
        bound(socket.AF_INET6, socket.SOCK_STREAM, ("::1", v6port)),
        bound(socket.AF_INET6, socket.SOCK_DGRAM, ("::1", v6port)),
    ]
    for i, s in enumerate(socks):
        fd = SD_LISTEN_FDS_START + i
        # dup2 onto the same descriptor does nothing, not even clear
        # close-on-exec, which Python sets on every socket.
        if s.fileno() != fd:
            os.dup2(s.fileno(), fd)
        os.set_inheritable(fd, True)
    # The pid stays the same across exec, as sd_listen_fds checks.
    os.environ["LISTEN_PID"] = str(os.getpid())
    os.environ["LISTEN_FDS"] = str(len(socks))
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
