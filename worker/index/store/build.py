"""Build a commit's index from its tree, analysing only the blobs no stored segment holds.

Layout under the cache (the mirror is the only writer; every directory appears by rename):

    <cache>/index/<owner>/<name>/segments/<segment id>/   content-addressed analysed blobs
    <cache>/index/<owner>/<name>/commits/<commit sha>/    manifest + the commit's path view

A new commit reuses the segments of the newest stored commit for every blob they hold and
analyses the rest into one new segment (one per process with `workers`). Segments no live
blob needs are dropped from the commit; when a commit would need more than MAX_SEGMENTS,
the small ones are re-analysed into one so a query touches few segments.

The new commit's view is carried over from the stored commit's: only the files that differ
between the two trees are listed, looked up and analysed. Its whole tree is listed only
when there is no stored commit to start from, or when segments are folded.
"""

from __future__ import annotations

import bisect
import re
import resource
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import pygit2
import structlog

from worker.index.analysis.segment_builder import BlobSource, SegmentBuilder, SegmentTables
from worker.index.store import build_workers
from worker.index.store.blob_places import blob_locations, missing_blobs
from worker.index.store.carried_view import Carried, StoredView, carry
from worker.index.store.commit_view import (
    CommitTables,
    PathTerms,
    build_commit_tables,
    path_terms,
    read_commit_tables,
    read_manifest,
    write_commit,
)
from worker.index.store.segment import (
    Segment,
    UnknownFormat,
    segment_id,
    write_segment,
)
from worker.index.store.tree_listing import tree_blobs

log = structlog.get_logger(__name__)
_OID_BYTES: Final = 20
MAX_SEGMENTS: Final = 8
MIN_BLOBS_PER_WORKER: Final = 2000
STEAL_BYTES: Final = 4 << 20
"""Bytes of blobs a build worker takes from the shared list at a time, at most."""
MIN_STEAL_BYTES: Final = 256 << 10
"""Fewer blobs are read through libgit2: opening the pack indexes would cost more."""
_REPO_ID = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def repo_index_dir(cache_dir: Path, repo_id: str) -> Path:
    """Where a repository's index lives in the cache."""
    if not _REPO_ID.match(repo_id) or ".." in repo_id.split("/"):
        raise ValueError(f"not a repository id: {repo_id!r}")
    owner, name = repo_id.split("/")
    return cache_dir / "index" / owner / name


def newest_view(index_dir: Path) -> StoredView | None:
    """The newest stored commit index that this code can read."""
    commits = index_dir / "commits"
    if not commits.is_dir():
        return None
    candidates = []
    for d in commits.iterdir():
        manifest_path = d / "manifest.json"
        if not d.name.startswith(".") and manifest_path.is_file():
            candidates.append((manifest_path.stat().st_mtime, d.name, d))
    for _, _, d in sorted(candidates, reverse=True):
        try:
            manifest = read_manifest(d)
            segments = [Segment.open(index_dir / "segments" / s) for s in manifest["segments"]]
            return StoredView(d.name, read_commit_tables(d, manifest), segments)
        except (UnknownFormat, OSError, KeyError, ValueError) as exc:
            log.info("search.index.unusable", commit_dir=str(d), error=str(exc))
    return None


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


def analyse(
    repo: pygit2.Repository,
    items: Sequence[tuple[str, bytes]],
    max_blob_bytes: int,
    check_deadline: Callable[[int, int], None] | None = None,
) -> tuple[str, SegmentTables]:
    """Analyse blobs into the tables of one segment, with its content address."""
    builder = SegmentBuilder(max_blob_bytes, check_deadline=check_deadline)
    builder.add(blob_sources(repo, items, max_blob_bytes), total=len(items))
    return segment_id([oid for _, oid in items]), builder.tables()


def _take(ends: Sequence[int], size: int, n_workers: int) -> tuple[int, int]:
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
class _BlobList:
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
    ) -> _BlobList:
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


