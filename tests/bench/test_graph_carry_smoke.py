"""Smoke run of the carried-graph check down a small repository's history."""

from __future__ import annotations

from pathlib import Path

from bench.graph_carry import carry_history, main
from tests.support.gitrepos import commit, init_repo


def _history(path: Path) -> None:
    repo = init_repo(path)
    files = {f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(6)}
    files["pkg/use.py"] = "from pkg.m0 import f0\n\ndef g():\n    return f0()\n"
    commit(repo, files)
    commit(repo, {"pkg/m0.py": "def f0():\n    return 10\n\ndef h():\n    return 1\n"})
    commit(repo, {"pkg/m6.py": "from pkg.use import g\n\ndef k():\n    return g()\n"})


def test_each_commit_after_the_first_is_carried_and_checked(tmp_path: Path) -> None:
    """Every commit after the oldest is compared, none differs, and fewer files than all are
    resolved again."""
    _history(tmp_path / "repo")
    run = carry_history(tmp_path / "repo", 3, tmp_path / "work")
    assert run.commits == 2
    assert run.mismatches == []
    assert all(0 < share < 1 for share in run.resolved_share)


def test_the_command_exits_zero_when_every_graph_matches(tmp_path: Path) -> None:
    """`main` prints a row per repository and exits 0 with no mismatch."""
    _history(tmp_path / "repo")
    assert main([str(tmp_path / "repo"), "--commits", "3", "--work", str(tmp_path)]) == 0
