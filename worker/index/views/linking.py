"""Link the paths and dotted module names a query mentions, and the modules a file imports,
to the files of a commit.

Built once per commit index on first use from its path column; nothing is read from the
repository.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import numpy.typing as npt
import pyarrow as pa

I64 = npt.NDArray[np.int64]
_MAX_REMEMBERED_IMPORTS = 1 << 16
_MODULE_SUFFIXES = (".py", "/__init__.py", ".pyx", ".pyi")


class CommitLinks:
    """Which files of one commit the paths and modules a query names are."""

    def __init__(self, paths: pa.ChunkedArray) -> None:
        self._paths: list[str] = paths.to_pylist()
        by_name: dict[str, list[int]] = defaultdict(list)
        packages: dict[str, list[int]] = defaultdict(list)
        for row, path in enumerate(self._paths):
            parts = path.rsplit("/", 2)
            by_name[parts[-1]].append(row)
            if parts[-1] == "__init__.py" and len(parts) > 1:
                packages[parts[-2]].append(row)
        self._by_file_name = dict(by_name)
        self._packages = dict(packages)
        """Each package directory's name with the rows of its `__init__.py` files."""
        self.rows = {path: row for row, path in enumerate(self._paths)}
        """Each path's row."""
        self._imports: dict[tuple[str, str, str | None], list[int]] = {}
        """Resolved imports by (importer's directory for a relative one, module, name)."""

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

    def import_rows(self, importer: str, module: str, name: str | None) -> list[int]:
        """The files a Python import in `importer` reads: the module, or the submodule it
        imports by name (`from pkg import mod`). Absolute modules match the end of a path, so
        a `src/` layout resolves; an ambiguous match resolves to nothing. Remembered: the
        best files of one query after another import much the same."""
        key = (importer.rsplit("/", 1)[0] if module.startswith(".") else "", module, name)
        found = self._imports.get(key)
        if found is None:
            if len(self._imports) >= _MAX_REMEMBERED_IMPORTS:
                self._imports.clear()
            found = self._imports[key] = self._resolve_import(importer, module, name)
        return found

    def _resolve_import(self, importer: str, module: str, name: str | None) -> list[int]:
        """`import_rows`, not remembered."""
        dots = len(module) - len(module.lstrip("."))
        parts = [p for p in module[dots:].split(".") if p]
        # `from . import x` in pkg/a.py reads pkg/x.py; each further dot climbs a directory.
        stem = "/".join(importer.split("/")[:-dots] + parts) if dots else "/".join(parts)
        if not stem:
            return []
        candidates = [f"{stem}/{name}.py", f"{stem}/{name}/__init__.py"] if name else []
        for candidate in [*candidates, f"{stem}.py", f"{stem}/__init__.py"]:
            rows = self._ending_with(candidate, anchored=bool(dots))
            if rows:
                return rows
        return []

    def _ending_with(self, path: str, *, anchored: bool) -> list[int]:
        """The one file at `path` (anchored) or whose path ends with it (none if several)."""
        if anchored:
            row = self.rows.get(path)
            return [] if row is None else [row]
        parts = path.rsplit("/", 2)
        if parts[-1] == "__init__.py" and len(parts) > 1:
            candidates = self._packages.get(parts[-2], [])
        else:
            candidates = self._by_file_name.get(parts[-1], [])
        rows = [
            row
            for row in candidates
            if self._paths[row] == path or self._paths[row].endswith("/" + path)
        ]
        return rows if len(rows) == 1 else []
