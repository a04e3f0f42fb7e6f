"""A service's ready file: written once it serves, removed when it stops; checked with its pid.

A process killed with SIGKILL cannot remove its file, so the file names the process: it
means "ready" only while that process is alive (`repo-reader ready FILE`).
"""

from __future__ import annotations

import os
from pathlib import Path


def write_ready(path: Path, service_id: str) -> None:
    """Announce readiness: the service id and this process's id."""
    path.write_text(f"{service_id} {os.getpid()}\n")


def is_ready(path: Path) -> bool:
    """Whether the file exists and the process it names is still alive."""
    try:
        fields = path.read_text().split()
    except OSError:
        return False
    if len(fields) < 2 or not fields[1].isdigit():
        return False
    try:
        os.kill(int(fields[1]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, under another user
    return True
