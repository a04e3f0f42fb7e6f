"""What the documents are generated from: one mirrored repository at its head commit.

Everything is read from the mirror's cache: the bare repository's objects, the commit's
stored index and entity graph (built again only when none of this format is stored), and
the license files the mirror identified. Nothing here writes.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pygit2
from pygit2.enums import FileMode

from worker.config import Config
from worker.errors import InvalidRequest, NotFound
from worker.index import IndexStore
from worker.index.store.build import repo_index_dir
from worker.index.store.graph_tables import read_graph
from worker.index.views.graph.build import build_graph
from worker.index.views.graph.model import CommitGraph
from worker.licenses import LicenseInfo, LicenseResolver
from worker.repos.excerpts import decode_text
from worker.repos.layout import CacheLayout
from worker.repos.tree_paths import find_entry, path_text

BLOB_MODES: Final = frozenset({FileMode.BLOB, FileMode.BLOB_EXECUTABLE})
BUILD_SECONDS: Final = 3600.0
"""The budget of an index build when a head has none stored (the mirror's own, not a request's)."""


@dataclass(frozen=True, slots=True)
class TreeFile:
    """One entry of the head's tree that is a file (or symlink, or submodule)."""

    path: str
    blob: str
    mode: int


def tree_files(repo: pygit2.Repository, commit: str) -> list[TreeFile]:
    """Every file of `commit`'s tree, in path order (git's index order)."""
    index = pygit2.Index()
    index.read_tree(repo[commit].peel(pygit2.Tree))
    # pygit2 decodes index paths as file names (undecodable bytes as surrogates).
    return [
        TreeFile(path_text(os.fsencode(entry.path)), str(entry.id), int(entry.mode))
        for entry in index
    ]


class DocSource:
    """A repository at one commit, with lazily opened index, graph, texts and licenses."""

    def __init__(
        self,
        *,
        cache_dir: Path,
        name: str,
        url: str,
        repo: pygit2.Repository,
        commit: str,
        config: Config,
    ) -> None:
        self.cache_dir = cache_dir
        self.name = name
        self.url = url
        self.repo = repo
        self.commit = commit
        self.config = config
        head = repo[commit].peel(pygit2.Commit)
        self.commit_time = head.commit_time
        self.tree = head.tree
        self.generated_at = dt.datetime.fromtimestamp(head.commit_time, dt.UTC)
        """The head's committer time: documents name it, so the same head gives the same bytes."""
        identified = CacheLayout(cache_dir).read_licenses(name)
        self.licenses = LicenseResolver(
            repo, identified=identified.texts if identified is not None else None
        )

    @functools.cached_property
    def files(self) -> list[TreeFile]:
        """Every file of the commit's tree, in path order."""
        return tree_files(self.repo, self.commit)

    @functools.cached_property
    def graph(self) -> CommitGraph:
        """The commit's entity graph: the one the mirror stored, else built from its index."""
        commit_dir = repo_index_dir(self.cache_dir, self.name) / "commits" / self.commit
        stored = read_graph(commit_dir)
        if stored is not None:
            return stored
        index = IndexStore(self.cache_dir, max_blob_bytes=self.config.server.max_blob_bytes).open(
            self.name, self.repo, self.commit, deadline=time.monotonic() + BUILD_SECONDS
        )
        return build_graph(index).graph

    @functools.cached_property
    def root_license(self) -> LicenseInfo | None:
        """The license the root's license files declare."""
        return self.licenses.for_root(self.tree)

    def data(self, blob: str) -> bytes:
        """A blob's bytes."""
        found = self.repo[blob]
        assert isinstance(found, pygit2.Blob)
        return found.data

    @functools.lru_cache(maxsize=256)  # noqa: B019 - one source lives for one generation
    def lines(self, path: str) -> tuple[str, ...] | None:
        """The lines of a text file of the commit (None for a binary or missing one)."""
        try:
            entry = find_entry(self.tree, tuple(path.split("/")))
        except (NotFound, InvalidRequest):
            return None
        if entry.mode not in BLOB_MODES:
            return None
        decoded = decode_text(self.data(entry.id))
        return decoded.lines if decoded is not None else None

    def license_header(self) -> str:
        """The SPDX tag a generated document carries: the repository's own license, as the
        documents quote its code (names, signatures, docstrings); none without one."""
        root = self.root_license
        return f"SPDX-License-Identifier: {root.spdx}" if root is not None else ""
