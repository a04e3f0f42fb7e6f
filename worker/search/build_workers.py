"""The processes a build analyses in: forked from a warm fork server, and started ahead.

A build with more than one worker analyses in a pool of processes forked from a fork server
that has imported the analysis and warmed it up (`worker.search.prewarm`), so each worker
starts with numpy, Arrow and the grammars loaded. `start_build_workers` starts the server,
and also the pool of the next build, for a caller with something slow to do first (a
mirror's fetch): forking two workers and handing them their first task took 30 ms of a
one-second Django build. Started ahead, each worker also faults in heap while it waits
(`worker.search.memory.warm_heap`), as much as the build is expected to grow by
(`expect_build`, as the fetch brings data), until its build is handed out. A pool serves one
build: its workers keep the memory they free (`worker.search.memory.keep_freed_memory`), so
they exit after it.
"""

from __future__ import annotations

import gc
import importlib
import multiprocessing.context
import multiprocessing.forkserver
import os
import sys
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Barrier, Event
from types import BuiltinFunctionType, FunctionType, ModuleType
from typing import Final, NamedTuple

import structlog

from worker.search.memory import available_memory, keep_freed_memory, warm_heap

log = structlog.get_logger(__name__)

_shared: dict[str, Synchronized[int]] = {}
"""In a build worker: the shared index of the next blob no worker has taken."""
_gate: list[Barrier] = []
"""In a build worker: the barrier every worker of its pool passes when started ahead."""
_handed_out: list[Event] = []
"""In a build worker: set once its pool is handed to a build (or shut down unused)."""
_warming: list[Warming] = []
"""In a build worker: how far its pool is in getting ready (see `Warming`)."""
WARM_BYTES_PER_WORKER: Final = 3 << 29
"""Heap each worker of a pool started ahead faults in while it waits, at most: more than one
of two grows by in a Linux build (1.0 to 1.3 GB)."""
WARM_SHARE_OF_AVAILABLE: Final = 0.5
"""The most of the memory available that a pool warms in all: the build needs the rest."""
WARM_BYTES_PER_PACK_BYTE: Final = 12
"""Heap the workers of a build grow by in all, per byte of pack the repository's fetch
brought, about: Linux's 235 MB pack, 2.3 to 2.6 GB for two workers; Django's 13 MB, 120 to
180 MB."""


def warm_budget(workers: int) -> int:
    """The most heap a pool of `workers` started ahead faults in between them while it
    waits: WARM_BYTES_PER_WORKER each, at most WARM_SHARE_OF_AVAILABLE of the memory
    available (of the machine, or of the control group if it has less)."""
    budget = workers * WARM_BYTES_PER_WORKER
    available = available_memory()
    if available is not None:
        budget = min(budget, int(available * WARM_SHARE_OF_AVAILABLE))
    return budget


@dataclass(frozen=True, slots=True)
class Warming:
    """How far the workers of a pool started ahead are, shared with them: how many are up,
    the heap each is to fault in while it waits (a target that may rise), and what all of
    them have faulted in so far."""

    up: Synchronized[int]
    target: Synchronized[int]
    warmed: Synchronized[int]

    def raise_target(self, per_worker: int) -> None:
        """Have each worker warm at least `per_worker` bytes."""
        with self.target.get_lock():
            self.target.value = max(self.target.value, per_worker)


class WorkerStarted(NamedTuple):
    """A worker started ahead, up: its process id, and the heap it faulted in while waiting."""

    pid: int
    warmed_bytes: int


@dataclass(frozen=True, slots=True)
class BuildPool:
    """The worker processes of one build."""

    executor: ProcessPoolExecutor
    size: int
    started: tuple[Future[WorkerStarted], ...]
    """Started ahead: each worker, once the pool is handed out and it stopped warming (else
    none)."""
    handed_out: Event
    """Set when the pool is handed to its build: workers started ahead stop warming."""
    warming: Warming

    def wait_until_warm(self, timeout: float) -> None:
        """Wait until the workers started ahead have warmed the heap they were asked to (or
        stopped: one that cannot warm stops at once)."""
        warming, deadline = self.warming, time.monotonic() + timeout
        while not all(started.done() for started in self.started):
            if warming.up.value == self.size and (
                warming.warmed.value >= warming.target.value * self.size
            ):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"build workers not warm after {timeout} s")
            time.sleep(_WARM_POLL_SECONDS)

    def hand_out(self) -> BuildPool:
        """This pool, its workers told to stop warming their heap."""
        self.handed_out.set()
        return self


