"""The segment builder: one blob a parser fails on is indexed as text, not lost with its batch."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from worker.index.analysis import references
from worker.index.analysis.imports import Import
from worker.index.analysis.segment_builder import BlobSource, SegmentBuilder

GOOD = b"import os\n\ndef load(path):\n    return os.path.join(path)\n"
BAD = b"import sys\n\ndef broken():\n    return 'reader fault'\n"


def test_a_blob_whose_reader_fails_is_indexed_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """The other blobs of its batch keep their definitions; it keeps its text and lines."""
    real = references.imports

    def faulty(data: bytes, grammar: str) -> list[Import]:
        if b"reader fault" in data:
            raise TypeError("a reader fault")
        return real(data, grammar)

    monkeypatch.setattr(references, "imports", faulty)
    builder = SegmentBuilder(1 << 20)
    with capture_logs() as logs:
        builder.add(
            [BlobSource(b"\1" * 20, "good.py", GOOD), BlobSource(b"\2" * 20, "bad.py", BAD)]
        )
    tables = builder.tables()
    assert tables.blobs.column("n_lines").to_pylist() == [4, 4]
    chunks = tables.chunks
    assert list(
        zip(
            chunks.column("blob").to_pylist(),
            chunks.column("start_line").to_pylist(),
            chunks.column("symbol").to_pylist(),
            strict=True,
        )
    ) == [(0, 1, None), (0, 3, "load"), (1, 1, None)]
    assert tables.entities.column("name").to_pylist() == ["load"]
    assert [(e["event"], e["blob"], e["grammar"]) for e in logs] == [
        ("index.blob_read_as_text", (b"\2" * 20).hex(), "python")
    ]
