"""Build a commit's entity graph from its index: the paths, and each blob's analysis.

Entities and references come from the segments (one analysis per blob, see
`worker.index.analysis.references`); what is per commit is which paths hold which blobs,
and so what each reference resolves to (see `scope`). Imports are resolved first (they
bind names), then bases (methods are inherited), then calls.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa

from worker.index.analysis.grammars import grammar_of
from worker.index.store.segment import Segment
from worker.index.views.graph.model import CommitGraph, Edges, EntityType, Relation, entity_type
from worker.index.views.graph.scope import Scopes
from worker.index.views.text import CommitIndex

_SEPARATORS: Final = re.compile(r"\.|::|->")


@dataclass(frozen=True, slots=True)
class GraphBuild:
    """A built graph and what building it took."""

    graph: CommitGraph
    seconds: float
    files: int


class _Columns:
    """A segment's entities and references as Python lists, read once per segment."""

    def __init__(self, segment: Segment) -> None:
        entities, references = segment.tables.entities, segment.tables.references
        self.entity_start = segment.blob_entity_start.tolist()
        self.entity_count = segment.blob_entity_count.tolist()
        self.reference_start = segment.blob_reference_start.tolist()
        self.reference_count = segment.blob_reference_count.tolist()
        self.n_lines = segment.tables.blobs.column("n_lines").to_pylist()
        self.parent = entities.column("parent").to_pylist()
        self.start_line = entities.column("start_line").to_pylist()
        self.end_line = entities.column("end_line").to_pylist()
        self.name = entities.column("name").to_pylist()
        self.kind = _decoded(entities.column("kind"))
        self.holder = references.column("entity").to_pylist()
        self.relation = _decoded(references.column("relation"))
        self.target = references.column("target").to_pylist()
        self.imported = references.column("name").to_pylist()
        self.alias = references.column("alias").to_pylist()


def _decoded(column: pa.ChunkedArray) -> list[Any]:
    array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    return array.to_pylist()  # type: ignore[no-any-return]


class _Nodes:
    """Nodes as they are added, and the edges found so far (contain edges as nodes come)."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.names: list[str] = []
        self.types: list[int] = []
        self.paths: list[str] = []
        self.start: list[int] = []
        self.end: list[int] = []
        self.parent: list[int] = []
        self.edges: set[tuple[int, int, int]] = set()

    def add(
        self,
        node_id: str,
        name: str,
        *,
        kind: EntityType,
        path: str,
        lines: tuple[int, int],
        parent: int,
    ) -> int:
        node = len(self.ids)
        self.ids.append(node_id)
        self.names.append(name)
        self.types.append(int(kind))
        self.paths.append(path)
        self.start.append(lines[0])
        self.end.append(lines[1])
        self.parent.append(parent)
        if parent >= 0:
            self.edges.add((parent, node, Relation.CONTAIN))
        return node

    def graph(self) -> CommitGraph:
        """The finished graph, edges in (source, target, relation) order."""
        table = np.asarray(sorted(self.edges), dtype=np.int32).reshape(-1, 3)
        return CommitGraph(
            ids=self.ids,
            names=self.names,
            types=np.asarray(self.types, dtype=np.uint8),
            paths=self.paths,
            start_line=np.asarray(self.start, dtype=np.int32),
            end_line=np.asarray(self.end, dtype=np.int32),
            edges=Edges(
                source=np.ascontiguousarray(table[:, 0]),
                target=np.ascontiguousarray(table[:, 1]),
                relation=table[:, 2].astype(np.uint8),
            ),
        )


_Held = tuple[int, int, str, str, str | None, str | None]
"""A reference: its file, its holder (an entity or the file), relation, target, name, alias."""


def build_graph(index: CommitIndex) -> GraphBuild:
    """The entity graph of the commit an index is of."""
    started = time.perf_counter()
    paths: list[str] = index.path_column.to_pylist()
    columns: dict[int, _Columns] = {}
    for seg in sorted(set(index.path_segment.tolist())):
        columns[seg] = _Columns(index.segments[seg])
    nodes = _Nodes()
    dir_nodes = _directories(nodes, paths)
    file_nodes: dict[str, int] = {}
    for row, path in enumerate(paths):
        cols = columns[int(index.path_segment[row])]
        directory, _, name = path.rpartition("/")
        file_nodes[path] = nodes.add(
            path,
            name,
            kind=EntityType.FILE,
            path=path,
            lines=(1, cols.n_lines[int(index.path_blob[row])]),
            parent=dir_nodes.get(directory, -1),
        )
    scopes = Scopes(
        types=nodes.types,
        file_nodes=file_nodes,
        dir_nodes=dir_nodes,
        grammars={path: grammar_of(path) for path in paths},
    )
    held: list[_Held] = []
    for row, path in enumerate(paths):
        cols = columns[int(index.path_segment[row])]
        _add_entities(
            nodes,
            scopes,
            cols,
            held,
            blob=int(index.path_blob[row]),
            path=path,
            file=file_nodes[path],
        )
    _resolve(nodes, scopes, held)
    return GraphBuild(nodes.graph(), time.perf_counter() - started, len(paths))


def _directories(nodes: _Nodes, paths: list[str]) -> dict[str, int]:
    """A node for every directory holding a path, parents first."""
    found = {p.rsplit("/", i)[0] for p in paths for i in range(1, p.count("/") + 1)}
    dir_nodes: dict[str, int] = {}
    for directory in sorted(found):
        parent, _, name = directory.rpartition("/")
        dir_nodes[directory] = nodes.add(
            directory,
            name,
            kind=EntityType.DIRECTORY,
            path=directory,
            lines=(0, 0),
            parent=dir_nodes.get(parent, -1),
        )
    return dir_nodes


def _add_entities(
    nodes: _Nodes,
    scopes: Scopes,
    cols: _Columns,
    held: list[_Held],
    *,
    blob: int,
    path: str,
    file: int,
) -> None:
    """A file's definitions as nodes, and its references as held by them."""
    first = cols.entity_start[blob]
    node_of: dict[int, int] = {}
    used: dict[str, int] = {}
    for e in range(first, first + cols.entity_count[blob]):
        qualified = cols.name[e]
        seen = used.get(qualified, 0) + 1
        used[qualified] = seen
        parent = cols.parent[e]
        node = nodes.add(
            f"{path}:{qualified}" + ("" if seen == 1 else f"#{seen}"),
            qualified,
            kind=entity_type(cols.kind[e]),
            path=path,
            lines=(cols.start_line[e], cols.end_line[e]),
            parent=node_of.get(parent, file),
        )
        node_of[e] = node
        scopes.add_entity(file, node, qualified, top_level=parent < 0)
    first = cols.reference_start[blob]
    for r in range(first, first + cols.reference_count[blob]):
        held.append(
            (
                file,
                node_of.get(cols.holder[r], file),
                cols.relation[r],
                cols.target[r],
                cols.imported[r],
                cols.alias[r],
            )
        )