class _Ahead:
    """The pool started ahead for the next build, the thread starting it (until it is), and
    the heap its workers are to warm each."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pool: BuildPool | None = None
        self.starting: threading.Thread | None = None
        self.expected_pack_bytes = 0
        """What `expect_build` was told since the last pool was taken."""

    def wait_for_start(self) -> None:
        """Wait until the workers being started ahead (if any) are started."""
        starting = self.starting
        if starting is not None:
            starting.join()

    def take(self, size: int | None) -> BuildPool | None:
        """The pool started ahead, if any (of `size` workers, if given); no longer ahead."""
        self.wait_for_start()
        with self.lock:
            pool = self.pool
            if pool is None or (size is not None and pool.size != size):
                return None
            self.pool = None
            self.expected_pack_bytes = 0
            return pool


_ahead = _Ahead()
_START_TIMEOUT: Final = 60.0
_WARM_POLL_SECONDS: Final = 0.01
WARM_IDLE_SECONDS: Final = 2.0
"""How long the workers started ahead wait for their heap target to rise once they reached
it: a fetch passes on what it received every megabyte."""


def next_item() -> Synchronized[int]:
    """In a build worker: the shared index of the next blob no worker has taken."""
    return _shared["next"]


def _start_worker(
    counter: Synchronized[int], gate: Barrier, handed_out: Event, warming: Warming
) -> None:
    """Pool initializer: the index of the next blob no worker has taken, the pool's start
    barrier, hand-out flag and warming; memory kept; what the fork server made left out of
    garbage collection.

    A full collection walks every object the worker inherited (numpy, Arrow, the grammars)
    and writes to each, so the worker copies their pages: 30 to 55 ms of a one-second build,
    in the first list the worker made. Frozen, they are never walked.
    """
    _shared["next"] = counter
    _gate[:] = [gate]
    _handed_out[:] = [handed_out]
    _warming[:] = [warming]
    keep_freed_memory()
    gc.freeze()


def _pass_gate() -> WorkerStarted:
    """Wait until every worker of the pool is here, then fault in heap up to the pool's
    target (as it rises) until the pool is handed out, or the target stayed for
    WARM_IDLE_SECONDS.

    A task that waited on for the pool to be handed out would keep a program that started
    workers and then never built from exiting: the executor waits for its tasks at exit.
    Ended, the task leaves what the worker warmed in its heap all the same."""
    _gate[0].wait(_START_TIMEOUT)
    warming = _warming[0]
    with warming.up.get_lock():
        warming.up.value += 1

    def warmed(step: int) -> None:
        with warming.warmed.get_lock():
            warming.warmed.value += step

    target = warming.target
    warmed_bytes = warm_heap(
        lambda: target.value, _handed_out[0].wait, warmed=warmed, idle_seconds=WARM_IDLE_SECONDS
    )
    return WorkerStarted(os.getpid(), warmed_bytes)


def _new_pool(size: int, *, start_now: bool, warm_per_worker: int = 0) -> BuildPool:
    context = fork_server()
    counter = context.Value("q", 0)
    gate = context.Barrier(size)
    handed_out = context.Event()
    warming = Warming(
        context.Value("q", 0), context.Value("q", warm_per_worker), context.Value("q", 0)
    )
    executor = ProcessPoolExecutor(
        size,
        mp_context=context,
        initializer=_start_worker,
        initargs=(counter, gate, handed_out, warming),
    )
    started: tuple[Future[WorkerStarted], ...] = ()
    if start_now:
        # A pool starts a process for a task only when none is idle: each of these holds
        # its worker until all are up, so every worker starts now.
        started = tuple(executor.submit(_pass_gate) for _ in range(size))
    return BuildPool(executor, size, started, handed_out, warming)


def start_build_workers(workers: int, *, warm_bytes: int = 0) -> None:
    """Start the fork server, and in the background this process's analysis and the next
    build's `workers` processes, so that all are ready when the build is.

    For a caller that will build after something slow (a fetch): the server's imports and
    the workers' start overlap that instead of the build. Forking waits for the server's
    imports (a second or more), hence the thread. Once up, the workers fault in `warm_bytes`
    of heap between them, more as `expect_build` asks, until the build takes them. This
    process warms up too: it works out the commit's path index while the workers analyse
    (15 ms more when cold).
    """
    fork_server()
    with _ahead.lock:
        if _ahead.starting is not None:
            return
        _ahead.starting = threading.Thread(
            target=_start_ahead,
            args=(workers, warm_bytes),
            name="start-build-workers",
            daemon=True,
        )
        _ahead.starting.start()


def expect_build(pack_bytes: int) -> None:
    """Have the workers started ahead warm as much heap as a build of a repository whose
    fetch brought `pack_bytes` of pack grows by (WARM_BYTES_PER_PACK_BYTE a byte), within
    `warm_budget`; for a fetch to call as data comes in (only ever raises the target).

    Pages a process faults in for the first time are the costliest part of a large build's
    growth: two-worker Linux builds spent 3.7 to 4.2 s of each worker's 25 in the kernel,
    and 0.4 to 1.0 s with the heap warmed. Warming more than the build needs costs too: the
    heap a pool's workers free on exit goes back to a virtual machine's host over the next
    seconds, on this machine's cores (Django builds right after a pool that had warmed 3 GB
    took 0.97 s at best, 0.85 s after one that had warmed 128 MB).
    """
    with _ahead.lock:
        _ahead.expected_pack_bytes = max(_ahead.expected_pack_bytes, pack_bytes)
        pool = _ahead.pool
    if pool is not None:
        pool.warming.raise_target(_warm_per_worker(pool.size, _ahead.expected_pack_bytes))


def _warm_per_worker(workers: int, pack_bytes: int) -> int:
    if not pack_bytes:
        return 0
    return min(warm_budget(workers), WARM_BYTES_PER_PACK_BYTE * pack_bytes) // workers


def _start_ahead(workers: int, warm_bytes: int) -> None:
    stale = None
    try:
        importlib.import_module("worker.search.prewarm")
        current = _ahead.pool
        if workers >= 2 and (current is None or current.size != workers):
            pool = _new_pool(workers, start_now=True, warm_per_worker=warm_bytes // workers)
            with _ahead.lock:
                stale, _ahead.pool = _ahead.pool, pool
                expected = _ahead.expected_pack_bytes
            pool.warming.raise_target(_warm_per_worker(workers, expected))
    except Exception as exc:
        log.warning("search.build_workers.not_started", workers=workers, error=repr(exc))
    finally:
        with _ahead.lock:
            _ahead.starting = None
    if stale is not None:
        stale.hand_out().executor.shutdown(wait=False)


def wait_for_build_workers() -> None:
    """Wait until the workers `start_build_workers` started ahead (if any) are all up and
    have warmed the heap they were asked to.

    For a caller that times a build alone, as if it had had something slow to do first (a
    benchmark repeating the mirror's cold build): the build then finds them ready.
    """
    _ahead.wait_for_start()
    with _ahead.lock:
        pool = _ahead.pool
    if pool is not None:
        pool.wait_until_warm(_START_TIMEOUT)


def stop_build_workers() -> None:
    """Shut down the workers started ahead, if any (for a process done building)."""
    stale = _ahead.take(None)
    if stale is not None:
        stale.hand_out().executor.shutdown(wait=True, cancel_futures=True)


def build_pool(workers: int) -> BuildPool:
    """A pool of `workers` processes for one build, the one started ahead if it fits (its
    workers stop warming); the caller shuts it down."""
    ahead = _ahead.take(workers)
    if ahead is not None:
        return ahead.hand_out()
    return _new_pool(workers, start_now=False)


def fork_server() -> multiprocessing.context.ForkServerContext:
    """The fork server context the build's workers come from, started now.

    The fork server imports the analysis once; each worker forked from it starts warm
    (numpy, Arrow, the grammars) instead of importing them again. Started before the tree is
    walked, it imports while the parent works.
    """
    context = get_context("forkserver")
    context.set_forkserver_preload(fork_server_preload())
    multiprocessing.forkserver.ensure_running()
    return context


def fork_server_preload() -> list[str]:
    """The modules the fork server imports before it forks: the build, those the program's
    main module imported, and `worker.search.prewarm` (what every worker would do first).

    Every worker runs its parent's main module again (multiprocessing makes it `__mp_main__`).
    With the modules it imports already in the server, only its own body runs again. Without,
    `python -m bench.speed` had each worker import the bench harness first, 80 ms of a
    one-second Django build. The main module itself is left out: runpy warns when a module
    it is asked to run is imported already, and a package's `__main__` would run on import.
    """
    main = sys.modules.get("__main__")
    used = _modules_used_by(main) if main is not None else []
    return ["__main__", *used, "worker.search.build", __name__, "worker.search.prewarm"]


def _modules_used_by(module: ModuleType) -> list[str]:
    """The imported modules that a module's globals are, or whose classes and functions they
    hold (its own dunder names aside)."""
    names = set()
    for key, value in list(vars(module).items()):
        if key.startswith("__"):
            continue
        # By type alone: isinstance may ask an object for its __class__, which could run anything.
        kind = type(value)
        if issubclass(kind, ModuleType):
            name = value.__name__
        elif issubclass(kind, (type, FunctionType, BuiltinFunctionType)):
            name = value.__module__
        else:
            continue
        if isinstance(name, str) and name in sys.modules and not name.startswith("__"):
            names.add(name)
    names.discard(module.__name__)
    names.discard(getattr(module.__spec__, "name", None))
    names.discard("builtins")
    return sorted(names)
