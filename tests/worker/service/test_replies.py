"""Tests of splitting research answers into messages under the max payload, headers counted."""

from __future__ import annotations

import asyncio

import msgspec
import nats
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts import (
    ErrorReply,
    RepoReaderError,
    RepoReaderResponse,
    ResearchArtifact,
    ResolvedRepo,
)
from contracts.code import CodeReadResponse
from contracts.subjects import Subject
from worker.errors import InternalError
from worker.service.embedded_nats import EmbeddedNats
from worker.service.replies import (
    ERROR_TEXT_BOUND,
    body_budget,
    error_message,
    item_batches,
    join_batches,
    reply_messages,
)

ENCODE = msgspec.msgpack.encode
DECODE = msgspec.msgpack.Decoder(RepoReaderResponse).decode
RESOLVED = (ResolvedRepo(repo="a/b", commit="c" * 40, ref="refs/heads/main", license="MIT"),)


def artifact(i: int, size: int) -> ResearchArtifact:
    return ResearchArtifact(
        excerpt="x" * size,
        repo="a/b",
        commit="c" * 40,
        path=f"f{i}.py",
        license="MIT",
        excerpt_span="L1-L1",
        score=1.0,
        blob="b" * 40,
        license_source="LICENSE",
        swhid="swh:1:cnt:" + "b" * 40,
    )


@settings(max_examples=50)
@given(st.lists(st.integers(0, 3000), max_size=30), st.sampled_from([4096, 8192, 65536]))
def test_batches_fit_and_keep_order(sizes: list[int], max_payload: int) -> None:
    """Every message fits the payload, batches count up, only the last is last, order is kept."""
    artifacts = [artifact(i, s) for i, s in enumerate(sizes)]
    response = RepoReaderResponse(request_id="rid", resolved=RESOLVED, artifacts=tuple(artifacts))
    messages = item_batches(
        response, "artifacts", max_payload=max_payload, encode=msgspec.msgpack.encode
    )
    decoded = [msgspec.msgpack.decode(m, type=RepoReaderResponse) for m in messages]
    assert all(len(m) <= max_payload for m in messages)
    assert [d.batch for d in decoded] == list(range(len(decoded)))
    assert [d.last for d in decoded] == [False] * (len(decoded) - 1) + [True]
    assert decoded[0].resolved == RESOLVED
    assert all(not d.resolved for d in decoded[1:])
    assert [a for d in decoded for a in d.artifacts] == artifacts


def test_artifact_larger_than_payload_is_internal() -> None:
    """An artifact that cannot fit in any message is an internal error, not a broken reply."""
    with pytest.raises(InternalError):
        item_batches(
            RepoReaderResponse(request_id="r", resolved=RESOLVED, artifacts=(artifact(0, 10_000),)),
            "artifacts",
            max_payload=4096,
            encode=msgspec.json.encode,
        )


def test_the_body_budget_is_what_the_server_allows_beside_the_headers() -> None:
    """A body of exactly the budget goes through a real server; one byte more is refused."""
    max_payload = 4096
    headers = {"Content-Type": "application/msgpack", "Repo-Reader-Request-Id": "r" * 128}
    body = b"x" * body_budget(max_payload, headers)

    async def scenario(url: str) -> None:
        receiver = await nats.connect(url)
        subscription = await receiver.subscribe("fit")
        await receiver.flush()
        closed = asyncio.Event()

        async def on_closed() -> None:
            closed.set()

        async def on_error(exc: Exception) -> None:
            pass

        sender = await nats.connect(
            url, allow_reconnect=False, closed_cb=on_closed, error_cb=on_error
        )
        await sender.publish("fit", body, headers=headers)
        assert (await subscription.next_msg(timeout=10)).data == body
        await sender.publish("fit", body + b"x", headers=headers)
        await asyncio.wait_for(closed.wait(), timeout=10)
        assert "maximum payload" in str(sender.last_error).lower()
        await receiver.close()

    with EmbeddedNats(max_payload=max_payload) as server:
        asyncio.run(scenario(server.url))


def test_an_error_echoing_a_huge_request_is_cut_to_fit() -> None:
    """An error too big for one message keeps its code, a cut message and its small details."""
    huge = "f" * 50_000
    error = RepoReaderError(
        code="INVALID_REQUEST",
        message=f"{huge}: Object contains unknown field `{huge}`",
        details={"field": huge, "content_type": "application/json"},
    )
    body = error_message("rid", error, max_payload=4096, encode=msgspec.json.encode)
    assert len(body) <= 4096
    (cut,) = msgspec.json.decode(body, type=ErrorReply).errors
    assert cut.code == "INVALID_REQUEST"
    assert cut.message == error.message[:ERROR_TEXT_BOUND]
    assert cut.details == {"content_type": "application/json", "truncated": True}
    small = RepoReaderError(code="NOT_FOUND", message="gone", details={"path": "a.py"})
    whole = error_message("rid", small, max_payload=4096, encode=msgspec.json.encode)
    assert msgspec.json.decode(whole, type=ErrorReply).errors == (small,)


def test_a_subject_with_a_list_is_answered_in_batches_that_join_to_the_answer() -> None:
    """Research answers come in batches that join back to the response; one batch is last."""
    response = RepoReaderResponse(
        request_id="r", resolved=RESOLVED, artifacts=tuple(artifact(i, 900) for i in range(12))
    )
    messages = reply_messages(response, Subject.RESEARCH, max_payload=4096, encode=ENCODE)
    batches = [DECODE(m) for m in messages]
    assert len(messages) > 1
    assert all(len(m) <= 4096 for m in messages)
    assert [b.last for b in batches] == [False] * (len(batches) - 1) + [True]
    assert join_batches(batches, "artifacts") == msgspec.structs.replace(response, last=True)


def test_a_subject_without_a_list_is_one_message() -> None:
    """A code.read answer is one message, whatever its size under the budget."""
    response = CodeReadResponse(
        request_id="r", repo="a/b", commit="c" * 40, path="f.py", content="x" * 1000
    )
    (message,) = reply_messages(response, Subject.CODE_READ, max_payload=4096, encode=ENCODE)
    assert msgspec.msgpack.decode(message, type=CodeReadResponse) == response


def test_a_message_over_the_budget_is_internal() -> None:
    """An answer of one message larger than the body budget is an InternalError, never sent."""
    response = CodeReadResponse(
        request_id="r", repo="a/b", commit="c" * 40, path="f.py", content="x" * 5000
    )
    with pytest.raises(InternalError, match="does not fit"):
        reply_messages(response, Subject.CODE_READ, max_payload=4096, encode=ENCODE)


def test_an_answer_of_another_subjects_type_is_internal() -> None:
    """A handler answering with the wrong response type is an InternalError, not bad bytes."""
    response = RepoReaderResponse(request_id="r", resolved=RESOLVED)
    with pytest.raises(InternalError, match="CodeSearchResponse"):
        reply_messages(response, Subject.CODE_SEARCH, max_payload=4096, encode=ENCODE)
