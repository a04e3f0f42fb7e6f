"""Tests of the trigram component of a segment: folded trigrams, postings per trigram."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.search.analysis import BlobSource, SegmentBuilder
from worker.search.segment import Segment, read_segment_tables, segment_id, write_segment
from worker.search.trigram_postings import TrigramCollector, fold, trigram_text, trigrams_of


def code(text: bytes) -> int:
    return int(trigrams_of(text)[0])


def test_trigrams_are_folded_and_distinct() -> None:
    """Trigrams come from lower-cased text, once each, ascending."""
    codes = trigrams_of(fold(b"ABab\xe2\x84\xaaAB"))
    assert list(codes) == sorted(set(codes.tolist()))
    assert fold("KELVIN \u212a LONG \u017f".encode()) == b"kelvin k long s"
    assert len(trigrams_of(b"ab")) == 0
    assert trigram_text(code(b"abc")) == "abc"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=60), min_size=1, max_size=8))
def test_postings_list_exactly_the_blobs_holding_each_trigram(texts: list[bytes]) -> None:
    """Each trigram's list is every blob whose folded text holds it, ascending, no repeats."""
    collector = TrigramCollector()
    collector.add(texts[:3], list(range(min(3, len(texts)))))
    collector.add(texts[3:], list(range(3, len(texts))))
    tables = collector.tables()
    trigrams = tables.trigrams.column("trigram").to_numpy()
    start = tables.trigrams.column("start").to_numpy()
    count = tables.trigrams.column("count").to_numpy()
    blobs = tables.postings.column("blob").to_numpy()
    expected: dict[int, list[int]] = {}
    for i, text in enumerate(texts):
        for c in trigrams_of(fold(text)).tolist():
            expected.setdefault(c, []).append(i)
    assert trigrams.tolist() == sorted(expected)
    for t, s, n in zip(trigrams.tolist(), start.tolist(), count.tolist(), strict=True):
        assert blobs[s : s + n].tolist() == expected[t]


def test_a_segment_answers_which_blobs_hold_a_trigram(tmp_path: Path) -> None:
    """A stored segment maps back with the same trigram lists; binary blobs have none."""
    sources = [
        BlobSource(b"\x01" * 20, "a.py", b"def handle_request(self):\n    return None\n"),
        BlobSource(b"\x02" * 20, "logo.png", b"\x00\x01binary handle\x00"),
        BlobSource(b"\x03" * 20, "b.txt", b"Handle REQUEST loudly\n"),
    ]
    builder = SegmentBuilder(1 << 20)
    builder.add(sources)
    tables = builder.tables()
    seg_id = segment_id([s.oid for s in sources])
    in_memory = Segment(seg_id, tables)
    mapped = Segment.open(write_segment(tmp_path, seg_id, tables))
    for segment in (in_memory, mapped):
        assert segment.text_trigrams(trigrams_of(b"han"))[0].tolist() == [0, 2]
        assert segment.text_trigrams(trigrams_of(b"def"))[0].tolist() == [0]
        assert segment.text_trigrams(trigrams_of(b"bin"))[0].tolist() == []
        assert segment.text_trigrams(trigrams_of(b"zzz"))[0].tolist() == []
        assert segment.definition_trigrams(trigrams_of(b"han"))[0].tolist() == [0]
        assert segment.definition_trigrams(trigrams_of(b"ret"))[0].tolist() == []
    _, stored = read_segment_tables(tmp_path / seg_id)
    assert np.array_equal(
        stored.trigram_postings.column("blob").to_numpy(),
        tables.trigram_postings.column("blob").to_numpy(),
    )
