"""A commit's regular files, and those that differ between two commits."""

from __future__ import annotations

from collections.abc import Callable

import pygit2

from tests.worker.index.conftest import RepoFactory
from worker.index.store.tree_listing import tree_blobs, tree_changes

LINK, EXECUTABLE = pygit2.enums.FileMode.LINK, pygit2.enums.FileMode.BLOB_EXECUTABLE


def test_changes_are_the_files_that_differ(make_repo: Callable[[str], RepoFactory]) -> None:
    """A changed file and one whose mode changed are gone and came; a file that became a link
    is gone, one that became a file came; what both trees share is not listed."""
    factory = make_repo("changes")
    old = factory.commit(
        {"a/same.py": b"x", "a/edit.py": b"1", "run": b"go", "ln": b"t", "tool": (LINK, b"run")}
    )
    new = factory.commit(
        {"a/same.py": b"x", "a/edit.py": b"2", "run": (EXECUTABLE, b"go"), "ln": (LINK, b"t")}
        | {"tool": b"now a file", "b/new.py": b"n"}
    )
    changes = tree_changes(factory.repo, old, new)
    assert changes is not None
    assert sorted(changes.gone) == ["a/edit.py", "ln", "run"]
    after = dict(tree_blobs(factory.repo, new))
    assert changes.came == [(p, after[p]) for p in ("a/edit.py", "b/new.py", "run", "tool")]
    assert tree_changes(factory.repo, new, new) == type(changes)([], [])


def test_no_changes_from_a_commit_the_repository_lacks(
    make_repo: Callable[[str], RepoFactory],
) -> None:
    """A stored commit gone from the repository gives no changes to carry from."""
    factory = make_repo("lacks")
    commit = factory.commit({"f.py": b"x"})
    assert tree_changes(factory.repo, "0" * 40, commit) is None
    assert tree_changes(factory.repo, "not a commit", commit) is None
