"""Splitting an answer into reply messages under the server's max payload, and joining them.

The one place replies are encoded in batches. An answer is one response Struct whose list
field (artifacts, hits, entries, commits, modules) may be long. Batch 0 carries every other
field and the first items; later batches carry only the request id, their index and more
items; the last one has `last` set.

The server counts a message's headers against its max payload, and closes the connection of
a client that publishes more; so every bound here is on a message's body, and is the max
payload less `header_size` of the headers that go with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

import msgspec

from contracts.errors import ErrorReply, RepoReaderError
from contracts.registry import BATCHED, MESSAGES
from contracts.subjects import Subject
from worker.errors import InternalError

ResponseT = TypeVar("ResponseT", bound=msgspec.Struct)
ENVELOPE_ALLOWANCE: Final = 512
"""Room for what sizes measured on an empty envelope miss: a larger batch index, the flags."""
ERROR_TEXT_BOUND: Final = 512
"""An error too big for one message keeps this many characters of its message and only the
details that encode in at most this many bytes: an error echoing a huge request still goes out."""
_HEADER_LINE: Final = b"NATS/1.0\r\n"


def header_size(headers: Mapping[str, str] | None) -> int:
    """The bytes `headers` take in a NATS message (the version line, one line each, a blank)."""
    if not headers:
        return 0
    lines = "".join(f"{key.strip()}: {value.strip()}\r\n" for key, value in headers.items())
    return len(_HEADER_LINE) + len(lines.encode()) + 2


def body_budget(max_payload: int, headers: Mapping[str, str] | None) -> int:
    """The most bytes a message's body may have beside `headers` under `max_payload`."""
    return max_payload - header_size(headers)


def error_message(
    request_id: str,
    error: RepoReaderError,
    *,
    max_payload: int,
    encode: Callable[[Any], bytes],
) -> bytes:
    """The encoded ErrorReply of `error`, cut to fit `max_payload` (a body budget) if need be.

    Only an error that echoes a huge request (an unknown field's name, say) is cut: its message
    is shortened and its larger details dropped, and `details.truncated` says so.
    """
    whole = encode(ErrorReply(request_id=request_id, errors=(error,)))
    if len(whole) <= max_payload:
        return whole
    details = {
        key: value
        for key, value in error.details.items()
        if len(encode(value)) <= ERROR_TEXT_BOUND and len(key) <= ERROR_TEXT_BOUND
    }
    cut = RepoReaderError(
        code=error.code,
        message=error.message[:ERROR_TEXT_BOUND],
        details={**details, "truncated": True},
    )
    return encode(ErrorReply(request_id=request_id, errors=(cut,)))


def reply_messages(
    response: msgspec.Struct,
    subject: Subject,
    *,
    max_payload: int,
    encode: Callable[[Any], bytes],
) -> list[bytes]:
    """The encoded messages answering a request on `subject`: one, or its items in batches
    where the subject has a list field (`contracts.registry.BATCHED`).

    InternalError when `response` is not the subject's response type (a handler's mistake
    is caught here, not by a client that cannot decode it), or when a message would not fit
    `max_payload`.
    """
    expected = MESSAGES[subject][1]
    if not isinstance(response, expected):
        raise InternalError(
            f"{subject.value} answered with {type(response).__name__}, not {expected.__name__}"
        )
    field = BATCHED[subject]
    if field is None:
        message = encode(response)
        if len(message) > max_payload:
            raise InternalError(
                "the answer does not fit the server's max payload",
                size=len(message),
                limit=max_payload,
            )
        return [message]
    return item_batches(response, field, max_payload=max_payload, encode=encode)


def item_batches(
    response: msgspec.Struct,
    field: str,
    *,
    max_payload: int,
    encode: Callable[[Any], bytes],
) -> list[bytes]:
    """The encoded messages of `response`, its `field` items packed greedily in order.

    `max_payload` bounds each message's body: the server's max payload less its headers.
    """
    items: Sequence[Any] = getattr(response, field)
    head = msgspec.structs.replace(response, **{field: ()})
    tail = type(response)(request_id=response.request_id)  # type: ignore[attr-defined]
    budget = max_payload - ENVELOPE_ALLOWANCE
    first, later = len(encode(head)), len(encode(tail))
    if first > budget:
        raise InternalError("the answer's header exceeds the server's max payload")
    groups: list[list[Any]] = [[]]
    used = first
    for item in items:
        size = len(encode(item)) + 8  # + its share of the array header
        if later + size > budget:
            raise InternalError("one item exceeds the server's max payload", field=field)
        if used + size > budget and groups[-1]:
            groups.append([])
            used = later
        groups[-1].append(item)
        used += size
    return [
        encode(
            msgspec.structs.replace(
                head if i == 0 else tail,
                batch=i,
                last=i == len(groups) - 1,
                **{field: tuple(group)},
            )
        )
        for i, group in enumerate(groups)
    ]


def join_batches(batches: Sequence[ResponseT], field: str) -> ResponseT:
    """One response from the received batches: batch 0's fields with every batch's items."""
    items = tuple(item for batch in batches for item in getattr(batch, field))
    return msgspec.structs.replace(batches[0], last=True, **{field: items})


ENVELOPE_FIELDS: Final = ("batch", "last", "errors")


def answer_fields(response: msgspec.Struct) -> dict[str, Any]:
    """A (joined) response's fields as plain data, without the batching envelope."""
    fields: dict[str, Any] = msgspec.to_builtins(response)
    for name in ENVELOPE_FIELDS:
        fields.pop(name, None)
    return fields
