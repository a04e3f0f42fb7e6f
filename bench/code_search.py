"""Code search benchmark: `code.search` over NATS beside `git grep`, same commit, one run.

    python -m bench.code_search [--corpus linux] [--work DIR] [--runs 5]

The corpus (from `bench.corpora`) is mirrored into a fresh cache, which stores its
trigram index; a real nats-server and one worker process serve it, and a client times
three queries: a common literal, a regular expression and a rare identifier. `git grep`
runs on the same mirrored bare repository at the same commit. Prints one table: the first
(cold) and median warm latency of each, with how much work each side did.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.corpora import DEFAULT_WORK, prepare
from contracts.code import CodeSearchRequest, CodeSearchResponse
from contracts.subjects import Subject
from tests.support.workers import WorkerProcess
from worker.cache import CacheLayout
from worker.client import RepoReaderClient
from worker.embedded_nats import EmbeddedNats
from worker.mirror import Mirror
from worker.toolreplies import join_batches


@dataclass(frozen=True)
class Query:
    """One benchmark query, as repo-reader and git grep each spell it."""

    label: str
    text: str
    regex: bool
    git_grep: tuple[str, ...]


QUERIES = {
    "linux": [
        Query("literal", "spin_lock_irqsave", False, ("-F", "-e", "spin_lock_irqsave")),
        Query(
            "regex",
            r"struct [A-Za-z0-9_]+_ops \{",
            True,
            ("-E", "-e", r"struct [A-Za-z0-9_]+_ops \{"),
        ),
        Query("rare identifier", "xfrm_state_lookup_byspi", False,
              ("-F", "-e", "xfrm_state_lookup_byspi")),
    ],
    "django": [
        Query("literal", "get_queryset", False, ("-F", "-e", "get_queryset")),
        Query("regex", r"def [a-z_]+_view\(", True, ("-E", "-e", r"def [a-z_]+_view\(")),
        Query("rare identifier", "sensitive_post_parameters", False,
              ("-F", "-e", "sensitive_post_parameters")),
    ],
}  # fmt: skip


@dataclass
class Measured:
    """Latencies and work counts of one query on both sides."""

    query: Query
    reader_ms: list[float] = field(default_factory=list)
    git_ms: list[float] = field(default_factory=list)
    hits: int = 0
    total_count: int = 0
    candidates: int = 0
    scanned: int = 0
    index: str = ""
    exhaustive: bool = True
    git_lines: int = 0


def mirror(corpus_path: Path, name: str, cache: Path) -> float:
    """Mirror the corpus into a fresh cache; returns the index build time in seconds."""
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    config = cache / "repo-reader.toml"
    config.write_text("[server]\nrequest_timeout_seconds = 60\n")
    syncer = Mirror(cache, config)
    syncer.add(name, str(corpus_path))
    (result,) = syncer.sync([name])
    return result.index_seconds


async def time_reader(url: str, name: str, commit: str, measured: Measured, runs: int) -> None:
    query = measured.query
    # The kernel's COPYING is not identified as one license; its files carry SPDX headers,
    # which each hit still reports.
    request = CodeSearchRequest(
        repo=name, revision=commit, query=query.text, regex=query.regex, require_license=False
    )
    async with await RepoReaderClient.connect(url, timeout=120) as client:
        for _ in range(runs + 1):
            started = time.perf_counter()
            batches = await client.call(Subject.CODE_SEARCH, request, CodeSearchResponse)
            measured.reader_ms.append(1000 * (time.perf_counter() - started))
    answer = join_batches(batches, "hits")
    measured.hits = len(answer.hits)
    measured.total_count = answer.total_count
    measured.candidates = answer.candidate_files
    measured.scanned = answer.files_scanned
    measured.index = answer.index
    measured.exhaustive = answer.exhaustive


def time_git_grep(repo: Path, commit: str, measured: Measured, runs: int) -> None:
    command = ["git", f"--git-dir={repo}", "grep", "-I", "-n", *measured.query.git_grep, commit]
    for _ in range(runs + 1):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, check=False)
        measured.git_ms.append(1000 * (time.perf_counter() - started))
    measured.git_lines = done.stdout.count(b"\n")


def render(corpus: str, files: int, index_seconds: float, results: Sequence[Measured]) -> str:
    rows = [
        ("query", "repo-reader cold", "warm p50", "git grep cold", "warm p50", "work"),
    ]
    for m in results:
        warm_reader = statistics.median(m.reader_ms[1:])
        warm_git = statistics.median(m.git_ms[1:])
        early = "" if m.exhaustive else ", stopped early"
        rows.append(
            (
                f"{m.query.label}: {m.query.text}",
                f"{m.reader_ms[0]:.0f} ms",
                f"{warm_reader:.0f} ms",
                f"{m.git_ms[0]:.0f} ms",
                f"{warm_git:.0f} ms",
                f"repo-reader: {m.hits} hits of {m.total_count} lines, index={m.index}, "
                f"{m.scanned}/{m.candidates} candidate files verified{early}; "
                f"git grep: {m.git_lines} lines",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "-" * max(len(line) for line in lines))
    built = (
        "indexes reused from an earlier run"
        if math.isnan(index_seconds)  # --reuse-cache
        else f"trigram + research indexes built in {index_seconds:.0f} s"
    )
    head = f"{corpus}: {files} files, {built}"
    return head + "\n" + "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.code_search", description=__doc__)
    parser.add_argument("--corpus", default="linux", choices=sorted(QUERIES))
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--runs", type=int, default=5, help="warm runs per query")
    parser.add_argument(
        "--reuse-cache", action="store_true", help="keep a cache mirrored by an earlier run"
    )
    args = parser.parse_args(argv)
    corpus = prepare([args.corpus], args.work.resolve())[args.corpus]
    name = f"bench/{corpus.name}"
    cache = args.work.resolve() / "code_search" / corpus.name / "cache"
    if args.reuse_cache and CacheLayout(cache).read_state(name) is not None:
        index_seconds = float("nan")
    else:
        print(f"[{corpus.name}] mirroring and indexing into {cache}", flush=True)
        index_seconds = mirror(corpus.path, name, cache)
    results = [Measured(q) for q in QUERIES[args.corpus]]
    with EmbeddedNats() as server, WorkerProcess(cache, server.url, concurrency=2):
        for measured in results:
            print(f"[{corpus.name}] repo-reader: {measured.query.label}", flush=True)
            asyncio.run(time_reader(server.url, name, corpus.base_commit, measured, args.runs))
    mirrored = CacheLayout(cache).repo_dir(name)
    for measured in results:
        print(f"[{corpus.name}] git grep: {measured.query.label}", flush=True)
        time_git_grep(mirrored, corpus.base_commit, measured, args.runs)
    print()
    print(render(corpus.name, corpus.files, index_seconds, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
