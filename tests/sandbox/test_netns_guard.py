"""Tests of the netns guard: rtnetlink messages, and stripping routes in a real namespace."""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.netns_guard import (
    NLMSG_ERROR,
    RTA_DST,
    RTM_DELROUTE,
    RTM_NEWROUTE,
    RTN_PROHIBIT,
    NetlinkError,
    RouteRequest,
    decode_ack,
    encode_route_request,
    ipv4_default_gateways,
)
from tests.sandbox.roles import PROJECT_ROOT
from tests.sandbox.test_posture import ROUTE_WITH_DEFAULT, ROUTE_WITHOUT_DEFAULT


def test_delete_request_is_a_bare_rtmsg() -> None:
    """A delete of the default route carries no attributes: length is header plus rtmsg."""
    data = encode_route_request(RouteRequest(kind=RTM_DELROUTE, family=socket.AF_INET), seq=7)
    length, kind, flags, seq, _ = struct.unpack_from("=IHHII", data)
    assert (length, kind, seq) == (len(data), RTM_DELROUTE, 7) == (28, RTM_DELROUTE, 7)
    family, dst_len, *_ = struct.unpack_from("=BBBBBBBBI", data, 16)
    assert (family, dst_len) == (socket.AF_INET, 0)
    assert flags & 0x4  # an acknowledgement is requested


def test_prohibit_request_carries_the_destination() -> None:
    """A prohibit route to a gateway carries RTA_DST with the 4 address bytes, aligned."""
    gateway = ipaddress.IPv4Address("172.17.0.1")
    data = encode_route_request(
        RouteRequest(
            kind=RTM_NEWROUTE,
            family=socket.AF_INET,
            dst=gateway.packed,
            dst_len=32,
            route_type=RTN_PROHIBIT,
        ),
        seq=1,
    )
    assert len(data) % 4 == 0
    attr_len, attr_type = struct.unpack_from("=HH", data, 28)
    assert (attr_len, attr_type) == (8, RTA_DST)
    assert data[32:36] == gateway.packed


def test_ack_errno_is_decoded() -> None:
    """The kernel's NLMSG_ERROR for our sequence number yields a positive errno."""
    ack = struct.pack("=IHHII", 36, NLMSG_ERROR, 0, 5, 0) + struct.pack("=i", -3) + bytes(16)
    assert decode_ack(ack, seq=5) == 3


def test_ack_for_another_request_is_not_taken() -> None:
    """An acknowledgement with a different sequence number is an error, not a success."""
    ack = struct.pack("=IHHII", 36, NLMSG_ERROR, 0, 4, 0) + struct.pack("=i", 0) + bytes(16)
    with pytest.raises(NetlinkError):
        decode_ack(ack, seq=5)


def test_default_gateway_is_read_from_route_table() -> None:
    """The gateway of the default route is decoded from the little-endian hex field."""
    assert ipv4_default_gateways(ROUTE_WITH_DEFAULT) == [ipaddress.IPv4Address("172.17.0.1")]
    assert ipv4_default_gateways(ROUTE_WITHOUT_DEFAULT) == []


def run_in_new_netns(script: str) -> subprocess.CompletedProcess[str]:
    """Run a shell script in a fresh network namespace (root and unshare needed)."""
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if unshare is None or ip is None or os.geteuid() != 0:
        pytest.skip("needs root, unshare and ip to make a network namespace")
    return subprocess.run(
        [unshare, "--net", "sh", "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        check=False,
        timeout=60,
    )


@pytest.fixture
def nobody_writable_dir() -> Iterator[Path]:
    """A directory that user nobody can reach and write (tmp_path's parents are private)."""
    path = Path(tempfile.mkdtemp(prefix="repo-reader-netns-"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_guard_strips_default_routes_in_a_real_namespace(nobody_writable_dir: Path) -> None:
    """With IPv4 and IPv6 default routes, the guard leaves none and blocks the gateway."""
    ready = nobody_writable_dir / "ready"
    tmp_path = nobody_writable_dir
    result = run_in_new_netns(
        "set -e; ip link add v0 type veth peer name v1; "
        "ip addr add 10.9.0.2/24 dev v0; ip link set v0 up; ip link set v1 up; "
        "ip route add default via 10.9.0.1; "
        "ip -6 addr add fd00:9::2/64 dev v0 nodad; ip -6 route add default via fd00:9::1; "
        f"{sys.executable} -m sandbox.netns_guard --once --ready-file {ready}; "
        f"{sys.executable} -m sandbox.posture --cache {tmp_path} || true; "
        "ip route show type prohibit"
    )
    assert result.returncode == 0, result.stderr
    assert "deleted a default route (ipv4)" in result.stdout
    assert "deleted a default route (ipv6)" in result.stdout
    assert "made gateway 10.9.0.1 unreachable" in result.stdout
    assert "default-route-present" not in result.stdout
    assert "prohibit 10.9.0.1" in result.stdout
    assert ready.read_text() == "ready\n"


def test_guard_without_default_route_changes_nothing() -> None:
    """Where the engine set no default route (Docker >= 25), the guard only reports ready."""
    result = run_in_new_netns(f"{sys.executable} -m sandbox.netns_guard --once")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "no default route; waiting\n"
