"""End-to-end smoke tests of the quality harness on a tiny pygit2 corpus, without downloads."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest

from bench.bm25_baseline import BM25Baseline
from bench.quality import (
    Case,
    CaseError,
    RepoAtCommit,
    evaluate,
    first_relevant_rank,
    load_cases,
    main,
    verify_cases,
)

TINY_FILES: dict[str, bytes] = {
    "src/auth.py": (
        b'"""Password hashing."""\n\n'
        b"def hash_password(password, salt):\n"
        b'    """Derive a key from the password with PBKDF2 and many iterations."""\n'
        b"    return pbkdf2(password, salt, iterations=600000)\n"
    ),
    "src/cache.py": (
        b'"""An in-memory cache."""\n\n'
        b"class LRUCache:\n"
        b'    """Evict the least recently used entry when the cache is full."""\n'
    ),
    "docs/readme.md": b"# Tiny\n\nA tiny project used to test the benchmark harness.\n",
    "assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00 password cache evict",
    "data/huge.txt": b"password salt pbkdf2 iterations evict cache\n" * 30_000,
}

TINY_CASES = """
corpus = "tiny"

[[case]]
id = "tiny-password"
style = "question"
query = "how are passwords hashed with a salt and pbkdf2 iterations?"
expected = ["src/auth.py"]

[[case]]
id = "tiny-eviction"
style = "feature"
query = "evict the least recently used entry when the cache is full"
expected = ["src/cache.py"]

