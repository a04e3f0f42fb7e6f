"""Analyse blobs into the tables of one segment: chunks, per-chunk term counts, postings.

Blobs are analysed a batch (about BATCH_BYTES) at a time: chunked together (see `chunking`),
then tokenised together (see `vocabulary`), their trigrams collected (see `trigrams`): the
batch's text is one buffer, a chunk a slice of it. Chunks without a single term are dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import structlog

from worker.index.analysis.chunking import ChunkBatch, chunk_batch
from worker.index.analysis.entities import BatchEntities, batch_entities
from worker.index.analysis.grammars import grammar_of
from worker.index.analysis.postings import postings as term_postings
from worker.index.analysis.references import RELATION_NAMES, BatchReferences, batch_references
from worker.index.analysis.trigrams import TrigramCollector
from worker.index.analysis.vocabulary import TermRows
from worker.languages import language_of

log = structlog.get_logger(__name__)

BINARY_SNIFF_BYTES: Final = 8000
BATCH_BYTES: Final = 4 << 20
"""Bytes of source analysed per batch: big enough to amortise, small enough that a batch's
arrays stay in cache (two workers, Linux: 4 MB batches 3% faster than 8 MB, 2 MB slower)."""

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]


def is_indexable(data: bytes, max_blob_bytes: int) -> bool:
    """Text (no NUL in the first 8000 bytes) no larger than `max_blob_bytes`."""
    return len(data) <= max_blob_bytes and data.find(b"\0", 0, BINARY_SNIFF_BYTES) < 0


class BlobSource(NamedTuple):
    """A blob to analyse: its id, the path it is analysed under (for its language), its bytes.

    A blob known to be too large may come without its bytes: `size` then says how large.
    (A tuple: a build makes one per blob, and a frozen dataclass costs several times more.)
    """

    oid: bytes
    path: str
    data: bytes
    size: int = -1


@dataclass(frozen=True, slots=True)
class SegmentTables:
    """The Arrow tables of a segment (see `worker.index.store.segment` for their columns)."""

    blobs: pa.Table
    chunks: pa.Table
    terms: pa.Table
    postings: pa.Table
    trigrams: pa.Table
    trigram_postings: pa.Table
    definition_trigrams: pa.Table
    definition_trigram_postings: pa.Table
    definition_lines: pa.Table
    entities: pa.Table
    references: pa.Table


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
        self._terms = TermRows(2)
        self._trigrams = TrigramCollector()
        self._blob_oids: list[bytes] = []
        self._blob_language: list[str | None] = []
        self._blob_lines: list[int] = []
        self._blob_size: list[int] = []
        self._blob_indexed: list[bool] = []
        self._chunk_parts: list[dict[str, Any]] = []
        self._entity_parts: list[tuple[I32, BatchEntities]] = []
        self._reference_parts: list[tuple[I32, BatchReferences, int]] = []
        self.n_entities = 0
        self.n_chunks = 0
        self.bytes_analysed = 0
        self.analyse_seconds = 0.0
        self.phase_seconds: dict[str, float] = {
            "chunk": 0.0,
            "tokens": 0.0,
            "trigrams": 0.0,
            "references": 0.0,
            "postings": 0.0,
        }
        """Where the time went: chunking (parse included), counting raw tokens, each blob's
        trigrams, its imports, calls and bases, analysing tokens into terms and postings
        (trigram postings included)."""

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
        grammars: list[str | None] = []
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
            self._blob_language.append(language_of(source.path))
            self._blob_indexed.append(True)
            self._blob_lines.append(0)
            datas.append(data)
            grammars.append(grammar_of(source.path, data))
            blob_index.append(index)
            self.bytes_analysed += len(data)
        if datas:
            try:
                chunks, entities, references = self._parsed(datas, grammars)
            except Exception:  # a parser or reader fault: see `_parsed_as_text`
                grammars = self._parsed_as_text(
                    datas, grammars, [self._blob_oids[i] for i in blob_index]
                )
                chunks, entities, references = self._parsed(datas, grammars)
            for i, n, data in zip(blob_index, chunks.n_lines, datas, strict=True):
                # A final line break ends the last line; it does not start another.
                self._blob_lines[i] = n - data.endswith(b"\n")
            tokenised = time.perf_counter()
            at = np.asarray(blob_index, dtype=np.int32)
            self._add_chunks(chunks, at)
            trigrams = time.perf_counter()
            self.phase_seconds["tokens"] += trigrams - tokenised
            self._trigrams.add(datas, blob_index)
            self.phase_seconds["trigrams"] += time.perf_counter() - trigrams
            self._entity_parts.append((at, entities))
            self._reference_parts.append((at, references, self.n_entities))
            self.n_entities += len(entities.blob)
        self.analyse_seconds += time.perf_counter() - started

    def _parsed(
        self, datas: list[bytes], grammars: list[str | None]
    ) -> tuple[ChunkBatch, BatchEntities, BatchReferences]:
        """A batch's chunks, entities and references: everything a parse decides.

        Changes nothing the segment will hold (only the phase timings), so that a batch whose
        parse fails can be done again.
        """
        chunked = time.perf_counter()
        chunks = chunk_batch(datas, grammars)
        referenced = time.perf_counter()
        self.phase_seconds["chunk"] += referenced - chunked
        entities = batch_entities(chunks.definitions)
        references = batch_references(
            chunks.text,
            datas,
            chunks.grammars,
            chunks.definitions,
            entities,
            lexed=chunks.lexemes,
            line_starts=chunks.line_starts,
        )
        self.phase_seconds["references"] += time.perf_counter() - referenced
        return chunks, entities, references

    def _parsed_as_text(
        self, datas: list[bytes], grammars: list[str | None], oids: list[bytes]
    ) -> list[str | None]:
        """The batch's grammars, without those of the blobs whose parse fails on its own.

        One blob a parser or an import reader cannot take (a fault of ours, met on some
        repository's file) must not fail its whole commit: it is indexed as text, without
        definitions or references, and said in the log.
        """
        kept = list(grammars)
        for i, (data, grammar) in enumerate(zip(datas, grammars, strict=True)):
            if grammar is None:
                continue
            try:
                self._parsed([data], [grammar])
            except Exception as error:
                log.warning(
                    "index.blob_read_as_text",
                    blob=oids[i].hex(),
                    grammar=grammar,
                    error=repr(error),
                )
                kept[i] = None
        return kept

    def _add_chunks(self, chunks: ChunkBatch, blob_index: I32) -> None:
        n = len(chunks.blob)
        if not n:
            return
        self._terms.add(0, chunks.text, chunks.offsets, self.n_chunks)
        symbol_text, symbol_starts = _joined(chunks.symbol)
        self._terms.add(1, symbol_text, symbol_starts, self.n_chunks)
        self._chunk_parts.append(
            {
                "blob": blob_index[chunks.blob],
                "start_line": chunks.start_row.astype(np.int32) + 1,
                "end_line": chunks.end_row.astype(np.int32) + 1,
                # Arrow, not lists of str: the parts of a whole build are held to its end.
                "symbol": pa.array(chunks.symbol, pa.string()),
                "kind": pa.array(chunks.kind, pa.string()),
            }
        )
        self.n_chunks += n

    def _graph_tables(self) -> tuple[pa.Table, pa.Table]:
        """The entities and references tables, each by blob."""
        empty32 = np.zeros(0, np.int32)
        entity_blob = np.concatenate(
            [empty32] + [index[e.blob] for index, e in self._entity_parts]
        ).astype(np.int32)
        firsts = np.cumsum([0] + [len(e.blob) for _, e in self._entity_parts])
        parent = np.concatenate(
            [np.zeros(0, np.int64)]
            + [
                np.where(e.parent >= 0, e.parent + first, -1)
                for (_, e), first in zip(self._entity_parts, firsts.tolist(), strict=False)
            ]
        ).astype(np.int32)

        def entity_column(name: str) -> npt.NDArray[np.int32]:
            return np.concatenate(
                [empty32] + [getattr(e, name) for _, e in self._entity_parts]
            ).astype(np.int32)

        entities = pa.table(
            {
                "blob": entity_blob,
                "parent": parent,
                "start_line": entity_column("start_row") + 1,
                "end_line": entity_column("end_row") + 1,
                "name": pa.array([n for _, e in self._entity_parts for n in e.name], pa.string()),
                "kind": pa.array(
                    [k for _, e in self._entity_parts for k in e.kind], pa.string()
                ).dictionary_encode(),
            }
        )
        parts = self._reference_parts
        reference_blob = np.concatenate(
            [empty32] + [index[r.blob] for index, r, _ in parts]
        ).astype(np.int32)
        entity = np.concatenate(
            [empty32] + [np.where(r.entity >= 0, r.entity + first, -1) for _, r, first in parts]
        ).astype(np.int32)
        relation = np.concatenate([np.zeros(0, np.uint8)] + [r.relation for _, r, _ in parts])

        def strings(name: str) -> pa.Array:
            return pa.concat_arrays(
                [pa.array([], pa.string())] + [getattr(r, name) for _, r, _ in parts]
            )

        references = pa.table(
            {
                "blob": reference_blob,
                "entity": entity,
                "relation": pa.DictionaryArray.from_arrays(
                    pa.array(relation.astype(np.int8)), pa.array(RELATION_NAMES, pa.string())
                ),
                "target": strings("target"),
                "name": strings("name"),
                "alias": strings("alias"),
                "line": np.concatenate([empty32] + [r.row for _, r, _ in parts]).astype(np.int32)
                + 1,
            }
        )
        return entities, references

    def tables(self) -> SegmentTables:
        """The segment's tables: terms sorted by their UTF-8 bytes, postings by (term, chunk).

        Chunks without a single term are dropped here, now that terms are known.
        """
        finishing = time.perf_counter()
        self._trigrams.done_adding()
        n = self.n_chunks
        terms = self._terms.analyse(n)
        len_body, len_sym = self._terms.lengths
        keep = (len_body > 0) | (len_sym > 0)
        new_id = np.cumsum(keep) - 1
        postings = term_postings(
            [self._terms.expanded(0, new_id), self._terms.expanded(1, new_id)],
            len(terms),
            int(keep.sum()),
        )
        self.phase_seconds["postings"] += time.perf_counter() - finishing
        n_blobs = len(self._blob_oids)
        parts = self._chunk_parts
        mask = pa.array(keep)
        chunk_blob = np.zeros(0, np.int32)
        if parts:
            chunk_blob = np.concatenate([p["blob"] for p in parts])[keep]
        chunk_count = np.bincount(chunk_blob, minlength=n_blobs).astype(np.int32)
        chunk_start = np.searchsorted(chunk_blob, np.arange(n_blobs)).astype(np.int32)
        entities, references = self._graph_tables()
        graph_starts = {}
        for name, table in (("entity", entities), ("reference", references)):
            owner = table.column("blob").to_numpy()
            graph_starts[f"{name}_start"] = np.searchsorted(owner, np.arange(n_blobs)).astype(
                np.int32
            )
            graph_starts[f"{name}_count"] = np.bincount(owner, minlength=n_blobs).astype(np.int32)
        blobs = pa.table(
            {
                "oid": pa.array(self._blob_oids, pa.binary(20)),
                "indexed": pa.array(self._blob_indexed, pa.bool_()),
                "language": pa.array(self._blob_language, pa.string()).dictionary_encode(),
                "n_lines": pa.array(self._blob_lines, pa.int32()),
                "size": pa.array(self._blob_size, pa.int64()),
                "chunk_start": chunk_start,
                "chunk_count": chunk_count,
                **graph_starts,
            }
        )

        def lines(name: str) -> npt.NDArray[np.int32]:
            if not parts:
                return np.zeros(0, np.int32)
            return np.concatenate([p[name] for p in parts])[keep]

        def strings(name: str) -> pa.Array:
            return pa.concat_arrays([pa.array([], pa.string())] + [p[name] for p in parts]).filter(
                mask
            )

        chunks = pa.table(
            {
                "blob": chunk_blob.astype(np.int32),
                "start_line": lines("start_line"),
                "end_line": lines("end_line"),
                "len_body": len_body[keep].astype(np.int32),
                "len_sym": len_sym[keep].astype(np.int32),
                "symbol": strings("symbol"),
                "kind": strings("kind").dictionary_encode(),
            }
        )
        term_table = pa.table(
            {
                "term": terms.cast(pa.string()),
                "start": postings.start,
                "count": postings.count.astype(np.int32),
            }
        )
        table = pa.table(
            {"chunk": postings.chunk, "tf_body": postings.tf_body, "tf_sym": postings.tf_sym}
        )
        inverted = time.perf_counter()
        trigrams, definitions = self._trigrams.tables()
        definition_lines = pa.table({"text": self._trigrams.definition_texts(n_blobs)})
        self.phase_seconds["postings"] += time.perf_counter() - inverted
        return SegmentTables(
            blobs,
            chunks,
            term_table,
            table,
            trigrams.trigrams,
            trigrams.postings,
            definitions.trigrams,
            definitions.postings,
            definition_lines,
            entities,
            references,
        )


def _joined(symbols: list[str | None]) -> tuple[bytes, I64]:
    """The symbols as one buffer (a newline after each) and where each starts."""
    encoded = [(s or "").encode() for s in symbols]
    sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)) + 1
    starts = np.zeros(len(encoded), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    return b"\n".join(encoded) + b"\n", starts
