"""The processes a build analyses in: forked from a fork server, and started ahead.

A build with more than one worker analyses in a pool of processes forked from a fork server
that has imported the analysis, so each worker starts with numpy, Arrow, numba and the
grammars' modules loaded; each then warms up (`warm_up`: the parsers, the compiled trigram
pass) before its first task. `start_build_workers` starts the server and the pool of the
next build, for a caller with something slow to do first (a mirror's fetch), and warms the
caller's own share of the build (its path index), so that all of this overlaps the fetch. A
pool serves one build.
"""

from __future__ import annotations

import gc
import multiprocessing
import multiprocessing.context
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import signal
import sys
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Barrier
from types import BuiltinFunctionType, FunctionType, ModuleType
from typing import Final

import structlog

from worker.index.analysis.grammars import PARSED_LANGUAGES, grammar_of
from worker.index.analysis.segment_builder import BlobSource, SegmentBuilder
from worker.index.store.freed_memory import keep_freed_memory
from worker.index.store.huge_pages import keep_off_huge_pages
from worker.languages import EXTENSIONS
from worker.logs import configure_logging, configured_level
from worker.repos.layout import read_mirrored_objects_unhashed

log = structlog.get_logger(__name__)

_shared: dict[str, Synchronized[int]] = {}
"""In a build worker: the shared index of the next blob no worker has taken."""
_gate: list[Barrier] = []
"""In a build worker: the barrier every worker of its pool passes when started ahead."""
_START_TIMEOUT: Final = 60.0
_SAMPLE: Final = b"def handleRequest(self, request_id):\n    return parse_url({self.base_url})\n"
"""Parsed under every grammar: with braces, as C text must have to be parsed at all."""


def _sample_paths() -> dict[str, str]:
    """A file name each parsed grammar reads, the first the language table gives it."""
    paths: dict[str, str] = {}
    for extension in (e for extensions in EXTENSIONS.values() for e in extensions):
        grammar = grammar_of(f"sample{extension}")
        if grammar is not None:
            paths.setdefault(grammar, f"sample{extension}")
    return paths


_SAMPLE_PATHS: Final = _sample_paths()


def warm_up() -> None:
    """Analyse one small blob under each parsed language (the results are thrown away).

    Loads every grammar and compiles its definition query (20 ms for C++ alone), makes a
    parser for each, and loads the compiled trigram pass: what a worker would otherwise do
    on its first blobs, while the build waits for it.
    """
    builder = SegmentBuilder(1 << 20)
    builder.add(
        BlobSource(bytes([i]) * 20, _SAMPLE_PATHS[grammar], _SAMPLE)
        for i, grammar in enumerate(sorted(PARSED_LANGUAGES))
    )
    builder.tables()


def warm_up_paths() -> None:
    """Work out the path index of two sample paths (thrown away).

    Loads the compiled loops that the process running a build uses while its workers
    analyse (it works out the commit's path index meanwhile): loaded then, they would take
    that time from the cores the workers analyse on.
    """
    from worker.index.store.commit_view import path_terms

    path_terms([(path, bytes(20)) for path in _SAMPLE_PATHS.values()][:2])


@dataclass(frozen=True, slots=True)
class BuildPool:
    """The worker processes of one build."""

    executor: ProcessPoolExecutor
    size: int
    started: tuple[Future[int], ...]
    """Started ahead: each worker's process id once it is up and warm (else none)."""


class _Ahead:
    """The pool started ahead for the next build, and the thread starting it (until it is)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pool: BuildPool | None = None
        self.starting: threading.Thread | None = None

    def wait_for_start(self) -> None:
        """Wait until the workers being started ahead (if any) are started."""
        starting = self.starting
        if starting is not None:
            starting.join()

    def take(self, size: int | None) -> BuildPool | None:
        """The pool started ahead, if any (of at least `size` workers, if given); no longer
        ahead."""
        self.wait_for_start()
        with self.lock:
            pool = self.pool
            if pool is None or (size is not None and pool.size < size):
                return None
            self.pool = None
            return pool


_ahead = _Ahead()


def next_item() -> Synchronized[int]:
    """In a build worker: the shared index of the next blob no worker has taken."""
    return _shared["next"]


def _start_worker(counter: Synchronized[int], gate: Barrier, log_level: str | None) -> None:
    """Pool initializer: logging set up as in the process that started the pool (when it
    was); off transparent huge pages, keeping the memory it frees; the index of the next
    blob no worker has taken and the pool's start barrier; blobs read without hashing them
    again; warmed up; what the fork server made left out of garbage collection.

    A full collection walks every object the worker inherited (numpy, Arrow, the grammars)
    and writes to each, so the worker would copy their pages. Frozen, they are never walked.
    """
    if log_level is not None:
        configure_logging(log_level)
    keep_off_huge_pages()
    keep_freed_memory()
    _exit_with_parent()
    read_mirrored_objects_unhashed()
    _shared["next"] = counter
    _gate[:] = [gate]
    warm_up()
    gc.freeze()


def _exit_with_parent() -> None:
    """In a build worker: exit as soon as the process that started it has gone (killed, or
    interrupted twice), instead of waiting for its tasks for ever."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()  # returns once the parent's end of the process's pipe is closed
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _pass_gate() -> int:
    """Wait until every worker of the pool is up (and warm); its process id."""
    _gate[0].wait(_START_TIMEOUT)
    return os.getpid()