[[case]]
id = "tiny-readme"
style = "question"
query = "what is this tiny project for?"
expected = ["docs/readme.md", "src/cache.py"]
"""


@pytest.fixture
def tiny_repo(tmp_path: Path) -> RepoAtCommit:
    """A bare repository with four small files (one binary) and one over 1 MiB, one commit."""
    repo = pygit2.init_repository(str(tmp_path / "tiny.git"), bare=True, initial_head="main")
    index = pygit2.Index()
    for path, data in TINY_FILES.items():
        index.add(pygit2.IndexEntry(path, repo.create_blob(data), pygit2.enums.FileMode.BLOB))
    signature = pygit2.Signature("t", "t@example.invalid", 1_700_000_000, 0)
    commit = repo.create_commit(
        "refs/heads/main", signature, signature, "tiny", index.write_tree(repo), []
    )
    return RepoAtCommit(path=tmp_path / "tiny.git", commit=str(commit))


@pytest.fixture
def tiny_cases(tmp_path: Path) -> Path:
    """A cases file with three cases over the tiny corpus."""
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_CASES)
    return path


class FixedRanking:
    """A system that returns a fixed ranking per case query, to test the metric arithmetic."""

    def __init__(self, rankings: dict[str, list[str]]) -> None:
        self.rankings = rankings

    def __call__(self, repo_path: Path, commit: str, query: str) -> list[str]:
        return self.rankings[query]


def test_metrics_for_a_known_ranking(tiny_repo: RepoAtCommit, tiny_cases: Path) -> None:
    """Acc@k and MRR follow from the first relevant distinct file of each ranking."""
    cases = load_cases([tiny_cases])
    password, eviction, readme = (case.query for case in cases)
    noise = [f"noise/{n}.py" for n in range(20)]
    system = FixedRanking(
        {
            # First relevant at rank 1.
            password: ["src/auth.py", *noise],
            # Repeated paths do not count: src/cache.py is the 7th distinct file.
            eviction: ["a", "a", "b", "c", "b", "d", "e", "f", "src/cache.py", "src/auth.py"],
            # Neither expected file within the depth of 10.
            readme: [*noise[:10], "docs/readme.md"],
        }
    )
    report = evaluate("fixed", system, cases, {"tiny": tiny_repo}, depth=10)
    assert [outcome.rank for outcome in report.outcomes] == [1, 7, None]
    assert report.overall.cases == 3
    assert report.overall.acc_at_1 == pytest.approx(1 / 3)
    assert report.overall.acc_at_5 == pytest.approx(1 / 3)
    assert report.overall.acc_at_10 == pytest.approx(2 / 3)
    assert report.overall.mrr == pytest.approx((1 + 1 / 7) / 3)
    assert report.by_style["feature"].acc_at_10 == 1.0
    assert report.by_style["question"].acc_at_10 == 0.5
    assert report.outcomes[1].top[:3] == ("a", "b", "c")


def test_first_relevant_rank_counts_distinct_files_and_any_expected() -> None:
    """Any expected file counts; duplicates of earlier files do not push ranks down."""
    assert first_relevant_rank(["x", "x", "y", "b"], ["a", "b"]) == 3
    assert first_relevant_rank(["x"], ["a"]) is None
    assert first_relevant_rank([], ["a"]) is None


def test_bm25_baseline_finds_the_answers(tiny_repo: RepoAtCommit, tiny_cases: Path) -> None:
    """The BM25 baseline ranks the obvious file first and never returns binary or huge files."""
    cases = load_cases([tiny_cases])
    baseline = BM25Baseline()
    report = evaluate("bm25", baseline, cases, {"tiny": tiny_repo})
    assert [outcome.rank for outcome in report.outcomes] == [1, 1, 1]
    assert report.overall.mrr == 1.0
    assert report.prepare_seconds.keys() == {"tiny"}
    returned = {path for outcome in report.outcomes for path in outcome.top}
    assert "assets/logo.png" not in returned
    assert "data/huge.txt" not in returned
    assert baseline(tiny_repo.path, tiny_repo.commit, "zyzzyva quux") == []


def test_cli_runs_end_to_end(tiny_repo: RepoAtCommit, tiny_cases: Path, tmp_path: Path) -> None:
    """The command line evaluates the baseline on a given repository and writes the figures."""
    out = tmp_path / "figures.json"
    code = main(
        [
            "--cases",
            str(tiny_cases),
            "--repo",
            f"tiny={tiny_repo.path}",
            "--system",
            "baseline",
            "--work",
            str(tmp_path / "unused-work"),
            "--json",
            str(out),
        ]
    )
    assert code == 0
    figures = json.loads(out.read_text())
    assert figures["corpora"]["tiny"]["commit"] == tiny_repo.commit
    baseline = figures["systems"]["bm25-baseline"]
    assert baseline["overall"] == {
        "cases": 3,
        "acc_at_1": 1.0,
        "acc_at_5": 1.0,
        "acc_at_10": 1.0,
        "mrr": 1.0,
    }
    assert [case["rank"] for case in baseline["cases"]] == [1, 1, 1]
    assert not (tmp_path / "unused-work").exists()


def test_cases_naming_missing_files_are_rejected(tiny_repo: RepoAtCommit) -> None:
    """A case whose expected path is not a file at the commit fails verification by name."""
    cases = [
        Case(id="ok", corpus="tiny", query="q", expected=("src/auth.py",), style="s"),
        Case(id="gone", corpus="tiny", query="q", expected=("src/nope.py",), style="s"),
        Case(id="dir", corpus="tiny", query="q", expected=("src",), style="s"),
    ]
    with pytest.raises(CaseError) as failure:
        verify_cases(cases, {"tiny": tiny_repo})
    message = str(failure.value)
    assert "gone: src/nope.py does not exist" in message
    assert "dir: src is not a file" in message
    assert "ok:" not in message


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        ('corpus = "t"\n[[case]]\nid = "a"\nquery = "q"\nexpected = ["x"]\ncolour = 1\n', "colour"),
        ('corpus = "t"\n[[case]]\nid = "a"\nquery = "q"\n', "missing ['expected']"),
        ('corpus = "t"\n[[case]]\nid = "a"\nquery = "q"\nexpected = []\n', "non-empty list"),
        ('[[case]]\nid = "a"\nquery = "q"\nexpected = ["x"]\n', "corpus"),
        (
            'corpus = "t"\n[[case]]\nid = "a"\nquery = "q"\nexpected = ["x"]\n'
            '[[case]]\nid = "a"\nquery = "r"\nexpected = ["y"]\n',
            "duplicate case id 'a'",
        ),
    ],
)
def test_malformed_case_files_are_rejected(tmp_path: Path, document: str, fragment: str) -> None:
    """Unknown keys, missing fields, empty expectations and duplicate ids are errors."""
    path = tmp_path / "bad.toml"
    path.write_text(document)
    with pytest.raises(CaseError) as failure:
        load_cases([path])
    assert fragment in str(failure.value)


def test_shipped_cases_cover_every_project() -> None:
    """The shipped case files load and hold at least 12 cases for each PyPI project."""
    cases = load_cases([Path(__file__).resolve().parents[2] / "bench" / "cases"])
    per_corpus: dict[str, int] = {}
    for case in cases:
        per_corpus[case.corpus] = per_corpus.get(case.corpus, 0) + 1
    assert set(per_corpus) == {"django", "flask", "requests", "click"}
    assert min(per_corpus.values()) >= 12
    assert len(cases) >= 80
