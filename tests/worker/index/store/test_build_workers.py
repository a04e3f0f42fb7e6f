"""The build's worker processes: forked from a fork server, warm, started ahead of a build."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.processes import last_line_printed
from tests.worker.index.conftest import RepoFactory, handler_files
from worker.index import build_commit_index
from worker.index.analysis.grammars import PARSED_LANGUAGES, grammar_of
from worker.index.store import build as build_module
from worker.index.store import build_workers
from worker.index.store.build_workers import BuildPool
from worker.index.store.segment import Segment

REPO_ID = "acme/widgets"


@pytest.fixture(autouse=True)
def no_workers_left_started() -> Iterator[None]:
    """Each test starts and ends without workers started ahead."""
    build_workers.stop_build_workers()
    yield
    build_workers.stop_build_workers()


@contextmanager
def _pool_for_build(size: int) -> Iterator[BuildPool]:
    """The pool the next build of `size` workers would get, shut down after."""
    pool = build_workers.build_pool(size)
    try:
        yield pool
    finally:
        pool.executor.shutdown(wait=True)


def _segment_oids(cache: Path, commit: str) -> set[bytes]:
    base = cache / "index" / "acme" / "widgets"
    manifest = json.loads((base / "commits" / commit / "manifest.json").read_text())
    return {o for s in manifest["segments"] for o in Segment.open(base / "segments" / s).oids()}


@pytest.mark.usefixtures("two_workers_on_small_repos")
def test_workers_started_ahead_serve_the_next_build_once(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path, pools_handed: list[BuildPool]
) -> None:
    """The next build runs in the workers started ahead (all up before it asks), shuts them
    down, and indexes what one process does; the build after it starts its own."""
    files = handler_files(60)
    factory = make_repo("ahead")
    commit = factory.commit(files)
    build_workers.start_build_workers(2)
    build_commit_index(tmp_path / "ahead", REPO_ID, factory.repo, commit, workers=2)
    assert len(pools_handed) == 1
    assert len({started.result(timeout=60) for started in pools_handed[0].started}) == 2
    with pytest.raises(RuntimeError, match="shutdown"):
        pools_handed[0].executor.submit(os.getpid)
    build_commit_index(tmp_path / "later", REPO_ID, factory.repo, commit, workers=2)
    assert len(pools_handed) == 2
    assert pools_handed[1].started == ()
    build_commit_index(tmp_path / "alone", REPO_ID, factory.repo, commit)
    alone = _segment_oids(tmp_path / "alone", commit)
    assert _segment_oids(tmp_path / "ahead", commit) == alone
    assert _segment_oids(tmp_path / "later", commit) == alone


@pytest.mark.usefixtures("two_workers_on_small_repos")
def test_a_build_of_fewer_workers_runs_in_the_larger_pool_started_ahead(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path, pools_handed: list[BuildPool]
) -> None:
    """Workers started ahead serve a build that needs fewer of them (the rest stay idle),
    instead of a pool started for it, and it indexes what one process does."""
    factory = make_repo("fewer")
    commit = factory.commit(handler_files(60))
    build_workers.start_build_workers(3)
    build_commit_index(tmp_path / "ahead", REPO_ID, factory.repo, commit, workers=2)
    (pool,) = pools_handed
    assert pool.size == 3
    assert len({started.result(timeout=60) for started in pool.started}) == 3
    build_commit_index(tmp_path / "alone", REPO_ID, factory.repo, commit)
    assert _segment_oids(tmp_path / "ahead", commit) == _segment_oids(tmp_path / "alone", commit)


def test_starting_workers_twice_keeps_the_pool_started_first() -> None:
    """A second start with the same size keeps the waiting pool; a build of more workers
    gets a pool of its own and leaves the waiting one for the next build it fits."""
    build_workers.start_build_workers(2)
    build_workers.start_build_workers(2)
    other = build_workers.build_pool(3)
    first = build_workers.build_pool(2)
    second = build_workers.build_pool(2)
    try:
        assert other.started == ()
        assert len({started.result(timeout=60) for started in first.started}) == 2
        assert second.started == ()
    finally:
        for pool in (other, first, second):
            pool.executor.shutdown(wait=True)


def test_starting_workers_returns_before_they_are_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers start in the background: the caller goes on at once, and the next build waits
    for them to be up and gets them."""
    may_start = threading.Event()
    real_new_pool = build_workers._new_pool

    def slow_new_pool(size: int, *, start_now: bool) -> BuildPool:
        assert may_start.wait(60)
        return real_new_pool(size, start_now=start_now)

    monkeypatch.setattr(build_workers, "_new_pool", slow_new_pool)
    build_workers.start_build_workers(2)
    may_start.set()
    with _pool_for_build(2) as pool:
        assert len({started.result(timeout=60) for started in pool.started}) == 2


def test_waiting_for_workers_returns_once_every_one_is_up_and_warm() -> None:
    """After the wait, every worker of the pool started ahead is up, with every grammar
    loaded and the trigram pass compiled before its first blob."""
    build_workers.start_build_workers(2)
    build_workers.wait_for_build_workers()
    ahead = build_workers._ahead.pool
    assert ahead is not None
    assert all(started.done() for started in ahead.started)
    with _pool_for_build(2) as pool:
        assert len({started.result(timeout=60) for started in pool.started}) == 2
        loaded = [pool.executor.submit(_warm_state).result(timeout=60) for _ in range(2)]
    assert loaded == [(sorted(PARSED_LANGUAGES), True)] * 2


