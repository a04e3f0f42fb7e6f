"""Where trigram indexes live: the mirror stores them, workers map them or build them on demand.

Only the mirror writes (segments first, then the manifest that names them, each
atomically), so a worker sees a commit's manifest only once everything it names is in
place. Pruning keeps the newest manifests and the segments they name; a worker still
holding an older segment keeps its memory map (unlinked files stay readable), and one
that finds a manifest's segment gone builds that commit's index on demand instead.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pygit2
import structlog

from worker.cache import CacheLayout
from worker.codesearch.index import (
    MANIFEST_FORMAT,
    BlobCatalog,
    CommitIndex,
    build_commit_index,
    index_from_manifest,
    manifest_table,
)
from worker.codesearch.segments import (
    FORMAT_VERSION,
    Segment,
    SegmentFormatError,
    open_segment,
    read_arrow,
    write_arrow,
    write_segment,
)

log = structlog.get_logger(__name__)

KEEP_MANIFESTS: Final = 2
"""Manifests kept per repository: the new head and the one before it."""
MAX_SEGMENTS: Final = 32
"""More segments than this for one commit, or under half their blobs live: rebuild from scratch."""


def trigram_root(layout: CacheLayout, name: str) -> Path:
    """The versioned trigram directory of `owner/name`."""
    return layout.index_dir(name) / "trigrams" / f"v{FORMAT_VERSION}"


class TrigramStore:
    """The stored segments and manifests of one repository."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.segments_dir = root / "segments"
        self.commits_dir = root / "commits"

    def manifest_path(self, commit: str) -> Path:
        """Where the manifest of `commit` is stored."""
        return self.commits_dir / f"{commit}.arrow"

    def has_commit(self, commit: str) -> bool:
        """Whether a manifest of `commit` is stored."""
        return self.manifest_path(commit).is_file()

    def segment_ids(self) -> frozenset[str]:
        """The ids of the stored segments."""
        try:
            return frozenset(
                p.name for p in self.segments_dir.iterdir() if not p.name.startswith(".")
            )
        except FileNotFoundError:
            return frozenset()

    def open_segments(self, known: dict[str, Segment] | None = None) -> dict[str, Segment]:
        """Every stored segment, reusing those already in `known`; damaged ones are skipped."""
        known = known or {}
        opened: dict[str, Segment] = {}
        for segment_id in sorted(self.segment_ids()):
            if segment_id in known:
                opened[segment_id] = known[segment_id]
                continue
            try:
                opened[segment_id] = open_segment(self.segments_dir / segment_id)
            except SegmentFormatError as exc:
                log.warning("codesearch.segment_unreadable", segment=segment_id, error=str(exc))
        return opened

    def open_commit(
        self, commit: str, segments: dict[str, Segment], *, max_blob_bytes: int
    ) -> CommitIndex | None:
        """The stored index of `commit`, or None when there is no usable one."""
        try:
            table = read_arrow(self.manifest_path(commit), MANIFEST_FORMAT)
        except SegmentFormatError:
            return None
        return index_from_manifest(table, segments, max_blob_bytes=max_blob_bytes)

    def save(self, index: CommitIndex, new_segments: list[Segment], *, max_blob_bytes: int) -> None:
        """Store the new segments, then the manifest naming them."""
        for segment in new_segments:
            write_segment(self.segments_dir, segment)
        self.commits_dir.mkdir(parents=True, exist_ok=True)
        staging = self.commits_dir / f".{index.commit}.arrow.tmp"
        write_arrow(staging, manifest_table(index, max_blob_bytes=max_blob_bytes))
        staging.replace(self.manifest_path(index.commit))

    def prune(self, keep: int = KEEP_MANIFESTS) -> None:
        """Keep the `keep` newest manifests and the segments they name; remove the rest."""
        try:
            manifests = sorted(
                (p for p in self.commits_dir.glob("*.arrow") if not p.name.startswith(".")),
                key=lambda p: p.stat().st_mtime_ns,
                reverse=True,
            )
        except FileNotFoundError:
            return
        referenced: set[str] = set()
        for path in manifests[:keep]:
            with contextlib.suppress(SegmentFormatError):
                table = read_arrow(path, MANIFEST_FORMAT)
                referenced.update(json.loads((table.schema.metadata or {})[b"segments"]))
        for path in manifests[keep:]:
            path.unlink(missing_ok=True)
        for segment_id in self.segment_ids() - referenced:
            shutil.rmtree(self.segments_dir / segment_id, ignore_errors=True)


