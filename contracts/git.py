"""The `git.*` message family (seed 002): a read-only view of recent history and churn.

Time windows end at the resolved commit's committer date, not at the moment of the
request, so the same request against the same commit always gives the same answer.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

import msgspec
from msgspec import Meta

from contracts.errors import ResponseEnvelope
from contracts.types import PositiveInt, RepoRef, Revision

TimeWindow = Annotated[
    str,
    Meta(
        pattern=r"^[1-9][0-9]{0,3}[dwmy]$",
        description=(
            "A window such as `7d`, `2w`, `1m` or `1y` (d = 1, w = 7, m = 30, y = 365 days)."
        ),
        examples=["7d", "1m", "1y"],
    ),
]


class GitHistoryRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Commits reachable from a revision within the last `since_days` days before it."""

    repo: RepoRef
    revision: Revision | None = None
    since_days: PositiveInt | None = None
    limit: PositiveInt | None = None


class CommitSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One commit: id, bounded message, classification and the files it touched (capped)."""

    hash: str
    parents: tuple[str, ...] = ()
    author: str = ""
    authored_at: dt.datetime
    committed_at: dt.datetime
    summary: str
    """The message's first line (bounded like the message)."""
    message: str
    message_truncated: bool = False
    classification: str
    """`feature`, `fix`, `docs`, `refactor`, `perf`, `style`, `test`, `build`, `ci`, `chore`,
    `revert`, `merge` or `other`."""
    classification_source: str
    """`merge`, `conventional` (a Conventional Commits type) or `heuristic` (from the message
    and the files touched)."""
    scope: str | None = None
    breaking: bool = False
    files_touched: tuple[str, ...] = ()
    """Paths changed against the first parent, in path order, at most the server's cap."""
    files_touched_total: int = 0
    files_truncated: bool = False


class GitHistoryResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """One message of a history answer; newest commit first."""

    repo: str = ""
    commit: str = ""
    ref: str = ""
    window_start: dt.datetime | None = None
    window_end: dt.datetime | None = None
    commits: tuple[CommitSummary, ...] = ()
    truncated: bool = False
    """More commits fall in the window than `limit`."""


class GitChurnRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The most active modules (directories at `depth`) over a time window."""

    repo: RepoRef
    revision: Revision | None = None
    time_window: TimeWindow = "30d"
    depth: Annotated[int, Meta(ge=1)] = 1
    """How many leading path segments name a module: 1 gives `src`, 2 gives `src/app`."""
    limit: PositiveInt | None = None
    """How many modules to return."""
    lines: bool = True
    """Count lines added and deleted too (slower: every change is diffed)."""


class ModuleChurn(msgspec.Struct, frozen=True, kw_only=True):
    """Activity of one module in the window; files at the top level form the module `.`."""

    path: str
    commit_count: int
    files_changed: int = 0
    """Distinct files of the module changed in the window."""
    lines_added: int = 0
    lines_deleted: int = 0
    lines_changed: int = 0


class GitChurnResponse(ResponseEnvelope, frozen=True, kw_only=True):
    """Modules by commit count, then lines changed, then path."""

    repo: str = ""
    commit: str = ""
    ref: str = ""
    time_window: str = ""
    window_start: dt.datetime | None = None
    window_end: dt.datetime | None = None
    commits_examined: int = 0
    """Non-merge commits counted (merge commits are skipped, as `git log --no-merges`)."""
    truncated: bool = False
    """The window holds more commits than the server examines; only the newest were counted."""
    modules: tuple[ModuleChurn, ...] = ()
    total_modules: int = 0
