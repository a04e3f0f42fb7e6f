"""Bringing a repository's objects into its bare mirror: clone, fetch, and its default branch.

A clone is made in a temporary directory beside its place and renamed into it, so a reader
never sees half of one; a fetch into an existing mirror writes objects before it moves refs
(git's own order). Progress goes to a callback as one-line messages.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pygit2

from worker.config import RepoEntry
from worker.errors import SyncError

FETCH_REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")

ProgressCallback = Callable[[str, str], None]
"""Receives (repo name, a one-line progress message)."""


class FetchProgress(pygit2.RemoteCallbacks):
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


def clone(
    entry: RepoEntry, repo_dir: Path, progress: ProgressCallback | None
) -> tuple[pygit2.Repository, int]:
    """A new bare mirror of `entry` at `repo_dir`; with the number of objects received."""
    repo_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(
        tempfile.mkdtemp(dir=repo_dir.parent, prefix=f".{repo_dir.name}.", suffix=".tmp")
    )
    try:
        repo = pygit2.init_repository(str(staging), bare=True)
        repo.remotes.create("origin", entry.url, fetch=FETCH_REFSPECS[0])
        for refspec in FETCH_REFSPECS[1:]:
            repo.remotes.add_fetch("origin", refspec)
        objects = _fetch_origin(entry, repo, progress)
        staging.rename(repo_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return pygit2.Repository(str(repo_dir)), objects


def fetch(entry: RepoEntry, repo: pygit2.Repository, progress: ProgressCallback | None) -> int:
    """Fetch `entry` into its existing mirror (following a changed URL); the number of
    objects received."""
    if repo.remotes["origin"].url != entry.url:
        repo.remotes.set_url("origin", entry.url)
    return _fetch_origin(entry, repo, progress)


def _fetch_origin(
    entry: RepoEntry, repo: pygit2.Repository, progress: ProgressCallback | None
) -> int:
    if progress is not None:
        progress(entry.name, f"fetching {entry.url}")
    try:
        stats = repo.remotes["origin"].fetch(
            callbacks=FetchProgress(entry.name, progress),
            prune=pygit2.enums.FetchPrune.PRUNE,
        )
    except pygit2.GitError as exc:
        raise SyncError(f"{entry.name}: cannot fetch {entry.url}: {exc}") from None
    return int(stats.received_objects)


def default_ref(entry: RepoEntry, repo: pygit2.Repository) -> str:
    """The remote's default branch (its HEAD), recorded as the bare repository's HEAD.

    Without one the remote names, `main`, then `master`, then the first branch by name.
    """
    remote = repo.remotes["origin"]
    try:
        heads = remote.list_heads(callbacks=FetchProgress(entry.name, None))
    except pygit2.GitError as exc:
        raise SyncError(f"{entry.name}: cannot list {entry.url}: {exc}") from None
    target = next((h.symref_target for h in heads if h.name == "HEAD" and h.symref_target), None)
    branches = sorted(r for r in repo.references if r.startswith("refs/heads/"))
    if target not in branches:
        target = next((b for b in ("refs/heads/main", "refs/heads/master") if b in branches), None)
        target = target or (branches[0] if branches else None)
    if target is None:
        raise SyncError(f"{entry.name}: {entry.url} has no branches")
    repo.set_head(target)
    return target
