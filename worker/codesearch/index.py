"""The trigram index of one commit: which segment row holds each searchable file's trigrams.

A commit's manifest lists every searchable file (a regular file, text, at most
`max_blob_bytes`) in path order, with the segment and ordinal that index its blob. The
mirror stores manifests and segments under the repository's index directory; a worker
asked about a revision without a stored manifest builds one in memory from the stored
segments plus an in-memory segment of the blobs they lack (up to a byte budget; blobs
beyond it stay unindexed and are always candidates, so the answer stays exact).

    <cache>/index/<owner>/<name>/trigrams/v1/commits/<sha>.arrow
        path: string, blob: binary(20), size: uint64, segment: int32, ordinal: uint32
        metadata: format version, commit, segment ids (JSON), max_blob_bytes
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pygit2

from worker.codesearch.queryplan import MATCH_ALL, AllOf, AnyOf, Literal, TrigramQuery
from worker.codesearch.segments import (
    FORMAT_KEY,
    FORMAT_VERSION,
    BlobText,
    Ordinals,
    Segment,
    build_segment,
)
from worker.codesearch.trigrams import trigrams_of
from worker.errors import Timeout

MANIFEST_FORMAT: Final = f"trigram-commit/{FORMAT_VERSION}".encode()
MANIFEST_SCHEMA: Final = pa.schema(
    [
        ("path", pa.string()),
        ("blob", pa.binary(20)),
        ("size", pa.uint64()),
        ("segment", pa.int32()),
        ("ordinal", pa.uint32()),
    ],
    metadata={FORMAT_KEY: MANIFEST_FORMAT},
)
SEGMENT_BYTES: Final = 64 << 20
"""Text per segment: bounds the memory one segment build needs."""
_REGULAR_MODES: Final = frozenset({0o100644, 0o100755, 0o100664})

RowIndex = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class CommitIndex:
    """The searchable files of one commit and the segments that index them."""

    commit: str
    source: str
    """`trigram` when read from the store, `on-demand` when built by the worker."""
    paths: tuple[str, ...]
    blob_ids: npt.NDArray[np.uint8]
    sizes: npt.NDArray[np.uint64]
    segment: npt.NDArray[np.int32]
    """Index into `segments`, or -1 for a blob left unindexed (always a candidate)."""
    ordinal: npt.NDArray[np.uint32]
    segments: tuple[Segment, ...]
    _rows_by_segment: list[RowIndex] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._rows_by_segment.extend(
            np.flatnonzero(self.segment == s) for s in range(len(self.segments))
        )

    def __len__(self) -> int:
        return len(self.paths)

    def blob_hex(self, row: int) -> str:
        """The blob id of a row, as hex."""
        return bytes(self.blob_ids[row]).hex()

    @property
    def unindexed(self) -> int:
        """Rows whose blob no segment covers."""
        return int(np.count_nonzero(self.segment < 0))

    def candidates(self, query: TrigramQuery) -> RowIndex:
        """Rows (ascending, i.e. in path order) whose blob may match `query`."""
        if query == MATCH_ALL:
            return np.arange(len(self.paths), dtype=np.int64)
        picked = [np.flatnonzero(self.segment < 0)]
        for s, segment in enumerate(self.segments):
            rows = self._rows_by_segment[s]
            if len(rows) == 0:
                continue
            ordinals = evaluate(segment, query)
            picked.append(rows[np.isin(self.ordinal[rows], ordinals)])
        return np.sort(np.concatenate(picked)).astype(np.int64)


def evaluate(segment: Segment, query: TrigramQuery) -> Ordinals:
    """The ordinals of `segment` whose trigrams satisfy `query`."""
    if isinstance(query, Literal):
        lists = sorted(
            (segment.ordinals(int(code)) for code in trigrams_of(query.text, folded=True)),
            key=len,
        )
        return _intersect(lists)
    if isinstance(query, AllOf):
        if not query.parts:
            return np.flatnonzero(~segment.binary).astype(np.uint32)
        return _intersect(sorted((evaluate(segment, p) for p in query.parts), key=len))
    assert isinstance(query, AnyOf)
    result = np.empty(0, dtype=np.uint32)
    for part in query.parts:
        result = np.union1d(result, evaluate(segment, part))
    return result.astype(np.uint32)


def _intersect(lists: Sequence[Ordinals]) -> Ordinals:
    result = lists[0]
    for other in lists[1:]:
        if len(result) == 0:
            break
        result = np.intersect1d(result, other, assume_unique=True)
    return result


@dataclass(frozen=True, slots=True)
class TreeFile:
    """A regular file of a commit's tree."""

    path: str
    oid: pygit2.Oid


