"""Smoke run of the index build benchmark's phase breakdown on a tiny repository."""

from __future__ import annotations

from pathlib import Path

from bench.index_build import bench_phases
from tests.support.gitrepos import make_repo


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
