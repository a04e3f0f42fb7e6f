"""Which repositories a worker may serve, and how a caller's reference resolves to a commit.

Rules (seed 002 is the strictest, so it wins): a repository not registered in
`repo-reader.toml`, or denied by the server's policy, is `ACCESS_DENIED`; a registered
one with no published mirror yet is `REPO_NOT_FOUND`; a bare name matching several
registered repositories is `AMBIGUOUS_REPOSITORY`. What the config alone decides is in
`worker.repos.registry`.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pygit2
import structlog

from worker.config import Config, FollowedConfig, RepoEntry
from worker.errors import ConfigError, RepoNotFound
from worker.licenses.identify import TextLicense
from worker.repos.layout import (
    CacheLayout,
    MirrorState,
    keep_inflated_objects,
    read_mirrored_objects_unhashed,
    trust_configured_repositories,
)
from worker.repos.registry import lookup_repo, not_mirrored, unknown_revision

_HEX = re.compile(r"^[0-9a-f]{4,40}$")


@dataclass(frozen=True, slots=True)
class ResolvedRepo:
    """A repository in scope, pinned to one commit."""

    name: str
    repo: pygit2.Repository
    commit: str
    ref: str
    state: MirrorState
    licenses: Mapping[str, TextLicense | None] = field(default_factory=dict)
    """The license files the mirror identified in the published head, by blob id (see
    `worker.licenses.LicenseResolver`)."""


log = structlog.get_logger(__name__)

CONFIG_RECHECK_SECONDS: Final = 1.0
"""How often a worker looks whether the config file changed (a repository added, removed)."""


class RepoCatalog:
    """Resolves repository references against the config and the published mirror states."""

    def __init__(
        self, config: Config, layout: CacheLayout, *, config_file: Path | None = None
    ) -> None:
        trust_configured_repositories()
        read_mirrored_objects_unhashed()
        keep_inflated_objects(config.server.object_cache_bytes, config.server.max_blob_bytes)
        self._config = FollowedConfig(config_file, config)
        self._config_checked = time.monotonic()
        self._config_lock = threading.Lock()
        self.layout = layout
        # A pygit2.Repository must not be shared between threads.
        self._local = threading.local()
        self._licenses: dict[str, tuple[str, Mapping[str, TextLicense | None]]] = {}
        self._licenses_lock = threading.Lock()

    @property
    def config(self) -> Config:
        """The configuration, read again when its file changed (checked every second).

        The mirror registers and removes repositories in the config file; a worker that
        follows it serves them without a restart. A file that no longer parses is ignored
        (logged) and the last good configuration kept.
        """
        if time.monotonic() - self._config_checked >= CONFIG_RECHECK_SECONDS:
            with self._config_lock:
                self._config_checked = time.monotonic()
                try:
                    if self._config.reread():
                        log.info("catalog.config_reloaded", repos=self.servable())
                except ConfigError as exc:
                    log.warning("catalog.config_unreadable", error=str(exc))
        return self._config.config

    def lookup(self, ref: str, *, field: str = "repo") -> RepoEntry:
        """The registered repository `ref` (``owner/name`` or a bare ``name``) names."""
        return lookup_repo(self.config, ref, field=field)

    def servable(self) -> list[str]:
        """Registered, not denied and mirrored repositories, sorted by name."""
        return sorted(
            r.name
            for r in self.config.repos
            if not self.config.denied(r.name) and self.layout.state_file(r.name).exists()
        )

    def state(self, name: str) -> MirrorState:
        """The published mirror state of a registered repository."""
        state = self.layout.read_state(name)
        if state is None or not self.layout.repo_dir(name).is_dir():
            raise not_mirrored(name)
        return state

    def identified_licenses(
        self, name: str, state: MirrorState
    ) -> Mapping[str, TextLicense | None]:
        """The license files the mirror identified when it published `state`, by blob id.

        Read once per published head; empty when the mirror wrote none.
        """
        with self._licenses_lock:
            cached = self._licenses.get(name)
            if cached is not None and cached[0] == state.head:
                return cached[1]
        found = self.layout.read_licenses(name)
        texts: Mapping[str, TextLicense | None] = found.texts if found is not None else {}
        with self._licenses_lock:
            self._licenses[name] = (state.head, texts)
        return texts

    def open(self, name: str) -> pygit2.Repository:
        """This thread's handle on the bare mirror of `name`."""
        handles: dict[str, pygit2.Repository] | None = getattr(self._local, "handles", None)
        if handles is None:
            handles = self._local.handles = {}
        repo = handles.get(name)
        if repo is None:
            path = self.layout.repo_dir(name)
            try:
                repo = pygit2.Repository(str(path))
            except pygit2.GitError:
                raise RepoNotFound(f"{name} has no readable mirror", repo=name) from None
            handles[name] = repo
        return repo

    def resolve(
        self, name: str, revision: str | None = None, *, state: MirrorState | None = None
    ) -> ResolvedRepo:
        """Pin `name` to a commit: `revision` (sha, tag or branch), else (or for `HEAD`) the
        mirrored default branch head; `state`, when given, is its mirror state read already."""
        state = self.state(name) if state is None else state
        repo = self.open(name)
        licenses = self.identified_licenses(name, state)
        if revision is None or revision == "HEAD":
            return ResolvedRepo(
                name=name,
                repo=repo,
                commit=state.head,
                ref=state.default_ref,
                state=state,
                licenses=licenses,
            )
        commit = resolve_revision(repo, revision)
        if commit is None:
            raise unknown_revision(name, revision)
        return ResolvedRepo(
            name=name, repo=repo, commit=commit, ref=revision, state=state, licenses=licenses
        )


FULL_REF_PREFIXES: Final = ("refs/heads/", "refs/tags/", "refs/repo-reader/")
"""Full ref names a revision may give: upstream's branches and tags, and the refs the mirror
writes itself (`refs/repo-reader/docs`, the generated documentation)."""


def resolve_revision(repo: pygit2.Repository, revision: str) -> str | None:
    """The commit id `revision` names in `repo`: a full ref name (`FULL_REF_PREFIXES`), a
    branch, a tag, or an unambiguous sha prefix."""
    if revision.startswith(FULL_REF_PREFIXES):
        try:
            ref = repo.references.get(revision)
        except (ValueError, pygit2.InvalidSpecError):
            return None
        return _peel_to_commit(repo, ref.resolve().target) if ref is not None else None
    for prefix in ("refs/heads/", "refs/tags/"):
        try:
            ref = repo.references.get(prefix + revision)
        except (ValueError, pygit2.InvalidSpecError):
            return None
        if ref is not None:
            return _peel_to_commit(repo, ref.resolve().target)
    if _HEX.match(revision):
        try:
            obj = repo.revparse_single(revision)
        except (KeyError, ValueError, pygit2.GitError):
            return None
        return _peel_to_commit(repo, obj.id)
    return None


def _peel_to_commit(repo: pygit2.Repository, target: pygit2.Oid | str) -> str | None:
    try:
        commit = repo[target].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None
    return str(commit.id)
