"""Smoke run of the tokenizer benchmark on a tiny pygit2 corpus: both tokenizers, real builds."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from bench import plain_term_rows
from bench.tokenizer import differing_tables, run_corpus, table

LONG_TOKENS = b"token " + b"x" * 70 + b" " + b"deadbeef" * 8 + b" " + b"f" * 64 + b"\n"
"""Runs past MAX_TOKEN_CHARS (no token), one of exactly 64 (a token)."""
FILES: dict[str, bytes] = {
    "src/httpClient/getUserName.py": (
        b"class HTTPResponseParser:\n"
        b'    """Parses the rotations of getHTTPResponse_v2 and get_user_name."""\n\n'
        b"    def parse_URLs(self, __dunder__, _private_, x, y2, 42, a1b2C3):\n"
        b"        return self.maxRetries + MAX_RETRIES + sha256_0123abc\n"
    ),
    "src/cache.c": (
        b"/* An LRU cache: evicts the least recently used entries. */\n"
        b"struct lru_cache { int size; };\n"
        b"static int lru_evict(struct lru_cache *cache) { return cache->size--; }\n"
    ),
    "docs/README.md": "# Naïve café\n\nThe runner runs; HTTPServer, XMLHttpRequest.\n".encode()
    + LONG_TOKENS,
    "data/latin1.txt": b"caf\xe9 \xff\xfe broken_utf8\xc3 words stay words\n",
    "empty.txt": b"",
}


def _tiny_corpus(root: Path) -> tuple[Path, str]:
    repo = pygit2.init_repository(str(root / "tiny.git"), bare=True)
    index = pygit2.Index()
    for path, data in FILES.items():
        index.add(pygit2.IndexEntry(path, repo.create_blob(data), pygit2.enums.FileMode.BLOB))
    sig = pygit2.Signature("bench", "bench@example.org", 1_700_000_000, 0)
    commit = repo.create_commit("refs/heads/main", sig, sig, "tiny", index.write_tree(repo), [])
    return Path(repo.path), str(commit)


def test_tokenizer_bench_times_both_builds_on_identical_tables(tmp_path: Path) -> None:
    """Both tokenizers give the same segment and path tables, each build is timed in turn
    (its fork server's workers using the same tokenizer), and the table has every row."""
    repo_path, commit = _tiny_corpus(tmp_path)
    figures = run_corpus(
        "tiny",
        repo_path,
        commit,
        workers=2,
        rounds=1,
        check_every=1,
        scratch=tmp_path,
        files=len(FILES),
    )
    assert figures.differing == []
    assert figures.checked_blobs == len(FILES)
    for runs in (figures.runs, figures.cpu_runs):
        assert [len(times) for times in runs.values()] == [1, 1]
        assert min(min(times) for times in runs.values()) > 0
        assert figures.ratio(runs) > 0
    assert len(figures.core_scaling) == 3
    rows = {" ".join(line.split()[1:4]): line for line in table(figures).splitlines()[2:]}
    assert "identical" in rows["segment + path"]
    for measure in ("files / MB", "whole cold build,", "CPU seconds of", "CPU loop, 2"):
        assert rows[measure].startswith("tiny ")
    assert "x (the twin stays at >= 1.5x)" in rows["whole cold build,"]


def test_a_tokenizer_that_differs_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain analysis that loses a term makes the terms and postings tables differ."""
    repo_path, commit = _tiny_corpus(tmp_path)
    analyse = plain_term_rows.analyze_tokens
    monkeypatch.setattr(
        plain_term_rows, "analyze_tokens", lambda words: [t[1:] for t in analyse(words)]
    )
    _, differing = differing_tables(pygit2.Repository(str(repo_path)), commit)
    assert {"terms", "postings", "view.path_terms"} <= set(differing)
