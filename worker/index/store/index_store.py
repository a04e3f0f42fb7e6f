"""Worker side: open commit indexes from the read-only cache, or build them on demand.

A stored index of a known format is memory-mapped; anything else (no index for a pinned
revision, an index of an unknown format) is built in memory or under the scratch directory,
reusing the stored segments' analysed blobs, within the caller's deadline. Open indexes are
kept in one bounded LRU; what is built for them (their graphs, their scratch segments) goes
when they do.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

import pygit2
import structlog

from worker.errors import Timeout
from worker.index.store.blob_places import blob_locations, missing_blobs
from worker.index.store.build import (
    analyse,
    live_segments,
    newest_view,
    repo_index_dir,
    too_many_segments,
)
from worker.index.store.carried_view import Carried, StoredView, carry
from worker.index.store.commit_view import (
    CommitTables,
    PathTerms,
    build_commit_tables,
    read_commit_tables,
    read_manifest,
)
from worker.index.store.scratch import ScratchSegments
from worker.index.store.segment import Segment, UnknownFormat, release_mapped_pages
from worker.index.store.tree_listing import tree_blobs
from worker.index.views.text import CommitIndex

log = structlog.get_logger(__name__)

RELEASE_PAGES_EVERY: Final = 256
"""Opens between two drops of the mapped index pages a worker's queries touched.

The pages stay in the page cache, shared by every worker; dropping them from this process's
resident set bounds it by what a few hundred queries touch, not by the index's size."""


class IndexStore:
    """One per worker process, thread-safe; never writes to the cache."""

    def __init__(
        self,
        cache_dir: Path,
        *,
        max_blob_bytes: int = 1 << 20,
        lru_size: int = 4,
        scratch_dir: Path | None = None,
    ) -> None:
        self.cache_dir = cache_dir
        self.max_blob_bytes = max_blob_bytes
        self.lru_size = max(1, lru_size)
        self.scratch = None if scratch_dir is None else ScratchSegments(scratch_dir)
        self._lru: OrderedDict[tuple[str, str], CommitIndex] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[tuple[str, str], threading.Lock] = {}
        self.on_demand_builds = 0
        """How many indexes this store built itself (for tests and metrics)."""
        self.blobs_analysed = 0
        self._opens = 0

    def cached(self) -> list[tuple[str, str]]:
        """The (repo_id, commit) pairs held open, least recently used first."""
        with self._lock:
            return list(self._lru)

    def open(
        self, repo_id: str, repo: pygit2.Repository, commit: str, *, deadline: float
    ) -> CommitIndex:
        """The index of `commit`: mapped from the cache, or built on demand before `deadline`.

        Raises worker.errors.Timeout when time.monotonic() passes `deadline` while building.
        """
        key = (repo_id, commit)
        with self._lock:
            self._opens += 1
            if self._opens % RELEASE_PAGES_EVERY == 0:
                release_mapped_pages()
            found = self._lru.get(key)
            if found is not None:
                self._lru.move_to_end(key)
                return found
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                found = self._lru.get(key)
                if found is not None:
                    self._lru.move_to_end(key)
                    return found
            try:
                index = self._open_stored(repo_id, commit) or self._build(
                    repo_id, repo, commit, deadline
                )
                with self._lock:
                    self._lru[key] = index
                    self._lru.move_to_end(key)
                    while len(self._lru) > self.lru_size:
                        self._lru.popitem(last=False)
            finally:  # a build that timed out leaves no lock behind either
                with self._lock:
                    self._key_locks.pop(key, None)
            return index

    def stored(self, repo_id: str, commit: str) -> bool:
        """Whether the mirror published the index of `commit` (so no on-demand build)."""
        index_dir = repo_index_dir(self.cache_dir, repo_id)
        return (index_dir / "commits" / commit / "manifest.json").is_file()

    def _open_stored(self, repo_id: str, commit: str) -> CommitIndex | None:
        if not self.stored(repo_id, commit):
            return None
        index_dir = repo_index_dir(self.cache_dir, repo_id)
        commit_dir = index_dir / "commits" / commit
        try:
            manifest = read_manifest(commit_dir)
            segments = [Segment.open(index_dir / "segments" / s) for s in manifest["segments"]]
            return CommitIndex(commit, segments, read_commit_tables(commit_dir, manifest))
        except (UnknownFormat, OSError, KeyError, ValueError) as exc:
            log.info("search.index.rebuild_on_demand", repo=repo_id, commit=commit, reason=str(exc))
            return None

    def _build(
        self, repo_id: str, repo: pygit2.Repository, commit: str, deadline: float
    ) -> CommitIndex:
        started = time.monotonic()

        def check_deadline(done: int, total: int) -> None:
            if time.monotonic() > deadline:
                raise Timeout(
                    f"indexing {repo_id} at {commit[:12]} did not finish in time",
                    repo=repo_id,
                    commit=commit,
                    blobs_analysed=done,
                    blobs_to_analyse=total,
                    seconds=round(time.monotonic() - started, 3),
                )

        check_deadline(0, 0)
        base = newest_view(repo_index_dir(self.cache_dir, repo_id))
        carried = None
        if base is not None:
            carried = carried_in_memory(
                repo,
                commit,
                base,
                max_blob_bytes=self.max_blob_bytes,
                check_deadline=check_deadline,
                scratch=self.scratch,
            )
        if carried is not None:
            segments, tables, analysed = carried.segments, carried.tables, carried.analysed_blobs
        else:
            segments, tables, analysed = build_in_memory(
                repo,
                commit,
                [] if base is None else base.segments,
                max_blob_bytes=self.max_blob_bytes,
                check_deadline=check_deadline,
                scratch=self.scratch,
            )
        with self._lock:
            self.on_demand_builds += 1
            self.blobs_analysed += analysed
        log.info(
            "search.index.on_demand",
            repo=repo_id,
            commit=commit,
            analysed_blobs=analysed,
            carried_from=None if carried is None else carried.carried_from,
            seconds=round(time.monotonic() - started, 3),
        )
        return CommitIndex(commit, segments, tables, source="on-demand")


