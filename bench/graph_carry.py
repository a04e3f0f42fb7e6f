"""The carried graph against the whole build, commit by commit down a repository's history.

    python -m bench.graph_carry REPO [REPO ...] [--commits N] [--work DIR]

For each repository, the last N first-parent commits are indexed oldest first. Each
commit's graph is carried from the one before as the mirror keeps it (written and read
back), and built whole; the two must be the same graph. Prints, per repository, the
commits compared, the mismatches (each named), the median time of each build and the
median share of files resolved again.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pygit2

from worker.index import IndexStore, build_commit_index
from worker.index.store.graph_tables import read_carried, write_graph
from worker.index.views.graph.build import GraphBuild, build_graph
from worker.index.views.graph.carried import Previous
from worker.index.views.graph.model import CommitGraph


@dataclass
class CarryRun:
    """What carrying one repository's graphs down its history gave."""

    repo: str
    commits: int = 0
    mismatches: list[str] = field(default_factory=list)
    carried_seconds: list[float] = field(default_factory=list)
    whole_seconds: list[float] = field(default_factory=list)
    resolved_share: list[float] = field(default_factory=list)


def same_graph(a: CommitGraph, b: CommitGraph) -> bool:
    """Whether two graphs have the same nodes, lines and edges."""
    return (
        list(a.names) == list(b.names)
        and list(a.paths) == list(b.paths)
        and all(
            np.array_equal(getattr(a, c), getattr(b, c))
            for c in ("types", "start_line", "end_line")
        )
        and all(
            np.array_equal(getattr(a.edges, c), getattr(b.edges, c))
            for c in ("source", "target", "relation")
        )
    )


def first_parent_commits(repo: pygit2.Repository, count: int) -> list[str]:
    """The last `count` commits of HEAD's first-parent line, oldest first."""
    found: list[str] = []
    commit: pygit2.Commit | None = repo.revparse_single("HEAD").peel(pygit2.Commit)
    while commit is not None and len(found) < count:
        found.append(str(commit.id))
        commit = commit.parents[0] if commit.parents else None
    return found[::-1]


def _stored(commit_dir: Path, built: GraphBuild) -> Previous:
    commit_dir.mkdir(parents=True, exist_ok=True)
    write_graph(commit_dir, built.graph, built.state)
    previous = read_carried(commit_dir)
    if previous is None:
        raise RuntimeError(f"{commit_dir}: the graph did not read back")
    return previous


def carry_history(repo_path: Path, commits: int, work: Path) -> CarryRun:
    """Carry the graph down the last `commits` commits of a repository, checking each."""
    repo = pygit2.Repository(str(repo_path))
    cache = work / "cache"
    store = IndexStore(cache)
    run = CarryRun(repo=str(repo_path))
    previous: Previous | None = None
    for step, sha in enumerate(first_parent_commits(repo, commits)):
        build_commit_index(cache, "bench/history", repo, sha, workers=1)
        index = store.open("bench/history", repo, sha, deadline=time.monotonic() + 600)
        whole = build_graph(index)
        built = whole
        if previous is not None:
            built = build_graph(index, previous)
            run.commits += 1
            run.carried_seconds.append(built.seconds)
            run.whole_seconds.append(whole.seconds)
            run.resolved_share.append(built.resolved / max(built.files, 1))
            if not same_graph(built.graph, whole.graph):
                run.mismatches.append(sha)
        previous = _stored(work / f"graph-{step % 2}", built)
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("repos", nargs="+", type=Path)
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument(
        "--work", type=Path, default=None, help="scratch directory (default: a temporary one)"
    )
    args = parser.parse_args(argv)
    header = ("commits", "mismatches", "carried", "whole", "resolved")
    print(f"{'repository':40s} " + " ".join(f"{h:>10s}" for h in header))
    failed = False
    for repo_path in args.repos:
        with tempfile.TemporaryDirectory(dir=args.work) as scratch:
            run = carry_history(repo_path, args.commits, Path(scratch))
        carried = statistics.median(run.carried_seconds) if run.carried_seconds else 0.0
        whole = statistics.median(run.whole_seconds) if run.whole_seconds else 0.0
        share = statistics.median(run.resolved_share) if run.resolved_share else 0.0
        print(
            f"{run.repo[-40:]:40s} {run.commits:10d} {len(run.mismatches):10d} "
            f"{carried:9.3f}s {whole:9.3f}s {share:10.1%}"
        )
        for sha in run.mismatches:
            print(f"  mismatch at {sha}")
        failed |= bool(run.mismatches)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
