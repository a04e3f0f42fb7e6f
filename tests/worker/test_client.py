"""Tests of the Python client: typed failures, retries with the same request id, no responders."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import signal
import subprocess
import sys
import time

import msgspec
import nats
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.aio.msg import Msg

from contracts import RepoReaderRequest
from contracts.admin import SyncRequest, SyncResponse
from contracts.subjects import Subject
from tests.support.cache import MirroredCache, SourceFactory
from tests.support.workers import WorkerProcess
from worker.client import NO_RESPONDERS_MAX_BACKOFF, RepoReaderClient, shown_path
from worker.errors import (
    AccessDenied,
    NoAnswer,
    NoResponders,
    RequestTooBroad,
    Timeout,
    UnknownFailure,
)
from worker.service.embedded_nats import EmbeddedNats


@pytest.fixture
def sample(cache: MirroredCache, make_source: SourceFactory) -> MirroredCache:
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    return cache


def test_no_worker_is_no_responders_once_the_deadline_is_near(nats_server: EmbeddedNats) -> None:
    """With no worker subscribed, the client asks again with backoff, then raises NoResponders."""

    async def scenario() -> None:
        async with await RepoReaderClient.connect(nats_server.url, timeout=3) as client:
            started = time.monotonic()
            with pytest.raises(NoResponders) as info:
                await client.research(RepoReaderRequest(query="router"))
            elapsed = time.monotonic() - started
        assert info.value.details["tries"] >= 4
        assert 3 - NO_RESPONDERS_MAX_BACKOFF <= elapsed < 5

    asyncio.run(scenario())


def test_no_worker_is_told_within_the_responder_wait_of_a_long_call(
    nats_server: EmbeddedNats,
) -> None:
    """A call with a long timeout learns that nothing serves it after `responder_wait`."""

    async def scenario() -> None:
        async with await RepoReaderClient.connect(
            nats_server.url, timeout=600, responder_wait=2
        ) as client:
            started = time.monotonic()
            with pytest.raises(NoResponders, match="no worker serves"):
                await client.research(RepoReaderRequest(query="router"))
            elapsed = time.monotonic() - started
            with pytest.raises(NoResponders, match=r"no mirror service .* serves"):
                await client.call(Subject.ADMIN_SYNC, SyncRequest(), SyncResponse)
        assert 2 - NO_RESPONDERS_MAX_BACKOFF <= elapsed < 60

    asyncio.run(scenario())


def test_a_worker_subscribing_after_the_request_still_answers_it(
    nats_server: EmbeddedNats, sample: MirroredCache
) -> None:
    """A request sent while no worker serves (a NATS restart, say) is answered once one does."""

    async def scenario() -> None:
        async with await RepoReaderClient.connect(nats_server.url, timeout=60) as client:
            pending = asyncio.create_task(client.research(RepoReaderRequest(query="router")))
            worker = WorkerProcess(sample.root, nats_server.url)
            try:
                await asyncio.to_thread(worker.start)
                result = await pending
            finally:
                worker.stop()
        assert result.artifacts

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


# The synthesis user as sandbox/nats.conf has it: its own subjects and its own inbox only.
PERMISSIONS = """
authorization {
  users = [
    {user: synthesis, password: synthesis-pw,
     permissions: {publish: ["synthesis.>"], subscribe: ["synthesis.>", "_INBOX_synthesis.>"]}}
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


# One user that may request and read only its own inbox prefix, one that answers.
ISOLATED_INBOXES = """
authorization {
    users: [
        {
            user: alice
            password: alicepw
            permissions: {
                publish: ["repo_reader.v1.>"]
                subscribe: ["_INBOX_alice.>"]
            }
        }
        {
            user: responder
            password: responderpw
            permissions: { subscribe: ["repo_reader.v1.>"], allow_responses: true }
        }
    ]
}
"""


@pytest.mark.parametrize(
    ("options", "prefix"),
    [({}, "_INBOX_alice"), ({"inbox_prefix": "_INBOX_alice.gateway"}, "_INBOX_alice.gateway")],
)
def test_replies_come_to_the_users_own_inbox_prefix(options: dict[str, str], prefix: str) -> None:
    """A user allowed only its own inbox prefix gets its answers there (default or given)."""

    async def scenario() -> list[str]:
        reply_subjects: list[str] = []
        with EmbeddedNats(config_text=ISOLATED_INBOXES) as server:
            responder = await nats.connect(server.url, user="responder", password="responderpw")

            async def answer(message: Msg) -> None:
                reply_subjects.append(message.reply)
                reply = {"request_id": message.headers["Repo-Reader-Request-Id"], "last": True}
                await message.respond(msgspec.msgpack.encode(reply))

            await responder.subscribe(Subject.RESEARCH.value, cb=answer)
            await responder.flush()
            try:
                async with await RepoReaderClient.connect(
                    server.url, user="alice", password="alicepw", timeout=20, **options
                ) as client:
                    result = await client.research(RepoReaderRequest(query="router"))
            finally:
                await responder.close()
        assert result.artifacts == ()
        return reply_subjects

    (reply_subject,) = asyncio.run(scenario())
    assert reply_subject.startswith(prefix + ".")


def test_an_error_code_this_client_does_not_know_still_decodes(nats_server: EmbeddedNats) -> None:
    """A newer server's error code and fields raise UnknownFailure carrying that code."""

    async def scenario() -> None:
        server = await nats.connect(nats_server.url)

        async def answer(message: Msg) -> None:
            reply = {
                "request_id": message.headers["Repo-Reader-Request-Id"],
                "errors": [
                    {
                        "code": "QUOTA_EXHAUSTED",
                        "message": "the day's quota is spent",
                        "details": {"quota": 5},
                        "hint": "a field from a newer server",
                    }
                ],
                "served_by": "a field from a newer server",
            }
            await message.respond(msgspec.msgpack.encode(reply))

        await server.subscribe(Subject.RESEARCH.value, cb=answer)
        try:
            async with await RepoReaderClient.connect(nats_server.url, timeout=20) as client:
                with pytest.raises(UnknownFailure) as info:
                    await client.research(RepoReaderRequest(query="router"))
        finally:
            await server.close()
        assert info.value.wire_code == "QUOTA_EXHAUSTED"
        assert info.value.message == "the day's quota is spent"
        assert info.value.details == {"quota": 5}

    asyncio.run(scenario())


def test_the_exceptions_import_without_the_workers_dependencies() -> None:
    """An orchestrator can catch the service's exceptions with only msgspec installed."""
    program = (
        "import sys\n"
        "class Refuse:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in BLOCKED:\n"
        "            raise ImportError(f'{name} is not installed here')\n"
        "BLOCKED = {'numpy', 'pyarrow', 'pygit2', 'numba', 'tree_sitter', 'nats', 're2',\n"
        "           'structlog', 'askalono', 'Stemmer', 'licensecheck'}\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "import contracts, worker.errors\n"
        "print(worker.errors.failure_from_error('NOT_FOUND', 'gone', {}).__class__.__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "NotFound"


@given(st.text(st.characters(exclude_characters="\0/"), min_size=1))
def test_a_shown_path_is_one_line_and_reads_back(path: str) -> None:
    """A path is shown as is, or quoted when it holds a control character; either way on one
    line, with nothing a terminal would act on, and the quoted form decodes to the path."""
    shown = shown_path(path)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in shown)
    assert shown == path or json.loads(shown) == path


def test_a_request_cut_short_with_its_connection_leaves_no_error_behind(
    nats_server: EmbeddedNats,
) -> None:
    """A call cancelled while it waits, its connection then closed (a gateway shutting down),
    leaves no task whose failure nobody reads: nothing reaches the loop's error handler."""

    async def scenario() -> list[dict[str, object]]:
        loop = asyncio.get_running_loop()
        reported: list[dict[str, object]] = []
        loop.set_exception_handler(lambda _loop, context: reported.append(context))
        silent = await nats.connect(nats_server.url)
        asked = asyncio.Event()

        async def never_answer(_msg: Msg) -> None:
            asked.set()

        await silent.subscribe(Subject.RESEARCH.value, queue="workers", cb=never_answer)
        client = await RepoReaderClient.connect(nats_server.url, timeout=30)
        call = asyncio.create_task(client.research(RepoReaderRequest(query="router")))
        await asyncio.wait_for(asked.wait(), 10)
        call.cancel()
        await client.close()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        del call
        await silent.close()
        return reported

    reported = asyncio.run(scenario())  # which reports what its shutdown finds unread
    gc.collect()
    assert reported == []
