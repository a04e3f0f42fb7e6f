"""The mirror: the only writer of the cache. Registers, clones, fetches, indexes and publishes.

A first sync clones into a temporary directory and renames it into place; later syncs
fetch into the bare repository (git writes objects before it moves refs). Either way
the MirrorState that workers read is published last, after the index of the new head
and its identified license files are stored, so a reader sees the previous sync or the
new one, never half of one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import shutil
import time
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import pygit2
import structlog

from worker.config import (
    Config,
    FollowedConfig,
    RepoEntry,
    load_config,
    parse_config,
    render_repo_entry,
)
from worker.errors import ConfigError, RepoNotFound, RevisionNotFound, SyncError
from worker.licenses import LicenseInfo, LicenseResolver
from worker.mirror.fetch import ProgressCallback, clone, default_ref, fetch
from worker.repos.catalog import resolve_revision
from worker.repos.layout import (
    CacheLayout,
    IdentifiedLicenses,
    MirrorState,
    atomic_write_bytes,
    trust_configured_repositories,
)

if TYPE_CHECKING:
    from contracts.docs import DocType
    from worker.docs.engine import Regeneration
    from worker.mirror.index_report import IndexReport

log = structlog.get_logger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class SyncResult:
    """What one sync of one repository did."""

    repo: str
    head: str
    previous_head: str | None
    received_objects: int
    seconds: float
    index_seconds: float
    """Building the index of the head (every view: research ranking and code search)."""
    index_workers: int
    """Processes the research index was built with."""
    graph_seconds: float = 0.0
    """Building the head's entity graph from its index (published with it)."""
    history_seconds: float = 0.0
    """Recording the commits not recorded before (messages, changed files)."""
    license: str | None = None
    """The root license detected at the head; None when none was (requests that require a
    license refuse the repository's code)."""
    license_source: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class _IndexTimings:
    seconds: float
    workers: int
    graph_seconds: float


