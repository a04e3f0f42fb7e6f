"""What an index build of a commit holds: seed 003's `rebuild_index` stats, and files left out.

Read back from the stored index the build just published: its graph (entities by type,
edges by relation) and the paths it could not index.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pygit2

from worker.index import IndexStore
from worker.index.store.tree_listing import tree_blobs

MAX_FILE_ERRORS: Final = 100


@dataclass(frozen=True, slots=True)
class IndexReport:
    """Counts of a commit's index and graph, and the files that are not in it."""

    files_indexed: int
    entities: dict[str, int]
    """By entity type: directory, file, class, function."""
    edges: dict[str, int]
    """By relation: contain, import, invoke, inherit."""
    graph_seconds: float
    file_errors: list[tuple[str, str]]
    """(path, why): text files larger than the server indexes, at most MAX_FILE_ERRORS."""


def index_report(
    cache_dir: Path, repo_id: str, repo: pygit2.Repository, commit: str, *, max_blob_bytes: int
) -> IndexReport:
    """Open the stored index of `commit` and its graph (built if none is stored), and count
    what both hold."""
    from worker.index.store.build import repo_index_dir
    from worker.index.store.graph_tables import read_graph
    from worker.index.views.graph.build import build_graph

    started = time.perf_counter()
    index = IndexStore(cache_dir).open(repo_id, repo, commit, deadline=time.monotonic() + 3600)
    graph = read_graph(repo_index_dir(cache_dir, repo_id) / "commits" / commit)
    if graph is None:
        graph = build_graph(index).graph
    entities, edges = graph.counts()
    indexed = set(index.path_column.to_pylist())
    errors: list[tuple[str, str]] = []
    for path, oid in tree_blobs(repo, commit):
        if path in indexed or len(errors) >= MAX_FILE_ERRORS:
            continue
        size = int(repo.odb.read_header(pygit2.Oid(raw=oid))[1])
        if size > max_blob_bytes:
            errors.append((path, f"not indexed: {size} bytes, above max_blob_bytes"))
    return IndexReport(
        files_indexed=len(indexed),
        entities=entities,
        edges=edges,
        graph_seconds=time.perf_counter() - started,
        file_errors=errors,
    )
