"""A segment on disk: the analysed blobs of a set, as Arrow IPC files a reader memory-maps.

    <segment dir>/segment.json   {"format_version", "id", "components": {name: file}, counts}
    blobs.arrow     oid (binary 20), indexed, language, n_lines (as `wc -l`, plus a last line
                    without a line break), size, chunk_start, chunk_count,
                    entity_start, entity_count, reference_start, reference_count
    chunks.arrow    blob, start_line, end_line (1-based, inclusive), len_body, len_sym, symbol, kind
    terms.arrow     term (sorted by UTF-8 bytes), start, count   -> a slice of postings
    postings.arrow  chunk, tf_body, tf_sym       (one slice per term, in any order; by chunk)
    trigrams.arrow  trigram (uint32, ascending), start, count   -> a slice of trigram_postings
    trigram_postings.arrow  blob (uint32)        (one slice per trigram; ascending blob rows)
    definition_trigrams.arrow, definition_trigram_postings.arrow
                    the same, over each blob's definition lines only
    definition_lines.arrow  text (large binary): each blob's definition lines, by blob row
    entities.arrow  blob, parent (entity row, -1 at the top), start_line, end_line, name
                    (qualified: `Flask.route`), kind (the parser's node type)   by blob, pre-order
    references.arrow blob, entity (row, -1: the file), relation (import, invoke, inherit),
                    target, name, alias, line        by blob; as written, never resolved

A segment is content-addressed: its id hashes the format version and its blob ids, so two
builders of the same blobs write the same directory. Components are named in segment.json.
One analysis of each blob fills every component: the chunks, terms and postings rank research
answers; the trigrams pick the files code search verifies; the entities and references are
what the graph view resolves per commit.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import mmap
import os
import shutil
import tempfile
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from worker.index.analysis.segment_builder import SegmentTables

FORMAT_VERSION: Final = 26
"""Bump on any change a reader of the old format would misread, or that changes what the
analysis of a blob yields (2: definitions end on their own last line, postings grouped by
term id; 3: each term's postings in chunk order, laid out by the one-pass sort; 4: the
trigram components; 5: entities and references; 6: n_lines does not count the empty line
after a final line break; 7: calls of JavaScript private members, `this.#name(`; 8: Go's raw
strings hold no calls; 9: nor a C++ destructor's own line; 10: nor Java's text blocks; 11:
functions JavaScript and TypeScript assign to members are definitions; 12: a doc comment a
blank line above its definition leads its chunk; 13: calls through a Go method's receiver
are `this.`; 14: a Rust impl for a reference to a type holds its methods; 15: class fields
holding functions, TypeScript namespaces; 16: Ruby and PHP are parsed; 17: C# is parsed, and
an annotated definition's own name is no call; 18: C#'s usings; 19: what a `require`
declaration binds; 20: Kotlin is parsed; 21: Python's `super().name(` and a bare `super(` are
calls; 22: so are Ruby's calls without parentheses; 23: a call through a variable declared
of a class is written as the class's; 24: the declarations read are Python's annotations,
Java's, C#'s and C++'s parameters, Go's in signatures, none in comments or strings; 25: no
C include in a comment or a string; 26: the definition lines' text); readers
rebuild on mismatch, so old and new segments never mix."""
COMPONENTS: Final = (
    "blobs",
    "chunks",
    "terms",
    "postings",
    "trigrams",
    "trigram_postings",
    "definition_trigrams",
    "definition_trigram_postings",
    "definition_lines",
    "entities",
    "references",
)


class UnknownFormat(Exception):
    """A stored index was written in a format this code does not read."""


def segment_id(oids: list[bytes]) -> str:
    """The content address of a segment holding exactly these blobs."""
    digest = hashlib.sha256(f"search-segment-v{FORMAT_VERSION}\n".encode())
    for oid in sorted(oids):
        digest.update(oid)
    return digest.hexdigest()[:40]


def flush_and_uncache(path: Path) -> None:
    """Flush a just-written file to disk and drop its pages from the page cache.

    Pages a write leaves in the cache are large folios, and a reader's mapping faults in a
    whole folio per touch: a query that reads a few bytes of each of a few hundred terms
    would map tens of megabytes. Read back on demand (readers map with MADV_RANDOM), pages
    come in one at a time, so a worker's resident set holds what it touched. Also makes the
    file durable before the rename that publishes it.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def write_table(path: Path, table: pa.Table, *, flush: bool = True) -> None:
    """Write one table as a single uncompressed record batch (so a reader maps it zero-copy).

    Flushed to disk and out of the page cache unless `flush` is False (the caller does it).
    """
    table = table.combine_chunks()
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=max(table.num_rows, 1))
    if flush:
        flush_and_uncache(path)


_mappings: weakref.WeakSet[mmap.mmap] = weakref.WeakSet()
_mappings_lock = threading.Lock()


