"""The worker process's NATS side: a micro service answering the capability subjects.

Each capability subject gets `concurrency` endpoint subscriptions in one queue group,
so a worker works on at most that many requests at once and more workers add
throughput with no coordination. Request work runs in a thread pool; the event loop
only decodes, admits, and publishes. `drain` finishes what was received and takes
nothing new, which is what SIGTERM does. A connection closed for good (the server
refused the client, or reconnecting gave up) ends the process with ConnectionLost,
its ready file removed first: a worker that can serve nothing never looks ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import msgspec
import structlog
from nats.aio.client import Client as NATS
from nats.micro import add_service
from nats.micro.request import Request
from nats.micro.service import EndpointStats, Service, ServiceConfig

from contracts.registry import MESSAGES
from contracts.subjects import (
    HEADER_REQUEST_ID,
    QUEUE_GROUP,
    SERVICE_NAME,
    Subject,
)
from worker.errors import ConnectionLost
from worker.service import exchange
from worker.service.codec import Codec, Codecs
from worker.service.interrupts import StopOnSignals
from worker.service.readiness import write_ready
from worker.service.replies import body_budget, reply_messages

log = structlog.get_logger(__name__)

RequestT = TypeVar("RequestT", bound=msgspec.Struct)


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What a capability handler knows about the message it answers."""

    request_id: str
    subject: Subject
    deadline: float


@dataclass(frozen=True, slots=True)
class Answer:
    """What a handler answers: its subject's response, and the facts worth logging about it.

    The server encodes the response, in batches where the subject has them: a handler never
    sees bytes.
    """

    response: msgspec.Struct
    facts: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Capability:
    """One subject a service serves, and whether its config enables it; the request type is
    the subject's own (`contracts.registry.MESSAGES`)."""

    subject: Subject
    enabled: bool = True


Handler = Callable[[RequestT, RequestContext], Answer]
"""Answers a decoded request of any subject its service serves (blocking, in the service's
thread pool), dispatching on the request's type."""


@dataclass(frozen=True, slots=True)
class _Reply:
    """An answer's encoded messages, in order, and its facts."""

    messages: Sequence[bytes]
    facts: Mapping[str, Any]


class Respond(Protocol):
    """Sends one message of an answer (to the request's reply subject)."""

    def __call__(self, data: bytes, *, headers: dict[str, str]) -> Awaitable[None]: ...


Admission = Callable[[Subject], Awaitable[None]]
"""Called before a request is handled; raises RateLimited (or another failure) to refuse it."""


def service_version() -> str:
    """The installed distribution's version, for service discovery."""
    try:
        return metadata.version("repo-reader")
    except metadata.PackageNotFoundError:
        return "0.0.0"


