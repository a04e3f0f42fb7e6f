"""Tests of the Python client: typed failures, retries with the same request id, no responders."""

from __future__ import annotations

import asyncio
import json
import signal
import time

import pytest

from contracts import RepoReaderRequest
from tests.support.cache import MirroredCache, SourceFactory
from tests.support.workers import WorkerProcess
from worker.client import RepoReaderClient
from worker.errors import AccessDenied, NoAnswer, NoResponders, RequestTooBroad, Timeout
from worker.service.embedded_nats import EmbeddedNats


@pytest.fixture
def sample(cache: MirroredCache, make_source: SourceFactory) -> MirroredCache:
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    return cache


def test_no_worker_is_no_responders(nats_server: EmbeddedNats) -> None:
    """Calling with no worker subscribed fails at once with NoResponders, not a long timeout."""

    async def scenario() -> None:
        async with await RepoReaderClient.connect(nats_server.url, timeout=20) as client:
            started = time.monotonic()
            with pytest.raises(NoResponders):
                await client.research(RepoReaderRequest(query="router"))
            assert time.monotonic() - started < 10

    asyncio.run(scenario())


def test_error_reply_raises_its_exception(nats_server: EmbeddedNats, sample: MirroredCache) -> None:
    """A refused request raises the matching exception with the service's details."""

    async def scenario() -> None:
        async with await RepoReaderClient.connect(nats_server.url, json=True) as client:
            with pytest.raises(RequestTooBroad) as info:
                await client.research(RepoReaderRequest(query="of the"))
            assert info.value.details == {"field": "query"}

    with WorkerProcess(sample.root, nats_server.url):
        asyncio.run(scenario())


def test_timed_out_request_is_retried_with_the_same_id(
    nats_server: EmbeddedNats, sample: MirroredCache
) -> None:
    """A stalled worker costs a retry, not the answer; both attempts carry one request id."""
    with WorkerProcess(sample.root, nats_server.url) as worker:
        assert worker.process is not None
        worker.process.send_signal(signal.SIGSTOP)

        async def scenario() -> str:
            async with await RepoReaderClient.connect(
                nats_server.url, timeout=1.5, attempts=3
            ) as client:
                pending = asyncio.create_task(
                    client.research(RepoReaderRequest(query="router"), request_id="rid-7")
                )
                await asyncio.sleep(2.0)  # the first attempt has timed out by now
                assert worker.process is not None
                worker.process.send_signal(signal.SIGCONT)
                result = await pending
            assert result.artifacts
            return result.request_id

        assert asyncio.run(scenario()) == "rid-7"
    answered = [
        json.loads(line)
        for line in worker.logs().splitlines()
        if line.startswith("{") and '"request.answered"' in line
    ]
    assert len(answered) >= 2
    assert {a["request_id"] for a in answered} == {"rid-7"}


def test_exhausted_retries_raise_timeout(nats_server: EmbeddedNats, sample: MirroredCache) -> None:
    """When every attempt times out the client raises Timeout naming the request."""
    with WorkerProcess(sample.root, nats_server.url) as worker:
        assert worker.process is not None
        worker.process.send_signal(signal.SIGSTOP)

        async def scenario() -> None:
            async with await RepoReaderClient.connect(
                nats_server.url, timeout=0.5, attempts=2
            ) as client:
                with pytest.raises(Timeout) as info:
                    await client.research(RepoReaderRequest(query="router"), request_id="rid-8")
                assert info.value.details["request_id"] == "rid-8"

        try:
            asyncio.run(scenario())
        finally:
            worker.process.send_signal(signal.SIGCONT)


PERMISSIONS = """
authorization {
  users = [
    {user: synthesis, password: synthesis-pw,
     permissions: {publish: {deny: ["repo_reader.>"]}, subscribe: ["_INBOX.>"]}}
  ]
}
"""


def test_publish_refused_by_the_server_is_access_denied() -> None:
    """A user the NATS server forbids to publish research requests gets ACCESS_DENIED at once."""

    async def scenario(url: str) -> None:
        client = await RepoReaderClient.connect(
            url, user="synthesis", password="synthesis-pw", timeout=20
        )
        async with client:
            started = time.monotonic()
            with pytest.raises(AccessDenied) as info:
                await client.research(RepoReaderRequest(query="router"))
            assert time.monotonic() - started < 10
            assert info.value.details["subject"] == "repo_reader.v1.research"

    with EmbeddedNats(config_text=PERMISSIONS) as server:
        asyncio.run(scenario(server.url))


def test_a_timeout_answer_is_not_retried(nats_server: EmbeddedNats, sample: MirroredCache) -> None:
    """A worker's TIMEOUT answer is final: the client does not send the request again."""
    sample.set_config("[server]\nrequest_timeout_seconds = 0.000001\n")
    with WorkerProcess(sample.root, nats_server.url) as worker:

        async def scenario() -> None:
            async with await RepoReaderClient.connect(nats_server.url, attempts=3) as client:
                with pytest.raises(Timeout) as info:
                    await client.research(RepoReaderRequest(query="router"), request_id="rid-9")
                assert not isinstance(info.value, NoAnswer)

        asyncio.run(scenario())
    refused = [line for line in worker.logs().splitlines() if '"request.refused"' in line]
    assert len(refused) == 1
    assert '"code": "TIMEOUT"' in refused[0]
