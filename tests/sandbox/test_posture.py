"""Tests of the sandbox posture self-check on this host and on fabricated /proc files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.posture import (
    PostureInputs,
    PostureRule,
    PostureViolation,
    ProcFiles,
    SandboxViolation,
    check_posture,
    ipv4_default_routes,
    ipv6_default_routes,
    parse_capabilities,
    require_sandbox,
)
from tests.sandbox.roles import PROJECT_ROOT

ROUTE_HEADER = (
    "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
)
# A container on a bridge network: a default route via the gateway, and the subnet.
ROUTE_WITH_DEFAULT = (
    ROUTE_HEADER
    + "eth0\t00000000\t010011AC\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
    + "eth0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
)
# The same after the netns guard: the subnet, and the gateway as a prohibit route.
ROUTE_WITHOUT_DEFAULT = (
    ROUTE_HEADER
    + "eth0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
    + "*\t010011AC\t00000000\t0205\t0\t0\t0\tFFFFFFFF\t0\t0\t0\n"
)
# Every namespace lists the kernel's ::/0 reject entry on lo; it routes nothing.
IPV6_NULL_ENTRY = (
    "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n"
)
IPV6_DEFAULT = (
    "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
    "fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0\n"
)
IPV6_SUBNET = (
    "fd000000000000000000000000000000 40 00000000000000000000000000000000 00 "
    "00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0\n"
)
STATUS_CONFINED = (
    "Name:\tpython\nUid:\t10001\t10001\t10001\t10001\nCapInh:\t0000000000000000\n"
    "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n"
)
STATUS_DOCKER_ROOT = STATUS_CONFINED.replace(
    "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000",
    "CapPrm:\t00000000a80425fb\nCapEff:\t00000000a80425fb",
)


def proc_files(tmp_path: Path, *, status: str, route: str, ipv6: str | None) -> ProcFiles:
    """Fabricated /proc files under tmp_path; ipv6=None leaves ipv6_route out."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "status").write_text(status)
    (tmp_path / "route").write_text(route)
    if ipv6 is not None:
        (tmp_path / "ipv6_route").write_text(ipv6)
    return ProcFiles(
        status=tmp_path / "status", route=tmp_path / "route", ipv6_route=tmp_path / "ipv6_route"
    )


def rules(violations: list[PostureViolation]) -> set[PostureRule]:
    """The rules among `violations`."""
    return {v.rule for v in violations}


def test_ipv4_default_route_is_found() -> None:
    """A 0.0.0.0/0 route that is up counts as a default route, the subnet route does not."""
    assert ipv4_default_routes(ROUTE_WITH_DEFAULT) == ["eth0"]


def test_ipv4_prohibit_route_is_not_a_default_route() -> None:
    """After the guard only the subnet and a reject route to the gateway remain: no default."""
    assert ipv4_default_routes(ROUTE_WITHOUT_DEFAULT) == []


def test_ipv4_route_that_is_down_does_not_count() -> None:
    """A default route without RTF_UP routes nothing."""
    down = ROUTE_WITH_DEFAULT.replace("\t0003\t", "\t0002\t")
    assert ipv4_default_routes(down) == []


def test_ipv6_null_entry_is_not_a_default_route() -> None:
    """The kernel's ::/0 reject entry on lo, present in every namespace, is ignored."""
    assert ipv6_default_routes(IPV6_NULL_ENTRY + IPV6_SUBNET) == []


def test_ipv6_default_route_is_found() -> None:
    """A ::/0 route via a gateway is a default route."""
    assert ipv6_default_routes(IPV6_SUBNET + IPV6_DEFAULT + IPV6_NULL_ENTRY) == ["eth0"]


def test_capabilities_are_read_from_status() -> None:
    """CapEff and CapPrm are parsed as hexadecimal masks."""
    caps = parse_capabilities(STATUS_DOCKER_ROOT)
    assert caps.effective == caps.permitted == 0xA80425FB


def test_status_without_capability_lines_is_an_error() -> None:
    """A status text lacking CapEff is refused rather than read as no capabilities."""
    with pytest.raises(ValueError, match="CapEff"):
        parse_capabilities("Name:\tpython\nCapPrm:\t0\n")


def test_confined_inputs_violate_nothing(tmp_path: Path) -> None:
    """Non-root, no capabilities, no default route: only the filesystem rules remain."""
    proc = proc_files(
        tmp_path / "proc",
        status=STATUS_CONFINED,
        route=ROUTE_WITHOUT_DEFAULT,
        ipv6=IPV6_NULL_ENTRY,
    )
    inputs = PostureInputs(proc=proc, uids=lambda: (10001, 10001, 10001))
    found = rules(check_posture(tmp_path, inputs))
    assert PostureRule.RUNNING_AS_ROOT not in found
    assert PostureRule.CAPABILITIES_EFFECTIVE not in found
    assert PostureRule.DEFAULT_ROUTE_PRESENT not in found


