"""Tests of the worker on the wire: codecs, batches, errors, service discovery, request ids."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from collections.abc import Iterator
from typing import Any

import msgspec
import nats
import pytest

from contracts import ErrorCode, RepoReaderRequest, RepoReaderResponse, ResultLimits, Subject
from contracts.research import FileConstraints
from tests.support.cache import MirroredCache, SourceFactory
from tests.support.gitrepos import MIT_LICENSE, Content
from tests.support.workers import WorkerProcess
from worker.client import RepoReaderClient
from worker.errors import CapabilityDisabled, InternalError, InvalidRequest
from worker.service.embedded_nats import EmbeddedNats


@pytest.fixture
def worker(
    nats_server: EmbeddedNats, cache: MirroredCache, make_source: SourceFactory
) -> Iterator[WorkerProcess]:
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    with WorkerProcess(cache.root, nats_server.url) as process:
        yield process


async def raw_request(
    url: str,
    subject: str,
    data: bytes,
    headers: dict[str, str] | None = None,
    *,
    timeout: float = 30,
) -> Any:
    nc = await nats.connect(url)
    try:
        return await nc.request(subject, data, timeout=timeout, headers=headers)
    finally:
        await nc.close()


def test_client_gets_artifacts_over_msgpack(worker: WorkerProcess) -> None:
    """The default MessagePack client receives resolved commits and artifacts."""

    async def scenario() -> None:
        async with await RepoReaderClient.connect(worker.nats_url) as client:
            result = await client.research(RepoReaderRequest(query="register a route handler"))
        assert result.resolved[0].repo == "acme/sample"
        assert result.artifacts[0].path == "sample/routing.py"

    asyncio.run(scenario())


@pytest.mark.parametrize("headers", [{"Content-Type": "application/json"}, None])
def test_json_requests_get_json_replies(
    worker: WorkerProcess, headers: dict[str, str] | None
) -> None:
    """JSON in (by header, or bare as `nats req` sends it) means JSON out."""
    reply = asyncio.run(
        raw_request(
            worker.nats_url, Subject.RESEARCH, b'{"query": "load the configuration file"}', headers
        )
    )
    assert reply.headers["Content-Type"] == "application/json"
    document = json.loads(reply.data)
    assert document["last"] is True
    assert document["artifacts"][0]["path"] == "sample/config.py"
    assert len(document["resolved"][0]["commit"]) == 40


def test_invalid_request_is_one_structured_error(worker: WorkerProcess) -> None:
    """A misspelt constraint gets a single INVALID_REQUEST message naming the field."""
    reply = asyncio.run(
        raw_request(
            worker.nats_url,
            Subject.RESEARCH,
            b'{"query": "x", "file_constraints": {"max_chars": 5}}',
            {"Content-Type": "application/json", "Repo-Reader-Request-Id": "req-42"},
        )
    )
    assert reply.headers["Nats-Service-Error-Code"] == "INVALID_REQUEST"
    assert reply.headers["Repo-Reader-Request-Id"] == "req-42"
    response = msgspec.json.decode(reply.data, type=RepoReaderResponse)
    assert response.request_id == "req-42"
    assert response.artifacts == ()
    assert response.last
    (error,) = response.errors
    assert (error.code, error.details["field"]) == (
        ErrorCode.INVALID_REQUEST,
        "file_constraints.max_chars",
    )

    async def typed() -> None:
        async with await RepoReaderClient.connect(worker.nats_url) as client:
            with pytest.raises(InvalidRequest):
                await client.call(Subject.RESEARCH, _Misspelt(query="x"), RepoReaderResponse)

    asyncio.run(typed())


@pytest.mark.parametrize(
    ("data", "headers"),
    [
        (b'{"repo":"\xff"}', {"Content-Type": "application/json"}),
        (bytes.fromhex("81 a4 72 65 70 6f a1 ff"), None),
    ],
    ids=["json", "msgpack"],
)
def test_invalid_utf8_is_an_invalid_request(
    worker: WorkerProcess, data: bytes, headers: dict[str, str] | None
) -> None:
    """A request string that is not UTF-8 is INVALID_REQUEST; nothing is logged as a failure."""
    reply = asyncio.run(raw_request(worker.nats_url, Subject.REPO_STATUS, data, headers))
    assert reply.headers["Nats-Service-Error-Code"] == "INVALID_REQUEST"
    assert "UTF-8" in reply.headers["Nats-Service-Error"]
    assert '"request.failed"' not in worker.logs()


def test_a_bad_request_id_is_refused_under_a_fresh_one(worker: WorkerProcess) -> None:
    """An over-long or odd request id gets INVALID_REQUEST under a new id; the worker carries on."""
    status = b'{"repo": "acme/sample"}'

    async def ask(request_id: str) -> Any:
        headers = {"Content-Type": "application/json", "Repo-Reader-Request-Id": request_id}
        return await raw_request(worker.nats_url, Subject.REPO_STATUS, status, headers, timeout=15)

    async def scenario() -> None:
        for bad in ("x" * 600_000, "x" * 129, "two words", "semi;colon", "naïve"):
            reply = await ask(bad)
            assert reply.headers["Nats-Service-Error-Code"] == "INVALID_REQUEST"
            fresh = reply.headers["Repo-Reader-Request-Id"]
            assert re.fullmatch(r"[0-9a-f]{32}", fresh)
            error = json.loads(reply.data)
            assert error["request_id"] == fresh
            assert error["errors"][0]["details"]["header"] == "Repo-Reader-Request-Id"
            assert bad not in reply.data.decode()
        longest = "A-z.0_9:" * 16
        reply = await ask(longest)
        assert "Nats-Service-Error-Code" not in reply.headers
        assert reply.headers["Repo-Reader-Request-Id"] == longest
        assert json.loads(reply.data)["request_id"] == longest

    asyncio.run(scenario())
    logs = worker.logs()
    assert "x" * 129 not in logs
    assert "two words" not in logs


def test_an_error_echoing_a_huge_request_still_reaches_the_caller(worker: WorkerProcess) -> None:
    """An unknown field named with 400 KB is refused in one message under the max payload."""
    name = "f" * 400_000
    document = b'{"query": "router", "' + name.encode() + b'": 1}'

    async def scenario() -> None:
        nc = await nats.connect(worker.nats_url)
        try:
            reply = await nc.request(
                Subject.RESEARCH,
                document,
                timeout=15,
                headers={"Content-Type": "application/json"},
            )
            assert reply.headers["Nats-Service-Error-Code"] == "INVALID_REQUEST"
            assert len(reply.data) <= nc.max_payload
            (error,) = json.loads(reply.data)["errors"]
            assert error["details"]["truncated"] is True
            again = await nc.request(Subject.RESEARCH, b'{"query": "router"}', timeout=15)
            assert json.loads(again.data)["artifacts"]
        finally:
            await nc.close()

    asyncio.run(scenario())


class _Misspelt(msgspec.Struct, kw_only=True):
    query: str
    max_result: int = 3


def test_large_answers_arrive_in_batches_under_max_payload(
    cache: MirroredCache, make_source: SourceFactory
) -> None:
    """An answer bigger than the server's max payload arrives as ordered batches that each fit."""
    files: dict[str, Content] = {"LICENSE": MIT_LICENSE}
    for i in range(40):
        body = "\n".join(
            f"    widget_{i}_{j} = make_widget({j})  # widget gear sprocket" for j in range(20)
        )
        files[f"widgets/w{i:02}.py"] = f"def build_widgets_{i}():\n{body}\n    return widgets\n"
    source, _ = make_source("widgets", files)
    cache.add("acme/widgets", source)
    max_payload = 8192
    with EmbeddedNats(max_payload=max_payload) as server, WorkerProcess(cache.root, server.url):
        request = RepoReaderRequest(
            query="build widget gear sprocket",
            file_constraints=FileConstraints(max_excerpt_chars=1500, max_excerpts_per_repo=40),
            result_limits=ResultLimits(max_total_excerpts=40),
        )

        async def scenario() -> None:
            nc = await nats.connect(server.url)
            inbox = nc.new_inbox()
            subscription = await nc.subscribe(inbox)
            await nc.publish(Subject.RESEARCH, msgspec.msgpack.encode(request), reply=inbox)
            batches = []
            while not batches or not batches[-1].last:
                message = await subscription.next_msg(timeout=30)
                assert len(message.data) <= max_payload
                batches.append(msgspec.msgpack.decode(message.data, type=RepoReaderResponse))
            await nc.close()
            assert len(batches) > 2
            assert [b.batch for b in batches] == list(range(len(batches)))
            async with await RepoReaderClient.connect(server.url) as client:
                result = await client.research(request)
            assert result.artifacts == tuple(a for b in batches for a in b.artifacts)
            assert len(result.artifacts) == 40

        asyncio.run(scenario())


