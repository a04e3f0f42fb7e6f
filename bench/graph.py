"""Graph benchmark: build time and counts beside LocAgent, edge precision and recall, latency.

    python -m bench.graph [--corpus django] [--corpus linux] [--locagent DIR] [--runs 20]

Each corpus (from `bench.corpora`) is mirrored into a fresh cache (the index build, every
view, two processes, timed), then its graph is built from the stored index (timed: what the
graph adds). LocAgent's graph builder (`dependency_graph/build_graph.py` of the public
gersteinlab/LocAgent repository, from the local copy `--locagent` names; it needs networkx and
matplotlib) builds its graph of a checkout of the same commit in the same run, for Python
corpora. Edge precision and recall are measured on `bench.graph_cases`, small repositories
whose import, invoke and inherit edges are listed by hand, one per language. On Django,
graph.search and depth-2 graph.traverse run over NATS against one worker: the first call (it
maps the graph the mirror published) and the median of the others.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pygit2

from bench.code_search import checkout
from bench.corpora import DEFAULT_WORK, PreparedCorpus, prepare
from bench.graph_cases import CASES, GraphCase
from bench.tables import render
from contracts.graph import (
    GraphSearchRequest,
    GraphSearchResponse,
    GraphTraverseRequest,
    GraphTraverseResponse,
)
from contracts.subjects import Subject
from tests.support.gitrepos import commit, init_repo
from tests.support.workers import WorkerProcess
from worker.client import RepoReaderClient
from worker.index import IndexStore, build_commit_index
from worker.index.views.graph import build as graph_build
from worker.index.views.graph.build import build_graph
from worker.index.views.graph.model import CommitGraph, Relation
from worker.mirror.sync import Mirror, SyncResult
from worker.service.embedded_nats import EmbeddedNats

GRAPH_SHARE = 0.30
"""The graph may add at most this share of the index build's time."""
P50_MS = 10.0
PRECISION, RECALL = 0.95, 0.90
"""Python's targets; every language is reported."""
SEARCHES = ("QuerySet", "get_host", "csrf token", "HttpResponseRedirect", "Model.save")
WALKS = (
    "django/db/models/query.py:QuerySet.filter",
    "django/http/request.py:HttpRequest.get_host",
    "django/middleware/csrf.py:CsrfViewMiddleware.process_view",
)
_LOCAGENT_SCRIPT = """
import collections, json, sys, time
sys.path.insert(0, sys.argv[1])
from dependency_graph.build_graph import build_graph
started = time.perf_counter()
graph = build_graph(sys.argv[2], global_import=False)
seconds = time.perf_counter() - started
nodes = collections.Counter(d.get("type") for _, d in graph.nodes(data=True))
edges = collections.Counter(d.get("type") for _, _, d in graph.edges(data=True))
print(json.dumps({"seconds": seconds, "nodes": nodes, "edges": edges}))
"""


def found_edges(graph: CommitGraph) -> set[tuple[str, str, str]]:
    """The graph's import, invoke and inherit edges by id."""
    edges = graph.edges
    return {
        (graph.ids[int(s)], graph.ids[int(t)], Relation(int(r)).label)
        for s, t, r in zip(edges.source, edges.target, edges.relation, strict=True)
        if int(r) != Relation.CONTAIN
    }


def case_graph(case: GraphCase, root: Path) -> CommitGraph:
    """Build a case's repository, index and graph under `root`."""
    repo = init_repo(root / case.language)
    head = commit(repo, case.files, message="case")
    cache = root / f"cache-{case.language}"
    build_commit_index(cache, "cases/x", repo, head)
    index = IndexStore(cache).open("cases/x", repo, head, deadline=time.monotonic() + 60)
    return build_graph(index).graph


def precision_recall() -> list[tuple[str, float, float, int, int]]:
    """(language, precision, recall, edges found, edges known) of every case."""
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for case in CASES:
            found = found_edges(case_graph(case, Path(scratch)))
            right = len(found & case.edges)
            precision = right / len(found) if found else 1.0
            rows.append(
                (case.language, precision, right / len(case.edges), len(found), len(case.edges))
            )
    return rows


