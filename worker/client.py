"""The Python client: sends a request, collects its reply batches, raises typed failures.

    async with await RepoReaderClient.connect("nats://127.0.0.1:4222") as client:
        result = await client.research(RepoReaderRequest(query="where are routes registered"))

A request that times out is sent again with the same request id (workers answer the
same request with the same bytes), so a worker lost mid-request costs time, not the answer.
A request that finds no worker subscribed (NATS answers "no responders", as while workers
reconnect after a NATS restart) is sent again with backoff until its deadline is near.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import re
import time
import uuid
from collections.abc import Sequence
from typing import Any, Final, Self, TypeVar

import msgspec
import nats
import structlog
from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeoutError

from contracts.research import ResearchArtifact
from contracts.subjects import (
    HEADER_MSG_ID,
    HEADER_REPLY_TO,
    MIRROR_SUBJECTS,
    Subject,
    durable_subject,
    inbox_prefix_for,
)
from worker.calls import (
    AnswerReader,
    RepoReaderAPI,
    ResearchResult,
    encode_request,
    request_headers,
)
from worker.errors import (
    AccessDenied,
    NoAnswer,
    NoResponders,
)

__all__ = [
    "NO_RESPONDERS_FIRST_BACKOFF",
    "NO_RESPONDERS_MAX_BACKOFF",
    "NO_RESPONDERS_WAIT",
    "RepoReaderClient",
    "ResearchResult",
    "artifact_lines",
]

ResponseT = TypeVar("ResponseT", bound=msgspec.Struct)

log = structlog.get_logger(__name__)

NO_RESPONDERS_FIRST_BACKOFF: Final = 0.05
"""Seconds before asking again after the first "no responders"; it doubles each time..."""
NO_RESPONDERS_MAX_BACKOFF: Final = 1.0
"""... up to this, with jitter, so that clients waiting out a NATS restart do not ask in step."""
NO_RESPONDERS_WAIT: Final = 30.0
"""How long a call waits for a worker to serve its subject, if its timeout is longer.

Workers and NATS restart within seconds; a long job's timeout (a docs regeneration's ten
minutes) should not also be how long it takes to learn that nothing serves it.
"""
DURABLE_RESEND_SECONDS: Final = 10.0
"""A durable request with no word of an answer this long is sent again."""
DURABLE_PUBLISH_TIMEOUT: Final = 2.0
"""How long one publish waits for the stream's acknowledgement before trying again."""

_PERMISSION_VIOLATION = re.compile(
    r'permissions violation for publish to "(?P<subject>[^"]+)"', re.I
)