def test_service_discovery(worker: WorkerProcess) -> None:
    """$SRV.PING, INFO and STATS answer like any NATS micro service, counting errors by code."""

    async def scenario() -> None:
        nc = await nats.connect(worker.nats_url)
        await nc.request(Subject.RESEARCH, b'{"query": "the"}', timeout=30)
        ping = json.loads((await nc.request("$SRV.PING.repo_reader", b"", timeout=5)).data)
        info = json.loads((await nc.request("$SRV.INFO.repo_reader", b"", timeout=5)).data)
        stats = json.loads(
            (await nc.request(f"$SRV.STATS.repo_reader.{ping['id']}", b"", timeout=5)).data
        )
        await nc.close()
        assert ping["name"] == "repo_reader"
        assert {e["subject"] for e in info["endpoints"]} >= {Subject.RESEARCH.value}
        assert all(e["queue_group"] == "repo_reader.workers" for e in info["endpoints"])
        research = [e for e in stats["endpoints"] if e["subject"] == Subject.RESEARCH.value]
        assert sum(e["num_requests"] for e in research) == 1
        assert research[0]["data"]["errors_by_code"] == {"REQUEST_TOO_BROAD": 1}

    asyncio.run(scenario())


def test_disabled_capability(
    nats_server: EmbeddedNats, cache: MirroredCache, make_source: SourceFactory
) -> None:
    """A capability turned off in the config answers CAPABILITY_DISABLED."""
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    cache.set_config("[capabilities.research]\nenabled = false\n")

    async def scenario() -> None:
        async with await RepoReaderClient.connect(nats_server.url) as client:
            with pytest.raises(CapabilityDisabled):
                await client.research(RepoReaderRequest(query="router"))

    with WorkerProcess(cache.root, nats_server.url):
        asyncio.run(scenario())


