"""Where a commit's live chunks are: its segments and paths, numbered through the commit.

Each segment numbers its blobs and chunks from 0; a commit view reads several segments, so
blobs and chunks get global ids (a segment's offset plus its own id), and a chunk is live when
one of the commit's paths holds its blob (a segment may hold blobs this commit no longer has).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from worker.index.analysis.tokens import token_terms
from worker.index.store.commit_view import CommitTables, PathIndex
from worker.index.store.segment import Segment

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class CommitChunks:
    """A commit's segments and paths with the global numbering of their blobs and chunks."""

    segments: tuple[Segment, ...]
    paths: PathIndex
    blob_off: I64
    """Segment i's blobs are global blobs blob_off[i] to blob_off[i + 1]."""
    chunk_off: I64
    """Segment i's chunks are global chunks chunk_off[i] to chunk_off[i + 1]."""
    path_gblob: I64
    """Each path's global blob."""
    chunk_gblob: I64
    """Each global chunk's global blob."""
    live_chunks: Mask
    """Which global chunks belong to a blob of this commit."""
    live: list[Mask]
    """The same, per segment (views of `live_chunks`)."""
    all_live: list[bool]

    @classmethod
    def of(cls, segments: Sequence[Segment], view: CommitTables) -> CommitChunks:
        """Number the chunks of `segments` for the commit whose paths `view` lists."""
        paths = PathIndex(view)
        blob_off = np.zeros(len(segments) + 1, dtype=np.int64)
        chunk_off = np.zeros(len(segments) + 1, dtype=np.int64)
        for i, seg in enumerate(segments):
            blob_off[i + 1] = blob_off[i] + seg.n_blobs
            chunk_off[i + 1] = chunk_off[i] + seg.n_chunks
        path_gblob = blob_off[paths.segment] + paths.blob
        live_blob = np.zeros(int(blob_off[-1]), dtype=bool)
        live_blob[path_gblob] = True
        chunk_gblob = np.concatenate(
            [seg.chunk_blob.astype(np.int64) + blob_off[i] for i, seg in enumerate(segments)]
            or [np.zeros(0, np.int64)]
        )
        live = live_blob[chunk_gblob]
        per_segment = [live[chunk_off[i] : chunk_off[i + 1]] for i in range(len(segments))]
        return cls(
            segments=tuple(segments),
            paths=paths,
            blob_off=blob_off,
            chunk_off=chunk_off,
            path_gblob=path_gblob,
            chunk_gblob=chunk_gblob,
            live_chunks=live,
            live=per_segment,
            all_live=[bool(m.all()) for m in per_segment],
        )

    def live_postings(self, index: int, start: int, count: int) -> int:
        """How many of segment `index`'s postings [start, start + count) are of live chunks:
        a term's document frequency in this commit."""
        if self.all_live[index]:
            return count
        chunk = self.segments[index].post_chunk[start : start + count]
        return int(np.count_nonzero(self.live[index][chunk]))

    def file_chunks(self, path_row: int, chunk_score: F64) -> tuple[list[int], list[float]]:
        """A path's chunks that score (segment chunk ids, best first, ties by position) and
        their scores; its first chunk with 0.0 when none scores."""
        seg_index = int(self.paths.segment[path_row])
        blob = int(self.paths.blob[path_row])
        seg = self.segments[seg_index]
        first = int(seg.blob_chunk_start[blob])
        count = int(seg.blob_chunk_count[blob])
        if count == 0:
            return [], []
        base = int(self.chunk_off[seg_index])
        scores = chunk_score[base + first : base + first + count] if len(chunk_score) else None
        if scores is None or not scores.any():
            return [first], [0.0]
        nz = np.flatnonzero(scores)
        ranked = nz[np.lexsort((nz, -scores[nz]))]
        return (ranked + first).tolist(), scores[ranked].tolist()

    def defining_chunks(self, name: str) -> I64:
        """The live chunks (global ids) whose definition name holds `name` as a whole word.

        Read from the symbol field's postings: no table of names is built, which on a large
        repository would cost seconds and hundreds of megabytes at the first query.
        """
        terms = token_terms(name)
        if not terms:
            return np.zeros(0, dtype=np.int64)
        found = []
        for index, seg in enumerate(self.segments):
            hit = seg.lookup(terms[-1])
            if hit is None:
                continue
            start, count = hit
            chunk = seg.post_chunk[start : start + count]
            keep = seg.post_tf_sym[start : start + count] > 0
            if not self.all_live[index]:
                keep &= self.live[index][chunk]
            if keep.any():
                found.append(chunk[keep].astype(np.int64) + self.chunk_off[index])
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
