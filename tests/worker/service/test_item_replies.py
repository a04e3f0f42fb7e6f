"""Tests of tool answer batching: messages fit the max payload; joining restores the answer."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.code import CodeListResponse, DirectoryEntry
from worker.service.replies import item_batches, join_batches

ENCODE = msgspec.msgpack.encode


@settings(max_examples=50, deadline=None)
@given(
    names=st.lists(st.text(min_size=1, max_size=60), max_size=200),
    max_payload=st.integers(min_value=2048, max_value=20_000),
)
def test_batches_fit_and_join_back(names: list[str], max_payload: int) -> None:
    """Each message is under max_payload, batch numbers count up, the join equals the answer."""
    response = CodeListResponse(
        request_id="r1",
        repo="acme/widgets",
        commit="a" * 40,
        entries=tuple(DirectoryEntry(name=n, path=f"d/{n}", type="file") for n in names),
        total=len(names),
    )
    messages = item_batches(response, "entries", max_payload=max_payload, encode=ENCODE)
    assert all(len(m) <= max_payload for m in messages)
    decoded = [msgspec.msgpack.decode(m, type=CodeListResponse) for m in messages]
    assert [d.batch for d in decoded] == list(range(len(decoded)))
    assert [d.last for d in decoded] == [False] * (len(decoded) - 1) + [True]
    assert all(d.repo == "" for d in decoded[1:])
    assert join_batches(decoded, "entries") == response
