"""A commit's entity graph: directories, files, classes and functions, and the edges between.

Nodes are numbered; edges are kept by source and by target (compressed rows), so a hop in
either direction is a slice. Ids are stable across unrelated edits: a directory or file is
its path, an entity `path:Qualified.name` (a second definition of the same name in one
file gets `#2`, and so on, by order in the file).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, overload

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from worker.index.analysis.definitions import CONTAINER_KINDS

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]


class EntityType(enum.IntEnum):
    """The seed's entity types."""

    DIRECTORY = 0
    FILE = 1
    CLASS = 2
    FUNCTION = 3

    @property
    def label(self) -> str:
        """The name on the wire (`function`)."""
        return self.name.lower()


class Relation(enum.IntEnum):
    """The seed's relations; an edge goes from the container, importer, caller, subclass."""

    CONTAIN = 0
    IMPORT = 1
    INVOKE = 2
    INHERIT = 3

    @property
    def label(self) -> str:
        """The name on the wire (`invoke`)."""
        return self.name.lower()


CLASS_KINDS: Final = CONTAINER_KINDS | frozenset(
    {
        "annotation_type_declaration",
        "struct_item",
        "enum_item",
        "union_item",
        "union_specifier",
        "enum_specifier",
        "type_declaration",
        "type_alias_declaration",
    }
)
"""Parser node kinds that are classes in the graph: the containers (classes, impls, modules,
namespaces), and the types whose members are no definitions of their own."""


def entity_type(kind: str) -> EntityType:
    """The graph type of a definition of this parser kind."""
    return EntityType.CLASS if kind in CLASS_KINDS else EntityType.FUNCTION


class Names(Sequence[str]):
    """Strings kept as an Arrow array, made Python strings only when asked for.

    A slice makes its own strings; an item, or a walk over them all, makes every one, once.
    A build that carries a graph over and stores it asks for a few files' names: a list of
    every name of a large graph is a million strings to make.
    """

    def __init__(self, array: pa.Array) -> None:
        self.array = array
        """Every name, in order, as one Arrow string array."""
        self._listed: list[str] | None = None

    def __len__(self) -> int:
        return len(self.array)

    @overload
    def __getitem__(self, at: int) -> str: ...

    @overload
    def __getitem__(self, at: slice) -> list[str]: ...

    def __getitem__(self, at: int | slice) -> str | list[str]:
        if self._listed is None and isinstance(at, slice):
            start, stop, step = at.indices(len(self.array))
            if step == 1:
                sliced: list[str] = self.array.slice(start, max(stop - start, 0)).to_pylist()
                return sliced
        return self.listed()[at]

    def __iter__(self) -> Iterator[str]:
        return iter(self.listed())

    def listed(self) -> list[str]:
        """Every name as a Python string (made on first use; two readers make the same)."""
        if self._listed is None:
            self._listed = self.array.to_pylist()
        return self._listed


def names_array(names: Sequence[str]) -> pa.Array:
    """Names as one Arrow string array (no copy when they are one already)."""
    return names.array if isinstance(names, Names) else pa.array(names, pa.string())


class NodePaths(Sequence[str]):
    """Each node's file path (a directory's own path), looked up when asked for: an entity's
    is its file's, so no list of a path per node is made."""

    def __init__(self, plain: list[str], n_dirs: int, entity_path: I64) -> None:
        self._plain = plain
        self._n_dirs = n_dirs
        self._entity_path = entity_path

    def __len__(self) -> int:
        return len(self._plain) + len(self._entity_path)

    @overload
    def __getitem__(self, node: int) -> str: ...

    @overload
    def __getitem__(self, node: slice) -> list[str]: ...

    def __getitem__(self, node: int | slice) -> str | list[str]:
        if isinstance(node, slice):
            return [self[n] for n in range(*node.indices(len(self)))]
        if node < 0:
            node += len(self)
        plain = self._plain
        if node < len(plain):
            return plain[node]
        return plain[self._n_dirs + int(self._entity_path[node - len(plain)])]


