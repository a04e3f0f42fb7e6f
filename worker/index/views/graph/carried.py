"""What a graph build carries over from the graph of another commit.

A file's references are resolved again only from the first phase (see `reads.Phase`) in
which something it read may have changed: its own blob, a name it looked up among another
file's definitions (that file now defines it otherwise, or is gone), a name it looked up
across the commit, a path lookup that files coming or going touch, or the bindings
or bases another file made. The first four are known from the two commits' paths and blobs
before resolving; the last two only once the file that makes them has been resolved again,
so files are taken in the order a whole build takes them, and each file's carried state is
put in place when the build passes it (see `plan`). What the graph holds is then the same
as a whole build's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from worker.index.views.graph.gathered import Gathered
from worker.index.views.graph.model import CommitGraph, NodeIds, Relation
from worker.index.views.graph.plan import ResolutionState
from worker.index.views.graph.reads import Phase, ReadKind, ReadTable, definitions_key, path_keys
from worker.index.views.graph.scope import owner_and_name

I64: TypeAlias = npt.NDArray[np.int64]


class StaleCarry(Exception):
    """The graph is better built whole: the carried one does not fit the commit, or most
    files would be resolved again anyway."""


@dataclass(frozen=True, slots=True)
class Previous:
    """The graph of another commit (the last head, or a later one) and the state resolving
    it left."""

    graph: CommitGraph
    state: ResolutionState


def entity_parents(graph: CommitGraph, first_entity: int) -> I64:
    """Each entity's parent node, from the graph's containment edges."""
    edges = graph.edges
    parent = np.full(graph.n_nodes - first_entity, -1, dtype=np.int64)
    contain = np.flatnonzero((edges.relation == Relation.CONTAIN) & (edges.target >= first_entity))
    parent[edges.target[contain].astype(np.int64) - first_entity] = edges.source[contain]
    return parent


def carry(
    previous: Previous,
    *,
    directories: list[str],
    paths: list[str],
    oids: npt.NDArray[np.uint8],
    grammars: list[str | None],
    now: Gathered,
    limit: float = 1.0,
) -> tuple[dict[int, Phase], ResolutionState, I64]:
    """What a build of a commit resolves again, given the graph of another one; the state
    it carries (in its node numbering); and each old node's new node (-1: gone).

    Raises `StaleCarry` when the graph does not fit, or when more than `limit` (a share)
    of the files would be resolved again.
    """
    old = previous.graph
    ids = old.ids
    state = previous.state
    if not isinstance(ids, NodeIds) or len(state.oids) != len(ids.plain) - ids.n_dirs:
        raise StaleCarry("the previous graph has no state of its files")
    n_dirs, old_dirs = len(directories), ids.n_dirs
    old_paths = ids.plain[old_dirs:]
    first, old_first = n_dirs + len(paths), len(ids.plain)
    node_map, new_row, old_bounds, new_bounds = _moved(old, ids, directories, paths, now)
    kept_rows = np.flatnonzero(new_row >= 0)
    # A header read as C++ rather than C has other names seen across the commit.
    same_grammar = _same_grammar(state.grammars, grammars, new_row)
    same_blob = (state.oids[kept_rows] == oids[new_row[kept_rows]]).all(axis=1) & same_grammar[
        kept_rows
    ]
    changed = kept_rows[~same_blob]
    gone = np.flatnonzero(new_row < 0)
    came_mask = np.ones(len(paths), dtype=bool)
    came_mask[new_row[kept_rows]] = False
    came: list[int] = np.flatnonzero(came_mask).tolist()
    old_parent = entity_parents(old, old_first)
    gone_nodes = [old_dirs + r for r in gone.tolist()]
    redefined = list(gone_nodes)  # and the files still there whose definitions changed
    renamed: dict[int, set[str]] = {}  # the names each file still there defines otherwise
    changed_names: set[str] = set()
    for row in gone.tolist():
        changed_names.update(
            old.names[old_first + old_bounds[row] : old_first + old_bounds[row + 1]]
        )
    for row in came:
        changed_names.update(now.names[new_bounds[row] : new_bounds[row + 1]])
    for row in changed.tolist():
        lo, hi = int(old_bounds[row]), int(old_bounds[row + 1])
        nrow = int(new_row[row])
        nlo, nhi = int(new_bounds[nrow]), int(new_bounds[nrow + 1])
        was = _definitions(old.names, old.types, old_parent, old_first, range(lo, hi))
        is_now = _definitions(
            now.names, now.types, now.entity_parent, first, range(nlo, nhi), entities=True
        )
        if same_grammar[row] and _same(was, is_now):
            continue
        redefined.append(old_dirs + row)
        names = _names_changed(was, is_now) if same_grammar[row] else set(was[0] + is_now[0])
        changed_names.update(names)
        renamed[old_dirs + row] = {owner_and_name(name)[1] for name in names}
        _renumber(node_map, was[0], old_first + lo, is_now[0], first + nlo)
    new_rows = new_row[changed].tolist() + came
    dirty_from = {n_dirs + row: Phase.IMPORTS for row in new_rows}
    reads = state.reads
    moved_paths = path_keys(
        [old_paths[r] for r in gone.tolist()] + [paths[r] for r in came],
        sorted(set(ids.plain[:old_dirs]).symmetric_difference(directories)),
    )
    # A package's definitions, read at once, change with any of its files'.
    defined = [old_paths[node - old_dirs] for node in redefined] + [paths[r] for r in came]
    moved_paths.update(definitions_key(path.rpartition("/")[0]) for path in defined)
    stale = _stale(reads, gone_nodes, renamed, changed_names, moved_paths)
    for reader in np.unique(node_map[reads.reader[stale]]).tolist():
        if reader >= 0:
            dirty_from[reader] = Phase.IMPORTS
    if len(dirty_from) > limit * len(paths):
        # Carrying costs more than it saves once most files are resolved again anyway.
        raise StaleCarry(f"{len(dirty_from)} of {len(paths)} files would be resolved again")
    return dirty_from, _remapped(state, node_map), node_map


def _stale(
    reads: ReadTable,
    gone: list[int],
    renamed: dict[int, set[str]],
    changed_names: set[str],
    moved_paths: set[str],
) -> npt.NDArray[np.bool_]:
    """Which reads may read otherwise now: a look among the definitions of a file gone, or
    of a name (by its last part, as it is looked up) a file defines otherwise (`renamed`,
    by file); a look at a name defined otherwise across the commit; a path lookup that
    files coming or going touch."""
    file_reads = reads.kind == ReadKind.FILE
    stale: npt.NDArray[np.bool_] = file_reads & np.isin(reads.node, gone)
    if renamed:
        # Keyed `file:name`; only the reads of the few files renamed in are keyed.
        rows = np.flatnonzero(file_reads & np.isin(reads.node, list(renamed)))
        looked_up = pc.binary_join_element_wise(
            pc.cast(pa.array(reads.node[rows]), pa.string()),
            reads.name.take(pa.array(rows, pa.int64())).cast(pa.string()),
            ":",
        )
        keys = {f"{file}:{name}" for file, names in renamed.items() for name in names}
        stale[rows] |= _names_in(looked_up, keys)
    stale |= (reads.kind == ReadKind.NAME) & _names_in(reads.name, changed_names)
    stale |= (reads.kind == ReadKind.PATHS) & _names_in(reads.name, moved_paths)
    return stale


def _moved(
    old: CommitGraph, ids: NodeIds, directories: list[str], paths: list[str], now: Gathered
) -> tuple[I64, I64, I64, I64]:
    """Each old node's new node (by path; an entity moves with its file's block), each old
    file row's new row (-1: gone), and where each file's entities start, then and now."""
    n_dirs, old_dirs = len(directories), ids.n_dirs
    first, old_first = n_dirs + len(paths), len(ids.plain)
    new_row = _rows_in(ids.plain[old_dirs:], paths)
    node_map = np.full(old.n_nodes, -1, dtype=np.int64)
    node_map[:old_dirs] = _rows_in(ids.plain[:old_dirs], directories)
    node_map[old_dirs:old_first] = np.where(new_row >= 0, n_dirs + new_row, -1)
    old_bounds = np.searchsorted(ids.entity_path, np.arange(len(new_row) + 1))
    new_bounds = now.entity_bounds
    old_rows = ids.entity_path.astype(np.int64)
    offset = np.arange(old.n_nodes - old_first, dtype=np.int64) - old_bounds[old_rows]
    moved = first + new_bounds[np.maximum(new_row[old_rows], 0)] + offset
    node_map[old_first:] = np.where(new_row[old_rows] >= 0, moved, -1)
    return node_map, new_row, old_bounds, new_bounds


def _rows_in(values: list[str], among: list[str]) -> I64:
    """Each value's row in `among` (distinct strings), or -1."""
    found = pc.index_in(pa.array(values, pa.string()), value_set=pa.array(among, pa.string()))
    rows: I64 = found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return rows


