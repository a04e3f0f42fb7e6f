"""Smoke run of the speed benchmark on a tiny pygit2 corpus: real mirror, NATS and workers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pygit2

from bench.corpora import EDITED_REF, PreparedCorpus
from bench.speed import render, run_corpus

FILES: dict[str, bytes] = {
    "src/auth.py": (
        b"def hash_password(password, salt):\n"
        b'    """Derive a key from the password with PBKDF2."""\n'
        b"    return pbkdf2(password, salt, iterations=600000)\n"
    ),
    "src/cache.c": (
        b"/* An LRU cache. */\n"
        b"struct lru_cache { int size; };\n\n"
        b"int lru_evict(struct lru_cache *cache)\n{\n\treturn cache->size--;\n}\n"
    ),
    "docs/readme.md": b"# Tiny\n\nHashes passwords and evicts cache entries.\n",
    "LICENSE": (
        b"MIT License\n\nCopyright (c) 2024 Tiny\n\n"
        b"Permission is hereby granted, free of charge, to any person obtaining a copy\n"
        b'of this software and associated documentation files (the "Software"), to deal\n'
        b"in the Software without restriction, including without limitation the rights\n"
        b"to use, copy, modify, merge, publish, distribute, sublicense, and/or sell\n"
        b"copies of the Software, and to permit persons to whom the Software is\n"
        b"furnished to do so, subject to the following conditions:\n\n"
        b"The above copyright notice and this permission notice shall be included in all\n"
        b"copies or substantial portions of the Software.\n\n"
        b'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR\n'
        b"IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,\n"
        b"FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE\n"
        b"AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER\n"
        b"LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,\n"
        b"OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE\n"
        b"SOFTWARE.\n"
    ),
}
QUERIES = ("where are passwords hashed", "how does the cache evict entries")


def _commit(
    repo: pygit2.Repository, ref: str, files: dict[str, bytes], parents: list[pygit2.Oid]
) -> str:
    index = pygit2.Index()
    for path, data in files.items():
        index.add(pygit2.IndexEntry(path, repo.create_blob(data), pygit2.enums.FileMode.BLOB))
    tree = index.write_tree(repo)
    sig = pygit2.Signature("bench", "bench@example.org", 1_700_000_000, 0)
    return str(repo.create_commit(ref, sig, sig, "tiny", tree, parents))


def tiny_corpus(root: Path) -> PreparedCorpus:
    repo = pygit2.init_repository(str(root / "tiny.git"), bare=True)
    base = _commit(repo, "refs/heads/main", FILES, [])
    # As the real corpora: the edited commit on a branch of its own, the head left at base.
    edited_files = {**FILES, "src/cache.c": FILES["src/cache.c"] + b"/* evicts oldest */\n"}
    edited = _commit(repo, EDITED_REF, edited_files, [pygit2.Oid(hex=base)])
    repo.set_head("refs/heads/main")
    return PreparedCorpus(
        name="tiny",
        version="1",
        path=Path(repo.path),
        base_commit=base,
        edited_commit=edited,
        files=len(FILES),
        source_bytes=sum(map(len, FILES.values())),
        prepare_seconds=0.0,
        reused=False,
    )


def test_speed_bench_measures_every_row_on_a_tiny_corpus(tmp_path: Path) -> None:
    """Builds (both ways, each timed five times), incremental index, latency, throughput, RSS
    and git grep are all measured, and the table prints a row for each."""
    figures = run_corpus(tiny_corpus(tmp_path), tmp_path / "work", 6, QUERIES)
    assert figures.index_seconds > 0
    # A short build is timed five times (the mirror's, then four from nothing): the median.
    assert len(figures.index_runs) == 5
    assert min(figures.index_runs) > 0
    assert figures.indexable_mb > 0
    assert figures.incremental_seconds > 0
    assert len(figures.latencies_ms) == 6
    assert min(figures.latencies_ms) > 0
    assert figures.artifacts_per_answer >= 1
    assert figures.throughput_1 > 0
    assert figures.throughput_2 > 0
    assert figures.rss["VmHWM"] > 0
    assert len(figures.git_grep_ms) == len(QUERIES)
    assert len(figures.ripgrep_ms) == (len(QUERIES) if shutil.which("rg") else 0)
    if figures.index_workers > 1:
        assert len(figures.one_process_runs) == 5
        assert figures.one_process_seconds > 0
    assert len(figures.core_scaling) == 5
    assert min(figures.core_scaling) > 0
    table = render([figures])
    assert ", median of 5: " in table
    for measure in (
        "cold index build, every view",
        "build MB/s (per core)",
        f"CPU loop, {figures.index_workers} processes at once",
        "build MB/s, one process (one core)",
        "incremental index (edited)",
        "query p50",
        "throughput, 2 workers",
        "worker peak RSS",
    ):
        assert f"tiny    {measure}" in table
