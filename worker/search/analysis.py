"""Analyse blobs into the tables of one segment: chunks, per-chunk term counts, postings.

Blobs are analysed a batch (about BATCH_BYTES) at a time: chunked together (see
`worker.search.chunking`), then tokenised together (see `worker.search.vocabulary`): the
batch's text is one buffer, a chunk a slice of it. Chunks without a single term are dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from worker.search.chunking import ChunkBatch, chunk_batch
from worker.search.languages import language_of
from worker.search.postings import PostingRows
from worker.search.vocabulary import Vocabulary, term_counts

BINARY_SNIFF_BYTES: Final = 8000
BATCH_BYTES: Final = 8 << 20
"""Bytes of source analysed per batch: big enough to amortise, small enough for RSS."""

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]


def is_indexable(data: bytes, max_blob_bytes: int) -> bool:
    """Text (no NUL in the first 8000 bytes) no larger than `max_blob_bytes`."""
    return len(data) <= max_blob_bytes and data.find(b"\0", 0, BINARY_SNIFF_BYTES) < 0


@dataclass(frozen=True, slots=True)
class BlobSource:
    """A blob to analyse: its id, the path it is analysed under (for its language), its bytes.

    A blob known to be too large may come without its bytes: `size` then says how large.
    """

    oid: bytes
    path: str
    data: bytes
    size: int = -1


@dataclass(frozen=True, slots=True)
class SegmentTables:
    """The four Arrow tables of a segment (see `worker.search.segment` for their columns)."""

    blobs: pa.Table
    chunks: pa.Table
    terms: pa.Table
    postings: pa.Table


class SegmentBuilder:
    """Accumulates analysed blobs; `tables()` returns the segment's Arrow tables."""

    def __init__(
        self,
        max_blob_bytes: int,
        *,
        check_deadline: Callable[[int, int], None] | None = None,
    ) -> None:
        self.max_blob_bytes = max_blob_bytes
        self._check_deadline = check_deadline
        self._vocab = Vocabulary()
        self._blob_oids: list[bytes] = []
        self._blob_language: list[str | None] = []
        self._blob_lines: list[int] = []
        self._blob_size: list[int] = []
        self._blob_indexed: list[bool] = []
        self._chunk_parts: list[dict[str, npt.NDArray[np.generic] | list[str | None]]] = []
        self._postings_rows = PostingRows()
        self.n_chunks = 0
        self.bytes_analysed = 0
        self.analyse_seconds = 0.0
        self.phase_seconds: dict[str, float] = {"chunk": 0.0, "tokens": 0.0, "postings": 0.0}
        """Where the time went: chunking (parse included), tokenising, finishing postings."""

    @property
    def n_blobs(self) -> int:
        """Blobs added so far, indexed or not."""
        return len(self._blob_oids)

    def add(self, sources: Iterable[BlobSource], total: int = 0) -> None:
        """Analyse blobs, in batches of about BATCH_BYTES."""
        batch: list[BlobSource] = []
        size = 0
        for source in sources:
            batch.append(source)
            size += len(source.data)
            if size >= BATCH_BYTES:
                self._add_batch(batch)
                batch, size = [], 0
                if self._check_deadline is not None:
                    self._check_deadline(self.n_blobs, total)
        if batch:
            self._add_batch(batch)

    def _add_batch(self, batch: list[BlobSource]) -> None:
        started = time.perf_counter()
        datas: list[bytes] = []
        languages: list[str | None] = []
        blob_index: list[int] = []
        max_bytes = self.max_blob_bytes
        for source in batch:
            data = source.data
            index = len(self._blob_oids)
            self._blob_oids.append(source.oid)
            self._blob_size.append(len(data) if source.size < 0 else source.size)
            if source.size > max_bytes or not is_indexable(data, max_bytes):
                self._blob_language.append(None)
                self._blob_lines.append(0)
                self._blob_indexed.append(False)
                continue
            language = language_of(source.path)
            self._blob_language.append(language)
            self._blob_indexed.append(True)
            self._blob_lines.append(0)
            datas.append(data)
            languages.append(language)
            blob_index.append(index)
            self.bytes_analysed += len(data)
        if datas:
            chunked = time.perf_counter()
            chunks = chunk_batch(datas, languages)
            self.phase_seconds["chunk"] += time.perf_counter() - chunked
            for i, n in zip(blob_index, chunks.n_lines, strict=True):
                self._blob_lines[i] = n
            tokenised = time.perf_counter()
            self._add_chunks(chunks, np.asarray(blob_index, dtype=np.int32))
            self.phase_seconds["tokens"] += time.perf_counter() - tokenised
        self.analyse_seconds += time.perf_counter() - started

    def _add_chunks(self, chunks: ChunkBatch, blob_index: I32) -> None:
        n = len(chunks.blob)
        if not n:
            return
        body_keys, body_tf = term_counts(self._vocab, chunks.text, chunks.offsets)
        symbol_text, symbol_starts = _joined(chunks.symbol)
        sym_keys, sym_tf = term_counts(self._vocab, symbol_text, symbol_starts)
        len_body = np.bincount(body_keys & 0xFFFFFFFF, weights=body_tf, minlength=n)
        len_sym = np.bincount(sym_keys & 0xFFFFFFFF, weights=sym_tf, minlength=n)
        keep = (len_body > 0) | (len_sym > 0)
        new_id = np.cumsum(keep) - 1 + self.n_chunks
        for field, (keys, tf) in enumerate(((body_keys, body_tf), (sym_keys, sym_tf))):
            self._postings_rows.add(keys >> 32, new_id[keys & 0xFFFFFFFF], field, tf)
        kept = np.flatnonzero(keep)
        kept_list = kept.tolist()
        self._chunk_parts.append(
            {
                "blob": blob_index[chunks.blob[kept]],
                "start_line": chunks.start_row[kept].astype(np.int32) + 1,
                "end_line": chunks.end_row[kept].astype(np.int32) + 1,
                "len_body": len_body[kept].astype(np.int32),
                "len_sym": len_sym[kept].astype(np.int32),
                "symbol": [chunks.symbol[i] for i in kept_list],
                "kind": [chunks.kind[i] for i in kept_list],
            }
        )
        self.n_chunks += len(kept)

    def tables(self) -> SegmentTables:
        """The segment's tables: terms sorted by their UTF-8 bytes, postings by (term, chunk)."""
        n_blobs = len(self._blob_oids)
        parts = self._chunk_parts
        chunk_blob = np.concatenate([p["blob"] for p in parts]) if parts else np.zeros(0, np.int32)
        chunk_count = np.bincount(chunk_blob, minlength=n_blobs).astype(np.int32)
        chunk_start = np.searchsorted(chunk_blob, np.arange(n_blobs)).astype(np.int32)
        blobs = pa.table(
            {
                "oid": pa.array(self._blob_oids, pa.binary(20)),
                "indexed": pa.array(self._blob_indexed, pa.bool_()),
                "language": pa.array(self._blob_language, pa.string()).dictionary_encode(),
                "n_lines": pa.array(self._blob_lines, pa.int32()),
                "size": pa.array(self._blob_size, pa.int64()),
                "chunk_start": chunk_start,
                "chunk_count": chunk_count,
            }
        )
        chunks = pa.table(
            {
                name: (
                    pa.array([v for p in parts for v in p[name]], pa.string())
                    if name in ("symbol", "kind")
                    else pa.array(
                        np.concatenate([p[name] for p in parts]) if parts else np.zeros(0, np.int32)
                    )
                )
                for name in (
                    "blob",
                    "start_line",
                    "end_line",
                    "len_body",
                    "len_sym",
                    "symbol",
                    "kind",
                )
            }
        )
        chunks = chunks.set_column(
            chunks.schema.get_field_index("kind"), "kind", chunks["kind"].dictionary_encode()
        )
        finishing = time.perf_counter()
        terms, postings = self._postings()
        self.phase_seconds["postings"] += time.perf_counter() - finishing
        return SegmentTables(blobs, chunks, terms, postings)

    def _postings(self) -> tuple[pa.Table, pa.Table]:
        rows = self._postings_rows
        n_terms = max(self._vocab.n_terms, 1)
        present = np.zeros(n_terms, dtype=bool)
        rows.mark_terms(present)
        used = np.flatnonzero(present)
        used_terms = self._vocab.terms().take(pa.array(used))
        order = pc.sort_indices(used_terms).to_numpy()
        postings = rows.finish(n_terms)
        by_term = used[order]
        terms = pa.table(
            {
                "term": used_terms.take(pa.array(order)).cast(pa.string()),
                "start": postings.start[by_term],
                "count": postings.count[by_term].astype(np.int32),
            }
        )
        table = pa.table(
            {"chunk": postings.chunk, "tf_body": postings.tf_body, "tf_sym": postings.tf_sym}
        )
        return terms, table


def _joined(symbols: list[str | None]) -> tuple[bytes, I64]:
    """The symbols as one buffer (a newline after each) and where each starts."""
    encoded = [(s or "").encode() for s in symbols]
    sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)) + 1
    starts = np.zeros(len(encoded), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return b"\n".join(encoded) + b"\n", starts
