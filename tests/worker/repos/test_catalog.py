"""Tests of revision resolution and per-thread repository handles."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pygit2
import pytest

from tests.support.cache import SAMPLE_FILES, MirroredCache, SourceFactory
from tests.support.gitrepos import commit, hashing_every_read, init_repo, rewrite_loose_object
from worker.repos.catalog import RepoCatalog, resolve_revision


def test_resolve_revision(tmp_path: Path) -> None:
    """Branches, lightweight and annotated tags and sha prefixes resolve; anything else is None."""
    repo = init_repo(tmp_path / "r")
    first = commit(repo, SAMPLE_FILES)
    second = commit(repo, {"a.txt": "a"})
    repo.references.create("refs/tags/light", pygit2.Oid(hex=first))
    repo.create_tag(
        "heavy", pygit2.Oid(hex=first), pygit2.enums.ObjectType.COMMIT, repo.default_signature, "m"
    )
    assert resolve_revision(repo, "main") == second
    assert resolve_revision(repo, "light") == first
    assert resolve_revision(repo, "heavy") == first
    assert resolve_revision(repo, first) == first
    assert resolve_revision(repo, first[:8]) == first
    tree_id = str(repo[first].peel(pygit2.Commit).tree.id)
    for revision in ("nope", "0000000", tree_id, "main/../main", "-x"):
        assert resolve_revision(repo, revision) is None


def test_resolve_full_ref_names(tmp_path: Path) -> None:
    """Full names of branches, tags and the mirror's own refs resolve; other namespaces do not."""
    repo = init_repo(tmp_path / "r")
    first = commit(repo, SAMPLE_FILES)
    repo.references.create("refs/repo-reader/docs", pygit2.Oid(hex=first))
    repo.references.create("refs/notes/commits", pygit2.Oid(hex=first))
    assert resolve_revision(repo, "refs/repo-reader/docs") == first
    assert resolve_revision(repo, "refs/heads/main") == first
    for revision in ("refs/notes/commits", "refs/repo-reader/nope", "repo-reader/docs"):
        assert resolve_revision(repo, revision) is None


def test_each_thread_gets_its_own_handle(cache: MirroredCache, make_source: SourceFactory) -> None:
    """pygit2 handles are never shared between threads."""
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    catalog = RepoCatalog(cache.config, cache.mirror.layout)
    handles: list[pygit2.Repository] = []
    thread = threading.Thread(target=lambda: handles.append(catalog.open("acme/sample")))
    thread.start()
    thread.join()
    assert catalog.open("acme/sample") is catalog.open("acme/sample")
    assert handles[0] is not catalog.open("acme/sample")


def test_reads_the_cache_objects_without_hashing_them_again(
    cache: MirroredCache, make_source: SourceFactory
) -> None:
    """Once a catalog is made, the cache's objects are read as stored: their ids, computed by
    the mirror when it fetched them, are not checked again on every read."""
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    repo_dir = cache.mirror.layout.repo_dir("acme/sample")
    repo = pygit2.Repository(str(repo_dir))
    oid = repo.create_blob(b"as fetched\n")
    rewrite_loose_object(repo, oid, b"blob 11\x00as stored\n\n")
    with hashing_every_read():
        with pytest.raises(pygit2.GitError, match="hash mismatch"):
            pygit2.Repository(str(repo_dir)).odb.read(oid)
        catalog = RepoCatalog(cache.config, cache.mirror.layout)
        assert catalog.open("acme/sample").odb.read(oid)[1] == b"as stored\n\n"


@pytest.fixture
def libgit2_cache_restored() -> Iterator[None]:
    """libgit2's object cache settings as they are by default again after the test."""
    yield
    pygit2.settings.enable_caching(True)
    pygit2.settings.cache_max_size(256 << 20)
    pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.BLOB, 0)


@pytest.mark.usefixtures("libgit2_cache_restored")
@pytest.mark.parametrize(("cache_bytes", "read_again"), [(1 << 20, b"kept\n"), (0, b"gone\n")])
def test_keeps_the_blobs_it_reads_inflated(
    cache: MirroredCache, make_source: SourceFactory, cache_bytes: int, read_again: bytes
) -> None:
    """A blob a catalog's repository has read is read again from memory, not from the object
    store (rewritten in between here); with no object cache, from the store again."""
    source, _ = make_source("sample")
    cache.add("acme/sample", source)
    repo_dir = cache.mirror.layout.repo_dir("acme/sample")
    writer = pygit2.Repository(str(repo_dir))
    oid = writer.create_blob(b"kept\n")
    server = msgspec.structs.replace(cache.config.server, object_cache_bytes=cache_bytes)
    config = msgspec.structs.replace(cache.config, server=server)
    repo = RepoCatalog(config, cache.mirror.layout).open("acme/sample")
    assert repo.odb.read(oid)[1] == b"kept\n"
    rewrite_loose_object(writer, oid, b"blob 5\x00gone\n")
    assert repo.odb.read(oid)[1] == read_again


def test_head_pins_the_mirrored_default_head(
    cache: MirroredCache, make_source: SourceFactory
) -> None:
    """`HEAD` resolves as no revision does: to the head the mirror published, even when the
    branch has moved in the bare repository since."""
    source, published = make_source("sample")
    cache.add("acme/sample", source)
    catalog = RepoCatalog(cache.config, cache.mirror.layout)
    moved = commit(catalog.open("acme/sample"), {"later.txt": "later\n"})
    head = catalog.resolve("acme/sample", "HEAD")
    assert (head.commit, head.ref) == (published, "refs/heads/main")
    assert catalog.resolve("acme/sample", "main").commit == moved
