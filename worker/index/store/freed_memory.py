"""Keep the memory a build worker frees in its heap, for its next segment."""

from __future__ import annotations

import ctypes
import sys
from typing import Final

import structlog

log = structlog.get_logger(__name__)

_M_TRIM_THRESHOLD: Final = -1
_M_MMAP_THRESHOLD: Final = -3
"""mallopt(3)'s parameters: how much free memory at the heap's top is handed back to the
kernel, and from what size an allocation is mapped on its own."""
_NEVER: Final = 2**31 - 1
"""The largest value mallopt takes (an int): no segment's array comes near it."""


def keep_freed_memory() -> bool:
    """Have malloc keep what this process frees for its next allocations, never handing it
    back to the kernel; whether the C library took it (glibc does).

    For a build worker, whose memory is at most one segment's and which lives for one
    build. A segment's analysis allocates arrays of up to a few hundred MB, frees them once
    its tables are written, and the next segment allocates the same again. glibc maps an
    allocation above its mmap threshold (which it raises as such blocks are freed, but never
    above 32 MB) on its own, unmaps it when it is freed, and hands the top of its heap back
    beyond a trim threshold: so each segment faulted its large arrays in again, a page at a
    time, each page zeroed by the kernel.
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None)
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return False
    took = bool(mallopt(_M_MMAP_THRESHOLD, _NEVER)) and bool(mallopt(_M_TRIM_THRESHOLD, _NEVER))
    if not took:
        log.debug("index.freed_memory_not_kept")
    return took
