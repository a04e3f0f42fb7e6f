"""Which published commits of a repository's index stay on disk, and removing the rest.

Each sync that moves a head publishes a commit's view, and for a large repository most of
that is its entity graph (over a hundred megabytes for Linux); kept forever, they would
fill the disk one sync at a time. The mirror keeps the newest published commits and the
segments they use, and removes the rest.

Removing is safe for readers: a directory is first renamed out of sight, then deleted, so
a worker that mapped a removed file keeps reading it (the file is unlinked, never written
over), and one that looks a removed commit up finds it unpublished and builds it on demand,
as it does any pinned revision. Only the repository's writer prunes, holding its sync lock,
so no build is under way: a staged directory left behind is one a build never finished.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from worker.index.store.segment import set_aside

_MANIFEST: Final = "manifest.json"


@dataclass(frozen=True, slots=True)
class Pruned:
    """What pruning a repository's index removed."""

    commits: tuple[str, ...]
    """Published commits removed, oldest first."""
    segments: tuple[str, ...]
    """Segments no kept commit uses."""
    leftovers: int
    """Staged directories of builds that never finished."""
    bytes: int
    """Bytes the removed files held."""


def published_commits(index_dir: Path) -> list[str]:
    """The commits published in an index, newest first (by when their manifest was written)."""
    published: list[tuple[float, str]] = []
    commits_dir = index_dir / "commits"
    if not commits_dir.is_dir():
        return []
    for entry in os.scandir(commits_dir):
        if entry.name.startswith("."):
            continue
        try:
            published.append((os.stat(Path(entry.path) / _MANIFEST).st_mtime, entry.name))
        except FileNotFoundError:
            continue
    return [name for _, name in sorted(published, reverse=True)]


def prune_index(index_dir: Path, *, keep: int, also: Collection[str] = ()) -> Pruned:
    """Remove all but the newest `keep` published commits (and those named in `also`), the
    segments no kept commit uses, and the leftovers of unfinished builds.

    The caller is the repository's only writer and holds its sync lock. A kept commit
    whose manifest cannot be read keeps every segment: nothing it might use is removed.
    """
    if keep < 1:
        raise ValueError(f"keep must be at least 1, not {keep}")
    commits_dir, segments_dir = index_dir / "commits", index_dir / "segments"
    published = published_commits(index_dir)
    kept = set(published[:keep]) | (set(also) & set(published))
    gone = [c for c in reversed(published) if c not in kept]
    removed_bytes = 0
    leftovers = 0
    for directory in (commits_dir, segments_dir):
        for name in _staged(directory):
            removed_bytes += _remove(directory / name)
            leftovers += 1
    for commit in gone:
        removed_bytes += _remove(commits_dir / commit)
    used = _segments_used(commits_dir, kept)
    unused: list[str] = []
    if used is not None and segments_dir.is_dir():
        unused = sorted(
            e.name
            for e in os.scandir(segments_dir)
            if not e.name.startswith(".") and e.name not in used
        )
        for segment in unused:
            removed_bytes += _remove(segments_dir / segment)
    return Pruned(tuple(gone), tuple(unused), leftovers, removed_bytes)


def _staged(directory: Path) -> list[str]:
    """Hidden entries of a commits or segments directory: what a build staged and never
    renamed into place, or what a removal renamed aside and did not finish deleting."""
    if not directory.is_dir():
        return []
    return sorted(e.name for e in os.scandir(directory) if e.name.startswith("."))


def _segments_used(commits_dir: Path, commits: Collection[str]) -> set[str] | None:
    """The segments the manifests of `commits` list; None when one cannot be read."""
    used: set[str] = set()
    for commit in commits:
        try:
            manifest = json.loads((commits_dir / commit / _MANIFEST).read_text())
            used.update(str(s) for s in manifest["segments"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
    return used


def _remove(path: Path) -> int:
    """Rename `path` aside (out of readers' sight at once), then delete it; its bytes."""
    if not path.is_dir() or path.is_symlink():
        size = os.lstat(path).st_size
        path.unlink()
        return size
    size = sum(
        os.lstat(os.path.join(root, f)).st_size for root, _, files in os.walk(path) for f in files
    )
    if path.name.startswith("."):
        shutil.rmtree(path, ignore_errors=True)
        return size
    shutil.rmtree(set_aside(path), ignore_errors=True)
    return size
