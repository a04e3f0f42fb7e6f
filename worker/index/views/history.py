"""What a pinned commit's history says about a query: the files changed by the past commits
whose messages match it.

Only the pinned commit's ancestry counts (a later commit may be the very fix), found by
walking the parents the mirror stored. Messages are scored with BM25; the best commits lend
their score to the files they changed, shared out so a commit changing many files lends
each of them less.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from worker.index.store.history import current_generation
from worker.index.store.segment import TermDictionary, column, read_table

MATCHED_COMMITS: Final = 50
"""How many of the best-matching past commits lend their files a score."""
K1: Final = 1.2
B: Final = 0.75

F64 = npt.NDArray[np.float64]


class RepoHistory:
    """One stored generation of a repository's history, mapped."""

    def __init__(self, generation: Path) -> None:
        self.generation = generation
        commits = read_table(generation / "commits.arrow")
        self.n_commits = commits.num_rows
        self._oid_row = {oid: row for row, oid in enumerate(commits.column("oid").to_pylist())}
        self._parent_start = column(commits, "parent_start")
        self._parent_end = column(commits, "parent_end")
        self._touch_start = column(commits, "touch_start")
        self._touch_end = column(commits, "touch_end")
        length = column(commits, "length").astype(np.float64)
        self._norm = 1 - B + B * length / max(float(length.mean()) if len(length) else 1.0, 1e-9)
        self._parents = column(read_table(generation / "parents.arrow"), "row")
        self._touches = column(read_table(generation / "touches.arrow"), "path")
        self._paths: list[str] = read_table(generation / "paths.arrow").column("path").to_pylist()
        self._terms = TermDictionary(read_table(generation / "terms.arrow"))
        postings = read_table(generation / "postings.arrow")
        self._post_commit = column(postings, "commit")
        self._post_tf = column(postings, "tf")
        self._ancestry: OrderedDict[bytes, npt.NDArray[np.bool_]] = OrderedDict()
        self._lock = threading.Lock()

    def ancestry(self, commit: str) -> npt.NDArray[np.bool_] | None:
        """Which recorded commits are `commit` or its ancestors; None if it is not recorded."""
        oid = bytes.fromhex(commit)
        with self._lock:
            found = self._ancestry.get(oid)
            if found is not None:
                self._ancestry.move_to_end(oid)
                return found
        start = self._oid_row.get(oid)
        if start is None:
            return None
        seen = np.zeros(self.n_commits, dtype=bool)
        seen[start] = True
        stack = [start]
        parent_start, parent_end, parents = (
            self._parent_start.tolist(),
            self._parent_end.tolist(),
            self._parents.tolist(),
        )
        while stack:
            row = stack.pop()
            for parent in parents[parent_start[row] : parent_end[row]]:
                if parent >= 0 and not seen[parent]:
                    seen[parent] = True
                    stack.append(parent)
        with self._lock:
            self._ancestry[oid] = seen
            while len(self._ancestry) > 8:
                self._ancestry.popitem(last=False)
        return seen

    def file_scores(self, commit: str, weights: Mapping[str, float]) -> dict[str, float]:
        """The files changed by the ancestry's commits best matching the query's terms, each
        with the score those commits lend it."""
        ancestors = self.ancestry(commit)
        if ancestors is None or not weights:
            return {}
        n_ancestors = int(ancestors.sum())
        score = np.zeros(self.n_commits, dtype=np.float64)
        for term, query_weight in weights.items():
            found = self._terms(term)
            if found is None:
                continue
            start, count = found
            rows = self._post_commit[start : start + count]
            keep = ancestors[rows]
            rows = rows[keep]
            if not len(rows):
                continue
            tf = self._post_tf[start : start + count][keep].astype(np.float64)
            idf = np.log1p((n_ancestors - len(rows) + 0.5) / (len(rows) + 0.5))
            score[rows] += query_weight * idf * tf * (K1 + 1) / (tf + K1 * self._norm[rows])
        matched = np.flatnonzero(score > 0)
        if not len(matched):
            return {}
        best = matched[np.lexsort((matched, -score[matched]))][:MATCHED_COMMITS]
        files: dict[str, float] = {}
        for row in best.tolist():
            touched = self._touches[self._touch_start[row] : self._touch_end[row]].tolist()
            if not touched:
                continue
            share = float(score[row]) / len(touched) ** 0.5
            for path_id in touched:
                path = self._paths[path_id]
                files[path] = files.get(path, 0.0) + share
        return files


class HistoryStore:
    """The mapped history of each repository, reopened when the mirror publishes a new one."""

    def __init__(self) -> None:
        self._open: dict[Path, RepoHistory] = {}
        self._lock = threading.Lock()

    def get(self, index_dir: Path) -> RepoHistory | None:
        """The current history of the repository whose index is at `index_dir`, if any."""
        generation = current_generation(index_dir)
        if generation is None:
            return None
        with self._lock:
            found = self._open.get(index_dir)
            if found is not None and found.generation == generation:
                return found
        try:
            history = RepoHistory(generation)
        except (OSError, KeyError, ValueError):
            return None  # replaced while being read: the next request maps the new one
        with self._lock:
            self._open[index_dir] = history
        return history