def _same_grammar(
    before: list[str | None], after: list[str | None], new_row: I64
) -> npt.NDArray[np.bool_]:
    """Whether each old file row (still there at `new_row`) has the grammar it had."""
    encoded = pa.array(before + after, pa.string()).dictionary_encode()
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    kept = np.flatnonzero(new_row >= 0)
    same = np.zeros(len(new_row), dtype=bool)
    same[kept] = codes[kept] == codes[len(before) + new_row[kept]]
    return same


_Definitions = tuple[list[str], npt.NDArray[np.uint8], I64]


def _definitions(
    names: Sequence[str],
    types: npt.NDArray[np.uint8],
    parent: I64,
    first: int,
    block: range,
    *,
    entities: bool = False,
) -> _Definitions:
    """A file's definitions (a block of entity rows): names, types and parents in the block
    (-1: the file). `names` and `types` are of every node unless `entities`."""
    lo, hi = block.start, block.stop
    at = 0 if entities else first
    return (
        list(names[at + lo : at + hi]),
        types[at + lo : at + hi],
        _local(parent[lo:hi], first + lo),
    )


def _same(was: _Definitions, now: _Definitions) -> bool:
    return was[0] == now[0] and np.array_equal(was[1], now[1]) and np.array_equal(was[2], now[2])


