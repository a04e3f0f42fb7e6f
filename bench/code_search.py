"""Code search benchmark: `code.search` over NATS beside Russ Cox's codesearch, on one commit.

    python -m bench.code_search [--corpus linux] [--work DIR] [--runs 5] [--reuse-cache]

The corpus (from `bench.corpora`) is mirrored into a fresh cache: one build of every view of
the index (research and trigrams, in two processes), timed. A checkout of the same commit,
read once so that it is in the page cache as the mirror's fresh pack is, is indexed by
`cindex` (Debian package `codesearch`), timed, and each query runs through a real
nats-server and one worker (20 hits, as an agent asks) and through `csearch -n` (every
match printed). Prints one table: per query the cold and median warm latency of each side,
repo-reader's share of csearch's time and the target; then the two builds, the entity graph
that mirroring makes from the segments after the build, and the trigram view built alone
beside cindex (like with like: cindex builds nothing else).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pygit2

from bench.corpora import DEFAULT_WORK, PreparedCorpus, prepare
from bench.tables import render as render_table
from contracts.code import CodeSearchRequest, CodeSearchResponse
from contracts.subjects import Subject
from tests.support.workers import WorkerProcess
from worker.client import RepoReaderClient
from worker.config import ServerConfig
from worker.index.analysis.segment_builder import BATCH_BYTES, is_indexable
from worker.index.analysis.trigrams import TrigramCollector
from worker.index.store.blob_places import missing_blobs
from worker.index.store.segment import write_table
from worker.index.store.shared_runs import blob_sources
from worker.index.store.tree_listing import tree_blobs, tree_changes
from worker.mirror.sync import Mirror
from worker.repos.layout import CacheLayout
from worker.service.embedded_nats import EmbeddedNats
from worker.service.replies import join_batches

COMMON_P50_MS = 50.0
RARE_P50_MS = 10.0
SHARE_OF_CSEARCH = 0.2
BUILD_TIMES_CINDEX = 2.0


@dataclass(frozen=True)
class Query:
    """One benchmark query: a literal or an RE2 pattern, and whether it is rare."""

    text: str
    regex: bool = False
    rare: bool = False

    @property
    def label(self) -> str:
        kind = "rare identifier" if self.rare else "regex" if self.regex else "literal"
        return f"{kind}: {self.text}"

    @property
    def csearch_pattern(self) -> str:
        return self.text if self.regex else re.escape(self.text)


QUERIES = {
    "linux": [
        Query("spin_lock_irqsave"),
        Query("EXPORT_SYMBOL_GPL"),
        Query("kmalloc("),
        Query(r"struct [A-Za-z0-9_]+_ops \{", regex=True),
        Query(r"static int [a-z_]+_probe\(", regex=True),
        Query("xfrm_state_lookup_byspi", rare=True),
    ],
    "django": [
        Query("get_queryset"),
        Query("self.assertEqual("),
        Query(r"def [a-z_]+_view\(", regex=True),
        Query(r"class [A-Za-z]+\(models\.Model\)", regex=True),
        Query("sensitive_post_parameters", rare=True),
    ],
}


@dataclass
class Measured:
    """Latencies and work counts of one query on both sides."""

    query: Query
    reader_ms: list[float] = field(default_factory=list)
    csearch_ms: list[float] = field(default_factory=list)
    hits: int = 0
    total_count: int = 0
    candidates: int = 0
    scanned: int = 0
    index: str = ""
    exhaustive: bool = True
    csearch_lines: int = 0


class BuildSeconds(NamedTuple):
    """How long mirroring took to index a commit: the segments (every view's analysis, the
    build `cindex` is held against), then the entity graph made from them; and then a commit
    a few files away, every view and its graph (carried from the first's)."""

    index: float
    graph: float
    next_commit: float = math.nan
    files_changed: int = 0


def mirror(corpus_path: Path, name: str, cache: Path, edited: str | None = None) -> BuildSeconds:
    """Mirror the corpus into a fresh cache; returns how long its indexing took, and how
    long indexing the `edited` commit took after, as the mirror indexes any later commit."""
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    config = cache / "repo-reader.toml"
    config.write_text("[server]\nrequest_timeout_seconds = 60\n[mirror]\nindex_workers = 2\n")
    syncer = Mirror(cache, config)
    syncer.add(name, str(corpus_path))
    (result,) = syncer.sync([name])
    if edited is None:
        return BuildSeconds(result.index_seconds, result.graph_seconds)
    _, seconds = syncer.rebuild_index(name, edited)
    changes = tree_changes(
        pygit2.Repository(str(syncer.layout.repo_dir(name))), result.head, edited
    )
    changed = set() if changes is None else {*changes.gone, *(p for p, _ in changes.came)}
    return BuildSeconds(result.index_seconds, result.graph_seconds, seconds, len(changed))


def checkout(corpus: PreparedCorpus, directory: Path) -> Path:
    """A plain checkout of the corpus's base commit (made once, kept between runs)."""
    done = directory / ".bench-checkout-done"
    if done.is_file() and done.read_text() == corpus.base_commit:
        return directory
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    subprocess.run(
        [
            *("git", f"--git-dir={corpus.path}", f"--work-tree={directory}"),
            *("checkout", "-f", corpus.base_commit, "--", "."),
        ],
        check=True,
        capture_output=True,
    )
    done.write_text(corpus.base_commit)
    return directory


def read_through(tree: Path) -> int:
    """Read every file under `tree` once; returns the bytes read.

    The build on our side reads a pack the mirror has just written, from the page cache;
    cindex should read a tree that is there too, not one the disk has to give back.
    """
    total = 0
    for directory, _, names in os.walk(tree):
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as file:
                    while chunk := file.read(1 << 20):
                        total += len(chunk)
    return total


def build_cindex(tree: Path, index_file: Path, cindex: str) -> float:
    """Index `tree` into a fresh `index_file` with cindex, the tree read through first;
    returns the seconds cindex took."""
    read_through(tree)
    index_file.unlink(missing_ok=True)
    env = {**os.environ, "CSEARCHINDEX": str(index_file)}
    started = time.perf_counter()
    subprocess.run([cindex, str(tree)], check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def build_trigram_view(repo_path: Path, commit: str, out: Path, workers: int = 2) -> float:
    """Build the trigram view alone of a commit's blobs, in `workers` processes, into table
    files under `out`; returns the seconds it took (the tree's walk included).

    No product build makes this view alone; this drives the analysis's trigram part as a
    build worker does (the pack read without hashing again, batches of BATCH_BYTES, the
    tables written), to set it beside cindex, which builds trigrams only.
    """
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with ProcessPoolExecutor(workers, mp_context=get_context("forkserver")) as pool:
        # The processes start and load the compiled pass before the clock does, as the
        # build's workers are started ahead of it.
        list(pool.map(_trigram_part, [str(repo_path)] * workers, [[]] * workers, [None] * workers))
        started = time.perf_counter()
        repo = pygit2.Repository(str(repo_path))
        items = missing_blobs(tree_blobs(repo, commit), {}, set())
        parts = [items[k::workers] for k in range(workers)]
        outs = [out / f"part-{k}" for k in range(workers)]
        list(pool.map(_trigram_part, [str(repo_path)] * workers, parts, outs))
        return time.perf_counter() - started


def _trigram_part(repo_path: str, items: list[tuple[str, bytes]], out: Path | None) -> None:
    """In a pool process: the trigram tables of these blobs, written under `out` (none: only
    warm up)."""
    collector = TrigramCollector()
    if out is None:
        collector.add([b"int warm_up(void);"], [0])
        collector.tables()
        return
    pygit2.settings.enable_strict_hash_verification(False)
    repo = pygit2.Repository(repo_path)
    max_bytes = ServerConfig().max_blob_bytes
    texts: list[bytes] = []
    blobs: list[int] = []
    size = 0
    for blob, source in enumerate(blob_sources(repo, items, max_bytes)):
        if source.size > max_bytes or not is_indexable(source.data, max_bytes):
            continue
        texts.append(source.data)
        blobs.append(blob)
        size += len(source.data)
        if size >= BATCH_BYTES:
            collector.add(texts, blobs)
            texts, blobs, size = [], [], 0
    if texts:
        collector.add(texts, blobs)
    text, definitions = collector.tables()
    out.mkdir(parents=True)
    for name, table in (
        ("trigrams", text.trigrams),
        ("trigram_postings", text.postings),
        ("definition_trigrams", definitions.trigrams),
        ("definition_trigram_postings", definitions.postings),
        ("definition_lines", pa.table({"text": collector.definition_texts(len(items))})),
    ):
        write_table(out / f"{name}.arrow", table, flush=False)


def time_csearch(index_file: Path, csearch: str, measured: Measured, runs: int) -> None:
    env = {**os.environ, "CSEARCHINDEX": str(index_file)}
    command = [csearch, "-n", measured.query.csearch_pattern]
    for _ in range(runs + 1):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, check=False, env=env)
        measured.csearch_ms.append(1000 * (time.perf_counter() - started))
    measured.csearch_lines = done.stdout.count(b"\n")


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


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def render(
    corpus: PreparedCorpus,
    build_seconds: float,
    cindex_seconds: float,
    results: Sequence[Measured],
    *,
    trigram_seconds: float = math.nan,
    graph_seconds: float = math.nan,
    next_commit: tuple[float, int] = (math.nan, 0),
) -> str:
    """The benchmark's one table."""
    rows = [
        (
            "query",
            "repo-reader cold",
            "warm p50",
            "csearch p50",
            "share",
            "target",
            "",
            "work",
        )
    ]
    for m in results:
        warm = statistics.median(m.reader_ms[1:])
        peer = statistics.median(m.csearch_ms[1:])
        limit = RARE_P50_MS if m.query.rare else COMMON_P50_MS
        share = warm / peer if peer else math.inf
        ok = warm <= limit and (m.query.rare or share <= SHARE_OF_CSEARCH)
        target = f"<= {limit:.0f} ms" + ("" if m.query.rare else f", <= {SHARE_OF_CSEARCH}x")
        early = "" if m.exhaustive else ", stopped early"
        rows.append(
            (
                m.query.label,
                f"{m.reader_ms[0]:.1f} ms",
                f"{warm:.1f} ms",
                f"{peer:.1f} ms",
                f"{share:.2f}x",
                target,
                _verdict(ok),
                f"{m.hits} hits of {m.total_count} lines, {m.scanned}/{m.candidates} "
                f"candidate files verified{early}, index={m.index}; "
                f"csearch: {m.csearch_lines} lines",
            )
        )
    if not math.isnan(build_seconds):
        ratio = build_seconds / cindex_seconds
        rows.append(
            (
                "index build, every view (2 processes)",
                f"{build_seconds:.1f} s",
                "",
                f"cindex {cindex_seconds:.1f} s",
                f"{ratio:.2f}x",
                f"<= {BUILD_TIMES_CINDEX:.0f}x cindex",
                _verdict(ratio <= BUILD_TIMES_CINDEX),
                "repo-reader: research + trigrams + definitions; cindex: trigrams only",
            )
        )
    if not math.isnan(graph_seconds):
        whole = build_seconds + graph_seconds
        rows.append(
            (
                "entity graph, after the build (1 process)",
                f"{graph_seconds:.1f} s",
                "",
                f"cindex {cindex_seconds:.1f} s",
                f"{graph_seconds / cindex_seconds:.2f}x",
                "not in the row above",
                "",
                f"the graph of the commit made from the segments; with it, mirroring indexes "
                f"the commit in {whole:.1f} s, {whole / cindex_seconds:.2f}x cindex",
            )
        )
    next_seconds, files_changed = next_commit
    if not math.isnan(next_seconds) and not math.isnan(graph_seconds):
        whole = build_seconds + graph_seconds
        rows.append(
            (
                f"next commit, {files_changed} files changed",
                f"{next_seconds:.1f} s",
                "",
                f"whole {whole:.1f} s",
                f"{next_seconds / whole:.2f}x",
                "changed files only",
                "",
                "mirroring the next commit: every view and the entity graph carried from the "
                "first commit's; beside it, the two rows above (the whole index and graph)",
            )
        )
    if not math.isnan(trigram_seconds):
        rows.append(
            (
                "trigram view alone (2 processes)",
                f"{trigram_seconds:.1f} s",
                "",
                f"cindex {cindex_seconds:.1f} s",
                f"{trigram_seconds / cindex_seconds:.2f}x",
                "like with like",
                "",
                "repo-reader: text and definition-line trigrams, those lines; cindex: trigrams",
            )
        )
    head = (
        f"{corpus.name} {corpus.version}: {corpus.files} files, "
        f"{corpus.source_bytes / 1e6:.0f} MB, commit {corpus.base_commit[:12]}"
    )
    return head + "\n" + render_table(rows)


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"bench.code_search: {name} not found (apt-get install codesearch)")
    return found


