"""Keep a process that builds indexes off transparent huge pages, for good or for a block."""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import structlog

log = structlog.get_logger(__name__)

_PR_SET_THP_DISABLE: Final = 41
_PR_GET_THP_DISABLE: Final = 42
"""prctl(2)'s options that keep a process off transparent huge pages (Linux 3.15 on)."""


def _prctl(option: int, value: int) -> int:
    """prctl(option, value), or -1 off Linux."""
    if not sys.platform.startswith("linux"):
        return -1
    result = ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    if result < 0:
        log.debug("index.huge_pages_unchanged", option=option, errno=ctypes.get_errno())
    return int(result)


def keep_off_huge_pages() -> bool:
    """Have page faults fill this process's memory with small pages, never transparent huge
    ones, from now on; whether the kernel took it.

    For a process that builds indexes and answers no query (a build worker). NumPy asks for
    huge pages on every array of 4 MB or more, and Arrow's buffers were found on them too.
    A build's large arrays live for one batch, a segment or a graph, are written once or
    twice, then freed and allocated again: each huge page's first touch has the kernel zero
    2 MB, after compacting memory to find them when it must (the default for memory that
    asked). That costs more than the page-table walks huge pages save on memory touched so
    few times. A process serving queries keeps them: it reads its memory again and again.
    """
    return _prctl(_PR_SET_THP_DISABLE, 1) == 0


class _Blocks:
    """The blocks running `huge_pages_off` in this process: the first takes the process off
    huge pages, the last puts it back as the first found it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.restore = False

    def enter(self) -> None:
        with self.lock:
            if not self.running:
                self.restore = _prctl(_PR_GET_THP_DISABLE, 0) == 0 and keep_off_huge_pages()
            self.running += 1

    def leave(self) -> None:
        with self.lock:
            self.running -= 1
            if not self.running and self.restore:
                _prctl(_PR_SET_THP_DISABLE, 0)


_blocks = _Blocks()


@contextmanager
def huge_pages_off() -> Iterator[None]:
    """Keep this process off transparent huge pages while the block runs (see
    `keep_off_huge_pages`): for a build in a process that has other work too (the mirror's).

    The setting is the process's: other threads' faults meanwhile take small pages too.
    Blocks may overlap; the process is back as it was once the last has left.
    """
    _blocks.enter()
    try:
        yield
    finally:
        _blocks.leave()
