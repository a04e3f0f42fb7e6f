"""The graph wire types: strict requests with bounded fields, forward-compatible responses."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts.graph import (
    GraphDiffRequest,
    GraphDiffResponse,
    GraphEntity,
    GraphRetrieveRequest,
    GraphRetrieveResponse,
    GraphSearchRequest,
    GraphSearchResponse,
    GraphTraverseRequest,
    GraphTraverseResponse,
    Snippet,
)

SEARCH = b'{"repo": "a/b", "query": "x", '
WALK = b'{"repo": "a/b", "start_entities": ["x"], '
ENUM = "Invalid enum value"


@pytest.mark.parametrize(
    ("request_type", "document", "fragment"),
    [
        (GraphSearchRequest, b'{"repo": "a/b", "query": "x", "limt": 3}', "`limt`"),
        (GraphSearchRequest, b'{"repo": "a/b", "query": ""}', "length >= 1"),
        (GraphSearchRequest, b'{"repo": "a/b", "query": "x", "limit": 101}', "<= 100"),
        (GraphSearchRequest, SEARCH + b'"entity_types": ["method"]}', ENUM),
        (GraphSearchRequest, SEARCH + b'"snippet_mode": "all"}', ENUM),
        (GraphTraverseRequest, b'{"repo": "a/b", "start_entities": []}', "length >= 1"),
        (GraphTraverseRequest, b'{"repo": "a/b", "start_entities": ["x"], "depth": 6}', "<= 5"),
        (GraphTraverseRequest, WALK + b'"direction": "up"}', ENUM),
        (GraphTraverseRequest, WALK + b'"relations": ["calls"]}', ENUM),
        (GraphRetrieveRequest, b'{"repo": "a/b", "entity_ids": ["x"], "include_context": 99}', "5"),
        (GraphDiffRequest, b'{"repo": "a/b", "base": "v1"}', "`head`"),
    ],
)  # fmt: skip
def test_requests_are_strict(request_type: type, document: bytes, fragment: str) -> None:
    """A misspelled field, an empty or out-of-range value, an unknown enum is refused by name."""
    with pytest.raises(msgspec.ValidationError, match=fragment):
        msgspec.json.decode(document, type=request_type)


def test_responses_tolerate_unknown_fields() -> None:
    """A client decodes a response carrying fields a newer server added."""
    document = (
        b'{"request_id": "r", "entities": [{"id": "a.py:f", "name": "f", "entity_type": '
        b'"function", "file_path": "a.py", "score": 1.0, "new": 1}], "added_later": true}'
    )
    decoded = msgspec.json.decode(document, type=GraphSearchResponse)
    assert decoded.entities[0].id == "a.py:f"


ENTITY = b'"id": "a.py:f", "name": "f", "file_path": "a.py"'


@pytest.mark.parametrize(
    ("response_type", "document", "newer"),
    [
        (GraphSearchResponse, b'{"request_id": "r", "entities": [{' + ENTITY +
            b', "score": 1.0, "entity_type": "method"}]}', "method"),
        (GraphTraverseResponse, b'{"request_id": "r", "nodes": [{' + ENTITY +
            b', "depth": 0, "entity_type": "module"}]}', "module"),
        (GraphTraverseResponse, b'{"request_id": "r", "edges": [{"source": "a", "target": "b", '
            b'"relation": "override"}]}', "override"),
        (GraphRetrieveResponse, b'{"request_id": "r", "entities": [{' + ENTITY +
            b', "code": "", "entity_type": "interface"}]}', "interface"),
        (GraphDiffResponse, b'{"request_id": "r", "base_commit": "b", "head_commit": "h", '
            b'"entities": [{' + ENTITY + b', "entity_type": "file", "change": "moved"}]}',
            "moved"),
    ],
)  # fmt: skip
def test_responses_read_a_newer_servers_values_as_text(
    response_type: type, document: bytes, newer: str
) -> None:
    """An entity type, relation or change this version never sends still decodes, as sent."""
    decoded = msgspec.json.decode(document, type=response_type)
    assert newer in repr(decoded)


def test_snippets_leave_out_the_modes_not_asked_for() -> None:
    """Only the snippet mode asked for is on the wire."""
    assert msgspec.json.encode(Snippet(fold="def f():")) == b'{"fold":"def f():"}'


@given(
    st.builds(
        GraphEntity,
        id=st.text(min_size=1),
        name=st.text(),
        entity_type=st.sampled_from(["directory", "file", "class", "function"]),
        file_path=st.text(),
        line_range=st.none() | st.tuples(st.integers(1, 10**6), st.integers(1, 10**6)),
        score=st.floats(0, 1),
        snippet=st.none() | st.builds(Snippet, preview=st.text()),
    )
)
def test_entities_round_trip_in_both_encodings(entity: GraphEntity) -> None:
    """An entity decodes to itself from JSON and MessagePack."""
    for codec in (msgspec.json, msgspec.msgpack):
        assert codec.decode(codec.encode(entity), type=GraphEntity) == entity
