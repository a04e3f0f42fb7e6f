"""The blobs a build's workers analyse: read from libgit2, in runs taken from one shared list.

A build with several workers hands each the same packed list of (path, oid) pairs; each takes
the next run of about `take_bytes` from a counter they share (see `build_workers`), analyses
it, and takes another until none is left, so the workers finish together whatever each run
costs. Each writes what it took as segments of about `segment_bytes` of source each.
"""

from __future__ import annotations

import bisect
import resource
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import pygit2
import structlog

from worker.index.analysis.segment_builder import BlobSource, SegmentBuilder
from worker.index.store import build_workers
from worker.index.store.segment import segment_id, write_segment

log = structlog.get_logger(__name__)
_OID_BYTES: Final = 20
MIN_STEAL_BYTES: Final = 256 << 10
"""Fewer blobs are read through libgit2: opening the pack indexes would cost more."""


def blob_sources(
    repo: pygit2.Repository,
    items: Sequence[tuple[str, bytes]],
    max_blob_bytes: int,
    sizes: Sequence[int] | None = None,
) -> Iterator[BlobSource]:
    """The blobs' bytes from libgit2's object database; an oversized blob's size only.

    `sizes`, when the caller read them already, spare a header read per blob.
    """
    odb = repo.odb
    for i, (path, oid) in enumerate(items):
        key = pygit2.Oid(raw=oid)
        size = odb.read_header(key)[1] if sizes is None else sizes[i]
        if size > max_blob_bytes:
            yield BlobSource(oid, path, b"", size)
        else:
            yield BlobSource(oid, path, odb.read(key)[1])


def take_run(ends: Sequence[int], size: int, n_workers: int) -> tuple[int, int]:
    """The next run of blobs for this worker: [start, stop).

    About `size` bytes, less near the end (a share of what is left, down to MIN_STEAL_BYTES):
    the last runs are small, so the workers finish together.
    """
    next_item = build_workers.next_item()
    with next_item.get_lock():
        start = next_item.value
        if start >= len(ends):
            return start, start
        done = ends[start - 1] if start else 0
        size = max(MIN_STEAL_BYTES, min(size, (ends[-1] - done) // (2 * n_workers)))
        stop = bisect.bisect_right(ends, done + size, start)
        stop = max(stop, start + 1)
        next_item.value = stop
    return start, stop


@dataclass(frozen=True, slots=True)
class BlobList:
    """The (path, oid) list every build worker takes runs from, and the running total of
    the blobs' weights, in a form that pickles as a few buffers.

    A list of 78k (path, oid) tuples took 0.07 s to pickle per worker and as long to load.
    """

    paths: str
    """The paths joined by NUL (which no git path holds)."""
    oids: bytes
    sizes: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]

    @classmethod
    def of(
        cls, items: Sequence[tuple[str, bytes]], sizes: Sequence[int], max_blob_bytes: int
    ) -> BlobList:
        """The packed form of `items`, their sizes and the running total of their weights:
        a blob's size, or 0 for one too large to analyse (it costs nothing)."""
        size_array = np.asarray(sizes, dtype=np.int64)
        return cls(
            "\0".join(path for path, _ in items),
            b"".join(oid for _, oid in items),
            size_array,
            np.cumsum(np.where(size_array <= max_blob_bytes, size_array, 0)),
        )

    def items(self) -> list[tuple[str, bytes]]:
        """The (path, oid) list again."""
        oids = self.oids
        if not oids:
            return []
        return list(
            zip(
                self.paths.split("\0"),
                (oids[i : i + _OID_BYTES] for i in range(0, len(oids), _OID_BYTES)),
                strict=True,
            )
        )


def analyse_runs(
    repo_path: str,
    blob_list: BlobList,
    max_blob_bytes: int,
    *,
    segments_dir: str,
    take_bytes: int,
    n_workers: int,
    segment_bytes: int,
) -> list[str]:
    """Worker: analyse runs of blobs taken from the shared list until none is left; write
    what it took as segments of about `segment_bytes` each, weighed as `BlobList` weighs
    blobs (none if it took nothing)."""
    repo = pygit2.Repository(repo_path)
    items = blob_list.items()
    ends = blob_list.ends.tolist()
    sizes = blob_list.sizes.tolist()
    written: list[str] = []
    while True:
        # Each run is analysed before the next is taken: gathered into the builder's
        # batches, runs taken near the end would wait behind others while another worker
        # idles.
        part = _SegmentPart(repo, max_blob_bytes)
        weight = 0
        while weight < segment_bytes:
            start, stop = take_run(ends, take_bytes, n_workers)
            if start >= stop:
                break
            part.add(items[start:stop], sizes[start:stop])
            weight += ends[stop - 1] - (ends[start - 1] if start else 0)
        if not part.taken:
            return written
        written.append(part.write(Path(segments_dir)))


class _SegmentPart:
    """The runs a worker analyses into one segment, and what it took."""

    def __init__(self, repo: pygit2.Repository, max_blob_bytes: int) -> None:
        self.repo = repo
        self.max_blob_bytes = max_blob_bytes
        self.builder = SegmentBuilder(max_blob_bytes)
        self.taken: list[tuple[str, bytes]] = []
        self.started = time.perf_counter()
        self.usage = resource.getrusage(resource.RUSAGE_SELF)

    def add(self, items: Sequence[tuple[str, bytes]], sizes: Sequence[int]) -> None:
        self.taken.extend(items)
        self.builder.add(blob_sources(self.repo, items, self.max_blob_bytes, sizes))

    def write(self, segments_dir: Path) -> str:
        """Write the segment; returns its id."""
        builder = self.builder
        seg_id = segment_id([oid for _, oid in self.taken])
        tables = builder.tables()
        writing = time.perf_counter()
        write_segment(segments_dir, seg_id, tables)
        used = resource.getrusage(resource.RUSAGE_SELF)
        log.info(
            "search.index.worker",
            blobs=len(self.taken),
            mb_analysed=round(builder.bytes_analysed / 1e6, 1),
            seconds=round(time.perf_counter() - self.started, 2),
            phases={k: round(v, 2) for k, v in builder.phase_seconds.items()},
            write_seconds=round(time.perf_counter() - writing, 2),
            cpu_seconds={
                "user": round(used.ru_utime - self.usage.ru_utime, 2),
                "system": round(used.ru_stime - self.usage.ru_stime, 2),
            },
            page_faults=used.ru_minflt - self.usage.ru_minflt,
            peak_rss_mb=used.ru_maxrss >> 10,
        )
        return seg_id