class Mirror:
    """Keeps the bare mirrors, indexes and states of the repositories in the config."""

    def __init__(
        self,
        cache_dir: Path,
        config_file: Path,
        *,
        progress: ProgressCallback | None = None,
    ) -> None:
        trust_configured_repositories()
        self.layout = CacheLayout(cache_dir)
        self.config_file = config_file
        self._config = FollowedConfig(config_file, load_config(config_file))
        self._progress = progress

    @property
    def config(self) -> Config:
        """The configuration, read again when its file changed since: a repository another
        `mirror add` or `remove` registered or dropped while this mirror serves.

        A file that no longer parses is logged and the last good configuration kept.
        """
        try:
            if self._config.reread():
                log.info(
                    "mirror.config_reloaded", repos=[r.name for r in self._config.config.repos]
                )
        except ConfigError as exc:
            log.warning("mirror.config_unreadable", error=str(exc))
        return self._config.config

    @config.setter
    def config(self, config: Config) -> None:
        self._config.written(config)

    def add(self, name: str, url: str) -> RepoEntry:
        """Register `name` at `url` in the config file (atomically) and return its entry.

        A local path that does not exist is refused before anything is registered.
        """
        if self.config.repo(name) is not None:
            raise ConfigError(f"{name} is already registered in {self.config_file}")
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme in ("", "file") and not Path(parsed.path or url).exists():
            raise SyncError(f"{url} does not exist: nothing was registered")
        existing = self.config_file.read_text() if self.config_file.exists() else ""
        updated = existing + render_repo_entry(name, url)
        config = parse_config(updated, source=str(self.config_file))
        atomic_write_bytes(self.config_file, updated.encode())
        self.config = config
        entry = config.repo(name)
        assert entry is not None
        return entry

    def remove(self, name: str) -> None:
        """Unregister `name` and delete its mirror, index and state.

        The state goes first, so workers refuse the repository from then on; then the
        config entry (atomically), then the files.
        """
        entry = self.config.repo(name)
        if entry is None:
            raise ConfigError(f"{name} is not registered in {self.config_file}")
        text = self.config_file.read_text()
        block = render_repo_entry(entry.name, entry.url)
        if block not in text:
            raise ConfigError(
                f"{entry.name}'s entry in {self.config_file} was edited by hand: remove it there"
            )
        with self.layout.sync_lock(entry.name):
            self.layout.state_file(entry.name).unlink(missing_ok=True)
            updated = text.replace(block, "", 1)
            config = parse_config(updated, source=str(self.config_file))
            atomic_write_bytes(self.config_file, updated.encode())
            self.config = config
            for directory in (self.layout.repo_dir(entry.name), self.layout.index_dir(entry.name)):
                shutil.rmtree(directory, ignore_errors=True)
            self.layout.licenses_file(entry.name).unlink(missing_ok=True)

    def sync_each(self, names: Sequence[str] = ()) -> list[SyncResult | SyncError]:
        """Sync `names` (default: every registered repository), going on past a failure:
        each one's result, or the error it failed with."""
        outcomes: list[SyncResult | SyncError] = []
        for name in names or [entry.name for entry in self.config.repos]:
            entry = self.config.repo(name)
            if entry is None:
                outcomes.append(SyncError(f"{name} is not registered in {self.config_file}"))
                continue
            try:
                outcomes.append(self.sync_one(entry))
            except SyncError as exc:
                outcomes.append(exc)
        return outcomes

    def sync(self, names: Sequence[str] = ()) -> list[SyncResult]:
        """Sync `names` (default: every registered repository); the first failure raises."""
        if names:
            entries = []
            for name in names:
                entry = self.config.repo(name)
                if entry is None:
                    raise SyncError(f"{name} is not registered in {self.config_file}")
                entries.append(entry)
        else:
            entries = list(self.config.repos)
        return [self.sync_one(entry) for entry in entries]

    def sync_one(self, entry: RepoEntry) -> SyncResult:
        """Clone or fetch one repository, index its head, then publish its state."""
        started = time.monotonic()
        with self.layout.sync_lock(entry.name):
            if self._index_workers() > 1:
                from worker.index import start_build_workers

                start_build_workers(self._index_workers())
            previous = self.layout.read_state(entry.name)
            repo_dir = self.layout.repo_dir(entry.name)
            if repo_dir.is_dir():
                repo = pygit2.Repository(str(repo_dir))
                received = fetch(entry, repo, self._progress)
            else:
                repo, received = clone(entry, repo_dir, self._progress)
            head_ref = default_ref(entry, repo)
            head = str(repo.references[head_ref].peel(pygit2.Commit).id)
            try:
                timings = self._index(
                    entry, repo, head, previous.indexed_commit if previous else None
                )
                history_seconds = self._record_history(entry, repo)
                root_license = self._identify_licenses(entry.name, repo, head)
            except SyncError:
                raise
            except Exception as exc:
                # A defect met on content no test foresaw: it must cost this repository its
                # sync (the previous one stays published), not the syncs of the others.
                log.exception("mirror.analysis_failed", repo=entry.name, commit=head)
                kept = "; the previous sync stays published" if previous is not None else ""
                raise SyncError(
                    f"{entry.name}: analysing {head[:12]} failed ({type(exc).__name__}: {exc})"
                    + kept
                ) from exc
            self.layout.write_state(
                MirrorState(
                    repo=entry.name,
                    url=entry.url,
                    default_ref=head_ref,
                    head=head,
                    synced_at=dt.datetime.now(dt.UTC).replace(microsecond=0),
                    indexed_commit=head,
                    license=root_license.spdx if root_license else None,
                    license_source=root_license.source if root_license else None,
                    license_confidence=root_license.confidence if root_license else None,
                    additional_licenses=root_license.additional if root_license else (),
                )
            )
            self._prune(entry, head)
        result = SyncResult(
            repo=entry.name,
            head=head,
            previous_head=previous.head if previous else None,
            received_objects=received,
            seconds=time.monotonic() - started,
            index_seconds=timings.seconds,
            index_workers=timings.workers,
            graph_seconds=timings.graph_seconds,
            history_seconds=history_seconds,
            license=root_license.spdx if root_license else None,
            license_source=root_license.source if root_license else None,
        )
        log.info("mirror.synced", **dataclasses.asdict(result))
        if root_license is None:
            log.warning("mirror.no_license", repo=entry.name, head=head)
        return result

    def _record_history(self, entry: RepoEntry, repo: pygit2.Repository) -> float:
        """Publish the repository's history with the commits this fetch brought."""
        from worker.index.store.build import repo_index_dir
        from worker.index.store.history import write_history

        if not self.config.mirror.history_commits:
            return 0.0
        started = time.monotonic()
        recorded, fresh = write_history(
            repo_index_dir(self.layout.root, entry.name),
            repo,
            max_commits=self.config.mirror.history_commits,
        )
        seconds = time.monotonic() - started
        log.info(
            "mirror.history",
            repo=entry.name,
            commits=recorded,
            new=fresh,
            seconds=round(seconds, 3),
        )
        return seconds

    def rebuild_index(self, name: str, revision: str | None = None) -> tuple[str, float]:
        """Index `name` at `revision` (default: its mirrored head) again; (commit, seconds).

        Re-indexing the published head republishes the state with it marked indexed.
        """
        entry = self.config.repo(name)
        if entry is None:
            raise SyncError(f"{name} is not registered in {self.config_file}")
        started = time.monotonic()
        with self.layout.sync_lock(entry.name):
            state = self.layout.read_state(entry.name)
            if state is None:
                raise SyncError(f"{entry.name} has never been synced")
            repo = pygit2.Repository(str(self.layout.repo_dir(entry.name)))
            commit = resolve_revision(repo, revision) if revision else state.head
            if commit is None:
                raise RevisionNotFound(
                    f"{revision!r} is not a commit, tag or branch of {entry.name}",
                    repo=entry.name,
                    revision=revision,
                )
            self._index(entry, repo, commit, state.indexed_commit)
            if commit == state.head:
                self.layout.write_state(msgspec.structs.replace(state, indexed_commit=commit))
            self._prune(entry, state.head)
        return commit, time.monotonic() - started

    def regenerate_docs(self, name: str, doc_types: Sequence[DocType]) -> Regeneration:
        """Bring documents of `name` up to date with its mirrored head (see `worker.docs`),
        under its sync lock, so no sync moves the head meanwhile."""
        from worker.docs.engine import DocsEngine

        entry = self.config.repo(name)
        if entry is None:
            raise SyncError(f"{name} is not registered in {self.config_file}")
        with self.layout.sync_lock(entry.name):
            state = self.layout.read_state(entry.name)
            if state is None:
                raise RepoNotFound(f"{entry.name} is registered but not mirrored yet", repo=name)
            done = DocsEngine(self.layout, self.config).regenerate(state, doc_types)
        log.info(
            "mirror.docs_regenerated",
            repo=entry.name,
            head=done.head,
            regenerated=done.regenerated,
            docs_commit=done.docs_commit,
            seconds=round(done.seconds, 3),
        )
        return done

    def index_report(self, name: str, commit: str) -> IndexReport:
        """What the stored index of `commit` holds (its graph's counts, files left out)."""
        from worker.mirror.index_report import index_report

        entry = self.config.repo(name)
        if entry is None:
            raise SyncError(f"{name} is not registered in {self.config_file}")
        repo = pygit2.Repository(str(self.layout.repo_dir(entry.name)))
        return index_report(
            self.layout.root,
            entry.name,
            repo,
            commit,
            max_blob_bytes=self.config.server.max_blob_bytes,
        )

    def _identify_licenses(
        self, name: str, repo: pygit2.Repository, head: str
    ) -> LicenseInfo | None:
        """Identify and publish every license file of `head`; return its root license.

        Texts the last sync identified are not identified again (answers are by blob id).
        """
        tree = repo[head].peel(pygit2.Tree)
        previous = self.layout.read_licenses(name)
        resolver = LicenseResolver(repo, identified=previous.texts if previous else None)
        texts = resolver.identify_license_files(tree)
        self.layout.write_licenses(name, IdentifiedLicenses(commit=head, texts=texts))
        return resolver.for_root(tree)

    def _index(
        self,
        entry: RepoEntry,
        repo: pygit2.Repository,
        commit: str,
        previous_commit: str | None = None,
    ) -> _IndexTimings:
        """Store the index of `commit`, every view of it (only changed blobs cost), with the
        entity graph the index gives (resolving again only what may differ from the graph of
        `previous_commit`, when it is stored) published in the same rename; off huge pages
        while it builds (see `huge_pages_off`)."""
        from worker.index import build_commit_index
        from worker.index.store.build import repo_index_dir
        from worker.index.store.graph_tables import GraphView
        from worker.index.store.huge_pages import huge_pages_off

        workers = self._index_workers()
        self._report(entry.name, f"indexing {commit[:12]} ({workers} processes)")
        started = time.monotonic()
        commits_dir = repo_index_dir(self.layout.root, entry.name) / "commits"
        graph = GraphView(
            commits_dir / previous_commit
            if previous_commit is not None and previous_commit != commit
            else None
        )
        with huge_pages_off():
            build_commit_index(
                self.layout.root,
                entry.name,
                repo,
                commit,
                max_blob_bytes=self.config.server.max_blob_bytes,
                workers=workers,
                derived=graph,
            )
        seconds = time.monotonic() - started
        if graph.built is not None:
            log.info(
                "mirror.graph_built",
                repo=entry.name,
                commit=commit,
                files=graph.built.files,
                resolved=graph.built.resolved,
                seconds=round(graph.built.seconds, 3),
            )
        return _IndexTimings(
            seconds=seconds - graph.seconds, workers=workers, graph_seconds=graph.seconds
        )

    def _prune(self, entry: RepoEntry, head: str) -> None:
        """Remove the published commits past the newest `keep_commits` (never `head`), and
        the segments only they used. The sync is published by now: a failure is logged."""
        from worker.index.store.build import repo_index_dir
        from worker.index.store.retention import prune_index

        try:
            pruned = prune_index(
                repo_index_dir(self.layout.root, entry.name),
                keep=self.config.mirror.keep_commits,
                also=(head,),
            )
        except OSError as exc:
            log.warning("mirror.prune_failed", repo=entry.name, error=str(exc))
            return
        if pruned.commits or pruned.segments or pruned.leftovers:
            log.info(
                "mirror.pruned",
                repo=entry.name,
                commits=len(pruned.commits),
                segments=len(pruned.segments),
                leftovers=pruned.leftovers,
                mb=round(pruned.bytes / 1e6, 1),
            )

    def _index_workers(self) -> int:
        """Processes an index build uses: as configured, else one per core."""
        return self.config.mirror.index_workers or os.cpu_count() or 1

    def _report(self, name: str, message: str) -> None:
        if self._progress is not None:
            self._progress(name, message)
