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
from worker.search.vocabulary import Vocabulary, term_counts

BINARY_SNIFF_BYTES: Final = 8000
BATCH_BYTES: Final = 8 << 20
"""Bytes of source analysed per batch: big enough to amortise, small enough for RSS."""

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
U64 = npt.NDArray[np.uint64]


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
        self._postings_rows = _PostingRows()
        self.n_chunks = 0
        self.bytes_analysed = 0
        self.analyse_seconds = 0.0

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
            chunks = chunk_batch(datas, languages)
            for i, n in zip(blob_index, chunks.n_lines, strict=True):
                self._blob_lines[i] = n
            self._add_chunks(chunks, np.asarray(blob_index, dtype=np.int32))
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
        terms, postings = self._postings()
        return SegmentTables(blobs, chunks, terms, postings)

    def _postings(self) -> tuple[pa.Table, pa.Table]:
        rows = self._postings_rows
        present = np.zeros(max(self._vocab.n_terms, 1), dtype=bool)
        rows.mark_terms(present)
        used = np.flatnonzero(present)
        used_terms = self._vocab.terms().take(pa.array(used))
        order = pc.sort_indices(used_terms).to_numpy()
        rank = np.zeros(len(present), dtype=np.int64)
        rank[used[order]] = np.arange(len(used), dtype=np.int64)
        chunk, term_rank, tf_body, tf_sym = rows.finish(rank)
        counts = np.bincount(term_rank, minlength=len(used)).astype(np.int32)
        starts = np.zeros(len(used), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        terms = pa.table(
            {
                "term": used_terms.take(pa.array(order)).cast(pa.string()),
                "start": starts,
                "count": counts,
            }
        )
        postings = pa.table(
            {
                "chunk": chunk,
                "tf_body": np.minimum(tf_body, 65535).astype(np.uint16),
                "tf_sym": np.minimum(tf_sym, 255).astype(np.uint8),
            }
        )
        return terms, postings


class _PostingRows:
    """(term, chunk, field, count) rows as a build adds them; sorted into postings at the end.

    A row packs into one uint64 (term 24 bits, chunk 23, field 1, count 16) while ids fit, so
    the final sort is numpy's vectorised integer sort; past that the rows are kept wide.
    """

    TERM_SHIFT: Final = 40
    CHUNK_SHIFT: Final = 17
    FIELD_SHIFT: Final = 16
    CHUNK_LIMIT: Final = 1 << 23
    TERM_LIMIT: Final = 1 << 24

    def __init__(self) -> None:
        self._packed: list[U64] = []
        self._wide: list[tuple[I64, I64, I64, I64]] = []

    def add(self, term: I64, chunk: I64, field: int, count: I64) -> None:
        """Rows of one field (0 body, 1 symbol); a (term, chunk) pair once per field."""
        count = np.minimum(count, 65535)
        fits = np.little_endian and int(term.max(initial=0)) < self.TERM_LIMIT
        fits = fits and int(chunk.max(initial=0)) < self.CHUNK_LIMIT
        if fits and not self._wide:
            packed = term.astype(np.uint64) << np.uint64(self.TERM_SHIFT)
            packed |= chunk.astype(np.uint64) << np.uint64(self.CHUNK_SHIFT)
            packed |= np.uint64(field << self.FIELD_SHIFT)
            packed |= count.astype(np.uint64)
            self._packed.append(packed)
            return
        if not self._wide:
            self._wide = [self._unpack(p) for p in self._packed]
            self._packed = []
        self._wide.append((term, chunk, np.full(len(term), field, dtype=np.int64), count))

    def _unpack(self, packed: U64) -> tuple[I64, I64, I64, I64]:
        chunk_mask = np.uint64(self.CHUNK_LIMIT - 1)
        return (
            (packed >> np.uint64(self.TERM_SHIFT)).astype(np.int64),
            ((packed >> np.uint64(self.CHUNK_SHIFT)) & chunk_mask).astype(np.int64),
            ((packed >> np.uint64(self.FIELD_SHIFT)) & np.uint64(1)).astype(np.int64),
            (packed & np.uint64(0xFFFF)).astype(np.int64),
        )

    def mark_terms(self, present: npt.NDArray[np.bool_]) -> None:
        """Set `present` at every term id that has a row."""
        for packed in self._packed:
            present[_high_word(packed) >> np.uint32(8)] = True
        for term, _, _, _ in self._wide:
            present[term] = True

    def finish(self, rank: I64) -> tuple[I32, I64, I64, I64]:
        """Postings by (term rank, chunk): chunk, rank, body count, symbol count.

        The packed rows are read through 32-bit views of their halves (little-endian): half
        the memory traffic of 64-bit shifts and masks, which dominate at tens of millions.
        """
        if self._wide:
            return self._finish_wide(rank)
        packed = np.concatenate(self._packed) if self._packed else np.zeros(0, np.uint64)
        self._packed = []
        high = _high_word(packed)
        high[:] = (rank.astype(np.uint32).take(high >> np.uint32(8)) << np.uint32(8)) | (
            high & np.uint32(0xFF)
        )
        packed.sort()
        high = _high_word(packed)
        low = packed.view(np.uint32)[0::2]
        term_rank = (high >> np.uint32(8)).astype(np.int64)
        chunk = (low >> np.uint32(self.CHUNK_SHIFT)) | ((high & np.uint32(0xFF)) << np.uint32(15))
        count = packed.view(np.uint16)[0::4]
        is_symbol = (packed.view(np.uint8)[2::8] & 1).astype(bool)
        # A pair with a body row and a symbol row: the symbol row follows; fold it in.
        repeat = np.zeros(len(chunk), dtype=bool)
        repeat[1:] = (chunk[1:] == chunk[:-1]) & (term_rank[1:] == term_rank[:-1])
        first = ~repeat
        tf_body = np.where(is_symbol, 0, count).astype(np.int64)
        tf_sym = np.where(is_symbol, count, 0).astype(np.int64)
        folded = np.flatnonzero(repeat)
        tf_sym[folded - 1] = tf_sym[folded]
        return (
            chunk[first].astype(np.int32),
            term_rank[first],
            tf_body[first],
            tf_sym[first],
        )

    def _finish_wide(self, rank: I64) -> tuple[I32, I64, I64, I64]:
        term, chunk, field, count = (np.concatenate([w[i] for w in self._wide]) for i in range(4))
        order = np.lexsort((field, chunk, rank[term]))
        term_rank = rank[term][order]
        chunk, field, count = chunk[order], field[order], count[order]
        first = np.ones(len(chunk), dtype=bool)
        first[1:] = (chunk[1:] != chunk[:-1]) | (term_rank[1:] != term_rank[:-1])
        group = np.cumsum(first) - 1
        n = int(group[-1]) + 1 if len(group) else 0
        tf_body = np.zeros(n, dtype=np.int64)
        tf_sym = np.zeros(n, dtype=np.int64)
        body = field == 0
        tf_body[group[body]] = count[body]
        tf_sym[group[~body]] = count[~body]
        return chunk[first].astype(np.int32), term_rank[first], tf_body, tf_sym


def _high_word(packed: U64) -> npt.NDArray[np.uint32]:
    """The upper 32 bits of each packed row, as a writable view."""
    if np.little_endian:
        return packed.view(np.uint32)[1::2]
    return packed.view(np.uint32)[0::2]


def _joined(symbols: list[str | None]) -> tuple[bytes, I64]:
    """The symbols as one buffer (a newline after each) and where each starts."""
    encoded = [(s or "").encode() for s in symbols]
    sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)) + 1
    starts = np.zeros(len(encoded), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return b"\n".join(encoded) + b"\n", starts