def tree_files(tree: pygit2.Tree, deadline: float | None = None) -> Iterator[TreeFile]:
    """Regular files under `tree`, depth first; symlinks and submodules are skipped."""
    stack: list[tuple[str, pygit2.Tree]] = [("", tree)]
    while stack:
        if deadline is not None and time.monotonic() > deadline:
            raise Timeout("ran out of time listing the tree", stage="code.search.tree")
        prefix, current = stack.pop()
        for entry in current:
            mode = int(entry.filemode)
            if mode == 0o040000:
                assert isinstance(entry, pygit2.Tree)
                stack.append((f"{prefix}{entry.name}/", entry))
            elif mode in _REGULAR_MODES:
                yield TreeFile(path=prefix + str(entry.name), oid=entry.id)


class BlobCatalog:
    """Where each already indexed blob lives: raw blob id -> (segment, ordinal)."""

    def __init__(self, segments: Sequence[Segment] = ()) -> None:
        self._where: dict[bytes, tuple[Segment, int]] = {}
        for segment in segments:
            self.add(segment)

    def add(self, segment: Segment) -> None:
        """Make the blobs of `segment` known."""
        raw = segment.blob_ids.tobytes()
        for ordinal in range(len(segment)):
            self._where[raw[ordinal * 20 : ordinal * 20 + 20]] = (segment, ordinal)

    def get(self, blob: bytes) -> tuple[Segment, int] | None:
        """The segment and ordinal of a raw blob id, if any segment covers it."""
        return self._where.get(blob)

    def __len__(self) -> int:
        return len(self._where)


@dataclass(slots=True)
class _Row:
    path: str
    blob: bytes
    size: int
    segment: Segment | None
    ordinal: int


def build_commit_index(
    repo: pygit2.Repository,
    commit: str,
    *,
    catalog: BlobCatalog,
    max_blob_bytes: int,
    source: str,
    budget_bytes: int | None = None,
    deadline: float | None = None,
    segment_bytes: int = SEGMENT_BYTES,
) -> tuple[CommitIndex, list[Segment]]:
    """The index of `commit` over `catalog`'s segments plus new ones for the blobs they lack.

    Returns the index and the new segments. At most `budget_bytes` of new text is read
    (None: no bound); blobs past it stay unindexed. Raises Timeout past `deadline`.
    """
    tree = repo[commit].peel(pygit2.Commit).tree
    rows: list[_Row] = []
    pending: dict[bytes, list[_Row]] = {}
    for item in tree_files(tree, deadline):
        raw = item.oid.raw
        known = catalog.get(raw)
        if known is not None:
            segment, ordinal = known
            size = int(segment.sizes[ordinal])
            if not segment.binary[ordinal] and size <= max_blob_bytes:
                rows.append(_Row(item.path, raw, size, segment, ordinal))
            continue
        row = _Row(item.path, raw, 0, None, -1)
        pending.setdefault(raw, []).append(row)
    new_segments: list[Segment] = []
    batch: list[BlobText] = []
    spent = batch_bytes = 0
    for raw, waiting in sorted(pending.items()):
        if deadline is not None and time.monotonic() > deadline:
            raise Timeout(
                "ran out of time indexing the revision",
                stage="code.search.index",
                blobs_left=len(pending),
            )
        oid = pygit2.Oid(raw=raw)
        _, size = repo.odb.read_header(oid)
        if size > max_blob_bytes:
            continue
        for row in waiting:
            row.size = size
        if budget_bytes is not None and spent + size > budget_bytes:
            rows += waiting  # unindexed: verified directly
            continue
        blob = repo[oid]
        assert isinstance(blob, pygit2.Blob)
        data = blob.data
        spent += size
        batch.append(BlobText(blob=raw, data=data))
        batch_bytes += size
        if batch_bytes >= segment_bytes:
            new_segments.append(build_segment(batch))
            batch, batch_bytes = [], 0
    if batch:
        new_segments.append(build_segment(batch))
    fresh = BlobCatalog(new_segments)
    for raw, waiting in pending.items():
        found = fresh.get(raw)
        if found is None:
            continue
        segment, ordinal = found
        if segment.binary[ordinal]:
            continue
        for row in waiting:
            row.segment, row.ordinal = segment, ordinal
            rows.append(row)
    return _assemble(commit, source, rows), new_segments


