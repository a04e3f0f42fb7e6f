"""The entities and references of every path of a commit, gathered from its segments."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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
        n_paths = len(index.path_segment)
        parts, bounds = _parts(index, entities=True)
        self.n_lines = np.zeros(n_paths, dtype=np.int64)
        for part in parts:
            lines = index.segments[part.segment].tables.blobs.column("n_lines").to_numpy()
            self.n_lines[part.rows] = lines[part.blobs]
        self._entities(index.segments, parts, int(bounds[-1]), first_entity, file_node)
        self.entity_bounds: I64 = bounds
        """Where each path row's entities start (and, for the last, end) among them."""
        # Python lists for `entities_of` and `file_of`, asked per file and per reference
        # (a numpy scalar costs more than the lookup).
        self._n_dirs = first_entity - n_paths
        self._bounds: list[int] = bounds.tolist()
        self._file: list[int] = file_node[self.entity_path].tolist()
        self._top: list[bool] = self.entity_top.tolist()

    def gather_references(self, wanted: npt.NDArray[np.bool_] | None = None) -> None:
        """Gather the references of every path, or of the path rows `wanted` (those of the
        files a build may resolve: the others' are never read)."""
        parts, bounds = _parts(self._index, entities=False, wanted=wanted)
        self._references(self._index, parts, int(bounds[-1]))

    def _entities(
        self,
        segments: Sequence[Segment],
        parts: list[_Part],
        n: int,
        first_entity: int,
        file_node: I64,
    ) -> None:
        self.first_entity = first_entity
        owner = np.zeros(n, dtype=np.int64)
        parent = np.full(n, -1, dtype=np.int64)
        start_line = np.zeros(n, dtype=np.int64)
        end_line = np.zeros(n, dtype=np.int64)
        types = np.zeros(n, dtype=np.uint8)
        cpp_only = np.zeros(n, dtype=bool)
        names: list[pa.Array] = []
        for part in parts:
            table = segments[part.segment].scanned("entities")
            rows, at = part.picked, part.placed
            owner[at] = part.owner
            local_parent = table.column("parent").to_numpy()[rows].astype(np.int64)
            # A blob's rows are its path's entity nodes in order: a parent's node is as far
            # from the entity's node as the parent's row is from the entity's row.
            parent[at] = np.where(local_parent >= 0, first_entity + at + (local_parent - rows), -1)
            start_line[at] = table.column("start_line").to_numpy()[rows]
            end_line[at] = table.column("end_line").to_numpy()[rows]
            names.append(table.column("name").take(pa.array(rows)).combine_chunks())
            kind_types, kind_cpp_only = _kind_codes(table.column("kind"))
            types[at] = kind_types[rows]
            cpp_only[at] = kind_cpp_only[rows]
        self.entity_path = owner
        self.entity_parent = np.where(parent >= 0, parent, file_node[owner])
        self.entity_top = parent < 0
        self.start_line = start_line
        self.end_line = end_line
        self.name_array: pa.Array = _in_path_order(names, parts, n)
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

    def _references(self, index: CommitIndex, parts: list[_Part], n: int) -> None:
        # By path row; holders become nodes.
        blob_of_path = index.path_blob.astype(np.int64)
        owner = np.zeros(n, dtype=np.int64)
        holder = np.zeros(n, dtype=np.int64)
        relation = np.zeros(n, dtype=np.uint8)
        columns: dict[str, list[pa.Array]] = {"target": [], "name": [], "alias": []}
        for part in parts:
            segment = index.segments[part.segment]
            rows, at = part.picked, part.placed
            # A few files' references (a build carried over) are read where they are mapped.
            mapped = segment.tables.references
            few = len(rows) * _FEW_ROWS <= mapped.num_rows
            table = mapped if few else segment.scanned("references")
            owner[at] = part.owner
            local = table.column("entity").to_numpy()[rows].astype(np.int64)
            first_of_blob = segment.blob_entity_start[blob_of_path[part.owner]].astype(np.int64)
            # The holder's node: its path's first entity node plus its place in the blob.
            first_node = self.entity_bounds[part.owner] + self.first_entity
            holder[at] = np.where(
                local >= 0, first_node + (local - first_of_blob), self.file_node[part.owner]
            )
            relation[at] = _relation_codes(table.column("relation"))[rows]
            taken = pa.array(rows)
            for name, pieces in columns.items():
                pieces.append(table.column(name).take(taken).combine_chunks())
        self.reference_path = owner
        self.holder = holder
        self.relation = relation
        self.target_array = _in_path_order(columns["target"], parts, n)
        self._imported = _in_path_order(columns["name"], parts, n)
        self._alias = _in_path_order(columns["alias"], parts, n)

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


