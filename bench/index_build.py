"""Micro-benchmarks of the search engine: index build MB/s, incremental build, query latency, RSS.

Also the quality harness's adapter: `RepoReaderSystem` is the `(repo_path, commit, query) ->
[path]` callable `bench.quality` runs (with `prepare` building the index first).

    python -m bench.index_build build   REPO [--commit SHA] [--workers N] [--cache DIR]
    python -m bench.index_build phases  REPO [--commit SHA] [--every K]
    python -m bench.index_build query   REPO [--commit SHA] [--cache DIR] [--queries FILE]
    python -m bench.index_build incremental REPO --base SHA --next SHA [--cache DIR]

`build` reports the load average around the build (the machine is shared: read MB/s per
core with it). `phases` analyses the commit's blobs (every K-th) in this process and says
where the time goes: reading blobs (unhashed, as a build worker reads them), chunking
(outline + parse), tokenising, trigrams, references, postings.
Measure on a packed repository, as the mirror keeps them (`git clone --bare --no-local`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pygit2

from worker.index import IndexStore, build_commit_index
from worker.index.analysis.segment_builder import SegmentBuilder, is_indexable
from worker.index.store.blob_places import missing_blobs
from worker.index.store.build import repo_index_dir
from worker.index.store.graph_tables import read_carried, write_graph
from worker.index.store.shared_runs import blob_sources
from worker.index.store.tree_listing import tree_blobs
from worker.index.views.graph.build import build_graph

DEFAULT_QUERIES = (
    "where is the CSRF token checked",
    "how are database connections pooled and closed",
    "parse command line options and arguments",
    "memory allocation failure handling in the page allocator",
    "scheduler picks the next task to run",
    "URL routing and view dispatch",
    "TLS certificate verification for HTTPS requests",
    "read configuration file and environment variables",
    "QuerySet.filter chaining with Q objects",
    "get_user_name returns the wrong value after login",
)


def rss_figures() -> dict[str, int]:
    """VmRSS, RssAnon and RssFile of this process, in KiB."""
    figures = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            figures[key] = int(value.split()[0])
    return figures


def source_bytes(repo: pygit2.Repository, commit: str, max_blob_bytes: int = 1 << 20) -> int:
    """Bytes of text blobs (as indexed) in the commit."""
    total = 0
    seen: set[bytes] = set()
    for _, oid in tree_blobs(repo, commit):
        if oid in seen:
            continue
        seen.add(oid)
        data = cast(pygit2.Blob, repo[pygit2.Oid(raw=oid)]).data
        if is_indexable(data, max_blob_bytes):
            total += len(data)
    return total


def _resolve(repo: pygit2.Repository, rev: str | None) -> str:
    return str(repo.revparse_single(rev or "HEAD").peel(pygit2.Commit).id)


def bench_build(repo_path: Path, commit: str | None, cache: Path, workers: int) -> dict[str, Any]:
    """Build the index of a commit from nothing; MB/s of indexed source per core used."""
    repo = pygit2.Repository(str(repo_path))
    sha = _resolve(repo, commit)
    size = source_bytes(repo, sha)
    load_before = os.getloadavg()
    started = time.perf_counter()
    build_commit_index(cache, "bench/repo", repo, sha, workers=workers)
    seconds = time.perf_counter() - started
    load_after = os.getloadavg()
    index_bytes = sum(
        f.stat().st_size for f in repo_index_dir(cache, "bench/repo").rglob("*") if f.is_file()
    )
    return {
        "commit": sha,
        "source_mb": round(size / 1e6, 1),
        "seconds": round(seconds, 2),
        "mb_per_s": round(size / 1e6 / seconds, 2),
        "mb_per_s_per_core": round(size / 1e6 / seconds / max(1, workers), 2),
        "index_mb": round(index_bytes / 1e6, 1),
        "load_avg_1m_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
    }


def bench_phases(repo_path: Path, commit: str | None, every: int = 1) -> dict[str, Any]:
    """Analyse a commit's distinct blobs (every `every`-th) in this process, phase by phase."""
    repo = pygit2.Repository(str(repo_path))
    sha = _resolve(repo, commit)
    items = missing_blobs(tree_blobs(repo, sha), {}, set())[::every]
    builder = SegmentBuilder(1 << 20)
    load_before = os.getloadavg()
    started = time.perf_counter()
    cpu_started = time.process_time()
    builder.add(blob_sources(repo, items, 1 << 20), total=len(items))
    added = time.perf_counter() - started
    builder.tables()
    seconds = time.perf_counter() - started
    phases = {"read": added - builder.analyse_seconds, **builder.phase_seconds}
    phases["other"] = seconds - sum(phases.values())
    return {
        "commit": sha,
        "blobs": len(items),
        "source_mb": round(builder.bytes_analysed / 1e6, 1),
        "seconds": round(seconds, 2),
        "cpu_seconds": round(time.process_time() - cpu_started, 2),
        "mb_per_s": round(builder.bytes_analysed / 1e6 / seconds, 2),
        "phase_seconds": {k: round(v, 2) for k, v in phases.items()},
        "chunks": builder.n_chunks,
        "load_avg_1m_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
    }


def bench_incremental(repo_path: Path, base: str, nxt: str, cache: Path) -> dict[str, Any]:
    """Build `base`, then time building `nxt` (which reuses base's segments)."""
    repo = pygit2.Repository(str(repo_path))
    base_sha, next_sha = _resolve(repo, base), _resolve(repo, nxt)
    build_commit_index(cache, "bench/repo", repo, base_sha)
    started = time.perf_counter()
    build_commit_index(cache, "bench/repo", repo, next_sha)
    return {"base": base_sha, "next": next_sha, "seconds": round(time.perf_counter() - started, 3)}