def _names_changed(was: _Definitions, now: _Definitions) -> set[str]:
    """The names a file defines otherwise than before: more or fewer times, of another type,
    or at another depth (what a look across the commit at a name may see)."""
    before = Counter(zip(was[0], was[1].tolist(), (was[2] < 0).tolist(), strict=True))
    after = Counter(zip(now[0], now[1].tolist(), (now[2] < 0).tolist(), strict=True))
    return {name for name, _, _ in (before - after) + (after - before)}


def _renumber(node_map: I64, was: list[str], old_start: int, now: list[str], start: int) -> None:
    """A redefined file's old entities' new nodes, by id (`Name#k`) where they still exist."""
    node_map[old_start : old_start + len(was)] = -1
    by_id = {rank_id: old_start + i for i, rank_id in enumerate(_ranked(was))}
    for i, rank_id in enumerate(_ranked(now)):
        old = by_id.get(rank_id)
        if old is not None:
            node_map[old] = start + i


def _local(parent: I64, first: int) -> I64:
    """Parents as offsets in their file's block (-1: the file)."""
    return np.where(parent >= first, parent - first, -1)


def _ranked(names: list[str]) -> list[tuple[str, int]]:
    """Each of a file's entities as its name and its rank among those of that name (the
    entity ids of `NodeIds`, without the path)."""
    seen: dict[str, int] = {}
    ranked = []
    for name in names:
        rank = seen.get(name, 0)
        seen[name] = rank + 1
        ranked.append((name, rank))
    return ranked


def _names_in(names: pa.Array, wanted: set[str]) -> npt.NDArray[np.bool_]:
    if not wanted or not len(names):
        return np.zeros(len(names), dtype=bool)
    value_set = pa.array(sorted(wanted), pa.string())
    if pa.types.is_dictionary(names.type):
        # Looked up once per distinct name, then spread over the reads; a null (a file
        # read) reads the False past the dictionary's end.
        listed = pa.compute.is_in(names.dictionary, value_set=value_set)
        listed_np = np.append(listed.to_numpy(zero_copy_only=False), False)
        spread: npt.NDArray[np.bool_] = listed_np[
            names.indices.fill_null(len(names.dictionary)).to_numpy()
        ]
        return spread
    hits = pa.compute.is_in(names, value_set=value_set)
    found: npt.NDArray[np.bool_] = hits.fill_null(False).to_numpy(zero_copy_only=False)
    return found


def _remapped(state: ResolutionState, node_map: I64) -> ResolutionState:
    """The state in the new node numbering: files gone are left out, and nodes gone are -1."""

    reads = state.reads
    reader = node_map[reads.reader]
    live = np.flatnonzero(reader >= 0)
    if len(live) < len(reader):  # else every row stays: no copy of them all
        reads, reader = reads.take(live), reader[live]
    renumbered = ReadTable(
        reader=reader.astype(np.int32),
        phase=reads.phase,
        kind=reads.kind,
        node=np.where(reads.node >= 0, node_map[np.maximum(reads.node, 0)], -1).astype(np.int32),
        name=reads.name,
    )
    return ResolutionState(
        oids=state.oids,
        grammars=state.grammars,
        reads=renumbered,
        imports=state.imports.renumbered(node_map),
        bases=state.bases.renumbered(node_map),
    )
