"""The churn report: hotspot modules, files and entities over each of `[docs] churn_windows`.

Windows end at the head's committer time, so the report depends on the head alone. Modules
are counted by `git.churn`'s own tally (commits and files; lines are left to `git.churn`,
which diffs every change); files and entities by one walk of the widest window (merges
skipped, the newest `[tools] churn_max_commits` kept). For the hottest files only, each
change's new-side lines are mapped to the definitions they touch in that version of the file.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Final

import pygit2

from worker.capabilities.history import (
    DAY,
    first_parent_diff,
    module_churn,
    walk_window,
    window_days,
)
from worker.docs.source import DocSource
from worker.docs.writing import Bounded, code, markdown_head
from worker.index.analysis.definitions import definitions
from worker.index.analysis.grammars import grammar_of
from worker.repos.excerpts import is_binary
from worker.repos.tree_paths import path_text

TOP: Final = 15
"""Rows per table."""
MODULE_DEPTH: Final = 2
CHANGES_PER_FILE: Final = 200
"""Versions of one hot file whose definitions are parsed, newest first."""
WALK_SECONDS: Final = 1800.0


@dataclass(frozen=True, slots=True)
class _Change:
    """One commit's change to one file: when, and its blob before (None: added) and after."""

    time: int
    old: str | None
    new: str


@dataclass(slots=True)
class _Walk:
    changes: dict[str, list[_Change]] = field(default_factory=lambda: defaultdict(list))
    examined: int = 0
    truncated: bool = False


def _walk(source: DocSource, since: int) -> _Walk:
    walk = _Walk()
    limit = source.config.tools.churn_max_commits
    deadline = time.monotonic() + WALK_SECONDS
    for commit in walk_window(source.repo, source.commit, since, deadline, "docs.churn"):
        if len(commit.parents) > 1:
            continue
        if walk.examined == limit:
            walk.truncated = True
            break
        walk.examined += 1
        # Deltas only: which lines changed is worked out for the hot files alone.
        for delta in first_parent_diff(commit).deltas:
            status = delta.status_char()
            if status == "D":
                continue
            old = str(delta.old_file.id) if status != "A" else None
            walk.changes[path_text(delta.new_file.raw_path)].append(
                _Change(commit.commit_time, old, str(delta.new_file.id))
            )
    return walk


def _rows_changed(source: DocSource, change: _Change) -> list[tuple[int, int]]:
    """The new-side rows (0-based, inclusive) a change touched: every row of an added file."""
    new = source.repo[change.new].peel(pygit2.Blob)
    if change.old is None:
        return [(0, max(new.data.count(b"\n"), 1) - 1)]
    old = source.repo[change.old].peel(pygit2.Blob)
    patch = pygit2.Patch.create_from(old, new, context_lines=0)
    rows = []
    for hunk in patch.hunks:
        first = max(hunk.new_start - 1, 0)
        rows.append((first, first + max(hunk.new_lines, 1) - 1))
    return rows


def _entities_touched(source: DocSource, path: str, changes: list[_Change]) -> list[set[str]]:
    """For each change, the qualified names of the definitions its lines touch (a container
    only where none of its nested definitions is touched)."""
    parsed: dict[str, list[tuple[int, int, str, int]]] = {}
    found: list[set[str]] = []
    for change in changes[:CHANGES_PER_FILE]:
        rows = parsed.get(change.new)
        if rows is None:
            rows = parsed[change.new] = _definitions(source, path, change.new)
        changed = _rows_changed(source, change) if rows else []
        hit = {
            index
            for index, (start, end, _, _) in enumerate(rows)
            for first, last in changed
            if start <= last and first <= end
        }
        containers = {rows[index][3] for index in hit}
        found.append({rows[index][2] for index in hit if index not in containers})
    return found


def _definitions(source: DocSource, path: str, blob: str) -> list[tuple[int, int, str, int]]:
    """(first row, last row, qualified name, parent index) of a version's definitions."""
    data = source.data(blob)
    if is_binary(data) or len(data) > source.config.server.max_blob_bytes:
        return []
    grammar = grammar_of(path, data)
    if grammar is None:
        return []
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return []  # the parser takes valid UTF-8 only
    found = definitions(data, grammar, None)
    return [
        (first, last, name, parent)
        for (first, last, name, _), parent in zip(found.rows(), found.parent.tolist(), strict=True)
    ]


def render_churn_report(source: DocSource) -> str:
    """The report as Markdown."""
    config = source.config
    windows = [(w, window_days(w)) for w in config.docs.churn_windows]
    end = source.commit_time
    widest = max(days for _, days in windows)
    walk = _walk(source, end - widest * DAY)
    out = Bounded(config.docs.max_document_chars)
    out.must(
        *markdown_head(
            source,
            "Churn report",
            "Where the code changed most, over windows ending at the head's committer time "
            f"({source.generated_at:%Y-%m-%d}); merges are not counted.",
        )
    )
    if walk.truncated:
        out.must(
            f"_The widest window holds more than {config.tools.churn_max_commits} commits: "
            "files and entities are counted over the newest ones only._",
            "",
        )
    for label, days in windows:
        since = end - days * DAY
        tally = module_churn(
            source.repo,
            source.commit,
            days=days,
            depth=MODULE_DEPTH,
            lines=False,
            max_commits=config.tools.churn_max_commits,
            deadline=time.monotonic() + WALK_SECONDS,
            stage="docs.churn",
        )
        start = dt.datetime.fromtimestamp(since, dt.UTC)
        out.must(
            f"## {label}: {start:%Y-%m-%d} to {source.generated_at:%Y-%m-%d}",
            "",
            f"{tally.examined} commits{' (the newest only)' if tally.truncated else ''}, "
            f"{len(tally.modules)} modules touched.",
            "",
        )
        if not tally.examined:
            continue
        out.must("### Hotspot modules", "", "| module | commits | files changed |")
        out.must("|---|---:|---:|")
        for module in tally.modules[:TOP]:
            out.add(f"| {code(module.path)} | {module.commit_count} | {module.files_changed} |")
        files = Counter(
            {
                path: sum(1 for c in changes if c.time >= since)
                for path, changes in walk.changes.items()
            }
        )
        ranked_files = sorted(files.items(), key=lambda kv: (-kv[1], kv[0]))
        hot = [(path, n) for path, n in ranked_files if n][: config.docs.churn_hot_files]
        out.must("", "### Hotspot files", "", "| file | commits |", "|---|---:|")
        for path, count in hot[:TOP]:
            out.add(f"| {code(path)} | {count} |")
        entities: Counter[tuple[str, str]] = Counter()
        for path, _ in hot:
            recent = [c for c in walk.changes[path] if c.time >= since]
            for touched in _entities_touched(source, path, recent):
                for name in touched:
                    entities[(path, name)] += 1
        out.must(
            "",
            "### Hotspot entities",
            "",
            f"Definitions in the {len(hot)} hot files, by the commits that changed their lines.",
            "",
            "| entity | file | commits |",
            "|---|---|---:|",
        )
        by_count = sorted(entities.items(), key=lambda kv: (-kv[1], kv[0]))
        for (path, name), count in by_count[:TOP]:
            out.add(f"| {code(name)} | {code(path)} | {count} |")
        out.must("")
    return out.text("rows")