class RepoReaderClient(RepoReaderAPI):
    """Calls repo-reader capabilities over an existing NATS connection."""

    def __init__(
        self,
        nc: NATS,
        *,
        json: bool = False,
        timeout: float = 30.0,
        attempts: int = 2,
        responder_wait: float = NO_RESPONDERS_WAIT,
    ) -> None:
        self._nc = nc
        self._refusals: dict[str, asyncio.Future[str]] = {}
        self._json = json
        self._timeout = timeout
        self._attempts = attempts
        self._responder_wait = responder_wait
        self._owns_connection = False

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        user: str | None = None,
        password: str | None = None,
        json: bool = False,
        timeout: float = 30.0,
        attempts: int = 2,
        responder_wait: float = NO_RESPONDERS_WAIT,
        inbox_prefix: str | None = None,
        **nats_options: Any,
    ) -> Self:
        """A client on a connection of its own, closed with the client.

        Replies come to inboxes under `inbox_prefix`, by default `_INBOX_<user>` (`_INBOX`
        without a user): the subjects a server that isolates its users' answers lets `user`
        read. `nats_options` go to `nats.connect`; e.g. `max_reconnect_attempts=1` makes a
        missing server fail fast instead of being retried for minutes.
        """

        client: Self | None = None

        async def on_error(exc: Exception) -> None:
            if client is not None:
                client.handle_error(exc)
            else:
                log.debug("nats.connection_error", error=str(exc))

        nc = await nats.connect(
            url,
            user=user,
            password=password,
            name="repo-reader-client",
            error_cb=on_error,
            inbox_prefix=inbox_prefix_for(user) if inbox_prefix is None else inbox_prefix,
            **nats_options,
        )
        client = cls(
            nc, json=json, timeout=timeout, attempts=attempts, responder_wait=responder_wait
        )
        client._owns_connection = True
        return client

    def handle_error(self, exc: Exception) -> None:
        """Feed an asynchronous NATS error to the client (pass it on from your own `error_cb`).

        A permissions violation on a subject the client is calling fails that call at once
        with ACCESS_DENIED instead of letting it time out.
        """
        match = _PERMISSION_VIOLATION.search(str(exc))
        if match is None:
            log.debug("nats.connection_error", error=str(exc))
            return
        refusal = self._refusals.get(match.group("subject"))
        if refusal is not None and not refusal.done():
            refusal.set_result(str(exc))

    async def close(self) -> None:
        """Close the connection if the client opened it: drained, or at once if the server
        does not answer the drain."""
        if self._owns_connection:
            try:
                await self._nc.drain()
            except NatsError as exc:
                log.warning("nats.drain_failed", error=str(exc))
                await self._nc.close()

    async def call(
        self,
        subject: Subject,
        request: msgspec.Struct,
        response_type: type[ResponseT],
        *,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> list[ResponseT]:
        """Send `request` on `subject` and return every message of its answer, in order."""
        rid = request_id or uuid.uuid4().hex
        payload = encode_request(request, json=self._json)
        last_error: NoAnswer | None = None
        for _ in range(self._attempts):
            try:
                return await self._attempt(
                    subject, payload, response_type, rid, timeout or self._timeout
                )
            except NoAnswer as exc:
                last_error = exc
        assert last_error is not None
        raise last_error

    async def durable_call(
        self,
        subject: Subject,
        request: msgspec.Struct,
        response_type: type[ResponseT],
        *,
        request_id: str | None = None,
        timeout: float | None = None,
        resend_after: float = DURABLE_RESEND_SECONDS,
    ) -> list[ResponseT]:
        """Send `request` through the durable request stream; every message of its answer.

        The stream keeps the request until a worker has answered it (another worker takes it
        over if one dies) and drops a repeat of the same request id; a request no worker
        could answer comes back as one error. Publishing is tried again until the server
        takes it (it may be restarting); an answer lost on its way back (published while
        this connection was away) is asked for again after `resend_after` seconds without a
        word. A repeated answer's messages are ignored, so each message is seen once.
        """
        rid = request_id or uuid.uuid4().hex
        payload = encode_request(request, json=self._json)
        reader = AnswerReader(response_type, json=self._json, request_id=rid, repeats=True)
        wait = timeout or self._timeout
        deadline = time.monotonic() + wait
        inbox = self._nc.new_inbox()
        subscription = await self._nc.subscribe(inbox)
        sent = 0
        try:
            await self._publish_durable(
                subject, payload, rid=rid, inbox=inbox, sent=sent, deadline=deadline
            )
            resend_at = time.monotonic() + resend_after
            while True:
                now = time.monotonic()
                try:
                    message = await subscription.next_msg(
                        timeout=max(min(deadline, resend_at) - now, 0.001)
                    )
                except NatsTimeoutError:
                    if time.monotonic() >= deadline:
                        raise NoAnswer(
                            f"no complete answer to the durable {subject.capability} "
                            f"within {wait:g} s",
                            request_id=rid,
                            batches_received=len(reader.batches),
                        ) from None
                    if not reader.batches:
                        sent += 1
                        await self._publish_durable(
                            subject, payload, rid=rid, inbox=inbox, sent=sent, deadline=deadline
                        )
                    resend_at = time.monotonic() + resend_after
                    continue
                if reader.take(message.data):
                    return reader.batches
                if reader.batches:
                    resend_at = math.inf
        finally:
            with contextlib.suppress(NatsError):
                await subscription.unsubscribe()

    async def _publish_durable(
        self, subject: Subject, payload: bytes, *, rid: str, inbox: str, sent: int, deadline: float
    ) -> None:
        """Put the request in the stream, trying again while the server is away.

        A resend (`sent` > 0) gets a message id of its own: the stream would drop a repeat of
        the first, and the first's answer is what went missing.
        """
        headers = {
            **request_headers(rid, json=self._json),
            HEADER_REPLY_TO: inbox,
            HEADER_MSG_ID: rid if sent == 0 else f"{rid}.{sent}",
        }
        pause = NO_RESPONDERS_FIRST_BACKOFF
        while True:
            remaining = deadline - time.monotonic()
            try:
                await self._nc.jetstream().publish(
                    durable_subject(subject),
                    payload,
                    headers=headers,
                    timeout=max(min(remaining, DURABLE_PUBLISH_TIMEOUT), 0.001),
                )
                return
            except (NatsError, TimeoutError):
                if time.monotonic() + pause >= deadline:
                    raise
            await asyncio.sleep(pause)
            pause = min(2 * pause, NO_RESPONDERS_MAX_BACKOFF)

    async def _attempt(
        self,
        subject: Subject,
        payload: bytes,
        response_type: type[ResponseT],
        request_id: str,
        timeout: float,
    ) -> list[ResponseT]:
        """One attempt of `timeout` seconds: the exchange, tried again with backoff for as long
        as no worker serves the subject and the next try can start before the deadline (and
        within the client's `responder_wait`)."""
        started = time.monotonic()
        deadline = started + timeout
        give_up = started + min(timeout, self._responder_wait)
        backoff = NO_RESPONDERS_FIRST_BACKOFF
        tries = 1
        while True:
            try:
                return await self._exchange(
                    subject, payload, response_type, request_id, deadline=deadline, timeout=timeout
                )
            except NoResponders as exc:
                pause = backoff * random.uniform(0.5, 1.0)
                if time.monotonic() + pause >= give_up:
                    exc.details["tries"] = tries
                    raise
            log.debug("client.no_responders", subject=subject.value, tries=tries, pause=pause)
            await asyncio.sleep(pause)
            backoff = min(2 * backoff, NO_RESPONDERS_MAX_BACKOFF)
            tries += 1

    async def _exchange(
        self,
        subject: Subject,
        payload: bytes,
        response_type: type[ResponseT],
        request_id: str,
        *,
        deadline: float,
        timeout: float,
    ) -> list[ResponseT]:
        inbox = self._nc.new_inbox()
        refused = self._refusals.setdefault(
            subject.value, asyncio.get_running_loop().create_future()
        )
        subscription = await self._nc.subscribe(inbox)
        headers = request_headers(request_id, json=self._json)
        reader = AnswerReader(response_type, json=self._json, request_id=request_id)
        receiving: asyncio.Future[Any] | None = None
        try:
            await self._nc.publish(subject.value, payload, reply=inbox, headers=headers)
            while True:
                remaining = max(deadline - time.monotonic(), 0.001)
                receiving = asyncio.ensure_future(subscription.next_msg(timeout=remaining))
                receiving.add_done_callback(_read_outcome)
                waiting: set[asyncio.Future[Any]] = {receiving, refused}
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if refused.done():
                    receiving.cancel()
                    raise AccessDenied(
                        f"the NATS server refused this connection's request on {subject.value}",
                        subject=subject.value,
                        reason="nats-permissions",
                    )
                try:
                    message = receiving.result()
                except NatsTimeoutError:
                    raise NoAnswer(
                        f"no complete answer to {subject.capability} within {timeout:g} s",
                        request_id=request_id,
                        batches_received=len(reader.batches),
                    ) from None
                if message.headers and message.headers.get("Status") == "503":
                    server = (
                        "no mirror service (`repo-reader mirror serve`)"
                        if subject in MIRROR_SUBJECTS
                        else "no worker"
                    )
                    raise NoResponders(f"{server} serves {subject.value}", subject=subject.value)
                if reader.take(message.data):
                    return reader.batches
        finally:
            if receiving is not None:
                receiving.cancel()  # this call was cancelled while it waited
            if self._refusals.get(subject.value) is refused and refused.done():
                del self._refusals[subject.value]
            await subscription.unsubscribe()


def _read_outcome(waiting: asyncio.Future[Any]) -> None:
    """Read how a wait for a message ended, so that a failure no one awaits (the connection
    closing under a cancelled call) is not reported as never retrieved."""
    if not waiting.cancelled():
        waiting.exception()


_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f]")


def shown_path(path: str) -> str:
    """A repository path as a line of text shows it: as is, or quoted with escapes (as JSON
    writes a string) when it holds a control character, which would break the line or the
    terminal.

    Git allows any byte but NUL and "/" in a name; `git ls-files` quotes such names too.
    """
    if _CONTROL.search(path) is None:
        return path
    # json.dumps escapes C0 controls; DEL and C1 it leaves as they are.
    return _CONTROL.sub(lambda c: f"\\u{ord(c[0]):04x}", json.dumps(path, ensure_ascii=False))


def artifact_lines(artifacts: Sequence[ResearchArtifact]) -> str:
    """Artifacts as a person reads them: a header line per artifact, then its excerpt."""
    blocks = []
    for a in artifacts:
        cut = " (truncated)" if a.truncated else ""
        symbol = f" {a.symbol}" if a.symbol else ""
        where = f"{a.repo}:{shown_path(a.path)}:{a.excerpt_span}{symbol}"
        head = f"{where}  [{a.license}]  score={a.score:g}{cut}"
        body = "\n".join(f"    {line}" for line in a.excerpt.split("\n"))
        blocks.append(f"{head}\n  {a.commit}\n{body}")
    return "\n\n".join(blocks)
