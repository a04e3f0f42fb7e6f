"""graph.diff: the entities and edges that differ between two revisions of a repository.

An entity is added or removed when its id is in one revision only, and changed when its
code differs (its file's blob differs and so do its own lines). Edges are compared by
(source id, target id, relation).
"""

from __future__ import annotations

from contracts.graph import EdgeChange, EntityChange, GraphDiffRequest, GraphDiffResponse
from worker.capabilities.graph.entities import relation_name, type_name
from worker.capabilities.graph.graphs import GraphStore, PinnedGraph
from worker.capabilities.tooling import LicensedFiles
from worker.index.views.graph.model import EntityType
from worker.repos.catalog import RepoCatalog

_TYPES = {t.label: int(t) for t in EntityType}


class GraphDiff:
    """Answers graph.diff."""

    def __init__(self, catalog: RepoCatalog, graphs: GraphStore) -> None:
        self.catalog = catalog
        self.graphs = graphs

    def diff(
        self, request: GraphDiffRequest, *, request_id: str, deadline: float
    ) -> GraphDiffResponse:
        """Entity and edge changes from `base` to `head`, each list in id order, capped."""
        entry = self.catalog.lookup(request.repo, field="repo")
        base_pin = self.catalog.resolve(entry.name, request.base)
        head_pin = self.catalog.resolve(entry.name, request.head)
        base = self.graphs.open(base_pin, deadline=deadline)
        head = self.graphs.open(head_pin, deadline=deadline)
        wanted = None if request.entity_types is None else {_TYPES[t] for t in request.entity_types}
        entities = _entity_changes(base, head, wanted, self.graphs)
        before, after = _edges(base), _edges(head)
        edge_changes = sorted(
            [(*edge, "added") for edge in after - before]
            + [(*edge, "removed") for edge in before - after]
        )
        cap = request.max_changes
        return GraphDiffResponse(
            request_id=request_id,
            repo=head_pin.name,
            base_commit=base_pin.commit,
            head_commit=head_pin.commit,
            entities=tuple(entities[:cap]),
            edges=tuple(
                EdgeChange(source=s, target=t, relation=relation_name(r), change=c)
                for s, t, r, c in edge_changes[:cap]
            ),
            entity_changes=len(entities),
            edge_changes=len(edge_changes),
            truncated=len(entities) > cap or len(edge_changes) > cap,
        )


def _edges(pinned: PinnedGraph) -> set[tuple[str, str, int]]:
    graph = pinned.graph
    ids = graph.ids
    edges = graph.edges
    return {
        (ids[s], ids[t], r)
        for s, t, r in zip(
            edges.source.tolist(), edges.target.tolist(), edges.relation.tolist(), strict=True
        )
    }


def _entity_changes(
    base: PinnedGraph, head: PinnedGraph, wanted: set[int] | None, graphs: GraphStore
) -> list[EntityChange]:
    changes: list[EntityChange] = []
    old, new = base.graph, head.graph
    unlicensed_base = LicensedFiles(base.pinned, graphs.licenses, required=False)
    unlicensed_head = LicensedFiles(head.pinned, graphs.licenses, required=False)
    for node_id in sorted(set(old.ids) | set(new.ids)):
        before, after = old.node(node_id), new.node(node_id)
        pinned, node = (head, after) if after is not None else (base, before)
        assert node is not None
        graph = pinned.graph
        if wanted is not None and int(graph.types[node]) not in wanted:
            continue
        if before is None:
            change = "added"
        elif after is None:
            change = "removed"
        elif _same_code(
            base, before, head, after, base_files=unlicensed_base, head_files=unlicensed_head
        ):
            continue
        else:
            change = "changed"
        changes.append(
            EntityChange(
                id=node_id,
                name=graph.names[node],
                entity_type=type_name(int(graph.types[node])),
                file_path=graph.paths[node],
                change=change,
                line_range=pinned.line_range(node),
            )
        )
    return changes


def _same_code(
    base: PinnedGraph,
    before: int,
    head: PinnedGraph,
    after: int,
    *,
    base_files: LicensedFiles,
    head_files: LicensedFiles,
) -> bool:
    """Whether an entity's code is the same in both revisions (a directory: its path is)."""
    if base.graph.types[before] == EntityType.DIRECTORY:
        return True
    path_before, path_after = base.graph.paths[before], head.graph.paths[after]
    if base.blob_of(path_before) == head.blob_of(path_after):
        return True
    if base.graph.types[before] == EntityType.FILE:
        return False
    old_text = base.text(path_before, base_files)
    new_text = head.text(path_after, head_files)
    if old_text is None or new_text is None:
        return False
    old_lines = old_text.lines[
        int(base.graph.start_line[before]) - 1 : int(base.graph.end_line[before])
    ]
    new_lines = new_text.lines[
        int(head.graph.start_line[after]) - 1 : int(head.graph.end_line[after])
    ]
    return old_lines == new_lines
