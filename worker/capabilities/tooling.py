"""What every agent tool (`code.*`, `git.*`, `repo.*`) does the same way before its own work.

A tool names one repository: it must be registered and not denied (ACCESS_DENIED),
unambiguous (AMBIGUOUS_REPOSITORY) and mirrored (REPO_NOT_FOUND); its revision must
resolve (REVISION_NOT_FOUND). A limit above its ceiling is LIMIT_EXCEEDED, never
clamped. Tools that return code refuse an unlicensed repository (LICENSE_UNAVAILABLE)
unless the caller accepts `NOASSERTION`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pygit2

from contracts.types import NO_LICENSE
from worker.errors import LicenseUnavailable, LimitExceeded
from worker.licenses import LicenseCache, LicenseInfo, LicenseResolver
from worker.repos.catalog import RepoCatalog, ResolvedRepo


@dataclass(frozen=True, slots=True)
class Attribution:
    """The license of one file as the wire carries it."""

    license: str
    source: str
    confidence: float | None = None

    @classmethod
    def of(cls, info: LicenseInfo | None) -> Attribution:
        """The wire form of a resolved license (NOASSERTION / none when there is none)."""
        if info is None:
            return cls(license=NO_LICENSE, source="none")
        return cls(license=info.spdx, source=info.source, confidence=info.confidence)


def pin(catalog: RepoCatalog, repo: str, revision: str | None) -> ResolvedRepo:
    """The registered, mirrored repository `repo` names, pinned to `revision`."""
    entry = catalog.lookup(repo, field="repo")
    return catalog.resolve(entry.name, revision)


def commit_tree(pinned: ResolvedRepo) -> pygit2.Tree:
    """The root tree of the pinned commit."""
    return pinned.repo[pinned.commit].peel(pygit2.Commit).tree


def within_ceiling(field: str, value: int | None, *, default: int, ceiling: int) -> int:
    """`value` (or `default` when absent), or LimitExceeded when it is above `ceiling`."""
    if value is None:
        return default
    if value > ceiling:
        raise LimitExceeded(
            f"{field}: {value} is above the ceiling of {ceiling}",
            field=field,
            limit=ceiling,
            value=value,
        )
    return value


def check_query_length(query: str, ceiling: int) -> None:
    """LimitExceeded when `query` has more characters than `ceiling`."""
    if len(query) > ceiling:
        raise LimitExceeded(
            f"query: {len(query)} characters is above the ceiling of {ceiling}",
            field="query",
            limit=ceiling,
            value=len(query),
        )


def check_root_license(name: str, root: object | None, *, required: bool) -> None:
    """LicenseUnavailable when a license is `required` and repository `name` has no `root`
    license."""
    if root is None and required:
        raise LicenseUnavailable(
            f"no license could be detected for {name}, and one is required "
            "(require_license = false accepts unlicensed sources)",
            repos=[name],
            lifted_by="require_license",
        )


class LicensedFiles:
    """Licenses of the files of one pinned commit, with the repository-wide requirement."""

    def __init__(self, pinned: ResolvedRepo, cache: LicenseCache, *, required: bool) -> None:
        self._resolver = LicenseResolver(pinned.repo, cache=cache, identified=pinned.licenses)
        self._tree = commit_tree(pinned)
        check_root_license(pinned.name, self._resolver.for_root(self._tree), required=required)

    def of(self, path: str, blob_id: str, data: bytes | None) -> Attribution:
        """The license of the file at `path`: blob `blob_id`, whose content is `data` (None
        for a blob that is not read: then the nearest license file decides)."""
        return Attribution.of(self._resolver.for_file(self._tree, path, blob_id, data))
