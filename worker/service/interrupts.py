"""What interrupts do to a service process: the first asks it to stop cleanly, the next ends it.

A drain can take as long as the requests in flight (or the connection's flush timeout when
the NATS server stalls); a user who presses Ctrl-C again does not want to wait for it, nor a
traceback of every task cut short. So the second SIGINT or SIGTERM ends the process at once,
with the shell's status for the signal (130 for SIGINT), and one log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from types import FrameType, TracebackType
from typing import Final, NoReturn, Self, TypeVar

import structlog

log = structlog.get_logger(__name__)

T = TypeVar("T")

STOP_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)


def exit_at_once(signum: int) -> NoReturn:
    """End the process now, quietly, with status 128 + `signum` (an index build's workers
    follow: `build_workers` has them exit with the process that started them).

    `os._exit`: unwinding would cancel tasks and join threads that may be the very thing
    the user no longer wants to wait for, each printing its own traceback.
    """
    log.warning("process.interrupted_again", signal=signal.Signals(signum).name)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(128 + signum)


def _exit_at_once_handler(signum: int, _frame: FrameType | None) -> None:
    exit_at_once(signum)


_interrupted: list[int] = []
"""The stop signals this process received (by `StopOnSignals` or `second_interrupt_exits`)."""


def _first_interrupt(signum: int, _frame: FrameType | None) -> None:
    _interrupted.append(signum)
    signal.signal(signum, _exit_at_once_handler)
    raise KeyboardInterrupt


def second_interrupt_exits() -> None:
    """From now on, the first SIGINT raises KeyboardInterrupt as usual, and the next one ends
    the process at once (`exit_at_once`) instead of interrupting its clean-up.

    For a command line's main thread; a service's loop handles signals its own way while it
    runs (`StopOnSignals`).
    """
    signal.signal(signal.SIGINT, _first_interrupt)


def interrupted() -> None:
    """Note that the process was interrupted (a KeyboardInterrupt caught, whoever raised it):
    the next SIGINT ends it at once."""
    _interrupted.append(signal.SIGINT)
    signal.signal(signal.SIGINT, _exit_at_once_handler)


class StopOnSignals:
    """While entered, the first SIGINT or SIGTERM calls `on_first`, and a second (the second
    the process got) `exit_at_once`.

    Once one arrived, a later one ends the process at once even after this is left (while
    the process finishes: its executor threads are joined, its loop closed); else the loop's
    default handlers are back.
    """

    def __init__(self, on_first: Callable[[], object]) -> None:
        self._on_first = on_first
        self.received = False
        self._loop: asyncio.AbstractEventLoop | None = None

    def __enter__(self) -> Self:
        self._loop = asyncio.get_running_loop()
        for signum in STOP_SIGNALS:
            self._loop.add_signal_handler(signum, self._received, signum)
        return self

    def _received(self, signum: int) -> None:
        if _interrupted:
            exit_at_once(signum)
        _interrupted.append(signum)
        self.received = True
        log.info("process.stopping", signal=signal.Signals(signum).name, again="exits at once")
        self._on_first()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._loop is not None
        for signum in STOP_SIGNALS:
            self._loop.remove_signal_handler(signum)
            if _interrupted:
                signal.signal(signum, _exit_at_once_handler)


async def interruptible(work: Awaitable[T]) -> T:
    """`work`'s result; a SIGINT or SIGTERM cancels it, and once it has cleaned up raises
    KeyboardInterrupt (a second signal, while it cleans up, ends the process at once)."""
    current = asyncio.current_task()
    assert current is not None
    with StopOnSignals(current.cancel) as signals:
        try:
            return await work
        except asyncio.CancelledError:
            if not signals.received:
                raise
    current.uncancel()
    raise KeyboardInterrupt
