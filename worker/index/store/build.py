"""Build a commit's index from its tree, analysing only the blobs no stored segment holds.

Layout under the cache (the mirror is the only writer; every directory appears by rename):

    <cache>/index/<owner>/<name>/segments/<segment id>/   content-addressed analysed blobs
    <cache>/index/<owner>/<name>/commits/<commit sha>/    manifest + the commit's path view

A new commit reuses the segments of the newest stored commit for every blob they hold and
analyses the rest into new segments of about SEGMENT_BYTES of source each (see
`shared_runs` for `workers`). Segments no live blob needs are dropped from the commit; when
a commit would need more than MAX_SEGMENTS segments that are not full, the small ones but
the largest are re-analysed into one, so a query touches few segments beyond those a
repository's size needs; and a full segment whose live blobs are less than MIN_LIVE_SHARE
of it is re-analysed likewise, so dead blobs do not stay for a few live ones.

The new commit's view is carried over from the stored commit's: only the files that differ
between the two trees are listed, looked up and analysed. Its whole tree is listed only
when there is no stored commit to start from, or when segments are folded.

What is made from a commit's index rather than from its blobs (the entity graph: a
`DerivedView`) is written into the commit's directory before it is published, so one rename
publishes every view of the commit.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt
import pygit2
import structlog

from worker.index.analysis.segment_builder import SegmentBuilder, SegmentTables
from worker.index.store import build_workers
from worker.index.store.blob_places import blob_locations, live_bytes, missing_blobs
from worker.index.store.carried_view import StoredView, carry
from worker.index.store.commit_view import (
    CommitTables,
    PathTerms,
    build_commit_tables,
    path_terms,
    read_commit_tables,
    read_manifest,
    republish_commit,
    write_commit,
)
from worker.index.store.retention import published_commits
from worker.index.store.segment import (
    Segment,
    UnknownFormat,
    segment_id,
    write_segment,
)
from worker.index.store.shared_runs import BlobList, analyse_runs, blob_sources
from worker.index.store.tree_listing import tree_blobs
from worker.index.views.text import CommitIndex

log = structlog.get_logger(__name__)
SEGMENT_BYTES: Final = 128 << 20
"""Source bytes analysed into one segment, about: a build holds several times a segment's
source in memory until the segment is written, so a bounded segment bounds a build's memory
whatever the repository's size (zoekt's shards are bounded alike)."""
MAX_SEGMENTS: Final = 8
"""Segments of a commit that are not full (see `is_full`), at most."""
MIN_LIVE_SHARE: Final = 0.5
"""A full segment whose live blobs hold less than this share of its source is folded: they
are analysed again into the new segment and it is dropped, so blobs no commit has any more
do not stay while one of their segment's blobs lives (Lucene merges away deletes alike)."""
STEAL_BYTES: Final = 4 << 20
"""Bytes of blobs a build worker takes from the shared list at a time, at most; a build
runs in a worker per run of this many bytes, up to the workers asked for."""
_REPO_ID = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class DerivedView(Protocol):
    """A per-commit view made from the commit's index, published in the same directory."""

    def stored(self, commit_dir: Path) -> bool:
        """Whether a published commit directory holds this view, of the current format."""
        ...

    def write(self, index: CommitIndex, staging: Path) -> None:
        """Make the view of `index` and write it into `staging` (not yet published)."""
        ...


def repo_index_dir(cache_dir: Path, repo_id: str) -> Path:
    """Where a repository's index lives in the cache."""
    if not _REPO_ID.match(repo_id) or ".." in repo_id.split("/"):
        raise ValueError(f"not a repository id: {repo_id!r}")
    owner, name = repo_id.split("/")
    return cache_dir / "index" / owner / name


def newest_view(index_dir: Path) -> StoredView | None:
    """The newest stored commit index that this code can read."""
    commits = index_dir / "commits"
    for name in published_commits(index_dir):
        d = commits / name
        try:
            manifest = read_manifest(d)
            segments = [Segment.open(index_dir / "segments" / s) for s in manifest["segments"]]
            return StoredView(d.name, read_commit_tables(d, manifest), segments)
        except (UnknownFormat, OSError, KeyError, ValueError) as exc:
            log.info("search.index.unusable", commit_dir=str(d), error=str(exc))
    return None


