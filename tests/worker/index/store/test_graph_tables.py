"""A commit's graph stored beside its view reads back as the graph that was built."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from bench.graph_cases import PYTHON
from tests.support.gitrepos import commit, init_repo
from worker.index import IndexStore, build_commit_index
from worker.index.store.graph_tables import read_graph, read_graph_state, write_graph
from worker.index.views.graph.build import build_graph


def test_a_stored_graph_reads_back_identical(tmp_path: Path) -> None:
    """Ids, names, types, lines and edges survive the round trip; lookups by id agree."""
    repo = init_repo(tmp_path / "repo")
    head = commit(repo, PYTHON.files)
    commit_dir = build_commit_index(tmp_path / "cache", "a/b", repo, head)
    index = IndexStore(tmp_path / "cache").open("a/b", repo, head, deadline=time.monotonic() + 60)
    built = build_graph(index).graph
    assert read_graph(commit_dir) is None
    write_graph(commit_dir, built)
    stored = read_graph(commit_dir)
    assert stored is not None
    assert list(stored.ids) == list(built.ids)
    assert list(stored.names) == list(built.names)
    assert list(stored.paths) == list(built.paths)
    for name in ("types", "start_line", "end_line"):
        assert np.array_equal(getattr(stored, name), getattr(built, name))
    for name in ("source", "target", "relation"):
        assert np.array_equal(getattr(stored.edges, name), getattr(built.edges, name))
    for node_id in ("app", "app/core.py", "app/core.py:Engine.execute"):
        assert stored.node(node_id) == built.node(node_id) is not None


def test_the_state_resolving_left_reads_back_identical(tmp_path: Path) -> None:
    """Blob ids, grammars, reads, bindings and bases survive the round trip; a graph stored
    without its state, with one of another version, or with one cut short, has none to
    read."""
    repo = init_repo(tmp_path / "repo")
    head = commit(repo, PYTHON.files)
    commit_dir = build_commit_index(tmp_path / "cache", "a/b", repo, head)
    index = IndexStore(tmp_path / "cache").open("a/b", repo, head, deadline=time.monotonic() + 60)
    built = build_graph(index)
    write_graph(commit_dir, built.graph)
    assert read_graph_state(commit_dir) is None
    write_graph(commit_dir, built.graph, built.state)
    state = read_graph_state(commit_dir)
    assert state is not None
    assert np.array_equal(state.oids, built.state.oids)
    assert state.grammars == built.state.grammars
    assert state.imports.by_file() == built.state.imports.by_file()
    assert len(built.state.imports)  # the case binds names: the round trip is not of nothing
    assert state.bases.by_file() == built.state.bases.by_file()
    assert len(built.state.bases)
    for column in ("reader", "phase", "kind", "node"):
        assert np.array_equal(getattr(state.reads, column), getattr(built.state.reads, column))
    assert state.reads.name.to_pylist() == built.state.reads.name.to_pylist()
    # A state of another version (reads of whole files, `true`) is none to carry from.
    meta_path = commit_dir / "graph.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "state": True}))
    assert read_graph_state(commit_dir) is None
    meta_path.write_text(json.dumps(meta))
    assert read_graph_state(commit_dir) is not None
    # Written unflushed: one cut short by a crash is no state, not a wrong one.
    reads = commit_dir / "graph_reads.arrow"
    reads.write_bytes(reads.read_bytes()[:100])
    assert read_graph_state(commit_dir) is None
