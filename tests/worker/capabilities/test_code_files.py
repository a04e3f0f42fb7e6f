"""Tests of code.read and code.list against real mirrored repositories (over NATS: test_tools)."""

from __future__ import annotations

import time

import pygit2
import pytest

from contracts.code import CodeListRequest, CodeReadRequest, CodeSearchRequest
from tests.support.cache import MirroredCache, SourceFactory
from tests.support.gitrepos import (
    MIT_LICENSE,
    hashing_every_read,
    rewrite_loose_object,
    signature,
)
from worker.capabilities.code_files import CodeFiles
from worker.capabilities.table import Worker

REPO = "acme/sample"


def code_files(cache: MirroredCache) -> CodeFiles:
    return Worker(cache.config, cache.root).files


def mirrored(cache: MirroredCache) -> pygit2.Repository:
    return pygit2.Repository(str(cache.root / "repos" / "acme" / "sample.git"))


def claim_size(repo: pygit2.Repository, blob: pygit2.Oid, size: int) -> None:
    """Rewrite loose object `blob` so its header says `size` bytes while it holds a few: the
    header reads, and any attempt to load the content fails while objects are hashed on
    reading (see `hashing_every_read`)."""
    rewrite_loose_object(repo, blob, f"blob {size}\0".encode() + b"a stand-in\n")


def test_a_blob_above_the_bound_is_judged_by_its_header_never_loaded(
    cache: MirroredCache, make_source: SourceFactory
) -> None:
    """A 60 MB blob gives metadata only, from its object header: its content is never loaded."""
    source, _ = make_source("sample")
    head = cache.add(REPO, source)
    repo = mirrored(cache)
    blob = repo.create_blob(b"a stand-in\n")
    tree = repo.TreeBuilder(repo[head].peel(pygit2.Commit).tree)
    tree.insert("huge.bin", blob, pygit2.enums.FileMode.BLOB)
    when = signature()
    commit = repo.create_commit(None, when, when, "a huge file", tree.write(), [head])
    claim_size(repo, blob, 60_000_000)
    files = code_files(cache)
    with hashing_every_read():
        with pytest.raises(pygit2.GitError):
            _ = mirrored(cache)[blob].data
        answer = files.read(
            CodeReadRequest(repo=REPO, path="huge.bin", revision=str(commit)), request_id="r1"
        )
    assert (answer.too_large, answer.size, answer.content) == (True, 60_000_000, None)
    assert (answer.blob, answer.license, answer.license_source) == (str(blob), "MIT", "LICENSE")


ODD_NAMES = ("tab\there.txt", "new\nline.txt", "back\\slash.txt", "bell\x07.txt")


def test_every_name_the_tree_holds_can_be_listed_searched_and_read(
    cache: MirroredCache, make_source: SourceFactory
) -> None:
    """Names with a tab, a line break, a backslash or another control character are readable."""
    files = {f"odd/{name}": f"odd_marker in {name!r}\n" for name in ODD_NAMES}
    source, _ = make_source("sample", {"LICENSE": MIT_LICENSE, **files})
    cache.add(REPO, source)
    worker = Worker(cache.config, cache.root)
    listed = worker.files.list(
        CodeListRequest(repo=REPO, path="odd"), request_id="r1", deadline=time.monotonic() + 30
    )
    assert {e.path for e in listed.entries} == set(files)
    found = worker.code_search.search(
        CodeSearchRequest(repo=REPO, query="odd_marker"), deadline=time.monotonic() + 30
    )
    assert {h.path for h in found.hits} == set(files)
    for path, content in files.items():
        answer = worker.files.read(CodeReadRequest(repo=REPO, path=path), request_id="r2")
        assert (answer.path, answer.content) == (path, content.rstrip("\n"))
