"""Tests of the research wire types: strict requests, tolerant responses, schemas."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts import ErrorCode, ErrorReply, RepoReaderError, RepoReaderRequest, RepoReaderResponse
from contracts.registry import MESSAGES, json_schemas

requests = st.builds(
    RepoReaderRequest,
    query=st.text(min_size=1, max_size=200),
)


@given(requests)
def test_request_round_trips_through_both_encodings(request: RepoReaderRequest) -> None:
    """Any request survives MessagePack and JSON unchanged."""
    assert (
        msgspec.msgpack.decode(msgspec.msgpack.encode(request), type=RepoReaderRequest) == request
    )
    assert msgspec.json.decode(msgspec.json.encode(request), type=RepoReaderRequest) == request


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        (b'{"query": "x", "colour": 1}', "unknown field `colour`"),
        (b'{"query": "x", "file_constraints": {"max_excerpt_char": 5}}', "`max_excerpt_char`"),
        (b'{"query": ""}', "length >= 1"),
        (b'{"query": "x", "result_limits": {"max_total_excerpts": 0}}', ">= 1"),
        (b'{"query": "x", "file_constraints": {"allowed_extensions": ["py"]}}', "regex"),
        (b'{"query": "x", "repo_constraints": {"allowlist": ["../etc"]}}', "regex"),
        (b'{"query": "x", "repo_constraints": {"allowlist": ["a/.."]}}', "regex"),
        (b'{"query": "x", "repo_constraints": {"denylist": ["a/b/c"]}}', "regex"),
        (b'{"query": "x", "repo_constraints": {"revisions": {"a/b": "HEAD~1"}}}', "regex"),
        (b'{"query": 3}', "Expected `str`"),
        (b"{}", "missing required field `query`"),
    ],
)
def test_request_is_strict(document: bytes, fragment: str) -> None:
    """Unknown fields, misspelt constraints and out-of-range values are refused."""
    with pytest.raises(msgspec.ValidationError, match=None) as info:
        msgspec.json.decode(document, type=RepoReaderRequest)
    assert fragment in str(info.value)


def test_response_tolerates_unknown_fields() -> None:
    """A client ignores response fields it does not know (forward compatibility)."""
    document = b'{"request_id": "r", "batch": 0, "last": true, "added_later": {"x": 1}}'
    assert msgspec.json.decode(document, type=RepoReaderResponse).request_id == "r"


def test_error_reply_decodes_as_every_response_type() -> None:
    """An error reply decodes with the response type of whatever subject was asked."""
    reply = ErrorReply(
        request_id="r1",
        errors=(RepoReaderError(code=ErrorCode.TIMEOUT, message="late", details={"s": 1}),),
    )
    data = msgspec.msgpack.encode(reply)
    for _, response_type in MESSAGES.values():
        decoded = msgspec.msgpack.decode(data, type=response_type)
        assert decoded.errors == reply.errors  # type: ignore[attr-defined]


def test_schemas_cover_every_subject() -> None:
    """The JSON Schema document names a request and response schema for each subject."""
    document = json_schemas()
    for subject in MESSAGES:
        pair = document["x-subjects"][subject.value]  # type: ignore[index]
        for ref in pair.values():
            assert ref["$ref"].removeprefix("#/$defs/") in document["$defs"]  # type: ignore[operator]
