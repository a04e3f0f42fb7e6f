"""Tests of the client's transport-free half: request bytes, reading reply messages in order."""

from __future__ import annotations

import msgspec
import pytest

from contracts import CONTENT_TYPE_JSON, CONTENT_TYPE_MSGPACK, RepoReaderRequest, RepoReaderResponse
from contracts.errors import ErrorReply, RepoReaderError
from contracts.graph import GraphTraverseResponse
from worker.calls import AnswerReader, encode_request, request_headers
from worker.errors import InternalError, LimitExceeded, failure_from_error


def test_requests_are_encoded_as_asked() -> None:
    """JSON or MessagePack bodies, with the matching Content-Type and the request id."""
    request = RepoReaderRequest(query="x")
    assert (
        msgspec.json.decode(encode_request(request, json=True), type=RepoReaderRequest) == request
    )
    assert msgspec.msgpack.decode(encode_request(request, json=False))["query"] == "x"
    assert request_headers("r1", json=True) == {
        "Content-Type": CONTENT_TYPE_JSON,
        "Repo-Reader-Request-Id": "r1",
    }
    assert request_headers("r1", json=False)["Content-Type"] == CONTENT_TYPE_MSGPACK


def test_batches_are_read_until_the_last() -> None:
    """Each batch is kept in order; the one with `last` completes the answer."""
    reader = AnswerReader(RepoReaderResponse, json=False, request_id="r1")
    first = RepoReaderResponse(request_id="r1", batch=0, last=False)
    second = RepoReaderResponse(request_id="r1", batch=1, last=True)
    assert not reader.take(msgspec.msgpack.encode(first))
    assert reader.take(msgspec.msgpack.encode(second))
    assert reader.batches == [first, second]


def test_an_error_message_raises_its_failure() -> None:
    """An error reply raises the exception of its code with the service's details."""
    reader = AnswerReader(RepoReaderResponse, json=True, request_id="r1")
    error = RepoReaderError(code="LIMIT_EXCEEDED", message="too many", details={"limit": 3})
    with pytest.raises(LimitExceeded) as raised:
        reader.take(msgspec.json.encode(ErrorReply(request_id="r1", errors=(error,))))
    assert raised.value.details == {"limit": 3}


def test_a_batch_out_of_order_is_internal() -> None:
    """A batch that skips one is InternalError, never silently joined."""
    reader = AnswerReader(RepoReaderResponse, json=False, request_id="r1")
    with pytest.raises(InternalError):
        reader.take(msgspec.msgpack.encode(RepoReaderResponse(request_id="r1", batch=1)))


def test_an_answer_this_client_cannot_read_is_internal() -> None:
    """An answer the client's types cannot hold is InternalError, not a decoding exception
    the caller cannot tell from its own mistakes."""
    reader = AnswerReader(GraphTraverseResponse, json=True, request_id="r1")
    garbled = {"request_id": "r1", "edges": [{"source": "a.py", "target": 7}]}
    with pytest.raises(InternalError, match="could not be read"):
        reader.take(msgspec.json.encode(garbled))


def test_a_newer_servers_relation_is_read_as_text() -> None:
    """An answer naming a relation this client does not know (a newer server's) decodes."""
    reader = AnswerReader(GraphTraverseResponse, json=True, request_id="r1")
    newer = {
        "request_id": "r1",
        "edges": [{"source": "a.py", "target": "b.py", "relation": "reference"}],
    }
    assert reader.take(msgspec.json.encode(newer))
    assert reader.batches[0].edges[0].relation == "reference"


def test_every_failure_names_its_code_on_the_wire() -> None:
    """A known code's failure and a newer server's both give back the code that was sent."""
    for code in ("LIMIT_EXCEEDED", "INTERNAL", "QUOTA_EXHAUSTED"):
        assert failure_from_error(code, "m", {}).wire_code == code