def _warm_state() -> tuple[list[str], bool]:
    from worker.index.analysis import grammars, trigram_kernels

    return sorted(grammars._grammars), bool(trigram_kernels.pairs.signatures)


_START_AND_EXIT = """
from worker.index.store import build_workers
build_workers.start_build_workers(2)
build_workers.wait_for_build_workers()
print("up")
"""


def _words_printed_by(program: str) -> list[str]:
    """What a fresh Python running `program` prints, split into words (it must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.split()


def test_a_program_that_never_builds_exits_with_its_workers_started() -> None:
    """Workers started ahead and never handed a build let the program that started them
    exit."""
    assert _words_printed_by(_START_AND_EXIT) == ["up"]


_START_AND_SAY_WHAT_IS_LOADED = """
from worker.index.analysis import postings_kernels, token_kernels
from worker.index.store import build_workers
build_workers.start_build_workers(2)
build_workers.wait_for_build_workers()
print(bool(token_kernels.word_runs.signatures), bool(postings_kernels.unpacked.signatures))
"""


def test_starting_workers_ahead_loads_what_this_process_runs_during_the_build() -> None:
    """Once the workers started ahead are up, the program that started them has loaded the
    compiled loops of its own share of the build (the path index)."""
    assert _words_printed_by(_START_AND_SAY_WHAT_IS_LOADED) == ["True", "True"]


def test_waiting_with_no_workers_started_returns_at_once() -> None:
    """Nothing started ahead: the wait returns, and the next build starts its own pool."""
    build_workers.wait_for_build_workers()
    with _pool_for_build(2) as pool:
        assert pool.started == ()


def test_one_worker_starts_no_pool_ahead() -> None:
    """Starting for a one-process build warms the fork server, but leaves no pool waiting."""
    build_workers.start_build_workers(1)
    with _pool_for_build(2) as pool:
        assert pool.started == ()


def test_build_workers_leave_inherited_objects_out_of_collection() -> None:
    """A build worker starts with what it inherited frozen: collections never walk it."""
    pool = build_workers.build_pool(1)
    with pool.executor:
        frozen = pool.executor.submit(gc.get_freeze_count).result()
    assert frozen > 10_000  # numpy, Arrow and the grammars' objects, preloaded


_POOL_THEN_STATUS = """
from tests.support.processes import SELF_STATUS, huge_pages_allowed
from worker.index.store import build_workers
if __name__ == "__main__":
    pool = build_workers.build_pool(1)
    with pool.executor:
        status = pool.executor.submit(SELF_STATUS.read_text).result()
    print(huge_pages_allowed(status), huge_pages_allowed(SELF_STATUS.read_text()))
"""


def test_build_workers_run_off_huge_pages_and_leave_their_parent_on() -> None:
    """A build worker's memory is never on transparent huge pages; its parent's may be."""
    assert last_line_printed(_POOL_THEN_STATUS) == ["False", "True"]


def test_warm_up_has_a_sample_for_every_parsed_language() -> None:
    """Each grammar has a sample path, and the path is parsed with that grammar."""
    paths = build_workers._SAMPLE_PATHS
    assert set(paths) == PARSED_LANGUAGES
    assert {language: grammar_of(path) for language, path in paths.items()} == {
        language: language for language in PARSED_LANGUAGES
    }


@pytest.mark.parametrize("main_name", ["bench.speed", "pytest.__main__", None])
def test_fork_server_preloads_what_the_main_module_imported(
    monkeypatch: pytest.MonkeyPatch, main_name: str | None
) -> None:
    """The fork server imports the modules the main module used, never the main module;
    objects in its globals are not asked anything."""
    main = types.ModuleType("__main__")
    main.__spec__ = types.SimpleNamespace(name=main_name) if main_name else None  # type: ignore[assignment]

    class Proxy:
        def __getattribute__(self, name: str) -> object:
            raise RuntimeError(f"asked for {name}")

    main.json = json  # type: ignore[attr-defined]
    main.Path = Path  # type: ignore[attr-defined]
    main.answer = 42  # type: ignore[attr-defined]
    main.proxy = Proxy()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "__main__", main)
    preload = build_workers.fork_server_preload()
    assert preload[0] == "__main__"
    assert {build_module.__name__, build_workers.__name__} <= set(preload)
    assert {"json", "pathlib"} <= set(preload)
    assert main_name not in preload
    assert "builtins" not in preload


def test_forked_workers_do_not_warn_about_the_main_module(tmp_path: Path) -> None:
    """A `-m` program whose workers come from the fork server prints no runpy warning."""
    program = (
        "import json\n"
        "from worker.index.store import build_workers\n"
        "from concurrent.futures import ProcessPoolExecutor\n"
        "if __name__ == '__main__':\n"
        "    context = build_workers.fork_server()\n"
        "    with ProcessPoolExecutor(1, mp_context=context) as pool:\n"
        "        print(pool.submit(json.dumps, [1]).result())\n"
    )
    (tmp_path / "forked_program").mkdir()
    (tmp_path / "forked_program" / "__init__.py").write_text("")
    (tmp_path / "forked_program" / "run.py").write_text(program)
    done = subprocess.run(
        [sys.executable, "-m", "forked_program.run"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip() == "[1]"
    assert "RuntimeWarning" not in done.stderr