def _analyse_shared(
    repo_path: str,
    blob_list: _BlobList,
    max_blob_bytes: int,
    *,
    segments_dir: str,
    take_bytes: int,
    n_workers: int,
) -> str | None:
    """Worker: analyse runs of blobs taken from the shared list until none is left; write
    what it took as one segment (None if it took nothing)."""
    started = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    items = blob_list.items()
    ends = blob_list.ends.tolist()
    sizes = blob_list.sizes.tolist()
    repo = pygit2.Repository(repo_path)
    taken: list[tuple[str, bytes]] = []
    builder = SegmentBuilder(max_blob_bytes)
    # Each run is analysed before the next is taken: gathered into the builder's batches,
    # runs taken near the end would wait behind others while the other worker idles.
    while True:
        start, stop = _take(ends, take_bytes, n_workers)
        if start >= stop:
            break
        taken.extend(items[start:stop])
        builder.add(blob_sources(repo, items[start:stop], max_blob_bytes, sizes[start:stop]))
    if not taken:
        return None
    seg_id = segment_id([oid for _, oid in taken])
    tables = builder.tables()
    writing = time.perf_counter()
    write_segment(Path(segments_dir), seg_id, tables)
    used = resource.getrusage(resource.RUSAGE_SELF)
    log.info(
        "search.index.worker",
        blobs=len(taken),
        mb_analysed=round(builder.bytes_analysed / 1e6, 1),
        seconds=round(time.perf_counter() - started, 2),
        phases={k: round(v, 2) for k, v in builder.phase_seconds.items()},
        write_seconds=round(time.perf_counter() - writing, 2),
        cpu_seconds={
            "user": round(used.ru_utime - usage.ru_utime, 2),
            "system": round(used.ru_stime - usage.ru_stime, 2),
        },
        page_faults=used.ru_minflt - usage.ru_minflt,
        peak_rss_mb=used.ru_maxrss >> 10,
    )
    return seg_id


def _live_segments(
    segments: Sequence[Segment], entries: Sequence[tuple[str, bytes]]
) -> list[Segment]:
    live_oids = {oid for _, oid in entries}
    return [seg for seg in segments if any(oid in live_oids for oid in seg.oids())]


def build_commit_index(
    cache_dir: Path,
    repo_id: str,
    repo: pygit2.Repository,
    commit: str,
    *,
    max_blob_bytes: int = 1 << 20,
    workers: int | None = None,
) -> Path:
    """Build and persist the index of `commit`, reusing stored segments for unchanged blobs.

    Mirror side (the only writer). Returns the commit's index directory.
    """
    started = time.perf_counter()
    index_dir = repo_index_dir(cache_dir, repo_id)
    segments_dir = index_dir / "segments"
    commit_dir = index_dir / "commits" / commit
    if (commit_dir / "manifest.json").is_file():
        try:
            manifest = read_manifest(commit_dir)
            if all((segments_dir / s / "segment.json").is_file() for s in manifest["segments"]):
                return commit_dir
        except UnknownFormat:
            pass
    if workers is not None and workers > 1:
        build_workers.fork_server()
    base = newest_view(index_dir)
    if base is not None:
        carried = _carried_index(
            index_dir, repo_id, repo, commit, base, max_blob_bytes=max_blob_bytes, workers=workers
        )
        if carried is not None:
            return carried
    entries = tree_blobs(repo, commit)
    reused = _live_segments([] if base is None else base.segments, entries)
    where, skipped = blob_locations(reused)
    missing = missing_blobs(entries, where, skipped)
    if len(reused) + 1 > MAX_SEGMENTS:
        # Fold the small segments back into one: their live blobs are analysed again.
        reused.sort(key=lambda s: -s.n_blobs)
        keep = reused[:1]
        where, skipped = blob_locations(keep)
        missing = missing_blobs(entries, where, skipped)
        reused = keep
    new_ids, ahead = _analyse_missing(
        repo, missing, max_blob_bytes, segments_dir, workers, meanwhile=lambda: path_terms(entries)
    )
    segments = reused + [Segment.open(segments_dir / s) for s in new_ids]
    where, _ = blob_locations(segments)
    tables = build_commit_tables(entries, where, ahead=ahead)
    out = write_commit(index_dir / "commits", repo_id, commit, [s.id for s in segments], tables)
    log.info(
        "search.index.built",
        repo=repo_id,
        commit=commit,
        paths=len(entries),
        analysed_blobs=len(missing),
        reused_segments=len(reused),
        new_segments=len(new_ids),
        seconds=round(time.perf_counter() - started, 3),
    )
    return out


def _carried_index(
    index_dir: Path,
    repo_id: str,
    repo: pygit2.Repository,
    commit: str,
    base: StoredView,
    *,
    max_blob_bytes: int,
    workers: int | None,
) -> Path | None:
    """Build and persist the index of `commit` carried from the stored index `base` (see
    `carried_view.carry`); None when it cannot be."""
    started = time.perf_counter()
    segments_dir = index_dir / "segments"

    def analysed(
        missing: list[tuple[str, bytes]], meanwhile: Callable[[], PathTerms]
    ) -> tuple[list[Segment], PathTerms | None]:
        new_ids, ahead = _analyse_missing(
            repo, missing, max_blob_bytes, segments_dir, workers, meanwhile=meanwhile
        )
        return [Segment.open(segments_dir / s) for s in new_ids], ahead

    carried = carry(repo, commit, base, analysed, max_segments=MAX_SEGMENTS)
    if carried is None:
        return None
    ids = [s.id for s in carried.segments]
    out = write_commit(index_dir / "commits", repo_id, commit, ids, carried.tables)
    log.info(
        "search.index.built",
        repo=repo_id,
        commit=commit,
        carried_from=carried.carried_from,
        indexed_paths=carried.tables.paths.num_rows,
        changed_paths=carried.changed_paths,
        analysed_blobs=carried.analysed_blobs,
        reused_segments=len(carried.segments) - carried.new_segments,
        new_segments=carried.new_segments,
        seconds=round(time.perf_counter() - started, 3),
    )
    return out


