"""A commit's entity graph on disk, next to its view: published by the mirror, mapped by workers.

    <commit dir>/graph.json          {"format_version", "n_dirs", "n_files", "n_nodes", "n_edges"}
    <commit dir>/graph_nodes.arrow   name, type, path (dictionary), path_row (-1: directory),
                                     start_line, end_line       (node order)
    <commit dir>/graph_edges.arrow   source, target, relation   (by source, target, relation)

A graph is built from the commit's index (see `worker.index.views.graph`), so it is written
after the view it is of; readers without it build it themselves.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from worker.index.store.segment import FORMAT_VERSION, read_table, write_table
from worker.index.views.graph.model import CommitGraph, Edges, NodeIds

GRAPH_FILES = ("graph_nodes.arrow", "graph_edges.arrow", "graph.json")


def write_graph(commit_dir: Path, graph: CommitGraph) -> None:
    """Store a commit's graph in its directory; the JSON, written last, publishes it."""
    ids = graph.ids
    assert isinstance(ids, NodeIds)
    n_plain = len(ids.plain)
    path_row = np.full(graph.n_nodes, -1, dtype=np.int32)
    path_row[ids.n_dirs : n_plain] = np.arange(n_plain - ids.n_dirs, dtype=np.int32)
    path_row[n_plain:] = ids.entity_path.astype(np.int32)
    nodes = pa.table(
        {
            "name": pa.array(graph.names, pa.string()),
            "type": graph.types,
            "path": pa.array(graph.paths, pa.string()).dictionary_encode(),
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
    for name, table in (("graph_nodes.arrow", nodes), ("graph_edges.arrow", edges)):
        fd, tmp = tempfile.mkstemp(dir=commit_dir, prefix=f".{name}.")
        os.close(fd)
        write_table(Path(tmp), table)
        os.replace(tmp, commit_dir / name)
    meta: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "n_dirs": ids.n_dirs,
        "n_files": n_plain - ids.n_dirs,
        "n_nodes": graph.n_nodes,
        "n_edges": len(graph.edges.source),
    }
    fd, tmp = tempfile.mkstemp(dir=commit_dir, prefix=".graph.json.")
    with os.fdopen(fd, "w") as out:
        json.dump(meta, out)
    os.replace(tmp, commit_dir / "graph.json")


def read_graph(commit_dir: Path) -> CommitGraph | None:
    """The stored graph of a commit, or None when there is none of this format."""
    try:
        meta = json.loads((commit_dir / "graph.json").read_text())
    except (OSError, ValueError):
        return None
    if meta.get("format_version") != FORMAT_VERSION:
        return None
    nodes = read_table(commit_dir / "graph_nodes.arrow", whole=True)
    edges = read_table(commit_dir / "graph_edges.arrow", whole=True)
    n_dirs = int(meta["n_dirs"])
    names: list[str] = nodes.column("name").to_pylist()
    paths = _decoded(nodes.column("path"))
    path_row = nodes.column("path_row").to_numpy()
    n_plain = n_dirs + int(meta["n_files"])
    return CommitGraph(
        ids=NodeIds(paths[:n_plain], n_dirs, path_row[n_plain:].astype(np.int64), names[n_plain:]),
        names=names,
        types=nodes.column("type").to_numpy(),
        paths=paths,
        start_line=nodes.column("start_line").to_numpy(),
        end_line=nodes.column("end_line").to_numpy(),
        edges=Edges(
            source=edges.column("source").to_numpy(),
            target=edges.column("target").to_numpy(),
            relation=edges.column("relation").to_numpy(),
        ),
    )


def _decoded(column: pa.ChunkedArray) -> list[str]:
    """A dictionary-encoded column of strings as a list that shares one str per distinct value.

    Most nodes are entities whose path is their file's: a million paths of Linux's graph are
    eighty thousand strings, and `to_pylist` would make a million.
    """
    encoded = column.combine_chunks()  # `write_graph` dictionary-encodes the paths
    distinct: list[str] = encoded.dictionary.to_pylist()
    return [distinct[i] for i in encoded.indices.to_numpy(zero_copy_only=False).tolist()]
