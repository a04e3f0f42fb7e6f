"""Tests of commit indexes: which files are searchable, candidates, reuse of segments, budgets."""

from __future__ import annotations

import time
from pathlib import Path

import pygit2
import pytest
import re2

from tests.support.gitrepos import Content, Symlink, commit, make_repo
from worker.codesearch.index import BlobCatalog, CommitIndex, build_commit_index
from worker.codesearch.matcher import compile_query
from worker.errors import Timeout

FILES: dict[str, Content] = {
    "src/app.py": "def handle_request(request):\n    return route(request)\n",
    "src/routes.py": "ROUTES = {}\n\ndef route(request):\n    return ROUTES[request.path]\n",
    "docs/guide.md": "# Guide\n\nCall handle_request for every request.\n",
    "assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binary handle_request",
    "big.txt": "handle_request " * 100,
    "link.py": Symlink("src/app.py"),
    "copy/app.py": "def handle_request(request):\n    return route(request)\n",
}
MAX_BLOB = 1000


@pytest.fixture
def repo(tmp_path: Path) -> tuple[pygit2.Repository, str]:
    return make_repo(tmp_path / "repo", FILES)


def build(
    repo: pygit2.Repository,
    head: str,
    *,
    budget_bytes: int | None = None,
    deadline: float | None = None,
) -> CommitIndex:
    index, _ = build_commit_index(
        repo,
        head,
        catalog=BlobCatalog(),
        max_blob_bytes=MAX_BLOB,
        source="test",
        budget_bytes=budget_bytes,
        deadline=deadline,
    )
    return index


def matching(repo: pygit2.Repository, index: CommitIndex, pattern: str) -> set[str]:
    found = set()
    for row, path in enumerate(index.paths):
        blob = repo[index.blob_hex(row)]
        assert isinstance(blob, pygit2.Blob)
        if re2.search(pattern.encode(), blob.data):
            found.add(path)
    return found


def candidates(index: CommitIndex, query: str, *, regex: bool = False) -> set[str]:
    compiled = compile_query(query, regex=regex, ignore_case=False, max_mem=1 << 20)
    return {index.paths[int(r)] for r in index.candidates(compiled.plan)}


def test_only_small_text_regular_files_are_searchable(repo: tuple[pygit2.Repository, str]) -> None:
    """Binary files, blobs above max_blob_bytes and symlinks are not in the index."""
    index = build(*repo)
    assert index.paths == ("copy/app.py", "docs/guide.md", "src/app.py", "src/routes.py")
    assert index.unindexed == 0


def test_candidates_cover_every_matching_file(repo: tuple[pygit2.Repository, str]) -> None:
    """The index never rules out a file that matches, and rules out the others."""
    index = build(*repo)
    assert candidates(index, "handle_request") == {"copy/app.py", "docs/guide.md", "src/app.py"}
    assert candidates(index, "ROUTES[") == {"src/routes.py"}
    assert candidates(index, "nowhere_at_all") == set()
    for pattern in ("def \\w+\\(request\\)", "(?i)routes", "handle_(request|route)", "re.uest"):
        assert matching(repo[0], index, pattern) <= candidates(index, pattern, regex=True)


def test_identical_blobs_share_one_indexed_copy(repo: tuple[pygit2.Repository, str]) -> None:
    """Two paths with the same content point at the same segment row."""
    index = build(*repo)
    a, b = index.paths.index("copy/app.py"), index.paths.index("src/app.py")
    assert index.blob_hex(a) == index.blob_hex(b)
    assert (index.segment[a], index.ordinal[a]) == (index.segment[b], index.ordinal[b])


def test_a_new_commit_indexes_only_its_new_blobs(repo: tuple[pygit2.Repository, str]) -> None:
    """With the first commit's segments known, the next commit builds one blob's segment."""
    git, head = repo
    first, segments = build_commit_index(
        git, head, catalog=BlobCatalog(), max_blob_bytes=MAX_BLOB, source="test"
    )
    second_head = commit(git, {"src/routes.py": "ROUTES = {'/': 'home'}\n"}, message="routes")
    second, new = build_commit_index(
        git, second_head, catalog=BlobCatalog(segments), max_blob_bytes=MAX_BLOB, source="test"
    )
    assert len(new) == 1
    assert len(new[0]) == 1
    assert len(second.segments) == 2
    assert candidates(second, "home") == {"src/routes.py"}
    assert candidates(first, "home") == set()


def test_blobs_past_the_budget_stay_unindexed_but_searchable(
    repo: tuple[pygit2.Repository, str],
) -> None:
    """An on-demand build over budget leaves blobs unindexed; they are always candidates."""
    index = build(*repo, budget_bytes=60)
    assert 0 < index.unindexed < len(index)
    assert candidates(index, "handle_request") >= {"copy/app.py", "docs/guide.md", "src/app.py"}
    unindexed = {index.paths[i] for i in range(len(index)) if index.segment[i] < 0}
    assert unindexed <= candidates(index, "nowhere_at_all")


def test_a_build_past_its_deadline_times_out(repo: tuple[pygit2.Repository, str]) -> None:
    """Indexing stops with TIMEOUT once the request's deadline has passed."""
    with pytest.raises(Timeout):
        build(*repo, deadline=time.monotonic() - 1)
