"""Find the license of a file or a repository at a commit, from the git objects alone.

A file's SPDX header wins; otherwise the nearest directory at or above the file that
holds an identifiable license file decides; otherwise there is no license. Only the
entries of each ancestor directory's own tree object are read, never the whole tree.

Identifying a license text is the slow part, so the mirror identifies every license file of
the head it publishes (`LicenseResolver.identify_license_files`) and workers look the
answers up by blob id; they identify a text themselves only when it is not among them (a
pinned older revision's license file).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Final

import msgspec
import pygit2
import structlog
from pygit2.enums import FileMode

from worker.errors import NotFound
from worker.licenses.cache import BoundedLru
from worker.licenses.header import HEADER_SCAN_BYTES, spdx_header
from worker.licenses.identify import (
    MAX_LICENSE_FILE_BYTES,
    identify_license_text,
    is_license_file_name,
    license_file_text,
)

log = structlog.get_logger(__name__)

SPDX_HEADER_SOURCE: Final = "spdx-header"
MAX_LICENSE_FILES_PER_DIRECTORY = 16
"""Identification costs ~0.13 s a text (pyaskalono loads its whole store of license texts on
every call), so a directory's candidates are capped (by name order)."""


class LicenseInfo(msgspec.Struct, frozen=True, kw_only=True):
    """The license a file or repository is under, and where it was read from."""

    spdx: str
    """An SPDX license expression."""
    source: str
    """`spdx-header`, or the repository path(s) of the license file(s), joined by ", "."""


class DirectoryLicense(msgspec.Struct, frozen=True, kw_only=True):
    """What the license files directly inside one directory declare, by their names there."""

    spdx: str
    names: tuple[str, ...]


class LicenseCache:
    """The memo tables of `LicenseResolver`s; sharing one shares results between repositories.

    Every key is (or starts with) a git object id, which names content, so entries never
    go stale.
    """

    def __init__(
        self,
        *,
        max_texts: int = 4096,
        max_headers: int = 65536,
        max_directories: int = 65536,
        max_nearest: int = 65536,
    ) -> None:
        self.texts: BoundedLru[str, str | None] = BoundedLru(max_texts)
        """Blob id of a license file -> the SPDX id its text was identified as."""
        self.headers: BoundedLru[str, str | None] = BoundedLru(max_headers)
        """Blob id of any file -> the expression in its SPDX header."""
        self.directories: BoundedLru[str, DirectoryLicense | None] = BoundedLru(max_directories)
        """Tree id -> what the license files directly in that tree declare."""
        self.nearest: BoundedLru[tuple[str, str], LicenseInfo | None] = BoundedLru(max_nearest)
        """(root tree id, directory path) -> the nearest license at or above that directory."""


class _Missing:
    """The marker for a key absent from a cache (None is a cached answer)."""


_MISSING: Final = _Missing()
# libgit2 objects are not safe for concurrent use, and several resolvers may share one
# repository; reads are short, and identification (the slow part) runs outside the lock.
_GIT_READS = threading.Lock()
_BLOB_MODES = frozenset({FileMode.BLOB, FileMode.BLOB_EXECUTABLE})