@dataclass(frozen=True, slots=True)
class GraphCarry:
    """The entity graph of an edited commit, carried over from its parent's and built whole."""

    carried_seconds: float
    whole_seconds: float
    resolved: int
    files: int


def bench_graph_carry(
    cache: Path, repo_id: str, repo: pygit2.Repository, base: str, edited: str
) -> GraphCarry:
    """Time the graph of `edited` built from `base`'s stored graph (as the mirror builds
    it), and built whole; both commits' indexes must be stored. `base`'s graph is built and
    stored first, as the mirror stores it, untimed."""
    store = IndexStore(cache)
    base_dir = repo_index_dir(cache, repo_id) / "commits" / base
    base_index = store.open(repo_id, repo, base, deadline=time.monotonic() + 600)
    stored = build_graph(base_index)
    write_graph(base_dir, stored.graph, stored.state)
    previous = read_carried(base_dir)
    if previous is None:
        raise RuntimeError(f"{base[:12]}: its graph did not read back")
    index = IndexStore(cache).open(repo_id, repo, edited, deadline=time.monotonic() + 600)
    carried = build_graph(index, previous)
    whole = build_graph(index)
    a, b = carried.graph, whole.graph
    same = list(a.names) == list(b.names) and all(
        np.array_equal(getattr(a.edges, c), getattr(b.edges, c))
        for c in ("source", "target", "relation")
    )
    if not same:
        raise RuntimeError("the carried graph differs from the whole build's")
    return GraphCarry(carried.seconds, whole.seconds, carried.resolved, carried.files)


def bench_query(
    repo_path: Path, commit: str | None, cache: Path, queries: Sequence[str], rounds: int = 5
) -> dict[str, Any]:
    """Warm query latency (first 20 hits, as the research handler takes them) and RSS."""
    repo = pygit2.Repository(str(repo_path))
    sha = _resolve(repo, commit)
    build_commit_index(cache, "bench/repo", repo, sha)
    before = rss_figures()
    store = IndexStore(cache)
    index = store.open("bench/repo", repo, sha, deadline=time.monotonic() + 600)
    opened = rss_figures()
    for q in queries:  # warm-up: page the touched postings in once
        _take(index.ranked(q), 20)
    times = []
    for _ in range(rounds):
        for q in queries:
            started = time.perf_counter()
            _take(index.ranked(q), 20)
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return {
        "queries": len(times),
        "p50_ms": round(statistics.median(times), 2),
        "p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))], 2),
        "max_ms": round(times[-1], 2),
        "rss_kib_before_open": before,
        "rss_kib_after_open": opened,
        "rss_kib_after_queries": rss_figures(),
    }


def _take(hits: Any, n: int) -> list[Any]:
    out = []
    for hit in hits:
        out.append(hit)
        if len(out) >= n:
            break
    return out


class RepoReaderSystem:
    """The quality harness's system: files in the order of their first hit."""

    name = "repo-reader"

    def __init__(self, cache: Path | None = None, depth: int = 100) -> None:
        self.cache = cache or Path(tempfile.mkdtemp(prefix="search-quality-"))
        self.depth = depth
        self.store = IndexStore(self.cache, lru_size=8)
        self._indexes: dict[tuple[str, str], Any] = {}

    def prepare(self, repo_path: Path, commit: str) -> float:
        """Build the commit's index; returns seconds."""
        started = time.perf_counter()
        repo = pygit2.Repository(str(repo_path))
        repo_id = "bench/" + Path(repo_path).name.removesuffix(".git")
        build_commit_index(self.cache, repo_id, repo, commit)
        self._indexes[(str(repo_path), commit)] = self.store.open(
            repo_id, repo, commit, deadline=time.monotonic() + 3600
        )
        return time.perf_counter() - started

    def __call__(self, repo_path: Path, commit: str, query: str) -> list[str]:
        key = (str(repo_path), commit)
        if key not in self._indexes:
            self.prepare(repo_path, commit)
        files: list[str] = []
        seen: set[str] = set()
        for hit in self._indexes[key].ranked(query):
            if hit.path not in seen:
                seen.add(hit.path)
                files.append(hit.path)
                if len(files) >= self.depth:
                    break
        return files


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m bench.index_build", description=__doc__)
    parser.add_argument("what", choices=["build", "phases", "query", "incremental"])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--commit")
    parser.add_argument("--base")
    parser.add_argument("--next")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--every", type=int, default=1, help="phases: every K-th blob")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--queries", type=Path, help="one query per line")
    ns = parser.parse_args(args)
    cache = ns.cache or Path(tempfile.mkdtemp(prefix="search-bench-"))
    if ns.what == "build":
        result = bench_build(ns.repo, ns.commit, cache, ns.workers)
    elif ns.what == "phases":
        # Blobs read as a build worker reads them: without hashing each one again.
        pygit2.settings.enable_strict_hash_verification(False)
        result = bench_phases(ns.repo, ns.commit, ns.every)
    elif ns.what == "incremental":
        result = bench_incremental(ns.repo, ns.base, ns.next, cache)
    else:
        queries = ns.queries.read_text().splitlines() if ns.queries is not None else DEFAULT_QUERIES
        result = bench_query(ns.repo, ns.commit, cache, [q for q in queries if q.strip()])
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
