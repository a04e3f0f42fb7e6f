"""Facts the documents read off a commit's entity graph: files, their entities, references."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from worker.capabilities.graph.entities import docstring_of, signature_of
from worker.docs.source import DocSource
from worker.docs.writing import one_line
from worker.index.views.graph.model import CommitGraph, EntityType, NodeIds, Relation

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class EntityLine:
    """An entity as a document lists it."""

    node: int
    name: str
    kind: str
    path: str
    start: int
    end: int
    signature: str
    summary: str | None


class GraphFacts:
    """Per-file and per-entity counts over one commit's graph."""

    def __init__(self, source: DocSource) -> None:
        self.source = source
        self.graph: CommitGraph = source.graph
        ids = self.graph.ids
        assert isinstance(ids, NodeIds)
        self.n_dirs = ids.n_dirs
        self.n_plain = len(ids.plain)

    @property
    def files(self) -> range:
        """The file nodes, in path order."""
        return range(self.n_dirs, self.n_plain)

    @cached_property
    def parent(self) -> I64:
        """The containing node of each node, -1 at the top."""
        edges = self.graph.edges
        parent = np.full(self.graph.n_nodes, -1, dtype=np.int64)
        contain = edges.relation == Relation.CONTAIN
        parent[edges.target[contain]] = edges.source[contain]
        return parent

    @cached_property
    def referenced(self) -> I64:
        """How many import, invoke and inherit edges arrive at each node."""
        edges = self.graph.edges
        refs = edges.relation != Relation.CONTAIN
        return np.bincount(edges.target[refs], minlength=self.graph.n_nodes).astype(np.int64)

    @cached_property
    def file_of(self) -> I64:
        """The file node of every node at or below a file (-1 for directories)."""
        graph = self.graph
        ids = graph.ids
        assert isinstance(ids, NodeIds)
        owner = np.full(graph.n_nodes, -1, dtype=np.int64)
        owner[self.n_dirs : self.n_plain] = np.arange(self.n_dirs, self.n_plain)
        owner[self.n_plain :] = ids.entity_path + self.n_dirs
        return owner

    @cached_property
    def file_weight(self) -> I64:
        """How often the rest of the code refers to each file or to what it defines."""
        weight = np.zeros(self.graph.n_nodes, dtype=np.int64)
        owner = self.file_of
        inside = owner >= 0
        np.add.at(weight, owner[inside], self.referenced[inside])
        return weight

    def top_entities(self, file_node: int) -> list[int]:
        """The entities defined at the top of a file, most referred to first, then in order."""
        graph = self.graph
        children = [
            int(graph.edges.target[row])
            for row in graph.outgoing(file_node)
            if graph.edges.relation[row] == Relation.CONTAIN
        ]
        return sorted(children, key=lambda n: (-int(self.referenced[n]), int(graph.start_line[n])))

    def members(self, node: int) -> list[int]:
        """The entities nested in one, in order."""
        graph = self.graph
        return [
            int(graph.edges.target[row])
            for row in graph.outgoing(node)
            if graph.edges.relation[row] == Relation.CONTAIN
        ]

    def entity_line(self, node: int, lines: tuple[str, ...] | None) -> EntityLine:
        """An entity with its signature and the first line of its docstring, read from `lines`
        (its file's text)."""
        graph = self.graph
        start, end = int(graph.start_line[node]), max(int(graph.end_line[node]), 1)
        path = graph.paths[node]
        signature, summary = graph.names[node], None
        if lines is not None and start >= 1:
            signature = one_line(signature_of(lines, start, end)) or signature
            doc = docstring_of(path, lines, start, end)
            if doc:
                summary = one_line(doc.strip().split("\n", 1)[0], 120)
        kind = "class" if graph.types[node] == EntityType.CLASS else "function"
        return EntityLine(node, graph.names[node], kind, path, start, end, signature, summary)
