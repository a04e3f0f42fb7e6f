"""Durable requests via the JetStream stream: answered, de-duplicated, taken over, never lost."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import msgspec
import nats
import pytest

from contracts.admin import SyncRequest
from contracts.errors import ErrorReply
from contracts.repo import RepoStatusRequest, RepoStatusResponse
from contracts.subjects import (
    CONTENT_TYPE_MSGPACK,
    HEADER_CONTENT_TYPE,
    HEADER_MSG_ID,
    HEADER_REPLY_TO,
    HEADER_REQUEST_ID,
    HEADER_SERVICE_ERROR,
    HEADER_SERVICE_ERROR_CODE,
    REQUEST_STREAM,
    WORKER_CONSUMER,
    Subject,
    durable_subject,
)
from tests.support.graphs import GraphCache, build_graph_cache
from tests.support.workers import WorkerProcess
from worker.client import RepoReaderClient
from worker.service.durable import StreamSettings, ensure_request_stream
from worker.service.embedded_nats import EmbeddedNats

REPO = "acme/shop"
ACK_WAIT = 1.0
MAX_DELIVER = 2


@pytest.fixture(scope="module")
def graph_cache(tmp_path_factory: pytest.TempPathFactory) -> GraphCache:
    """The mirrored shop."""
    return build_graph_cache(tmp_path_factory.mktemp("durable"))


@pytest.fixture
def server() -> Iterator[EmbeddedNats]:
    """A fresh NATS server with the request stream (a short ack wait, two deliveries)."""
    with EmbeddedNats() as nats_server:
        asyncio.run(_create_stream(nats_server.url))
        yield nats_server


async def _create_stream(url: str) -> None:
    nc = await nats.connect(url)
    try:
        await ensure_request_stream(
            nc.jetstream(), StreamSettings(ack_wait=ACK_WAIT, max_deliver=MAX_DELIVER)
        )
    finally:
        await nc.close()


def status_payload() -> bytes:
    return msgspec.msgpack.encode(RepoStatusRequest(repo=REPO))


async def _publish_raw(nc: nats.NATS, request_id: str, inbox: str) -> bool:
    """Publish one durable repo.status request; whether the stream called it a duplicate."""
    ack = await nc.jetstream().publish(
        durable_subject(Subject.REPO_STATUS),
        status_payload(),
        headers={
            HEADER_CONTENT_TYPE: CONTENT_TYPE_MSGPACK,
            HEADER_REQUEST_ID: request_id,
            HEADER_REPLY_TO: inbox,
            HEADER_MSG_ID: request_id,
        },
    )
    return bool(ack.duplicate)


def test_a_durable_request_is_answered_like_a_core_one(
    server: EmbeddedNats, graph_cache: GraphCache
) -> None:
    """The stream's answer has the same content as core request-reply's."""

    async def ask() -> tuple[RepoStatusResponse, RepoStatusResponse]:
        async with await RepoReaderClient.connect(server.url, timeout=30) as client:
            (durable,) = await client.durable_call(
                Subject.REPO_STATUS, RepoStatusRequest(repo=REPO), RepoStatusResponse
            )
            (core,) = await client.call(
                Subject.REPO_STATUS, RepoStatusRequest(repo=REPO), RepoStatusResponse
            )
            return durable, core

    with WorkerProcess(graph_cache.cache.root, server.url):
        durable, core = asyncio.run(ask())
    assert msgspec.structs.replace(durable, request_id="") == msgspec.structs.replace(
        core, request_id=""
    )


def test_a_repeated_request_id_is_dropped_and_answered_once(
    server: EmbeddedNats, graph_cache: GraphCache
) -> None:
    """Publishing the same request id twice stores it once; the caller gets one answer."""

    async def run() -> tuple[bool, bool, int]:
        nc = await nats.connect(server.url)
        inbox = nc.new_inbox()
        answers = await nc.subscribe(inbox)
        request_id = uuid.uuid4().hex
        first = await _publish_raw(nc, request_id, inbox)
        again = await _publish_raw(nc, request_id, inbox)
        message = await answers.next_msg(timeout=30)
        decoded = msgspec.msgpack.decode(message.data, type=RepoStatusResponse)
        await nc.flush()
        extra = answers.pending_msgs
        await nc.close()
        assert decoded.repo == REPO
        return first, again, extra

    with WorkerProcess(graph_cache.cache.root, server.url):
        first, again, extra = asyncio.run(run())
    assert (first, again, extra) == (False, True, 0)


def test_a_request_a_worker_took_and_dropped_goes_to_another(
    server: EmbeddedNats, graph_cache: GraphCache
) -> None:
    """A consumer that takes the request and dies (never acks) loses it to a live worker."""

    async def take_and_drop(nc: nats.NATS, inbox: str) -> None:
        await _publish_raw(nc, uuid.uuid4().hex, inbox)
        dead = await nc.jetstream().pull_subscribe_bind(WORKER_CONSUMER, stream=REQUEST_STREAM)
        (taken,) = await dead.fetch(1, timeout=10)
        assert taken.metadata.num_delivered == 1

    async def run() -> RepoStatusResponse:
        nc = await nats.connect(server.url)
        inbox = nc.new_inbox()
        answers = await nc.subscribe(inbox)
        await take_and_drop(nc, inbox)
        with WorkerProcess(graph_cache.cache.root, server.url):
            message = await answers.next_msg(timeout=30)
        await nc.close()
        return msgspec.msgpack.decode(message.data, type=RepoStatusResponse)

    assert asyncio.run(run()).repo == REPO


def test_a_request_no_worker_answers_comes_back_as_one_error(
    server: EmbeddedNats, graph_cache: GraphCache
) -> None:
    """After the last delivery goes unanswered, the caller gets one INTERNAL error."""

    async def run() -> ErrorReply:
        nc = await nats.connect(server.url)
        inbox = nc.new_inbox()
        answers = await nc.subscribe(inbox)
        await _publish_raw(nc, uuid.uuid4().hex, inbox)
        dead = await nc.jetstream().pull_subscribe_bind(WORKER_CONSUMER, stream=REQUEST_STREAM)
        for delivery in range(1, MAX_DELIVER + 1):
            (taken,) = await dead.fetch(1, timeout=10)
            assert taken.metadata.num_delivered == delivery
        with WorkerProcess(graph_cache.cache.root, server.url):
            message = await answers.next_msg(timeout=30)
        await nc.close()
        return msgspec.msgpack.decode(message.data, type=ErrorReply)

    error = asyncio.run(run())
    assert error.errors[0].code == "INTERNAL"
    assert error.errors[0].details["deliveries"] == MAX_DELIVER


def test_a_durable_request_for_a_mirror_subject_is_refused_like_a_core_request(
    server: EmbeddedNats, graph_cache: GraphCache
) -> None:
    """A durable admin.sync is one INVALID_REQUEST under the caller's id, headed as any error."""
    request_id = uuid.uuid4().hex

    async def run() -> tuple[dict[str, str], ErrorReply]:
        nc = await nats.connect(server.url)
        inbox = nc.new_inbox()
        answers = await nc.subscribe(inbox)
        await nc.jetstream().publish(
            durable_subject(Subject.ADMIN_SYNC),
            msgspec.msgpack.encode(SyncRequest()),
            headers={
                HEADER_CONTENT_TYPE: CONTENT_TYPE_MSGPACK,
                HEADER_REQUEST_ID: request_id,
                HEADER_REPLY_TO: inbox,
                HEADER_MSG_ID: request_id,
            },
        )
        with WorkerProcess(graph_cache.cache.root, server.url):
            message = await answers.next_msg(timeout=30)
        await nc.close()
        return dict(message.headers or {}), msgspec.msgpack.decode(message.data, type=ErrorReply)

    headers, error = asyncio.run(run())
    assert error.request_id == request_id
    assert error.errors[0].code == "INVALID_REQUEST"
    assert headers[HEADER_REQUEST_ID] == request_id
    assert headers[HEADER_SERVICE_ERROR_CODE] == "INVALID_REQUEST"
    assert "admin.sync" in headers[HEADER_SERVICE_ERROR]
