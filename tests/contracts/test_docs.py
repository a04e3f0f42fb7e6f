"""Tests of the docs.* wire types: strict requests naming registered repositories and known
document types."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts.docs import DOC_PATHS, DOC_TYPES, DocsRegenerateRequest, DocsRegenerateResponse
from contracts.subjects import MIRROR_SUBJECTS, WORKER_SUBJECTS, Subject


@given(st.lists(st.sampled_from(DOC_TYPES), min_size=1, max_size=len(DOC_TYPES), unique=True))
def test_any_choice_of_document_types_round_trips(doc_types: list[str]) -> None:
    """Every non-empty choice of known types decodes as sent, in its order."""
    document = msgspec.json.encode({"repo": "pallets/flask", "doc_types": doc_types})
    decoded = msgspec.json.decode(document, type=DocsRegenerateRequest)
    assert decoded.doc_types == tuple(doc_types)


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        (b'{"repo": "a/b", "doc_types": ["readme"]}', "Invalid enum value 'readme'"),
        (b'{"repo": "a/b", "doc_types": []}', "length >= 1"),
        (b'{"repo": "../b"}', "regex"),
        (b'{"repo": "/etc/passwd"}', "regex"),
        (b'{"repo_path": "a/b"}', "`repo_path`"),
        (b'{"repo": "a/b", "output_path": "/tmp/x"}', "`output_path`"),
    ],
)
def test_bad_requests_name_the_field(document: bytes, fragment: str) -> None:
    """Unknown types, paths for repositories and unknown fields are refused, named."""
    with pytest.raises(msgspec.ValidationError, match=fragment.replace("[", r"\[")):
        msgspec.json.decode(document, type=DocsRegenerateRequest)


def test_the_engine_is_the_mirrors_alone() -> None:
    """docs.regenerate is a mirror subject, never a worker's; every type has a path."""
    assert Subject.DOCS_REGENERATE in MIRROR_SUBJECTS
    assert Subject.DOCS_REGENERATE not in WORKER_SUBJECTS
    assert set(DOC_PATHS) == set(DOC_TYPES)


def test_a_newer_servers_document_type_and_status_decode() -> None:
    """An answer with a document type and a status this version never sends still decodes."""
    document = (
        b'{"request_id": "r", "documents": [{"doc_type": "changelog", "path": "CHANGELOG.md", '
        b'"status": "queued", "generated_from": "abc"}]}'
    )
    (state,) = msgspec.json.decode(document, type=DocsRegenerateResponse).documents
    assert (state.doc_type, state.status) == ("changelog", "queued")