def read_table(path: Path, *, whole: bool = False) -> pa.Table:
    """Memory-map an Arrow IPC file read-only; the columns point into the mapping.

    Python's mmap (not Arrow's) so that `release_mapped_pages` can madvise it. `whole` says
    every page will be read: the kernel reads the file ahead instead of a page per touch.
    """
    with path.open("rb") as f:
        mapping = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    # Most reads are scattered (term lookups, postings of a few terms): no read-ahead, so a
    # touch brings in a page, not a large folio (see `flush_and_uncache`).
    mapping.madvise(mmap.MADV_WILLNEED if whole else mmap.MADV_RANDOM)
    with _mappings_lock:
        _mappings.add(mapping)
    return pa.ipc.open_file(pa.BufferReader(pa.py_buffer(mapping))).read_all()


def read_whole_table(path: Path) -> pa.Table:
    """Read an Arrow IPC file into memory in one sequential pass, for a scan of every row.

    The mapping `read_table` makes brings a page in per fault (MADV_RANDOM, right for
    queries), so a scan of a table the build just wrote (and dropped from the page cache)
    would wait on one disk read per page; buffered reads get the kernel's read-ahead. The
    pages read are dropped again, as the build leaves them (see `flush_and_uncache`).
    """
    with pa.OSFile(str(path)) as source:
        table = pa.ipc.open_file(source).read_all()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return table


def release_mapped_pages() -> int:
    """Drop every mapped index page from this process's resident set; returns mappings touched.

    The pages stay in the page cache (shared with other workers): the next touch is a minor
    fault, no I/O. This bounds RssFile when many queries have touched many postings.
    """
    with _mappings_lock:
        mappings = list(_mappings)
    for mapping in mappings:
        mapping.madvise(mmap.MADV_DONTNEED)
    return len(mappings)


def atomic_publish(tmp_dir: Path, final_dir: Path) -> None:
    """Rename a fully written directory into place; if another writer won, keep theirs."""
    try:
        os.rename(tmp_dir, final_dir)
    except OSError:
        if not final_dir.exists():
            raise
        shutil.rmtree(tmp_dir, ignore_errors=True)


def set_aside(directory: Path) -> Path:
    """Move a published directory out of readers' sight in one rename: into a new hidden
    directory beside it, which is returned for the caller to delete when it suits."""
    aside = Path(tempfile.mkdtemp(prefix=f".{directory.name}.gone.", dir=directory.parent))
    directory.rename(aside / directory.name)
    return aside


def write_segment(segments_dir: Path, seg_id: str, tables: SegmentTables) -> Path:
    """Persist a segment under `segments_dir/<seg_id>` atomically; returns its directory."""
    final = segments_dir / seg_id
    if (final / "segment.json").exists():
        return final
    segments_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{seg_id}.", dir=segments_dir))
    # Each file goes to disk while the next one is written; all are before the rename.
    with ThreadPoolExecutor(len(COMPONENTS)) as flusher:
        flushed = []
        for name in COMPONENTS:
            path = tmp / f"{name}.arrow"
            write_table(path, getattr(tables, name), flush=False)
            flushed.append(flusher.submit(flush_and_uncache, path))
        for done in flushed:
            done.result()
    meta = {
        "format_version": FORMAT_VERSION,
        "id": seg_id,
        "components": {name: f"{name}.arrow" for name in COMPONENTS},
        "n_blobs": tables.blobs.num_rows,
        "n_chunks": tables.chunks.num_rows,
        "n_terms": tables.terms.num_rows,
        "n_postings": tables.postings.num_rows,
        "n_trigrams": tables.trigrams.num_rows,
        "n_trigram_postings": tables.trigram_postings.num_rows,
        "n_definition_trigram_postings": tables.definition_trigram_postings.num_rows,
        "n_entities": tables.entities.num_rows,
        "n_references": tables.references.num_rows,
    }
    (tmp / "segment.json").write_text(json.dumps(meta, indent=1))
    atomic_publish(tmp, final)
    return final


def read_segment_tables(seg_dir: Path) -> tuple[str, SegmentTables]:
    """Map a stored segment; raises UnknownFormat when its version is not ours."""
    seg_id, files = _component_files(seg_dir)
    return seg_id, _mapped(files)


def _mapped(files: dict[str, Path]) -> SegmentTables:
    return SegmentTables(**{name: read_table(path) for name, path in files.items()})


def _component_files(seg_dir: Path) -> tuple[str, dict[str, Path]]:
    """A stored segment's id and the file of each component."""
    meta: dict[str, Any] = json.loads((seg_dir / "segment.json").read_text())
    if meta.get("format_version") != FORMAT_VERSION:
        raise UnknownFormat(f"segment {seg_dir.name} has format {meta.get('format_version')}")
    files: dict[str, str] = meta["components"]
    return str(meta["id"]), {name: seg_dir / files[name] for name in COMPONENTS}