def run(corpus: PreparedCorpus, work: Path, runs: int, *, reuse_cache: bool = False) -> str:
    """Measure both sides on one corpus; returns the table."""
    cindex, csearch = tool("cindex"), tool("csearch")
    name = f"bench/{corpus.name}"
    cache = work / "code_search" / corpus.name / "cache"
    if reuse_cache and CacheLayout(cache).read_state(name) is not None:
        built = BuildSeconds(math.nan, math.nan)
    else:
        print(f"[{corpus.name}] mirroring and indexing into {cache}", flush=True)
        built = mirror(corpus.path, name, cache, corpus.edited_commit)
    tree = checkout(corpus, work / "code_search" / corpus.name / "checkout")
    index_file = work / "code_search" / corpus.name / "csearchindex"
    print(f"[{corpus.name}] cindex", flush=True)
    cindex_seconds = build_cindex(tree, index_file, cindex)
    print(f"[{corpus.name}] trigram view alone", flush=True)
    trigram_seconds = build_trigram_view(
        corpus.path, corpus.base_commit, work / "code_search" / corpus.name / "trigram-view"
    )
    queries = QUERIES.get(corpus.name, QUERIES["django"])
    results = [Measured(q) for q in queries]
    with EmbeddedNats() as server, WorkerProcess(cache, server.url, concurrency=2):
        for measured in results:
            print(f"[{corpus.name}] repo-reader: {measured.query.label}", flush=True)
            asyncio.run(time_reader(server.url, name, corpus.base_commit, measured, runs))
    for measured in results:
        print(f"[{corpus.name}] csearch: {measured.query.label}", flush=True)
        time_csearch(index_file, csearch, measured, runs)
    return render(
        corpus,
        built.index,
        cindex_seconds,
        results,
        trigram_seconds=trigram_seconds,
        graph_seconds=built.graph,
        next_commit=(built.next_commit, built.files_changed),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.code_search", description=__doc__)
    parser.add_argument("--corpus", default="linux", choices=sorted(QUERIES))
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--runs", type=int, default=5, help="warm runs per query")
    parser.add_argument(
        "--reuse-cache", action="store_true", help="keep a cache mirrored by an earlier run"
    )
    args = parser.parse_args(argv)
    work = args.work.resolve()
    corpus = prepare([args.corpus], work)[args.corpus]
    table = run(corpus, work, args.runs, reuse_cache=args.reuse_cache)
    print()
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
