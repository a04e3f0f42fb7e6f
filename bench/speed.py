"""Speed benchmark: index build, incremental index, warm research latency and throughput over
NATS, worker memory — beside `git grep` and ripgrep on the same commit, from one run.

    python -m bench.speed [--corpus django] [--corpus linux] [--queries 200] [--json FILE]

Corpora come from `bench.corpora` (registry archives turned into reproducible git
repositories). Each corpus is mirrored into a fresh cache, indexed cold (the index is then
deleted and built again from nothing, to report the median of several builds), then indexed
again at its `edited` commit (a few files changed); a real nats-server and real worker processes
serve it, and a client measures what an agent would see. Prints one table and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pygit2

from bench.corpora import DEFAULT_WORK, PreparedCorpus, prepare
from bench.index_build import GraphCarry, bench_graph_carry, source_bytes
from bench.quality import load_cases
from contracts import RepoConstraints, RepoReaderRequest
from tests.support.workers import WorkerProcess
from worker.client import RepoReaderClient
from worker.index import (
    build_commit_index,
    informative_terms,
    start_build_workers,
    wait_for_build_workers,
)
from worker.index.store.build import repo_index_dir
from worker.mirror.sync import Mirror
from worker.service.embedded_nats import EmbeddedNats

BENCH_DIR = Path(__file__).resolve().parent
TARGETS = {
    "django": {"p50_ms": 20.0, "p99_ms": 100.0},
    "linux": {"p50_ms": 150.0, "incremental_s": 2.0, "rss_mb": 400.0},
}
BUILD_TARGET_MB_S_PER_CORE = 20.0
SHORT_BUILD_SECONDS = 5.0
"""A cold build shorter than this is timed five times, a longer one three: the median is
reported. On a shared virtual machine one Django build took anywhere from 0.93 to 1.43 s."""


@dataclass
class Figures:
    """Everything measured on one corpus."""

    corpus: str
    files: int
    source_mb: float
    indexable_mb: float = 0.0
    index_runs: list[float] = field(default_factory=list)
    """Seconds of each cold build: the mirror's, then the same build repeated."""
    index_workers: int = 1
    incremental_seconds: float = 0.0
    graph_carry: GraphCarry | None = None
    """The edited commit's entity graph, carried over from the mirrored one's and whole."""
    one_process_runs: list[float] = field(default_factory=list)
    """The same cold build with one process (so on one core), into a cache of its own."""
    core_scaling: list[float] = field(default_factory=list)
    """Rounds of `core_scaling`: what the machine gave `index_workers` processes at once."""
    latencies_ms: list[float] = field(default_factory=list)
    throughput_1: float = 0.0
    throughput_2: float = 0.0
    rss: dict[str, float] = field(default_factory=dict)
    git_grep_ms: list[float] = field(default_factory=list)
    ripgrep_ms: list[float] = field(default_factory=list)
    artifacts_per_answer: float = 0.0

    @property
    def index_seconds(self) -> float:
        """Median seconds of the cold builds (0 before any)."""
        return statistics.median(self.index_runs) if self.index_runs else 0.0

    @property
    def one_process_seconds(self) -> float:
        """Median seconds of the one-process cold builds (0 when none ran)."""
        return statistics.median(self.one_process_runs) if self.one_process_runs else 0.0

    @property
    def build_mb_s(self) -> float:
        return self.indexable_mb / self.index_seconds if self.index_seconds else 0.0

    @property
    def one_process_mb_s(self) -> float:
        return self.indexable_mb / self.one_process_seconds if self.one_process_seconds else 0.0


def queries_for(corpus: str, count: int) -> list[str]:
    """`count` natural-language queries for the corpus, cycling through its question set."""
    if corpus in ("linux", "self"):
        lines = (BENCH_DIR / "queries" / f"{corpus}.txt").read_text().splitlines()
        base = [line for line in lines if line.strip() and not line.startswith("#")]
    else:
        base = [case.query for case in load_cases([BENCH_DIR / "cases" / f"{corpus}.toml"])]
    return [base[i % len(base)] for i in range(count)]


def own_repository() -> PreparedCorpus:
    """This project's own git repository at its current head, as a corpus."""
    discovered = pygit2.discover_repository(str(BENCH_DIR))
    if discovered is None:
        raise SystemExit("bench.speed: the 'self' corpus needs a git checkout of repo-reader")
    repo = pygit2.Repository(discovered)
    head = repo.head.peel(pygit2.Commit)
    sizes = [len(repo[e.id].data) for e in _walk(repo, head.tree) if e.type_str == "blob"]
    return PreparedCorpus(
        name="self",
        version=str(head.id)[:12],
        path=Path(repo.path),
        base_commit=str(head.id),
        edited_commit=None,
        files=len(sizes),
        source_bytes=sum(sizes),
        prepare_seconds=0.0,
        reused=True,
    )


