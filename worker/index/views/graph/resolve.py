"""What a commit's references name, as edges: imports first (they bind names), then bases
(methods are inherited), then calls (see `calls`), each file by its language's rules (see
`scope`, `imports`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from worker.index.views.graph.calls import chain, resolve_calls
from worker.index.views.graph.edge_keys import edge_keys
from worker.index.views.graph.gathered import Gathered, PathGrammars
from worker.index.views.graph.imports import IMPORT_READERS, no_import
from worker.index.views.graph.model import EntityType, Relation
from worker.index.views.graph.plan import Plan
from worker.index.views.graph.reads import Phase, ReadKind, ReadTable, file_key, keyed_reads
from worker.index.views.graph.scope import NAMESPACES_SPAN_FILES, Scopes

I64: TypeAlias = npt.NDArray[np.int64]
_IMPORT: Final = int(Relation.IMPORT)
_INHERIT: Final = int(Relation.INHERIT)
_CLASS: Final = int(EntityType.CLASS)
"""Plain ints for what is named per reference (an enum member takes ten times as long)."""


class _Found:
    """Edges resolved one at a time."""

    def __init__(self) -> None:
        self.sources: list[int] = []
        self.targets: list[int] = []
        self.kinds: list[int] = []

    def add(self, source: int, target: int, relation: int) -> None:
        self.sources.append(source)
        self.targets.append(target)
        self.kinds.append(relation)

    def keys(self) -> I64:
        return edge_keys(
            np.asarray(self.sources, dtype=np.int64),
            np.asarray(self.targets, dtype=np.int64),
            np.asarray(self.kinds, dtype=np.int64),
        )


def resolve_references(
    scopes: Scopes,
    data: Gathered,
    plan: Plan,
    *,
    file_node: I64,
    types: npt.NDArray[np.uint8],
    parents: list[int],
    path_grammars: PathGrammars,
    paths: list[str],
    check_deadline: Callable[[str], None],
) -> tuple[I64, ReadTable]:
    """Edge keys of every reference the plan resolves, and the reads of C's plain calls:
    imports first (they bind names), then bases (methods are inherited), then calls."""
    check_deadline("imports")
    found = _Found()
    reads = scopes.reads
    imports = data.relation == Relation.IMPORT
    includes = imports & path_grammars.among("c", "cpp")[data.reference_path]
    row_file = file_node[data.reference_path]
    import_all = np.flatnonzero(imports & ~includes)
    inherit_all = np.flatnonzero(data.relation == Relation.INHERIT)
    texts = data.texts(np.concatenate([import_all, inherit_all]))
    import_rows = _rows_by_file(import_all, row_file)
    for file in plan.files(Phase.IMPORTS, sorted(import_rows)):
        reads.at(file, Phase.IMPORTS)
        reader = IMPORT_READERS.get(scopes.grammar(file) or "", no_import)
        for r in import_rows.get(file, ()):
            target, bound = reader(scopes, file, *texts[r])
            if target is None or target < 0:
                continue
            if bound and bound != "*":
                scopes.files[file].bindings.setdefault(bound, target)
            if target != file:
                found.add(file, target, _IMPORT)
    include_rows = np.flatnonzero(includes)
    include_rows = include_rows[
        plan.resolving(file_node[data.reference_path[include_rows]], Phase.IMPORTS)
    ]
    include_edges, include_reads = _c_includes(scopes, data, include_rows, paths, file_node)
    check_deadline("bases")
    inherit_rows = _rows_by_file(inherit_all, row_file)
    for file in plan.files(Phase.BASES, sorted(inherit_rows)):
        reads.at(file, Phase.BASES)
        # Where namespaces span files, a base is named from inside its class's namespaces
        # (`class C : public Shape`, `module Shop; class Engine < Base`).
        spans = scopes.grammar(file) in NAMESPACES_SPAN_FILES
        for r in inherit_rows.get(file, ()):
            holder = int(data.holder[r])
            where = holder if spans else file
            parts = chain(texts[r][0])
            base = scopes.resolve_chain(file, where, parts, parents)
            if base is not None and scopes.types[base] == _CLASS and base != holder:
                found.add(holder, base, _INHERIT)
                key = scopes.class_of(holder)
                if key is not None:
                    scopes.bases[key] = (*scopes.bases.get(key, ()), base)
                    plan.class_keys.setdefault(file, {})[key] = None
    scopes.bases_known()
    check_deadline("calls")
    call_edges, c_reads = resolve_calls(
        scopes,
        data,
        plan,
        file_node=file_node,
        types=types,
        parents=parents,
        path_grammars=path_grammars,
    )
    edges = np.concatenate([found.keys(), include_edges, call_edges])
    return edges, ReadTable.concat([include_reads, c_reads])


def _rows_by_file(rows: I64, file_of_row: I64) -> dict[int, list[int]]:
    """Reference rows (in path order) by their file's node, each file's in row order."""
    if not len(rows):
        return {}
    files = file_of_row[rows]
    starts = np.flatnonzero(np.diff(files, prepend=-1))
    groups = np.split(rows, starts[1:])
    return dict(zip(files[starts].tolist(), (g.tolist() for g in groups), strict=True))


def _c_includes(
    scopes: Scopes, data: Gathered, rows: I64, paths: list[str], file_node: I64
) -> tuple[I64, ReadTable]:
    """Edge keys of C and C++ includes (reference rows), and the reads of their lookups: each
    header is looked up once per directory that includes it, as an include binds no name."""
    path_rows = data.reference_path[rows]
    files, file_at = np.unique(path_rows, return_inverse=True)
    folders = pa.array(
        [paths[f].rpartition("/")[0] for f in files.tolist()], pa.string()
    ).dictionary_encode()
    folder_code = folders.indices.to_numpy(zero_copy_only=False).astype(np.int64)[file_at]
    headers = data.target_array.take(pa.array(rows)).fill_null("").dictionary_encode()
    header_code = headers.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    n_headers = max(len(headers.dictionary), 1)
    pairs, pair_at = np.unique(folder_code * n_headers + header_code, return_inverse=True)
    folder_names: list[str] = folders.dictionary.to_pylist()
    header_names: list[str] = headers.dictionary.to_pylist()
    found = [
        scopes.file_in(
            folder_names[pair // n_headers], header_names[pair % n_headers], record=False
        )
        for pair in pairs.tolist()
    ]
    target = np.asarray([-1 if f is None else f for f in found], dtype=np.int64)[pair_at]
    source = file_node[path_rows]
    keep = (target >= 0) & (target != source)
    keys = pa.array([file_key(h) for h in header_names], pa.string()).take(pa.array(header_code))
    reads = keyed_reads(source, keys, ReadKind.PATHS, Phase.IMPORTS)
    return edge_keys(source[keep], target[keep], int(Relation.IMPORT)), reads
