"""Give freed memory back to the system between the phases of a build, or keep it.

Arrow's allocator and glibc's heap keep memory a phase freed; the next phase, whose arrays
come from the other allocator or are larger, faults in pages the system never handed out
before, and a new page costs far more than one handed back and out again (several times
more on a virtual machine). Handing freed memory back first lets the next phase reuse it,
and keeps a build's peak resident set lower. A process that only builds and then exits
keeps what it freed instead (`keep_freed_memory`): measured, that is the faster of the two,
but for the two largest steps of a build (the packed postings and the segment's files),
which its heap's pieces cannot hold: the build hands back just before them
(`hand_back_freed_memory`). A build worker started ahead of its build also faults in heap
pages while it waits (`warm_heap`), so that the build finds them ready.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, Final

import numpy as np
import pyarrow as pa


def _libc(name: str, *argtypes: type[Any]) -> Callable[..., int] | None:
    """A function of the C library (None where it has none, as off glibc)."""
    library = ctypes.util.find_library("c")
    if library is None:
        return None
    try:
        function = getattr(ctypes.CDLL(library), name)
    except (OSError, AttributeError):
        return None
    function.argtypes = list(argtypes)
    function.restype = ctypes.c_int
    found: Callable[..., int] = function
    return found


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    return _libc("malloc_trim", ctypes.c_size_t)


@cache
def _mallopt() -> Callable[[int, int], int] | None:
    return _libc("mallopt", ctypes.c_int, ctypes.c_int)


_hand_back = True


_M_TRIM_THRESHOLD: Final = -1
_M_MMAP_MAX: Final = -4
WARM_STEP_BYTES: Final = 8 << 20
"""Heap faulted in at a time by `warm_heap`: how late it may notice it is to stop."""
WARM_POLL_SECONDS: Final = 0.01
"""How often `warm_heap`, caught up with its target, looks whether it rose."""
_CGROUP_ROOT: Final = Path("/sys/fs/cgroup")


def keep_freed_memory() -> None:
    """Make `release_freed_memory` do nothing in this process from now on, have the C heap
    keep what is freed too, and Arrow allocate from that heap.

    For a process that builds and exits (a build worker of the mirror): pages it hands back
    mid-build it faults in again at once, and two workers doing so together ran 2% slower
    than holding on to them (a tenth higher peak). glibc would still map each large array
    afresh and unmap it when freed: with no mapping per allocation and no trimming, a freed
    array's pages serve the next ones (fewer page faults, a build 2% faster). Arrow's own
    allocator (mimalloc) hands back what is freed a second later and faults its next arrays
    into fresh huge pages: 100 MB handed back and faulted in again in a one-process Django
    build. From the C heap, Arrow's arrays reuse what numpy's freed, and the reverse.
    """
    global _hand_back  # noqa: PLW0603 - a per-process switch, set once at process start
    _hand_back = False
    mallopt = _mallopt()
    if mallopt is not None:
        mallopt(_M_MMAP_MAX, 0)
        mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)
    pa.set_memory_pool(pa.system_memory_pool())


def warm_heap(
    target: Callable[[], int],
    stopped: Callable[[float], bool],
    *,
    warmed: Callable[[int], object] = lambda step: None,
    idle_seconds: float = math.inf,
) -> int:
    """In a process that keeps freed memory: fault in heap until `target()` bytes are in, a
    target that may rise meanwhile, until `stopped(timeout)` (a wait of at most `timeout`
    seconds for the word to stop) says to stop, or the target has not risen for
    `idle_seconds` once reached; then free it, the heap keeping it for what comes next.
    Tells `warmed` of each step. Returns the bytes faulted in (0 in a process that hands
    freed memory back, or off glibc).

    For a process with time to spare before its work (a build worker started ahead): a page
    the system hands out for the first time costs far more than one a process holds already,
    most of all on a virtual machine, whose host may back it only then (here, 1 to 3 ms a
    megabyte). Faulted in ahead, the workers of a two-worker Django build spent a sixth less
    time in the kernel, and the build took 2% less time (medians of 45 alternating runs).
    """
    if _hand_back or _mallopt() is None:
        return 0
    held: list[np.ndarray[Any, np.dtype[np.uint8]]] = []
    total = 0
    caught_up = math.inf
    while True:
        goal = target()
        if total >= goal:
            now = time.monotonic()
            caught_up = min(caught_up, now)
            if now - caught_up >= idle_seconds or stopped(WARM_POLL_SECONDS):
                break
            continue
        caught_up = math.inf
        if stopped(0):
            break
        block = np.empty(min(WARM_STEP_BYTES, goal - total), dtype=np.uint8)
        block.fill(1)
        held.append(block)
        total += len(block)
        warmed(len(block))
    # Freed together, the blocks join the free space at the top of the heap.
    held.clear()
    return total


def available_memory(
    meminfo: Path = Path("/proc/meminfo"),
    cgroups: Path = Path("/proc/self/cgroup"),
    cgroup_root: Path = _CGROUP_ROOT,
) -> int | None:
    """Bytes this process could still fault in: the system's available memory, or what is
    left under its control group's limit if that is less (None when neither is known).

    The control group is read as version 2 (`memory.max`, `memory.current`) or version 1
    (`memory.limit_in_bytes`, `memory.usage_in_bytes`), at the process's own path or, in a
    container that sees its group as the root, at the root.
    """
    found = [
        free
        for free in (_meminfo_available(meminfo), _cgroup_headroom(cgroups, cgroup_root))
        if free is not None
    ]
    return min(found) if found else None


def _meminfo_available(meminfo: Path) -> int | None:
    try:
        text = meminfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == "MemAvailable":
            number, *unit = value.split()
            return int(number) << 10 if unit == ["kB"] else int(number)
    return None


def _cgroup_headroom(cgroups: Path, root: Path) -> int | None:
    try:
        lines = cgroups.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            files, base = ("memory.max", "memory.current"), root
        elif "memory" in controllers.split(","):
            files, base = ("memory.limit_in_bytes", "memory.usage_in_bytes"), root / "memory"
        else:
            continue
        for directory in (base / path.lstrip("/"), base):
            limit, usage = (_read_number(directory / name) for name in files)
            if limit is not None and usage is not None:
                return max(0, limit - usage)
    return None


def _read_number(path: Path) -> int | None:
    """The integer a control group file holds; None for "max" (no limit) or no such file."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def release_freed_memory() -> None:
    """Return the memory Arrow's pool and the C heap hold unused to the system."""
    if _hand_back:
        hand_back_freed_memory()


def hand_back_freed_memory() -> None:
    """Return what Arrow's pool and the C heap hold unused, even in a process that keeps it.

    For just before one large allocation: the pages handed back serve it at once, where
    growing the heap would fault in pages the system never handed out before.
    """
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def flush_and_uncache(path: Path) -> None:
    """Flush a just-written file to disk and drop its pages from the page cache.

    Pages a write leaves in the cache are large folios, and a reader's mapping faults in a
    whole folio per touch: a query that reads a few bytes of each of a few hundred terms
    would map tens of megabytes. Read back on demand (readers map with MADV_RANDOM), pages
    come in one at a time, so a worker's resident set holds what it touched. Also makes the
    file durable before the rename that publishes it.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
