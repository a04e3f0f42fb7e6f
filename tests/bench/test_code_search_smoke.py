"""Smoke run of the code search benchmark on a tiny corpus: real mirror, NATS, worker, cindex."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bench import code_search
from bench.code_search import Query, run
from tests.bench.test_speed_smoke import tiny_corpus


def test_code_search_bench_measures_both_sides_on_a_tiny_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every query is timed on repo-reader and csearch (finding the same lines), and the
    build beside cindex's."""
    if not (shutil.which("cindex") and shutil.which("csearch")) and os.environ.get("CI") != "true":
        pytest.skip("Debian's codesearch is not installed (.ci/run installs it)")
    queries = [
        Query("hash_password"),
        Query(r"int [a-z_]+\(", regex=True),
        Query("lru_evict", rare=True),
    ]
    monkeypatch.setitem(code_search.QUERIES, "tiny", queries)
    table = run(tiny_corpus(tmp_path), tmp_path / "work", runs=2)
    lines = table.splitlines()
    assert lines[0].startswith("tiny 1: 4 files")
    for query in queries:
        (row,) = [line for line in lines if line.startswith(query.label)]
        assert "1 hits of 1 lines" in row
        assert "csearch: 1 lines" in row
    (build,) = [line for line in lines if line.startswith("index build, every view")]
    assert "cindex" in build


def test_cindex_tree_is_read_through_once_without_following_links(tmp_path: Path) -> None:
    """Every regular file of the checkout is read before cindex runs; links are not followed."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.c").write_bytes(b"int a;\n")
    (tmp_path / "b.txt").write_bytes(b"x" * (3 << 20))
    (tmp_path / "link.c").symlink_to(tmp_path / "src" / "a.c")
    assert code_search.read_through(tmp_path) == 7 + (3 << 20)
