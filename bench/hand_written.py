"""Hand-written parts of the analysis against the library each stands in for, on whole builds.

    python -m bench.hand_written [--corpus django] [--corpus linux] [--every K] [--runs 3]

A hand-written part stays only where it makes a whole build at least 1.5x faster than the
well-kept library doing the same job. Each row analyses the same blobs in this process (for
Linux every K-th distinct blob, a sample of every directory) with the product as it is, and
with one part swapped for the library: reading blobs through libgit2's object database
instead of the pack reader, Arrow's sort instead of the radix sort of terms, parsing whole
files instead of the outlines the lexers cut. Prints the median time of each and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pygit2

from bench.corpora import DEFAULT_WORK, prepare
from worker.index.analysis import chunking, vocabulary
from worker.index.analysis.segment_builder import SegmentBuilder
from worker.index.store import build
from worker.index.store.build import blob_sources, missing_blobs, tree_blobs

THRESHOLD = 1.5


def arrow_sort_binary(strings: pa.Array) -> tuple[Any, Any]:
    """`worker.index.analysis.strings.sort_binary` done by Arrow's sort."""
    order = pc.sort_indices(strings).to_numpy().astype(np.int64)
    ordered = strings.take(pa.array(order))
    repeat = np.zeros(len(order), dtype=bool)
    if len(order) > 1:
        same = pc.equal(ordered.slice(1), ordered.slice(0, len(order) - 1))
        repeat[1:] = same.to_numpy(zero_copy_only=False)
    return order, repeat


def libgit2_sources(
    repo: pygit2.Repository,
    items: Sequence[tuple[str, bytes]],
    max_blob_bytes: int,
    packs: Any = None,
) -> Iterator[Any]:
    """`blob_sources` reading every blob through libgit2's object database."""
    saved = build.PACK_READ_MIN_BLOBS
    build.PACK_READ_MIN_BLOBS = sys.maxsize
    try:
        yield from blob_sources(repo, items, max_blob_bytes, None)
    finally:
        build.PACK_READ_MIN_BLOBS = saved


@contextmanager
def swapped(module: Any, name: str, value: Any) -> Iterator[None]:
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, saved)


def analyse(
    repo: pygit2.Repository,
    items: Sequence[tuple[str, bytes]],
    sources: Callable[..., Iterator[Any]] = blob_sources,
) -> float:
    """Seconds to read and analyse `items` into a segment's tables."""
    started = time.perf_counter()
    builder = SegmentBuilder(1 << 20)
    builder.add(sources(repo, items, 1 << 20), total=len(items))
    builder.tables()
    return time.perf_counter() - started


VARIANTS: dict[str, Callable[[pygit2.Repository, Sequence[tuple[str, bytes]]], float]] = {
    "as built": analyse,
    "pack reader -> libgit2 odb": lambda repo, items: analyse(repo, items, libgit2_sources),
}


def _with_arrow_sort(repo: pygit2.Repository, items: Sequence[tuple[str, bytes]]) -> float:
    with swapped(vocabulary, "sort_binary", arrow_sort_binary):
        return analyse(repo, items)


def _parsed_whole(repo: pygit2.Repository, items: Sequence[tuple[str, bytes]]) -> float:
    with swapped(chunking, "_OUTLINERS", {}):
        return analyse(repo, items)


VARIANTS["radix sort -> Arrow sort_indices"] = _with_arrow_sort
VARIANTS["outline lexers -> whole-file parse"] = _parsed_whole


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