def is_full(segment: Segment) -> bool:
    """Whether a segment holds at least half of SEGMENT_BYTES of source: a build's bulk,
    not the few blobs a later commit added (which a commit may gather many of)."""
    return segment.source_bytes >= SEGMENT_BYTES // 2


def too_many_segments(segments: Sequence[Segment]) -> bool:
    """Whether a commit of these segments and one more new one would have more than
    MAX_SEGMENTS that are not full."""
    return sum(not is_full(s) for s in segments) + 1 > MAX_SEGMENTS


def is_sparse(segment: Segment, live: int) -> bool:
    """Whether a full segment's `live` bytes of source are below MIN_LIVE_SHARE of all it
    holds (a segment that is not full is folded by count, see `too_many_segments`)."""
    return is_full(segment) and live < MIN_LIVE_SHARE * segment.source_bytes


def needs_folding(segments: Sequence[Segment], live: npt.NDArray[np.int64]) -> bool:
    """Whether a commit of these segments (with `live` bytes of each) is better built from
    its whole tree, folding segments: too many small ones, or a full one mostly dead."""
    return too_many_segments(segments) or any(
        is_sparse(s, int(b)) for s, b in zip(segments, live, strict=True)
    )


def analyse(
    repo: pygit2.Repository,
    items: Sequence[tuple[str, bytes]],
    max_blob_bytes: int,
    check_deadline: Callable[[int, int], None] | None = None,
    sizes: Sequence[int] | None = None,
) -> Iterator[tuple[str, SegmentTables]]:
    """Analyse blobs into the tables of segments of about SEGMENT_BYTES each (a blob too
    large to analyse weighs nothing), with their content addresses; each segment's as soon
    as its blobs are analysed. `sizes`, when the caller read them already, spare a header
    read per blob."""
    segment_bytes = SEGMENT_BYTES
    if sizes is None:
        odb = repo.odb
        sizes = [odb.read_header(pygit2.Oid(raw=oid))[1] for _, oid in items]
    start = 0
    while start < len(items):
        stop, analysed = start, 0
        while stop < len(items) and analysed < segment_bytes:
            analysed += sizes[stop] if sizes[stop] <= max_blob_bytes else 0
            stop += 1

        def progress(done: int, total: int, first: int = start) -> None:
            assert check_deadline is not None
            check_deadline(first + done, total)

        builder = SegmentBuilder(
            max_blob_bytes, check_deadline=None if check_deadline is None else progress
        )
        part = items[start:stop]
        builder.add(blob_sources(repo, part, max_blob_bytes, sizes[start:stop]), total=len(items))
        yield segment_id([oid for _, oid in part]), builder.tables()
        start = stop


def live_segments(
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
    derived: DerivedView | None = None,
) -> Path:
    """Build and persist the index of `commit`, reusing stored segments for unchanged blobs,
    with the `derived` view made from it in the same publish.

    Mirror side (the only writer). Returns the commit's index directory. A commit stored
    without the derived view (or with one of another format) is published again with it.
    """
    started = time.perf_counter()
    index_dir = repo_index_dir(cache_dir, repo_id)
    segments_dir = index_dir / "segments"
    commit_dir = index_dir / "commits" / commit
    if (commit_dir / "manifest.json").is_file():
        try:
            manifest = read_manifest(commit_dir)
            if all((segments_dir / s / "segment.json").is_file() for s in manifest["segments"]):
                if derived is None or derived.stored(commit_dir):
                    return commit_dir
                segments = [Segment.open(segments_dir / s) for s in manifest["segments"]]
                index = CommitIndex(commit, segments, read_commit_tables(commit_dir, manifest))
                return republish_commit(commit_dir, partial(derived.write, index))
        except UnknownFormat:
            pass
    if workers is not None and workers > 1:
        build_workers.fork_server()
    base = newest_view(index_dir)
    if base is not None:
        carried = _carried_index(
            index_dir,
            repo_id,
            repo,
            commit,
            base,
            max_blob_bytes=max_blob_bytes,
            workers=workers,
            derived=derived,
        )
        if carried is not None:
            return carried
    entries = tree_blobs(repo, commit)
    reused = live_segments([] if base is None else base.segments, entries)
    where, skipped = blob_locations(reused)
    # A full segment mostly dead is folded: its live blobs are analysed again.
    live = live_bytes(reused, np.array([where[o] for _, o in entries if o in where], np.int64))
    kept = [s for s, b in zip(reused, live, strict=True) if not is_sparse(s, int(b))]
    if too_many_segments(kept):
        # Fold the small segments back into one: their live blobs are analysed again.
        small = sorted((s for s in kept if not is_full(s)), key=lambda s: -s.source_bytes)
        kept = [s for s in kept if is_full(s)] + small[:1]
    folded = len(reused) - len(kept)
    if folded:
        reused = kept
        where, skipped = blob_locations(reused)
    missing = missing_blobs(entries, where, skipped)
    new_ids, ahead = _analyse_missing(
        repo, missing, max_blob_bytes, segments_dir, workers, meanwhile=lambda: path_terms(entries)
    )
    segments = reused + [Segment.open(segments_dir / s) for s in new_ids]
    where, _ = blob_locations(segments)
    tables = build_commit_tables(entries, where, ahead=ahead)
    out = _write_commit(index_dir, repo_id, commit, segments, tables, derived=derived)
    log.info(
        "search.index.built",
        repo=repo_id,
        commit=commit,
        paths=len(entries),
        analysed_blobs=len(missing),
        reused_segments=len(reused),
        folded_segments=folded,
        new_segments=len(new_ids),
        seconds=round(time.perf_counter() - started, 3),
    )
    return out


