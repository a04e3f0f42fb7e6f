"""Search quality benchmark: file-level Acc@1/5/10 and MRR of retrieval systems over query cases.

A system is a callable ``(repo_path, commit, query) -> list[path]`` returning distinct files,
best first; it may also have ``prepare(repo_path, commit) -> seconds`` to build its index before
queries are timed. Cases live in ``bench/cases/*.toml``; each names a corpus (prepared by
`bench.corpora`, or given with ``--repo NAME=PATH``) and the files that answer the query.

    python -m bench.quality [--work DIR] [--cases PATH ...] [--repo NAME=PATH ...]
                            [--system baseline|repo-reader ...] [--json FILE] [--verbose]
    python -m bench.quality --swebench DATASET [--instance ID ...] [--system ...] [--verbose]
                            [--ablation]

`--swebench` runs real bug reports instead (`bench.swebench`): research over NATS with the
repository pinned, beside a bm25s baseline over function chunks.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from bench import corpora
from bench.bm25_baseline import BM25Baseline
from bench.corpus_sources import CorpusError

System = Callable[[Path, str, str], list[str]]

CASES_DIR = Path(__file__).resolve().parent / "cases"
CUTOFFS = (1, 5, 10)
DEFAULT_DEPTH = 100
_CASE_KEYS = {"id", "query", "expected", "style"}


class CaseError(Exception):
    """A case file is malformed or a case names a file its corpus does not have."""


@dataclass(frozen=True)
class Case:
    """One query and the files that answer it, in one corpus."""

    id: str
    corpus: str
    query: str
    expected: tuple[str, ...]
    style: str


@dataclass(frozen=True)
class RepoAtCommit:
    """A git repository and the commit the cases are evaluated at."""

    path: Path
    commit: str


@dataclass(frozen=True)
class Scores:
    """File-level retrieval figures over a set of cases."""

    cases: int
    acc_at_1: float
    acc_at_5: float
    acc_at_10: float
    mrr: float


@dataclass(frozen=True)
class Outcome:
    """What a system returned for one case and where the first expected file was."""

    case: Case
    rank: int | None
    top: tuple[str, ...]
    seconds: float


@dataclass
class SystemReport:
    """Every figure of one system: overall, per corpus, per query style, per case."""

    name: str
    overall: Scores
    by_corpus: dict[str, Scores]
    by_style: dict[str, Scores]
    outcomes: list[Outcome]
    prepare_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def mean_query_ms(self) -> float:
        """Mean wall time of one query, in milliseconds."""
        if not self.outcomes:
            return 0.0
        return 1000 * statistics.fmean(outcome.seconds for outcome in self.outcomes)


def _case_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(path.glob("*.toml")))
        elif path.is_file():
            files.append(path)
        else:
            raise CaseError(f"{path}: no such case file or directory")
    return files


def _parse_case(raw: Any, corpus: str, where: str) -> Case:
    if not isinstance(raw, dict):
        raise CaseError(f"{where}: a case must be a table")
    unknown = set(raw) - _CASE_KEYS
    missing = {"id", "query", "expected"} - set(raw)
    if unknown or missing:
        raise CaseError(f"{where}: unknown keys {sorted(unknown)}, missing {sorted(missing)}")
    expected = raw["expected"]
    if (
        not isinstance(expected, list)
        or not expected
        or not all(isinstance(path, str) and path for path in expected)
    ):
        raise CaseError(f"{where}: expected must be a non-empty list of paths")
    query, case_id, style = raw["query"], raw["id"], raw.get("style", "unspecified")
    if not all(isinstance(value, str) and value.strip() for value in (query, case_id, style)):
        raise CaseError(f"{where}: id, query and style must be non-empty strings")
    return Case(
        id=case_id,
        corpus=corpus,
        query=query.strip(),
        expected=tuple(expected),
        style=style,
    )


def load_cases(paths: Iterable[Path]) -> list[Case]:
    """Load and check the cases of TOML files (a directory means its ``*.toml``)."""
    cases: list[Case] = []
    for path in _case_files(paths):
        try:
            document = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as failure:
            raise CaseError(f"{path}: {failure}") from failure
        corpus = document.get("corpus")
        if not isinstance(corpus, str) or set(document) - {"corpus", "case"}:
            raise CaseError(f"{path}: needs a top-level corpus name and [[case]] tables only")
        for number, raw in enumerate(document.get("case", []), start=1):
            cases.append(_parse_case(raw, corpus, f"{path} case {number}"))
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise CaseError(f"duplicate case id {case.id!r}")
        seen.add(case.id)
    return cases


def verify_cases(cases: Sequence[Case], repos: Mapping[str, RepoAtCommit]) -> None:
    """Check that every expected path of every case is a file at its corpus's commit."""
    problems: list[str] = []
    trees: dict[str, pygit2.Tree] = {}
    for case in cases:
        if case.corpus not in repos:
            problems.append(f"{case.id}: no repository for corpus {case.corpus!r}")
            continue
        if case.corpus not in trees:
            at = repos[case.corpus]
            repo = pygit2.Repository(str(at.path))
            trees[case.corpus] = repo.revparse_single(at.commit).peel(pygit2.Tree)
        for path in case.expected:
            try:
                entry = trees[case.corpus][path]
            except KeyError:
                problems.append(f"{case.id}: {path} does not exist in {case.corpus}")
                continue
            if entry.type_str != "blob":
                problems.append(f"{case.id}: {path} is not a file in {case.corpus}")
    if problems:
        raise CaseError("cases do not match their corpora:\n  " + "\n  ".join(problems))


