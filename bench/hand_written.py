"""Hand-written parts of the analysis against the library each stands in for, on whole builds.

    python -m bench.hand_written [--corpus django] [--corpus linux] [--every K] [--runs 3]

A hand-written part stays only where it makes a whole build at least 1.5x faster than the
well-kept library doing the same job. Each row analyses the same blobs in this process (for
Linux every K-th distinct blob, a sample of every directory) with the product as it is, and
with one part swapped for the library: tree-sitter parsing whole files instead of the
outlines the lexers cut. Prints the median time of each and the ratio. (A pack-file reader
beside libgit2 and a radix sort beside Arrow's were measured here at 0.97-0.98x and
1.00-1.07x of a whole build, and replaced by the libraries.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pygit2

from bench.corpora import DEFAULT_WORK, prepare
from worker.index.analysis import chunking
from worker.index.analysis.segment_builder import SegmentBuilder
from worker.index.store.blob_places import missing_blobs
from worker.index.store.shared_runs import blob_sources
from worker.index.store.tree_listing import tree_blobs

THRESHOLD = 1.5


@contextmanager
def swapped(module: Any, name: str, value: Any) -> Iterator[None]:
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, saved)


def analyse(repo: pygit2.Repository, items: Sequence[tuple[str, bytes]]) -> float:
    """Seconds to read and analyse `items` into a segment's tables."""
    started = time.perf_counter()
    builder = SegmentBuilder(1 << 20)
    builder.add(blob_sources(repo, items, 1 << 20), total=len(items))
    builder.tables()
    return time.perf_counter() - started


def _parsed_whole(repo: pygit2.Repository, items: Sequence[tuple[str, bytes]]) -> float:
    with swapped(chunking, "_OUTLINERS", {}):
        return analyse(repo, items)


VARIANTS: dict[str, Callable[[pygit2.Repository, Sequence[tuple[str, bytes]]], float]] = {
    "as built": analyse,
    "outline lexers -> whole-file parse": _parsed_whole,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hand_written", description=__doc__)
    parser.add_argument("--corpus", action="append", choices=["django", "linux"])
    parser.add_argument("--every", type=int, default=8, help="Linux: every K-th blob")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    names = args.corpus or ["django", "linux"]
    corpora = prepare(names, DEFAULT_WORK)
    rows = [("corpus", "variant", "median s", "runs", "hand-written gain", "verdict")]
    for name in names:
        corpus = corpora[name]
        repo = pygit2.Repository(str(corpus.path))
        items = missing_blobs(tree_blobs(repo, corpus.base_commit), {}, set())
        if name == "linux":
            items = items[:: args.every]
        analyse(repo, items[:200])  # grammars, compiled kernels
        times = {label: [] for label in VARIANTS}  # type: dict[str, list[float]]
        for _ in range(args.runs):  # interleaved, so that a slow spell hits every variant
            for label, run in VARIANTS.items():
                times[label].append(run(repo, items))
        base = statistics.median(times["as built"])
        for label, spent in times.items():
            median = statistics.median(spent)
            gain = median / base
            verdict = "" if label == "as built" else ("keep" if gain >= THRESHOLD else "replace")
            rows.append(
                (
                    name,
                    label,
                    f"{median:.2f}",
                    " ".join(f"{t:.2f}" for t in spent),
                    "" if label == "as built" else f"{gain:.2f}x",
                    verdict,
                )
            )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
