"""Running workers follow the mirror: repositories added or removed later, without a restart."""

from __future__ import annotations

import asyncio
import time

from contracts.repo import RepoStatusRequest, RepoStatusResponse
from contracts.subjects import Subject
from tests.support.cache import MirroredCache, SourceFactory
from tests.support.workers import WorkerProcess
from worker.client import RepoReaderClient
from worker.errors import AccessDenied
from worker.service.embedded_nats import EmbeddedNats

FOLLOW_WITHIN_SECONDS = 5.0


async def _status(url: str, repo: str) -> str:
    """`ok`, or the error code the worker answers a status request for `repo` with."""
    async with await RepoReaderClient.connect(url, timeout=10) as client:
        try:
            await client.call(Subject.REPO_STATUS, RepoStatusRequest(repo=repo), RepoStatusResponse)
        except AccessDenied as refused:
            return str(refused.code)
    return "ok"


def answer_within(url: str, repo: str, wanted: str) -> float:
    """How long until the worker answers `wanted` for `repo` (fails after the bound)."""
    started = time.monotonic()
    while True:
        if asyncio.run(_status(url, repo)) == wanted:
            return time.monotonic() - started
        assert time.monotonic() - started < FOLLOW_WITHIN_SECONDS, f"{repo} is not {wanted}"
        time.sleep(0.1)


def test_a_repository_added_then_removed_is_served_then_refused(
    cache: MirroredCache, make_source: SourceFactory
) -> None:
    """`mirror add` after the worker started: served within 5 s; removed from the config:
    refused within 5 s; the worker never restarted."""
    first, _ = make_source("first")
    cache.add("acme/first", first)
    with EmbeddedNats() as server, WorkerProcess(cache.root, server.url) as worker:
        assert asyncio.run(_status(server.url, "acme/later")) == "ACCESS_DENIED"
        later, _ = make_source("later")
        cache.add("acme/later", later)
        answer_within(server.url, "acme/later", "ok")
        config = cache.config_file.read_text()
        start = config.index('[[repos]]\nname = "acme/later"')
        cache.config_file.write_text(config[:start])
        answer_within(server.url, "acme/later", "ACCESS_DENIED")
        assert asyncio.run(_status(server.url, "acme/first")) == "ok"
        assert worker.process is not None
        assert worker.process.poll() is None
    assert '"repos": ["acme/first"]' in worker.logs()  # worker.ready says what it serves
