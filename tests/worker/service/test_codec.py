"""Tests of the wire codecs and the one exception-to-error mapping."""

from __future__ import annotations

import msgspec
import pytest

from contracts import CONTENT_TYPE_JSON, CONTENT_TYPE_MSGPACK, ErrorCode, RepoReaderRequest, Subject
from worker.errors import (
    InvalidRequest,
    RateLimited,
    RepoNotFound,
    UnknownFailure,
    failure_from_error,
)
from worker.service.codec import Codec, Codecs, error_from_exception

CODECS = Codecs({Subject.RESEARCH: RepoReaderRequest})


def test_content_type_picks_the_codec() -> None:
    """The header decides when present (parameters and case ignored); else a leading '{' is JSON."""
    json_header = {"Content-Type": "Application/JSON; charset=utf-8"}
    assert CODECS.for_message(json_header, b"\x81").content_type == CONTENT_TYPE_JSON
    assert (
        CODECS.for_message({"Content-Type": "application/msgpack"}, b"{}").content_type
        == CONTENT_TYPE_MSGPACK
    )
    assert CODECS.for_message(None, b'  {"query": "x"}').content_type == CONTENT_TYPE_JSON
    assert (
        CODECS.for_message(None, msgspec.msgpack.encode({"query": "x"})).content_type
        == CONTENT_TYPE_MSGPACK
    )


@pytest.mark.parametrize(
    ("document", "field"),
    [
        (b'{"query": "q", "repo_constraints": {"alowlist": []}}', "repo_constraints.alowlist"),
        (
            b'{"query": "q", "file_constraints": {"max_excerpt_chars": "ten"}}',
            "file_constraints.max_excerpt_chars",
        ),
        (
            b'{"query": "q", "repo_constraints": {"allowlist": ["ok/ok", "bad path"]}}',
            "repo_constraints.allowlist[1]",
        ),
        (b'{"colour": 1}', "colour"),
        (b'{"query": 1}', "query"),
    ],
)
def test_invalid_request_names_the_field(document: bytes, field: str) -> None:
    """A decoding failure is INVALID_REQUEST whose details name the offending field."""
    with pytest.raises(InvalidRequest) as info:
        CODECS.json.decode(Subject.RESEARCH, document)
    assert info.value.details["field"] == field
    assert info.value.message.startswith(field)


def test_a_string_off_its_pattern_is_told_what_the_field_wants() -> None:
    """A value off its pattern gets the field's description, and the pattern in details."""
    document = b'{"query": "q", "repo_constraints": {"allowlist": ["fmtlib/fmt=6.0.0"]}}'
    with pytest.raises(InvalidRequest) as info:
        CODECS.json.decode(Subject.RESEARCH, document)
    assert info.value.message == (
        "repo_constraints.allowlist[0]: expected a repository as owner/name, "
        "or a bare name when that is unambiguous"
    )
    assert info.value.details["pattern"].startswith("^")


def test_malformed_bytes_are_invalid_requests() -> None:
    """Bytes that are not JSON / MessagePack at all are INVALID_REQUEST, not a crash."""
    with pytest.raises(InvalidRequest, match="not valid JSON"):
        CODECS.json.decode(Subject.RESEARCH, b"{nope")
    with pytest.raises(InvalidRequest, match="not valid MessagePack"):
        CODECS.msgpack.decode(Subject.RESEARCH, b"\xc1")


@pytest.mark.parametrize(
    ("codec", "document"),
    [
        (CODECS.json, b'{"query": "\xff"}'),
        (CODECS.json, b'{"\xff": "x"}'),
        (CODECS.msgpack, bytes.fromhex("81 a5 71 75 65 72 79 a1 ff")),
        (CODECS.msgpack, bytes.fromhex("81 a1 ff a1 78")),
    ],
    ids=["json-value", "json-key", "msgpack-value", "msgpack-key"],
)
def test_invalid_utf8_in_a_string_is_an_invalid_request(codec: Codec, document: bytes) -> None:
    """A string (value or key) that is not UTF-8 is INVALID_REQUEST, not an unexpected error."""
    with pytest.raises(InvalidRequest, match="UTF-8") as info:
        codec.decode(Subject.RESEARCH, document)
    assert info.value.details["content_type"] == codec.content_type


def test_errors_map_to_the_wire_and_back() -> None:
    """Failures keep code, message and details; anything else is INTERNAL without leaking text."""
    error = error_from_exception(RepoNotFound("gone", repo="a/b"))
    assert (error.code, error.message, error.details) == (
        ErrorCode.REPO_NOT_FOUND,
        "gone",
        {"repo": "a/b"},
    )
    internal = error_from_exception(KeyError("secret path /etc/x"))
    assert internal.code == ErrorCode.INTERNAL
    assert "secret" not in msgspec.json.encode(internal).decode()
    again = failure_from_error(error.code, error.message, dict(error.details))
    assert isinstance(again, RepoNotFound)
    assert again.details == {"repo": "a/b"}
    limited = failure_from_error(ErrorCode.RATE_LIMITED, "slow down", {"retry_after_seconds": 2.5})
    assert isinstance(limited, RateLimited)
    assert limited.retry_after_seconds == 2.5
    newer = failure_from_error("QUOTA_EXHAUSTED", "spent", {"quota": 5})
    assert isinstance(newer, UnknownFailure)
    assert (newer.wire_code, newer.message, newer.details) == (
        "QUOTA_EXHAUSTED",
        "spent",
        {"quota": 5},
    )
