"""A mirrored repository's history as tables: commits, their parents, messages and the files
each changed, with a term index over the messages.

The mirror writes it at each sync, diffing only the commits it has not recorded yet, into a
new generation directory it then names in `history/CURRENT` (atomically); workers map the
generation it names. Rows are the newest commits first (at most `max_commits`), so a
pinned commit's ancestry is found by walking the stored parents, never the object database.

Layout under the repository's index directory::

    history/CURRENT                    the name of the generation to read (`v<format>-…`)
    history/<generation>/commits.arrow oid, time, message, parents and touches (row ranges)
    history/<generation>/parents.arrow parent rows (-1: not recorded)
    history/<generation>/touches.arrow path ids of changed files
    history/<generation>/paths.arrow   the changed paths, by id
    history/<generation>/terms.arrow   message terms (sorted), their postings ranges
    history/<generation>/postings.arrow commit rows and term counts
"""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pygit2

from worker.index.analysis.tokens import text_terms
from worker.index.store.segment import atomic_publish, column, read_table, write_table
from worker.repos.layout import atomic_write_bytes
from worker.repos.tree_paths import entry_name

HISTORY_DIR: Final = "history"
CURRENT: Final = "CURRENT"
HISTORY_FORMAT: Final = 1
"""The tables' layout; a generation names it (`v1-…`), and one of another is never read."""
MAX_MESSAGE_CHARS: Final = 4000
MAX_TOUCHES: Final = 100
"""A commit changing more files than this (a reformat, a vendored update) says nothing about
any one of them: its files are not recorded."""
TABLES: Final = ("commits", "parents", "touches", "paths", "terms", "postings")

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class CommitRecord:
    """One commit as the history keeps it."""

    oid: bytes
    time: int
    message: str
    parents: tuple[bytes, ...]
    touched: tuple[str, ...]


def _changed_paths(
    repo: pygit2.Repository,
    old: pygit2.Tree | None,
    new: pygit2.Tree | tuple[()],
    prefix: str,
    out: list[str],
) -> None:
    """The blob paths that differ between two trees (added, changed or removed), in tree order.

    Subtrees with the same id are skipped whole, which is what makes this cheaper than a diff.
    """
    before = {entry.raw_name: entry for entry in old} if old is not None else {}
    for entry in new:
        was = before.pop(entry.raw_name, None)
        if was is not None and was.id == entry.id:
            continue
        if entry.type_str == "tree":
            previous = repo[was.id] if was is not None and was.type_str == "tree" else None
            subtree = repo[entry.id]
            assert isinstance(subtree, pygit2.Tree)
            assert previous is None or isinstance(previous, pygit2.Tree)
            _changed_paths(repo, previous, subtree, f"{prefix}{entry_name(entry)}/", out)
        else:
            out.append(f"{prefix}{entry_name(entry)}")
        if len(out) > MAX_TOUCHES:
            return
    for was in before.values():
        if was.type_str == "tree":
            removed = repo[was.id]
            assert isinstance(removed, pygit2.Tree)
            _changed_paths(repo, removed, (), f"{prefix}{entry_name(was)}/", out)
        else:
            out.append(f"{prefix}{entry_name(was)}")


def _record(repo: pygit2.Repository, commit: pygit2.Commit) -> CommitRecord:
    touched: list[str] = []
    if len(commit.parent_ids) <= 1:
        parent = repo[commit.parent_ids[0]].peel(pygit2.Tree) if commit.parent_ids else None
        _changed_paths(repo, parent, commit.tree, "", touched)
    return CommitRecord(
        oid=commit.id.raw,
        time=int(commit.commit_time),
        message=commit.message[:MAX_MESSAGE_CHARS],
        parents=tuple(p.raw for p in commit.parent_ids),
        touched=tuple(touched) if len(touched) <= MAX_TOUCHES else (),
    )


def _tips(repo: pygit2.Repository) -> list[pygit2.Oid]:
    tips = set()
    for name in repo.references:
        if name.startswith(("refs/heads/", "refs/tags/")):
            try:
                tips.add(repo.references[name].peel(pygit2.Commit).id)
            except (pygit2.InvalidSpecError, ValueError, KeyError):
                continue
    return sorted(tips, key=lambda oid: oid.raw)