def distinct(paths: Iterable[str]) -> list[str]:
    """Drop repeated paths, keeping the first occurrence of each."""
    return list(dict.fromkeys(paths))


def first_relevant_rank(ranking: Sequence[str], expected: Iterable[str]) -> int | None:
    """Return the 1-based rank of the first expected file among distinct files, or None."""
    wanted = set(expected)
    for rank, path in enumerate(distinct(ranking), start=1):
        if path in wanted:
            return rank
    return None


def score(ranks: Sequence[int | None]) -> Scores:
    """Compute Acc@1/5/10 (a hit within the first k files) and MRR from first-relevant ranks."""
    count = len(ranks)
    if count == 0:
        return Scores(cases=0, acc_at_1=0.0, acc_at_5=0.0, acc_at_10=0.0, mrr=0.0)

    def accuracy(k: int) -> float:
        return sum(1 for rank in ranks if rank is not None and rank <= k) / count

    return Scores(
        cases=count,
        acc_at_1=accuracy(1),
        acc_at_5=accuracy(5),
        acc_at_10=accuracy(10),
        mrr=sum(1 / rank for rank in ranks if rank is not None) / count,
    )


def evaluate(
    name: str,
    system: System,
    cases: Sequence[Case],
    repos: Mapping[str, RepoAtCommit],
    depth: int = DEFAULT_DEPTH,
) -> SystemReport:
    """Run every case through a system and score it; only the first `depth` files count."""
    prepare: Callable[[Path, str], float] | None = getattr(system, "prepare", None)
    prepare_seconds: dict[str, float] = {}
    outcomes: list[Outcome] = []
    for case in cases:
        at = repos[case.corpus]
        if prepare is not None and case.corpus not in prepare_seconds:
            prepare_seconds[case.corpus] = prepare(at.path, at.commit)
        started = time.perf_counter()
        ranking = distinct(system(at.path, at.commit, case.query))[:depth]
        seconds = time.perf_counter() - started
        rank = first_relevant_rank(ranking, case.expected)
        outcomes.append(Outcome(case=case, rank=rank, top=tuple(ranking[:10]), seconds=seconds))

    def grouped(key: Callable[[Case], str]) -> dict[str, Scores]:
        groups: dict[str, list[int | None]] = {}
        for outcome in outcomes:
            groups.setdefault(key(outcome.case), []).append(outcome.rank)
        return {group: score(ranks) for group, ranks in sorted(groups.items())}

    return SystemReport(
        name=name,
        overall=score([outcome.rank for outcome in outcomes]),
        by_corpus=grouped(lambda case: case.corpus),
        by_style=grouped(lambda case: case.style),
        outcomes=outcomes,
        prepare_seconds=prepare_seconds,
    )


def load_repo_reader_system() -> System:
    """repo-reader's file ranking: the search engine's chunks, files in order of first hit."""
    from bench.index_build import RepoReaderSystem

    return RepoReaderSystem()


def render_table(reports: Sequence[SystemReport]) -> str:
    """Format the figures of each system, overall then per corpus and per style, as a table."""
    header = (
        f"{'system':<16} {'slice':<22} {'cases':>5} {'Acc@1':>6} {'Acc@5':>6} "
        f"{'Acc@10':>6} {'MRR':>6}"
    )
    lines = [header, "-" * len(header)]
    for report in reports:
        rows = [("all", report.overall)]
        rows += [(f"corpus={name}", scores) for name, scores in report.by_corpus.items()]
        rows += [(f"style={name}", scores) for name, scores in report.by_style.items()]
        for label, scores in rows:
            lines.append(
                f"{report.name:<16} {label:<22} {scores.cases:>5} {scores.acc_at_1:>6.3f} "
                f"{scores.acc_at_5:>6.3f} {scores.acc_at_10:>6.3f} {scores.mrr:>6.3f}"
            )
        prepared = ", ".join(f"{name} {sec:.1f}s" for name, sec in report.prepare_seconds.items())
        lines.append(
            f"{report.name:<16} mean query {report.mean_query_ms:.1f} ms; index {prepared or '-'}"
        )
    return "\n".join(lines)


