"""graph.search, graph.traverse and graph.retrieve over a pinned commit's entity graph.

Every piece of code returned (snippets, retrieved code) carries its file's license and an
SWHID of its lines; a repository without a detectable license is refused unless the caller
accepts `NOASSERTION`, as for every tool that returns code.
"""

from __future__ import annotations

import heapq
import itertools
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from contracts.graph import (
    EntityDetails,
    GraphEntity,
    GraphRetrieveRequest,
    GraphRetrieveResponse,
    GraphSearchRequest,
    GraphSearchResponse,
    GraphTraverseRequest,
    GraphTraverseResponse,
    QueryMetadata,
    Snippet,
    TraverseMetadata,
)
from worker.capabilities.graph.entities import (
    code_of,
    metadata_of,
    relation_name,
    type_name,
    wire_edge,
    wire_node,
)
from worker.capabilities.graph.graphs import FileText, GraphStore, PinnedGraph
from worker.capabilities.graph.names import NameIndex
from worker.capabilities.tooling import LicensedFiles, pin, within_ceiling
from worker.config import Config, ToolLimits
from worker.errors import NotFound
from worker.index.views.graph.model import CommitGraph, EntityType, Relation, Step
from worker.repos.catalog import RepoCatalog

PREVIEW_LINES: Final = 5
BM25_CANDIDATES: Final = 200
"""Chunks of the text ranking read when names found fewer entities than asked for."""
BM25_CEILING: Final = 0.49
"""BM25 matches score below every name that holds all of the query's words."""
_TYPES: Final = {t.label: t for t in EntityType}
_RELATIONS: Final = {r.label: r for r in Relation}


@dataclass(frozen=True, slots=True)
class _Found:
    node: int
    score: float


def best_scored(
    scores: dict[int, float], limit: int, ids: Sequence[str]
) -> list[tuple[int, float]]:
    """The `limit` best (node, score) pairs, best first, ties in id order.

    Only the nodes that may be among them are named: a common word scores thousands of
    nodes, and making every one's id cost more than the rest of the search.
    """
    items = list(scores.items())
    if len(items) > limit:
        cutoff = heapq.nlargest(limit, scores.values())[-1]
        items = [item for item in items if item[1] >= cutoff]
    return sorted(items, key=lambda item: (-item[1], ids[item[0]]))[:limit]