class LicenseResolver:
    """Resolves licenses in one repository; safe to use from several threads.

    `identified` holds texts already identified (by the mirror, see
    `identify_license_files`), by blob id: askalono takes about 0.13 s a text, holding the
    GIL all along, so a worker should not be the one to run it.
    """

    def __init__(
        self,
        repo: pygit2.Repository,
        *,
        cache: LicenseCache | None = None,
        identified: Mapping[str, str | None] | None = None,
    ) -> None:
        self._repo = repo
        self._cache = cache if cache is not None else LicenseCache()
        self._identified: Mapping[str, str | None] = identified or {}

    def for_file(
        self, commit_tree: pygit2.Tree, path: str, blob_id: str, data: bytes | None
    ) -> LicenseInfo | None:
        """Return the license of the file at `path` in `commit_tree`, or None.

        `data` is the file's content (blob `blob_id`), as the caller has already read it, or
        None when the caller does not read it (a blob above the size bound): then the file's
        own SPDX header is not looked for, and the nearest license file decides.
        Raises `NotFound` when a directory on `path` is not a directory of `commit_tree`.
        """
        header = self._header(blob_id, data) if data is not None else None
        if header is not None:
            return LicenseInfo(spdx=header, source=SPDX_HEADER_SOURCE)
        directory = path.strip("/").rpartition("/")[0]
        return self._nearest(commit_tree, directory)

    def for_root(self, commit_tree: pygit2.Tree) -> LicenseInfo | None:
        """Return the license declared by the license file(s) at the root of `commit_tree`."""
        return self._directory_info(commit_tree, "")

    def identify_license_files(self, commit_tree: pygit2.Tree) -> dict[str, str | None]:
        """Identify every license file any lookup in `commit_tree` could read: blob id -> SPDX.

        None for a text that is no identifiable license (also an answer worth keeping).
        """
        found: dict[str, str | None] = {}
        trees = [commit_tree]
        while trees:
            tree = trees.pop()
            with _GIT_READS:
                subtrees = [
                    self._repo[entry.id] for entry in tree if entry.filemode == FileMode.TREE
                ]
            trees.extend(t for t in subtrees if isinstance(t, pygit2.Tree))
            for _, blob_id in _license_candidates(tree):
                if blob_id not in found:
                    found[blob_id] = self._identify_blob(blob_id)
        return found

    def _header(self, blob_id: str, data: bytes) -> str | None:
        cached = self._cache.headers.get(blob_id, _MISSING)
        if not isinstance(cached, _Missing):
            return cached
        header = spdx_header(data[:HEADER_SCAN_BYTES])
        self._cache.headers.put(blob_id, header)
        return header

    def _nearest(self, commit_tree: pygit2.Tree, directory: str) -> LicenseInfo | None:
        root_key = str(commit_tree.id)
        trees: dict[str, pygit2.Tree] | None = None
        uncached: list[str] = []
        result: LicenseInfo | None = None
        for level in _self_and_ancestors(directory):
            cached = self._cache.nearest.get((root_key, level), _MISSING)
            if not isinstance(cached, _Missing):
                result = cached
                break
            uncached.append(level)
            if trees is None:
                trees = self._trees_along(commit_tree, directory)
            result = self._directory_info(trees[level], level)
            if result is not None:
                break
        for level in uncached:
            self._cache.nearest.put((root_key, level), result)
        return result

    def _trees_along(self, commit_tree: pygit2.Tree, directory: str) -> dict[str, pygit2.Tree]:
        trees = {"": commit_tree}
        if not directory:
            return trees
        tree = commit_tree
        prefix = ""
        with _GIT_READS:
            for name in directory.split("/"):
                prefix = f"{prefix}/{name}" if prefix else name
                try:
                    child = tree[name]
                except KeyError:
                    child = None
                if not isinstance(child, pygit2.Tree):
                    raise NotFound(f"{prefix!r} is not a directory of the tree", path=prefix)
                tree = child
                trees[prefix] = tree
        return trees

    def _directory_info(self, tree: pygit2.Tree, prefix: str) -> LicenseInfo | None:
        found = self._directory_license(tree)
        if found is None:
            return None
        paths = [f"{prefix}/{name}" if prefix else name for name in found.names]
        return LicenseInfo(spdx=found.spdx, source=", ".join(paths))

    def _directory_license(self, tree: pygit2.Tree) -> DirectoryLicense | None:
        """Combine the licenses of a directory's own license files with AND.

        Several license files (LICENSE-MIT and LICENSE-APACHE, or COPYING and
        COPYING.LESSER) may be a choice or may all apply, and the files do not say which.
        AND is the reading that is never wrong to comply with, so it is the one reported.
        """
        key = str(tree.id)
        cached = self._cache.directories.get(key, _MISSING)
        if not isinstance(cached, _Missing):
            return cached
        names_by_id: dict[str, list[str]] = {}
        for name, blob_id in _license_candidates(tree):
            spdx = self._identify_blob(blob_id)
            if spdx is None:
                log.debug("license_file_unidentified", tree=key, name=name, blob=blob_id)
            else:
                names_by_id.setdefault(spdx, []).append(name)
        result: DirectoryLicense | None = None
        if names_by_id:
            ids = sorted(names_by_id, key=lambda spdx: (spdx.lower(), spdx))
            names = tuple(sorted(name for group in names_by_id.values() for name in group))
            result = DirectoryLicense(
                spdx=" AND ".join(f"({spdx})" if " OR " in spdx else spdx for spdx in ids),
                names=names,
            )
        self._cache.directories.put(key, result)
        return result

    def _identify_blob(self, blob_id: str) -> str | None:
        cached = self._cache.texts.get(blob_id, _MISSING)
        if not isinstance(cached, _Missing):
            return cached
        if blob_id in self._identified:
            known = self._identified[blob_id]
            self._cache.texts.put(blob_id, known)
            return known
        with _GIT_READS:
            blob = self._repo[blob_id]
            data = (
                blob.data
                if isinstance(blob, pygit2.Blob) and blob.size <= MAX_LICENSE_FILE_BYTES
                else None
            )
        text = license_file_text(data) if data is not None else None
        spdx = None
        if text is not None:
            # A license file that names its license with an SPDX tag (Linux's COPYING:
            # "SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note") is a declaration
            # by the project, and wins over guessing from the text around it.
            spdx = spdx_header(text) or identify_license_text(text)
        self._cache.texts.put(blob_id, spdx)
        return spdx


def _license_candidates(tree: pygit2.Tree) -> list[tuple[str, str]]:
    """(name, blob id) of the license files directly in `tree`, the first few by name."""
    with _GIT_READS:
        return sorted(
            (entry.name, str(entry.id))
            for entry in tree
            if entry.name is not None
            and entry.filemode in _BLOB_MODES
            and is_license_file_name(entry.name)
        )[:MAX_LICENSE_FILES_PER_DIRECTORY]


def _self_and_ancestors(directory: str) -> list[str]:
    """List `directory` and each directory above it, deepest first, ending with the root ""."""
    levels: list[str] = []
    while directory:
        levels.append(directory)
        directory = directory.rpartition("/")[0]
    levels.append("")
    return levels