def _new_pool(size: int, *, start_now: bool) -> BuildPool:
    context = fork_server()
    counter = context.Value("q", 0)
    gate = context.Barrier(size)
    executor = ProcessPoolExecutor(
        size,
        mp_context=context,
        initializer=_start_worker,
        initargs=(counter, gate, configured_level()),
    )
    started: tuple[Future[int], ...] = ()
    if start_now:
        # A pool starts a process for a task only when none is idle: each of these holds
        # its worker until all are up, so every worker starts now.
        started = tuple(executor.submit(_pass_gate) for _ in range(size))
    return BuildPool(executor, size, started)


def start_build_workers(workers: int) -> None:
    """Start the fork server, and in the background the next build's `workers` processes,
    so that they are up and warm when the build is; warm this process's share too
    (`warm_up_paths`).

    For a caller that will build after something slow (a fetch): the server's imports and
    the workers' start overlap that instead of the build. Forking waits for the server's
    imports (a second or more), hence the thread.
    """
    fork_server()
    with _ahead.lock:
        if _ahead.starting is not None:
            return
        _ahead.starting = threading.Thread(
            target=_start_ahead, args=(workers,), name="start-build-workers", daemon=True
        )
        _ahead.starting.start()


def _start_ahead(workers: int) -> None:
    stale = None
    try:
        stale = _pool_replaced(workers)
        _paths_warmed()
    finally:
        with _ahead.lock:
            _ahead.starting = None
    if stale is not None:
        stale.executor.shutdown(wait=False)


def _pool_replaced(workers: int) -> BuildPool | None:
    """Start a pool of `workers` ahead unless one of that size is; the pool it replaces."""
    try:
        current = _ahead.pool
        if workers >= 2 and (current is None or current.size != workers):
            pool = _new_pool(workers, start_now=True)
            with _ahead.lock:
                stale, _ahead.pool = _ahead.pool, pool
            return stale
    except Exception as exc:
        log.warning("search.build_workers.not_started", workers=workers, error=repr(exc))
    return None


def _paths_warmed() -> None:
    """`warm_up_paths`, a failure logged: the build then loads what it needs itself."""
    try:
        warm_up_paths()
    except Exception as exc:
        log.warning("search.build_workers.not_warmed", error=repr(exc))


def wait_for_build_workers() -> None:
    """Wait until the workers `start_build_workers` started ahead (if any) are all up.

    For a caller that times a build alone, as if it had had something slow to do first (a
    benchmark repeating the mirror's cold build): the build then finds them ready.
    """
    _ahead.wait_for_start()
    with _ahead.lock:
        pool = _ahead.pool
    if pool is not None:
        for started in pool.started:
            started.result(_START_TIMEOUT)


def stop_build_workers() -> None:
    """Shut down the workers started ahead, if any (for a process done building)."""
    stale = _ahead.take(None)
    if stale is not None:
        stale.executor.shutdown(wait=True, cancel_futures=True)


def build_pool(workers: int) -> BuildPool:
    """A pool of `workers` processes for one build, the one started ahead if it has as many
    or more; the caller shuts it down.

    A build with less work than the workers started ahead runs in some of them: the others
    stay idle, already started, which costs less than starting a pool of the right size.
    """
    ahead = _ahead.take(workers)
    if ahead is not None:
        return ahead
    return _new_pool(workers, start_now=False)


def fork_server() -> multiprocessing.context.ForkServerContext:
    """The fork server context the build's workers come from, started now.

    The fork server imports the analysis once; each worker forked from it starts with those
    modules loaded instead of importing them again. Started before the tree is walked, it
    imports while the parent works.
    """
    context = get_context("forkserver")
    context.set_forkserver_preload(fork_server_preload())
    # The server, and every worker it forks, with SIGINT blocked (as the resource tracker
    # is): a Ctrl-C reaches the whole process group, and this process decides what it does
    # (it shuts its pool down) rather than each of them printing a KeyboardInterrupt. The
    # tracker first: starting it unblocks SIGINT.
    multiprocessing.resource_tracker.ensure_running()
    unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
    return context


def fork_server_preload() -> list[str]:
    """The modules the fork server imports before it forks: the build, and those the
    program's main module imported.

    Every worker runs its parent's main module again (multiprocessing makes it `__mp_main__`).
    With the modules it imports already in the server, only its own body runs again. Without,
    `python -m bench.speed` had each worker import the bench harness first, 80 ms of a
    one-second Django build. The main module itself is left out: runpy warns when a module
    it is asked to run is imported already, and a package's `__main__` would run on import.
    """
    main = sys.modules.get("__main__")
    used = _modules_used_by(main) if main is not None else []
    return ["__main__", *used, "worker.index.store.build", __name__]


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