def new_commits(repo: pygit2.Repository, known: Iterable[bytes], limit: int) -> list[CommitRecord]:
    """The commits reachable from the branches and tags that are neither `known` nor their
    ancestors, children before parents (newest first among those unrelated), at most `limit`."""
    tips = _tips(repo)
    if not tips:
        return []
    walker = repo.walk(tips[0], pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME)
    for tip in tips[1:]:
        walker.push(tip)
    for oid in known:
        try:
            walker.hide(pygit2.Oid(raw=oid))
        except (KeyError, ValueError, pygit2.GitError):
            continue
    found: list[CommitRecord] = []
    for commit in walker:
        found.append(_record(repo, commit))
        if len(found) >= limit:
            break
    return found


@dataclass
class _Rows:
    """The rows of some commits, as `_tables` lays them out, row numbers and path ids given."""

    parents: list[int]
    parent_start: list[int]
    touches: list[int]
    touch_start: list[int]
    lengths: list[int]
    postings: dict[str, list[tuple[int, int]]]

    @classmethod
    def of(
        cls, records: list[CommitRecord], row_of: dict[bytes, int], path_ids: dict[str, int]
    ) -> _Rows:
        """Rows 0.. for `records`; a parent's row from `row_of` (-1: not recorded), a path's
        id from `path_ids` (new paths added to it)."""
        rows = cls([], [], [], [], [], {})
        for row, record in enumerate(records):
            rows.parent_start.append(len(rows.parents))
            rows.parents.extend(row_of.get(parent, -1) for parent in record.parents)
            rows.touch_start.append(len(rows.touches))
            rows.touches.extend(path_ids.setdefault(path, len(path_ids)) for path in record.touched)
            counts = Counter(text_terms(record.message))
            rows.lengths.append(sum(counts.values()))
            for term, count in counts.items():
                rows.postings.setdefault(term, []).append((row, min(count, 32767)))
        rows.parent_start.append(len(rows.parents))
        rows.touch_start.append(len(rows.touches))
        return rows


def _tables(records: list[CommitRecord]) -> dict[str, pa.Table]:
    """The tables of `records` (newest first), none recorded before."""
    path_ids: dict[str, int] = {}
    rows = _Rows.of(records, {r.oid: row for row, r in enumerate(records)}, path_ids)
    terms = sorted(rows.postings)
    counts = np.asarray([len(rows.postings[t]) for t in terms], dtype=np.int64)
    flat = [posting for term in terms for posting in rows.postings[term]]
    return {
        "commits": _commits_table(
            records, rows, np.asarray(rows.parent_start), np.asarray(rows.touch_start)
        ),
        "parents": pa.table({"row": pa.array(rows.parents, pa.int32())}),
        "touches": pa.table({"path": pa.array(rows.touches, pa.int32())}),
        "paths": pa.table({"path": pa.array(list(path_ids), pa.string())}),
        **_term_tables(
            pa.array(terms, pa.string()),
            counts,
            np.asarray([r for r, _ in flat], dtype=np.int32),
            np.asarray([tf for _, tf in flat], dtype=np.int16),
        ),
    }


def _commits_table(
    records: list[CommitRecord], rows: _Rows, parent_start: I64, touch_start: I64
) -> pa.Table:
    return pa.table(
        {
            "oid": pa.array([r.oid for r in records], pa.binary(20)),
            "time": pa.array([r.time for r in records], pa.int64()),
            "message": pa.array([r.message for r in records], pa.string()),
            "length": pa.array(rows.lengths, pa.int32()),
            "parent_start": pa.array(parent_start[:-1], pa.int32()),
            "parent_end": pa.array(parent_start[1:], pa.int32()),
            "touch_start": pa.array(touch_start[:-1], pa.int32()),
            "touch_end": pa.array(touch_start[1:], pa.int32()),
        }
    )