def locagent(directory: Path | None, tree: Path) -> dict[str, Any] | str:
    """LocAgent's graph of a checkout: seconds and counts, or why it did not run."""
    if directory is None:
        return "not run: no --locagent copy given"
    if not (directory / "dependency_graph" / "build_graph.py").is_file():
        return f"not run: {directory} holds no dependency_graph/build_graph.py"
    done = subprocess.run(
        [sys.executable, "-c", _LOCAGENT_SCRIPT, str(directory), str(tree)],
        capture_output=True,
        text=True,
        env={**os.environ, "MPLBACKEND": "Agg"},
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"failed: {last}"
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


async def latency(url: str, repo: str, runs: int) -> dict[str, tuple[float, float]]:
    """(first call, warm p50) in ms of graph.search and depth-2 graph.traverse."""
    out: dict[str, tuple[float, float]] = {}
    async with await RepoReaderClient.connect(url, timeout=600) as client:
        for label, requests in (
            ("graph.search", [GraphSearchRequest(repo=repo, query=q) for q in SEARCHES]),
            (
                "graph.traverse depth 2",
                [GraphTraverseRequest(repo=repo, start_entities=(w,), depth=2) for w in WALKS],
            ),
        ):
            times = []
            response_type = (
                GraphSearchResponse if label == "graph.search" else GraphTraverseResponse
            )
            for i in range(runs + 1):
                request = requests[i % len(requests)]
                started = time.perf_counter()
                await client.call(
                    Subject.GRAPH_SEARCH if label == "graph.search" else Subject.GRAPH_TRAVERSE,
                    request,
                    response_type,
                )
                times.append((time.perf_counter() - started) * 1000)
            out[label] = (times[0], statistics.median(times[1:]))
    return out


def _resolver_kind() -> str:
    """How the graph build runs: compiled by mypyc (setup.py), or the Python source."""
    return "pure Python" if (graph_build.__file__ or "").endswith(".py") else "compiled"


def mirror(corpus_path: Path, name: str, cache: Path) -> SyncResult:
    """Mirror the corpus into a fresh cache: its index, then its graph, each timed."""
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    config = cache / "repo-reader.toml"
    config.write_text("[server]\nrequest_timeout_seconds = 60\n[mirror]\nindex_workers = 2\n")
    syncer = Mirror(cache, config)
    syncer.add(name, str(corpus_path))
    (result,) = syncer.sync([name])
    return result


def corpus_rows(
    corpus: PreparedCorpus, work: Path, locagent_dir: Path | None, runs: int, *, timed: bool
) -> list[tuple[str, ...]]:
    """The table rows of one corpus."""
    name = f"bench/{corpus.name}"
    cache = work / "graph" / corpus.name / "cache"
    print(f"[{corpus.name}] mirroring and indexing into {cache}", flush=True)
    synced = mirror(corpus.path, name, cache)
    index_seconds = synced.index_seconds
    repo = pygit2.Repository(str(corpus.path))
    index = IndexStore(cache).open(name, repo, corpus.base_commit, deadline=time.monotonic() + 3600)
    print(f"[{corpus.name}] graph", flush=True)
    built = build_graph(index)
    nodes, edges = built.graph.counts()
    share = synced.graph_seconds / index_seconds
    rows = [
        (
            f"{corpus.name}: index build (every view, 2 processes)",
            f"{index_seconds:.1f} s",
            "",
            "",
        ),
        (
            f"{corpus.name}: graph build and publish (mirror)",
            f"{synced.graph_seconds:.1f} s ({share:.0%} of the index build); "
            f"the build alone {built.seconds:.1f} s ({_resolver_kind()})",
            f"<= {GRAPH_SHARE:.0%}",
            "met" if share <= GRAPH_SHARE else "MISSED",
        ),
        (
            f"{corpus.name}: graph counts",
            _counts(nodes) + "; " + _counts(edges),
            "",
            "",
        ),
    ]
    if corpus.name in ("django", "flask", "requests", "click"):
        print(f"[{corpus.name}] LocAgent", flush=True)
        tree = checkout(corpus, work / "graph" / corpus.name / "checkout")
        peer = locagent(locagent_dir, tree)
        if isinstance(peer, str):
            rows.append((f"{corpus.name}: LocAgent build_graph", peer, "", ""))
        else:
            rows.append(
                (
                    f"{corpus.name}: LocAgent build_graph (1 process)",
                    f"{peer['seconds']:.1f} s; "
                    + _counts(peer["nodes"])
                    + "; "
                    + _counts(peer["edges"]),
                    "",
                    "",
                )
            )
    else:
        rows.append((f"{corpus.name}: LocAgent", "not run: it parses Python only", "", ""))
    if timed:
        with EmbeddedNats() as server, WorkerProcess(cache, server.url, concurrency=2):
            print(f"[{corpus.name}] latency over NATS", flush=True)
            measured = asyncio.run(latency(server.url, name, runs))
        for label, (first, p50) in measured.items():
            rows.append(
                (
                    f"{corpus.name}: {label} over NATS",
                    f"first {first:.1f} ms (maps the published graph), warm p50 {p50:.1f} ms",
                    f"p50 <= {P50_MS:.0f} ms",
                    "met" if p50 <= P50_MS else "MISSED",
                )
            )
    return rows


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.graph", description=__doc__)
    parser.add_argument("--corpus", action="append", choices=("django", "linux", "flask"))
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--locagent", type=Path, help="a copy of gersteinlab/LocAgent")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    rows: list[tuple[str, ...]] = [("measure", "repo-reader (and peer)", "target", "")]
    for language, precision, recall, found, known in precision_recall():
        python = language == "python"
        ok = precision >= PRECISION and recall >= RECALL
        rows.append(
            (
                f"edges, {language} case",
                f"precision {precision:.2f}, recall {recall:.2f} ({found} found, {known} known)",
                f">= {PRECISION}, >= {RECALL}" if python else "(reported)",
                ("met" if ok else "MISSED") if python else "",
            )
        )
    work = args.work.resolve()
    names = args.corpus or ["django"]
    corpora = prepare(names, work)
    for name in names:
        rows += corpus_rows(corpora[name], work, args.locagent, args.runs, timed=name == "django")
    print()
    print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