def _assemble(commit: str, source: str, rows: list[_Row]) -> CommitIndex:
    rows.sort(key=lambda r: r.path)
    segments: dict[str, int] = {}
    ordered: list[Segment] = []
    for row in rows:
        if row.segment is not None and row.segment.id not in segments:
            segments[row.segment.id] = len(ordered)
            ordered.append(row.segment)
    return CommitIndex(
        commit=commit,
        source=source,
        paths=tuple(r.path for r in rows),
        blob_ids=np.frombuffer(b"".join(r.blob for r in rows), dtype=np.uint8).reshape(-1, 20),
        sizes=np.fromiter((r.size for r in rows), dtype=np.uint64, count=len(rows)),
        segment=np.fromiter(
            (segments[r.segment.id] if r.segment is not None else -1 for r in rows),
            dtype=np.int32,
            count=len(rows),
        ),
        ordinal=np.fromiter((max(r.ordinal, 0) for r in rows), dtype=np.uint32, count=len(rows)),
        segments=tuple(ordered),
    )


def manifest_table(index: CommitIndex, *, max_blob_bytes: int) -> pa.Table:
    """The Arrow table stored for `index` (which must have no unindexed rows)."""
    if index.unindexed:
        raise ValueError("a stored manifest cannot have unindexed rows")
    count = len(index)
    metadata = {
        FORMAT_KEY: MANIFEST_FORMAT,
        b"commit": index.commit.encode(),
        b"segments": json.dumps([s.id for s in index.segments]).encode(),
        b"max_blob_bytes": str(max_blob_bytes).encode(),
    }
    return pa.table(
        [
            pa.array(index.paths, type=pa.string()),
            pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(20), count, [None, pa.py_buffer(index.blob_ids.tobytes())]
            ),
            pa.array(index.sizes, type=pa.uint64()),
            pa.array(index.segment, type=pa.int32()),
            pa.array(index.ordinal, type=pa.uint32()),
        ],
        schema=MANIFEST_SCHEMA.with_metadata(metadata),
    )


def index_from_manifest(
    table: pa.Table, segments: dict[str, Segment], *, max_blob_bytes: int
) -> CommitIndex | None:
    """The CommitIndex a stored manifest describes, or None when it cannot serve this worker.

    A manifest built with another `max_blob_bytes`, or naming a segment that is gone,
    is not used; the worker then builds the index on demand.
    """
    metadata = table.schema.metadata or {}
    if int(metadata.get(b"max_blob_bytes", b"-1")) != max_blob_bytes:
        return None
    try:
        listed = [segments[s] for s in json.loads(metadata[b"segments"])]
    except KeyError:
        return None
    count = table.num_rows
    blob_column = table.column("blob").combine_chunks()
    blob_ids = (
        np.frombuffer(blob_column.buffers()[1], dtype=np.uint8)[: count * 20].reshape(count, 20)
        if count
        else np.empty((0, 20), dtype=np.uint8)
    )
    return CommitIndex(
        commit=metadata[b"commit"].decode(),
        source="trigram",
        paths=tuple(table.column("path").to_pylist()),
        blob_ids=blob_ids,
        sizes=table.column("size").to_numpy(),
        segment=table.column("segment").to_numpy(),
        ordinal=table.column("ordinal").to_numpy(),
        segments=tuple(listed),
    )
