"""Tokenizer benchmark: a whole index build with the product's bulk analysis and with the
query side's plain tokenizer, alternated in one run.

    python -m bench.tokenizer [--corpus django] [--rounds 3] [--workers N] [--check-every 10]

The bulk analysis (`worker.index.analysis.vocabulary`) is a bulk twin of `tokens` (regex
and PyStemmer, per text, swapped in by `bench.plain_term_rows`); it stays only while a whole
build is at least `KEEP_RATIO` times faster with it. First the two are checked to give the
same segment and path tables (every K-th blob of the commit, in this process). Then the
commit is built from nothing (`build_commit_index`, with the mirror's number of processes,
workers started ahead as the mirror starts them), in a fresh process per build, bulk and
plain in turn (A B A B ...), and the medians of each are compared: wall seconds, and CPU
seconds of every process (the build workers report theirs in their log line), which a shared
machine's load moves less. A plain CPU loop in as many processes says what the machine gave
parallel work meanwhile. On a shared machine, three rounds can land anywhere from 1.1x to
2.1x: decide on more (`--rounds 9`). Prints one table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pygit2

from bench.corpora import DEFAULT_WORK, prepare
from bench.index_build import source_bytes
from bench.plain_term_rows import VARIANT_ENV, VARIANTS, plain_tokenizer, variant_in_use
from bench.speed import core_scaling
from bench.tables import render
from worker.index import build_commit_index, start_build_workers, wait_for_build_workers
from worker.index.analysis.segment_builder import SegmentBuilder
from worker.index.store import build_workers
from worker.index.store.blob_places import missing_blobs
from worker.index.store.commit_view import build_commit_tables, read_manifest
from worker.index.store.shared_runs import blob_sources
from worker.index.store.tree_listing import tree_blobs

PROJECT_ROOT: Final = Path(__file__).resolve().parent.parent
KEEP_RATIO: Final = 1.5
"""Hand-written code a library already does stays only at this speed-up on a whole build."""
MAX_BLOB_BYTES: Final = 1 << 20
RESULT_PREFIX: Final = "bench.tokenizer result: "
_WORKER_CPU: Final = re.compile(r"cpu_seconds=\{'user': ([0-9.]+), 'system': ([0-9.]+)\}")
"""In a build worker's log line (`search.index.worker`): the only event that has the key."""


@dataclass
class Figures:
    """Everything measured on one corpus."""

    corpus: str
    files: int
    indexable_mb: float
    workers: int
    checked_blobs: int = 0
    differing: list[str] = field(default_factory=list)
    """Tables that came out different with the plain tokenizer (none: identical)."""
    runs: dict[str, list[float]] = field(default_factory=lambda: {v: [] for v in VARIANTS})
    """Seconds of each cold build, by variant, in the order run."""
    cpu_runs: dict[str, list[float]] = field(default_factory=lambda: {v: [] for v in VARIANTS})
    """CPU seconds of each cold build (every process of it), by variant."""
    core_scaling: list[float] = field(default_factory=list)

    def ratio(self, runs: dict[str, list[float]]) -> float:
        """How many times less a whole build takes with the bulk analysis (plain / bulk), in
        medians of `runs` (wall or CPU seconds)."""
        if not runs["bulk"] or not runs["plain"]:
            return 0.0
        return statistics.median(runs["plain"]) / statistics.median(runs["bulk"])


def differing_tables(repo: pygit2.Repository, commit: str, every: int = 1) -> tuple[int, list[str]]:
    """How many blobs were analysed, and the tables of their segment and of the commit's path
    view that the plain tokenizer makes differently from the bulk one (none: identical).

    Every `every`-th distinct blob of the commit, analysed in this process both ways.
    """
    entries = tree_blobs(repo, commit)
    items = missing_blobs(entries, {}, set())[::every]
    locations = {oid: (0, row) for row, (_, oid) in enumerate(items)}
    built = []
    for variant in VARIANTS:
        with plain_tokenizer() if variant == "plain" else nullcontext():
            if variant_in_use() != variant:
                raise RuntimeError(f"the {variant} tokenizer is not in use")
            builder = SegmentBuilder(MAX_BLOB_BYTES)
            builder.add(blob_sources(repo, items, MAX_BLOB_BYTES))
            segment = builder.tables()
            tables = {f.name: getattr(segment, f.name) for f in dataclasses.fields(segment)}
            view = build_commit_tables(entries, locations)
            tables |= {f"view.{f.name}": getattr(view, f.name) for f in dataclasses.fields(view)}
        built.append(tables)
    bulk, plain = built
    return len(items), [name for name in bulk if not bulk[name].equals(plain[name])]


def build_once(repo_path: Path, commit: str, cache: Path, workers: int) -> dict[str, object]:
    """In a process of its own: time one cold build of `commit` into `cache` (empty).

    Which tokenizer builds is set by `VARIANT_ENV` (see `bench.plain_term_rows`); with
    several workers, one forked from the fork server first shows that they use it too.
    """
    variant = variant_in_use()
    repo = pygit2.Repository(str(repo_path))
    workers_variant = variant
    if workers > 1:
        with ProcessPoolExecutor(1, mp_context=build_workers.fork_server()) as pool:
            workers_variant = pool.submit(variant_in_use).result()
        start_build_workers(workers)
        wait_for_build_workers()
    started, cpu_started = time.perf_counter(), time.process_time()
    commit_dir = build_commit_index(cache, "bench/corpus", repo, commit, workers=workers)
    return {
        "variant": variant,
        "workers_variant": workers_variant,
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu_started,
        "segments": len(read_manifest(commit_dir)["segments"]),
    }