def _analyse_missing(
    repo: pygit2.Repository,
    missing: list[tuple[str, bytes]],
    max_blob_bytes: int,
    segments_dir: Path,
    workers: int | None,
    *,
    meanwhile: Callable[[], PathTerms],
) -> tuple[list[str], PathTerms | None]:
    """Analyse the missing blobs into new segments (their ids); with build workers, this
    process runs `meanwhile` while they analyse, and its result comes back too (else None).

    The workers' processes are left to exit on their own once done: this process goes on to
    the commit's view meanwhile.
    """
    if not missing:
        return [], None
    n_workers = max(1, min(workers or 1, len(missing) // MIN_BLOBS_PER_WORKER))
    if n_workers == 1:
        seg_id, tables = analyse(repo, missing, max_blob_bytes)
        write_segment(segments_dir, seg_id, tables)
        return [seg_id], None
    # Workers take runs of about equal bytes as they go, so they finish together whatever
    # each run costs; an oversized blob counts for nothing (it is not analysed).
    odb = repo.odb
    sizes = [odb.read_header(pygit2.Oid(raw=oid))[1] for _, oid in missing]
    blob_list = _BlobList.of(missing, sizes, max_blob_bytes)
    pool = build_workers.build_pool(n_workers)
    try:
        futures = [
            pool.executor.submit(
                _analyse_shared,
                repo.path,
                blob_list,
                max_blob_bytes,
                segments_dir=str(segments_dir),
                take_bytes=STEAL_BYTES,
                n_workers=n_workers,
            )
            for _ in range(n_workers)
        ]
        # On a core the workers share: they take fewer runs while this runs.
        ahead = meanwhile()
        new_ids = [seg for f in futures if (seg := f.result()) is not None]
    except BaseException:
        pool.executor.shutdown(wait=True, cancel_futures=True)
        raise
    pool.executor.shutdown(wait=False)
    return new_ids, ahead


def build_in_memory(
    repo: pygit2.Repository,
    commit: str,
    stored: Sequence[Segment],
    *,
    max_blob_bytes: int,
    check_deadline: Callable[[int, int], None],
    scratch_dir: Path | None = None,
) -> tuple[list[Segment], CommitTables, int]:
    """Worker side: the segments and view of a commit with no stored index.

    Reuses `stored` segments for the blobs they hold; the rest is analysed into a segment
    kept in memory, or written under `scratch_dir` and mapped. Returns how many blobs were
    analysed as well.
    """
    entries = tree_blobs(repo, commit)
    check_deadline(0, 0)
    reused = _live_segments(stored, entries)
    where, skipped = blob_locations(reused)
    missing = missing_blobs(entries, where, skipped)
    segments = reused + _analysed_in_memory(
        repo, missing, max_blob_bytes, check_deadline, scratch_dir
    )
    where, _ = blob_locations(segments)
    return segments, build_commit_tables(entries, where), len(missing)


def carried_in_memory(
    repo: pygit2.Repository,
    commit: str,
    base: StoredView,
    *,
    max_blob_bytes: int,
    check_deadline: Callable[[int, int], None],
    scratch_dir: Path | None = None,
) -> Carried | None:
    """Worker side: `build_in_memory` carried from the stored index `base` (see
    `carried_view.carry`); None when it cannot be."""

    def analysed(
        missing: list[tuple[str, bytes]], _meanwhile: Callable[[], PathTerms]
    ) -> tuple[list[Segment], PathTerms | None]:
        check_deadline(0, len(missing))
        return _analysed_in_memory(repo, missing, max_blob_bytes, check_deadline, scratch_dir), None

    return carry(repo, commit, base, analysed, max_segments=MAX_SEGMENTS)


def _analysed_in_memory(
    repo: pygit2.Repository,
    missing: list[tuple[str, bytes]],
    max_blob_bytes: int,
    check_deadline: Callable[[int, int], None],
    scratch_dir: Path | None,
) -> list[Segment]:
    """The missing blobs analysed into a segment kept in memory, or written under
    `scratch_dir` and mapped (none if nothing is missing)."""
    if not missing:
        return []
    seg_id, tables = analyse(repo, missing, max_blob_bytes, check_deadline)
    if scratch_dir is not None:
        return [Segment.open(write_segment(scratch_dir, seg_id, tables))]
    return [Segment(seg_id, tables)]
