"""The only writer of `refs/repo-reader/docs`: the docs engine's commits, inside the mirror.

Each write is one commit holding every current document (squashed: documents not written
again are carried over unchanged), its manifest in the commit message (see
`worker.docs.manifest`). Objects are written first and the ref moved last, compare-and-swap
(libgit2 locks the ref file and renames it into place), so a reader sees the previous commit
or the new one. The ref's history is kept to `[docs] history` commits: the oldest kept one is
made a root again and those after it re-parented, with their trees, messages and dates
unchanged.

Commits carry the head's committer time and a fixed identity, so the same head and the same
previous state give the same commit on every host. No worker module imports this one (a test
walks their imports).
"""

from __future__ import annotations

from typing import Final

import msgspec
import pygit2

from contracts.docs import DOCS_REF
from worker.docs.manifest import DocsManifest

ENGINE_NAME: Final = "repo-reader docs engine"
ENGINE_EMAIL: Final = "docs-engine@repo-reader.invalid"


def write_docs(
    repo: pygit2.Repository,
    *,
    files: dict[str, bytes],
    manifest: DocsManifest,
    summary: str,
    when: int,
    previous: str | None,
    keep: int,
) -> str:
    """Commit `files` (the whole docs tree) with `manifest` on the docs ref, on top of
    `previous` (the ref's commit the caller read), keeping at most `keep` commits; the new
    commit's id.

    Raises pygit2.GitError when the ref moved since `previous` was read.
    """
    tree = _tree(repo, files)
    signature = pygit2.Signature(ENGINE_NAME, ENGINE_EMAIL, when, 0)
    message = f"{summary}\n\n{msgspec.json.format(msgspec.json.encode(manifest)).decode()}\n"
    parents = _bounded_parents(repo, previous, keep)
    commit = repo.create_commit(None, signature, signature, message, tree, parents)
    if previous is None:
        repo.references.create(DOCS_REF, commit, force=False)
    else:
        ref = repo.references[DOCS_REF]
        if str(ref.target) != previous:
            raise pygit2.GitError(f"{DOCS_REF} moved while the documents were generated")
        ref.set_target(commit, message=summary)
    return str(commit)


def _tree(repo: pygit2.Repository, files: dict[str, bytes]) -> pygit2.Oid:
    """A tree of `files` ('/'-separated paths), written bottom up."""
    nested: dict[str, dict[str, bytes]] = {}
    top = repo.TreeBuilder()
    for path in sorted(files):
        directory, _, name = path.rpartition("/")
        if directory:
            nested.setdefault(directory, {})[name] = files[path]
        else:
            top.insert(name, repo.create_blob(files[path]), pygit2.enums.FileMode.BLOB)
    for directory, inside in sorted(nested.items()):
        top.insert(directory, _tree(repo, inside), pygit2.enums.FileMode.TREE)
    return top.write()


def _bounded_parents(repo: pygit2.Repository, previous: str | None, keep: int) -> list[pygit2.Oid]:
    """The parent of a new commit on top of `previous`, so the chain holds `keep` at most."""
    if previous is None or keep <= 1:
        return []
    chain: list[pygit2.Commit] = []
    current: pygit2.Commit | None = repo[previous].peel(pygit2.Commit)
    while current is not None and len(chain) < keep - 1:
        chain.append(current)
        current = current.parents[0] if current.parents else None
    if current is None:
        return [chain[0].id]
    parent: list[pygit2.Oid] = []
    for old in reversed(chain):
        parent = [
            repo.create_commit(None, old.author, old.committer, old.message, old.tree_id, parent)
        ]
    return parent
