"""Tests of trigram segments: building, storing atomically, memory-mapping, format checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from worker.codesearch.segments import (
    BlobText,
    SegmentFormatError,
    build_segment,
    open_segment,
    write_arrow,
    write_segment,
)
from worker.codesearch.trigrams import fold, trigrams_of


def blob(n: int) -> bytes:
    return bytes([n]) * 20


TEXTS = {
    blob(3): b"def handle_request(self):\n    return None\n",
    blob(1): b"class Router:\n    routes = {}\n",
    blob(2): b"\x00\x01binary\x00data",
    blob(4): b"Handle REQUEST loudly\n",
}


def code(text: bytes) -> int:
    return int(trigrams_of(text, folded=True)[0])


def test_trigrams_are_folded_and_unique() -> None:
    """Trigrams are taken from lower-cased text, once each, in ascending order."""
    codes = trigrams_of(b"ABab\xe2\x84\xaaAB")
    assert list(codes) == sorted(set(codes.tolist()))
    assert fold("KELVIN \u212a LONG \u017f".encode()) == b"kelvin k long s"
    assert len(trigrams_of(b"ab")) == 0


def test_postings_list_every_text_blob_holding_a_trigram() -> None:
    """Each trigram maps to the ordinals (blob-id order) of the text blobs containing it."""
    segment = build_segment([BlobText(blob=b, data=d) for b, d in TEXTS.items()])
    assert [bytes(row) for row in segment.blob_ids] == sorted(TEXTS)
    assert segment.binary.tolist() == [False, True, False, False]
    assert segment.ordinals(code(b"han")).tolist() == [2, 3]
    assert segment.ordinals(code(b"rou")).tolist() == [0]
    assert segment.ordinals(code(b"bin")).tolist() == []  # binary blobs are not indexed
    assert segment.ordinals(code(b"zzz")).tolist() == []


def test_a_stored_segment_maps_back_identically(tmp_path: Path) -> None:
    """Writing then memory-mapping a segment gives the same arrays and the same id."""
    segment = build_segment([BlobText(blob=b, data=d) for b, d in TEXTS.items()])
    path = write_segment(tmp_path, segment)
    assert path.name == segment.id
    mapped = open_segment(path)
    assert mapped.id == segment.id
    for name in ("blob_ids", "sizes", "binary", "trigrams", "offsets", "postings"):
        assert np.array_equal(getattr(mapped, name), getattr(segment, name)), name
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


def test_segments_are_content_addressed(tmp_path: Path) -> None:
    """The same blobs give the same segment id; storing it again keeps the first copy."""
    first = build_segment([BlobText(blob=b, data=d) for b, d in TEXTS.items()])
    again = build_segment([BlobText(blob=b, data=d) for b, d in reversed(TEXTS.items())])
    assert first.id == again.id
    path = write_segment(tmp_path, first)
    stamp = (path / "postings.arrow").stat().st_mtime_ns
    write_segment(tmp_path, again)
    assert (path / "postings.arrow").stat().st_mtime_ns == stamp


def test_an_empty_segment_round_trips(tmp_path: Path) -> None:
    """A segment of binary blobs only has no postings and still opens."""
    segment = build_segment([BlobText(blob=blob(9), data=b"\x00")])
    mapped = open_segment(write_segment(tmp_path, segment))
    assert len(mapped) == 1
    assert mapped.ordinals(code(b"abc")).tolist() == []


def test_another_format_version_is_refused(tmp_path: Path) -> None:
    """A file without this version's format marker is reported, never misread."""
    path = write_segment(tmp_path, build_segment([BlobText(blob=blob(5), data=b"hello")]))
    table = pa.table({"trigram": pa.array([1], pa.uint32())}).replace_schema_metadata(
        {b"repo_reader.format": b"trigram-postings/999"}
    )
    write_arrow(path / "postings.arrow", table)
    with pytest.raises(SegmentFormatError, match="999"):
        open_segment(path)
    with pytest.raises(SegmentFormatError):
        open_segment(tmp_path / "missing")
