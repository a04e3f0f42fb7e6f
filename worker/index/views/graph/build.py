"""Build a commit's entity graph from its index: the paths, and each blob's analysis.

Entities and references come from the segments (one analysis per blob, see
`worker.index.analysis.references`); what is per commit is which paths hold which blobs,
and so what each reference resolves to (see `scope`). Imports are resolved first (they
bind names), then bases (methods are inherited), then calls.
"""

from __future__ import annotations

import re
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
from worker.index.views.graph.carried import (
    NEVER,
    Plan,
    Previous,
    ResolutionState,
    StaleCarry,
    carry,
)
from worker.index.views.graph.gathered import Gathered
from worker.index.views.graph.imports import IMPORT_READERS, no_import
from worker.index.views.graph.model import (
    CommitGraph,
    Edges,
    EntityType,
    Names,
    NodeIds,
    Relation,
)
from worker.index.views.graph.reads import (
    Phase,
    ReadKind,
    ReadTable,
    file_key,
    read_table,
)
from worker.index.views.graph.scope import (
    MEMBER_SCOPED,
    NAMESPACES_SPAN_FILES,
    SELF_NAMES,
    SUPER_WORDS,
    Scopes,
)
from worker.index.views.text import CommitIndex

log = structlog.get_logger(__name__)
_SEPARATORS: Final = re.compile(r"\.|::|->")
I64: TypeAlias = npt.NDArray[np.int64]
_ARROW_SELF: Final = frozenset({"this", "$this"})
"""What may start a `->` chain the graph resolves (C++ `this->x`, PHP `$this->x`); any other
object's type is unknown."""
_IMPORT: Final = int(Relation.IMPORT)
_INHERIT: Final = int(Relation.INHERIT)
_CLASS: Final = int(EntityType.CLASS)
"""Plain ints for what is named per reference (an enum member takes ten times as long)."""


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
    path_grammars = _PathGrammars(grammar_list)
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
    resolved_edges, c_reads = _resolve(
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
        edges=Edges(
            source=(edges >> _SOURCE_SHIFT).astype(np.int32),
            target=((edges >> _TARGET_SHIFT) & _NODE_MASK).astype(np.int32),
            relation=(edges & 3).astype(np.uint8),
        ),
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


_TARGET_SHIFT: Final = 2
_SOURCE_SHIFT: Final = 33
_NODE_MASK: Final = (1 << 31) - 1


def _edge_keys(source: I64, target: I64, relation: int | I64) -> I64:
    """Edges as sortable keys: (source, target, relation) in one int64."""
    return (source << _SOURCE_SHIFT) | (target << _TARGET_SHIFT) | relation


def _contain_edges(parents: I64) -> I64:
    children = np.flatnonzero(parents >= 0)
    return _edge_keys(parents[children], children.astype(np.int64), int(Relation.CONTAIN))


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
        return _edge_keys(
            np.asarray(self.sources, dtype=np.int64),
            np.asarray(self.targets, dtype=np.int64),
            np.asarray(self.kinds, dtype=np.int64),
        )


def _resolve(
    scopes: Scopes,
    data: Gathered,
    plan: Plan,
    *,
    file_node: I64,
    types: npt.NDArray[np.uint8],
    parents: list[int],
    path_grammars: _PathGrammars,
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
            parts = _chain(texts[r][0])
            base = scopes.resolve_chain(file, where, parts, parents)
            if base is not None and scopes.types[base] == _CLASS and base != holder:
                found.add(holder, base, _INHERIT)
                key = scopes.class_of(holder)
                if key is not None:
                    scopes.bases[key] = (*scopes.bases.get(key, ()), base)
                    plan.class_keys.setdefault(file, {})[key] = None
    scopes.bases_known()
    check_deadline("calls")
    call_edges, c_reads = _resolve_calls(
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


def _chain(text: str) -> tuple[str, ...]:
    """The names of a reference's chain (`a.b`, `a::b`, `a->b`).

    A tuple: the collector stops tracking a tuple of strings, not a list, and a build holds
    one per distinct callee text.
    """
    # Most chains are dotted only (every Python and JavaScript one): str.split is faster.
    return tuple(_SEPARATORS.split(text) if ":" in text or "-" in text else text.split("."))


def _rows_by_file(rows: I64, file_of_row: I64) -> dict[int, list[int]]:
    """Reference rows (in path order) by their file's node, each file's in row order."""
    if not len(rows):
        return {}
    files = file_of_row[rows]
    starts = np.flatnonzero(np.diff(files, prepend=-1))
    groups = np.split(rows, starts[1:])
    return dict(zip(files[starts].tolist(), (g.tolist() for g in groups), strict=True))


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
    return _edge_keys(new_source, new_target, relation[rows].astype(np.int64))


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
    reads = _keyed_reads(source, keys, ReadKind.PATHS, Phase.IMPORTS)
    return _edge_keys(source[keep], target[keep], int(Relation.IMPORT)), reads


def _resolve_calls(
    scopes: Scopes,
    data: Gathered,
    plan: Plan,
    *,
    file_node: I64,
    types: npt.NDArray[np.uint8],
    parents: list[int],
    path_grammars: _PathGrammars,
) -> tuple[I64, ReadTable]:
    """Edge keys of the calls the plan resolves that resolve, and the reads of C's plain
    calls.

    What a call means depends on its file, and on its class only where names reach into the
    class (`self.x`; Java and C++ methods): each distinct (file, class, callee) is resolved
    once, for the first call of it. Plain names called in C are resolved all at once.
    """
    calls = np.flatnonzero(data.relation == Relation.INVOKE)
    calls = calls[plan.resolving(file_node[data.reference_path[calls]], Phase.CALLS)]
    texts = data.target_array.take(pa.array(calls)).fill_null("")
    plain = ~pc.match_substring_regex(texts, r"[.:-]").to_numpy(zero_copy_only=False)
    path_rows = data.reference_path[calls]
    is_c = path_grammars.among("c")
    vector = plain & is_c[path_rows]
    picked = np.flatnonzero(vector)
    # Encoded once: the calls are resolved, and their reads keyed, by the distinct names.
    callees = texts.take(pa.array(picked)).dictionary_encode()
    resolved = _c_calls(data, is_c, path_rows[picked], callees)
    hit = resolved >= 0
    c_edges = _edge_keys(data.holder[calls[picked]][hit], resolved[hit], int(Relation.INVOKE))
    c_reads = _keyed_reads(file_node[path_rows[picked]], callees, ReadKind.NAME, Phase.CALLS)
    rest = np.flatnonzero(~vector)
    encoded = texts.take(pa.array(rest)).dictionary_encode()
    code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    distinct_texts: list[str] = encoded.dictionary.to_pylist()
    chains = [_chain(text) for text in distinct_texts]
    # `a->b` is followed only from `this` (`$this`); any other object's type is unknown.
    followed = np.asarray(
        [
            not ("->" in text and chain[0] not in _ARROW_SELF)
            for text, chain in zip(distinct_texts, chains, strict=True)
        ],
        dtype=bool,
    )
    # Through `self` or `super`: what the call means depends on the class it is made in.
    through_self = np.asarray(
        [chain[0] in SELF_NAMES or chain[0] in SUPER_WORDS for chain in chains], dtype=bool
    )
    kept = np.flatnonzero(followed[code])
    rest, code = rest[kept], code[kept]
    holder = data.holder[calls[rest]]
    file = file_node[path_rows[rest]]
    selfish = through_self[code]
    need = np.flatnonzero(selfish | path_grammars.among(*MEMBER_SCOPED)[path_rows[rest]])
    context = np.full(len(rest), -2, dtype=np.int64)
    if len(need):
        holders = distinct(holder[need])
        first_entity = data.first_entity
        holder_files = np.where(
            holders >= first_entity,
            file_node[data.entity_path[np.maximum(holders - first_entity, 0)]],
            holders,
        )
        receiver = _receivers(scopes, holders, holder_files, parents)[
            np.searchsorted(holders, holder[need])
        ]
        # `this` outside a class is the function's own (`Scopes._owned`).
        outside = np.where(selfish[need], holder[need], -1)
        context[need] = np.where(receiver >= 0, receiver, outside)
    order = np.lexsort((code, context, file))
    leads = np.ones(len(order), dtype=bool)
    if len(order):
        by_file, by_context, by_code = file[order], context[order], code[order]
        leads[1:] = (
            (by_file[1:] != by_file[:-1])
            | (by_context[1:] != by_context[:-1])
            | (by_code[1:] != by_code[:-1])
        )
    first = order[leads]  # the first call of each group: lexsort is stable
    meaning = _meanings(
        scopes,
        file[first],
        holder[first],
        [chains[c] for c in code[first]],
        parents,
        few=plan.dirty_from is not None,
    )
    callee = np.empty(len(order), dtype=np.int64)
    callee[order] = meaning[np.cumsum(leads) - 1]
    found = callee >= 0
    callee_type = types[np.where(found, callee, 0)]
    is_callable = (callee_type == EntityType.FUNCTION) | (callee_type == EntityType.CLASS)
    # A class "calling" itself says nothing: its own constructor or destructor declared
    # (`~Shape();`), or a field made of it.
    itself = (callee == holder) & (types[holder] == EntityType.CLASS)
    keep = found & is_callable & ~itself
    edges = np.concatenate([c_edges, _edge_keys(holder[keep], callee[keep], int(Relation.INVOKE))])
    return edges, c_reads


def _keyed_reads(files: I64, keys: pa.Array, kind: ReadKind, phase: Phase) -> ReadTable:
    """Reads of one kind made by vectorised resolution: each (file, key) once. `keys` may
    come dictionary-encoded already (by `dictionary_encode`: each value once)."""
    encoded = keys if pa.types.is_dictionary(keys.type) else keys.dictionary_encode()
    code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    n_codes = max(len(encoded.dictionary), 1)
    pairs = distinct(files * n_codes + code)
    return ReadTable(
        reader=(pairs // n_codes).astype(np.int32),
        phase=np.full(len(pairs), phase, dtype=np.uint8),
        kind=np.full(len(pairs), kind, dtype=np.uint8),
        node=np.full(len(pairs), -1, dtype=np.int32),
        name=pa.DictionaryArray.from_arrays(
            pa.array((pairs % n_codes).astype(np.int32)), encoded.dictionary.cast(pa.string())
        ),
    )


def _receivers(scopes: Scopes, holders: I64, files: I64, parents: list[int]) -> I64:
    """The class `self` means in each holder (in its file; -1: none)."""
    found = []
    reads, last = scopes.reads, -1
    for holder, file in zip(holders.tolist(), files.tolist(), strict=True):
        if file != last:  # the holders come file by file
            reads.at(file, Phase.CALLS)
            last = file
        receiver = scopes.receiver_class(holder, parents)
        found.append(-1 if receiver is None else receiver)
    return np.asarray(found, dtype=np.int64)


def _meanings(
    scopes: Scopes,
    files: I64,
    holders: I64,
    chains: list[tuple[str, ...]],
    parents: list[int],
    *,
    few: bool,
) -> I64:
    """What each call (its file, holder and chain of names) names (-1: nothing known).

    `few`: the calls of a few files (a carried build), whose global names (C's) are sought
    among the first names of their chains only; a qualified name is still answered.
    """
    if few:
        scopes.expect_only({chain[0] for chain in chains})
    found = []
    reads, last = scopes.reads, -1
    for file, holder, chain in zip(files.tolist(), holders.tolist(), chains, strict=True):
        if file != last:  # the calls come file by file
            reads.at(file, Phase.CALLS)
            last = file
        meaning = scopes.resolve_chain(file, holder, chain, parents)
        found.append(-1 if meaning is None else meaning)
    return np.asarray(found, dtype=np.int64)


def _c_calls(
    data: Gathered, is_c: npt.NDArray[np.bool_], path_rows: I64, encoded: pa.DictionaryArray
) -> I64:
    """The definition each plain C call names (its callee, dictionary-encoded; its file's
    path row): in its own file, else the only one there is."""
    call_code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    top = np.flatnonzero(data.entity_top & is_c[data.entity_path])
    known_codes = pc.index_in(data.name_array.take(pa.array(top)), value_set=encoded.dictionary)
    known = known_codes.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    defined = top[known >= 0]
    defined_code = known[known >= 0]
    n_codes = max(len(encoded.dictionary), 1)
    if not len(defined):
        return np.full(len(call_code), -1, dtype=np.int64)
    # The only definition of a name anywhere.
    count = np.bincount(defined_code, minlength=n_codes)
    only = np.full(n_codes, -1, dtype=np.int64)
    single = count[defined_code] == 1
    only[defined_code[single]] = defined[single] + data.first_entity
    resolved: I64 = only[call_code]
    # A definition in the caller's own file comes first (the first of its name there).
    file_key = data.entity_path[defined] * n_codes + defined_code
    order = np.argsort(file_key, kind="stable")
    sorted_key = file_key[order]
    call_key = path_rows * n_codes + call_code
    at = np.minimum(np.searchsorted(sorted_key, call_key), len(sorted_key) - 1)
    same_file = sorted_key[at] == call_key
    resolved[same_file] = defined[order[at[same_file]]] + data.first_entity
    return resolved


class _PathGrammars:
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


def _only_of_name(names: pa.Array, rows: I64) -> I64:
    """The rows (each named by `names`, in order) whose name no other of them has."""
    encoded = names.dictionary_encode()
    code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    only: I64 = rows[np.bincount(code, minlength=len(encoded.dictionary))[code] == 1]
    return only