class NodeIds(Sequence[str]):
    """Every node's id, made when asked for: a path, or `path:Qualified.name` (`#k` for the
    k-th definition of one name in a file, from the second on)."""

    def __init__(
        self, plain: list[str], n_dirs: int, entity_path: I64, names: Sequence[str]
    ) -> None:
        self.plain = plain
        """Directories' and files' paths, directories first."""
        self.n_dirs = n_dirs
        self.entity_path = entity_path
        """Each entity's file, as a row of the files."""
        self.paths = NodePaths(plain, n_dirs, entity_path)
        """Each node's file path (`CommitGraph.paths`)."""
        self._names = names
        """Every node's name (`CommitGraph.names`): an entity's is its qualified name."""
        self._plain_rows: dict[str, int] | None = None
        self._bounds: I64 | None = None
        self._rank: list[int] | None = None
        self._by_file: dict[int, dict[str, int]] = {}

    def __len__(self) -> int:
        return len(self._names)

    def __getitem__(self, node: int) -> str:  # type: ignore[override]
        if node < len(self.plain):
            return self.plain[node]
        rank = self._ranks()[node - len(self.plain)]
        return f"{self.paths[node]}:{self._names[node]}" + (f"#{rank + 1}" if rank else "")

    def __iter__(self) -> Iterator[str]:
        return (self[node] for node in range(len(self)))

    def _ranks(self) -> list[int]:
        """Each entity's rank among the definitions of its name in its file."""
        if self._rank is None:
            encoded = names_array(self._names).slice(len(self.plain)).dictionary_encode()
            code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            key = self.entity_path.astype(np.int64) * max(len(encoded.dictionary), 1) + code
            order = np.argsort(key, kind="stable")
            ordered = key[order]
            group_start = np.zeros(len(ordered), dtype=np.int64)
            if len(ordered):
                new = np.ones(len(ordered), dtype=bool)
                new[1:] = ordered[1:] != ordered[:-1]
                starts = np.flatnonzero(new)
                group_start = np.repeat(starts, np.diff(np.append(starts, len(ordered))))
            rank = np.empty(len(ordered), dtype=np.int64)
            rank[order] = np.arange(len(ordered)) - group_start
            self._rank = rank.tolist()
        return self._rank

    def _plain_row(self) -> dict[str, int]:
        """Each directory's and file's row by its path (made on first use: a build that only
        writes the graph never asks)."""
        if self._plain_rows is None:
            self._plain_rows = {path: row for row, path in enumerate(self.plain)}
        return self._plain_rows

    def row(self, node_id: str) -> int | None:
        """The node with this id, or None."""
        plain_row = self._plain_row()
        found = plain_row.get(node_id)
        if found is not None:
            return found
        at = node_id.find(":")
        while at > 0:
            file_row = plain_row.get(node_id[:at])
            if file_row is not None and file_row >= self.n_dirs:
                entity = self._in_file(file_row - self.n_dirs).get(node_id[at + 1 :])
                if entity is not None:
                    return entity
            at = node_id.find(":", at + 1)
        return None

    def _in_file(self, path_row: int) -> dict[str, int]:
        table = self._by_file.get(path_row)
        if table is None:
            if self._bounds is None:
                n_files = len(self.plain) - self.n_dirs
                self._bounds = np.searchsorted(self.entity_path, np.arange(n_files + 1))
            lo, hi = int(self._bounds[path_row]), int(self._bounds[path_row + 1])
            ranks = self._ranks()
            base = len(self.plain)
            table = {
                name + (f"#{ranks[e] + 1}" if ranks[e] else ""): base + e
                for e, name in zip(range(lo, hi), self._names[base + lo : base + hi], strict=True)
            }
            self._by_file[path_row] = table
        return table


@dataclass(frozen=True, slots=True)
class Step:
    """A node reached by a traversal: how far, and the edge it was first reached by."""

    node: int
    depth: int
    via: int
    """The edge row (in `CommitGraph.edges`) it was first reached by, -1 for a start."""


@dataclass(frozen=True, slots=True)
class Edges:
    """Edges as parallel arrays, sorted by (source, relation, target)."""

    source: I32
    target: I32
    relation: U8