def one_array(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    """The values as one array: a mapped single-batch column's one chunk, without a copy."""
    if isinstance(values, pa.Array):
        return values
    return values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()


def column(table: pa.Table, name: str) -> npt.NDArray[Any]:
    """A fixed-width column as a numpy view (no copy for a mapped single-batch table)."""
    arr = one_array(table.column(name))
    if len(arr) == 0:
        return np.zeros(0, dtype=arr.type.to_pandas_dtype())
    view: npt.NDArray[Any] = arr.to_numpy(zero_copy_only=not pa.types.is_boolean(arr.type))
    return view


def binary_buffers(
    arr: pa.Array, offset_type: type[np.int32] | type[np.int64]
) -> tuple[npt.NDArray[Any], memoryview]:
    """A (large) binary or string array's offsets (one past the last value too) and data, as
    views of its buffers: no copy, so a mapped column is read a page at a time."""
    n = len(arr)
    if not n:
        return np.zeros(1, dtype=offset_type), memoryview(b"")
    buffers = arr.buffers()
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[arr.offset : arr.offset + n + 1]
    return offsets, memoryview(buffers[2]) if buffers[2] is not None else memoryview(b"")


class TermDictionary:
    """Binary search over a sorted `term, start, count` table without materialising the terms.

    Every `SAMPLE_EVERY`-th term is copied into memory at the first lookup; a lookup bisects
    those first, then only one block of the mapped column. A plain binary search over four
    million mapped terms touches some 40 scattered pages per term, each faulting in its
    neighbours too, and that, not the postings, is what grew a worker's resident set on a
    large repository. Sampled lazily: the mirror opens fresh segments only for their blob
    ids, and reading the samples back from disk costs it half a second per segment.
    """

    SAMPLE_EVERY: Final = 256

    def __init__(self, table: pa.Table) -> None:
        self.start = column(table, "start")
        self.count = column(table, "count")
        arr = one_array(table.column("term"))
        self.n = len(arr)
        self.offsets, self.data = binary_buffers(arr, np.int32)
        self._samples: list[bytes] | None = None

    def _sampled(self) -> list[bytes]:
        samples = self._samples
        if samples is None:
            bounds = self.offsets[: self.n : self.SAMPLE_EVERY].tolist()
            ends = self.offsets[1 : self.n + 1 : self.SAMPLE_EVERY].tolist()
            samples = [bytes(self.data[a:b]) for a, b in zip(bounds, ends, strict=True)]
            self._samples = samples
        return samples

    def __call__(self, term: str) -> tuple[int, int] | None:
        """(start, count) of the term's postings, or None."""
        target = term.encode()
        block = bisect.bisect_right(self._sampled(), target) - 1
        if block < 0:
            return None
        offsets, data = self.offsets, self.data
        lo = block * self.SAMPLE_EVERY
        hi = min(lo + self.SAMPLE_EVERY, self.n)
        while lo < hi:
            mid = (lo + hi) // 2
            if bytes(data[offsets[mid] : offsets[mid + 1]]) < target:
                lo = mid + 1
            else:
                hi = mid
        if lo < self.n and bytes(data[offsets[lo] : offsets[lo + 1]]) == target:
            return int(self.start[lo]), int(self.count[lo])
        return None


class TrigramLists:
    """Which blobs of a segment hold each trigram (in their text, or their definition lines)."""

    def __init__(self, trigrams: pa.Table, postings: pa.Table) -> None:
        self.trigram = column(trigrams, "trigram")
        self.start = column(trigrams, "start")
        self.count = column(trigrams, "count")
        self.blobs = column(postings, "blob")

    def __call__(self, codes: npt.NDArray[np.uint32]) -> list[npt.NDArray[np.uint32]]:
        """For each trigram code, the ascending rows of the blobs whose folded text holds it."""
        if len(self.trigram) == 0:
            return [self.blobs[:0] for _ in range(len(codes))]
        at = np.minimum(np.searchsorted(self.trigram, codes), len(self.trigram) - 1)
        present = (self.trigram[at] == codes).tolist()
        starts, counts = self.start[at].tolist(), self.count[at].tolist()
        return [
            self.blobs[s : s + n] if ok else self.blobs[:0]
            for ok, s, n in zip(present, starts, counts, strict=True)
        ]


class BlobTexts:
    """A large binary column of one text per blob row, sliced from its mapped buffers."""

    def __init__(self, table: pa.Table) -> None:
        self._offsets, self._data = binary_buffers(one_array(table.column("text")), np.int64)

    def __getitem__(self, blob: int) -> bytes:
        """The text of a blob row."""
        return bytes(self._data[self._offsets[blob] : self._offsets[blob + 1]])


class Segment:
    """Read access to one segment's tables: term lookup, postings, chunk and blob columns."""

    def __init__(
        self, seg_id: str, tables: SegmentTables, files: dict[str, Path] | None = None
    ) -> None:
        self.id = seg_id
        self.tables = tables
        self._files = files
        self.n_blobs = tables.blobs.num_rows
        self.n_chunks = tables.chunks.num_rows
        self.blob_indexed = column(tables.blobs, "indexed")
        self.blob_chunk_start = column(tables.blobs, "chunk_start")
        self.blob_chunk_count = column(tables.blobs, "chunk_count")
        self.chunk_blob = column(tables.chunks, "blob")
        self.chunk_start_line = column(tables.chunks, "start_line")
        self.chunk_end_line = column(tables.chunks, "end_line")
        self.len_body = column(tables.chunks, "len_body")
        self.len_sym = column(tables.chunks, "len_sym")
        self.post_chunk = column(tables.postings, "chunk")
        self.post_tf_body = column(tables.postings, "tf_body")
        self.post_tf_sym = column(tables.postings, "tf_sym")
        self.lookup = TermDictionary(tables.terms)
        self.text_trigrams = TrigramLists(tables.trigrams, tables.trigram_postings)
        self.definition_trigrams = TrigramLists(
            tables.definition_trigrams, tables.definition_trigram_postings
        )
        self.definition_lines = BlobTexts(tables.definition_lines)
        self.blob_entity_start = column(tables.blobs, "entity_start")
        self.blob_entity_count = column(tables.blobs, "entity_count")
        self.blob_reference_start = column(tables.blobs, "reference_start")
        self.blob_reference_count = column(tables.blobs, "reference_count")
        self._symbol = tables.chunks.column("symbol")
        self._kind = tables.chunks.column("kind")
        self._oid = tables.blobs.column("oid")

    @property
    def source_bytes(self) -> int:
        """Bytes of the blobs it analysed (those it holds as too large or binary aside).

        Worked out when asked: only a build asks, and a query opens every segment."""
        sizes = column(self.tables.blobs, "size")
        return int(sizes[self.blob_indexed].sum())

    @classmethod
    def open(cls, seg_dir: Path) -> Segment:
        """Memory-map a stored segment."""
        seg_id, files = _component_files(seg_dir)
        return cls(seg_id, _mapped(files), files)

    def scanned(self, component: str) -> pa.Table:
        """A component to read every row of: read whole from its file (see
        `read_whole_table`), or the table itself when the segment is held in memory or its
        file was removed (see `retention`)."""
        table: pa.Table = getattr(self.tables, component)
        if self._files is None:
            return table
        try:
            return read_whole_table(self._files[component])
        except FileNotFoundError:  # pruned since it was mapped: the mapping still reads it
            return table

    def oids(self) -> list[bytes]:
        """Every blob id in the segment, in blob order.

        Sliced from the column's buffers: `to_pylist` took 0.05 s for Linux's 78k blobs.
        """
        raw = self.oid_array().tobytes()
        width = self._oid.type.byte_width
        return [raw[i : i + width] for i in range(0, len(raw), width)]

    def oid_array(self) -> npt.NDArray[np.bytes_]:
        """Every blob id in the segment, in blob order, as one array of 20-byte strings.

        Compare them as the array's items: numpy drops trailing zero bytes from an item it
        gives back as `bytes`.
        """
        arr = one_array(self._oid)
        width = arr.type.byte_width
        if not len(arr):
            return np.zeros(0, dtype=f"S{width}")
        found: npt.NDArray[np.bytes_] = np.frombuffer(
            arr.buffers()[1], dtype=f"S{width}", count=len(arr), offset=arr.offset * width
        )
        return found

    def entities(self, blob: int) -> pa.Table:
        """A blob's entities (see the module docstring); `parent` stays a segment row."""
        start = int(self.blob_entity_start[blob])
        return self.tables.entities.slice(start, int(self.blob_entity_count[blob]))

    def references(self, blob: int) -> pa.Table:
        """A blob's references; `entity` is a segment row of `entities`, or -1."""
        start = int(self.blob_reference_start[blob])
        return self.tables.references.slice(start, int(self.blob_reference_count[blob]))

    def oid(self, blob: int) -> str:
        """The hex id of a blob."""
        return self._oid[blob].as_py().hex()  # type: ignore[no-any-return]

    def symbol(self, chunk: int) -> str | None:
        """The qualified definition name of a chunk, if it is a definition."""
        return self._symbol[chunk].as_py()  # type: ignore[no-any-return]

    def kind(self, chunk: int) -> str:
        """The chunk's kind: a tree-sitter node type, `module` or `text`."""
        return self._kind[chunk].as_py()  # type: ignore[no-any-return]
