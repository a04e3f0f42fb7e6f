"""Self-check of a worker's sandbox posture: read-only filesystems, no root, no
capabilities, no default route.

Everything is found by inspection (statvfs, uids, /proc files); nothing is written
and no traffic is sent. The /proc files are parameters so tests can feed fabricated
ones.
"""

from __future__ import annotations

import argparse
import enum
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import structlog

log = structlog.get_logger(__name__)

# Route flags from <linux/route.h>; the same bits are used in /proc/net/ipv6_route.
RTF_UP = 0x0001
RTF_REJECT = 0x0200


class PostureRule(enum.StrEnum):
    """A rule of the sandbox posture; the value is the name messages and logs use."""

    ROOT_FILESYSTEM_WRITABLE = "root-filesystem-writable"
    CACHE_WRITABLE = "cache-writable"
    RUNNING_AS_ROOT = "running-as-root"
    CAPABILITIES_EFFECTIVE = "capabilities-effective"
    DEFAULT_ROUTE_PRESENT = "default-route-present"


@dataclass(frozen=True, kw_only=True)
class PostureViolation:
    """One violated rule and what was seen."""

    rule: PostureRule
    detail: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


class SandboxViolation(RuntimeError):
    """The process is not confined as `--require-sandbox` demands."""

    def __init__(self, violations: list[PostureViolation]) -> None:
        self.violations = violations
        rules = "; ".join(str(v) for v in violations)
        super().__init__(f"sandbox posture violated ({len(violations)}): {rules}")


@dataclass(frozen=True, kw_only=True)
class ProcFiles:
    """Where the kernel reports the facts the checks read."""

    status: Path = Path("/proc/self/status")
    route: Path = Path("/proc/net/route")
    ipv6_route: Path = Path("/proc/net/ipv6_route")


@dataclass(frozen=True, kw_only=True)
class Capabilities:
    """Capability sets of a process, as bit masks."""

    effective: int
    permitted: int


@dataclass(frozen=True, kw_only=True)
class PostureInputs:
    """What the checks inspect; the defaults are this process and its namespaces."""

    root: Path = Path("/")
    proc: ProcFiles = field(default_factory=ProcFiles)
    uids: Callable[[], tuple[int, int, int]] = os.getresuid


def parse_capabilities(status_text: str) -> Capabilities:
    """Read the effective and permitted capability masks from /proc/<pid>/status text."""
    masks: dict[str, int] = {}
    for line in status_text.splitlines():
        key, _, value = line.partition(":")
        if key in ("CapEff", "CapPrm"):
            masks[key] = int(value.strip(), 16)
    missing = {"CapEff", "CapPrm"} - masks.keys()
    if missing:
        raise ValueError(f"status has no {', '.join(sorted(missing))} line")
    return Capabilities(effective=masks["CapEff"], permitted=masks["CapPrm"])


def ipv4_default_routes(route_text: str) -> list[str]:
    """Interfaces with a usable IPv4 default route, from /proc/net/route text.

    A default route is destination 0.0.0.0/0 that is up and not a reject route.
    """
    found = []
    for line in route_text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8:
            continue
        iface, destination, flags, mask = fields[0], fields[1], int(fields[3], 16), fields[7]
        if int(destination, 16) == 0 and int(mask, 16) == 0 and _usable(flags):
            found.append(iface)
    return found


def ipv6_default_routes(route_text: str) -> list[str]:
    """Interfaces with a usable IPv6 default route, from /proc/net/ipv6_route text.

    Every network namespace lists a ::/0 reject route on `lo` (the kernel's null
    entry); it routes nothing, so it does not count.
    """
    found = []
    for line in route_text.splitlines():
        fields = line.split()
        if len(fields) < 10:
            continue
        destination, prefix_len, flags, iface = fields[0], fields[1], int(fields[8], 16), fields[9]
        if int(destination, 16) == 0 and int(prefix_len, 16) == 0 and _usable(flags):
            found.append(iface)
    return found


