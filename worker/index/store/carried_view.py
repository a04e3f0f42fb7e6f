"""A commit's index carried from a stored commit's: only the files that differ cost.

The view of a commit (`commit_view`) lists every indexed path with its blob and a path
index. A path's terms depend on the path alone, so the view of a commit a few files away
from a stored one is that view without the paths that went or changed, with the paths that
came or changed: the same tables, row for row, as those worked out from the whole tree,
at a cost in the stored view's arrays (numpy and Arrow), not in Python per path. The
segments are the stored ones still needed and one for the blobs none of them holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pygit2

from worker.index.store.blob_places import (
    blob_locations,
    live_bytes,
    located_blobs,
    missing_blobs,
)
from worker.index.store.commit_view import CommitTables, PathTerms, located_terms, path_terms
from worker.index.store.segment import Segment, column, one_array
from worker.index.store.tree_listing import tree_changes

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
Mask = npt.NDArray[np.bool_]
Analyse = Callable[
    [list[tuple[str, bytes]], Callable[[], PathTerms]], tuple[list[Segment], PathTerms | None]
]
"""Analyses the missing (path, oid) into new segments; may run the second argument (the path
index of every file that came) meanwhile and give back what it returned."""


@dataclass(frozen=True, slots=True)
class StoredView:
    """A stored commit index, mapped: the commit, its view and segments.

    Mapped when found, so that a view the mirror replaces meanwhile stays readable.
    """

    commit: str
    tables: CommitTables
    segments: list[Segment]


@dataclass(frozen=True, slots=True)
class Carried:
    """A commit's segments and view, carried from a stored commit's."""

    carried_from: str
    segments: list[Segment]
    tables: CommitTables
    changed_paths: int
    analysed_blobs: int
    new_segments: int


def carry(
    repo: pygit2.Repository,
    commit: str,
    base: StoredView,
    analyse: Analyse,
    *,
    fold: Callable[[list[Segment], I64], bool],
) -> Carried | None:
    """The segments and view of `commit` from the stored index `base` and the files that
    differ; None when it cannot be: `base`'s commit is not in the repository, or `fold`
    says the segments the commit uses (given the bytes of its blobs each holds) are to be
    folded, which is done from the whole tree.

    Only the files that differ are listed and looked up, and the blobs no segment of
    `base` holds analysed; the base's segments no path needs any more are dropped.
    """
    changes = tree_changes(repo, base.commit, commit)
    if changes is None:
        return None
    keep = kept_rows(base.tables, changes.gone)
    where, skipped = located_blobs(base.segments, [oid for _, oid in changes.came])
    # The (segment, blob) of each path the commit keeps, and of each it gains that the
    # base's segments hold.
    kept_at = [column(base.tables.paths, c)[keep] for c in ("segment", "blob")]
    held_at = np.concatenate(
        [
            np.stack(kept_at, axis=1).astype(np.int64),
            np.array(list(where.values()), dtype=np.int64).reshape(-1, 2),
        ]
    )
    used = np.zeros(len(base.segments), dtype=bool)
    used[held_at[:, 0]] = True
    live = np.flatnonzero(used)
    if fold([base.segments[i] for i in live.tolist()], live_bytes(base.segments, held_at)[live]):
        return None
    missing = missing_blobs(changes.came, where, skipped)
    new_segments, ahead = analyse(missing, lambda: path_terms(changes.came))
    segment_map = np.full(len(base.segments), -1, dtype=np.int64)
    segment_map[live] = np.arange(len(live))
    fresh, _ = blob_locations(new_segments)
    places: list[tuple[int, int] | None] = []
    for _, oid in changes.came:
        if (old := where.get(oid)) is not None:
            places.append((int(segment_map[old[0]]), old[1]))
        elif (new := fresh.get(oid)) is not None:
            places.append((len(live) + new[0], new[1]))
        else:
            places.append(None)
    located = np.array([p is not None for p in places], dtype=bool)
    came = located_terms(changes.came, located, ahead)
    came_places = np.array([p for p in places if p is not None], dtype=np.int32).reshape(-1, 2)
    return Carried(
        carried_from=base.commit,
        segments=[base.segments[i] for i in live.tolist()] + new_segments,
        tables=carried_commit_tables(base.tables, keep, came, came_places, segment_map),
        changed_paths=len(changes.came),
        analysed_blobs=len(missing),
        new_segments=len(new_segments),
    )


def kept_rows(base: CommitTables, gone: list[str]) -> Mask:
    """Which of the stored view's paths stay: those not among `gone`."""
    if not gone:
        return np.ones(base.paths.num_rows, dtype=bool)
    went = pc.is_in(base.paths.column("path"), value_set=pa.array(gone, pa.string()))
    stays: Mask = ~np.asarray(went.to_numpy(zero_copy_only=False), dtype=bool)
    return stays


