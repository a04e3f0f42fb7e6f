"""Strip the default routes from the network namespace the workers join, then wait.

Docker engines before 25.0 (Debian bookworm's docker.io is 20.10) give a container
on an `internal: true` network a default route via the bridge, although nothing is
forwarded beyond it. The workers' posture check demands no default route, so compose
runs this once per stack in a small container that holds the workers' network
namespace (`network_mode: service:worker-netns`): it deletes every IPv4 and IPv6
default route over rtnetlink, makes the bridge's own address unreachable (the host
is not a place a worker may talk to), drops to an unprivileged user and then only
waits. On newer engines there is no default route and it only waits.

It needs CAP_NET_ADMIN, CAP_SETUID and CAP_SETGID, as root, until it drops them.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import socket
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sandbox.posture import ProcFiles, ipv4_default_routes, ipv6_default_routes

NETLINK_ROUTE = 0
RTM_NEWROUTE = 24
RTM_DELROUTE = 25
NLMSG_ERROR = 2
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLM_F_CREATE = 0x400
NLM_F_EXCL = 0x200
RT_TABLE_MAIN = 254
RT_SCOPE_UNIVERSE = 0
RT_SCOPE_NOWHERE = 255
RTN_UNSPEC = 0
RTN_PROHIBIT = 8
RTPROT_STATIC = 4
RTA_DST = 1

NOBODY = 65534

_NLMSGHDR = struct.Struct("=IHHII")
_RTMSG = struct.Struct("=BBBBBBBBI")
_RTATTR = struct.Struct("=HH")


class NetlinkError(OSError):
    """The kernel refused a routing request."""


@dataclass(frozen=True, kw_only=True)
class RouteRequest:
    """One rtnetlink route message: what to add or delete."""

    kind: int
    family: int
    dst: bytes = b""
    dst_len: int = 0
    route_type: int = RTN_UNSPEC
    scope: int = RT_SCOPE_NOWHERE
    protocol: int = 0


def encode_route_request(request: RouteRequest, seq: int) -> bytes:
    """The bytes of an rtnetlink request asking for an acknowledgement."""
    flags = NLM_F_REQUEST | NLM_F_ACK
    if request.kind == RTM_NEWROUTE:
        flags |= NLM_F_CREATE | NLM_F_EXCL
    body = _RTMSG.pack(
        request.family,
        request.dst_len,
        0,
        0,
        RT_TABLE_MAIN,
        request.protocol,
        request.scope,
        request.route_type,
        0,
    )
    if request.dst:
        attr_len = _RTATTR.size + len(request.dst)
        body += _RTATTR.pack(attr_len, RTA_DST) + request.dst + b"\0" * (-attr_len % 4)
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(body), request.kind, flags, seq, 0) + body


def decode_ack(data: bytes, seq: int) -> int:
    """The errno of the kernel's acknowledgement for request `seq` (0 on success)."""
    offset = 0
    while offset + _NLMSGHDR.size <= len(data):
        length, kind, _, msg_seq, _ = _NLMSGHDR.unpack_from(data, offset)
        if length < _NLMSGHDR.size:
            break
        if kind == NLMSG_ERROR and msg_seq == seq:
            (error,) = struct.unpack_from("=i", data, offset + _NLMSGHDR.size)
            return -int(error)
        offset += (length + 3) & ~3
    raise NetlinkError(f"no acknowledgement for netlink request {seq}")


class RouteSocket:
    """A blocking rtnetlink socket that sends one request at a time."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
        self._sock.bind((0, 0))
        self._seq = 0

    def __enter__(self) -> RouteSocket:
        return self

    def __exit__(self, *exc: object) -> None:
        self._sock.close()

    def request(self, request: RouteRequest) -> int:
        """Send a request; return the kernel's errno (0 when it was done)."""
        self._seq += 1
        self._sock.send(encode_route_request(request, self._seq))
        return decode_ack(self._sock.recv(65536), self._seq)


def ipv4_default_gateways(route_text: str) -> list[ipaddress.IPv4Address]:
    """The gateways of IPv4 default routes in /proc/net/route text."""
    gateways = []
    for line in route_text.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and int(fields[1], 16) == 0 and int(fields[7], 16) == 0:
            gateway = ipaddress.IPv4Address(int(fields[2], 16).to_bytes(4, "little"))
            if int(gateway):
                gateways.append(gateway)
    return gateways


def strip_default_routes(proc: ProcFiles | None = None) -> list[str]:
    """Delete every default route and block each former gateway; return what was done."""
    files = proc or ProcFiles()
    done = []
    gateways = ipv4_default_gateways(files.route.read_text())
    with RouteSocket() as routes:
        for family in (socket.AF_INET, socket.AF_INET6):
            # One default route goes per request; stop when the kernel finds none.
            for _ in range(64):
                errno = routes.request(RouteRequest(kind=RTM_DELROUTE, family=family))
                if errno in (3, 2):  # ESRCH, ENOENT: no such route left
                    break
                if errno:
                    raise NetlinkError(errno, f"deleting a default route: {os.strerror(errno)}")
                done.append(f"deleted a default route ({_family_name(family)})")
        for gateway in gateways:
            errno = routes.request(
                RouteRequest(
                    kind=RTM_NEWROUTE,
                    family=socket.AF_INET,
                    dst=gateway.packed,
                    dst_len=32,
                    route_type=RTN_PROHIBIT,
                    scope=RT_SCOPE_UNIVERSE,
                    protocol=RTPROT_STATIC,
                )
            )
            if errno not in (0, 17):  # EEXIST: already blocked
                raise NetlinkError(errno, f"blocking {gateway}: {os.strerror(errno)}")
            done.append(f"made gateway {gateway} unreachable")
    left = ipv4_default_routes(files.route.read_text())
    if files.ipv6_route.exists():
        left += ipv6_default_routes(files.ipv6_route.read_text())
    if left:
        raise NetlinkError(f"default routes remain via {', '.join(left)}")
    return done


def _family_name(family: int) -> str:
    return "ipv4" if family == socket.AF_INET else "ipv6"


def drop_privileges(uid: int = NOBODY, gid: int = NOBODY) -> None:
    """Become an unprivileged user; leaving uid 0 clears every capability."""
    if os.getuid() != 0:
        return
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def main(argv: Sequence[str] | None = None) -> int:
    """Strip default routes, drop privileges, mark ready, wait for SIGTERM."""
    parser = argparse.ArgumentParser(prog="python -m sandbox.netns_guard", description=main.__doc__)
    parser.add_argument("--ready-file", type=Path, help="written once the routes are gone")
    parser.add_argument("--once", action="store_true", help="exit instead of waiting")
    args = parser.parse_args(argv)
    try:
        for line in strip_default_routes():
            print(line, flush=True)
    except OSError as exc:
        print(f"netns_guard: {exc}", file=sys.stderr, flush=True)
        return 1
    drop_privileges()
    if args.ready_file:
        args.ready_file.write_text("ready\n")
    print("no default route; waiting", flush=True)
    if args.once:
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