def _term_tables(
    terms: pa.Array, counts: I64, rows: npt.NDArray[np.int32], tf: npt.NDArray[np.int16]
) -> dict[str, pa.Table]:
    """The terms (sorted) with their postings ranges, and the postings, term by term."""
    starts = np.zeros(len(counts), dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    return {
        "terms": pa.table(
            {"term": terms, "start": pa.array(starts), "count": pa.array(counts, pa.int32())}
        ),
        "postings": pa.table({"commit": pa.array(rows), "tf": pa.array(tf)}),
    }


def _extended(
    fresh: list[CommitRecord], old: dict[str, pa.Table], max_commits: int
) -> dict[str, pa.Table]:
    """The tables of `fresh` (newest first) before the commits `old` recorded, at most
    `max_commits` rows: the recorded ones keep what was worked out for them (their messages
    are not analysed again), moved down past the new rows; the oldest past the cap go."""
    n_new = len(fresh)
    commits = old["commits"]
    keep = min(commits.num_rows, max_commits - n_new)
    kept = commits.slice(0, keep)
    row_of = {oid: n_new + row for row, oid in enumerate(kept.column("oid").to_pylist())}
    row_of.update((record.oid, row) for row, record in enumerate(fresh))
    path_ids = {path: i for i, path in enumerate(old["paths"].column("path").to_pylist())}
    rows = _Rows.of(fresh, row_of, path_ids)
    parent_end = int(column(kept, "parent_end")[-1]) if keep else 0
    touch_end = int(column(kept, "touch_end")[-1]) if keep else 0
    old_parents = column(old["parents"], "row")[:parent_end].astype(np.int64)
    # A kept commit's parent moves down with it; one past the cap is no longer recorded.
    kept_parents = np.where((old_parents >= 0) & (old_parents < keep), old_parents + n_new, -1)
    fresh_commits = _commits_table(
        fresh, rows, np.asarray(rows.parent_start), np.asarray(rows.touch_start)
    )
    moved_down = {
        name: pa.array((column(kept, name) + shift).astype(np.int32))
        for name, shift in (
            ("parent_start", len(rows.parents)),
            ("parent_end", len(rows.parents)),
            ("touch_start", len(rows.touches)),
            ("touch_end", len(rows.touches)),
        )
    }
    old_commits = pa.table(
        {
            name: moved_down.get(name, kept.column(name).combine_chunks())
            for name in fresh_commits.column_names
        }
    ).cast(fresh_commits.schema)
    table = pa.concat_tables([fresh_commits, old_commits]).combine_chunks()
    touches = np.concatenate([rows.touches, column(old["touches"], "path")[:touch_end]])
    # Only the paths a kept commit touched stay: those of commits past the cap go with them.
    used, touches = np.unique(touches.astype(np.int64), return_inverse=True)
    paths = pa.array(list(path_ids), pa.string()).take(pa.array(used))
    return {
        "commits": table,
        "parents": pa.table(
            {"row": pa.array(np.concatenate([rows.parents, kept_parents]).astype(np.int32))}
        ),
        "touches": pa.table({"path": pa.array(touches.astype(np.int32))}),
        "paths": pa.table({"path": paths}),
        **_merged_terms(rows.postings, old["terms"], old["postings"], n_new, keep),
    }


def _merged_terms(
    fresh: dict[str, list[tuple[int, int]]],
    terms: pa.Table,
    postings: pa.Table,
    n_new: int,
    keep: int,
) -> dict[str, pa.Table]:
    """The term tables of the new rows' postings (`fresh`) and the recorded ones, whose rows
    move down by `n_new`, the rows from `keep` on gone; a term left with none goes."""
    old_terms: list[str] = terms.column("term").to_pylist()
    every = sorted(set(old_terms).union(fresh))
    index = {term: i for i, term in enumerate(every)}
    old_term = np.repeat(
        np.asarray([index[t] for t in old_terms], dtype=np.int64),
        column(terms, "count").astype(np.int64),
    )
    old_row = column(postings, "commit").astype(np.int64)
    live = old_row < keep
    new_pairs = [(index[t], row, tf) for t, found in fresh.items() for row, tf in found]
    term = np.concatenate([[p[0] for p in new_pairs], old_term[live]]).astype(np.int64)
    row = np.concatenate([[p[1] for p in new_pairs], old_row[live] + n_new]).astype(np.int64)
    tf = np.concatenate([[p[2] for p in new_pairs], column(postings, "tf")[live]])
    order = np.argsort(term * (n_new + keep) + row, kind="stable")
    counts = np.bincount(term, minlength=len(every))
    used = counts > 0
    return _term_tables(
        pa.array(every, pa.string()).filter(pa.array(used)),
        counts[used],
        row[order].astype(np.int32),
        tf[order].astype(np.int16),
    )


def _recorded_tips(old: dict[str, pa.Table]) -> list[bytes]:
    """The recorded commits that are no recorded commit's parent: every recorded commit is
    one of them or their ancestor, so hiding them from a walk hides all that was recorded."""
    parents = column(old["parents"], "row")
    is_parent = np.zeros(old["commits"].num_rows, dtype=bool)
    is_parent[parents[parents >= 0]] = True
    oids: list[bytes] = old["commits"].column("oid").to_pylist()
    return [oids[row] for row in np.flatnonzero(~is_parent).tolist()]


def _generation_name(oids: pa.Array | pa.ChunkedArray) -> str:
    """A generation's name: a digest of its commits' ids, in row order."""
    digest = hashlib.sha1(usedforsecurity=False)
    for oid in oids.to_pylist():
        digest.update(oid)
    return f"v{HISTORY_FORMAT}-{digest.hexdigest()[:16]}"


def current_generation(index_dir: Path) -> Path | None:
    """The history generation the mirror published last, if any of this format (a mirror
    then records the history again, whole)."""
    pointer = index_dir / HISTORY_DIR / CURRENT
    try:
        name = pointer.read_text().strip()
    except OSError:
        return None
    found = index_dir / HISTORY_DIR / name
    ours = name.startswith(f"v{HISTORY_FORMAT}-")
    return found if ours and found.is_dir() else None


def read_records(generation: Path) -> list[CommitRecord]:
    """Every commit of a stored generation, newest first."""
    commits = read_table(generation / "commits.arrow")
    parents = column(read_table(generation / "parents.arrow"), "row")
    touches = column(read_table(generation / "touches.arrow"), "path")
    paths = read_table(generation / "paths.arrow").column("path").to_pylist()
    oids = commits.column("oid").to_pylist()
    records = []
    for oid, time, message, ps, pe, ts, te in zip(
        oids,
        commits.column("time").to_pylist(),
        commits.column("message").to_pylist(),
        commits.column("parent_start").to_pylist(),
        commits.column("parent_end").to_pylist(),
        commits.column("touch_start").to_pylist(),
        commits.column("touch_end").to_pylist(),
        strict=True,
    ):
        records.append(
            CommitRecord(
                oid=oid,
                time=time,
                message=message,
                parents=tuple(oids[p] for p in parents[ps:pe].tolist() if p >= 0),
                touched=tuple(paths[t] for t in touches[ts:te].tolist()),
            )
        )
    return records


def write_history(index_dir: Path, repo: pygit2.Repository, *, max_commits: int) -> tuple[int, int]:
    """Record the commits not yet recorded and publish a new generation if there are any;
    (commits recorded in all, commits new this time).

    Only the new commits are read from the repository and their messages analysed: the
    recorded ones come from the last generation's tables as they are.
    """
    previous = current_generation(index_dir)
    old = {name: read_table(previous / f"{name}.arrow") for name in TABLES} if previous else None
    known = _recorded_tips(old) if old is not None else []
    fresh = new_commits(repo, known, max_commits)
    if not fresh and old is not None:
        return old["commits"].num_rows, 0
    # New commits are descendants of recorded ones or beside them, never their ancestors:
    # putting them first keeps every child before its parents.
    tables = (
        _tables(fresh)
        if old is None or len(fresh) >= max_commits
        else _extended(fresh, old, max_commits)
    )
    name = _generation_name(tables["commits"].column("oid"))
    history_dir = index_dir / HISTORY_DIR
    history_dir.mkdir(parents=True, exist_ok=True)
    final = history_dir / name
    if not final.exists():
        tmp = history_dir / f".tmp-{name}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for table_name, table in tables.items():
            write_table(tmp / f"{table_name}.arrow", table)
        atomic_publish(tmp, final)
    atomic_write_bytes(history_dir / CURRENT, name.encode())
    for stale in history_dir.iterdir():
        if stale.is_dir() and stale.name != name:
            shutil.rmtree(stale, ignore_errors=True)
    return tables["commits"].num_rows, len(fresh)
