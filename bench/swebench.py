"""Real bug reports as a ranking benchmark: SWE-bench instances through research, over NATS.

Each instance is a bug report (the query), a repository pinned to the commit before the fix,
and the files the fix changed (gold). Research is asked as a user asks it — the report as the
query, ten artifacts of at most 400 characters, the repository pinned, over a real NATS server
to a real worker that builds the pinned revision's index on demand — and its answer's distinct
files are scored: Acc@k is the share of instances whose gold files are all among the first k
files, MRR the mean reciprocal rank of the first gold file. A bm25s baseline over function
chunks runs on the same instances in the same run.

The dataset (a JSON-lines file of `instance_id`, `repo`, `problem_statement`, `gold_files`, and
`mirror` + `commit` as `make_repos.py` of the datasets folder writes them) is read from the path
given; nothing of it is kept in this repository.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import itertools
import json
import shutil
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import bm25s
import numpy as np
import pygit2

from bench.bm25_baseline import iter_text_blobs
from bench.tables import render as render_table
from contracts import (
    FileConstraints,
    LicenseConstraints,
    RepoConstraints,
    RepoReaderRequest,
    ResultLimits,
)
from tests.support.workers import WorkerProcess
from worker.client import RepoReaderClient
from worker.config import Config
from worker.errors import RepoReaderFailure
from worker.index.store.build import newest_view, repo_index_dir
from worker.index.store.index_store import build_in_memory
from worker.index.views.history import HistoryStore
from worker.index.views.ranking import DEFAULT_PARAMS, analyse_query
from worker.index.views.text import CommitIndex
from worker.mirror.sync import Mirror
from worker.repos.layout import CacheLayout
from worker.service.embedded_nats import EmbeddedNats

CUTOFFS = (1, 3, 5, 10)
ARTIFACTS = 10
EXCERPT_CHARS = 400
REQUEST_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class Instance:
    """One bug report, the repository and commit it is asked at, and the files its fix changed."""

    id: str
    repo: str
    mirror: str
    commit: str
    query: str
    gold: tuple[str, ...]


@dataclass
class Ranked:
    """One system's answer to one instance: the distinct files, best first, and its time."""

    instance: Instance
    files: list[str]
    seconds: float
    error: str | None = None


@dataclass
class Figures:
    """Acc@k (every gold file within the first k) and MRR (first gold file) of some instances."""

    cases: int
    acc: dict[int, float] = field(default_factory=dict)
    mrr: float = 0.0


def load_instances(path: Path, max_query_chars: int) -> list[Instance]:
    """Read a `make_repos.py` dataset; a report longer than the server's ceiling is cut to it,
    as a user told `LIMIT_EXCEEDED` would cut it."""
    instances = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        instances.append(
            Instance(
                id=row["instance_id"],
                repo=row["repo"],
                mirror=row["mirror"],
                commit=row["commit"],
                query=row["problem_statement"][:max_query_chars],
                gold=tuple(row["gold_files"]),
            )
        )
    return instances


def all_within(files: Sequence[str], gold: Iterable[str], k: int) -> bool:
    """Whether every gold file is among the first `k` files."""
    return set(gold) <= set(files[:k])


def figures(answers: Sequence[Ranked]) -> Figures:
    """Acc@k and MRR over answers."""
    result = Figures(cases=len(answers))
    if not answers:
        return result
    for k in CUTOFFS:
        result.acc[k] = sum(all_within(a.files, a.instance.gold, k) for a in answers) / len(answers)
    reciprocal = []
    for answer in answers:
        ranks = [i for i, path in enumerate(answer.files, 1) if path in answer.instance.gold]
        reciprocal.append(1 / ranks[0] if ranks else 0.0)
    result.mrr = statistics.fmean(reciprocal)
    return result


def _distinct(paths: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(paths))


# --- repo-reader, over NATS ---------------------------------------------------------------


def prepare_cache(instances: Sequence[Instance], cache: Path) -> None:
    """Mirror every repository the instances name into `cache` (kept between runs, synced
    again so the index and history are the current code's)."""
    cache.mkdir(parents=True, exist_ok=True)
    config_file = cache / "repo-reader.toml"
    if not config_file.exists():
        config_file.write_text(
            f"[server]\nrequest_timeout_seconds = {REQUEST_TIMEOUT_SECONDS}\nindex_lru_size = 2\n"
        )
    mirror = Mirror(cache, config_file)
    wanted = dict(sorted({i.repo: i.mirror for i in instances}.items()))
    for name, url in wanted.items():
        if mirror.config.repo(name) is None:
            print(f"mirroring {name} from {url}", flush=True)
            mirror.add(name, url)
    mirror.sync(list(wanted))