def report_json(reports: Sequence[SystemReport], repos: Mapping[str, RepoAtCommit]) -> Any:
    """Return the figures as JSON-ready data: corpora, and per system every slice and case."""
    return {
        "corpora": {
            name: {"path": str(at.path), "commit": at.commit} for name, at in repos.items()
        },
        "systems": {
            report.name: {
                "overall": asdict(report.overall),
                "by_corpus": {name: asdict(s) for name, s in report.by_corpus.items()},
                "by_style": {name: asdict(s) for name, s in report.by_style.items()},
                "mean_query_ms": round(report.mean_query_ms, 3),
                "prepare_seconds": report.prepare_seconds,
                "cases": [
                    {
                        "id": outcome.case.id,
                        "corpus": outcome.case.corpus,
                        "rank": outcome.rank,
                        "top": list(outcome.top),
                    }
                    for outcome in report.outcomes
                ],
            }
            for report in reports
        },
    }


def _repo_override(text: str) -> tuple[str, RepoAtCommit]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got {text!r}")
    try:
        repo = pygit2.Repository(path)
        commit = str(repo.head.target)
    except pygit2.GitError as failure:
        raise argparse.ArgumentTypeError(f"{path}: {failure}") from failure
    return name, RepoAtCommit(path=Path(repo.path).resolve(), commit=commit)


def _repositories(
    cases: Sequence[Case], overrides: Mapping[str, RepoAtCommit], work: Path
) -> dict[str, RepoAtCommit]:
    needed = sorted({case.corpus for case in cases} - set(overrides))
    prepared = corpora.prepare(needed, work) if needed else {}
    repos = {name: RepoAtCommit(c.path, c.base_commit) for name, c in prepared.items()}
    return {**repos, **overrides}


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: prepare corpora, run the systems over the cases, print and save figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.quality", description=__doc__)
    parser.add_argument("--work", type=Path, default=corpora.DEFAULT_WORK)
    parser.add_argument("--cases", type=Path, action="append", help="case file or directory")
    parser.add_argument("--repo", type=_repo_override, action="append", default=[])
    parser.add_argument(
        "--system", action="append", choices=["baseline", "repo-reader"], help="default: both"
    )
    parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH)
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--verbose", action="store_true", help="print every case's rank")
    parser.add_argument(
        "--swebench", type=Path, metavar="DATASET", help="a make_repos.py dataset (JSON lines)"
    )
    parser.add_argument("--instance", action="append", default=[], help="only these ids")
    parser.add_argument(
        "--ablation", action="store_true", help="with --swebench: each signal switched off"
    )
    args = parser.parse_args(argv)
    if args.swebench is not None:
        from bench import swebench

        print(
            swebench.run(
                args.swebench.resolve(),
                args.work.resolve(),
                systems=args.system or ["baseline", "repo-reader"],
                only=args.instance,
                verbose=args.verbose,
                json_out=args.json,
                ablation=args.ablation,
            )
        )
        return 0
    try:
        cases = load_cases(args.cases or [CASES_DIR])
        repos = _repositories(cases, dict(args.repo), args.work.resolve())
        verify_cases(cases, repos)
    except (CaseError, CorpusError) as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    print(f"{len(cases)} cases over {', '.join(sorted(repos))}")

    systems: list[tuple[str, System]] = []
    chosen = args.system or ["baseline", "repo-reader"]
    if "baseline" in chosen:
        systems.append((BM25Baseline.name, BM25Baseline(depth=args.depth)))
    if "repo-reader" in chosen:
        systems.append(("repo-reader", load_repo_reader_system()))

    reports = [evaluate(name, system, cases, repos, args.depth) for name, system in systems]
    if args.verbose:
        for report in reports:
            for outcome in report.outcomes:
                top = ", ".join(outcome.top[:3])
                print(f"{report.name} {outcome.case.id}: rank {outcome.rank} [{top}]")
    print(render_table(reports))
    if args.json is not None:
        args.json.write_text(json.dumps(report_json(reports, repos), indent=2) + "\n")
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