class GraphQueries:
    """Answers graph.search, graph.traverse and graph.retrieve."""

    def __init__(self, config: Config, catalog: RepoCatalog, graphs: GraphStore) -> None:
        self.config = config
        self.catalog = catalog
        self.graphs = graphs
        self._names: weakref.WeakKeyDictionary[CommitGraph, NameIndex] = weakref.WeakKeyDictionary()

    def _open(
        self, repo: str, revision: str | None, *, deadline: float, require_license: bool
    ) -> tuple[PinnedGraph, LicensedFiles]:
        pinned = pin(self.catalog, repo, revision)
        licensed = LicensedFiles(pinned, self.graphs.licenses, required=require_license)
        return self.graphs.open(pinned, deadline=deadline), licensed

    def _name_index(self, graph: CommitGraph) -> NameIndex:
        found = self._names.get(graph)
        if found is None:
            found = NameIndex(graph)
            self._names[graph] = found
        return found

    def search(
        self, request: GraphSearchRequest, *, request_id: str, deadline: float
    ) -> GraphSearchResponse:
        """Entities whose names match the query, then (if too few) those BM25 finds code of."""
        started = time.perf_counter()
        pinned, licensed = self._open(
            request.repo,
            request.revision,
            deadline=deadline,
            require_license=request.require_license,
        )
        graph = pinned.graph
        allowed = (
            None if request.entity_types is None else [_TYPES[t] for t in request.entity_types]
        )
        scores = self._name_index(graph).scores(request.query, allowed)
        used_bm25 = False
        if request.use_bm25 and len(scores) < request.limit:
            used_bm25 = True
            for node, score in self._bm25(pinned, request.query, allowed).items():
                if node not in scores:
                    scores[node] = score
        entities = tuple(
            self._entity(pinned, licensed, _Found(node, score), request.snippet_mode)
            for node, score in best_scored(scores, request.limit, graph.ids)
        )
        return GraphSearchResponse(
            request_id=request_id,
            repo=pinned.pinned.name,
            commit=pinned.pinned.commit,
            ref=pinned.pinned.ref,
            entities=entities,
            total_count=len(scores),
            truncated=len(scores) > request.limit,
            query_metadata=QueryMetadata(
                used_upper_index=True,
                used_bm25=used_bm25,
                execution_time_ms=round((time.perf_counter() - started) * 1000, 3),
            ),
        )

    def _bm25(
        self, pinned: PinnedGraph, query: str, allowed: Sequence[EntityType] | None
    ) -> dict[int, float]:
        """The innermost entity holding each of the best chunks, scored below name matches."""
        graph = pinned.graph
        found: dict[int, float] = {}
        hits = list(itertools.islice(pinned.index.ranked(query), BM25_CANDIDATES))
        if not hits:
            return found
        best = max(hit.score for hit in hits) or 1.0
        for hit in hits:
            file = graph.node(hit.path)
            if file is None:
                continue
            node = _innermost(graph, file, hit.start_line, hit.end_line)
            while allowed is not None and EntityType(int(graph.types[node])) not in allowed:
                parent = graph.parent(node)
                if parent is None:
                    break
                node = parent
            if allowed is not None and EntityType(int(graph.types[node])) not in allowed:
                continue
            score = round(BM25_CEILING * hit.score / best, 6)
            if score > found.get(node, 0.0):
                found[node] = score
        return found

    def _entity(
        self, pinned: PinnedGraph, licensed: LicensedFiles, found: _Found, mode: str
    ) -> GraphEntity:
        graph = pinned.graph
        node = found.node
        lines = pinned.line_range(node)
        snippet: Snippet | None = None
        license_, source, confidence, swhid = "", "", None, None
        if lines is not None:
            text = pinned.text(graph.paths[node], licensed)
            if text is not None:
                license_, source = text.license, text.license_source
                confidence = text.license_confidence
                snippet, last = self._snippet(text, node, lines, mode, graph)
                swhid = pinned.swhid(graph.paths[node], text.blob, (lines[0], last))
        return GraphEntity(
            id=graph.ids[node],
            name=graph.names[node],
            entity_type=type_name(int(graph.types[node])),
            file_path=graph.paths[node],
            line_range=lines,
            score=round(min(max(found.score, 0.0), 1.0), 6),
            snippet=snippet,
            license=license_,
            license_source=source,
            license_confidence=confidence,
            swhid=swhid,
        )

    def _snippet(
        self, text: FileText, node: int, lines: tuple[int, int], mode: str, graph: CommitGraph
    ) -> tuple[Snippet, int]:
        limits = self.config.tools
        first = text.lines[lines[0] - 1] if lines[0] - 1 < len(text.lines) else ""
        if mode == "fold":
            fold = (
                f"{graph.paths[node]} ({len(text.lines)} lines)"
                if graph.types[node] == EntityType.FILE
                else first.strip()[: limits.search_max_line_chars]
            )
            return Snippet(fold=fold), lines[0]
        span = PREVIEW_LINES if mode == "preview" else limits.read_max_lines
        code = code_of(text, lines, max_chars=limits.read_max_chars, max_lines=span)
        truncated = code.truncated if mode == "full" else False
        if mode == "preview":
            return Snippet(preview=code.text), code.last_line
        return Snippet(full=code.text, truncated=truncated), code.last_line

    def traverse(
        self, request: GraphTraverseRequest, *, request_id: str, deadline: float
    ) -> GraphTraverseResponse:
        """The subgraph within `depth` hops of the start entities."""
        started = time.perf_counter()
        cap = check_traverse(request, self.config.tools)
        pinned, _ = self._open(
            request.repo, request.revision, deadline=deadline, require_license=False
        )
        graph = pinned.graph
        starts = _nodes(graph, request.start_entities, "start_entities")
        steps, edge_rows, truncated = graph.traverse(
            starts,
            depth=request.depth,
            relations=None
            if request.relations is None
            else [_RELATIONS[r] for r in request.relations],
            types=None
            if request.entity_types is None
            else [_TYPES[t] for t in request.entity_types],
            direction=request.direction,
            max_nodes=cap,
        )
        nodes = tuple(wire_node(pinned, step.node, step.depth) for step in steps)
        edges = tuple(wire_edge(pinned, row) for row in edge_rows)
        tree = _tree(pinned, steps) if request.format == "tree" else None
        return GraphTraverseResponse(
            request_id=request_id,
            repo=pinned.pinned.name,
            commit=pinned.pinned.commit,
            ref=pinned.pinned.ref,
            start_entities=tuple(graph.ids[n] for n in starts),
            nodes=nodes,
            edges=edges,
            tree=tree,
            truncated=truncated,
            metadata=TraverseMetadata(
                total_nodes=len(nodes),
                total_edges=len(edges),
                max_depth_reached=max((s.depth for s in steps), default=0),
                execution_time_ms=round((time.perf_counter() - started) * 1000, 3),
            ),
        )

    def retrieve(
        self, request: GraphRetrieveRequest, *, request_id: str, deadline: float
    ) -> GraphRetrieveResponse:
        """Each entity's code (bounded), context lines and metadata, in request order."""
        pinned, licensed = self._open(
            request.repo,
            request.revision,
            deadline=deadline,
            require_license=request.require_license,
        )
        graph = pinned.graph
        limits = self.config.tools
        details = []
        for node in _nodes(graph, request.entity_ids, "entity_ids"):
            lines = pinned.line_range(node)
            base = {
                "id": graph.ids[node],
                "name": graph.names[node],
                "entity_type": type_name(int(graph.types[node])),
                "file_path": graph.paths[node],
                "line_range": lines,
            }
            text = None if lines is None else pinned.text(graph.paths[node], licensed)
            if lines is None or text is None:
                details.append(EntityDetails(**base))  # type: ignore[arg-type]
                continue
            code = code_of(
                text, lines, max_chars=limits.read_max_chars, max_lines=limits.read_max_lines
            )
            context = request.include_context
            before = text.lines[max(lines[0] - 1 - context, 0) : lines[0] - 1] if context else []
            after = text.lines[lines[1] : lines[1] + context] if context else []
            details.append(
                EntityDetails(
                    **base,  # type: ignore[arg-type]
                    code=code.text,
                    code_truncated=code.truncated,
                    context_before="\n".join(before) if context else None,
                    context_after="\n".join(after) if context else None,
                    metadata=metadata_of(pinned, node, text) if request.include_metadata else None,
                    license=text.license,
                    license_source=text.license_source,
                    license_confidence=text.license_confidence,
                    swhid=pinned.swhid(graph.paths[node], text.blob, (lines[0], code.last_line)),
                )
            )
        return GraphRetrieveResponse(
            request_id=request_id,
            repo=pinned.pinned.name,
            commit=pinned.pinned.commit,
            ref=pinned.pinned.ref,
            entities=tuple(details),
        )