def timed_build(
    variant: str, repo_path: Path, commit: str, workers: int, scratch: Path
) -> tuple[float, float]:
    """Seconds of one cold build with `variant`'s tokenizer, in a fresh process, and the CPU
    seconds of every process of it (the build workers report theirs in their log line)."""
    cache = Path(tempfile.mkdtemp(prefix=f"{variant}-", dir=scratch))
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), VARIANT_ENV: variant}
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.tokenizer",
                "--build-once",
                "--repo",
                str(repo_path),
                "--commit",
                commit,
                "--cache",
                str(cache),
                "--workers",
                str(workers),
            ],
            env=env,
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(RESULT_PREFIX)]
    if done.returncode or not lines:
        raise RuntimeError(f"{variant} build failed ({done.returncode}):\n{done.stderr[-4000:]}")
    result = json.loads(lines[-1].removeprefix(RESULT_PREFIX))
    if (result["variant"], result["workers_variant"]) != (variant, variant):
        raise RuntimeError(f"asked for the {variant} tokenizer, the build used {result}")
    reported = _WORKER_CPU.findall(done.stdout)
    # Build workers report their CPU for each segment they write; this process, for none.
    if reported and len(reported) != result["segments"]:
        raise RuntimeError(
            f"{len(reported)} build workers reported CPU time for {result}:\n{done.stdout}"
        )
    workers_cpu = sum(float(user) + float(system) for user, system in reported)
    return float(result["seconds"]), float(result["cpu_seconds"]) + workers_cpu


def run_corpus(
    name: str,
    repo_path: Path,
    commit: str,
    *,
    workers: int,
    rounds: int,
    check_every: int,
    scratch: Path,
    files: int,
) -> Figures:
    """Check the two tokenizers agree on the corpus, then time builds with each in turn."""
    repo = pygit2.Repository(str(repo_path))
    figures = Figures(name, files, source_bytes(repo, commit, MAX_BLOB_BYTES) / 1e6, workers)
    print(f"[{name}] same tables both ways? (every {check_every}th blob)", flush=True)
    figures.checked_blobs, figures.differing = differing_tables(repo, commit, check_every)
    for round_ in range(rounds):
        for variant in VARIANTS:
            seconds, cpu = timed_build(variant, repo_path, commit, workers, scratch)
            figures.runs[variant].append(seconds)
            figures.cpu_runs[variant].append(cpu)
            print(
                f"[{name}] round {round_ + 1}: {variant} {seconds:.2f} s, {cpu:.2f} s CPU",
                flush=True,
            )
    figures.core_scaling = core_scaling(workers, rounds=3) if workers > 1 else []
    return figures


def _spread(values: Sequence[float], unit: str) -> str:
    if not values:
        return "n/a"
    low, high = min(values), max(values)
    return f"{statistics.median(values):.2f}{unit} (median of {len(values)}: {low:.2f}-{high:.2f})"


def _processes(n: int) -> str:
    return "1 process" if n == 1 else f"{n} processes"


def table(figures: Figures) -> str:
    """The one table: both builds side by side, the check, the machine's state."""
    f = figures
    same = "identical" if not f.differing else "DIFFERENT: " + ", ".join(f.differing)
    rows = [
        ("corpus", "measure", "bulk: numpy (product)", "plain: tokens.py", "plain / bulk"),
        (f.corpus, "files / MB indexable", f"{f.files} / {f.indexable_mb:.1f} MB", "", ""),
        (
            f.corpus,
            f"segment + path tables, {f.checked_blobs} blobs",
            same,
            same,
            "",
        ),
        (
            f.corpus,
            f"whole cold build, {_processes(f.workers)}",
            _spread(f.runs["bulk"], " s"),
            _spread(f.runs["plain"], " s"),
            f"{f.ratio(f.runs):.2f}x (the twin stays at >= {KEEP_RATIO}x)",
        ),
        (
            f.corpus,
            "CPU seconds of it, every process",
            _spread(f.cpu_runs["bulk"], " s"),
            _spread(f.cpu_runs["plain"], " s"),
            f"{f.ratio(f.cpu_runs):.2f}x",
        ),
        (
            f.corpus,
            f"CPU loop, {_processes(f.workers)} at once",
            _spread(f.core_scaling, "x one process"),
            "",
            f"ideal {f.workers}x",
        ),
    ]
    return render(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry."""
    parser = argparse.ArgumentParser(prog="python -m bench.tokenizer", description=__doc__)
    parser.add_argument("--corpus", default="django", choices=["django", "flask", "linux"])
    parser.add_argument("--rounds", type=int, default=3, help="builds of each, alternated")
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="default: the mirror's"
    )
    parser.add_argument("--check-every", type=int, default=10, help="check every K-th blob")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--build-once", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--repo", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--commit", help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build_once:
        result = build_once(args.repo, args.commit, args.cache, args.workers)
        print(RESULT_PREFIX + json.dumps(result), flush=True)
        return 0
    corpus = prepare([args.corpus], args.work.resolve())[args.corpus]
    scratch = Path(tempfile.mkdtemp(prefix="bench-tokenizer-"))
    try:
        figures = run_corpus(
            corpus.name,
            corpus.path,
            corpus.base_commit,
            workers=args.workers,
            rounds=args.rounds,
            check_every=args.check_every,
            scratch=scratch,
            files=corpus.files,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print()
    print(table(figures))
    return 1 if figures.differing else 0


if __name__ == "__main__":
    sys.exit(main())
