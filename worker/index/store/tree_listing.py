"""The regular files of a commit's tree, and those that differ between two commits' trees.

Regular files only: links and submodules are not blobs to analyse. Paths are text as
`worker.repos.tree_paths` makes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, cast

import pygit2

from worker.repos.tree_paths import entry_name, path_text

_FILE_MODES: Final = (pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE)


def tree_blobs(repo: pygit2.Repository, commit: str) -> list[tuple[str, bytes]]:
    """(path, raw oid) of every regular file in the commit's tree (no links, no submodules)."""
    tree = repo[commit].peel(pygit2.Tree)
    out: list[tuple[str, bytes]] = []
    stack: list[tuple[str, pygit2.Tree]] = [("", tree)]
    while stack:
        prefix, node = stack.pop()
        for entry in node:
            mode = entry.filemode
            name = entry_name(entry)
            if mode == pygit2.enums.FileMode.TREE:
                stack.append((prefix + name + "/", cast(pygit2.Tree, repo[entry.id])))
            elif mode in _FILE_MODES:
                out.append((prefix + name, entry.id.raw))
    out.sort(key=lambda e: e[0])
    return out


@dataclass(frozen=True, slots=True)
class TreeChanges:
    """The regular files that differ between two trees."""

    gone: list[str]
    """Paths of the old tree's files that are not in the new one as they were."""
    came: list[tuple[str, bytes]]
    """(path, raw oid) of the new tree's files that are not in the old one as they are, in
    path order."""


def tree_changes(repo: pygit2.Repository, old: str, new: str) -> TreeChanges | None:
    """The files that differ from commit `old` to commit `new` (None if `old` is not in the
    repository); a changed file is gone and came, as are a file whose mode changed.

    libgit2 compares the trees by id and skips the subtrees they share: the cost is in what
    changed, not in the tree's size.
    """
    try:
        old_tree = repo[old].peel(pygit2.Tree)
    except (KeyError, ValueError):
        return None
    diff = old_tree.diff_to_tree(repo[new].peel(pygit2.Tree))
    gone: list[str] = []
    came: list[tuple[str, bytes]] = []
    for delta in diff.deltas:
        before, after = delta.old_file, delta.new_file
        if before.mode in _FILE_MODES:
            gone.append(path_text(before.raw_path))
        if after.mode in _FILE_MODES:
            came.append((path_text(after.raw_path), after.id.raw))
    came.sort(key=lambda e: e[0])
    return TreeChanges(gone, came)
