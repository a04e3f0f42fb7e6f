"""Splitting a research answer into reply messages that each fit under the server's max payload."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from contracts.research import RepoReaderResponse, ResearchArtifact, ResolvedRepo
from worker.errors import InternalError

# Room for what sizes measured on an empty envelope miss: a larger batch index, NATS headers.
ENVELOPE_ALLOWANCE: Final = 512


def research_batches(
    request_id: str,
    resolved: Sequence[ResolvedRepo],
    artifacts: Sequence[ResearchArtifact],
    *,
    max_payload: int,
    encode: Callable[[Any], bytes],
) -> list[bytes]:
    """Encoded RepoReaderResponse messages in order; the last one has `last` set.

    Artifacts are packed greedily in answer order, so the same answer always splits
    the same way.
    """
    budget = max_payload - ENVELOPE_ALLOWANCE
    first = len(encode(RepoReaderResponse(request_id=request_id, resolved=tuple(resolved))))
    later = len(encode(RepoReaderResponse(request_id=request_id)))
    if first > budget:
        raise InternalError(
            "the resolved commits alone exceed the server's max payload", max_payload=max_payload
        )
    groups: list[list[ResearchArtifact]] = [[]]
    used = first
    for artifact in artifacts:
        size = len(encode(artifact)) + 8  # + its share of the array header
        if later + size > budget:
            raise InternalError(
                "one artifact exceeds the server's max payload", max_payload=max_payload
            )
        if used + size > budget and groups[-1]:
            groups.append([])
            used = later
        groups[-1].append(artifact)
        used += size
    return [
        encode(
            RepoReaderResponse(
                request_id=request_id,
                batch=i,
                last=i == len(groups) - 1,
                artifacts=tuple(group),
                resolved=tuple(resolved) if i == 0 else (),
            )
        )
        for i, group in enumerate(groups)
    ]
