"""Tests of the edge's NATS-free decisions: request ids, disabled capabilities, error messages."""

from __future__ import annotations

import msgspec
import pytest

from contracts import ErrorCode, ErrorReply, Subject
from contracts.subjects import REQUEST_ID_MAX_LENGTH
from worker.errors import CapabilityDisabled, LimitExceeded
from worker.service.exchange import (
    check_enabled,
    error_reply,
    header_value,
    reply_headers,
    request_id_of,
)
from worker.service.replies import header_size


def test_request_ids_are_kept_made_or_refused() -> None:
    """A plain id is kept; none gets a fresh one; a malformed one a fresh one and a refusal."""
    assert request_id_of("orchestrator:42") == ("orchestrator:42", None)
    fresh, refusal = request_id_of(None)
    assert len(fresh) == 32
    assert refusal is None
    for bad in ("has space", "x" * (REQUEST_ID_MAX_LENGTH + 1)):
        fresh, refusal = request_id_of(bad)
        assert fresh != bad
        assert refusal is not None
        assert refusal.details["length"] == len(bad)


def test_a_disabled_capability_is_refused() -> None:
    """CAPABILITY_DISABLED names the capability; an enabled one passes."""
    check_enabled(Subject.CODE_READ, enabled=True)
    with pytest.raises(CapabilityDisabled) as refusal:
        check_enabled(Subject.CODE_READ, enabled=False)
    assert refusal.value.details == {"capability": "code.read"}


def test_an_error_reply_fits_max_payload_with_its_headers() -> None:
    """The error message and its headers stay within max payload, the error cut if need be."""
    exc = LimitExceeded("x" * 5000, field="y" * 5000, limit=3)
    headers = reply_headers("application/msgpack", "r1")
    error, out_headers, body = error_reply(
        exc, request_id="r1", headers=headers, max_payload=2048, encode=msgspec.msgpack.encode
    )
    assert error.code == ErrorCode.LIMIT_EXCEEDED
    assert out_headers["Nats-Service-Error-Code"] == "LIMIT_EXCEEDED"
    assert len(body) + header_size(out_headers) <= 2048
    (sent,) = msgspec.msgpack.decode(body, type=ErrorReply).errors
    assert sent.details == {"limit": 3, "truncated": True}


def test_header_values_are_one_bounded_line() -> None:
    """Line breaks become spaces and the value stops at 200 characters."""
    assert header_value("a\nb\r\nc") == "a b c"
    assert len(header_value("x" * 500)) == 200
