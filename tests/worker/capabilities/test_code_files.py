"""Tests of code.read and code.list against real mirrored repositories (over NATS: test_tools)."""

from __future__ import annotations

import zlib
from pathlib import Path

import pygit2
import pytest

from contracts.code import CodeReadRequest
from tests.support.cache import MirroredCache, SourceFactory
from tests.support.gitrepos import signature
from worker.capabilities.code_files import CodeFiles
from worker.capabilities.table import Worker

REPO = "acme/sample"


def code_files(cache: MirroredCache) -> CodeFiles:
    return Worker(cache.config, cache.root).tools.files


def mirrored(cache: MirroredCache) -> pygit2.Repository:
    return pygit2.Repository(str(cache.root / "repos" / "acme" / "sample.git"))


def claim_size(repo: pygit2.Repository, blob: pygit2.Oid, size: int) -> None:
    """Rewrite loose object `blob` so its header says `size` bytes while it holds a few: the
    header reads, and any attempt to load the content fails."""
    path = Path(repo.path) / "objects" / str(blob)[:2] / str(blob)[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(f"blob {size}\0".encode() + b"a stand-in\n"))


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
    with pytest.raises(pygit2.GitError):
        _ = mirrored(cache)[blob].data

    answer = code_files(cache).read(
        CodeReadRequest(repo=REPO, path="huge.bin", revision=str(commit)), request_id="r1"
    )
    assert (answer.too_large, answer.size, answer.content) == (True, 60_000_000, None)
    assert (answer.blob, answer.license, answer.license_source) == (str(blob), "MIT", "LICENSE")