@dataclass(frozen=True, slots=True)
class IndexingResult:
    """What storing one commit's trigram index did."""

    commit: str
    files: int
    new_segments: int
    segments: int
    rebuilt: bool


def index_commit(
    layout: CacheLayout, name: str, repo: pygit2.Repository, commit: str, *, max_blob_bytes: int
) -> IndexingResult:
    """Build and store the trigram index of `commit` (the mirror's side), then prune."""
    store = TrigramStore(trigram_root(layout, name))
    segments = store.open_segments()
    existing = store.open_commit(commit, segments, max_blob_bytes=max_blob_bytes)
    if existing is not None:
        return IndexingResult(commit, len(existing), 0, len(existing.segments), rebuilt=False)
    index, new = build_commit_index(
        repo,
        commit,
        catalog=BlobCatalog(list(segments.values())),
        max_blob_bytes=max_blob_bytes,
        source="trigram",
    )
    rebuilt = _fragmented(index)
    if rebuilt:
        index, new = build_commit_index(
            repo, commit, catalog=BlobCatalog(), max_blob_bytes=max_blob_bytes, source="trigram"
        )
    store.save(index, new, max_blob_bytes=max_blob_bytes)
    store.prune()
    return IndexingResult(commit, len(index), len(new), len(index.segments), rebuilt)


def _fragmented(index: CommitIndex) -> bool:
    if len(index.segments) > MAX_SEGMENTS:
        return True
    covered = sum(len(s) for s in index.segments)
    live = len({bytes(b) for b in index.blob_ids}) if len(index) else 0
    return covered > 0 and live * 2 < covered


class CodeIndexCache:
    """A worker's view of the trigram indexes: stored ones mapped, others built in memory (LRU)."""

    def __init__(
        self, layout: CacheLayout, *, lru_size: int, max_blob_bytes: int, on_demand_bytes: int
    ) -> None:
        self._layout = layout
        self._lru_size = lru_size
        self._max_blob_bytes = max_blob_bytes
        self._on_demand_bytes = on_demand_bytes
        self._lock = threading.Lock()
        self._indexes: OrderedDict[tuple[str, str], CommitIndex] = OrderedDict()
        self._building: dict[tuple[str, str], threading.Lock] = {}
        self._segments: dict[str, dict[str, Segment]] = {}

    def stored(self, name: str, commit: str) -> bool:
        """Whether the mirror stored a trigram index of `commit`."""
        return TrigramStore(trigram_root(self._layout, name)).has_commit(commit)

    def open(
        self, name: str, repo: pygit2.Repository, commit: str, *, deadline: float
    ) -> CommitIndex:
        """The index of `commit`: cached, stored, or built now within `deadline`."""
        key = (name, commit)
        with self._lock:
            found = self._cached(key)
            if found is not None:
                return found
            building = self._building.setdefault(key, threading.Lock())
        with building:
            with self._lock:
                found = self._cached(key)
                if found is not None:
                    return found
            index = self._load_or_build(name, repo, commit, deadline)
            with self._lock:
                self._indexes[key] = index
                while len(self._indexes) > self._lru_size:
                    self._indexes.popitem(last=False)
                self._building.pop(key, None)
            return index

    def _cached(self, key: tuple[str, str]) -> CommitIndex | None:
        index = self._indexes.get(key)
        if index is not None:
            self._indexes.move_to_end(key)
        return index

    def _load_or_build(
        self, name: str, repo: pygit2.Repository, commit: str, deadline: float
    ) -> CommitIndex:
        store = TrigramStore(trigram_root(self._layout, name))
        with self._lock:
            known = self._segments.get(name, {})
        segments = store.open_segments(known)
        with self._lock:
            self._segments[name] = segments
        index = store.open_commit(commit, segments, max_blob_bytes=self._max_blob_bytes)
        if index is not None:
            return index
        index, _ = build_commit_index(
            repo,
            commit,
            catalog=BlobCatalog(list(segments.values())),
            max_blob_bytes=self._max_blob_bytes,
            source="on-demand",
            budget_bytes=self._on_demand_bytes,
            deadline=deadline,
        )
        log.info(
            "codesearch.built_on_demand",
            repo=name,
            commit=commit,
            files=len(index),
            unindexed=index.unindexed,
        )
        return index
