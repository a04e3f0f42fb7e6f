"""The entities and references of every path of a commit, gathered from its segments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from worker.index.analysis.distinct import distinct
from worker.index.store.segment import Segment
from worker.index.views.graph.model import Names, Relation, entity_type
from worker.index.views.text import CommitIndex

I64: TypeAlias = npt.NDArray[np.int64]
_CPP_ONLY_KINDS: Final = frozenset({"class_specifier", "namespace_definition"})
"""Definitions C's grammar has no node for: a file holding one was parsed as C++."""
_FEW_ROWS: Final = 16
"""Rows of a table read through its mapping, page by page, rather than whole: at most one
in this many."""


class Gathered:
    """The entities and references of every path of a commit, as arrays in node order.

    Entities are numbered after directories and files, path by path in path order, each
    path's in pre-order (as its blob's analysis stored them).
    """

    def __init__(self, index: CommitIndex, first_entity: int, file_node: I64) -> None:
        """Gather every path's entities; references are gathered by `gather_references`."""
        self._index = index
        self.file_node = file_node
        """Each path row's file node."""
        segments = index.segments
        seg_of_path = index.path_segment.astype(np.int64)
        blob_of_path = index.path_blob.astype(np.int64)
        n_paths = len(seg_of_path)
        self.n_lines = np.zeros(n_paths, dtype=np.int64)
        parts: list[tuple[I64, I64, int]] = []
        for seg_index, segment in enumerate(segments):
            rows = np.flatnonzero(seg_of_path == seg_index)
            if not len(rows):
                continue
            blobs = blob_of_path[rows]
            lines = segment.tables.blobs.column("n_lines").to_numpy()
            self.n_lines[rows] = lines[blobs]
            parts.append(
                _picked(
                    rows, blobs, segment.blob_entity_start, segment.blob_entity_count, seg_index
                )
            )
        self._entities(segments, blob_of_path, _concat_parts(parts), first_entity, file_node)
        # Python lists for `entities_of` and `file_of`, asked per file and per reference
        # (a numpy scalar costs more than the lookup).
        owner = self.entity_path
        self._n_dirs = first_entity - n_paths
        self.entity_bounds: I64 = np.searchsorted(owner, np.arange(n_paths + 1))
        """Where each path row's entities start (and, for the last, end) among them."""
        self._bounds: list[int] = self.entity_bounds.tolist()
        self._file: list[int] = file_node[owner].tolist()
        self._top: list[bool] = self.entity_top.tolist()

    def gather_references(self, wanted: npt.NDArray[np.bool_] | None = None) -> None:
        """Gather the references of every path, or of the path rows `wanted` (those of the
        files a build may resolve: the others' are never read)."""
        index = self._index
        seg_of_path = index.path_segment.astype(np.int64)
        blob_of_path = index.path_blob.astype(np.int64)
        parts: list[tuple[I64, I64, int]] = []
        for seg_index, segment in enumerate(index.segments):
            mine = seg_of_path == seg_index
            rows = np.flatnonzero(mine if wanted is None else mine & wanted)
            if not len(rows):
                continue
            parts.append(
                _picked(
                    rows,
                    blob_of_path[rows],
                    segment.blob_reference_start,
                    segment.blob_reference_count,
                    seg_index,
                )
            )
        self._references(index.segments, blob_of_path, _concat_parts(parts), self.file_node)

    def _entities(
        self,
        segments: Sequence[Segment],
        blob_of_path: I64,
        parts: tuple[I64, I64, I64],
        first_entity: int,
        file_node: I64,
    ) -> None:
        # By path row (stable: each path's in their stored order).
        owner, picked, seg = parts
        order = np.argsort(owner, kind="stable")
        owner, picked, seg = owner[order], picked[order], seg[order]
        self.entity_path = owner
        n = len(owner)
        self.first_entity = first_entity
        nodes = first_entity + np.arange(n, dtype=np.int64)
        # Each path's first entity node: where its run starts.
        run_start = np.zeros(n, dtype=np.int64)
        if n:
            new_run = np.ones(n, dtype=bool)
            new_run[1:] = owner[1:] != owner[:-1]
            starts = np.flatnonzero(new_run)
            run_start = np.repeat(nodes[starts], np.diff(np.append(starts, n)))
        parent = np.full(n, -1, dtype=np.int64)
        start_line = np.zeros(n, dtype=np.int64)
        end_line = np.zeros(n, dtype=np.int64)
        types = np.zeros(n, dtype=np.uint8)
        cpp_only = np.zeros(n, dtype=bool)
        names: list[pa.Array] = []
        position = np.zeros(n, dtype=np.int64)
        offset = 0
        for seg_index, segment in enumerate(segments):
            mine = np.flatnonzero(seg == seg_index)
            if not len(mine):
                continue
            table = segment.scanned("entities")
            rows = picked[mine]
            local_parent = table.column("parent").to_numpy()[rows].astype(np.int64)
            first_of_blob = segment.blob_entity_start[blob_of_path[owner[mine]]].astype(np.int64)
            parent[mine] = np.where(
                local_parent >= 0, run_start[mine] + (local_parent - first_of_blob), -1
            )
            start_line[mine] = table.column("start_line").to_numpy()[rows]
            end_line[mine] = table.column("end_line").to_numpy()[rows]
            taken = pa.array(rows)
            names.append(table.column("name").take(taken).combine_chunks())
            kind_types, kind_cpp_only = _kind_codes(table.column("kind"))
            types[mine] = kind_types[rows]
            cpp_only[mine] = kind_cpp_only[rows]
            position[offset : offset + len(mine)] = mine
            offset += len(mine)
        back = np.argsort(position[:offset], kind="stable")
        self.entity_parent = np.where(parent >= 0, parent, file_node[owner])
        self.entity_top = parent < 0
        self.start_line = start_line
        self.end_line = end_line
        self.name_array: pa.Array = (
            pa.concat_arrays(names).take(pa.array(back)) if names else pa.array([], pa.string())
        )
        self.names = Names(self.name_array)
        self.types = types
        self.cpp_paths: I64 = distinct(owner[cpp_only])
        """Path rows with a definition only C++'s grammar finds: a `.h` among them is C++."""

    def entities_of(self, file: int) -> list[tuple[int, str, bool]]:
        """A file node's entities: (node, qualified name, whether at the file's top level)."""
        row = file - self._n_dirs
        first, top = self.first_entity, self._top
        lo, hi = self._bounds[row], self._bounds[row + 1]
        return [
            (first + e, name, top[e])
            for e, name in zip(range(lo, hi), self.names[lo:hi], strict=True)
        ]

    def file_of(self, node: int) -> int:
        """The file node an entity is defined in (a file or directory node: itself)."""
        return self._file[node - self.first_entity] if node >= self.first_entity else node

    def _references(
        self,
        segments: Sequence[Segment],
        blob_of_path: I64,
        parts: tuple[I64, I64, I64],
        file_node: I64,
    ) -> None:
        # By path row; holders become nodes.
        first_entity = self.first_entity
        r_owner, r_picked, r_seg = parts
        order = np.argsort(r_owner, kind="stable")
        r_owner, r_picked, r_seg = r_owner[order], r_picked[order], r_seg[order]
        self.reference_path = r_owner
        holder = np.zeros(len(r_owner), dtype=np.int64)
        relation = np.zeros(len(r_owner), dtype=np.uint8)
        columns: dict[str, list[pa.Array]] = {"target": [], "name": [], "alias": []}
        position = np.zeros(len(r_owner), dtype=np.int64)
        offset = 0
        for seg_index, segment in enumerate(segments):
            mine = np.flatnonzero(r_seg == seg_index)
            if not len(mine):
                continue
            rows = r_picked[mine]
            # A few files' references (a build carried over) are read where they are mapped.
            mapped = segment.tables.references
            few = len(rows) * _FEW_ROWS <= mapped.num_rows
            table = mapped if few else segment.scanned("references")
            local = table.column("entity").to_numpy()[rows].astype(np.int64)
            first_of_blob = segment.blob_entity_start[blob_of_path[r_owner[mine]]].astype(np.int64)
            # The holder's node: its path's first entity node plus its place in the blob.
            first_node = np.searchsorted(self.entity_path, r_owner[mine]) + first_entity
            holder[mine] = np.where(
                local >= 0, first_node + (local - first_of_blob), file_node[r_owner[mine]]
            )
            relation_column = table.column("relation")
            codes = _relation_codes(relation_column)
            relation[mine] = codes[rows]
            taken = pa.array(rows)
            for name, pieces in columns.items():
                pieces.append(table.column(name).take(taken).combine_chunks())
            position[offset : offset + len(mine)] = mine
            offset += len(mine)
        back = pa.array(np.argsort(position[:offset], kind="stable"))
        self.holder = holder
        self.relation = relation
        self.target_array = (
            pa.concat_arrays(columns["target"]).take(back)
            if columns["target"]
            else pa.array([], pa.string())
        )
        self._imported = _joined(columns["name"], back)
        self._alias = _joined(columns["alias"], back)

    def texts(self, rows: I64) -> dict[int, tuple[str, str | None, str | None]]:
        """The target, imported name and alias of the reference rows asked for.

        Only these become Python strings: most rows are calls, which are read as arrays.
        """
        taken = pa.array(rows, pa.int64())
        return dict(
            zip(
                rows.tolist(),
                zip(
                    self.target_array.take(taken).fill_null("").to_pylist(),
                    self._imported.take(taken).to_pylist(),
                    self._alias.take(taken).to_pylist(),
                    strict=True,
                ),
                strict=True,
            )
        )