@dataclass(frozen=True, slots=True)
class _Part:
    """One segment's share of the rows gathered: those of its paths' blobs in one of its
    tables (entities or references)."""

    segment: int
    rows: I64
    """The path rows whose blobs are in the segment, ascending."""
    blobs: I64
    """Their blobs' rows in the segment."""
    owner: I64
    """Each table row's path row."""
    picked: I64
    """The table rows, path by path, each blob's in stored order."""
    placed: I64
    """Where each table row goes among all gathered, which are in path order."""


def _parts(
    index: CommitIndex, *, entities: bool, wanted: npt.NDArray[np.bool_] | None = None
) -> tuple[list[_Part], I64]:
    """Each segment's share of the entities' (else references') rows of the paths (the path
    rows `wanted`, when given), and where each path row's start in path order (the last:
    how many in all).

    Each row's place is worked out from the counts, not by sorting them all by path.
    """
    seg_of_path = index.path_segment.astype(np.int64)
    blob_of_path = index.path_blob.astype(np.int64)
    counts = np.zeros(len(seg_of_path), dtype=np.int64)
    found: list[tuple[int, I64, I64, I64, I64]] = []
    for seg_index, segment in enumerate(index.segments):
        mine = seg_of_path == seg_index
        rows = np.flatnonzero(mine if wanted is None else mine & wanted)
        if not len(rows):
            continue
        blobs = blob_of_path[rows]
        if entities:
            starts, sizes = segment.blob_entity_start, segment.blob_entity_count
        else:
            starts, sizes = segment.blob_reference_start, segment.blob_reference_count
        count = sizes[blobs].astype(np.int64)
        counts[rows] = count
        found.append((seg_index, rows, blobs, starts[blobs].astype(np.int64), count))
    bounds = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=bounds[1:])
    parts = []
    for seg_index, rows, blobs, first, count in found:
        within = _ranges(count)
        parts.append(
            _Part(
                segment=seg_index,
                rows=rows,
                blobs=blobs,
                owner=np.repeat(rows, count),
                picked=np.repeat(first, count) + within,
                placed=np.repeat(bounds[rows], count) + within,
            )
        )
    return parts, bounds


def _in_path_order(pieces: list[pa.Array], parts: list[_Part], n: int) -> pa.Array:
    """The parts' values (taken in part order) put in path order."""
    if not pieces:
        return pa.array([], pa.string())
    joined = pa.concat_arrays(pieces)
    if len(parts) == 1:
        return joined  # one segment's rows are in path order already
    back = np.empty(n, dtype=np.int64)
    back[np.concatenate([part.placed for part in parts])] = np.arange(n, dtype=np.int64)
    return joined.take(pa.array(back))


def _ranges(count: I64) -> I64:
    """0..count-1 for each count, concatenated."""
    total = int(count.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(np.cumsum(count) - count, count)
    return np.arange(total, dtype=np.int64) - starts


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


class PathGrammars:
    """Each path row's grammar, as a code: the rows of some grammars are picked at once."""

    def __init__(self, grammars: list[str | None]) -> None:
        self._codes: dict[str | None, int] = {}
        codes = [self._codes.setdefault(grammar, len(self._codes)) for grammar in grammars]
        self._code = np.asarray([*codes, -1], dtype=np.int64)

    def among(self, *wanted: str) -> npt.NDArray[np.bool_]:
        """Whether each path row is in one of the `wanted` grammars, and False past the last."""
        picked = [self._codes[grammar] for grammar in wanted if grammar in self._codes]
        found: npt.NDArray[np.bool_] = np.isin(self._code, np.asarray(picked, dtype=np.int64))
        return found
