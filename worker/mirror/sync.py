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
import re
import shutil
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Sequence
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
from worker.errors import ConfigError, RepoNotFound, RevisionNotFound
from worker.licenses import LicenseInfo, LicenseResolver
from worker.repos.catalog import resolve_revision

if TYPE_CHECKING:
    from contracts.docs import DocType
    from worker.docs.engine import Regeneration
    from worker.mirror.index_report import IndexReport
from worker.repos.layout import (
    CacheLayout,
    IdentifiedLicenses,
    MirrorState,
    atomic_write_bytes,
    trust_configured_repositories,
)

log = structlog.get_logger(__name__)

FETCH_REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")

ProgressCallback = Callable[[str, str], None]
"""Receives (repo name, a one-line progress message)."""


class SyncError(Exception):
    """A repository could not be synced; the message says which and why."""


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


class _Progress(pygit2.RemoteCallbacks):
    """Reports a fetch's progress at most every half second: the server's own messages while
    it counts and compresses (before a byte of the pack arrives: tens of seconds for a large
    repository), then the transfer; the first and last message of each phase always."""

    def __init__(self, name: str, report: ProgressCallback | None) -> None:
        super().__init__()
        self._name = name
        self._report = report
        self._last = 0.0
        self._said = ""
        self._phase = ""
        self._partial = ""

    def sideband_progress(self, string: str) -> None:
        # The server's progress lines, "\r"-ended while a count goes up ("Counting objects:
        # 42% (420/1000)\r", then "... 100% (1000/1000), done.\n"), in pieces cut anywhere.
        *lines, self._partial = re.split(r"[\r\n]", self._partial + string)
        for line in filter(None, (line.strip() for line in lines)):
            phase = line.partition(":")[0]
            first, self._phase = phase != self._phase, phase
            self._say(f"remote: {line}", always=first or line.endswith("done."))

    def transfer_progress(self, stats: pygit2.remotes.TransferProgress) -> None:
        done = (
            stats.received_objects == stats.total_objects
            and stats.indexed_deltas == stats.total_deltas
        )
        first, self._phase = self._phase != "receiving", "receiving"
        total = max(stats.total_objects, 1)
        self._say(
            f"receiving objects {100 * stats.received_objects // total}% "
            f"({stats.received_objects}/{stats.total_objects}), "
            f"{stats.received_bytes / 2**20:.1f} MiB, "
            f"deltas {stats.indexed_deltas}/{stats.total_deltas}",
            always=first or done,
        )

    def _say(self, message: str, *, always: bool) -> None:
        now = time.monotonic()
        if self._report is None or message == self._said:
            return
        if now - self._last < 0.5 and not always:
            return
        self._last, self._said = now, message
        self._report(self._name, message)


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
                repo, received = self._fetch(entry, pygit2.Repository(str(repo_dir)))
            else:
                repo, received = self._clone(entry, repo_dir)
            default_ref = self._default_ref(entry, repo)
            head = str(repo.references[default_ref].peel(pygit2.Commit).id)
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
                    default_ref=default_ref,
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

    def _clone(self, entry: RepoEntry, repo_dir: Path) -> tuple[pygit2.Repository, int]:
        repo_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(
            tempfile.mkdtemp(dir=repo_dir.parent, prefix=f".{repo_dir.name}.", suffix=".tmp")
        )
        try:
            repo = pygit2.init_repository(str(staging), bare=True)
            repo.remotes.create("origin", entry.url, fetch=FETCH_REFSPECS[0])
            for refspec in FETCH_REFSPECS[1:]:
                repo.remotes.add_fetch("origin", refspec)
            objects = self._fetch_remote(entry, repo)
            staging.rename(repo_dir)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return pygit2.Repository(str(repo_dir)), objects

    def _fetch(self, entry: RepoEntry, repo: pygit2.Repository) -> tuple[pygit2.Repository, int]:
        if repo.remotes["origin"].url != entry.url:
            repo.remotes.set_url("origin", entry.url)
        return repo, self._fetch_remote(entry, repo)

    def _fetch_remote(self, entry: RepoEntry, repo: pygit2.Repository) -> int:
        """Fetch from the entry's remote; the number of objects received."""
        self._report(entry.name, f"fetching {entry.url}")
        try:
            stats = repo.remotes["origin"].fetch(
                callbacks=_Progress(entry.name, self._progress),
                prune=pygit2.enums.FetchPrune.PRUNE,
            )
        except pygit2.GitError as exc:
            raise SyncError(f"{entry.name}: cannot fetch {entry.url}: {exc}") from None
        return int(stats.received_objects)

    def _default_ref(self, entry: RepoEntry, repo: pygit2.Repository) -> str:
        """The remote's default branch (its HEAD), recorded as the bare repository's HEAD."""
        remote = repo.remotes["origin"]
        try:
            heads = remote.list_heads(callbacks=_Progress(entry.name, None))
        except pygit2.GitError as exc:
            raise SyncError(f"{entry.name}: cannot list {entry.url}: {exc}") from None
        target = next(
            (h.symref_target for h in heads if h.name == "HEAD" and h.symref_target), None
        )
        branches = sorted(r for r in repo.references if r.startswith("refs/heads/"))
        if target not in branches:
            target = next(
                (b for b in ("refs/heads/main", "refs/heads/master") if b in branches), None
            )
            target = target or (branches[0] if branches else None)
        if target is None:
            raise SyncError(f"{entry.name}: {entry.url} has no branches")
        repo.set_head(target)
        return target

    def _index(
        self,
        entry: RepoEntry,
        repo: pygit2.Repository,
        commit: str,
        previous_commit: str | None = None,
    ) -> _IndexTimings:
        """Store the index of `commit`, every view of it (only changed blobs cost), with the
        entity graph the index gives (resolving again only what may differ from the graph of
        `previous_commit`, when it is stored) published in the same rename."""
        from worker.index import build_commit_index
        from worker.index.store.build import repo_index_dir
        from worker.index.store.graph_tables import GraphView

        workers = self._index_workers()
        self._report(entry.name, f"indexing {commit[:12]} ({workers} processes)")
        started = time.monotonic()
        commits_dir = repo_index_dir(self.layout.root, entry.name) / "commits"
        graph = GraphView(
            commits_dir / previous_commit
            if previous_commit is not None and previous_commit != commit
            else None
        )
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