def _picked(
    rows: I64,
    blobs: I64,
    starts: npt.NDArray[np.integer],
    counts: npt.NDArray[np.integer],
    seg: int,
) -> tuple[I64, I64, int]:
    """The table rows of each path row's blob (by its start and count), with their owners."""
    start = starts[blobs].astype(np.int64)
    count = counts[blobs].astype(np.int64)
    return np.repeat(rows, count), np.repeat(start, count) + _ranges(count), seg


def _ranges(count: I64) -> I64:
    """0..count-1 for each count, concatenated."""
    total = int(count.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(np.cumsum(count) - count, count)
    return np.arange(total, dtype=np.int64) - starts


def _concat_parts(parts: list[tuple[I64, I64, int]]) -> tuple[I64, I64, I64]:
    """The parts' owners, rows and segments, each as one array."""
    empty = np.zeros(0, dtype=np.int64)
    return (
        np.concatenate([empty] + [p[0] for p in parts]),
        np.concatenate([empty] + [p[1] for p in parts]),
        np.concatenate([empty] + [np.full(len(p[0]), p[2], np.int64) for p in parts]),
    )


def _kind_codes(column: pa.ChunkedArray) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.bool_]]:
    """Each row's `EntityType` by its parser kind, and whether only C++'s grammar has that
    kind."""
    kinds, code = _distinct_values(column)
    by_kind = np.asarray([int(entity_type(kind)) for kind in kinds] or [0], dtype=np.uint8)
    cpp_only = np.asarray([kind in _CPP_ONLY_KINDS for kind in kinds] or [False], dtype=bool)
    return by_kind[code], cpp_only[code]


def _relation_codes(column: pa.ChunkedArray) -> npt.NDArray[np.uint8]:
    """Each row's relation as `Relation` (the stored names mapped)."""
    names, code = _distinct_values(column)
    by_name = {"import": Relation.IMPORT, "invoke": Relation.INVOKE, "inherit": Relation.INHERIT}
    mapping = np.asarray([int(by_name[v]) for v in names] or [0], dtype=np.uint8)
    codes: npt.NDArray[np.uint8] = mapping[code]
    return codes


def _distinct_values(column: pa.ChunkedArray) -> tuple[list[str], I64]:
    """A string column's distinct values and each row's place among them: each distinct
    value is then mapped once, not once per row."""
    array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not pa.types.is_dictionary(array.type):
        array = array.dictionary_encode()
    values: list[str] = array.dictionary.to_pylist()
    return values, array.indices.to_numpy(zero_copy_only=False).astype(np.int64)


def _joined(parts: list[pa.Array], back: pa.Array) -> pa.Array:
    if not parts:
        return pa.array([], pa.string())
    return pa.concat_arrays(parts).take(back)
