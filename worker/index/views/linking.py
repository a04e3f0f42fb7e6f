"""Link what a query mentions to a commit's code: names to the chunks that define them, file
paths and dotted module names to the files they name.

Built once per commit index on first use from columns the index already has (each chunk's
symbol, the commit's paths); nothing is read from the repository.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from worker.index.store.segment import Segment

I64 = npt.NDArray[np.int64]
_EMPTY: I64 = np.zeros(0, dtype=np.int64)
_MODULE_SUFFIXES = (".py", "/__init__.py", ".pyx", ".pyi")


def _symbol_names(segment: Segment) -> dict[str, I64]:
    """A segment's chunks by the last part of their symbol, lowercased."""
    symbols = segment.tables.chunks.column("symbol")
    if symbols.null_count == len(symbols):
        return {}
    names: dict[str, list[int]] = defaultdict(list)
    for row, name in enumerate(pc.utf8_lower(symbols).to_pylist()):
        if name:
            names[name.rsplit(".", 1)[-1]].append(row)
    return {name: np.asarray(rows, dtype=np.int64) for name, rows in names.items()}


class CommitLinks:
    """Where one commit defines each name and which files its paths and modules are."""

    def __init__(
        self,
        segments: Sequence[Segment],
        chunk_offsets: I64,
        live: Sequence[npt.NDArray[np.bool_]],
        paths: pa.ChunkedArray,
    ) -> None:
        self._segments = segments
        self._chunk_offsets = chunk_offsets
        self._live = live
        self._names: list[dict[str, I64]] | None = None
        self._lock = threading.Lock()
        self._paths: list[str] = paths.to_pylist()
        by_name: dict[str, list[int]] = defaultdict(list)
        for row, path in enumerate(self._paths):
            by_name[path.rsplit("/", 1)[-1]].append(row)
        self._by_file_name = dict(by_name)
        self.rows = {path: row for row, path in enumerate(self._paths)}
        """Each path's row."""

    def _segment_names(self) -> list[dict[str, I64]]:
        with self._lock:
            if self._names is None:
                self._names = [_symbol_names(segment) for segment in self._segments]
            return self._names

    def defining_chunks(self, name: str) -> I64:
        """The live chunks (global ids) whose symbol's last part is `name`, any case."""
        wanted = name.lower()
        found = []
        for index, names in enumerate(self._segment_names()):
            rows = names.get(wanted)
            if rows is None:
                continue
            rows = rows[self._live[index][rows]]
            if len(rows):
                found.append(rows + self._chunk_offsets[index])
        return np.concatenate(found) if found else _EMPTY

    def file_rows(self, mention: str) -> list[int]:
        """The files a mentioned path names: those whose path ends with the most of its parts
        (a bare file name only when it is nearly unique)."""
        parts = [p for p in mention.strip().split("/") if p and p != "."]
        if not parts:
            return []
        candidates = self._by_file_name.get(parts[-1], [])
        if not candidates:
            return []
        best, best_rows = 0, []
        for row in candidates:
            theirs = self._paths[row].split("/")
            common = 0
            while (
                common < min(len(parts), len(theirs)) and parts[-1 - common] == theirs[-1 - common]
            ):
                common += 1
            if common > best:
                best, best_rows = common, [row]
            elif common == best:
                best_rows.append(row)
        if best == 1 and len(best_rows) > 2:
            return []
        return best_rows

    def module_rows(self, dotted: str) -> list[int]:
        """The file of the longest prefix of a dotted name that is a module of the commit."""
        parts = dotted.split(".")
        for end in range(len(parts), 1, -1):
            stem = "/".join(parts[:end])
            for suffix in _MODULE_SUFFIXES:
                row = self.rows.get(stem + suffix)
                if row is not None:
                    return [row]
        return []
