"""Find the license of a file or a repository at a commit, from the git objects alone.

A file's SPDX header wins; otherwise the nearest directory at or above the file whose
license files or package metadata decide; otherwise there is no license. Only the entries
of each ancestor directory's own tree object are read, never the whole tree.

In one directory: each license file is identified (`identify_license`); one license is the
answer, refined by the package metadata when that names the same license more precisely
(`GPL-2.0-only` text, `GPL-2.0-or-later` declared). Several licenses are combined as the
metadata says when it names exactly them, as a choice (`OR`) when a license file or the
README offers one, else with `AND`. The GNU GPL text beside the LGPL text (COPYING and
COPYING.LESSER) is part of the LGPL, which incorporates it. With no license file
identified, the package metadata alone decides. `LicenseInfo.source` names every file
that decided.

Identifying a license text is the slow part, so the mirror identifies every license file of
the head it publishes (`LicenseResolver.identify_license_files`) and workers look the
answers up by blob id; they identify a text themselves only when it is not among them (a
pinned older revision's license file).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Final

import msgspec
import pygit2
import structlog
from pygit2.enums import FileMode

from worker.errors import NotFound
from worker.licenses.cache import BoundedLru
from worker.licenses.expressions import is_refinement, license_family, license_ids
from worker.licenses.header import HEADER_SCAN_BYTES, spdx_header
from worker.licenses.identify import (
    MAX_LICENSE_FILE_BYTES,
    TextLicense,
    identify_license,
    is_license_file_name,
    license_file_text,
)
from worker.licenses.metadata import METADATA_FILE_NAMES, metadata_license
from worker.licenses.statements import offers_choice, readme_offers_choice
from worker.repos.tree_paths import entry_name, tree_child

log = structlog.get_logger(__name__)

SPDX_HEADER_SOURCE: Final = "spdx-header"
MAX_LICENSE_FILES_PER_DIRECTORY = 16
"""A text askalono has to identify costs ~0.15 s (pyaskalono loads its whole store of
license texts on every call), so a directory's candidates are capped (by name order)."""
_README_NAMES = frozenset({"readme", "readme.md", "readme.rst", "readme.txt", "readme.markdown"})
# The LGPL amends the GPL of the same generation and asks for its text to be shipped too.
_LGPL_CARRIES = {"LGPL-3.0": "GPL-3.0", "LGPL-2.1": "GPL-2.0", "LGPL-2.0": "GPL-2.0"}


class LicenseInfo(msgspec.Struct, frozen=True, kw_only=True):
    """The license a file or repository is under, and where it was read from."""

    spdx: str
    """An SPDX license expression."""
    source: str
    """`spdx-header`, or the repository path(s) of the license file(s) and metadata file that
    decided, joined by ", "."""
    confidence: float = 1.0
    """0..1: how sure the identification of the license text(s) is; 1.0 for a declaration
    (an SPDX tag, package metadata)."""
    additional: tuple[str, ...] = ()
    """Licenses of bundled code the license files also carry (reported, not applied)."""


