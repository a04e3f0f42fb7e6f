"""Tests for worker.index.store.segment: the term dictionary over a mapped, sorted terms table;
a segment's blob ids."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.index.analysis.segment_builder import BlobSource, SegmentBuilder
from worker.index.store.segment import (
    Segment,
    TermDictionary,
    read_table,
    segment_id,
    write_segment,
    write_table,
)

TERMS = st.lists(st.text(min_size=1, max_size=12), max_size=1500, unique=True)


def terms_table(terms: list[str]) -> pa.Table:
    ordered = sorted(terms, key=str.encode)
    return pa.table(
        {
            "term": pa.array(ordered, pa.string()),
            "start": pa.array(np.arange(len(ordered), dtype=np.int64) * 10),
            "count": pa.array(np.arange(len(ordered), dtype=np.int32) + 1),
        }
    )


@settings(max_examples=60, deadline=None)
@given(terms=TERMS, absent=st.lists(st.text(max_size=12), max_size=20))
def test_lookup_finds_every_term_and_nothing_else(terms: list[str], absent: list[str]) -> None:
    """Every stored term maps to its own (start, count), across sampled blocks; others miss."""
    table = terms_table(terms)
    lookup = TermDictionary(table)
    for row, term in enumerate(table.column("term").to_pylist()):
        assert lookup(term) == (row * 10, row + 1)
    for term in set(absent) - set(terms):
        assert lookup(term) is None


def test_lookup_reads_a_written_table_block_by_block(tmp_path: Path) -> None:
    """A table written, flushed and mapped back answers lookups on both sides of block edges."""
    terms = [f"term{i:05d}" for i in range(3 * TermDictionary.SAMPLE_EVERY + 7)]
    path = tmp_path / "terms.arrow"
    write_table(path, terms_table(terms))
    lookup = TermDictionary(read_table(path))
    edge = TermDictionary.SAMPLE_EVERY
    for i in (0, edge - 1, edge, edge + 1, 2 * edge, len(terms) - 1):
        assert lookup(terms[i]) == (i * 10, i + 1)
    assert lookup("term") is None
    assert lookup("term00255x") is None
    assert lookup("zzz") is None


@settings(max_examples=30, deadline=None)
@given(
    oids=st.lists(st.binary(min_size=20, max_size=20), min_size=1, max_size=12, unique=True),
    data=st.data(),
)
def test_oids_come_back_in_blob_order_across_sliced_chunks(
    oids: list[bytes], data: st.DataObject
) -> None:
    """A segment's blob ids read from its column's buffers are those of `to_pylist`, also
    when the column is in chunks that start inside their buffers."""
    builder = SegmentBuilder(1 << 20)
    builder.add(BlobSource(oid, f"f{i}.py", b"x = 1\n") for i, oid in enumerate(oids))
    tables = builder.tables()
    cut = data.draw(st.integers(0, len(oids)))
    blobs = pa.concat_tables([tables.blobs.slice(0, cut), tables.blobs.slice(cut)])
    segment = Segment(segment_id(oids), dataclasses.replace(tables, blobs=blobs))
    assert segment.oids() == oids == blobs.column("oid").to_pylist()


def test_a_scanned_component_holds_the_rows_the_mapped_one_does(tmp_path: Path) -> None:
    """Entities and references read whole from a stored segment, or taken from one held in
    memory, are the tables the segment maps."""
    sources = [
        BlobSource(b"\x01" * 20, "a.py", b"import os\n\ndef f():\n    return g()\n"),
        BlobSource(b"\x02" * 20, "b.py", b"class C:\n    def m(self):\n        self.n()\n"),
    ]
    builder = SegmentBuilder(1 << 20)
    builder.add(sources)
    tables = builder.tables()
    seg_id = segment_id([s.oid for s in sources])
    stored = Segment.open(write_segment(tmp_path, seg_id, tables))
    in_memory = Segment(seg_id, tables)
    for component in ("entities", "references"):
        expected = getattr(tables, component)
        assert expected.num_rows > 0
        assert stored.scanned(component).equals(expected)
        assert in_memory.scanned(component) is expected
