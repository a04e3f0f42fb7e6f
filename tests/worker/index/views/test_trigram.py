"""Tests of the trigram view: which files are searchable, candidates, reuse of segments."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pygit2
import pytest
import re2

from tests.support.gitrepos import Content, Symlink, commit, make_repo
from worker.capabilities.code_search.matcher import compile_query
from worker.errors import Timeout
from worker.index import IndexStore, build_commit_index
from worker.index.views.priors import file_prior
from worker.index.views.trigram import TrigramView

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
NAME = "acme/widgets"


@pytest.fixture
def repo(tmp_path: Path) -> tuple[pygit2.Repository, str]:
    return make_repo(tmp_path / "repo", FILES)


@pytest.fixture
def store(tmp_path: Path) -> IndexStore:
    return IndexStore(tmp_path / "cache", max_blob_bytes=MAX_BLOB)


def view(store: IndexStore, repo: pygit2.Repository, head: str) -> TrigramView:
    return TrigramView(store.open(NAME, repo, head, deadline=time.monotonic() + 30))


def matching(repo: pygit2.Repository, index: TrigramView, pattern: str) -> set[str]:
    found = set()
    for row, path in enumerate(index.paths):
        blob = repo[pygit2.Oid(raw=index.oid(row))]
        assert isinstance(blob, pygit2.Blob)
        if re2.search(pattern.encode(), blob.data):
            found.add(path)
    return found


def candidates(index: TrigramView, query: str, *, regex: bool = False) -> set[str]:
    compiled = compile_query(query, regex=regex, ignore_case=False, max_mem=1 << 20)
    return {index.paths[int(r)] for r in index.candidates(compiled.plan)}


def test_only_small_text_regular_files_are_searchable(
    store: IndexStore, repo: tuple[pygit2.Repository, str]
) -> None:
    """Binary files, blobs above max_blob_bytes and symlinks are not in the view."""
    index = view(store, *repo)
    assert index.paths == ("copy/app.py", "docs/guide.md", "src/app.py", "src/routes.py")
    assert index.source == "on-demand"


def test_candidates_cover_every_matching_file(
    store: IndexStore, repo: tuple[pygit2.Repository, str]
) -> None:
    """The index never rules out a file that matches, and rules out the others."""
    index = view(store, *repo)
    assert candidates(index, "handle_request") == {"copy/app.py", "docs/guide.md", "src/app.py"}
    assert candidates(index, "ROUTES[") == {"src/routes.py"}
    assert candidates(index, "HANDLE_request") == candidates(index, "handle_request")
    assert candidates(index, "nowhere_at_all") == set()
    for pattern in ("def \\w+\\(request\\)", "(?i)routes", "handle_(request|route)", "re.uest"):
        assert matching(repo[0], index, pattern) <= candidates(index, pattern, regex=True)


def test_identical_blobs_are_candidates_at_every_path(
    store: IndexStore, repo: tuple[pygit2.Repository, str]
) -> None:
    """Two paths with the same content share one analysed blob and are both found."""
    index = view(store, *repo)
    a, b = index.paths.index("copy/app.py"), index.paths.index("src/app.py")
    assert index.oid(a) == index.oid(b)
    assert {"copy/app.py", "src/app.py"} <= candidates(index, "route(request)")


def test_a_stored_index_serves_the_view_and_a_new_commit_reuses_its_segments(
    tmp_path: Path, store: IndexStore, repo: tuple[pygit2.Repository, str]
) -> None:
    """The mirror's stored index is the view's source; a later commit analyses one blob."""
    git, head = repo
    build_commit_index(tmp_path / "cache", NAME, git, head, max_blob_bytes=MAX_BLOB)
    first = view(store, git, head)
    assert first.source == "stored"
    second_head = commit(git, {"src/routes.py": "ROUTES = {'/': 'home'}\n"}, message="routes")
    analysed = store.blobs_analysed
    second = view(store, git, second_head)
    assert store.blobs_analysed - analysed == 1
    assert second.source == "on-demand"
    assert candidates(second, "home") == {"src/routes.py"}
    assert candidates(first, "home") == set()


def test_a_build_past_its_deadline_times_out(
    store: IndexStore, repo: tuple[pygit2.Repository, str]
) -> None:
    """Building an unstored revision stops with TIMEOUT once the deadline has passed."""
    git, head = repo
    with pytest.raises(Timeout):
        store.open(NAME, git, head, deadline=time.monotonic() - 1)


def test_a_views_priors_are_each_paths_file_prior(
    store: IndexStore, repo: tuple[pygit2.Repository, str]
) -> None:
    """The view's priors of any set of candidate rows equal file_prior's of their paths."""
    index = view(store, *repo)
    rows = np.arange(len(index), dtype=np.int64)
    for needle in (None, "app", "ro", "guide"):
        for picked in (rows[::2], rows):
            expected = [file_prior(index.paths[int(r)], needle) for r in picked]
            assert index.priors(picked, needle).tolist() == expected
