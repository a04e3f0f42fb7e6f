"""Build a commit's entity graph from its index: the paths, and each blob's analysis.

Entities and references come from the segments (one analysis per blob, see
`worker.index.analysis.references`); what is per commit is which paths hold which blobs,
and so what each reference resolves to (see `resolve`). A build after another commit's
carries over what the change cannot have touched (see `carried`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import structlog

from worker.index.analysis.distinct import distinct
from worker.index.analysis.grammars import grammars_of
from worker.index.views.graph.carried import Previous, StaleCarry, carry
from worker.index.views.graph.edge_keys import edge_keys, edges_of
from worker.index.views.graph.gathered import Gathered, PathGrammars
from worker.index.views.graph.model import CommitGraph, EntityType, Names, NodeIds, Relation
from worker.index.views.graph.plan import NEVER, Plan, ResolutionState
from worker.index.views.graph.reads import Phase, ReadTable, read_table
from worker.index.views.graph.resolve import resolve_references
from worker.index.views.graph.scope import NAMESPACES_SPAN_FILES, Scopes
from worker.index.views.text import CommitIndex

log = structlog.get_logger(__name__)
I64: TypeAlias = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class GraphBuild:
    """A built graph, the state a later commit's build carries over, and what it took."""

    graph: CommitGraph
    seconds: float
    files: int
    state: ResolutionState
    resolved: int
    """Files whose references were resolved (all of them, unless carried over)."""


CARRY_LIMIT: Final = 0.5
"""Past this share of its files to resolve again, a graph is built whole, not carried."""


def _no_deadline(stage: str) -> None:
    """A build's check between stages when nothing bounds its time."""


def build_graph(
    index: CommitIndex,
    previous: Previous | None = None,
    *,
    carry_limit: float = CARRY_LIMIT,
    check_deadline: Callable[[str], None] = _no_deadline,
) -> GraphBuild:
    """The entity graph of the commit an index is of.

    With the graph of another commit (`previous`), only the files whose resolution may
    have changed are resolved again (see `carried`), unless more than `carry_limit` of
    them would be; the graph is the same either way. `check_deadline` is called with the
    stage about to start (it raises to stop the build).
    """
    started = time.perf_counter()
    if previous is not None:
        try:
            return _build(index, previous, started, carry_limit, check_deadline)
        except StaleCarry as exc:
            log.info("graph.built_whole", commit=index.commit, reason=str(exc))
    return _build(index, None, started, carry_limit, check_deadline)


def _build(
    index: CommitIndex,
    previous: Previous | None,
    started: float,
    carry_limit: float,
    check_deadline: Callable[[str], None],
) -> GraphBuild:
    """`build_graph`, carrying over what `previous` resolved (raises `StaleCarry` when it
    does not fit)."""
    paths: list[str] = index.path_column.to_pylist()
    directories = _directories(paths)
    dir_nodes = {d: i for i, d in enumerate(directories)}
    n_dirs = len(directories)
    file_nodes = {p: n_dirs + i for i, p in enumerate(paths)}
    file_node = n_dirs + np.arange(len(paths), dtype=np.int64)
    check_deadline("entities")
    data = Gathered(index, n_dirs + len(paths), file_node)
    dir_parent = [dir_nodes.get(d.rpartition("/")[0], -1) for d in directories]
    file_parent = [dir_nodes.get(p.rpartition("/")[0], -1) for p in paths]
    types = np.concatenate(
        [
            np.full(n_dirs, EntityType.DIRECTORY, np.uint8),
            np.full(len(paths), EntityType.FILE, np.uint8),
            data.types,
        ]
    )
    parents = np.concatenate(
        [np.asarray(dir_parent + file_parent, dtype=np.int64), data.entity_parent]
    )
    plain_names = [d.rpartition("/")[2] for d in directories]
    plain_names += [p.rpartition("/")[2] for p in paths]
    names = Names(pa.concat_arrays([pa.array(plain_names, pa.string()), data.name_array]))
    node_paths = directories + paths
    grammar_list = grammars_of(paths)
    for row in data.cpp_paths.tolist():
        if grammar_list[row] == "c":  # a header the index parsed as C++
            grammar_list[row] = "cpp"
    grammars = dict(zip(paths, grammar_list, strict=True))
    path_grammars = PathGrammars(grammar_list)
    type_list: list[int] = types.tolist()
    parent_list: list[int] = parents.tolist()

    def only_definitions(wanted: set[str] | None) -> dict[str, int]:
        # C's top-level names, and those whose namespaces span files by their qualified names
        # (`geo.Shape`) too; of them, those `wanted` (None: all).
        c_family = path_grammars.among("c", "cpp")
        nested = path_grammars.among(*NAMESPACES_SPAN_FILES)
        on_path = data.entity_path
        mine = np.flatnonzero((data.entity_top & c_family[on_path]) | nested[on_path])
        mine_names = data.name_array.take(pa.array(mine))
        if wanted is not None:
            # Every definition of a wanted name stays, so each is counted as in the whole.
            kept = pc.is_in(mine_names, value_set=pa.array(sorted(wanted), pa.string()))
            mine, mine_names = mine[kept.to_numpy(zero_copy_only=False)], mine_names.filter(kept)
        only = _only_of_name(mine_names, mine)
        only_names: list[str] = data.name_array.take(pa.array(only)).to_pylist()
        return dict(zip(only_names, (data.first_entity + only).tolist(), strict=True))

    scopes = Scopes(
        types=type_list,
        file_nodes=file_nodes,
        dir_nodes=dir_nodes,
        grammars=grammars,
        entities_of=data.entities_of,
        file_of=data.file_of,
        only_definitions=only_definitions,
    )
    oids = np.ascontiguousarray(index.path_oids)
    edge_parts = [_contain_edges(parents)]
    check_deadline("plan")
    plan, node_map = _plan(
        scopes,
        data,
        previous,
        directories=directories,
        paths=paths,
        oids=oids,
        grammars=grammar_list,
        carry_limit=carry_limit,
    )
    resolved_edges, c_reads = resolve_references(
        scopes,
        data,
        plan,
        file_node=file_node,
        types=types,
        parents=parent_list,
        path_grammars=path_grammars,
        paths=paths,
        check_deadline=check_deadline,
    )
    edge_parts.append(resolved_edges)
    check_deadline("edges")
    if previous is not None:
        edge_parts.append(_carried_edges(previous.graph, node_map, plan))
    edges = distinct(np.concatenate(edge_parts))
    state = plan.state(oids, grammar_list, ReadTable.concat([read_table(scopes.reads), c_reads]))
    resolved = len(paths) if plan.dirty_from is None else len(plan.dirty_from)
    ids = NodeIds(node_paths, n_dirs, data.entity_path, names)
    graph = CommitGraph(
        ids=ids,
        names=names,
        types=types,
        paths=ids.paths,
        start_line=np.concatenate(
            [
                np.zeros(n_dirs, np.int32),
                np.ones(len(paths), np.int32),
                data.start_line.astype(np.int32),
            ]
        ),
        end_line=np.concatenate(
            [
                np.zeros(n_dirs, np.int32),
                data.n_lines.astype(np.int32),
                data.end_line.astype(np.int32),
            ]
        ),
        edges=edges_of(edges),
    )
    return GraphBuild(graph, time.perf_counter() - started, len(paths), state, resolved)