def build_in_memory(
    repo: pygit2.Repository,
    commit: str,
    stored: Sequence[Segment],
    *,
    max_blob_bytes: int,
    check_deadline: Callable[[int, int], None],
    scratch: ScratchSegments | None = None,
) -> tuple[list[Segment], CommitTables, int]:
    """Worker side: the segments and view of a commit with no stored index.

    Reuses `stored` segments for the blobs they hold; the rest is analysed into a segment
    kept in memory, or in `scratch`. Returns how many blobs were analysed as well.
    """
    entries = tree_blobs(repo, commit)
    check_deadline(0, 0)
    reused = live_segments(stored, entries)
    where, skipped = blob_locations(reused)
    missing = missing_blobs(entries, where, skipped)
    segments = reused + _analysed_in_memory(repo, missing, max_blob_bytes, check_deadline, scratch)
    where, _ = blob_locations(segments)
    return segments, build_commit_tables(entries, where), len(missing)


def carried_in_memory(
    repo: pygit2.Repository,
    commit: str,
    base: StoredView,
    *,
    max_blob_bytes: int,
    check_deadline: Callable[[int, int], None],
    scratch: ScratchSegments | None = None,
) -> Carried | None:
    """Worker side: `build_in_memory` carried from the stored index `base` (see
    `carried_view.carry`); None when it cannot be."""

    def analysed(
        missing: list[tuple[str, bytes]], _meanwhile: Callable[[], PathTerms]
    ) -> tuple[list[Segment], PathTerms | None]:
        check_deadline(0, len(missing))
        return _analysed_in_memory(repo, missing, max_blob_bytes, check_deadline, scratch), None

    # Folding is the mirror's: an index built on demand lives only as long as the worker.
    return carry(repo, commit, base, analysed, fold=lambda segments, _: too_many_segments(segments))


def _analysed_in_memory(
    repo: pygit2.Repository,
    missing: list[tuple[str, bytes]],
    max_blob_bytes: int,
    check_deadline: Callable[[int, int], None],
    scratch: ScratchSegments | None,
) -> list[Segment]:
    """The missing blobs analysed into segments kept in memory, or in `scratch` (none if
    nothing is missing)."""
    return [
        Segment(seg_id, tables) if scratch is None else scratch.keep(seg_id, tables)
        for seg_id, tables in analyse(repo, missing, max_blob_bytes, check_deadline)
    ]