def _resolve(nodes: _Nodes, scopes: Scopes, held: list[_Held]) -> None:
    """Imports first (they bind names), then bases (methods are inherited), then calls."""
    edges = nodes.edges
    for file, _, relation, target, name, alias in held:
        if relation == "import":
            found, bound = _IMPORTS.get(scopes.files[file].grammar or "", _no_import)(
                scopes, file, target, name, alias
            )
            if found is None or found < 0:
                continue
            if bound and bound != "*":
                scopes.files[file].bindings.setdefault(bound, found)
            if found != file:
                edges.add((file, found, Relation.IMPORT))
    parents = nodes.parent
    for file, holder, relation, target, _, _ in held:
        if relation == "inherit":
            base = scopes.resolve_chain(file, file, _SEPARATORS.split(target), parents)
            if base is not None and nodes.types[base] == EntityType.CLASS and base != holder:
                edges.add((holder, base, Relation.INHERIT))
                key = scopes.class_key.get(holder)
                if key is not None:
                    scopes.bases[key].append(base)
    callable_types = (EntityType.FUNCTION, EntityType.CLASS)
    for file, holder, relation, target, _, _ in held:
        if relation != "invoke":
            continue
        parts = _SEPARATORS.split(target)
        if "->" in target and parts[0] != "this":
            continue
        callee = scopes.resolve_chain(file, holder, parts, parents)
        if callee is not None and nodes.types[callee] in callable_types:
            edges.add((holder, callee, Relation.INVOKE))


_Resolved = tuple[int | None, str | None]
"""What an import resolves to (a node; -1 for the root directory) and the name it binds."""


def _no_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    return None, None


def _python_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    scope = scopes.files[file]
    base = scopes.python_module(scope.path, module)
    if name is None:
        if alias is not None:
            return base, alias
        # `import a.b.c` binds `a`, the top package; the edge goes to a.b.c.
        first = module.split(".", maxsplit=1)[0]
        top = scopes.python_module(scope.path, first)
        if top is not None and top >= 0:
            scope.bindings.setdefault(first, top)
        return base, None
    if name == "*":
        if base is not None:
            scope.wildcards.append(base)
        return base, None
    member = scopes.member(base, name) if base is not None else None
    if member is None:
        return base, None
    return member, alias or name


def _js_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    base = scopes.js_module(scopes.files[file].path, module)
    if base is None or name in (None, "*", "default"):
        return base, alias
    member = scopes.member(base, name)
    return (base if member is None else member), alias or name


def _go_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    parts = module.split("/")
    found = scopes.dir_nodes.get(module)
    if found is None and "." in parts[0]:  # a module path (`github.com/...`), not the stdlib
        found = scopes.directory_by_suffix(module)
    return found, alias or parts[-1]


def _java_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    scope = scopes.files[file]
    folder = module.replace(".", "/")
    if name == "*":
        package = scopes.directory_by_suffix(folder)
        if package is not None:
            scope.wildcards.append(package)
        return package, None
    found = scopes.file_by_suffix(scope.path, f"{folder}/{name}.java")
    if found is not None:
        return scopes.files[found].top.get(name or "", found), name
    owner = scopes.file_by_suffix(scope.path, f"{folder}.java")  # import static a.B.m
    if owner is None:
        return None, None
    cls = scopes.files[owner].top.get(folder.rsplit("/", 1)[-1])
    return scopes.member(cls, name or ""), name


def _rust_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    scope = scopes.files[file]
    parts = [p for p in module.split("::") if p]
    if not parts:
        return scopes.rust_module(scope.path, [name] if name else []), alias or name
    base = scopes.rust_module(scope.path, parts)
    if name is None:
        return base, alias or parts[-1]
    if name == "*":
        if base is not None:
            scope.wildcards.append(base)
        return base, None
    return (scopes.member(base, name) if base is not None else None), alias or name


def _c_import(
    scopes: Scopes, file: int, module: str, name: str | None, alias: str | None
) -> _Resolved:
    return scopes.file_by_suffix(scopes.files[file].path, module), None


_IMPORTS: Final = {
    "python": _python_import,
    "javascript": _js_import,
    "typescript": _js_import,
    "tsx": _js_import,
    "go": _go_import,
    "java": _java_import,
    "rust": _rust_import,
    "c": _c_import,
    "cpp": _c_import,
}
