"""Which repositories a worker may serve, and how a caller's reference resolves to a commit.

Rules (seed 002 is the strictest, so it wins): a repository not registered in
`repo-reader.toml`, or denied by the server's policy, is `ACCESS_DENIED`; a registered
one with no published mirror yet is `REPO_NOT_FOUND`; a bare name matching several
registered repositories is `AMBIGUOUS_REPOSITORY`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

import pygit2

from worker.config import Config, RepoEntry
from worker.errors import (
    AccessDenied,
    AmbiguousRepository,
    RepoNotFound,
    RevisionNotFound,
)
from worker.repos.layout import CacheLayout, MirrorState, trust_configured_repositories

_HEX = re.compile(r"^[0-9a-f]{4,40}$")


@dataclass(frozen=True, slots=True)
class ResolvedRepo:
    """A repository in scope, pinned to one commit."""

    name: str
    repo: pygit2.Repository
    commit: str
    ref: str
    state: MirrorState
    licenses: Mapping[str, str | None] = field(default_factory=dict)
    """The license files the mirror identified in the published head, by blob id (see
    `worker.licenses.LicenseResolver`)."""


class RepoCatalog:
    """Resolves repository references against the config and the published mirror states."""

    def __init__(self, config: Config, layout: CacheLayout) -> None:
        trust_configured_repositories()
        self.config = config
        self.layout = layout
        # A pygit2.Repository must not be shared between threads.
        self._local = threading.local()
        self._licenses: dict[str, tuple[str, Mapping[str, str | None]]] = {}
        self._licenses_lock = threading.Lock()

    def lookup(self, ref: str, *, field: str = "repo") -> RepoEntry:
        """The registered repository `ref` (``owner/name`` or a bare ``name``) names."""
        if "/" in ref:
            entry = self.config.repo(ref)
            candidates = [entry] if entry else []
        else:
            wanted = ref.lower()
            candidates = [r for r in self.config.repos if r.name.split("/", 1)[1].lower() == wanted]
        if not candidates:
            raise AccessDenied(
                f"{ref!r} is not a registered repository",
                repo=ref,
                field=field,
                reason="not-registered",
            )
        if len(candidates) > 1:
            names = sorted(c.name for c in candidates)
            raise AmbiguousRepository(
                f"{ref!r} matches {len(names)} repositories: {', '.join(names)}",
                repo=ref,
                field=field,
                candidates=names,
            )
        entry = candidates[0]
        if self.config.denied(entry.name):
            raise AccessDenied(
                f"{entry.name} is denied by the server's policy",
                repo=entry.name,
                field=field,
                reason="policy",
            )
        return entry

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
            raise RepoNotFound(f"{name} is registered but not mirrored yet", repo=name)
        return state

    def identified_licenses(self, name: str, state: MirrorState) -> Mapping[str, str | None]:
        """The license files the mirror identified when it published `state`, by blob id.

        Read once per published head; empty when the mirror wrote none.
        """
        with self._licenses_lock:
            cached = self._licenses.get(name)
            if cached is not None and cached[0] == state.head:
                return cached[1]
        found = self.layout.read_licenses(name)
        texts: Mapping[str, str | None] = found.texts if found is not None else {}
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

    def resolve(self, name: str, revision: str | None = None) -> ResolvedRepo:
        """Pin `name` to a commit: `revision` (sha, tag or branch), else the mirrored default."""
        state = self.state(name)
        repo = self.open(name)
        licenses = self.identified_licenses(name, state)
        if revision is None:
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
            raise RevisionNotFound(
                f"{revision!r} is not a commit, tag or branch of {name}",
                repo=name,
                revision=revision,
            )
        return ResolvedRepo(
            name=name, repo=repo, commit=commit, ref=revision, state=state, licenses=licenses
        )


def resolve_revision(repo: pygit2.Repository, revision: str) -> str | None:
    """The commit id `revision` names in `repo`: a branch, a tag, or an unambiguous sha prefix."""
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