def carried_commit_tables(
    base: CommitTables,
    keep: Mask,
    came: PathTerms,
    came_places: I32,
    segment_map: I64,
) -> CommitTables:
    """The view of the base's paths `keep` selects and of the paths that came.

    `came`: the path index of the located paths that came (none of them kept), with
    `came_places` their (segment, blob) in the new commit's segments; `segment_map`: the new
    index of each of the base's segments (only those of kept paths are read).
    """
    paths = base.paths.filter(pa.array(keep))
    n_kept = paths.num_rows
    joined = pa.concat_arrays([one_array(paths.column("path")), came.paths])
    order = np.asarray(pc.sort_indices(joined).to_numpy(), dtype=np.int64)
    row_of = np.empty(len(order), dtype=np.int32)
    row_of[order] = np.arange(len(order), dtype=np.int32)

    # Each posting as (term, row); the base's rows renumbered, its dropped paths' gone.
    base_terms = base.path_terms.column("term")
    base_count = column(base.path_terms, "count")
    base_rows = column(base.path_postings, "path")
    live = keep[base_rows]
    renumbered = (np.cumsum(keep, dtype=np.int64) - 1).astype(np.int32)
    came_terms = came.terms.cast(pa.string())
    terms = pc.unique(pa.concat_arrays([one_array(base_terms), came_terms]))
    terms = terms.take(pc.sort_indices(terms))
    base_term_id = _positions(base_terms, terms)
    came_term_id = _positions(came_terms, terms)
    term = np.concatenate(
        [
            np.repeat(base_term_id, base_count)[live],
            np.repeat(came_term_id, came.postings.count),
        ]
    )
    row = np.concatenate(
        [row_of[renumbered[base_rows[live]]], row_of[n_kept + came.postings.chunk]]
    )
    tf_path = np.concatenate(
        [
            column(base.path_postings, "tf_path")[live],
            np.minimum(came.postings.tf_body, 255).astype(np.uint8),
        ]
    )
    tf_name = np.concatenate([column(base.path_postings, "tf_name")[live], came.postings.tf_sym])
    by_term = np.lexsort((row, term))
    count = np.bincount(term, minlength=len(terms))
    used = count > 0
    count = count[used]
    start = np.zeros(len(count), dtype=np.int64)
    np.cumsum(count[:-1], out=start[1:])

    def merged(name: str, came_values: npt.NDArray[np.int32]) -> I32:
        values: I32 = np.concatenate([column(paths, name), came_values])[order]
        return values

    segment = np.concatenate(
        [segment_map[column(paths, "segment")].astype(np.int32), came_places[:, 0]]
    )
    return CommitTables(
        paths=pa.table(
            {
                "path": joined.take(pa.array(order)),
                "oid": pa.concat_arrays([one_array(paths.column("oid")), came.oids]).take(
                    pa.array(order)
                ),
                "segment": segment[order],
                "blob": merged("blob", came_places[:, 1]),
                "len_path": merged("len_path", came.len_path.astype(np.int32)),
                "len_name": merged("len_name", came.len_name.astype(np.int32)),
            }
        ),
        path_terms=pa.table(
            {
                "term": terms.filter(pa.array(used)),
                "start": start,
                "count": count.astype(np.int32),
            }
        ),
        path_postings=pa.table(
            {"path": row[by_term], "tf_path": tf_path[by_term], "tf_name": tf_name[by_term]}
        ),
    )


def _positions(values: pa.ChunkedArray | pa.Array, among: pa.Array) -> I64:
    """Where each of `values` is in `among` (all of them are there)."""
    found: I64 = np.asarray(
        pc.index_in(one_array(values), value_set=among).to_numpy(zero_copy_only=False),
        dtype=np.int64,
    )
    return found