def check_traverse(request: GraphTraverseRequest, limits: ToolLimits) -> int:
    """The nodes to return at most, or LimitExceeded."""
    return within_ceiling(
        "max_nodes",
        request.max_nodes,
        default=limits.graph_default_nodes,
        ceiling=limits.graph_max_nodes,
    )


def _nodes(graph: CommitGraph, ids: Sequence[str], field: str) -> list[int]:
    """The node of each id (request order, repeats once), or NOT_FOUND naming the unknown."""
    found: list[int] = []
    missing: list[str] = []
    for entity_id in dict.fromkeys(ids):
        node = graph.node(entity_id)
        if node is None:
            missing.append(entity_id)
        else:
            found.append(node)
    if missing:
        raise NotFound(
            f"{field}: no entity {missing[0]!r} in this revision"
            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
            field=field,
            entity_ids=missing[:20],
        )
    return found


def _innermost(graph: CommitGraph, file: int, start: int, end: int) -> int:
    """The deepest entity of a file that the lines start..end fall in most (else the file).

    A chunk may begin a little above its definition (its comments and decorators).
    """
    node = file
    while True:
        inner, most = None, 0
        for row in graph.outgoing(node):
            if graph.edges.relation[row] != Relation.CONTAIN:
                continue
            child = int(graph.edges.target[row])
            shared = min(end, int(graph.end_line[child])) - max(start, int(graph.start_line[child]))
            if shared + 1 > most:
                inner, most = child, shared + 1
        if inner is None or most * 2 < end - start + 1:
            return node
        node = inner


def _tree(pinned: PinnedGraph, steps: list[Step]) -> str:
    """The seed's tree text: each node under the node it was first reached from."""
    graph = pinned.graph
    edges = graph.edges
    children: dict[int, list[Step]] = {}
    roots: list[Step] = []
    for step in steps:
        if step.via < 0:
            roots.append(step)
            continue
        source, target = int(edges.source[step.via]), int(edges.target[step.via])
        parent = source if target == step.node else target
        children.setdefault(parent, []).append(step)

    def label(node: int) -> str:
        lines = pinned.line_range(node)
        where = graph.paths[node] + (f":{lines[0]}" if lines else "")
        kind = type_name(int(graph.types[node]))
        return f"{graph.names[node]} ({kind}) [{graph.ids[node]}] - {where}"

    out: list[str] = []

    def walk(node: int, prefix: str) -> None:
        below = children.get(node, [])
        for i, step in enumerate(below):
            last = i == len(below) - 1
            relation = relation_name(int(edges.relation[step.via]))
            arrow = "→" if int(edges.source[step.via]) == node else "←"
            out.append(f"{prefix}{'└─' if last else '├─'}[{relation}]{arrow} {label(step.node)}")
            walk(step.node, prefix + ("   " if last else "│  "))

    for root in roots:
        out.append(label(root.node))
        walk(root.node, "")
    return "\n".join(out)