def research_request(instance: Instance) -> RepoReaderRequest:
    """The request a user sends: the report, the repository pinned, ten short artifacts."""
    return RepoReaderRequest(
        query=instance.query,
        repo_constraints=RepoConstraints(
            allowlist=(instance.repo,), revisions={instance.repo: instance.commit}
        ),
        file_constraints=FileConstraints(
            max_excerpt_chars=EXCERPT_CHARS, max_excerpts_per_repo=ARTIFACTS
        ),
        # Ranking is measured here, not license detection: a repository whose license is
        # not detected is still asked.
        license_constraints=LicenseConstraints(require_license=False),
        result_limits=ResultLimits(max_total_excerpts=ARTIFACTS),
    )


async def _ask_all(
    url: str, instances: Sequence[Instance], progress: Callable[[Ranked], None]
) -> list[Ranked]:
    answers = []
    async with await RepoReaderClient.connect(url, timeout=REQUEST_TIMEOUT_SECONDS + 30) as client:
        for instance in instances:
            started = time.perf_counter()
            try:
                result = await client.research(research_request(instance))
                files = _distinct(a.path for a in result.artifacts)
                error = None
            except RepoReaderFailure as failure:
                files, error = [], f"{failure.code}: {failure}"
            answer = Ranked(instance, files, time.perf_counter() - started, error)
            progress(answer)
            answers.append(answer)
    return answers


def run_repo_reader(
    instances: Sequence[Instance], cache: Path, progress: Callable[[Ranked], None]
) -> list[Ranked]:
    """Ask every instance of research over a real NATS server and one worker on `cache`."""
    with EmbeddedNats() as server, WorkerProcess(cache, server.url, concurrency=1):
        return asyncio.run(_ask_all(server.url, instances, progress))


# --- the bm25s baseline over function chunks -----------------------------------------------


def function_chunks(path: str, text: str) -> list[str]:
    """A Python file's functions and methods (each whole) and the rest of the module as one
    chunk; any other file is one chunk."""
    if not path.endswith(".py"):
        return [text]
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return [text]
    lines = text.splitlines()
    taken = [False] * len(lines)
    chunks = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            chunks.append("\n".join(lines[start : node.end_lineno]))
            for row in range(start, node.end_lineno):
                taken[row] = True
    rest = "\n".join(line for line, used in zip(lines, taken, strict=True) if not used)
    return [path + "\n" + rest, *chunks] if rest.strip() else chunks or [text]


class FunctionChunkBaseline:
    """bm25s (its tokenizer, English stop words) over function chunks; a file ranks by its best
    chunk. One index per commit, built when the instance is asked and timed with it; a blob's
    chunks are cut once per run (the instances of a repository share most blobs)."""

    def __init__(self) -> None:
        self._chunks: dict[tuple[str, str], list[str]] = {}

    def __call__(self, instance: Instance) -> list[str]:
        repo = pygit2.Repository(instance.mirror)
        owners: list[str] = []
        texts: list[str] = []
        for path, blob, data in iter_text_blobs(repo, instance.commit):
            key = (path, blob)
            chunks = self._chunks.get(key)
            if chunks is None:
                chunks = self._chunks[key] = function_chunks(path, data.decode("utf-8", "replace"))
            for chunk in chunks:
                owners.append(path)
                texts.append(chunk)
        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False
        )
        tokens = bm25s.tokenize([instance.query], stopwords="en", show_progress=False)
        k = min(1000, len(texts))
        documents, scores = retriever.retrieve(tokens, k=k, show_progress=False)
        ranked = [
            owners[int(doc)]
            for doc, score in zip(
                np.asarray(documents)[0].tolist(), np.asarray(scores)[0].tolist(), strict=True
            )
            if score > 0
        ]
        return _distinct(ranked)


def run_baseline(instances: Sequence[Instance], progress: Callable[[Ranked], None]) -> list[Ranked]:
    """Rank every instance's files with the function-chunk baseline."""
    baseline = FunctionChunkBaseline()
    answers = []
    for instance in instances:
        started = time.perf_counter()
        files = baseline(instance)
        answer = Ranked(instance, files, time.perf_counter() - started)
        progress(answer)
        answers.append(answer)
    return answers


# --- ablation: each signal switched off, in process ------------------------------------------

ABLATIONS: dict[str, dict[str, float]] = {
    "all signals": {},
    "- entity links": {"entity_weight": 0.0},
    "- path/module mentions": {"path_mention_weight": 0.0, "module_mention_weight": 0.0},
    "- imports (graph)": {
        "import_weight": 0.0,
        "import_support_weight": 0.0,
        "call_support_weight": 0.0,
    },
    "- calls (graph)": {"call_support_weight": 0.3},
    "- named wrapper lends (graph)": {"delegate_weight": 0.0},
    "- history": {"history_weight": 0.0},
    "- report priors": {"config_prior": 1.0, "vendored_prior": 1.0},
    "- title weight": {"title_boost": 1.0},
    "terms only": {
        "entity_weight": 0.0,
        "import_weight": 0.0,
        "import_support_weight": 0.0,
        "call_support_weight": 0.0,
        "delegate_weight": 0.0,
        "title_boost": 1.0,
        "path_mention_weight": 0.0,
        "module_mention_weight": 0.0,
        "history_weight": 0.0,
        "config_prior": 1.0,
        "vendored_prior": 1.0,
    },
}


