"""Blobs read straight from pack files: the same bytes libgit2 reads, or left to it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pygit2

from tests.worker.index.conftest import RepoFactory
from worker.index.store.build import _work_weights, blob_sources, tree_blobs
from worker.index.store.packs import PackedObjects, read_packed

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


def test_blob_sizes_from_pack_headers(make_repo: Callable[[str], RepoFactory]) -> None:
    """A whole packed blob's size is read from its header; a delta or an unknown id is -1."""
    repo, commit = packed_repo(make_repo)
    oids = [oid for _, oid in tree_blobs(repo, commit)]
    with PackedObjects(Path(repo.path) / "objects") as packs:
        sizes = packs.blob_sizes([*oids, b"\1" * 20]).tolist()
        whole = [data is not None for data, _ in packs.read(oids, 1 << 20)]
    assert sizes[-1] == -1
    for oid, size, is_whole in zip(oids, sizes[:-1], whole, strict=True):
        assert size == (repo[pygit2.Oid(raw=oid)].peel(pygit2.Blob).size if is_whole else -1)
    assert sum(whole) >= 3


def test_work_weights_are_blob_sizes(make_repo: Callable[[str], RepoFactory]) -> None:
    """A build weighs every blob (whole, delta or loose) by its size; an oversized one by 0."""
    repo, commit = packed_repo(make_repo)
    oids = [oid for _, oid in tree_blobs(repo, commit)]
    sizes = [repo[pygit2.Oid(raw=oid)].peel(pygit2.Blob).size for oid in oids]
    assert _work_weights(repo, oids, 1000) == [s if s <= 1000 else 0 for s in sizes]
    loose = make_repo("loose")
    loose_oids = [oid for _, oid in tree_blobs(loose.repo, loose.commit(FILES))]
    assert sorted(_work_weights(loose.repo, loose_oids, 1 << 20)) == sorted(
        len(data) for data in FILES.values()
    )