def _directories(paths: list[str]) -> list[str]:
    """Every directory holding one of the paths, sorted."""
    found: set[str] = set()
    # Files share their folders: each distinct folder's ancestors are walked once.
    for parent in {p.rpartition("/")[0] for p in paths}:
        folder = parent
        while folder and folder not in found:
            found.add(folder)
            folder = folder.rpartition("/")[0]
    return sorted(found)


def _plan(
    scopes: Scopes,
    data: Gathered,
    previous: Previous | None,
    *,
    directories: list[str],
    paths: list[str],
    oids: npt.NDArray[np.uint8],
    grammars: list[str | None],
    carry_limit: float,
) -> tuple[Plan, I64]:
    """What to resolve: everything, or what may differ from `previous` (with each of its
    nodes' new node); the references of what it may resolve are gathered."""
    if previous is None:
        data.gather_references()
        return Plan.whole(scopes), np.zeros(0, dtype=np.int64)
    dirty_from, carried_state, node_map = carry(
        previous,
        directories=directories,
        paths=paths,
        oids=oids,
        grammars=grammars,
        now=data,
        limit=carry_limit,
    )
    plan = Plan(scopes, dirty_from, carried_state)
    reachable = np.asarray(sorted(plan.reachable()), dtype=np.int64)
    data.gather_references(np.isin(data.file_node, reachable))
    return plan, node_map


def _contain_edges(parents: I64) -> I64:
    children = np.flatnonzero(parents >= 0)
    return edge_keys(parents[children], children.astype(np.int64), int(Relation.CONTAIN))


_PHASE_OF: Final = {
    Relation.IMPORT: Phase.IMPORTS,
    Relation.INHERIT: Phase.BASES,
    Relation.INVOKE: Phase.CALLS,
}
_EDGE_PHASE: Final = np.asarray(
    [_PHASE_OF.get(relation, NEVER) for relation in Relation], dtype=np.uint8
)
"""By relation, the phase that resolves its edges (containment: none, made every build)."""


def _carried_edges(old: CommitGraph, node_map: I64, plan: Plan) -> I64:
    """Edge keys of the old graph's references that were not resolved again, renumbered;
    those of files gone are left out."""
    ids = old.ids
    assert isinstance(ids, NodeIds)
    # Worked out per node, then read per edge: a node has three edges or so.
    node_file = node_map[
        np.concatenate([np.arange(len(ids.plain), dtype=np.int64), ids.n_dirs + ids.entity_path])
    ]
    # The phase each node's file is resolved again from; 0 where it is gone.
    from_phase = np.where(node_file >= 0, plan.first_phases(node_file), 0)
    source, relation = old.edges.source, old.edges.relation
    # Kept unless its file is gone, or is resolved again from its relation's phase on.
    rows = np.flatnonzero(_EDGE_PHASE[relation] < from_phase[source])
    new_source = node_map[source[rows]]
    new_target = node_map[old.edges.target[rows].astype(np.int64)]
    if (new_source < 0).any() or (new_target < 0).any():
        raise StaleCarry("an edge kept reaches a definition that is gone")
    return edge_keys(new_source, new_target, relation[rows].astype(np.int64))


def _only_of_name(names: pa.Array, rows: I64) -> I64:
    """The rows (each named by `names`, in order) whose name no other of them has."""
    encoded = names.dictionary_encode()
    code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    only: I64 = rows[np.bincount(code, minlength=len(encoded.dictionary))[code] == 1]
    return only
