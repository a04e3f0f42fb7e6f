"""Tests of the trigram component of a segment: folded trigrams, postings per trigram."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.index.analysis import trigrams as trigram_postings
from worker.index.analysis.segment_builder import BlobSource, SegmentBuilder
from worker.index.analysis.trigrams import (
    DEFINITION_LINE,
    TrigramCollector,
    TrigramTables,
    definition_text,
    fold,
    trigrams_of,
)
from worker.index.store.segment import Segment, read_segment_tables, segment_id, write_segment


def code(text: bytes) -> int:
    return int(trigrams_of(text)[0])


def test_trigrams_are_folded_and_distinct() -> None:
    """Trigrams come from lower-cased text, once each, ascending."""
    codes = trigrams_of(fold(b"ABab\xe2\x84\xaaAB"))
    assert list(codes) == sorted(set(codes.tolist()))
    assert fold("KELVIN \u212a LONG \u017f".encode()) == b"kelvin k long s"
    assert len(trigrams_of(b"ab")) == 0


def lists_of(tables: TrigramTables) -> dict[int, list[int]]:
    trigrams = tables.trigrams.column("trigram").to_numpy()
    start = tables.trigrams.column("start").to_numpy()
    count = tables.trigrams.column("count").to_numpy()
    blobs = tables.postings.column("blob").to_numpy()
    assert trigrams.tolist() == sorted(trigrams.tolist())
    return {
        t: blobs[s : s + n].tolist()
        for t, s, n in zip(trigrams.tolist(), start.tolist(), count.tolist(), strict=True)
    }


def expected_lists(texts: list[bytes], *, definitions: bool) -> dict[int, list[int]]:
    expected: dict[int, list[int]] = {}
    for i, text in enumerate(texts):
        parts = definition_text(text).split(b"\n") if definitions else [text]
        found = set()
        for part in parts:
            found.update(trigrams_of(fold(part)).tolist())
        for code in sorted(found):
            expected.setdefault(code, []).append(i)
    return expected


WORDS = [
    b"def", b"class", b"fn", b"function", b"func", b"struct", b"#", b"define", b"#define",
    b"pub", b"public", b"static", b"export", b"final", b"finally", b"type_of", b"impl",
    b"Class", b"x", b"_", b"(", b" ", b"  ", b"\t", b"\r", b"\v", b"\n", b"\n", b"\xe2\x84\xaa",
    b"\xc5\xbf", b"K", b"\x00",
]  # fmt: skip
texts_strategy = st.lists(
    st.one_of(
        st.lists(st.sampled_from(WORDS), max_size=12).map(b"".join),
        st.binary(max_size=40),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(texts=texts_strategy)
def test_postings_list_exactly_the_blobs_holding_each_trigram(texts: list[bytes]) -> None:
    """Each trigram's lists are every blob whose folded text, and whose definition lines,
    hold it: ascending, no repeats, whatever the batches."""
    collector = TrigramCollector()
    collector.add(texts[:3], list(range(min(3, len(texts)))))
    collector.add(texts[3:], list(range(3, len(texts))))
    text, definitions = collector.tables()
    assert lists_of(text) == expected_lists(texts, definitions=False)
    assert lists_of(definitions) == expected_lists(texts, definitions=True)


@settings(max_examples=150, deadline=None)
@given(texts_strategy)
def test_each_blob_keeps_its_definition_lines_with_their_line_breaks(texts: list[bytes]) -> None:
    """A blob's definition lines are kept as the slow way finds them, in blob order, and a
    blob never added has none."""
    collector = TrigramCollector()
    collector.add(texts[:3], [2 * i for i in range(min(3, len(texts)))])
    collector.add(texts[3:], [2 * i for i in range(3, len(texts))])
    kept = collector.definition_texts(2 * len(texts) + 1).to_pylist()
    expected = [b""] * (2 * len(texts) + 1)
    for i, text in enumerate(texts):
        expected[2 * i] = definition_text(text)
    assert kept == expected


def test_definition_text_keeps_each_lines_own_break() -> None:
    """Definition lines in order, each with its line break; a last line has none to keep."""
    assert definition_text(b"def a():\n  x = 1\nclass B: pass") == b"def a():\nclass B: pass"
    assert definition_text(b"x\r\nstruct s {\r\n}\n") == b"struct s {\r\n"
    assert definition_text(b"int x;\n") == b""


def test_many_pairs_in_batches_get_every_blob_in_order() -> None:
    """A segment with many pairs, added in batches, lists each trigram's blobs in order."""
    texts = [bytes(range(i, 256)) * 3 + b"def x%d():" % i for i in range(40)]
    collector = TrigramCollector()
    for first in range(0, len(texts), 10):
        collector.add(texts[first : first + 10], list(range(first, first + 10)))
    for tables, definitions in zip(collector.tables(), (False, True), strict=True):
        assert lists_of(tables) == expected_lists(texts, definitions=definitions)


@settings(max_examples=100, deadline=None)
@given(
    codes=st.lists(
        st.lists(
            st.one_of(st.sampled_from([0, 63, 64, (1 << 24) - 1]), st.integers(0, (1 << 24) - 1)),
            unique=True,
            max_size=30,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_trigrams_anywhere_in_their_space_get_their_own_list(codes: list[list[int]]) -> None:
    """Pairs of any trigram (the first and last of the space too, a word's top bit) are
    listed under that trigram, trigrams ascending, blobs in the order they came."""
    parts = [
        (np.asarray(blob_codes, np.uint32), np.asarray([blob]), np.asarray([len(blob_codes)]))
        for blob, blob_codes in enumerate(codes)
    ]
    expected: dict[int, list[int]] = {}
    for blob, blob_codes in enumerate(codes):
        for trigram in sorted(blob_codes):
            expected.setdefault(trigram, []).append(blob)
    assert lists_of(trigram_postings._tables(parts)) == dict(sorted(expected.items()))


def test_definition_lines_are_found_in_any_language() -> None:
    """Keywords after modifiers on a word boundary, or #define, start a definition line;
    the compiled pass finds the same ones."""
    found = [
        b"def handle(self):",
        b"  pub fn main() {",
        b"export async function App() {",
        b"public static class Router {",
        b"#  define MAX 3",
        b"#\tdefine MIN 1",
        b"#define F(a) a",
        b"struct foo_ops {",
        b"fn",
    ]
    missed = [
        b"int main(void)",
        b"classify(x)",
        b"finally:",
        b"type_of(x)",
        b"Class X",
        b"#x",
        b"#",
    ]
    for line in found:
        assert DEFINITION_LINE.match(line), line
    for line in missed:
        assert not DEFINITION_LINE.match(line), line
    text = b"\n".join(found + missed)
    assert definition_text(text) == b"".join(f + b"\n" for f in found)
    collector = TrigramCollector()
    collector.add([text], [0])
    assert collector.definition_texts(1).to_pylist() == [definition_text(text)]


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
        assert [segment.definition_lines[blob] for blob in range(3)] == [
            b"def handle_request(self):\n",
            b"",
            b"",
        ]
    _, stored = read_segment_tables(tmp_path / seg_id)
    assert np.array_equal(
        stored.trigram_postings.column("blob").to_numpy(),
        tables.trigram_postings.column("blob").to_numpy(),
    )
