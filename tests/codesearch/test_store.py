"""Tests of the trigram store: the mirror's stored indexes and the worker's cache over them."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pygit2
import pytest

from tests.support.gitrepos import commit, make_repo
from worker.cache import CacheLayout
from worker.codesearch.index import RowIndex
from worker.codesearch.matcher import compile_query
from worker.codesearch.store import CodeIndexCache, TrigramStore, index_commit, trigram_root

NAME = "acme/widgets"
MAX_BLOB = 1 << 20


@pytest.fixture
def layout(tmp_path: Path) -> CacheLayout:
    return CacheLayout(tmp_path / "cache")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[pygit2.Repository, str]:
    return make_repo(
        tmp_path / "repo",
        {"a.py": "alpha_function = 1\n", "b.py": "beta_function = 2\n", "c/d.py": "gamma = 3\n"},
    )


def paths_matching(index_paths: tuple[str, ...], rows: RowIndex) -> set[str]:
    return {index_paths[int(r)] for r in rows}


def test_the_mirror_stores_a_manifest_workers_map(
    layout: CacheLayout, repo: tuple[pygit2.Repository, str]
) -> None:
    """index_commit stores segments and a manifest; a worker opens it as a stored index."""
    git, head = repo
    result = index_commit(layout, NAME, git, head, max_blob_bytes=MAX_BLOB)
    assert (result.files, result.new_segments, result.rebuilt) == (3, 1, False)
    cache = CodeIndexCache(layout, lru_size=2, max_blob_bytes=MAX_BLOB, on_demand_bytes=1 << 20)
    assert cache.stored(NAME, head)
    index = cache.open(NAME, git, head, deadline=time.monotonic() + 30)
    assert index.source == "trigram"
    plan = compile_query("beta_function", regex=False, ignore_case=False, max_mem=1 << 20).plan
    assert paths_matching(index.paths, index.candidates(plan)) == {"b.py"}
    assert index_commit(layout, NAME, git, head, max_blob_bytes=MAX_BLOB).new_segments == 0


def test_a_revision_without_a_manifest_is_indexed_on_demand(
    layout: CacheLayout, repo: tuple[pygit2.Repository, str]
) -> None:
    """A worker builds the index of an unstored commit in memory, reusing stored segments."""
    git, head = repo
    index_commit(layout, NAME, git, head, max_blob_bytes=MAX_BLOB)
    newer = commit(git, {"b.py": "beta_function = 'changed'\n"})
    cache = CodeIndexCache(layout, lru_size=2, max_blob_bytes=MAX_BLOB, on_demand_bytes=1 << 20)
    index = cache.open(NAME, git, newer, deadline=time.monotonic() + 30)
    assert index.source == "on-demand"
    assert len(index.segments) == 2
    assert not cache.stored(NAME, newer)
    assert cache.open(NAME, git, newer, deadline=time.monotonic() + 30) is index


def test_a_manifest_for_another_blob_bound_is_not_used(
    layout: CacheLayout, repo: tuple[pygit2.Repository, str]
) -> None:
    """A worker whose max_blob_bytes differs from the mirror's builds its own index."""
    git, head = repo
    index_commit(layout, NAME, git, head, max_blob_bytes=MAX_BLOB)
    cache = CodeIndexCache(layout, lru_size=2, max_blob_bytes=10, on_demand_bytes=1 << 20)
    index = cache.open(NAME, git, head, deadline=time.monotonic() + 30)
    assert index.source == "on-demand"
    assert index.paths == ("c/d.py",)


def test_pruning_keeps_the_newest_manifests_and_their_segments(
    layout: CacheLayout, repo: tuple[pygit2.Repository, str]
) -> None:
    """After three syncs only the two newest manifests and the segments they name remain."""
    git, head = repo
    heads = [head]
    index_commit(layout, NAME, git, head, max_blob_bytes=MAX_BLOB)
    for n in range(2):
        heads.append(commit(git, {f"new{n}.py": f"fresh_{n} = True\n"}))
        index_commit(layout, NAME, git, heads[-1], max_blob_bytes=MAX_BLOB)
        for i, h in enumerate(heads):  # mtimes one second apart: order is unambiguous
            manifest = TrigramStore(trigram_root(layout, NAME)).manifest_path(h)
            if manifest.exists():
                os.utime(manifest, ns=(i * 10**9, i * 10**9))
    store = TrigramStore(trigram_root(layout, NAME))
    store.prune()
    assert [store.has_commit(h) for h in heads] == [False, True, True]
    segments = store.open_segments()
    assert store.open_commit(heads[1], segments, max_blob_bytes=MAX_BLOB) is not None
    assert store.open_commit(heads[2], segments, max_blob_bytes=MAX_BLOB) is not None
    assert len(segments) == 3


def test_a_fragmented_index_is_rebuilt_from_scratch(
    layout: CacheLayout, repo: tuple[pygit2.Repository, str]
) -> None:
    """When most indexed blobs are dead, the next commit's index is built anew."""
    git, head = repo
    index_commit(layout, NAME, git, head, max_blob_bytes=MAX_BLOB)
    shrunk = commit(git, {"b.py": None, "c/d.py": None})
    result = index_commit(layout, NAME, git, shrunk, max_blob_bytes=MAX_BLOB)
    assert result.rebuilt
    store = TrigramStore(trigram_root(layout, NAME))
    index = store.open_commit(shrunk, store.open_segments(), max_blob_bytes=MAX_BLOB)
    assert index is not None
    assert [len(s) for s in index.segments] == [1]
