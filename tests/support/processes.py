"""Child Python processes for what a process's own setting changes, and what the kernel
says of a process."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.support.workers import PROJECT_ROOT

SELF_STATUS = Path("/proc/self/status")


def huge_pages_allowed(status: str) -> bool:
    """Whether a process may be on transparent huge pages, from its /proc status text."""
    return status.split("THP_enabled:", 1)[1].split(maxsplit=1)[0] == "1"


def faults_filling_again(n_bytes: int) -> int:
    """The page faults of filling an array of `n_bytes` just after one of that size was
    filled and freed, in this process taken off huge pages (so each fault is one page)."""
    from worker.index.store.huge_pages import keep_off_huge_pages

    keep_off_huge_pages()
    np.ones(n_bytes, dtype=np.uint8)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    np.ones(n_bytes, dtype=np.uint8)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def last_line_printed(script: str, *args: str) -> list[str]:
    """The words of the last line `script` prints, run as `python -c` with `args` in a fresh
    child process (the project importable); a failure shows the child's stderr."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1].split()
