"""Tests of splitting research answers into messages under the max payload."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts import RepoReaderResponse, ResearchArtifact, ResolvedRepo
from worker.errors import InternalError
from worker.service.replies import item_batches

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
