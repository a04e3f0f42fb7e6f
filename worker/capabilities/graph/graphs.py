"""The graphs of pinned commits: built from the commit's index on first use, kept with it.

A graph is a view of the index (see `worker.index.views.graph`): building one reads each
blob's stored analysis and resolves its references, with no blob read or parsed again.
The index itself is mapped from the cache, or built on demand within the request's budget;
a graph lives as long as its index is open, so the index store's one LRU bounds both.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import pygit2
import structlog

from worker.capabilities.tooling import LicensedFiles
from worker.errors import Timeout
from worker.index import IndexStore
from worker.index.store.build import repo_index_dir
from worker.index.store.graph_tables import read_carried, read_graph
from worker.index.views.graph.build import build_graph
from worker.index.views.graph.carried import Previous
from worker.index.views.graph.model import CommitGraph, EntityType, NodeIds
from worker.index.views.text import CommitIndex
from worker.licenses import LicenseCache
from worker.repos.catalog import ResolvedRepo
from worker.repos.excerpts import decode_text
from worker.repos.swhid import content_swhid, origin_url
from worker.repos.tree_paths import stored_path

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class FileText:
    """A file of the commit as lines, with its blob id and license."""

    blob: str
    lines: list[str]
    license: str
    license_source: str
    license_confidence: float | None = None


class FileTexts:
    """Recently read files of any commit, by (repository, commit, path): a bounded LRU.

    Answers about one commit read the same few files again and again (a search's snippets,
    a walk's neighbours); a file at a commit never changes, nor does its license.
    """

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._lru: OrderedDict[tuple[str, str, str], FileText | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str]) -> tuple[bool, FileText | None]:
        with self._lock:
            if key not in self._lru:
                return False, None
            self._lru.move_to_end(key)
            return True, self._lru[key]

    def put(self, key: tuple[str, str, str], text: FileText | None) -> None:
        with self._lock:
            self._lru[key] = text
            while len(self._lru) > self.size:
                self._lru.popitem(last=False)


@dataclass
class PinnedGraph:
    """A commit's graph with what answers need besides it: the index and the repository."""

    pinned: ResolvedRepo
    graph: CommitGraph
    index: CommitIndex
    build_seconds: float
    texts: FileTexts = field(default_factory=FileTexts)

    def blob_of(self, path: str) -> str | None:
        """The blob id of an indexed file of the commit.

        The graph's files are the index's paths, in the same order.
        """
        node = self.graph.node(path)
        if node is None or self.graph.types[node] != EntityType.FILE:
            return None
        ids = self.graph.ids
        first_file = ids.n_dirs if isinstance(ids, NodeIds) else 0
        return bytes(self.index.path_oids[node - first_file]).hex()

    def text(self, path: str, licensed: LicensedFiles) -> FileText | None:
        """A file's lines and license (None for a file that is no text)."""
        key = (self.pinned.name, self.pinned.commit, path)
        known, cached = self.texts.get(key)
        if known:
            return cached
        blob = self.blob_of(path)
        found: FileText | None = None
        if blob is not None:
            obj = self.pinned.repo[blob]
            assert isinstance(obj, pygit2.Blob)
            data = obj.data
            decoded = decode_text(data)
            if decoded is not None:
                attribution = licensed.of(path, blob, data)
                found = FileText(
                    blob,
                    list(decoded.lines),
                    attribution.license,
                    attribution.source,
                    attribution.confidence,
                )
        self.texts.put(key, found)
        return found

    def swhid(self, path: str, blob: str, lines: tuple[int, int]) -> str:
        """The SWHID of lines of a file of the commit."""
        pinned = self.pinned
        return content_swhid(
            blob=blob,
            origin=origin_url(pinned.state.url),
            commit=pinned.commit,
            path=stored_path(pinned.repo, pinned.commit, path),
            start_line=lines[0],
            end_line=lines[1],
        )

    def line_range(self, node: int) -> tuple[int, int] | None:
        """A node's 1-based inclusive lines; None for a directory."""
        graph = self.graph
        if graph.types[node] == EntityType.DIRECTORY:
            return None
        return int(graph.start_line[node]), max(int(graph.end_line[node]), 1)


def _commit_dir(cache_dir: Path, pinned: ResolvedRepo) -> Path:
    return repo_index_dir(cache_dir, pinned.name) / "commits" / pinned.commit


class GraphStore:
    """The graphs of open commit indexes, each read or built once."""

    def __init__(self, indexes: IndexStore, licenses: LicenseCache) -> None:
        self.indexes = indexes
        self.licenses = licenses
        # Keyed by the index: when the index store's LRU lets an index go, its graph goes too.
        self._graphs: weakref.WeakKeyDictionary[CommitIndex, tuple[CommitGraph, float]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self._building: dict[tuple[str, str], threading.Lock] = {}
        self.texts = FileTexts()
        self.builds = 0
        """Graphs this store read or built (for tests and metrics)."""

    def _stored(self, pinned: ResolvedRepo) -> tuple[CommitGraph, float] | None:
        """The graph the mirror published with the commit's index, mapped."""
        started = time.perf_counter()
        graph = read_graph(_commit_dir(self.indexes.cache_dir, pinned))
        if graph is None:
            return None
        log.info("graph.opened", repo=pinned.name, commit=pinned.commit, nodes=graph.n_nodes)
        return graph, time.perf_counter() - started

    def _build(
        self, pinned: ResolvedRepo, index: CommitIndex, deadline: float
    ) -> tuple[CommitGraph, float]:
        started = time.monotonic()

        def check_deadline(stage: str) -> None:
            if time.monotonic() > deadline:
                raise Timeout(
                    f"the graph of {pinned.name} at {pinned.commit[:12]} was not built in time",
                    repo=pinned.name,
                    commit=pinned.commit,
                    stage=f"graph: {stage}",
                    files=len(index.path_column),
                    seconds=round(time.monotonic() - started, 3),
                )

        check_deadline("start")
        built = build_graph(index, self._mirrored(pinned), check_deadline=check_deadline)
        log.info(
            "graph.built",
            repo=pinned.name,
            commit=pinned.commit,
            files=built.files,
            resolved=built.resolved,
            nodes=built.graph.n_nodes,
            edges=len(built.graph.edges.source),
            seconds=round(built.seconds, 3),
        )
        return built.graph, built.seconds

    def _mirrored(self, pinned: ResolvedRepo) -> Previous | None:
        """The graph the mirror stored for its head, to carry a nearby revision's from."""
        head = pinned.state.indexed_commit
        if head is None or head == pinned.commit:
            return None
        return read_carried(repo_index_dir(self.indexes.cache_dir, pinned.name) / "commits" / head)

    def open(self, pinned: ResolvedRepo, *, deadline: float) -> PinnedGraph:
        """The graph of a pinned commit, read or built (within `deadline`) if no one has yet;
        Timeout, with how far the build got, beyond it."""
        key = (pinned.name, pinned.commit)
        index = self.indexes.open(pinned.name, pinned.repo, pinned.commit, deadline=deadline)
        with self._lock:
            found = self._graphs.get(index)
            if found is None:
                building = self._building.setdefault(key, threading.Lock())
        if found is None:
            with building:
                with self._lock:
                    found = self._graphs.get(index)
                if found is None:
                    try:
                        found = self._stored(pinned) or self._build(pinned, index, deadline)
                        with self._lock:
                            self.builds += 1
                            self._graphs[index] = found
                    finally:  # a build that failed leaves no lock behind either
                        with self._lock:
                            self._building.pop(key, None)
        return PinnedGraph(pinned, found[0], index, found[1], self.texts)