def _walk(repo: pygit2.Repository, tree: pygit2.Tree) -> list[pygit2.Object]:
    entries: list[pygit2.Object] = []
    for entry in tree:
        if entry.type_str == "tree":
            entries += _walk(repo, repo[entry.id])
        else:
            entries.append(entry)
    return entries


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def proc_status_mb(pid: int) -> dict[str, float]:
    """Peak and current resident memory of a process, in MB, from /proc."""
    wanted = {"VmHWM", "VmRSS", "RssAnon", "RssFile"}
    figures = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in wanted:
            figures[key] = int(value.split()[0]) / 1024
    return figures


def mirror_and_index(corpus: PreparedCorpus, cache: Path, figures: Figures) -> str:
    """Mirror the corpus into a fresh cache (timing the cold index) and index the edited commit."""
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    config = cache / "repo-reader.toml"
    config.write_text(
        "[server]\nrequest_timeout_seconds = 60\n[limits]\nmax_total_excerpts = 200\n"
    )
    mirror = Mirror(cache, config)
    name = f"bench/{corpus.name}"
    mirror.add(name, str(corpus.path))
    (result,) = mirror.sync([name])
    figures.index_runs.append(result.index_seconds)
    figures.index_workers = result.index_workers
    repo = pygit2.Repository(str(mirror.layout.repo_dir(name)))
    figures.indexable_mb = source_bytes(repo, corpus.base_commit) / 1e6
    for _ in range(_runs_after(result.index_seconds)):
        figures.index_runs.append(
            rebuild_cold(cache, name, repo, corpus.base_commit, figures.index_workers)
        )
    if corpus.edited_commit:
        started = time.monotonic()
        build_commit_index(cache, name, repo, corpus.edited_commit)
        figures.incremental_seconds = time.monotonic() - started
        figures.graph_carry = bench_graph_carry(
            cache, name, repo, corpus.base_commit, corpus.edited_commit
        )
    if figures.index_workers > 1:
        # Per core without the cores sharing memory bandwidth: one process, a fresh cache.
        one_process_cache = cache.parent / "one-process-cache"
        shutil.rmtree(one_process_cache, ignore_errors=True)
        started = time.monotonic()
        build_commit_index(one_process_cache, name, repo, corpus.base_commit, workers=1)
        figures.one_process_runs.append(time.monotonic() - started)
        for _ in range(_runs_after(figures.one_process_runs[0])):
            figures.one_process_runs.append(
                rebuild_cold(one_process_cache, name, repo, corpus.base_commit, 1)
            )
        shutil.rmtree(one_process_cache, ignore_errors=True)
    return name


_SPIN: Final = (
    "import time\nt = time.perf_counter()\ns = 0\nfor i in range(8_000_000):\n    s += i * i\n"
    "print(time.perf_counter() - t)"
)


def core_scaling(processes: int, rounds: int = 5) -> list[float]:
    """Per round, how many loops' worth of work `processes` processes of a plain CPU loop
    did at once, against one process alone just before: `processes` on an idle machine.

    A shared virtual machine's cores are not always whole: this says what the machine gave
    parallel work at the time, so the per-core build figure can be read against it. Rounds,
    because that changes from one second to the next (1.2 to 2.1 for two, here).
    """

    def together(n: int) -> list[float]:
        runs = [
            subprocess.Popen([sys.executable, "-c", _SPIN], stdout=subprocess.PIPE, text=True)
            for _ in range(n)
        ]
        return [float(run.communicate()[0]) for run in runs]

    return [processes * together(1)[0] / max(together(processes)) for _ in range(rounds)]


def _runs_after(first_seconds: float) -> int:
    """How many more times to time a cold build that first took `first_seconds`."""
    return 4 if first_seconds < SHORT_BUILD_SECONDS else 2


def rebuild_cold(
    cache: Path, name: str, repo: pygit2.Repository, commit: str, workers: int
) -> float:
    """Delete the repository's index and time building it again from nothing.

    Several workers are started ahead, up and warm before the clock starts, as the mirror
    starts them during its fetch.
    """
    shutil.rmtree(repo_index_dir(cache, name))
    if workers > 1:
        start_build_workers(workers)
        wait_for_build_workers()
    started = time.monotonic()
    build_commit_index(cache, name, repo, commit, workers=workers)
    return time.monotonic() - started


