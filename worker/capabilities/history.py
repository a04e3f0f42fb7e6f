"""The `git.history` and `git.churn` capabilities: a read-only, bounded view of recent commits.

Windows end at the resolved commit's committer date and reach back the requested number
of days; commits are walked newest first (committer time), from that commit only.
Files touched are the paths changed against the first parent (a root commit against
the empty tree), without rename detection. Churn skips merge commits, as
`git log --no-merges` does, and counts each commit once per module it touched.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

import pygit2

from contracts.git import (
    CommitSummary,
    GitChurnRequest,
    GitChurnResponse,
    GitHistoryRequest,
    GitHistoryResponse,
    ModuleChurn,
)
from worker.capabilities.classify import classify
from worker.capabilities.tooling import pin, within_ceiling
from worker.config import Config, ToolLimits
from worker.errors import LimitExceeded, Timeout
from worker.repos.catalog import RepoCatalog
from worker.repos.tree_paths import path_text

DAY: Final = 86_400
WINDOW_UNITS: Final = {"d": 1, "w": 7, "m": 30, "y": 365}
_WINDOW: Final = re.compile(r"^([1-9][0-9]{0,3})([dwmy])$")
ROOT_MODULE: Final = "."


def window_days(window: str) -> int:
    """Days in a window such as `7d`, `2w`, `1m` (30 days) or `1y` (365 days)."""
    match = _WINDOW.match(window)
    if match is None:
        raise ValueError(f"not a time window: {window!r}")
    return int(match.group(1)) * WINDOW_UNITS[match.group(2)]


def commit_time(signature: pygit2.Signature) -> dt.datetime:
    """A signature's time in its own UTC offset."""
    zone = dt.timezone(dt.timedelta(minutes=signature.offset))
    return dt.datetime.fromtimestamp(signature.time, zone)


def walk_window(
    repo: pygit2.Repository, head: str, since: int, deadline: float, stage: str
) -> Iterator[pygit2.Commit]:
    """Commits reachable from `head`, newest first, while their committer time >= `since`.

    In `git log`'s order: libgit2's unsorted walk takes the newest commit of its frontier
    next, as git does, and so never a parent before its child. Its time sort breaks ties of
    one second (a script's commits, a rebase's) in any order.
    """
    for commit in repo.walk(head, pygit2.enums.SortMode.NONE):
        if commit.commit_time < since:
            return
        if time.monotonic() > deadline:
            raise Timeout(f"{stage} ran out of its time budget", stage=stage)
        yield commit


def first_parent_diff(commit: pygit2.Commit) -> pygit2.Diff:
    """The changes of `commit` against its first parent (or the empty tree)."""
    if commit.parents:
        return commit.parents[0].tree.diff_to_tree(commit.tree, context_lines=0)
    return commit.tree.diff_to_tree(swap=True, context_lines=0)


def _delta_path(delta: pygit2.DiffDelta) -> str:
    side = delta.new_file if delta.status_char() != "D" else delta.old_file
    return path_text(side.raw_path)


