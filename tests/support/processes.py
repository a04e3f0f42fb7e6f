"""What the kernel says of a process."""

from __future__ import annotations

from pathlib import Path

SELF_STATUS = Path("/proc/self/status")


def huge_pages_allowed(status: str) -> bool:
    """Whether a process may be on transparent huge pages, from its /proc status text."""
    return status.split("THP_enabled:", 1)[1].split(maxsplit=1)[0] == "1"
