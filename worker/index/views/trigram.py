"""The trigram view of a commit's index: which files may match a code search.

A commit's index (`worker.index.CommitIndex`) lists each indexed path (text, at most
`max_blob_bytes`) with the segment and row of its blob; every segment holds, beside the
research tables, each trigram's ascending blob rows (`worker.index.analysis.trigrams`). A
plan (`worker.index.views.queryplan`) is evaluated per segment over those lists and mapped
back to the paths that point at the blobs found. Rows are the rows of the commit's paths
table, in path order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from worker.index.analysis.trigrams import trigrams_of
from worker.index.store.segment import Segment, TrigramLists
from worker.index.views.priors import file_priors
from worker.index.views.queryplan import MATCH_ALL, AllOf, AnyOf, Literal, TrigramQuery
from worker.index.views.text import CommitIndex

RowIndex = npt.NDArray[np.int64]
Ordinals = npt.NDArray[np.uint32]
_NO_ORDINALS: Final[Ordinals] = np.empty(0, dtype=np.uint32)


class TrigramView:
    """The searchable files of one commit and the trigram lists that preselect them.

    Immutable once built; one per open commit index, shared by concurrent requests.
    """

    def __init__(self, index: CommitIndex) -> None:
        self.commit = index.commit
        self.source = index.source
        self.path_column = index.path_column
        self.paths: tuple[str, ...] = tuple(self.path_column.to_pylist())
        self._oids = index.path_oids
        self._segments = index.segments
        segment_of_row = index.path_segment
        blob_of_row = index.path_blob
        self._segment_of_row = segment_of_row
        self._blob_of_row = blob_of_row
        # Per segment: its paths' rows ordered by blob row, to map blob rows back to paths.
        self._rows: list[RowIndex] = []
        self._blobs: list[npt.NDArray[np.int64]] = []
        for s in range(len(self._segments)):
            rows = np.flatnonzero(segment_of_row == s)
            blobs = blob_of_row[rows].astype(np.int64)
            order = np.argsort(blobs, kind="stable")
            self._rows.append(rows[order])
            self._blobs.append(blobs[order])

    def __len__(self) -> int:
        return len(self.paths)

    def priors(self, rows: RowIndex, needle: str | None) -> npt.NDArray[np.float64]:
        """`worker.index.views.priors.file_prior` of each row's path, for the query's needle."""
        return file_priors(self.path_column.take(pa.array(rows)).combine_chunks(), needle)

    def oid(self, row: int) -> bytes:
        """The raw blob id of a row."""
        return bytes(self._oids[row])

    def blob_key(self, row: int) -> int:
        """A number for a row's blob, the same for every row that holds the blob."""
        return int(self._segment_of_row[row]) << 32 | int(self._blob_of_row[row])

    def shared_blobs(self, rows: RowIndex) -> dict[int, int]:
        """The blobs (`blob_key`) held by more than one of `rows`, and by how many."""
        keys = self._segment_of_row[rows].astype(np.int64) << 32 | self._blob_of_row[rows]
        blob, count = np.unique(keys, return_counts=True)
        shared = count > 1
        return dict(zip(blob[shared].tolist(), count[shared].tolist(), strict=True))

    def definition_text(self, row: int) -> bytes:
        """A row's definition lines (those `DEFINITION_LINE` accepts), each with its line
        break, as its segment keeps them: no blob is read."""
        segment = self._segments[int(self._segment_of_row[row])]
        return segment.definition_lines[int(self._blob_of_row[row])]

    def candidates(self, query: TrigramQuery, *, definitions: bool = False) -> RowIndex:
        """Rows (ascending, i.e. in path order) whose blob may match `query`.

        With `definitions`, only rows where the match may be on a definition line (one that
        `worker.index.analysis.trigrams.DEFINITION_LINE` accepts).
        """
        if query == MATCH_ALL:
            return np.arange(len(self.paths), dtype=np.int64)
        picked = [np.empty(0, dtype=np.int64)]
        for s, segment in enumerate(self._segments):
            blobs = self._blobs[s]
            if len(blobs) == 0:
                continue
            lists = segment.definition_trigrams if definitions else segment.text_trigrams
            found = evaluate(segment, lists, query).astype(np.int64)
            lo = np.searchsorted(blobs, found, side="left")
            hi = np.searchsorted(blobs, found, side="right")
            # A blob may be at several paths: each of its rows is a candidate.
            counts = hi - lo
            if not counts.any():
                continue
            starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
            positions = np.arange(int(counts.sum()), dtype=np.int64) + starts
            picked.append(self._rows[s][positions])
        return np.sort(np.concatenate(picked))


def evaluate(segment: Segment, lists: TrigramLists, query: TrigramQuery) -> Ordinals:
    """The rows of `segment`'s blobs whose trigrams (in `lists`) satisfy `query`."""
    if isinstance(query, Literal):
        return _intersect(sorted(lists(trigrams_of(query.text)), key=len))
    if isinstance(query, AllOf):
        if not query.parts:
            return np.flatnonzero(segment.blob_indexed).astype(np.uint32)
        parts = sorted((evaluate(segment, lists, p) for p in query.parts), key=len)
        return _intersect(parts)
    assert isinstance(query, AnyOf)
    result = _NO_ORDINALS
    for part in query.parts:
        result = np.union1d(result, evaluate(segment, lists, part))
    return result.astype(np.uint32)


def _intersect(lists: Sequence[Ordinals]) -> Ordinals:
    """The rows in every list (each ascending, without repeats), shortest first."""
    if not lists:
        return _NO_ORDINALS
    result = lists[0]
    for other in lists[1:]:
        if len(result) == 0 or len(other) == 0:
            return _NO_ORDINALS
        # Look the shorter list up in the longer: intersect1d would sort both.
        at = np.minimum(np.searchsorted(other, result), len(other) - 1)
        result = result[other[at] == result]
    return result
