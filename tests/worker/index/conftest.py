"""Fixtures: real pygit2 repositories built from dicts of path -> bytes."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pygit2
import pytest

from worker.index import CommitIndex, IndexStore
from worker.index.store import build_workers
from worker.index.store.build_workers import BuildPool
from worker.index.store.index_store import build_in_memory
from worker.index.views.ranking import RankingParams

Files = Mapping[str, bytes | tuple[int, bytes]]
"""Each path's content, or its git file mode and content (a link's content is its target)."""


def _tree(repo: pygit2.Repository, files: Files) -> pygit2.Oid:
    nested: dict[str, object] = {}
    for path, data in files.items():
        node = nested
        *dirs, name = path.split("/")
        for d in dirs:
            node = node.setdefault(d, {})  # type: ignore[assignment]
        node[name] = data

    def write(node: dict[str, object]) -> pygit2.Oid:
        builder = repo.TreeBuilder()
        for name, value in sorted(node.items()):
            if isinstance(value, dict):
                builder.insert(name, write(value), pygit2.enums.FileMode.TREE)
            else:
                mode, data = (
                    value if isinstance(value, tuple) else (pygit2.enums.FileMode.BLOB, value)
                )
                assert isinstance(data, bytes)
                builder.insert(name, repo.create_blob(data), mode)
        return builder.write()

    return write(nested)


class RepoFactory:
    """Creates a bare repository and commits whole file sets to it."""

    def __init__(self, path: Path) -> None:
        self.repo = pygit2.init_repository(str(path), bare=True)
        self._parent: list[pygit2.Oid] = []

    def commit(self, files: Files, message: str = "commit") -> str:
        """Commit exactly `files` (a full snapshot) on main; returns the commit sha."""
        sig = pygit2.Signature("t", "t@example.com", 1_700_000_000 + len(self._parent), 0)
        oid = self.repo.create_commit(
            "refs/heads/main", sig, sig, message, _tree(self.repo, files), self._parent
        )
        self._parent = [oid]
        return str(oid)


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[str], RepoFactory]:
    """A factory of fresh bare repositories under tmp_path."""

    def make(name: str = "repo") -> RepoFactory:
        return RepoFactory(tmp_path / f"{name}.git")

    return make


def handler_files(n: int) -> dict[str, bytes]:
    """`n` small Python modules, one handler each: blobs enough for two build workers."""
    return {
        f"pkg/mod_{i:03d}.py": f"def handler_{i}(req):\n    return route_{i % 7}(req)\n".encode()
        for i in range(n)
    }


@pytest.fixture
def two_workers_on_small_repos(monkeypatch: pytest.MonkeyPatch) -> None:
    """Builds with two workers split from 400 bytes of blobs on, taking runs of 200 bytes."""
    from worker.index.store import build

    monkeypatch.setattr(build, "STEAL_BYTES", 200)


@pytest.fixture
def pools_handed(monkeypatch: pytest.MonkeyPatch) -> list[BuildPool]:
    """The pools builds get from `build_workers.build_pool`, in the order they get them."""
    handed: list[BuildPool] = []
    real_build_pool = build_workers.build_pool

    def recording_build_pool(workers: int) -> BuildPool:
        handed.append(real_build_pool(workers))
        return handed[-1]

    monkeypatch.setattr(build_workers, "build_pool", recording_build_pool)
    return handed


def open_commit_index(
    factory: RepoFactory, commit: str, tmp_path: Path, params: RankingParams | None = None
) -> CommitIndex:
    """The commit's index: opened from a store under tmp_path with the default ranking, or
    built in memory and ranked with `params`."""
    if params is None:
        store = IndexStore(tmp_path / "cache")
        return store.open("acme/pkg", factory.repo, commit, deadline=time.monotonic() + 60)
    segments, tables, _ = build_in_memory(
        factory.repo, commit, [], max_blob_bytes=1 << 20, check_deadline=lambda _d, _t: None
    )
    return CommitIndex(commit, segments, tables, params)