def test_corrupt_cache_is_internal_and_leaks_nothing(
    worker: WorkerProcess, cache: MirroredCache
) -> None:
    """Missing git objects give INTERNAL with no paths or exception text; the worker carries on."""
    objects = cache.root / "repos" / "acme" / "sample.git" / "objects"
    shutil.rmtree(objects)
    objects.mkdir()

    async def scenario() -> None:
        async with await RepoReaderClient.connect(worker.nats_url) as client:
            for _ in range(2):
                with pytest.raises(InternalError) as info:
                    await client.research(RepoReaderRequest(query="router"))
                assert str(cache.root) not in info.value.message
                assert set(info.value.details) == {"exception"}

    asyncio.run(scenario())
    assert '"event": "request.failed"' in worker.logs()


def test_a_worker_whose_connection_is_gone_for_good_exits_and_is_not_ready(
    cache: MirroredCache, make_source: SourceFactory
) -> None:
    """A worker that cannot get its NATS connection back exits non-zero, its ready file gone."""
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    cache.set_config("[server]\nreconnect_seconds = 1\n")
    with EmbeddedNats() as server, WorkerProcess(cache.root, server.url) as worker:
        assert worker.ready_file.exists()
        server.close()
        assert worker.wait(timeout=60) != 0
        assert not worker.ready_file.exists()
    assert '"worker.connection_lost"' in worker.logs()
