"""Tests of `repo-reader mirror serve`: admin requests over NATS and scheduled syncs."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import msgspec
import pygit2
import pytest

from contracts import RebuildIndexRequest, RebuildIndexResponse, Subject, SyncRequest, SyncResponse
from tests.support.cache import MirroredCache, SourceFactory
from tests.support.gitrepos import commit
from tests.support.workers import MirrorProcess
from worker.client import RepoReaderClient
from worker.errors import AccessDenied, InternalError, RevisionNotFound
from worker.repos.layout import CacheLayout
from worker.service.embedded_nats import EmbeddedNats

T = TypeVar("T", bound=msgspec.Struct)


@pytest.fixture
def source(make_source: SourceFactory) -> tuple[Path, str]:
    return make_source("sample")


@pytest.fixture
def mirror_process(
    nats_server: EmbeddedNats, cache: MirroredCache, source: tuple[Path, str]
) -> Iterator[MirrorProcess]:
    cache.add("acme/sample", source[0])
    process = MirrorProcess(cache.root, nats_server.url, interval=0)
    yield process
    process.stop()


async def call(url: str, subject: Subject, request: msgspec.Struct, response_type: type[T]) -> T:
    async with await RepoReaderClient.connect(url, timeout=60, attempts=1) as client:
        (response,) = await client.call(subject, request, response_type)
        return response


def test_admin_sync_fetches_new_commits(
    nats_server: EmbeddedNats,
    mirror_process: MirrorProcess,
    cache: MirroredCache,
    source: tuple[Path, str],
) -> None:
    """admin.sync brings a new upstream commit into the cache and reports the move."""
    path, first = source
    newer = commit(pygit2.Repository(str(path)), {"sample/more.py": "def more():\n    pass\n"})
    response = asyncio.run(call(nats_server.url, Subject.ADMIN_SYNC, SyncRequest(), SyncResponse))
    (result,) = response.results
    assert (result.repo, result.previous_head, result.head, result.index_seconds > 0) == (
        "acme/sample",
        first,
        newer,
        True,
    )
    state = CacheLayout(cache.root).read_state("acme/sample")
    assert state is not None
    assert state.head == newer


def test_a_repository_registered_while_the_mirror_serves_is_synced_on_request(
    nats_server: EmbeddedNats,
    mirror_process: MirrorProcess,
    cache: MirroredCache,
    make_source: SourceFactory,
) -> None:
    """`mirror add` from another process is followed: admin.sync of the new name works."""
    path, head = make_source("other")
    cache.mirror.add("acme/other", str(path))
    request = SyncRequest(repos=("acme/other",))
    response = asyncio.run(call(nats_server.url, Subject.ADMIN_SYNC, request, SyncResponse))
    ((repo, synced),) = [(r.repo, r.head) for r in response.results]
    assert (repo, synced) == ("acme/other", head)


def test_admin_rebuild_index(
    nats_server: EmbeddedNats, mirror_process: MirrorProcess, source: tuple[Path, str]
) -> None:
    """admin.rebuild_index re-indexes the head (answering seed 003's stats), or a pinned
    revision; unknown ones are refused."""
    _, head = source
    done = asyncio.run(
        call(
            nats_server.url,
            Subject.ADMIN_REBUILD_INDEX,
            RebuildIndexRequest(repo="acme/sample"),
            RebuildIndexResponse,
        )
    )
    assert done.commit == head
    assert done.stats is not None
    assert done.stats.files_indexed == 4  # LICENSE, README.md and two modules
    assert done.stats.entities_found.classes == 2  # Router, ConfigError
    assert done.stats.entities_found.functions == 4
    assert done.stats.edges_created.contain > 0
    assert done.stats.build_time_ms > 0
    with pytest.raises(RevisionNotFound):
        asyncio.run(
            call(
                nats_server.url,
                Subject.ADMIN_REBUILD_INDEX,
                RebuildIndexRequest(repo="acme/sample", revision="nope"),
                RebuildIndexResponse,
            )
        )
    with pytest.raises(AccessDenied):
        asyncio.run(
            call(
                nats_server.url,
                Subject.ADMIN_SYNC,
                SyncRequest(repos=("acme/other",)),
                SyncResponse,
            )
        )


def test_a_sync_that_fails_answers_internal_with_what_failed(
    nats_server: EmbeddedNats,
    mirror_process: MirrorProcess,
    cache: MirroredCache,
    source: tuple[Path, str],
) -> None:
    """admin.sync of a repository whose upstream is gone answers INTERNAL naming the
    repository and the cause; the published state stays."""
    path, head = source
    path.rename(path.with_name("moved"))
    with pytest.raises(InternalError, match=r"^acme/sample: cannot fetch .*"):
        asyncio.run(call(nats_server.url, Subject.ADMIN_SYNC, SyncRequest(), SyncResponse))
    state = CacheLayout(cache.root).read_state("acme/sample")
    assert state is not None
    assert state.head == head


def test_scheduled_syncs_follow_upstream(
    nats_server: EmbeddedNats, cache: MirroredCache, source: tuple[Path, str]
) -> None:
    """With an interval, the mirror picks up upstream commits on its own."""
    path, _ = source
    cache.add("acme/sample", path)
    process = MirrorProcess(cache.root, nats_server.url, interval=0.5)
    try:
        newer = commit(pygit2.Repository(str(path)), {"sample/later.py": "x = 1\n"})
        deadline = time.monotonic() + 30
        while (
            state := CacheLayout(cache.root).read_state("acme/sample")
        ) is None or state.head != newer:
            assert time.monotonic() < deadline, process.log.read_text()
            time.sleep(0.2)
    finally:
        assert process.stop() == 0
    events = [
        json.loads(line)["event"]
        for line in process.log.read_text().splitlines()
        if line.startswith("{")
    ]
    assert "mirror.synced" in events
    assert "worker.drained" in events


def test_a_failure_on_one_repository_does_not_stop_the_schedule(
    nats_server: EmbeddedNats, cache: MirroredCache, make_source: SourceFactory
) -> None:
    """Documents that cannot be written for one repository (its docs ref is blocked by a
    file) are logged as that repository's failure; the others keep being synced."""
    broken, _ = make_source("broken")
    kept, _ = make_source("kept")
    cache.add("acme/broken", broken)
    cache.add("acme/kept", kept)
    cache.set_config('[docs]\nscheduled = ["repo_map"]\n')
    (CacheLayout(cache.root).repo_dir("acme/broken") / "refs" / "repo-reader").write_text("x\n")
    process = MirrorProcess(cache.root, nats_server.url, interval=0.5)
    try:
        newer = commit(pygit2.Repository(str(kept)), {"sample/later.py": "x = 1\n"})
        deadline = time.monotonic() + 30
        while (state := CacheLayout(cache.root).read_state("acme/kept")) is None or (
            state.head != newer
        ):
            assert time.monotonic() < deadline, process.log.read_text()
            time.sleep(0.2)
    finally:
        assert process.stop() == 0
    failures = [
        json.loads(line)
        for line in process.log.read_text().splitlines()
        if line.startswith("{") and '"mirror.scheduled_sync_failed"' in line
    ]
    assert failures
    assert {f["repo"] for f in failures} == {"acme/broken"}