class WorkerService(Generic[RequestT]):
    """Serves `capabilities` on `nc` as the `repo_reader` micro service, each request
    answered by `handler`."""

    def __init__(
        self,
        nc: NATS,
        capabilities: Sequence[Capability],
        handler: Handler[RequestT],
        *,
        request_timeout: float,
        concurrency: int = 1,
        admission: Admission | None = None,
        ready_file: Path | None = None,
        describe: Callable[[], Mapping[str, Any]] | None = None,
        name: str = SERVICE_NAME,
        queue_group: str = QUEUE_GROUP,
        description: str = "Bounded, license-attributed excerpts from mirrored git repositories",
    ) -> None:
        self._nc = nc
        self._identity = (name, queue_group, description)
        self._capabilities = {c.subject: c for c in capabilities}
        self._handler = handler
        self._codecs = Codecs({c.subject: MESSAGES[c.subject][0] for c in capabilities})
        self._timeout = request_timeout
        self._concurrency = concurrency
        self._admission = admission
        self._ready_file = ready_file
        self._describe = describe
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="repo-reader")
        self._service: Service | None = None
        self._errors: defaultdict[str, Counter[str]] = defaultdict(Counter)

    def serves(self, subject: Subject) -> bool:
        """Whether this service answers `subject`."""
        return subject in self._capabilities

    async def start(self) -> None:
        """Subscribe every capability subject and announce readiness."""
        self._service = await add_service(
            self._nc,
            ServiceConfig(
                name=self._identity[0],
                version=service_version(),
                description=self._identity[2],
                queue_group=self._identity[1],
                stats_handler=self._endpoint_stats,
            ),
        )
        for subject in self._capabilities:
            for _ in range(self._concurrency):
                await self._service.add_endpoint(
                    name=subject.capability.replace(".", "_"),
                    subject=subject.value,
                    handler=self._handle,
                )
        await self._nc.flush()
        if self._ready_file is not None:
            write_ready(self._ready_file, self._service.id)
        log.info(
            "worker.ready",
            subjects=[s.value for s in self._capabilities],
            concurrency=self._concurrency,
            **(self._describe() if self._describe is not None else {}),
        )

    def abandon(self) -> None:
        """Give up after the connection closed for good: not ready, nothing more taken on."""
        if self._ready_file is not None:
            self._ready_file.unlink(missing_ok=True)
        log.error("worker.connection_lost")
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def drain(self) -> None:
        """Stop taking requests, answer those already received, then close the connection."""
        if self._ready_file is not None:
            self._ready_file.unlink(missing_ok=True)
        log.info("worker.draining")
        await self._nc.drain()
        self._pool.shutdown(wait=True)
        log.info("worker.drained")

    def _endpoint_stats(self, endpoint: EndpointStats) -> dict[str, Any]:
        return {"errors_by_code": dict(sorted(self._errors[endpoint.name].items()))}

    async def _handle(self, request: Request) -> None:
        await self.serve_message(
            Subject(request.subject), request.data, request.headers or {}, request.respond
        )

    async def serve_message(
        self, subject: Subject, data: bytes, headers: Mapping[str, str], respond: Respond
    ) -> None:
        """Answer one request, however it came (core request-reply or a durable stream):
        every message of the answer, or one error, goes to `respond`."""
        started = time.monotonic()
        request_id, bad_id = exchange.request_id_of(headers.get(HEADER_REQUEST_ID))
        codec = self._codecs.for_message(headers, data)
        reply_headers = exchange.reply_headers(codec.content_type, request_id)
        with structlog.contextvars.bound_contextvars(request_id=request_id, subject=subject.value):
            try:
                if bad_id is not None:
                    raise bad_id
                budget = body_budget(self._nc.max_payload, reply_headers)
                reply = await self._answer(
                    subject, data, codec, request_id, started, max_payload=budget
                )
            except Exception as exc:
                await self._reply_error(
                    respond,
                    exc,
                    codec=codec,
                    request_id=request_id,
                    headers=reply_headers,
                    subject=subject,
                    started=started,
                )
                return
            for message in reply.messages:
                await respond(message, headers=reply_headers)
            log.info(
                "request.answered",
                messages=len(reply.messages),
                latency_ms=round(1000 * (time.monotonic() - started), 2),
                **reply.facts,
            )

    async def _answer(
        self,
        subject: Subject,
        data: bytes,
        codec: Codec,
        request_id: str,
        started: float,
        *,
        max_payload: int,
    ) -> _Reply:
        capability = self._capabilities[subject]
        exchange.check_enabled(subject, enabled=capability.enabled)
        message = codec.decode(subject, data)
        if self._admission is not None:
            await self._admission(subject)
        context = RequestContext(
            request_id=request_id, subject=subject, deadline=started + self._timeout
        )
        call = functools.partial(
            contextvars.copy_context().run,
            _answered,
            self._handler,
            message,
            context,
            codec,
            max_payload,
        )
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    async def _reply_error(
        self,
        respond: Respond,
        exc: Exception,
        *,
        codec: Codec,
        request_id: str,
        headers: dict[str, str],
        subject: Subject,
        started: float,
    ) -> None:
        error, headers, body = exchange.error_reply(
            exc,
            request_id=request_id,
            headers=headers,
            max_payload=self._nc.max_payload,
            encode=codec.encode,
        )
        self._errors[subject.capability.replace(".", "_")][error.code] += 1
        fields = {
            "code": error.code,
            "latency_ms": round(1000 * (time.monotonic() - started), 2),
        }
        if error.code == "INTERNAL":
            log.error("request.failed", exc_info=exc, **fields)
        else:
            log.info("request.refused", message=error.message, **fields)
        await respond(body, headers=headers)


def _answered(
    handle: Handler[RequestT],
    message: RequestT,
    context: RequestContext,
    codec: Codec,
    max_payload: int,
) -> _Reply:
    """A handler's answer, encoded (in the pool's thread: a large answer takes a while)."""
    answer = handle(message, context)
    messages = reply_messages(
        answer.response, context.subject, max_payload=max_payload, encode=codec.encode
    )
    return _Reply(messages, answer.facts)


async def run_service(
    service: WorkerService[Any],
    stop: asyncio.Event | None = None,
    *,
    closed: asyncio.Event | None = None,
    beside: Callable[[asyncio.Event], Coroutine[Any, Any, None]] | None = None,
) -> None:
    """Start `service` and run `beside(stop)` next to it until `stop` is set; then cancel what
    runs beside it and drain.

    Without `stop`, SIGTERM or SIGINT stops it (a second one ends the process at once); a
    caller giving `stop` decides when to stop, and what signals do.

    If `closed` (the connection's, from `connect_service`) is set first, the connection is gone
    for good: the service is abandoned (its ready file removed) and ConnectionLost raised.
    """
    signals: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if stop is None:
        stop = asyncio.Event()
        signals = StopOnSignals(stop.set)  # a second signal, e.g. during a long drain, exits
    closed = closed or asyncio.Event()
    with signals:
        companion = asyncio.create_task(beside(stop)) if beside is not None else None
        lost = False
        try:
            await service.start()
            lost = await _first_of(stop, closed) is closed
        finally:
            if companion is not None:
                companion.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await companion
            if lost:
                service.abandon()
            else:
                await service.drain()
    if lost:
        raise ConnectionLost("the NATS connection closed for good; exiting so as to be restarted")


async def _first_of(*events: asyncio.Event) -> asyncio.Event:
    """The first of `events` to be set (the earliest given, when several already are)."""
    waits = {asyncio.ensure_future(event.wait()): event for event in events}
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
    return next(event for event in events if event.is_set())
