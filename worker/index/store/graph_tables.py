"""A commit's entity graph on disk, next to its view: published by the mirror, mapped by workers.

    <commit dir>/graph.json          {"format_version", "state", "n_dirs", "n_files", "n_nodes",
                                      "n_edges"}
    <commit dir>/graph_nodes.arrow   name, type, path (dictionary), path_row (-1: directory),
                                     start_line, end_line       (node order)
    <commit dir>/graph_edges.arrow   source, target, relation   (by source, target, relation)

and what resolving it read and made, for the build of a later commit to carry over (see
`worker.index.views.graph.carried`):

    <commit dir>/graph_files.arrow   oid, grammar                         (file rows)
    <commit dir>/graph_reads.arrow   reader, phase, kind, node, name
    <commit dir>/graph_imports.arrow file, what, name, node   (bindings, wildcards, namespaces)
    <commit dir>/graph_bases.arrow   file, class, base        (each class's bases in order)

A graph is built from the commit's index (see `worker.index.views.graph`); the mirror writes
it into the commit's directory before the directory is published (`GraphView`), so a commit
published by a sync has its graph. Readers of a commit without one build it themselves.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from worker.index.store.segment import FORMAT_VERSION, read_table, write_table
from worker.index.views.graph.build import GraphBuild, build_graph
from worker.index.views.graph.carried import Previous
from worker.index.views.graph.made import BaseRows, ImportRows
from worker.index.views.graph.model import (
    CommitGraph,
    Edges,
    Names,
    NodeIds,
    names_array,
)
from worker.index.views.graph.plan import ResolutionState
from worker.index.views.graph.reads import ReadTable, compacted, encoded
from worker.index.views.text import CommitIndex

STATE_FILES = ("graph_files.arrow", "graph_reads.arrow", "graph_imports.arrow", "graph_bases.arrow")
STATE_VERSION = 2
"""The version of the state stored (`"state"` in graph.json; none: no state). 2: a look
among another file's definitions is read by name, not as the whole file's (1, `true`).

Apart from the segments' FORMAT_VERSION because the state is derived per commit: a change
to it costs the next commit one whole graph build, not every blob's analysis again."""
GRAPH_FILES = ("graph_nodes.arrow", "graph_edges.arrow", *STATE_FILES, "graph.json")


class GraphView:
    """The entity graph as the mirror publishes it with a commit's index (a `DerivedView` of
    `worker.index.store.build`), carried over from the graph stored in `previous_dir`."""

    def __init__(self, previous_dir: Path | None = None) -> None:
        self.previous_dir = previous_dir
        self.built: GraphBuild | None = None
        """The last graph written (None before the first)."""
        self.seconds = 0.0
        """What making and writing the last one took."""

    def stored(self, commit_dir: Path) -> bool:
        """Whether the commit's graph and its state are stored, both of this format."""
        return graph_stored(commit_dir)

    def write(self, index: CommitIndex, staging: Path) -> None:
        """Build the graph of `index` and write it, with its state, into `staging`."""
        started = time.perf_counter()
        previous = None if self.previous_dir is None else read_carried(self.previous_dir)
        self.built = build_graph(index, previous)
        write_graph(staging, self.built.graph, self.built.state)
        self.seconds = time.perf_counter() - started


def write_graph(commit_dir: Path, graph: CommitGraph, state: ResolutionState | None = None) -> None:
    """Write a commit's graph (and the state resolving it left) into its directory, which
    readers must not see before it is done (see `GraphView`)."""
    ids = graph.ids
    assert isinstance(ids, NodeIds)
    n_plain = len(ids.plain)
    path_row = np.full(graph.n_nodes, -1, dtype=np.int32)
    path_row[ids.n_dirs : n_plain] = np.arange(n_plain - ids.n_dirs, dtype=np.int32)
    path_row[n_plain:] = ids.entity_path.astype(np.int32)
    # The paths dictionary-encoded as `dictionary_encode` would, without hashing a path per
    # node: the directories' and files' come first, in node order, and an entity's is its
    # file's.
    path_index = np.concatenate(
        [np.arange(n_plain, dtype=np.int32), ids.n_dirs + path_row[n_plain:]]
    )
    nodes = pa.table(
        {
            "name": names_array(graph.names),
            "type": graph.types,
            "path": pa.DictionaryArray.from_arrays(path_index, pa.array(ids.plain, pa.string())),
            "path_row": path_row,
            "start_line": graph.start_line,
            "end_line": graph.end_line,
        }
    )
    edges = pa.table(
        {
            "source": graph.edges.source,
            "target": graph.edges.target,
            "relation": graph.edges.relation,
        }
    )
    tables = [("graph_nodes.arrow", nodes, True), ("graph_edges.arrow", edges, True)]
    if state is not None:
        # Not flushed: a state lost to a crash costs the next commit a whole build, no more.
        tables += [(n, t, False) for n, t in zip(STATE_FILES, _state_tables(state), strict=True)]
    for name, table, flush in tables:
        write_table(commit_dir / name, table, flush=flush)
    meta: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "state": STATE_VERSION if state is not None else None,
        "n_dirs": ids.n_dirs,
        "n_files": n_plain - ids.n_dirs,
        "n_nodes": graph.n_nodes,
        "n_edges": len(graph.edges.source),
    }
    (commit_dir / "graph.json").write_text(json.dumps(meta))


