"""Blobs read straight from pack files: the same bytes libgit2 reads, or left to it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pygit2

from tests.search.conftest import RepoFactory
from worker.search.build import blob_sources, tree_blobs
from worker.search.packs import read_packed

FILES = {
    "a.py": b"def a():\n    return 1\n" * 50,
    "b.c": b"int b(void) { return 2; }\n" * 40,
    "big.txt": b"x" * 5000,
    "empty.txt": b"",
    "same.py": b"def a():\n    return 1\n" * 50 + b"# one more line\n",
}


def packed_repo(make_repo: Callable[[str], RepoFactory]) -> tuple[pygit2.Repository, str]:
    """A repository whose objects are all in one pack (loose copies removed)."""
    factory = make_repo("packed")
    commit = factory.commit(FILES)
    repo = factory.repo
    repo.pack()
    objects = Path(repo.path) / "objects"
    for loose in objects.glob("[0-9a-f][0-9a-f]/*"):
        loose.unlink()
    return pygit2.Repository(repo.path), commit


def test_packed_blobs_equal_libgit2(make_repo: Callable[[str], RepoFactory]) -> None:
    """Each blob (whole or delta) reads as libgit2 reads it; oversized ones give their size."""
    repo, commit = packed_repo(make_repo)
    entries = tree_blobs(repo, commit)
    oids = [oid for _, oid in entries]
    read = list(read_packed(Path(repo.path) / "objects", oids, 1000))
    assert len(read) == len(oids)
    whole = 0
    for oid, (data, size) in zip(oids, read, strict=True):
        blob = repo[pygit2.Oid(raw=oid)].peel(pygit2.Blob)
        if data is None:
            continue
        whole += 1
        assert size == blob.size
        assert data == (blob.data if blob.size <= 1000 else b"")
    assert whole >= 3


def test_unpacked_objects_left_to_libgit2(make_repo: Callable[[str], RepoFactory]) -> None:
    """Loose objects (no pack at all) come back as None: libgit2 reads them."""
    factory = make_repo("loose")
    commit = factory.commit(FILES)
    oids = [oid for _, oid in tree_blobs(factory.repo, commit)]
    read = list(read_packed(Path(factory.repo.path) / "objects", oids, 1 << 20))
    assert read == [(None, -1)] * len(oids)


def test_blob_sources_same_with_and_without_packs(make_repo: Callable[[str], RepoFactory]) -> None:
    """The build's blob reader gives the same sources through the packs as through libgit2."""
    repo, commit = packed_repo(make_repo)
    items = tree_blobs(repo, commit)
    many = items * 100
    through_packs = list(blob_sources(repo, many, 1000))
    through_libgit2 = [
        s for i in range(0, len(many), 10) for s in blob_sources(repo, many[i : i + 10], 1000)
    ]
    assert [(s.oid, s.path, s.data, max(s.size, len(s.data))) for s in through_packs] == [
        (s.oid, s.path, s.data, max(s.size, len(s.data))) for s in through_libgit2
    ]
