"""Durable requests: a JetStream stream the workers consume as a work queue, beside core
request-reply, which also records every request for replay.

An orchestrator publishes a request to `repo_reader.v1.durable.<capability>` with its request
id as `Nats-Msg-Id` (the stream drops a repeat within the duplicate window) and its reply
subject in `Repo-Reader-Reply-To`. Workers pull from one shared consumer, answer exactly as
they answer core requests (same batches, to that reply subject), and acknowledge only after
the answer is published; while working they tell the server so (progress acks), so a live
worker keeps its request and a dead one loses it to another worker after `ack_wait`. After
`max_deliver` deliveries without an answer, the worker that sees the server's advisory sends
the caller one structured error: never silence. The stream keeps requests (acknowledged or
not) for `max_age`, so `repo-reader replay` can send them again to any stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StreamConfig
from nats.js.errors import NotFoundError

from contracts.subjects import (
    DURABLE_PREFIX,
    HEADER_REPLY_TO,
    HEADER_REQUEST_ID,
    PREFIX,
    REQUEST_STREAM,
    WORKER_CONSUMER,
    Subject,
)
from worker.errors import InternalError, InvalidRequest, RepoReaderFailure
from worker.service import exchange
from worker.service.codec import Codecs
from worker.service.server import WorkerService

log = structlog.get_logger(__name__)

ACK_WAIT_SECONDS: Final = 5.0
"""A request a worker stops reporting progress on goes to another worker after this long."""
MAX_DELIVER: Final = 3
CONSUMER_RETRY_SECONDS: Final = 5.0
DUPLICATE_WINDOW_SECONDS: Final = 120.0
MAX_DELIVERIES_ADVISORY: Final = (
    f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{REQUEST_STREAM}.{WORKER_CONSUMER}"
)


RECORD_SECONDS: Final = 7 * 86_400.0
RECORD_BYTES: Final = 1 << 30


@dataclass(frozen=True, slots=True)
class StreamSettings:
    """How the request stream and its consumer behave."""

    ack_wait: float = ACK_WAIT_SECONDS
    max_deliver: int = MAX_DELIVER
    duplicate_window: float = DUPLICATE_WINDOW_SECONDS
    max_age: float = RECORD_SECONDS
    """How long requests are kept for replay (the oldest go first beyond `max_bytes`)."""
    max_bytes: int = RECORD_BYTES


async def ensure_request_stream(js: JetStreamContext, settings: StreamSettings) -> None:
    """Create the request stream and the workers' consumer, where missing (an existing one is
    left as it is).

    Done by the provisioner's credentials (`repo-reader provision`), never by a worker:
    workers only consume.
    """
    try:
        await js.stream_info(REQUEST_STREAM)
    except NotFoundError:
        await _create_stream(js, settings)
    try:
        await js.consumer_info(REQUEST_STREAM, WORKER_CONSUMER)
    except NotFoundError:
        await _create_consumer(js, settings)


async def _create_stream(js: JetStreamContext, settings: StreamSettings) -> None:
    await js.add_stream(
        StreamConfig(
            name=REQUEST_STREAM,
            subjects=[f"{DURABLE_PREFIX}.>"],
            # Kept after their answer (a record to replay); one shared consumer makes the
            # delivery a work queue all the same.
            retention=RetentionPolicy.LIMITS,
            max_age=settings.max_age,
            max_bytes=settings.max_bytes,
            duplicate_window=settings.duplicate_window,
        )
    )


async def _create_consumer(js: JetStreamContext, settings: StreamSettings) -> None:
    await js.add_consumer(
        REQUEST_STREAM,
        ConsumerConfig(
            durable_name=WORKER_CONSUMER,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=settings.ack_wait,
            max_deliver=settings.max_deliver,
        ),
    )


class DurableRequests:
    """Pulls durable requests for one worker and answers them through its service."""

    def __init__(self, nc: NATS, service: WorkerService[Any], *, concurrency: int) -> None:
        self._nc = nc
        self._service = service
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self._codecs = Codecs({})

    async def run(self, stop: asyncio.Event) -> None:
        """Take requests until `stop` is set, then finish those taken.

        Without the stream (not created yet, or durable requests not deployed) the worker
        serves core requests only and looks for the stream again every CONSUMER_RETRY seconds.
        """
        js = self._nc.jetstream()
        while True:
            try:
                info = await js.consumer_info(REQUEST_STREAM, WORKER_CONSUMER)
                subscription = await js.pull_subscribe_bind(WORKER_CONSUMER, stream=REQUEST_STREAM)
                break
            except NotFoundError:
                log.info("durable.unavailable", stream=REQUEST_STREAM, consumer=WORKER_CONSUMER)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=CONSUMER_RETRY_SECONDS)
            if stop.is_set():
                return
        ack_wait = float(info.config.ack_wait or ACK_WAIT_SECONDS)
        advisories = await self._nc.subscribe(
            MAX_DELIVERIES_ADVISORY, queue=WORKER_CONSUMER, cb=self._gave_up
        )
        log.info("durable.consuming", stream=REQUEST_STREAM, consumer=WORKER_CONSUMER)
        try:
            while not stop.is_set():
                await self._slots.acquire()
                try:
                    messages = await subscription.fetch(1, timeout=1.0)
                except (TimeoutError, NatsTimeoutError):
                    self._slots.release()
                    continue
                except Exception:
                    self._slots.release()
                    raise
                for message in messages:
                    task = asyncio.create_task(self._one(message, ack_wait))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
        finally:
            # Unsubscribed here, not left to the drain: a pull subscription nobody reads
            # (the status of a fetch that timed out) would hold the drain to its timeout.
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()
            with contextlib.suppress(Exception):
                await advisories.unsubscribe()
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _one(self, message: Msg, ack_wait: float) -> None:
        try:
            headers = message.headers or {}
            reply_to = headers.get(HEADER_REPLY_TO)
            capability = message.subject.removeprefix(f"{DURABLE_PREFIX}.")
            try:
                subject = Subject(f"{PREFIX}.{capability}")
            except ValueError:
                subject = None
            if not reply_to or subject is None or not self._service.serves(subject):
                # The mirror's subjects (docs.regenerate, admin.*) are never durable requests.
                await self._refuse(message, reply_to, f"{message.subject} is no durable subject")
                return
            progress = asyncio.create_task(_report_progress(message, ack_wait / 2))
            try:

                async def respond(data: bytes, *, headers: dict[str, str]) -> None:
                    await self._nc.publish(reply_to, data, headers=headers)

                await self._service.serve_message(subject, message.data, headers, respond)
                await self._nc.flush()
            finally:
                progress.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await progress
            await message.ack()
        finally:
            self._slots.release()

    async def _refuse(self, message: Msg, reply_to: str | None, why: str) -> None:
        log.info("durable.refused", subject=message.subject, reason=why)
        if reply_to:
            refusal = InvalidRequest(why, subject=message.subject)
            await self._send_error(reply_to, message.headers or {}, refusal)
        await message.term()

    async def _gave_up(self, advisory: Msg) -> None:
        """Tell the caller of a request no worker answered in `max_deliver` tries."""
        event: dict[str, Any] = json.loads(advisory.data)
        sequence = int(event.get("stream_seq", 0))
        js = self._nc.jetstream()
        try:
            stored = await js.get_msg(REQUEST_STREAM, sequence)
        except NotFoundError:
            return  # answered or dropped meanwhile
        headers = dict(stored.headers or {})
        reply_to = headers.get(HEADER_REPLY_TO)
        deliveries = int(event.get("deliveries", 0))
        log.error("durable.gave_up", sequence=sequence, deliveries=deliveries)
        if reply_to:
            failure = InternalError(
                f"no worker answered this durable request in {deliveries} deliveries",
                deliveries=deliveries,
            )
            await self._send_error(reply_to, headers, failure)

    async def _send_error(
        self, reply_to: str, request_headers: Mapping[str, str], failure: RepoReaderFailure
    ) -> None:
        """Answer the caller with `failure`, as the server answers a failed request."""
        codec = self._codecs.for_message(request_headers, b"")
        request_id, _ = exchange.request_id_of(request_headers.get(HEADER_REQUEST_ID))
        _, headers, body = exchange.error_reply(
            failure,
            request_id=request_id,
            headers=exchange.reply_headers(codec.content_type, request_id),
            max_payload=self._nc.max_payload,
            encode=codec.encode,
        )
        await self._nc.publish(reply_to, body, headers=headers)


async def _report_progress(message: Msg, every: float) -> None:
    """Tell the server the request is being worked on, until cancelled."""
    while True:
        await asyncio.sleep(every)
        await message.in_progress()