def _stored_meta(commit_dir: Path) -> dict[str, Any] | None:
    """The `graph.json` of a commit's stored graph of this format, or None."""
    try:
        meta: dict[str, Any] = json.loads((commit_dir / "graph.json").read_text())
    except (OSError, ValueError):
        return None
    return meta if meta.get("format_version") == FORMAT_VERSION else None


def graph_stored(commit_dir: Path) -> bool:
    """Whether a commit's graph and its state are stored, both of this format."""
    meta = _stored_meta(commit_dir)
    return meta is not None and meta.get("state") == STATE_VERSION


def read_graph(commit_dir: Path) -> CommitGraph | None:
    """The stored graph of a commit, or None when there is none of this format."""
    meta = _stored_meta(commit_dir)
    if meta is None:
        return None
    nodes = read_table(commit_dir / "graph_nodes.arrow", whole=True)
    edges = read_table(commit_dir / "graph_edges.arrow", whole=True)
    n_dirs = int(meta["n_dirs"])
    names = Names(nodes.column("name").combine_chunks())
    n_plain = n_dirs + int(meta["n_files"])
    plain = _decoded(nodes.column("path").slice(0, n_plain))
    entity_path = nodes.column("path_row").to_numpy()[n_plain:].astype(np.int64)
    ids = NodeIds(plain, n_dirs, entity_path, names)
    return CommitGraph(
        ids=ids,
        names=names,
        types=nodes.column("type").to_numpy(),
        paths=ids.paths,
        start_line=nodes.column("start_line").to_numpy(),
        end_line=nodes.column("end_line").to_numpy(),
        edges=Edges(
            source=edges.column("source").to_numpy(),
            target=edges.column("target").to_numpy(),
            relation=edges.column("relation").to_numpy(),
        ),
    )


def _decoded(column: pa.ChunkedArray) -> list[str]:
    """A dictionary-encoded column of strings (`write_graph` encodes the paths) as a list."""
    encoded = column.combine_chunks()
    distinct = np.asarray(encoded.dictionary.to_pylist(), dtype=object)
    # Taken as an array of references, in C, then listed: not a Python loop per row.
    paths: list[str] = distinct[encoded.indices.to_numpy(zero_copy_only=False)].tolist()
    return paths


def _state_tables(state: ResolutionState) -> list[pa.Table]:
    files = pa.table(
        {
            "oid": pa.FixedSizeBinaryArray.from_buffers(
                pa.binary(20), len(state.oids), [None, pa.py_buffer(state.oids.tobytes())]
            ),
            "grammar": pa.array(state.grammars, pa.string()).dictionary_encode(),
        }
    )
    reads = state.reads
    read_rows = pa.table(
        {
            "reader": reads.reader,
            "phase": reads.phase,
            "kind": reads.kind,
            "node": reads.node,
            "name": compacted(encoded(reads.name)),
        }
    )
    return [files, read_rows, state.imports.table, state.bases.table]


def read_graph_state(commit_dir: Path) -> ResolutionState | None:
    """The state resolving a commit's stored graph left, or None when none was stored."""
    if not graph_stored(commit_dir):
        return None
    try:
        files, reads, imports, bases = (
            read_table(commit_dir / name, whole=True) for name in STATE_FILES
        )
    except (OSError, pa.ArrowInvalid):
        return None  # not written whole (see `write_graph`): the next build is whole

    oid_column = files.column("oid").combine_chunks()
    oids = np.frombuffer(oid_column.buffers()[1], dtype=np.uint8)[
        oid_column.offset * 20 : (oid_column.offset + len(oid_column)) * 20
    ].reshape(-1, 20)
    return ResolutionState(
        oids=oids,
        grammars=files.column("grammar").to_pylist(),
        reads=ReadTable(
            reader=reads.column("reader").to_numpy(),
            phase=reads.column("phase").to_numpy(),
            kind=reads.column("kind").to_numpy(),
            node=reads.column("node").to_numpy(),
            name=encoded(reads.column("name").combine_chunks()),
        ),
        imports=ImportRows(imports),
        bases=BaseRows(bases),
    )


def read_carried(commit_dir: Path) -> Previous | None:
    """A commit's stored graph with the state resolving it left (for another commit's build
    to carry over), or None when either is missing."""
    graph, state = read_graph(commit_dir), read_graph_state(commit_dir)
    return None if graph is None or state is None else Previous(graph, state)
