"""Short runs of bench.chaos and bench.fuzz: the harnesses work and their targets hold."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.workers import PROJECT_ROOT


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.run(
        [sys.executable, "-m", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def test_chaos_loses_nothing_while_a_worker_is_killed() -> None:
    """Durable requests while workers are SIGKILLed: none lost, none answered twice."""
    result = bench("bench.chaos", "--requests", "2000", "--kill-every", "1", "--concurrency", "20")
    assert result.returncode == 0, result.stdout + result.stderr
    table = dict(line.split("  ", 1) for line in result.stdout.splitlines() if "  " in line.strip())
    assert table["lost"].split()[0] == "0"
    assert table["answered more than once (caller)"].split()[0] == "0"


def test_fuzzed_requests_are_never_internal_nor_unanswered() -> None:
    """Hostile requests in both encodings: every one answered, none INTERNAL."""
    result = bench("bench.fuzz", "--requests", "400", "--seed", "11")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "INTERNAL or undecodable     0" in result.stdout
