"""A commit's entity graph: directories, files, classes and functions, and the edges between.

Nodes are numbered; edges are kept by source and by target (compressed rows), so a hop in
either direction is a slice. Ids are stable across unrelated edits: a directory or file is
its path, an entity `path:Qualified.name` (a second definition of the same name in one
file gets `#2`, and so on, by order in the file).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

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


CLASS_KINDS: Final = frozenset(
    {
        "class_definition",
        "class_declaration",
        "abstract_class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "annotation_type_declaration",
        "struct_item",
        "enum_item",
        "union_item",
        "trait_item",
        "impl_item",
        "mod_item",
        "module",
        "struct_specifier",
        "union_specifier",
        "enum_specifier",
        "class_specifier",
        "namespace_definition",
        "type_declaration",
        "type_alias_declaration",
    }
)
"""Parser node kinds that are classes in the graph (types, and the scopes that hold methods)."""


def entity_type(kind: str) -> EntityType:
    """The graph type of a definition of this parser kind."""
    return EntityType.CLASS if kind in CLASS_KINDS else EntityType.FUNCTION


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
        ids: list[str],
        names: list[str],
        types: U8,
        paths: list[str],
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
        self._row = {node_id: row for row, node_id in enumerate(ids)}
        n = len(ids)
        self._out = _offsets(edges.source, n)
        by_target = np.lexsort((edges.source, edges.relation, edges.target))
        self._in_order = by_target.astype(np.int64)
        self._in = _offsets(edges.target[by_target], n)

    @property
    def n_nodes(self) -> int:
        """Nodes of every type."""
        return len(self.ids)

    def node(self, node_id: str) -> int | None:
        """The row of a node id, or None."""
        return self._row.get(node_id)

    def outgoing(self, node: int) -> range:
        """The edge rows leaving a node."""
        return range(int(self._out[node]), int(self._out[node + 1]))

    def incoming(self, node: int) -> list[int]:
        """The edge rows arriving at a node."""
        rows: list[int] = self._in_order[self._in[node] : self._in[node + 1]].tolist()
        return rows

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
