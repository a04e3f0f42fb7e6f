"""Analyse blobs into the tables of one segment: chunks, per-chunk term counts, postings.

Tokenising runs over a whole batch of chunks at once with Arrow compute (split, dictionary
encode) and numpy (expand raw tokens to terms, count pairs): Python touches each distinct
raw token once per build, never each occurrence. Chunks without a single term are dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from worker.search.chunking import chunk_blob
from worker.search.languages import language_of
from worker.search.tokens import (
    MAX_TOKEN_CHARS,
    MIN_TOKEN_CHARS,
    TOKEN_SEPARATOR_PATTERN,
    analyze_tokens,
)

BINARY_SNIFF_BYTES: Final = 8000
BATCH_BYTES: Final = 8 << 20
"""Bytes of source tokenised per Arrow pass: big enough to amortise, small enough for RSS."""

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]


def is_indexable(data: bytes, max_blob_bytes: int) -> bool:
    """Text (no NUL in the first 8000 bytes) no larger than `max_blob_bytes`."""
    return len(data) <= max_blob_bytes and b"\0" not in data[:BINARY_SNIFF_BYTES]


@dataclass(frozen=True, slots=True)
class BlobSource:
    """A blob to analyse: its id, the path it is analysed under (for its language), its bytes."""

    oid: bytes
    path: str
    data: bytes


@dataclass(frozen=True, slots=True)
class SegmentTables:
    """The four Arrow tables of a segment (see `worker.search.segment` for their columns)."""

    blobs: pa.Table
    chunks: pa.Table
    terms: pa.Table
    postings: pa.Table


@dataclass(slots=True)
class _PendingChunks:
    """Chunks of one batch before tokenising: byte offset into the batch, span, definition."""

    offset: list[int] = field(default_factory=list)
    blob: list[int] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    symbol: list[str | None] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)


class _Vocabulary:
    """Raw token -> term ids, grown as a build meets new tokens."""

    def __init__(self) -> None:
        self.term_ids: dict[str, int] = {}
        self.terms: list[str] = []
        self.raw_ids: dict[bytes, int] = {}
        self.raw_start = np.zeros(1024, dtype=np.int64)
        self.raw_len = np.zeros(1024, dtype=np.int32)
        self.raw_terms = np.zeros(4096, dtype=np.int32)
        self.n_raw = 0
        self.n_raw_terms = 0

    def ids_of(self, tokens: list[bytes]) -> I32:
        """Raw ids of `tokens`, analysing the ones never seen before."""
        get = self.raw_ids.get
        ids = [get(t, -1) for t in tokens]
        new = [i for i, v in enumerate(ids) if v < 0]
        if new:
            fresh = [tokens[i] for i in new]
            analysed = analyze_tokens([t.decode("ascii") for t in fresh])
            for i, token, terms in zip(new, fresh, analysed, strict=True):
                ids[i] = self._add(token, terms)
        return np.asarray(ids, dtype=np.int32)

    def _add(self, token: bytes, terms: list[str]) -> int:
        rid = self.n_raw
        if rid >= len(self.raw_start):
            self.raw_start = np.resize(self.raw_start, 2 * len(self.raw_start))
            self.raw_len = np.resize(self.raw_len, 2 * len(self.raw_len))
        need = self.n_raw_terms + len(terms)
        if need > len(self.raw_terms):
            self.raw_terms = np.resize(self.raw_terms, max(need, 2 * len(self.raw_terms)))
        self.raw_start[rid] = self.n_raw_terms
        self.raw_len[rid] = len(terms)
        for term in terms:
            tid = self.term_ids.get(term)
            if tid is None:
                tid = len(self.terms)
                self.term_ids[term] = tid
                self.terms.append(term)
            self.raw_terms[self.n_raw_terms] = tid
            self.n_raw_terms += 1
        self.raw_ids[token] = rid
        self.n_raw = rid + 1
        return rid


def _term_pairs(values: pa.Array, vocab: _Vocabulary) -> tuple[I64, I64]:
    """(key, count) of every distinct (term, value index) pair; key = term << 32 | index."""
    lists = pc.split_pattern_regex(values, TOKEN_SEPARATOR_PATTERN)
    flat = pc.list_flatten(lists)
    parents = pc.list_parent_indices(lists)
    length = pc.binary_length(flat)
    keep = pc.and_(
        pc.greater_equal(length, MIN_TOKEN_CHARS), pc.less_equal(length, MAX_TOKEN_CHARS)
    )
    flat = flat.filter(keep)
    if len(flat) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    parent = parents.filter(keep).to_numpy().astype(np.int64)
    encoded = flat.dictionary_encode()
    raw_of_unique = vocab.ids_of(encoded.dictionary.to_pylist())
    raw = raw_of_unique[encoded.indices.to_numpy()]
    lens = vocab.raw_len[raw]
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # CSR expansion: occurrence i yields raw_terms[raw_start[r_i] : raw_start[r_i] + lens_i].
    ends = np.cumsum(lens)
    shift = np.repeat(vocab.raw_start[raw] - (ends - lens), lens)
    terms = vocab.raw_terms[shift + np.arange(total, dtype=np.int64)].astype(np.int64)
    keys = (terms << 32) | np.repeat(parent, lens)
    unique, counts = np.unique(keys, return_counts=True)
    return unique, counts.astype(np.int64)


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
        self._vocab = _Vocabulary()
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
        base = 0
        pending = _PendingChunks()
        for source in batch:
            blob_index = len(self._blob_oids)
            self._blob_oids.append(source.oid)
            self._blob_size.append(len(source.data))
            data = source.data
            if not is_indexable(data, self.max_blob_bytes):
                self._blob_language.append(None)
                self._blob_lines.append(0)
                self._blob_indexed.append(False)
                continue
            language = language_of(source.path)
            chunks, starts = chunk_blob(data, language)
            self._blob_language.append(language)
            self._blob_lines.append(len(starts))
            self._blob_indexed.append(True)
            starts_list = starts.tolist()
            for chunk in chunks:
                pending.offset.append(base + starts_list[chunk.start_row])
                pending.blob.append(blob_index)
                pending.start.append(chunk.start_row + 1)
                pending.end.append(chunk.end_row + 1)
                pending.symbol.append(chunk.symbol)
                pending.kind.append(chunk.kind)
            datas.append(data)
            base += len(data)
            self.bytes_analysed += len(data)
        if pending.offset:
            self._add_chunks(b"".join(datas), pending)
        self.analyse_seconds += time.perf_counter() - started

    def _add_chunks(self, data: bytes, pending: _PendingChunks) -> None:
        offsets, c_symbol, c_kind = pending.offset, pending.symbol, pending.kind
        n = len(offsets)
        # A chunk's text runs to the next chunk's start: the gap between is blank lines only.
        bounds = np.empty(n + 1, dtype=np.int32)
        bounds[:n] = offsets
        bounds[n] = len(data)
        texts = pa.Array.from_buffers(
            pa.binary(), n, [None, pa.py_buffer(bounds), pa.py_buffer(data)]
        )
        body_keys, body_tf = _term_pairs(texts, self._vocab)
        symbols = pa.array(c_symbol, pa.string()).cast(pa.binary())
        sym_keys, sym_tf = _term_pairs(symbols, self._vocab)
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
        blob = np.asarray(pending.blob, dtype=np.int32)[kept]
        self._chunk_parts.append(
            {
                "blob": blob,
                "start_line": np.asarray(pending.start, dtype=np.int32)[kept],
                "end_line": np.asarray(pending.end, dtype=np.int32)[kept],
                "len_body": len_body[kept].astype(np.int32),
                "len_sym": len_sym[kept].astype(np.int32),
                "symbol": [c_symbol[i] for i in kept.tolist()],
                "kind": [c_kind[i] for i in kept.tolist()],
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
        used = np.unique(term_of)
        vocab_terms = self._vocab.terms
        used_terms = pa.array([vocab_terms[i] for i in used.tolist()], pa.string())
        order = pc.sort_indices(used_terms.cast(pa.binary())).to_numpy()
        rank = np.empty(len(self._vocab.terms), dtype=np.int64)
        rank[used[order]] = np.arange(len(used), dtype=np.int64)
        sort_keys = (rank[term_of] << 32) | (keys & 0xFFFFFFFF)
        perm = np.argsort(sort_keys, kind="stable")
        sort_keys = sort_keys[perm]
        # A chunk can hold a term in its body and in its symbol: sum the two rows into one.
        first = np.ones(len(sort_keys), dtype=bool)
        first[1:] = sort_keys[1:] != sort_keys[:-1]
        group = np.cumsum(first) - 1
        n_post = int(first.sum())
        tfb = np.bincount(group, weights=tf_body[perm], minlength=n_post)
        tfs = np.bincount(group, weights=tf_sym[perm], minlength=n_post)
        post_keys = sort_keys[first]
        term_rank = post_keys >> 32
        counts = np.bincount(term_rank, minlength=len(used)).astype(np.int32)
        starts = np.zeros(len(used), dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        terms = pa.table(
            {"term": used_terms.take(pa.array(order)), "start": starts, "count": counts}
        )
        postings = pa.table(
            {
                "chunk": (post_keys & 0xFFFFFFFF).astype(np.int32),
                "tf_body": np.minimum(tfb, 65535).astype(np.uint16),
                "tf_sym": np.minimum(tfs, 255).astype(np.uint8),
            }
        )
        return terms, postings
