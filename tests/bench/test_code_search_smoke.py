"""Smoke run of the code search benchmark on a tiny corpus: real mirror, NATS, worker, cindex."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from bench import code_search
from bench.code_search import Query, build_trigram_view, run
from tests.bench.test_speed_smoke import tiny_corpus
from tests.support.gitrepos import make_repo
from worker.index.analysis.trigrams import fold, trigrams_of
from worker.index.store.segment import read_table


def test_code_search_bench_measures_both_sides_on_a_tiny_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every query is timed on repo-reader and csearch (finding the same lines), the build
    beside cindex's, and the next commit's beside the whole build."""
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
    (graph,) = [line for line in lines if line.startswith("entity graph, after the build")]
    assert "mirroring indexes the commit in" in graph
    (after,) = [line for line in lines if line.startswith("next commit, 1 files changed")]
    assert "carried from the first commit's" in after
    (alone,) = [line for line in lines if line.startswith("trigram view alone")]
    assert "cindex" in alone


def test_trigram_view_alone_holds_each_distinct_blobs_trigrams_once(tmp_path: Path) -> None:
    """The parts built apart hold, together, every trigram of every distinct blob, each blob
    listed once under each of its trigrams (a blob at two paths too)."""
    files = {
        "a.c": b"int lru_evict(void)\n{\n\treturn 0;\n}\n",
        "copy/a.c": b"int lru_evict(void)\n{\n\treturn 0;\n}\n",
        "b.py": b"def Hash_Password(pw):\n    return pw\n",
        "c.md": b"# Notes\n",
    }
    repo, commit = make_repo(tmp_path / "repo", files)

    seconds = build_trigram_view(Path(repo.path), commit, tmp_path / "view")

    assert seconds > 0
    expected = sorted(t for data in set(files.values()) for t in trigrams_of(fold(data)).tolist())
    found = []
    for part in sorted((tmp_path / "view").iterdir()):
        trigrams = read_table(part / "trigrams.arrow")
        counts = trigrams.column("count").to_numpy()
        found.extend(np.repeat(trigrams.column("trigram").to_numpy(), counts).tolist())
        assert len(read_table(part / "trigram_postings.arrow")) == counts.sum()
    assert sorted(found) == expected


def test_cindex_tree_is_read_through_once_without_following_links(tmp_path: Path) -> None:
    """Every regular file of the checkout is read before cindex runs; links are not followed."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.c").write_bytes(b"int a;\n")
    (tmp_path / "b.txt").write_bytes(b"x" * (3 << 20))
    (tmp_path / "link.c").symlink_to(tmp_path / "src" / "a.c")
    assert code_search.read_through(tmp_path) == 7 + (3 << 20)
