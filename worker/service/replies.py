"""Splitting an answer into reply messages under the server's max payload, and joining them.

The one place replies are encoded in batches. An answer is one response Struct whose list
field (artifacts, hits, entries, commits, modules) may be long. Batch 0 carries every other
field and the first items; later batches carry only the request id, their index and more
items; the last one has `last` set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

import msgspec

from worker.errors import InternalError

ResponseT = TypeVar("ResponseT", bound=msgspec.Struct)
ENVELOPE_ALLOWANCE: Final = 512
"""Room for what sizes measured on an empty envelope miss: a larger batch index, NATS headers."""


def item_batches(
    response: msgspec.Struct,
    field: str,
    *,
    max_payload: int,
    encode: Callable[[Any], bytes],
) -> list[bytes]:
    """The encoded messages of `response`, its `field` items packed greedily in order."""
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
