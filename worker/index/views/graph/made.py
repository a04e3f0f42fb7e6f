"""What resolving made that other files read: import bindings and class bases, as rows.

A build leaves them for the next commit's (see `carried`) as columns grouped by file, so
that storing them, reading them back and renumbering them is array work, not an object
per file; a file's own become Python objects when a build puts them in place.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Generic, Self, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa

I64: TypeAlias = npt.NDArray[np.int64]
ClassKey = tuple[int, str]
"""A class: its file's node and its qualified name."""
BINDING: Final = 0
WILDCARD: Final = 1
NAMESPACE: Final = 2
"""What an import row is (`ImportRows.what`)."""
_Made = TypeVar("_Made")


@dataclass(frozen=True, slots=True)
class FileImports:
    """What a file's imports made (its first phase): bindings, wildcards, namespaces."""

    bindings: dict[str, int]
    wildcards: tuple[int, ...]
    namespaces: tuple[str, ...]


class _FileRows(ABC, Generic[_Made]):
    """Rows grouped by file node (ascending; each file's in the order made), as a table of
    the class's schema (its file column first); `nodes` names its column of nodes."""

    schema: ClassVar[pa.Schema]
    nodes: ClassVar[str]

    def __init__(self, table: pa.Table) -> None:
        self.table = table = table.cast(self.schema)
        self.file_column: I64 = table.column("file").to_numpy().astype(np.int64)
        """Each row's file."""
        self._spans: dict[int, range] | None = None
        self._lists: list[list[Any]] | None = None

    def __len__(self) -> int:
        return len(self.file_column)

    def files(self) -> list[int]:
        """The files with rows, ascending."""
        return list(self._spans_of_files())

    def _spans_of_files(self) -> dict[int, range]:
        if self._spans is None:
            file = self.file_column
            starts = np.flatnonzero(np.diff(file, prepend=-(1 << 40))).tolist()
            ends = [*starts[1:], len(file)][: len(starts)]
            self._spans = {
                f: range(lo, hi)
                for f, lo, hi in zip(file[starts].tolist(), starts, ends, strict=True)
            }
        return self._spans

    def _columns(self) -> list[list[Any]]:
        """The columns but the file, as lists (made once: a build reads many files')."""
        if self._lists is None:
            self._lists = [column.to_pylist() for column in self.table.columns[1:]]
        return self._lists

    def _rows(self, file: int) -> range:
        """The rows of a file (empty when it has none)."""
        return self._spans_of_files().get(file, range(0))

    @abstractmethod
    def get(self, file: int) -> _Made | None:
        """What a file made, if it made anything."""

    def by_file(self) -> dict[int, _Made]:
        """What each file made."""
        return {file: made for file in self.files() if (made := self.get(file)) is not None}

    def without(self, files: npt.NDArray[np.bool_]) -> Self:
        """The rows of the files not picked (`files`: per row, whether its file is)."""
        return type(self)(self.table.filter(pa.array(~files)))

    def renumbered(self, node_map: I64) -> Self:
        """The rows in another node numbering (see `carried`): rows of files gone are left
        out; a node gone is -1, and a negative node (the root, or none) stays."""
        file = node_map[self.file_column]
        node = self.table.column(self.nodes).to_numpy().astype(np.int64)
        moved = np.where(node >= 0, node_map[np.maximum(node, 0)], node)
        table = self.table.set_column(
            self.table.schema.get_field_index("file"), "file", pa.array(file, pa.int32())
        )
        table = table.set_column(
            table.schema.get_field_index(self.nodes), self.nodes, pa.array(moved, pa.int32())
        )
        return type(self)(_by_file(table.filter(pa.array(file >= 0))))

    @classmethod
    def concat(cls, parts: list[Self]) -> Self:
        """The rows of all the parts (of distinct files), grouped by file."""
        tables = [p.table for p in parts] or [cls.schema.empty_table()]
        return cls(_by_file(pa.concat_tables(tables)))


def _table(columns: list[list[Any]], schema: pa.Schema) -> pa.Table:
    """Columns (lists, in the schema's order) as a table of the schema."""
    return pa.Table.from_arrays(
        [pa.array(column, field.type) for column, field in zip(columns, schema, strict=True)],
        schema=schema,
    )


def _by_file(table: pa.Table) -> pa.Table:
    """Rows grouped by file (a stable sort: each file's stay in order)."""
    return table.take(pa.compute.sort_indices(table, [("file", "ascending")]))


class ImportRows(_FileRows[FileImports]):
    """Files' imports made: (file, what, name, node) rows; a binding names a node, a wildcard
    has a node and no name, a namespace a name and node -1."""

    schema = pa.schema(
        [("file", pa.int32()), ("what", pa.uint8()), ("name", pa.string()), ("node", pa.int32())]
    )
    nodes = "node"

    @staticmethod
    def of(made: dict[int, FileImports]) -> ImportRows:
        """The rows of what each file's imports made."""
        # Straight into columns: a tuple per row (and zip's iterator per tuple) would be
        # tens of thousands of containers for the collector to walk.
        files: list[int] = []
        what: list[int] = []
        names: list[str | None] = []
        nodes: list[int] = []
        for file in sorted(made):
            imports = made[file]
            bindings = imports.bindings
            wildcards = imports.wildcards
            namespaces = imports.namespaces
            files += [file] * (len(bindings) + len(wildcards) + len(namespaces))
            what += [BINDING] * len(bindings)
            what += [WILDCARD] * len(wildcards)
            what += [NAMESPACE] * len(namespaces)
            names += bindings
            names += [None] * len(wildcards)
            names += namespaces
            nodes += bindings.values()
            nodes += wildcards
            nodes += [-1] * len(namespaces)
        return ImportRows(_table([files, what, names, nodes], ImportRows.schema))

    def get(self, file: int) -> FileImports | None:
        """What a file's imports made, if they made anything."""
        rows = self._rows(file)
        if not rows:
            return None
        what, name, node = self._columns()
        bindings: dict[str, int] = {}
        wildcards: list[int] = []
        namespaces: list[str] = []
        for i in rows:
            kind, named = what[i], name[i]
            if kind == BINDING and named is not None:
                bindings[named] = node[i]
            elif kind == WILDCARD:
                wildcards.append(node[i])
            elif named is not None:
                namespaces.append(named)
        return FileImports(bindings, tuple(wildcards), tuple(namespaces))


class BaseRows(_FileRows[dict[ClassKey, tuple[int, ...]]]):
    """Classes' bases: (file, class, base) rows, each class's bases in the order written."""

    schema = pa.schema([("file", pa.int32()), ("class", pa.string()), ("base", pa.int32())])
    nodes = "base"

    @staticmethod
    def of(made: dict[int, dict[ClassKey, tuple[int, ...]]]) -> BaseRows:
        """The rows of each file's classes' bases."""
        files: list[int] = []
        classes: list[str] = []
        nodes: list[int] = []
        for file in sorted(made):
            for (_, name), bases in made[file].items():
                files += [file] * len(bases)
                classes += [name] * len(bases)
                nodes += bases
        return BaseRows(_table([files, classes, nodes], BaseRows.schema))

    def get(self, file: int) -> dict[ClassKey, tuple[int, ...]] | None:
        """The bases of a file's classes, if any has one."""
        rows = self._rows(file)
        if not rows:
            return None
        classes, bases = self._columns()
        found: dict[ClassKey, list[int]] = {}
        for i in rows:
            found.setdefault((file, classes[i]), []).append(bases[i])
        return {key: tuple(nodes) for key, nodes in found.items()}