class DirectoryLicense(msgspec.Struct, frozen=True, kw_only=True):
    """What the license files and metadata directly inside one directory declare."""

    spdx: str
    names: tuple[str, ...]
    """The files that decided, by their names in the directory."""
    confidence: float = 1.0
    additional: tuple[str, ...] = ()


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
        self.texts: BoundedLru[str, TextLicense | None] = BoundedLru(max_texts)
        """Blob id of a license file -> the license its text was identified as."""
        self.declarations: BoundedLru[str, str | None] = BoundedLru(max_texts)
        """"<name>:<blob id>" of a metadata file -> the expression it declares; "choice:<blob
        id>" of a license file or README -> "OR" when it offers a choice of licenses."""
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
        identified: Mapping[str, TextLicense | None] | None = None,
    ) -> None:
        self._repo = repo
        self._cache = cache if cache is not None else LicenseCache()
        self._identified: Mapping[str, TextLicense | None] = identified or {}

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

    def for_directory(self, commit_tree: pygit2.Tree, directory: str) -> LicenseInfo | None:
        """Return the license of the nearest license files at or above `directory` ("" is the
        root) in `commit_tree`, or None."""
        return self._nearest(commit_tree, directory.strip("/"))

    def for_root(self, commit_tree: pygit2.Tree) -> LicenseInfo | None:
        """Return the license declared by the license file(s) at the root of `commit_tree`."""
        return self._directory_info(commit_tree, "")

    def identify_license_files(self, commit_tree: pygit2.Tree) -> dict[str, TextLicense | None]:
        """Identify every license file any lookup in `commit_tree` could read, by blob id.

        None for a text that is no identifiable license (also an answer worth keeping).
        """
        found: dict[str, TextLicense | None] = {}
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
                child = tree_child(tree, name)
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
        return LicenseInfo(
            spdx=found.spdx,
            source=", ".join(paths),
            confidence=found.confidence,
            additional=found.additional,
        )

    def _directory_license(self, tree: pygit2.Tree) -> DirectoryLicense | None:
        """Decide what one directory's license files and package metadata declare (see the
        module docstring)."""
        key = str(tree.id)
        cached = self._cache.directories.get(key, _MISSING)
        if not isinstance(cached, _Missing):
            return cached
        texts: list[tuple[str, TextLicense]] = []
        statements: list[str] = []
        for name, blob_id in _license_candidates(tree):
            found = self._identify_blob(blob_id)
            if found is not None:
                texts.append((name, found))
            elif self._offers_choice(blob_id, readme=False):
                statements.append(name)
            else:
                log.debug("license_file_unidentified", tree=key, name=name, blob=blob_id)
        declared = self._declared(tree)
        result = (
            _decide(texts, statements, declared, lambda: self._readme_choice(tree))
            if texts
            else None
        )
        if result is None and declared is not None:
            result = DirectoryLicense(spdx=declared[1], names=(declared[0],))
        self._cache.directories.put(key, result)
        return result

    def _declared(self, tree: pygit2.Tree) -> tuple[str, str] | None:
        """(file name, expression) of the first metadata file in `tree` declaring a license."""
        with _GIT_READS:
            entries = {
                name: str(entry.id)
                for entry in tree
                if (name := entry_name(entry)) in METADATA_FILE_NAMES
                and entry.filemode in _BLOB_MODES
            }
        for name in METADATA_FILE_NAMES:
            if name not in entries:
                continue
            key = f"{name}:{entries[name]}"
            cached = self._cache.declarations.get(key, _MISSING)
            if isinstance(cached, _Missing):
                data = self._blob_data(entries[name])
                cached = metadata_license(name, data) if data is not None else None
                self._cache.declarations.put(key, cached)
            if cached is not None:
                return name, cached
        return None

    def _readme_choice(self, tree: pygit2.Tree) -> str | None:
        """The name of the README in `tree` that offers a choice of licenses, if one does."""
        with _GIT_READS:
            readmes = sorted(
                (name, str(entry.id))
                for entry in tree
                if (name := entry_name(entry)).lower() in _README_NAMES
                and entry.filemode in _BLOB_MODES
            )
        for name, blob_id in readmes:
            if self._offers_choice(blob_id, readme=True):
                return name
        return None

    def _offers_choice(self, blob_id: str, *, readme: bool) -> bool:
        key = f"choice:{blob_id}"
        cached = self._cache.declarations.get(key, _MISSING)
        if isinstance(cached, _Missing):
            data = self._blob_data(blob_id)
            text = license_file_text(data) if data is not None else None
            choice = text is not None and (
                readme_offers_choice(text) if readme else offers_choice(text)
            )
            cached = "OR" if choice else None
            self._cache.declarations.put(key, cached)
        return cached is not None

    def _blob_data(self, blob_id: str) -> bytes | None:
        with _GIT_READS:
            blob = self._repo[blob_id]
            if isinstance(blob, pygit2.Blob) and blob.size <= MAX_LICENSE_FILE_BYTES:
                return bytes(blob.data)
        return None

    def _identify_blob(self, blob_id: str) -> TextLicense | None:
        cached = self._cache.texts.get(blob_id, _MISSING)
        if not isinstance(cached, _Missing):
            return cached
        if blob_id in self._identified:
            known = self._identified[blob_id]
            self._cache.texts.put(blob_id, known)
            return known
        data = self._blob_data(blob_id)
        text = license_file_text(data) if data is not None else None
        found = None
        if text is not None:
            # A license file that names its license with an SPDX tag (Linux's COPYING:
            # "SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note") is a declaration
            # by the project, and wins over guessing from the text around it.
            header = spdx_header(text)
            found = (
                TextLicense(spdx=header, confidence=1.0)
                if header is not None
                else identify_license(text)
            )
        self._cache.texts.put(blob_id, found)
        return found


def _decide(
    texts: list[tuple[str, TextLicense]],
    statements: list[str],
    declared: tuple[str, str] | None,
    readme_choice: Callable[[], str | None],
) -> DirectoryLicense:
    """Combine the identified license files of one directory (see the module docstring)."""
    by_license: dict[str, list[str]] = {}
    for name, found in texts:
        by_license.setdefault(found.spdx, []).append(name)
    for lesser, greater in _LGPL_CARRIES.items():
        families = {license_family(spdx): spdx for spdx in by_license}
        if lesser in families and greater in families:
            names = by_license.pop(families[greater])
            by_license[families[lesser]].extend(names)
    spdxs = sorted(by_license, key=lambda spdx: (spdx.lower(), spdx))
    names = sorted(name for group in by_license.values() for name in group)
    found_ids = frozenset(i for spdx in spdxs for i in license_ids(spdx))
    confidence = min(found.confidence for _, found in texts)
    additional = tuple(
        dict.fromkeys(
            extra
            for _, found in texts
            for extra in found.additional
            if license_family(extra) not in {license_family(i) for i in found_ids}
        )
    )
    if declared is not None and declared[1] not in spdxs and is_refinement(declared[1], found_ids):
        spdx, names = declared[1], [*names, declared[0]]
    elif len(spdxs) == 1:
        spdx = spdxs[0]
    elif statements or (readme := readme_choice()) is not None:
        spdx = " OR ".join(f"({s})" if " " in s else s for s in spdxs)
        names = [*names, *(statements if statements else [str(readme)])]
    else:
        # Several licenses and nothing says they are a choice: all may apply, and AND is
        # the reading that is never wrong to comply with.
        spdx = " AND ".join(f"({s})" if " " in s else s for s in spdxs)
    return DirectoryLicense(
        spdx=spdx, names=tuple(names), confidence=confidence, additional=additional
    )


def _license_candidates(tree: pygit2.Tree) -> list[tuple[str, str]]:
    """(name, blob id) of the license files directly in `tree`, the first few by name."""
    with _GIT_READS:
        return sorted(
            (name, str(entry.id))
            for entry in tree
            if entry.filemode in _BLOB_MODES and is_license_file_name(name := entry_name(entry))
        )[:MAX_LICENSE_FILES_PER_DIRECTORY]


def _self_and_ancestors(directory: str) -> list[str]:
    """List `directory` and each directory above it, deepest first, ending with the root ""."""
    levels: list[str] = []
    while directory:
        levels.append(directory)
        directory = directory.rpartition("/")[0]
    levels.append("")
    return levels
