"""Tests of worker processes: a shared queue group, draining on SIGTERM, structured logs."""

from __future__ import annotations

import asyncio
import json

import nats
import pytest

from contracts import RepoReaderRequest
from contracts.subjects import WORKER_SUBJECTS
from tests.support.cache import MirroredCache, SourceFactory
from tests.support.workers import WorkerProcess
from worker.capabilities.table import Worker
from worker.client import RepoReaderClient
from worker.service.embedded_nats import EmbeddedNats

QUERIES = [
    "register a route",
    "load the configuration",
    "dispatch a request",
    "configuration error",
]


@pytest.fixture
def sample(cache: MirroredCache, make_source: SourceFactory) -> MirroredCache:
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    return cache


async def ask_many(url: str, count: int) -> list[int]:
    async with await RepoReaderClient.connect(url, timeout=60) as client:
        results = await asyncio.gather(
            *(
                client.research(RepoReaderRequest(query=QUERIES[i % len(QUERIES)]))
                for i in range(count)
            )
        )
    return [len(r.artifacts) for r in results]


async def requests_per_instance(url: str) -> dict[str, int]:
    nc = await nats.connect(url)
    inbox = nc.new_inbox()
    subscription = await nc.subscribe(inbox)
    await nc.publish("$SRV.STATS.repo_reader", b"", reply=inbox)
    counts: dict[str, int] = {}
    try:
        while True:
            stats = json.loads((await subscription.next_msg(timeout=1)).data)
            counts[stats["id"]] = sum(e["num_requests"] for e in stats["endpoints"])
    except nats.errors.TimeoutError:
        pass
    await nc.close()
    return counts


def test_two_workers_share_the_load(nats_server: EmbeddedNats, sample: MirroredCache) -> None:
    """Two workers in one queue group both answer, and every request is answered once."""
    with WorkerProcess(sample.root, nats_server.url), WorkerProcess(sample.root, nats_server.url):
        answered = asyncio.run(ask_many(nats_server.url, 60))
        counts = asyncio.run(requests_per_instance(nats_server.url))
    assert len(answered) == 60
    assert all(n > 0 for n in answered)
    assert len(counts) == 2
    assert sum(counts.values()) == 60
    assert min(counts.values()) > 0


def test_sigterm_drains_in_flight_requests(
    nats_server: EmbeddedNats, sample: MirroredCache
) -> None:
    """SIGTERM finishes every request already received, then exits cleanly."""
    worker = WorkerProcess(sample.root, nats_server.url, concurrency=1).start()

    async def scenario() -> list[int]:
        pending = asyncio.create_task(ask_many(nats_server.url, 30))
        await asyncio.sleep(0.3)  # let the requests reach the worker
        worker.terminate()
        return await pending

    try:
        answered = asyncio.run(scenario())
        assert worker.wait(timeout=60) == 0
    finally:
        worker.stop()
    assert len(answered) == 30
    assert all(n > 0 for n in answered)
    logs = worker.logs()
    assert '"event": "worker.draining"' in logs
    assert '"event": "worker.drained"' in logs
    assert not worker.ready_file.exists()


def test_logs_are_json_with_request_facts(nats_server: EmbeddedNats, sample: MirroredCache) -> None:
    """Each answer is logged as JSON with request id, subject, repos, counts and latency in UTC."""
    with WorkerProcess(sample.root, nats_server.url) as worker:
        asyncio.run(ask_many(nats_server.url, 1))
    events = [json.loads(line) for line in worker.logs().splitlines() if line.startswith("{")]
    (answered,) = [e for e in events if e["event"] == "request.answered"]
    assert answered["subject"] == "repo_reader.v1.research"
    assert answered["repos"] == ["acme/sample"]
    assert answered["artifacts"] > 0
    assert len(answered["request_id"]) == 32
    assert answered["latency_ms"] >= 0
    assert answered["timestamp"].endswith("Z")


def test_the_table_serves_every_worker_subject_once(cache: MirroredCache) -> None:
    """A worker serves each worker subject once, and no mirror subject."""
    served = [c.subject for c in Worker(cache.config, cache.root).capabilities()]
    assert sorted(served) == sorted(WORKER_SUBJECTS)
