"""Tests of the commit walk under git.history and git.churn."""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.gitrepos import commit, init_repo, signature
from worker.capabilities.history import walk_window


def test_commits_of_one_second_are_walked_children_first(tmp_path: Path) -> None:
    """Commits made in the same second (a script, a rebase) come newest first as `git log`
    lists them: none before a commit that has it as a parent, a merge before both sides."""
    repo = init_repo(tmp_path / "same-second")
    for n in range(12):
        commit(repo, {f"f{n}.txt": f"{n}\n"}, message=f"c{n}", tick=100)
    base = repo.references["refs/heads/main"].target
    repo.references.create("refs/heads/side", base)
    for n in range(4):
        commit(repo, {f"side{n}.txt": "s\n"}, message=f"s{n}", branch="side", tick=100)
        commit(repo, {f"main{n}.txt": "m\n"}, message=f"m{n}", tick=100)
    main = repo.references["refs/heads/main"].peel()
    side = repo.references["refs/heads/side"].peel()
    when = signature(100)
    merge = repo.create_commit(
        "refs/heads/main", when, when, "merge", main.tree.id, [main.id, side.id]
    )
    walked = list(walk_window(repo, str(merge), 0, time.monotonic() + 60, "test"))
    place = {c.id: i for i, c in enumerate(walked)}
    assert len(walked) == 12 + 8 + 1
    assert all(place[c.id] < place[p] for c in walked for p in c.parent_ids)
