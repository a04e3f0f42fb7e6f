"""Tests of the Software Heritage ids attached to artifacts."""

from __future__ import annotations

import hashlib

from swh.model.swhids import QualifiedSWHID

from worker.repos.swhid import content_swhid, origin_url


def test_swhid_carries_git_ids_and_qualifiers() -> None:
    """The content id is the git blob id and the anchor the commit, with path and lines."""
    data = b"print('hi')\n"
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    swhid = content_swhid(
        blob=blob,
        origin="https://example.org/a/b.git",
        commit="c" * 40,
        path="src/x;y.py",
        start_line=3,
        end_line=9,
    )
    assert swhid == (
        f"swh:1:cnt:{blob};origin=https://example.org/a/b.git;anchor=swh:1:rev:{'c' * 40};"
        "path=/src/x%3By.py;lines=3-9"
    )


def test_single_line_span() -> None:
    """A one-line span is written as a single number."""
    assert content_swhid(
        blob="a" * 40, origin="o", commit="b" * 40, path="p", start_line=4, end_line=4
    ).endswith(";lines=4")


def test_origin_drops_credentials_and_makes_paths_urls() -> None:
    """Credentials never reach a citation; local paths become file:// URLs."""
    assert origin_url("https://user:token@example.org/a/b.git") == "https://example.org/a/b.git"
    assert origin_url("/srv/git/a.git") == "file:///srv/git/a.git"


def test_the_reference_implementation_reads_back_what_was_written() -> None:
    """swh.model parses the SWHID to the same origin, path and lines, and writes it the same."""
    origin = origin_url("/srv/git/pallets+flask.git")
    swhid = content_swhid(
        blob="a" * 40,
        origin=origin,
        commit="b" * 40,
        path="src/a b;c%d.py",
        start_line=2,
        end_line=5,
    )
    parsed = QualifiedSWHID.from_string(swhid)
    assert parsed.origin == origin == "file:///srv/git/pallets+flask.git"
    assert parsed.path == b"/src/a b;c%d.py"
    assert parsed.lines == (2, 5)
    assert str(parsed.anchor) == f"swh:1:rev:{'b' * 40}"
    assert str(parsed) == swhid


def test_a_path_that_is_not_utf8_is_cited_by_its_bytes() -> None:
    """A path given as the bytes git stores is percent-encoded byte for byte, and the
    reference implementation reads those bytes back."""
    swhid = content_swhid(
        blob="a" * 40,
        origin="o",
        commit="b" * 40,
        path=b"caf\xe9/men\xfc.c",
        start_line=1,
        end_line=1,
    )
    assert ";path=/caf%E9/men%FC.c;" in swhid
    assert QualifiedSWHID.from_string(swhid).path == b"/caf\xe9/men\xfc.c"