class CommitGraph:
    """The graph of one commit; immutable once built, so readers need no lock."""

    def __init__(
        self,
        *,
        ids: Sequence[str],
        names: Sequence[str],
        types: U8,
        paths: Sequence[str],
        start_line: I32,
        end_line: I32,
        edges: Edges,
    ) -> None:
        self.ids = ids
        self.names = names
        """The qualified name of an entity (`Flask.route`), the base name of a path."""
        self.types = types
        self.paths = paths
        """The file path of each node (the directory's own path for a directory)."""
        self.start_line = start_line
        self.end_line = end_line
        """1-based, inclusive; 0 for directories (files span all their lines)."""
        self.edges = edges
        self._row = (
            ids.row if isinstance(ids, NodeIds) else {i: row for row, i in enumerate(ids)}.get
        )
        self._out = _offsets(edges.source, len(ids))
        self._incoming: tuple[I64, I64] | None = None

    @property
    def n_nodes(self) -> int:
        """Nodes of every type."""
        return len(self.ids)

    def node(self, node_id: str) -> int | None:
        """The row of a node id, or None."""
        return self._row(node_id)

    def outgoing(self, node: int) -> range:
        """The edge rows leaving a node."""
        return range(int(self._out[node]), int(self._out[node + 1]))

    def incoming(self, node: int) -> list[int]:
        """The edge rows arriving at a node."""
        order, offsets = self._incoming_index()
        rows: list[int] = order[offsets[node] : offsets[node + 1]].tolist()
        return rows

    def _incoming_index(self) -> tuple[I64, I64]:
        """The edge rows by target, and each node's offset into them: made on first use, as
        a build that only writes or carries the graph never asks. Two readers making it at
        once make the same arrays."""
        if self._incoming is None:
            edges = self.edges
            order = np.lexsort((edges.source, edges.relation, edges.target)).astype(np.int64)
            self._incoming = order, _offsets(edges.target[order], len(self.ids))
        return self._incoming

    def parent(self, node: int) -> int | None:
        """The node that contains this one (None at the top)."""
        for row in self.incoming(node):
            if self.edges.relation[row] == Relation.CONTAIN:
                return int(self.edges.source[row])
        return None

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """Nodes by entity type and edges by relation, every type and relation named."""
        by_type = np.bincount(self.types, minlength=len(EntityType))
        by_relation = np.bincount(self.edges.relation, minlength=len(Relation))
        return (
            {t.label: int(by_type[t]) for t in EntityType},
            {r.label: int(by_relation[r]) for r in Relation},
        )

    def traverse(
        self,
        starts: Sequence[int],
        *,
        depth: int,
        relations: Iterable[Relation] | None = None,
        types: Iterable[EntityType] | None = None,
        direction: str = "forward",
        max_nodes: int,
    ) -> tuple[list[Step], list[int], bool]:
        """Breadth-first from `starts`, up to `depth` hops along the given relations.

        Returns the nodes reached (starts first, then by depth, each level in edge order),
        the edges walked between nodes kept, and whether `max_nodes` cut the walk short.
        Nodes of other `types` are neither kept nor walked through (starts always are).
        """
        wanted = None if relations is None else {int(r) for r in relations}
        kept_types = None if types is None else {int(t) for t in types}
        edges = self.edges
        seen: dict[int, Step] = {}
        walked: list[int] = []
        queue: deque[int] = deque()
        for start in starts:
            if start not in seen:
                seen[start] = Step(start, 0, -1)
                queue.append(start)
        truncated = False
        while queue:
            node = queue.popleft()
            level = seen[node].depth
            if level >= depth:
                continue
            rows: list[tuple[int, int]] = []
            if direction in ("forward", "bidirectional"):
                rows.extend((row, int(edges.target[row])) for row in self.outgoing(node))
            if direction in ("backward", "bidirectional"):
                rows.extend((row, int(edges.source[row])) for row in self.incoming(node))
            for row, other in rows:
                if wanted is not None and int(edges.relation[row]) not in wanted:
                    continue
                if kept_types is not None and int(self.types[other]) not in kept_types:
                    continue
                if other not in seen:
                    if len(seen) >= max_nodes:
                        truncated = True
                        continue
                    seen[other] = Step(other, level + 1, row)
                    queue.append(other)
                walked.append(row)
        steps = sorted(seen.values(), key=lambda s: (s.depth, s.via if s.via >= 0 else -1))
        return steps, sorted(set(walked)), truncated


def _offsets(sorted_keys: npt.NDArray[np.int32], n: int) -> I64:
    """CSR offsets of keys sorted ascending: rows of key k are offsets[k]:offsets[k+1]."""
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(sorted_keys, minlength=n), out=offsets[1:])
    return offsets