def _bounded(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


@dataclass(slots=True)
class _ModuleCounts:
    commits: int = 0
    files: set[str] = field(default_factory=set)
    added: int = 0
    deleted: int = 0


class GitHistory:
    """Answers git.history and git.churn from the mirrored repositories."""

    def __init__(self, config: Config, catalog: RepoCatalog) -> None:
        self.config = config
        self.catalog = catalog

    def history(
        self, request: GitHistoryRequest, *, request_id: str, deadline: float
    ) -> GitHistoryResponse:
        """Commits of the window, newest first, at most `limit`."""
        days, limit = check_history(request, self.config.tools)
        pinned = pin(self.catalog, request.repo, request.revision)
        head = pinned.repo[pinned.commit].peel(pygit2.Commit)
        end = head.commit_time
        since = end - days * DAY
        commits: list[CommitSummary] = []
        truncated = False
        for commit in walk_window(pinned.repo, pinned.commit, since, deadline, "git.history"):
            if len(commits) == limit:
                truncated = True
                break
            commits.append(self._summary(commit))
        return GitHistoryResponse(
            request_id=request_id,
            repo=pinned.name,
            commit=pinned.commit,
            ref=pinned.ref,
            window_start=dt.datetime.fromtimestamp(since, dt.UTC),
            window_end=dt.datetime.fromtimestamp(end, dt.UTC),
            commits=tuple(commits),
            truncated=truncated,
        )

    def _summary(self, commit: pygit2.Commit) -> CommitSummary:
        limits = self.config.tools
        message = commit.raw_message.decode("utf-8", "replace")
        files = sorted({_delta_path(d) for d in first_parent_diff(commit).deltas})
        kind = classify(message, len(commit.parents), files)
        shown, cut = _bounded(message.rstrip("\n"), limits.history_max_message_chars)
        summary, _ = _bounded(message.split("\n", 1)[0].strip(), limits.history_max_message_chars)
        cap = limits.history_max_files_per_commit
        return CommitSummary(
            hash=str(commit.id),
            parents=tuple(str(p) for p in commit.parent_ids),
            author=commit.author.raw_name.decode("utf-8", "replace"),
            authored_at=commit_time(commit.author),
            committed_at=commit_time(commit.committer),
            summary=summary,
            message=shown,
            message_truncated=cut,
            classification=kind.kind,
            classification_source=kind.source,
            scope=kind.scope,
            breaking=kind.breaking,
            files_touched=tuple(files[:cap]),
            files_touched_total=len(files),
            files_truncated=len(files) > cap,
        )

    def churn(
        self, request: GitChurnRequest, *, request_id: str, deadline: float
    ) -> GitChurnResponse:
        """The most active modules of the window by commits, then lines changed."""
        days, top = check_churn(request, self.config.tools)
        pinned = pin(self.catalog, request.repo, request.revision)
        tally = module_churn(
            pinned.repo,
            pinned.commit,
            days=days,
            depth=request.depth,
            lines=request.lines,
            max_commits=self.config.tools.churn_max_commits,
            deadline=deadline,
            stage="git.churn",
        )
        return GitChurnResponse(
            request_id=request_id,
            repo=pinned.name,
            commit=pinned.commit,
            ref=pinned.ref,
            time_window=request.time_window,
            window_start=dt.datetime.fromtimestamp(tally.since, dt.UTC),
            window_end=dt.datetime.fromtimestamp(tally.end, dt.UTC),
            commits_examined=tally.examined,
            truncated=tally.truncated,
            modules=tally.modules[:top],
            total_modules=len(tally.modules),
        )


@dataclass(frozen=True, slots=True)
class ChurnTally:
    """Every module's activity over one window, most active first."""

    since: int
    end: int
    examined: int
    truncated: bool
    modules: tuple[ModuleChurn, ...]


def module_churn(
    repo: pygit2.Repository,
    commit: str,
    *,
    days: int,
    depth: int,
    lines: bool,
    max_commits: int,
    deadline: float,
    stage: str,
) -> ChurnTally:
    """The activity of each module (directory at `depth`) over the `days` before `commit`:
    by commits, then lines changed, then path; merges skipped, the newest `max_commits` kept."""
    end = repo[commit].peel(pygit2.Commit).commit_time
    since = end - days * DAY
    modules: dict[str, _ModuleCounts] = {}
    examined, truncated = 0, False
    for found in walk_window(repo, commit, since, deadline, stage):
        if len(found.parents) > 1:
            continue
        if examined == max_commits:
            truncated = True
            break
        examined += 1
        _count(found, depth, lines, modules)
    ranked = sorted(
        modules.items(), key=lambda kv: (-kv[1].commits, -(kv[1].added + kv[1].deleted), kv[0])
    )
    return ChurnTally(
        since=since,
        end=end,
        examined=examined,
        truncated=truncated,
        modules=tuple(
            ModuleChurn(
                path=path,
                commit_count=counts.commits,
                files_changed=len(counts.files),
                lines_added=counts.added,
                lines_deleted=counts.deleted,
                lines_changed=counts.added + counts.deleted,
            )
            for path, counts in ranked
        ),
    )


def _count(
    commit: pygit2.Commit, depth: int, lines: bool, modules: dict[str, _ModuleCounts]
) -> None:
    diff = first_parent_diff(commit)
    touched: set[str] = set()
    if lines:
        for patch in diff:
            if patch is None:
                continue
            path = _delta_path(patch.delta)
            _, added, deleted = patch.line_stats
            counts = modules.setdefault(module_of(path, depth), _ModuleCounts())
            counts.files.add(path)
            counts.added += added
            counts.deleted += deleted
            touched.add(module_of(path, depth))
    else:
        for delta in diff.deltas:
            path = _delta_path(delta)
            counts = modules.setdefault(module_of(path, depth), _ModuleCounts())
            counts.files.add(path)
            touched.add(module_of(path, depth))
    for module in touched:
        modules[module].commits += 1


def check_history(request: GitHistoryRequest, limits: ToolLimits) -> tuple[int, int]:
    """The window's days and the commits to return at most, or LimitExceeded."""
    days = within_ceiling(
        "since_days",
        request.since_days,
        default=limits.history_default_days,
        ceiling=limits.history_max_days,
    )
    limit = within_ceiling(
        "limit",
        request.limit,
        default=limits.history_default_limit,
        ceiling=limits.history_max_limit,
    )
    return days, limit


def check_churn(request: GitChurnRequest, limits: ToolLimits) -> tuple[int, int]:
    """The window's days and the modules to return at most, or LimitExceeded."""
    days = window_days(request.time_window)
    if days > limits.churn_max_window_days:
        raise LimitExceeded(
            f"time_window: {request.time_window} ({days} days) is above the ceiling of "
            f"{limits.churn_max_window_days} days",
            field="time_window",
            limit=limits.churn_max_window_days,
            value=days,
        )
    within_ceiling("depth", request.depth, default=1, ceiling=limits.churn_max_depth)
    top = within_ceiling(
        "limit",
        request.limit,
        default=limits.churn_default_modules,
        ceiling=limits.churn_max_modules,
    )
    return days, top


def module_of(path: str, depth: int) -> str:
    """The module of a file: its directory cut to `depth` segments (`.` at the top level)."""
    directories = path.split("/")[:-1]
    return "/".join(directories[:depth]) or ROOT_MODULE