def test_unconfined_inputs_violate_each_rule(tmp_path: Path) -> None:
    """Root with capabilities and a default route violates those three rules."""
    proc = proc_files(
        tmp_path / "proc", status=STATUS_DOCKER_ROOT, route=ROUTE_WITH_DEFAULT, ipv6=IPV6_DEFAULT
    )
    violations = check_posture(tmp_path, PostureInputs(proc=proc, uids=lambda: (0, 0, 0)))
    by_rule = {v.rule: v.detail for v in violations}
    assert by_rule[PostureRule.RUNNING_AS_ROOT] == "uid real=0 effective=0 saved=0"
    assert "CapEff=00000000a80425fb" in by_rule[PostureRule.CAPABILITIES_EFFECTIVE]
    assert by_rule[PostureRule.DEFAULT_ROUTE_PRESENT] == "ipv4 via eth0, ipv6 via eth0"


def test_saved_root_uid_counts_as_root(tmp_path: Path) -> None:
    """A process that could switch back to uid 0 is running as root."""
    proc = proc_files(tmp_path / "proc", status=STATUS_CONFINED, route=ROUTE_HEADER, ipv6=None)
    found = rules(check_posture(tmp_path, PostureInputs(proc=proc, uids=lambda: (10001, 10001, 0))))
    assert PostureRule.RUNNING_AS_ROOT in found


def test_permitted_capabilities_count_as_effective(tmp_path: Path) -> None:
    """Capabilities a process may raise itself are as good as effective."""
    status = STATUS_CONFINED.replace("CapPrm:\t0000000000000000", "CapPrm:\t0000000000001000")
    proc = proc_files(tmp_path / "proc", status=status, route=ROUTE_HEADER, ipv6=None)
    found = rules(check_posture(tmp_path, PostureInputs(proc=proc, uids=lambda: (1, 1, 1))))
    assert PostureRule.CAPABILITIES_EFFECTIVE in found


def test_missing_ipv6_route_file_means_no_ipv6_route(tmp_path: Path) -> None:
    """With IPv6 disabled there is no ipv6_route file and no IPv6 default route."""
    proc = proc_files(tmp_path / "proc", status=STATUS_CONFINED, route=ROUTE_HEADER, ipv6=None)
    found = rules(check_posture(tmp_path, PostureInputs(proc=proc, uids=lambda: (1, 1, 1))))
    assert PostureRule.DEFAULT_ROUTE_PRESENT not in found


def test_unreadable_route_table_is_a_violation(tmp_path: Path) -> None:
    """When the IPv4 route table cannot be read, the route rule is not taken as kept."""
    proc = proc_files(tmp_path / "proc", status=STATUS_CONFINED, route="", ipv6=None)
    proc.route.unlink()
    violations = check_posture(tmp_path, PostureInputs(proc=proc, uids=lambda: (1, 1, 1)))
    (route,) = [v for v in violations if v.rule is PostureRule.DEFAULT_ROUTE_PRESENT]
    assert "cannot read" in route.detail


def test_missing_cache_is_a_violation(tmp_path: Path) -> None:
    """A cache directory that does not exist cannot be shown to be read-only."""
    violations = check_posture(tmp_path / "absent")
    (cache,) = [v for v in violations if v.rule is PostureRule.CACHE_WRITABLE]
    assert "cannot inspect" in cache.detail


def test_this_host_violations_match_its_facts(tmp_path: Path) -> None:
    """On the test host each rule is reported exactly when the host's own facts break it."""
    found = rules(check_posture(tmp_path))
    assert (PostureRule.RUNNING_AS_ROOT in found) == (0 in os.getresuid())
    assert (PostureRule.CACHE_WRITABLE in found) == (not os.statvfs(tmp_path).f_flag & os.ST_RDONLY)
    assert (PostureRule.ROOT_FILESYSTEM_WRITABLE in found) == (
        not os.statvfs("/").f_flag & os.ST_RDONLY
    )
    assert PostureRule.CACHE_WRITABLE in found  # tmp_path is always writable


def test_require_sandbox_names_every_violated_rule(tmp_path: Path) -> None:
    """Outside a sandbox `require_sandbox` raises, naming each violated rule."""
    proc = proc_files(
        tmp_path / "proc", status=STATUS_DOCKER_ROOT, route=ROUTE_WITH_DEFAULT, ipv6=None
    )
    with pytest.raises(SandboxViolation) as raised:
        require_sandbox(tmp_path, PostureInputs(proc=proc, uids=lambda: (0, 0, 0)))
    message = str(raised.value)
    for rule in raised.value.violations:
        assert str(rule.rule) in message
    assert {v.rule for v in raised.value.violations} >= {
        PostureRule.CACHE_WRITABLE,
        PostureRule.RUNNING_AS_ROOT,
        PostureRule.CAPABILITIES_EFFECTIVE,
        PostureRule.DEFAULT_ROUTE_PRESENT,
    }


def test_read_only_mount_is_not_writable(tmp_path: Path) -> None:
    """A cache on a read-only mount passes the cache rule (a real ro tmpfs, own namespace)."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare to mount a read-only tmpfs")
    cache = tmp_path / "cache"
    cache.mkdir()
    script = (
        f"mount -t tmpfs -o ro,size=1m repo-reader-test {cache} && "
        f"exec {sys.executable} -m sandbox.posture --cache {cache}"
    )
    result = subprocess.run(
        [unshare, "--mount", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        check=False,
        timeout=60,
    )
    assert result.returncode == 1, result.stderr  # the host still violates other rules
    assert '"rule": "cache-writable"' not in result.stdout
    assert '"rule": "running-as-root"' in result.stdout
