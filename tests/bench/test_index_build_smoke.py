"""Smoke run of the index build benchmark's phase breakdown on a tiny repository."""

from __future__ import annotations

from pathlib import Path

from bench.index_build import bench_graph_carry, bench_phases
from tests.support.gitrepos import commit, init_repo, make_repo
from worker.index import build_commit_index


def test_phases_analyse_each_distinct_blob_once_and_account_for_the_whole_time(
    tmp_path: Path,
) -> None:
    """Every distinct blob of the commit is analysed once (one at two paths too), and no
    phase is counted twice: what is left over for "other" is never negative."""
    files = {
        "a.c": b"int lru_evict(void)\n{\n\treturn 0;\n}\n",
        "copy/a.c": b"int lru_evict(void)\n{\n\treturn 0;\n}\n",
        "b.py": b"def hash_password(pw):\n    return pw\n",
        "c.md": b"# Notes\n\nEvery line here is text.\n",
    }
    repo, commit = make_repo(tmp_path / "repo", files)

    result = bench_phases(Path(repo.path), commit)

    assert result["commit"] == commit
    assert result["blobs"] == len(set(files.values()))
    assert result["chunks"] >= 3
    phases = result["phase_seconds"]
    assert set(phases) >= {"read", "chunk", "tokens", "trigrams", "references", "postings"}
    assert all(seconds >= 0 for seconds in phases.values())


def test_phases_take_every_kth_blob(tmp_path: Path) -> None:
    """`every` keeps one blob in K of the commit's distinct blobs."""
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n".encode() for i in range(6)}
    repo, commit = make_repo(tmp_path / "repo", files)

    assert bench_phases(Path(repo.path), commit, every=3)["blobs"] == 2


def test_the_edited_commits_graph_is_carried_over_and_built_whole(tmp_path: Path) -> None:
    """The graph of an edited commit is timed both ways, checked to be the same, and only the
    files the edit may change are resolved again."""
    files = {f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(6)}
    files["pkg/use.py"] = "from pkg.m0 import f0\n\ndef g():\n    return f0()\n"
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, files)
    edited = commit(repo, {"pkg/m5.py": "def f5():\n    return 50\n"})
    cache = tmp_path / "cache"
    for sha in (base, edited):
        build_commit_index(cache, "bench/repo", repo, sha)

    carry = bench_graph_carry(cache, "bench/repo", repo, base, edited)

    assert carry.files == len(files)
    assert 0 < carry.resolved < carry.files
    assert carry.carried_seconds > 0
    assert carry.whole_seconds > 0
