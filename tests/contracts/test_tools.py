"""Tests of the tool wire types (contracts.code, .git, .repo): strict requests, shared errors."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts import (
    CodeListRequest,
    CodeReadRequest,
    CodeSearchRequest,
    ErrorCode,
    ErrorReply,
    GitChurnRequest,
    GitHistoryRequest,
    RepoReaderError,
    RepoStatusRequest,
)
from contracts.registry import MESSAGES
from contracts.subjects import ADMIN_SUBJECTS, Subject

TOOL_SUBJECTS = [s for s in MESSAGES if s != Subject.RESEARCH and s not in ADMIN_SUBJECTS]


def test_every_tool_subject_is_registered() -> None:
    """Each of the six tool subjects, four graph subjects and docs.regenerate has a request
    and a response type."""
    assert {s.capability for s in TOOL_SUBJECTS} == {
        "code.search", "code.read", "code.list", "git.history", "git.churn", "repo.status",
        "graph.search", "graph.traverse", "graph.retrieve", "graph.diff", "docs.regenerate",
    }  # fmt: skip


@pytest.mark.parametrize("subject", TOOL_SUBJECTS, ids=lambda s: s.capability)
def test_an_error_reply_decodes_as_each_tool_response(subject: Subject) -> None:
    """Every tool response has the error reply's fields and defaults for all others."""
    reply = ErrorReply(
        request_id="r1",
        errors=(RepoReaderError(code=ErrorCode.NOT_FOUND, message="gone", details={"x": 1}),),
    )
    _, response_type = MESSAGES[subject]
    for codec in (msgspec.json, msgspec.msgpack):
        decoded = codec.decode(codec.encode(reply), type=response_type)
        assert decoded.request_id == "r1"
        assert decoded.errors == reply.errors


@pytest.mark.parametrize(
    ("request_type", "document", "fragment"),
    [
        (CodeSearchRequest, b'{"repo": "a/b", "query": "x", "max_result": 3}', "`max_result`"),
        (CodeSearchRequest, b'{"repo": "a/b", "query": ""}', "length >= 1"),
        (CodeSearchRequest, b'{"repo": "a/b", "query": "x", "context_lines": 2}', ">= 3"),
        (CodeSearchRequest, b'{"repo": "a/b", "query": "x", "context_lines": 6}', "<= 5"),
        (CodeSearchRequest, b'{"repo": "a/b", "query": "x", "extensions": ["py"]}', "regex"),
        (CodeSearchRequest, b'{"repo": "a/b", "query": "x", "language": "c c"}', "regex"),
        (CodeSearchRequest, b'{"repo": "../b", "query": "x"}', "regex"),
        (CodeReadRequest, b'{"repo": "a/b", "path": ""}', "length >= 1"),
        (CodeReadRequest, b'{"repo": "a/b", "path": "x", "start_line": 0}', ">= 1"),
        (CodeReadRequest, b'{"repo": "a/b", "path": "x", "revision": "HEAD~1"}', "regex"),
        (CodeListRequest, b'{"repo": "a/b", "recursive": "yes"}', "Expected `bool`"),
        (GitHistoryRequest, b'{"repo": "a/b", "since_days": 0}', ">= 1"),
        (GitChurnRequest, b'{"repo": "a/b", "time_window": "7 days"}', "regex"),
        (GitChurnRequest, b'{"repo": "a/b", "depth": 0}', ">= 1"),
        (RepoStatusRequest, b'{"repo": "a/b", "revision": "main"}', "`revision`"),
        (RepoStatusRequest, b"{}", "missing required field `repo`"),
    ],
)
def test_tool_requests_are_strict(
    request_type: type[msgspec.Struct], document: bytes, fragment: str
) -> None:
    """Unknown fields, wrong types and out-of-range values are refused, never ignored."""
    with pytest.raises(msgspec.ValidationError) as info:
        msgspec.json.decode(document, type=request_type)
    assert fragment in str(info.value)


@given(
    window=st.from_regex(r"\A[1-9][0-9]{0,3}[dwmy]\Z"),
    depth=st.integers(min_value=1, max_value=1000),
)
def test_churn_windows_round_trip(window: str, depth: int) -> None:
    """Every window the pattern allows decodes, and survives both encodings."""
    request = GitChurnRequest(repo="acme/widgets", time_window=window, depth=depth)
    for codec in (msgspec.json, msgspec.msgpack):
        assert codec.decode(codec.encode(request), type=GitChurnRequest) == request


@given(
    path=st.text(max_size=100),
    start=st.integers(min_value=1, max_value=2**40),
    span=st.integers(0, 100),
)
def test_read_requests_round_trip(path: str, start: int, span: int) -> None:
    """Read requests keep their path text exactly (validation against the tree is the worker's)."""
    request = CodeReadRequest(
        repo="widgets", path=path or "x", start_line=start, end_line=start + span
    )
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(request), type=CodeReadRequest) == request