def _spread(values: Sequence[float], unit: str) -> str:
    """The median of measured values with their range (just the value if there is one)."""
    if not values:
        return "n/a"
    if len(values) == 1:
        return f"{values[0]:.2f}{unit}"
    median, low, high = statistics.median(values), min(values), max(values)
    return f"{median:.2f}{unit}, median of {len(values)}: {low:.2f}-{high:.2f}"


async def measure_latency(url: str, name: str, queries: Sequence[str], figures: Figures) -> None:
    async with await RepoReaderClient.connect(url, timeout=120) as client:
        for query in queries[:20]:  # warm-up: page cache, index maps, license caches
            await client.research(_request(query, name))
        counts = []
        for query in queries:
            started = time.perf_counter()
            result = await client.research(_request(query, name))
            figures.latencies_ms.append(1000 * (time.perf_counter() - started))
            counts.append(len(result.artifacts))
        figures.artifacts_per_answer = statistics.fmean(counts)


async def measure_throughput(
    url: str, name: str, queries: Sequence[str], in_flight: int = 8
) -> float:
    """Answered requests per second with `in_flight` requests outstanding at all times."""
    async with await RepoReaderClient.connect(url, timeout=300) as client:
        pending = list(queries)
        started = time.perf_counter()

        async def lane() -> None:
            while pending:
                await client.research(_request(pending.pop(), name))

        await asyncio.gather(*(lane() for _ in range(in_flight)))
        return len(queries) / (time.perf_counter() - started)


def _request(query: str, name: str) -> RepoReaderRequest:
    return RepoReaderRequest(query=query, repo_constraints=RepoConstraints(allowlist=(name,)))


def measure_peers(
    corpus: PreparedCorpus, queries: Sequence[str], checkout: Path, figures: Figures
) -> None:
    """Time `git grep` on the bare repository and ripgrep on a checkout, for each query's terms."""
    if not checkout.exists():
        checkout.mkdir(parents=True)
        subprocess.run(
            [
                "git",
                f"--git-dir={corpus.path}",
                f"--work-tree={checkout}",
                "checkout",
                corpus.base_commit,
                "--",
                ".",
            ],
            check=True,
            capture_output=True,
        )
    rg = shutil.which("rg")
    for query in dict.fromkeys(queries):
        patterns = [arg for term in informative_terms(query) for arg in ("-e", term)]
        started = time.perf_counter()
        subprocess.run(
            [
                "git",
                f"--git-dir={corpus.path}",
                "grep",
                "-I",
                "-l",
                "-i",
                "-F",
                *patterns,
                corpus.base_commit,
            ],
            capture_output=True,
            check=False,
        )
        figures.git_grep_ms.append(1000 * (time.perf_counter() - started))
        if rg:
            started = time.perf_counter()
            subprocess.run(
                # -uu: hidden and ignored files too, as git grep reads them (the checkout sits
                # under the bench's own ignored directory, which rg would otherwise skip whole).
                [rg, "-uu", "-l", "-i", "-F", *patterns, str(checkout)],
                capture_output=True,
                check=False,
            )
            figures.ripgrep_ms.append(1000 * (time.perf_counter() - started))


def run_corpus(
    corpus: PreparedCorpus, work: Path, query_count: int, queries: Sequence[str] = ()
) -> Figures:
    """Measure one corpus: builds, latency, throughput, RSS, then the peers.

    `queries` (cycled to `query_count`) default to the corpus's own question set.
    """
    figures = Figures(corpus=corpus.name, files=corpus.files, source_mb=corpus.source_bytes / 1e6)
    cache = work / "speed" / corpus.name / "cache"
    print(f"[{corpus.name}] mirroring and indexing into {cache}", flush=True)
    name = mirror_and_index(corpus, cache, figures)
    figures.core_scaling = core_scaling(figures.index_workers)
    if queries:
        queries = [queries[i % len(queries)] for i in range(query_count)]
    else:
        queries = queries_for(corpus.name, query_count)
    with EmbeddedNats() as server:
        first = WorkerProcess(cache, server.url, concurrency=2).start()
        try:
            print(f"[{corpus.name}] latency over {len(queries)} queries, one worker", flush=True)
            asyncio.run(measure_latency(server.url, name, queries, figures))
            figures.throughput_1 = asyncio.run(measure_throughput(server.url, name, queries))
            assert first.process is not None
            figures.rss = proc_status_mb(first.process.pid)
            with WorkerProcess(cache, server.url, concurrency=2):
                print(f"[{corpus.name}] throughput with two workers", flush=True)
                # Warm, as the first worker is after the latency run: one pass spreads the
                # queries over both, so the new one has opened the index and read its pages.
                asyncio.run(measure_throughput(server.url, name, queries))
                figures.throughput_2 = asyncio.run(measure_throughput(server.url, name, queries))
        finally:
            first.stop()
    print(f"[{corpus.name}] git grep and ripgrep on the same commit", flush=True)
    measure_peers(corpus, queries, work / "speed" / corpus.name / "checkout", figures)
    return figures


