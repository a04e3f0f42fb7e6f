"""Replay the durable requests a stream recorded against any stack, and compare the answers.

Answers about pinned commits are deterministic, so the same recorded requests sent to two
stacks (two hosts whose caches were built apart from the same mirrors) must come back byte
for byte the same: each is sent again under its own request id, by core request-reply, and
every message of its answer is kept as received. Two answers are the same when their
messages are, byte for byte, but for the time a graph query says it took
(`execution_time_ms`, a measurement, not an answer). `repo.status` describes a mirror, not
a commit (sync times differ between hosts): it is replayed but not compared.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import msgspec
from nats.aio.client import Client as NATS
from nats.js.errors import NotFoundError

from contracts.subjects import (
    CONTENT_TYPE_JSON,
    DURABLE_PREFIX,
    HEADER_CONTENT_TYPE,
    HEADER_REQUEST_ID,
    PREFIX,
    REQUEST_STREAM,
    Subject,
)

NOT_COMPARED: Final = frozenset({Subject.REPO_STATUS.value})
MEASUREMENTS: Final = frozenset({"execution_time_ms"})


@dataclass(frozen=True, slots=True)
class Recorded:
    """A request as the stream holds it."""

    sequence: int
    subject: str
    """The capability subject it asks (`repo_reader.v1.research`)."""
    request_id: str
    content_type: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Replayed:
    """The answer a stack gave a recorded request: every message, as received."""

    request_id: str
    subject: str
    messages: tuple[bytes, ...]


class _Envelope(msgspec.Struct):
    batch: int = 0
    last: bool = True


async def recorded_requests(nc: NATS) -> list[Recorded]:
    """Every request the stream still holds, oldest first."""
    js = nc.jetstream()
    state = (await js.stream_info(REQUEST_STREAM)).state
    found = []
    for sequence in range(state.first_seq, state.last_seq + 1):
        try:
            message = await js.get_msg(REQUEST_STREAM, sequence)
        except NotFoundError:
            continue
        headers = message.headers or {}
        found.append(
            Recorded(
                sequence=sequence,
                subject=(message.subject or "").replace(DURABLE_PREFIX, PREFIX, 1),
                request_id=headers.get(HEADER_REQUEST_ID, f"replay-{sequence}"),
                content_type=headers.get(HEADER_CONTENT_TYPE, CONTENT_TYPE_JSON),
                data=message.data or b"",
            )
        )
    return found


async def replay(nc: NATS, requests: Iterable[Recorded], *, timeout: float) -> list[Replayed]:
    """Send each request again (core request-reply) and keep its answer's messages."""
    answers = []
    for request in requests:
        inbox = nc.new_inbox()
        subscription = await nc.subscribe(inbox)
        decoder = (
            msgspec.json.Decoder(_Envelope)
            if request.content_type == CONTENT_TYPE_JSON
            else msgspec.msgpack.Decoder(_Envelope)
        )
        messages: list[bytes] = []
        try:
            await nc.publish(
                request.subject,
                request.data,
                reply=inbox,
                headers={
                    HEADER_REQUEST_ID: request.request_id,
                    HEADER_CONTENT_TYPE: request.content_type,
                },
            )
            while True:
                message = await subscription.next_msg(timeout=timeout)
                messages.append(message.data)
                if decoder.decode(message.data).last:
                    break
        finally:
            await subscription.unsubscribe()
        answers.append(Replayed(request.request_id, request.subject, tuple(messages)))
    return answers


def write_answers(path: Path, answers: Sequence[Replayed]) -> None:
    """The answers as JSON lines (messages in base64), in request order."""
    with path.open("w") as out:
        for answer in answers:
            line = {
                "request_id": answer.request_id,
                "subject": answer.subject,
                "messages": [base64.b64encode(m).decode() for m in answer.messages],
            }
            out.write(json.dumps(line) + "\n")


def read_answers(path: Path) -> list[Replayed]:
    """Answers written by `write_answers`."""
    answers = []
    for line in path.read_text().splitlines():
        fields = json.loads(line)
        answers.append(
            Replayed(
                fields["request_id"],
                fields["subject"],
                tuple(base64.b64decode(m) for m in fields["messages"]),
            )
        )
    return answers


def differences(left: Sequence[Replayed], right: Sequence[Replayed]) -> list[str]:
    """The request ids whose answers differ (or that one side lacks), comparable ones only."""
    theirs = {a.request_id: a for a in right}
    differ = []
    for answer in left:
        if answer.subject in NOT_COMPARED:
            continue
        other = theirs.pop(answer.request_id, None)
        if other is None or _comparable(other.messages) != _comparable(answer.messages):
            differ.append(answer.request_id)
    differ += [rid for rid, a in theirs.items() if a.subject not in NOT_COMPARED]
    return differ


def _comparable(messages: Sequence[bytes]) -> tuple[bytes, ...]:
    """The messages, bytes as they came unless they hold a measurement to leave out."""
    if not any(name.encode() in m for m in messages for name in MEASUREMENTS):
        return tuple(messages)
    return tuple(_without_measurements(m) for m in messages)


def _without_measurements(message: bytes) -> bytes:
    json_body = message.lstrip()[:1] == b"{"
    decoded = msgspec.json.decode(message) if json_body else msgspec.msgpack.decode(message)

    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in MEASUREMENTS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return msgspec.msgpack.encode(strip(decoded))
