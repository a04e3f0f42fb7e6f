"""Link the paths and dotted module names a query mentions to the files of a commit.

Built once per commit index on first use from its path column; nothing is read from the
repository.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import numpy.typing as npt
import pyarrow as pa

I64 = npt.NDArray[np.int64]
_MODULE_SUFFIXES = (".py", "/__init__.py", ".pyx", ".pyi")


class CommitLinks:
    """Which files of one commit the paths and modules a query names are."""

    def __init__(self, paths: pa.ChunkedArray) -> None:
        self._paths: list[str] = paths.to_pylist()
        by_name: dict[str, list[int]] = defaultdict(list)
        for row, path in enumerate(self._paths):
            by_name[path.rsplit("/", 1)[-1]].append(row)
        self._by_file_name = dict(by_name)
        self.rows = {path: row for row, path in enumerate(self._paths)}
        """Each path's row."""

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