def render(all_figures: Sequence[Figures]) -> str:
    rows = [("corpus", "measure", "repo-reader", "git grep", "ripgrep", "target")]
    for f in all_figures:
        target = TARGETS.get(f.corpus, {})

        def ms(values: Sequence[float], q: float) -> str:
            return f"{percentile(values, q):.1f} ms" if values else "n/a"

        per_core = f.build_mb_s / max(f.index_workers, 1)
        rows += [
            (
                f.corpus,
                "files / MB of source (indexable)",
                f"{f.files} / {f.source_mb:.0f} MB ({f.indexable_mb:.0f} MB)",
                "",
                "",
                "",
            ),
            (f.corpus, "cold index build, every view", _spread(f.index_runs, " s"), "-", "-", ""),
            (
                f.corpus,
                "build MB/s (per core)",
                f"{f.build_mb_s:.1f} ({per_core:.1f}, {f.index_workers} cores)",
                "-",
                "-",
                f">= {BUILD_TARGET_MB_S_PER_CORE:.0f}/core",
            ),
            (
                f.corpus,
                f"CPU loop, {f.index_workers} processes at once",
                _spread(f.core_scaling, "x one process"),
                "",
                "",
                f"ideal {f.index_workers}x",
            ),
            (
                f.corpus,
                "build MB/s, one process (one core)",
                f"{f.one_process_mb_s:.1f} ({_spread(f.one_process_runs, ' s')})"
                if f.one_process_runs
                else "n/a",
                "-",
                "-",
                f">= {BUILD_TARGET_MB_S_PER_CORE:.0f}/core",
            ),
            (
                f.corpus,
                "incremental index (edited)",
                f"{f.incremental_seconds:.2f} s" if f.incremental_seconds else "n/a",
                "-",
                "-",
                f"<= {target['incremental_s']:.0f} s" if "incremental_s" in target else "",
            ),
            (
                f.corpus,
                "incremental graph (edited; whole beside)",
                f"{f.graph_carry.carried_seconds:.2f} s, {f.graph_carry.resolved} of "
                f"{f.graph_carry.files} files resolved"
                if f.graph_carry
                else "n/a",
                f"{f.graph_carry.whole_seconds:.2f} s" if f.graph_carry else "-",
                "-",
                "changed files only",
            ),
            (
                f.corpus,
                "query p50",
                ms(f.latencies_ms, 0.5),
                ms(f.git_grep_ms, 0.5),
                ms(f.ripgrep_ms, 0.5),
                f"<= {target['p50_ms']:.0f} ms" if "p50_ms" in target else "",
            ),
            (
                f.corpus,
                "query p99",
                ms(f.latencies_ms, 0.99),
                ms(f.git_grep_ms, 0.99),
                ms(f.ripgrep_ms, 0.99),
                f"<= {target['p99_ms']:.0f} ms" if "p99_ms" in target else "",
            ),
            (f.corpus, "throughput, 1 worker", f"{f.throughput_1:.1f} req/s", "", "", ""),
            (f.corpus, "throughput, 2 workers", f"{f.throughput_2:.1f} req/s", "", "", ""),
            (
                f.corpus,
                "worker peak RSS (anon / file)",
                f"{f.rss.get('VmHWM', 0):.0f} MB "
                f"({f.rss.get('RssAnon', 0):.0f} / {f.rss.get('RssFile', 0):.0f})",
                "",
                "",
                f"<= {target['rss_mb']:.0f} MB" if "rss_mb" in target else "",
            ),
            (f.corpus, "artifacts per answer", f"{f.artifacts_per_answer:.1f}", "", "", ""),
        ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.speed", description=__doc__)
    parser.add_argument(
        "--corpus",
        action="append",
        dest="corpora",
        choices=["django", "linux", "flask", "requests", "click", "self"],
        help="repeatable; 'self' is this repository (default: django and linux)",
    )
    parser.add_argument(
        "--queries", type=int, default=200, help="measured queries per corpus (>= 200)"
    )
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    names = args.corpora or ["django", "linux"]
    prepared = prepare([n for n in names if n != "self"], args.work.resolve())
    if "self" in names:
        prepared["self"] = own_repository()
    results = [run_corpus(prepared[name], args.work.resolve(), args.queries) for name in names]
    print()
    print(render(results))
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