def _write_commit(
    index_dir: Path,
    repo_id: str,
    commit: str,
    segments: list[Segment],
    tables: CommitTables,
    *,
    derived: DerivedView | None,
) -> Path:
    """Publish a commit's view, and the `derived` view made from it, in one rename."""
    fill = (
        None if derived is None else partial(derived.write, CommitIndex(commit, segments, tables))
    )
    ids = [s.id for s in segments]
    return write_commit(index_dir / "commits", repo_id, commit, ids, tables, fill=fill)


def _carried_index(
    index_dir: Path,
    repo_id: str,
    repo: pygit2.Repository,
    commit: str,
    base: StoredView,
    *,
    max_blob_bytes: int,
    workers: int | None,
    derived: DerivedView | None,
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

    carried = carry(repo, commit, base, analysed, fold=needs_folding)
    if carried is None:
        return None
    out = _write_commit(
        index_dir, repo_id, commit, carried.segments, carried.tables, derived=derived
    )
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
    n_workers, blob_list, sizes = 1, None, None
    if workers is not None and workers > 1:
        # Workers take runs of about equal bytes as they go, so they finish together
        # whatever each run costs; an oversized blob counts for nothing (it is not analysed).
        odb = repo.odb
        sizes = [odb.read_header(pygit2.Oid(raw=oid))[1] for _, oid in missing]
        blob_list = BlobList.of(missing, sizes, max_blob_bytes)
        n_workers = _workers_for(int(blob_list.ends[-1]), workers)
    if blob_list is None or n_workers == 1:
        new_ids = []
        for seg_id, tables in analyse(repo, missing, max_blob_bytes, sizes=sizes):
            write_segment(segments_dir, seg_id, tables)
            new_ids.append(seg_id)
        return new_ids, None
    pool = build_workers.build_pool(n_workers)
    try:
        futures = [
            pool.executor.submit(
                analyse_runs,
                repo.path,
                blob_list,
                max_blob_bytes,
                segments_dir=str(segments_dir),
                take_bytes=STEAL_BYTES,
                n_workers=n_workers,
                segment_bytes=SEGMENT_BYTES,
            )
            for _ in range(n_workers)
        ]
        # On a core the workers share: they take fewer runs while this runs.
        ahead = meanwhile()
        new_ids = [seg for f in futures for seg in f.result()]
    except BaseException:
        pool.executor.shutdown(wait=True, cancel_futures=True)
        raise
    pool.executor.shutdown(wait=False)
    return new_ids, ahead


def _workers_for(analysed_bytes: int, workers: int) -> int:
    """How many of `workers` a build of blobs holding `analysed_bytes` runs in: one per run of
    STEAL_BYTES (a part of one counts), at least one.

    Counted in bytes, not blobs, because analysis costs by the byte: a few hundred large files
    keep two processes busy where thousands of tiny ones do not. A build of one run or less
    stays in this process, where handing it to the pool would save nothing.
    """
    return max(1, min(workers, -(-analysed_bytes // STEAL_BYTES)))