def _usable(flags: int) -> bool:
    return bool(flags & RTF_UP) and not flags & RTF_REJECT


def check_posture(cache_dir: Path, inputs: PostureInputs | None = None) -> list[PostureViolation]:
    """Every posture rule the current process violates, in rule order; empty when confined."""
    seen = inputs or PostureInputs()
    violations = [
        *_check_read_only(seen.root, PostureRule.ROOT_FILESYSTEM_WRITABLE),
        *_check_read_only(cache_dir, PostureRule.CACHE_WRITABLE),
        *_check_not_root(seen.uids),
        *_check_capabilities(seen.proc.status),
        *_check_routes(seen.proc),
    ]
    return violations


def require_sandbox(cache_dir: Path, inputs: PostureInputs | None = None) -> None:
    """Raise `SandboxViolation` naming every violated rule; return when confined."""
    violations = check_posture(cache_dir, inputs)
    if violations:
        raise SandboxViolation(violations)
    log.info("sandbox_posture_ok", cache=str(cache_dir))


def _check_read_only(path: Path, rule: PostureRule) -> Iterator[PostureViolation]:
    # The mount flag, not a write probe: a probe as a non-root user fails on a
    # read-write filesystem whenever the directory is not its own, which would hide
    # exactly the mistake this rule is for.
    try:
        flags = os.statvfs(path).f_flag
    except OSError as exc:
        yield PostureViolation(rule=rule, detail=f"cannot inspect {path}: {exc.strerror}")
        return
    if not flags & os.ST_RDONLY:
        yield PostureViolation(rule=rule, detail=f"{path} is on a read-write mount")


def _check_not_root(uids: Callable[[], tuple[int, int, int]]) -> Iterator[PostureViolation]:
    real, effective, saved = uids()
    if 0 in (real, effective, saved):
        yield PostureViolation(
            rule=PostureRule.RUNNING_AS_ROOT,
            detail=f"uid real={real} effective={effective} saved={saved}",
        )


def _check_capabilities(status: Path) -> Iterator[PostureViolation]:
    rule = PostureRule.CAPABILITIES_EFFECTIVE
    try:
        caps = parse_capabilities(status.read_text())
    except (OSError, ValueError) as exc:
        yield PostureViolation(rule=rule, detail=f"cannot read capabilities from {status}: {exc}")
        return
    # A permitted capability can be made effective by the process itself at any time.
    if caps.effective or caps.permitted:
        yield PostureViolation(
            rule=rule,
            detail=f"CapEff={caps.effective:016x} CapPrm={caps.permitted:016x}",
        )


def _check_routes(proc: ProcFiles) -> Iterator[PostureViolation]:
    rule = PostureRule.DEFAULT_ROUTE_PRESENT
    try:
        found = [f"ipv4 via {i}" for i in ipv4_default_routes(proc.route.read_text())]
    except OSError as exc:
        yield PostureViolation(rule=rule, detail=f"cannot read {proc.route}: {exc.strerror}")
        return
    try:
        found += [f"ipv6 via {i}" for i in ipv6_default_routes(proc.ipv6_route.read_text())]
    except FileNotFoundError:
        pass  # IPv6 is disabled in this namespace: there is no IPv6 route at all.
    except OSError as exc:
        yield PostureViolation(rule=rule, detail=f"cannot read {proc.ipv6_route}: {exc.strerror}")
        return
    if found:
        yield PostureViolation(rule=rule, detail=", ".join(found))


def main(argv: list[str] | None = None) -> int:
    """Print the posture violations of this process as JSON lines; exit 1 when any."""
    parser = argparse.ArgumentParser(prog="python -m sandbox.posture", description=main.__doc__)
    parser.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("REPO_READER_CACHE", "/cache"))
    )
    args = parser.parse_args(argv)
    violations = check_posture(args.cache)
    for violation in violations:
        print(json.dumps({"rule": str(violation.rule), "detail": violation.detail}))
    if not violations:
        print(json.dumps({"rule": None, "detail": "no violation"}))
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
