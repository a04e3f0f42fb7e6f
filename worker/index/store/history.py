"""A mirrored repository's history as tables: commits, their parents, messages and the files
each changed, with a term index over the messages.

The mirror writes it at each sync, diffing only the commits it has not recorded yet, into a
new generation directory it then names in `history/CURRENT` (atomically); workers map the
generation it names. Rows are the newest commits first (at most `max_commits`), so a
pinned commit's ancestry is found by walking the stored parents, never the object database.

Layout under the repository's index directory::

    history/CURRENT                    the name of the generation to read
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
MAX_MESSAGE_CHARS: Final = 4000
MAX_TOUCHES: Final = 100
"""A commit changing more files than this (a reformat, a vendored update) says nothing about
any one of them: its files are not recorded."""
TABLES: Final = ("commits", "parents", "touches", "paths", "terms", "postings")

I32 = npt.NDArray[np.int32]


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


def new_commits(repo: pygit2.Repository, known: set[bytes], limit: int) -> list[CommitRecord]:
    """The commits reachable from the branches and tags that are not `known`, children before
    parents (newest first among those unrelated), at most `limit`."""
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


def _tables(records: list[CommitRecord]) -> dict[str, pa.Table]:
    row_of = {record.oid: row for row, record in enumerate(records)}
    path_ids: dict[str, int] = {}
    parents: list[int] = []
    parent_start: list[int] = []
    touches: list[int] = []
    touch_start: list[int] = []
    lengths: list[int] = []
    postings: dict[str, list[tuple[int, int]]] = {}
    for row, record in enumerate(records):
        parent_start.append(len(parents))
        parents.extend(row_of.get(parent, -1) for parent in record.parents)
        touch_start.append(len(touches))
        touches.extend(path_ids.setdefault(path, len(path_ids)) for path in record.touched)
        counts = Counter(text_terms(record.message))
        lengths.append(sum(counts.values()))
        for term, count in counts.items():
            postings.setdefault(term, []).append((row, min(count, 32767)))
    parent_start.append(len(parents))
    touch_start.append(len(touches))
    terms = sorted(postings)
    starts: list[int] = []
    flat_rows: list[int] = []
    flat_tf: list[int] = []
    for term in terms:
        starts.append(len(flat_rows))
        for row, count in postings[term]:
            flat_rows.append(row)
            flat_tf.append(count)
    return {
        "commits": pa.table(
            {
                "oid": pa.array([r.oid for r in records], pa.binary(20)),
                "time": pa.array([r.time for r in records], pa.int64()),
                "message": pa.array([r.message for r in records], pa.string()),
                "length": pa.array(lengths, pa.int32()),
                "parent_start": pa.array(parent_start[:-1], pa.int32()),
                "parent_end": pa.array(parent_start[1:], pa.int32()),
                "touch_start": pa.array(touch_start[:-1], pa.int32()),
                "touch_end": pa.array(touch_start[1:], pa.int32()),
            }
        ),
        "parents": pa.table({"row": pa.array(parents, pa.int32())}),
        "touches": pa.table({"path": pa.array(touches, pa.int32())}),
        "paths": pa.table({"path": pa.array(list(path_ids), pa.string())}),
        "terms": pa.table(
            {
                "term": pa.array(terms, pa.string()),
                "start": pa.array(starts, pa.int64()),
                "count": pa.array([len(postings[t]) for t in terms], pa.int32()),
            }
        ),
        "postings": pa.table(
            {"commit": pa.array(flat_rows, pa.int32()), "tf": pa.array(flat_tf, pa.int16())}
        ),
    }


def _generation_name(records: Iterable[CommitRecord]) -> str:
    digest = hashlib.sha1(usedforsecurity=False)
    for record in records:
        digest.update(record.oid)
    return digest.hexdigest()[:16]


def current_generation(index_dir: Path) -> Path | None:
    """The history generation the mirror published last, if any."""
    pointer = index_dir / HISTORY_DIR / CURRENT
    try:
        name = pointer.read_text().strip()
    except OSError:
        return None
    found = index_dir / HISTORY_DIR / name
    return found if name and found.is_dir() else None


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
    (commits recorded in all, commits new this time)."""
    previous = current_generation(index_dir)
    old = read_records(previous) if previous is not None else []
    fresh = new_commits(repo, {record.oid for record in old}, max_commits)
    if not fresh and previous is not None:
        return len(old), 0
    # New commits are descendants of recorded ones or beside them, never their ancestors:
    # putting them first keeps every child before its parents.
    records = [*fresh, *old][:max_commits]
    name = _generation_name(records)
    history_dir = index_dir / HISTORY_DIR
    history_dir.mkdir(parents=True, exist_ok=True)
    final = history_dir / name
    if not final.exists():
        tmp = history_dir / f".tmp-{name}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for table_name, table in _tables(records).items():
            write_table(tmp / f"{table_name}.arrow", table)
        atomic_publish(tmp, final)
    atomic_write_bytes(history_dir / CURRENT, name.encode())
    for stale in history_dir.iterdir():
        if stale.is_dir() and stale.name != name:
            shutil.rmtree(stale, ignore_errors=True)
    return len(records), len(fresh)