def run_ablation(instances: Sequence[Instance], cache: Path) -> list[tuple[str, list[Ranked]]]:
    """Rank every instance in process with each signal switched off in turn: the same index
    (built once per pinned commit from the mirror's segments) and history as research uses;
    the first ten hits' distinct files, as ten artifacts give."""
    results: dict[str, list[Ranked]] = {name: [] for name in ABLATIONS}
    histories = HistoryStore()
    for instance in instances:
        repo = pygit2.Repository(str(CacheLayout(cache).repo_dir(instance.repo)))
        index_dir = repo_index_dir(cache, instance.repo)
        stored = newest_view(index_dir)
        segments, tables, _ = build_in_memory(
            repo,
            instance.commit,
            [] if stored is None else stored.segments,
            max_blob_bytes=Config().server.max_blob_bytes,
            check_deadline=lambda _done, _total: None,
        )
        history = histories.get(index_dir)
        for name, overrides in ABLATIONS.items():
            params = dataclasses.replace(DEFAULT_PARAMS, **overrides)
            index = CommitIndex(instance.commit, segments, tables, params)
            started = time.perf_counter()
            query = analyse_query(instance.query, params)
            past = history.file_scores(instance.commit, query.weights) if history else {}
            hits = itertools.islice(index.ranked(query, history=past), ARTIFACTS)
            files = _distinct(hit.path for hit in hits)
            results[name].append(Ranked(instance, files, time.perf_counter() - started))
    return list(results.items())


# --- the table ------------------------------------------------------------------------------


def _slices(answers: Sequence[Ranked], *, by_repo: bool) -> list[tuple[str, list[Ranked]]]:
    single = [a for a in answers if len(a.instance.gold) == 1]
    several = [a for a in answers if len(a.instance.gold) > 1]
    slices = [("all", list(answers)), ("one-file fix", single), ("multi-file fix", several)]
    for repo in sorted({a.instance.repo for a in answers} if by_repo else ()):
        slices.append((repo, [a for a in answers if a.instance.repo == repo]))
    return slices


def render(systems: Sequence[tuple[str, list[Ranked]]], *, slices: bool = True) -> str:
    """One table: every system's figures per slice (per repository too unless `slices` is
    off), with its time per instance."""
    rows = []
    for name, answers in systems:
        for label, subset in _slices(answers, by_repo=slices):
            f = figures(subset)
            seconds = [a.seconds for a in subset]
            rows.append(
                (
                    name,
                    label,
                    str(f.cases),
                    *(f"{100 * f.acc[k]:.1f}" for k in CUTOFFS),
                    f"{f.mrr:.3f}",
                    f"{statistics.median(seconds):.2f}" if seconds else "-",
                    f"{max(seconds):.2f}" if seconds else "-",
                )
            )
    header = ("system", "slice", "n", *(f"Acc@{k}" for k in CUTOFFS), "MRR", "p50 s", "max s")
    return render_table([header, *rows])


def run(
    dataset: Path,
    work: Path,
    *,
    systems: Sequence[str],
    only: Sequence[str] = (),
    verbose: bool = False,
    json_out: Path | None = None,
    ablation: bool = False,
) -> str:
    """Run the chosen systems over the dataset (or the `only` instance ids) and render the
    table."""
    instances = load_instances(dataset, Config().limits.max_query_chars)
    if only:
        instances = [i for i in instances if i.id in set(only)]
    print(f"{len(instances)} instances over {len({i.repo for i in instances})} repositories")

    def progress(answer: Ranked) -> None:
        if verbose:
            gold = set(answer.instance.gold)
            ranks = [n for n, path in enumerate(answer.files, 1) if path in gold]
            note = f" {answer.error}" if answer.error else ""
            print(
                f"  {answer.instance.id}: gold ranks {ranks or '-'} of {len(gold)}"
                f" in {answer.seconds:.2f}s{note} top {answer.files[:3]}",
                flush=True,
            )

    results: list[tuple[str, list[Ranked]]] = []
    cache = work / "swebench" / "cache"
    if ablation:
        prepare_cache(instances, cache)
        return render(run_ablation(instances, cache), slices=False)
    if "repo-reader" in systems:
        prepare_cache(instances, cache)
        results.append(("repo-reader", run_repo_reader(instances, cache, progress)))
    if "baseline" in systems:
        results.append(("bm25s-functions", run_baseline(instances, progress)))
    if json_out is not None:
        json_out.write_text(
            json.dumps(
                {
                    name: [
                        {
                            "id": a.instance.id,
                            "files": a.files[:20],
                            "gold": list(a.instance.gold),
                            "seconds": round(a.seconds, 3),
                            "error": a.error,
                        }
                        for a in answers
                    ]
                    for name, answers in results
                },
                indent=1,
            )
            + "\n"
        )
    return render(results)


def clean(work: Path) -> None:
    """Remove the benchmark's mirror cache."""
    shutil.rmtree(work / "swebench", ignore_errors=True)
