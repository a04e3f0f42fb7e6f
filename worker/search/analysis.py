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
        self._key_parts: list[I64] = []
        self._tf_body_parts: list[I64] = []
        self._tf_sym_parts: list[I64] = []
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
        for keys, tf_body, tf_sym in (
            (body_keys, body_tf, np.zeros_like(body_tf)),
            (sym_keys, np.zeros_like(sym_tf), sym_tf),
        ):
            local = keys & 0xFFFFFFFF
            self._key_parts.append((keys >> 32 << 32) | new_id[local])
            self._tf_body_parts.append(tf_body)
            self._tf_sym_parts.append(tf_sym)
        kept = np.flatnonzero(keep)
        kept_list = kept.tolist()
        self._chunk_parts.append(
            {
                "blob": blob_index[np.asarray(chunks.blob, dtype=np.int64)[kept]],
                "start_line": np.asarray(chunks.start_row, dtype=np.int32)[kept] + 1,
                "end_line": np.asarray(chunks.end_row, dtype=np.int32)[kept] + 1,
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
        keys = np.concatenate(self._key_parts) if self._key_parts else np.zeros(0, np.int64)
        tf_body = np.concatenate(self._tf_body_parts) if self._key_parts else keys
        tf_sym = np.concatenate(self._tf_sym_parts) if self._key_parts else keys
        term_of = keys >> 32
        present = np.zeros(max(self._vocab.n_terms, 1), dtype=bool)
        present[term_of] = True
        used = np.flatnonzero(present)
        used_terms = self._vocab.terms().take(pa.array(used)).cast(pa.string())
        order = pc.sort_indices(used_terms.cast(pa.binary())).to_numpy()
        rank = np.empty(len(present), dtype=np.int64)
        rank[used[order]] = np.arange(len(used), dtype=np.int64)
        chunk, term_rank, tfb, tfs = _merge_fields(
            rank[term_of], keys & 0xFFFFFFFF, tf_body, tf_sym, self.n_chunks
        )
        counts = np.bincount(term_rank, minlength=len(used)).astype(np.int32)
        starts = np.zeros(len(used), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        terms = pa.table(
            {"term": used_terms.take(pa.array(order)), "start": starts, "count": counts}
        )
        postings = pa.table(
            {
                "chunk": chunk.astype(np.int32),
                "tf_body": tfb.astype(np.uint16),
                "tf_sym": tfs.astype(np.uint8),
            }
        )
        return terms, postings


_KEY_BITS: Final = 47
_FIELD_BIT: Final = 16


def _merge_fields(
    rank: I64, chunk: I64, tf_body: I64, tf_sym: I64, n_chunks: int
) -> tuple[I64, I64, I64, I64]:
    """Postings sorted by (term rank, chunk), a chunk's body and symbol counts in one row.

    Each input row is one field's count of one (term, chunk): at most one body row and one
    symbol row per pair. Rows are packed into one uint64 (rank, chunk, field, count) and
    sorted with numpy's vectorised integer sort: far faster than an argsort and gathers.
    """
    tf = np.where(tf_body > 0, np.minimum(tf_body, 65535), np.minimum(tf_sym, 255))
    field = (tf_body == 0).astype(np.int64)
    chunk_bits = max(int(n_chunks - 1).bit_length(), 1)
    if int(rank.max(initial=0)).bit_length() + chunk_bits > _KEY_BITS:
        order = np.lexsort((field, chunk, rank))
        rank, chunk, field, tf = rank[order], chunk[order], field[order], tf[order]
    else:
        packed = np.sort(
            (((rank << chunk_bits) | chunk) << (_FIELD_BIT + 1)) | (field << _FIELD_BIT) | tf
        )
        tf = packed & 0xFFFF
        field = (packed >> _FIELD_BIT) & 1
        key = packed >> (_FIELD_BIT + 1)
        rank, chunk = key >> chunk_bits, key & ((1 << chunk_bits) - 1)
    first = np.ones(len(rank), dtype=bool)
    first[1:] = (rank[1:] != rank[:-1]) | (chunk[1:] != chunk[:-1])
    group = np.cumsum(first) - 1
    n = int(group[-1]) + 1 if len(group) else 0
    out_body = np.zeros(n, dtype=np.int64)
    out_sym = np.zeros(n, dtype=np.int64)
    body = field == 0
    out_body[group[body]] = tf[body]
    out_sym[group[~body]] = tf[~body]
    return chunk[first], rank[first], out_body, out_sym


def _joined(symbols: list[str | None]) -> tuple[bytes, I64]:
    """The symbols as one buffer (a newline after each) and where each starts."""
    encoded = [(s or "").encode() for s in symbols]
    sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)) + 1
    starts = np.zeros(len(encoded), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return b"\n".join(encoded) + b"\n", starts
