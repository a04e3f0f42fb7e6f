"""What resolving each file's references read: the record an incremental graph build needs.

Resolution runs in three phases (imports bind names, then bases are found, then calls), and
what a file's references mean in a phase depends on its own blob and on what it reads of the
rest of the commit: a name among another file's definitions, a name defined once in the
commit, which paths it has (an entry of a directory, a file by name, ...), another file's
import bindings, the bases of another file's classes. Each is recorded as narrowly as the
lookup asked, so that an edit makes stale only the lookups it can change. Another commit's
build resolves a file again from the first phase whose reads may have changed, and keeps
the rest (see `carried`).
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from worker.index.analysis.distinct import distinct


class Phase(enum.IntEnum):
    """The resolution phases, in the order they run."""

    IMPORTS = 1
    BASES = 2
    CALLS = 3


class ReadKind(enum.IntEnum):
    """What a read was of."""

    FILE = 0
    """A name among another file's definitions (its blob's entities): what looking it up
    there found, or that it found nothing; by the name's last part (`route` of
    `Flask.route`), as a class's members are looked up."""
    NAME = 1
    """Which definitions of a (qualified) name the commit has."""
    BINDINGS = 2
    """Another file's import bindings (what its first phase made)."""
    BASES = 3
    """The bases of another file's classes (what its second phase made)."""
    PATHS = 4
    """Which paths the commit has, as a key that any path the lookup may find shares (see
    `path_keys`)."""


def file_key(path: str) -> str:
    """The key of looking a file up by path: its base name (a lookup by suffix finds only
    files of that name)."""
    return "b:" + path.rpartition("/")[2]


def directory_key(path: str) -> str:
    """The key of looking a directory up by path (or by a suffix of it): its base name."""
    return "n:" + path.rpartition("/")[2]


def definitions_key(directory: str) -> str:
    """The key of reading the definitions of every file of a directory (a Go or Kotlin
    package) at once."""
    return "d:" + directory


def listing_key(directory: str) -> str:
    """The key of listing a directory's files and subdirectories ("" is the root)."""
    return "c:" + directory


def entry_key(directory: str, name: str) -> str:
    """The key of looking for one entry of a directory by name ("" is the root): a
    subdirectory `name`, or a file `name` with or without an extension (`name.py`)."""
    return f"e:{directory}/{name}"


def module_key(module: str) -> str:
    """The key of looking a Python module up by dotted name (`a.b.c`): its last part, the name
    of a file `c.py` or of a package `c/`."""
    return "m:" + module.rpartition(".")[2]


def path_keys(files: list[str], directories: list[str]) -> set[str]:
    """Every key whose lookups may find something else once these files and directories
    come or go."""
    keys: set[str] = set()
    for path in files:
        folder, _, name = path.rpartition("/")
        keys.update((file_key(path), listing_key(folder), entry_key(folder, name)))
        keys.add(entry_key(folder, name.rpartition(".")[0] or name))
        if name.endswith(".py"):
            stem = name.removesuffix(".py")
            keys.add(module_key(folder.rpartition("/")[2] if stem == "__init__" else stem))
    for path in directories:
        parent, _, name = path.rpartition("/")
        keys.update((directory_key(path), listing_key(parent), entry_key(parent, name)))
        keys.add(module_key(path.rpartition("/")[2]))
    return keys


Key = int
"""A read, compact: millions are made in a large tree, and ints are neither tracked by the
collector nor costly to hash. A file's state is `node * 4 + kind`; a name among a file's
definitions the same with the name's number (see `Reads.definition`) above `_NAME_SHIFT`; a
name across the commit (`=name`) and a path key, the negated number of that text.

Ints only, not the texts themselves: a set gives its strings in the order Python's hashing
of str decides, which differs from process to process, and the stored reads would too."""
NODE_KINDS: Final = 4
_NAME_SHIFT: Final = 34
"""Where a definition read's name number starts (a node takes the 32 bits above the kind)."""


class Reads:
    """The reads of each (file, phase) while resolving, and of remembered lookups."""

    def __init__(self) -> None:
        self.by_reader: dict[tuple[int, int], set[Key] | tuple[Key, ...]] = {}
        """The reads of each (file node, phase): a set while recorded into, a tuple after (the
        collector stops tracking a tuple of ints and strings; a build has one per file)."""
        self._at: tuple[int, int] | None = None
        self.current: set[Key] = set()
        """Where a read is recorded now (see `file`, `name`, `path`). A remembered lookup
        records into a set of its own, then adds it here (and replays it when reused)."""
        self.names: dict[str, int] = {}
        """The number of each name looked up among a file's definitions (from 1)."""
        self.texts: dict[str, int] = {}
        """The number of each name across the commit (`=name`) and path key read (from 1)."""

    def at(self, file: int, phase: Phase) -> None:
        """Record what follows as read by `file` in `phase`."""
        # Plain ints: the collector leaves a tuple of them untracked, not one with a member.
        key = (file, int(phase))
        if self._at != key:
            if self._at is not None:
                self.by_reader[self._at] = tuple(self.current)
            self._at = key
            self.current = self.by_reader[key] = set(self.by_reader.get(key, ()))

    def file(self, kind: int, node: int) -> None:
        """Record a read of a file's state: its bindings or its classes' bases.

        A file's reads of its own are kept here (a remembered lookup replays them into
        other files) and left out of `read_table`: a file's own state is resolved with it.
        """
        self.current.add(node * NODE_KINDS + kind)

    def definition(self, node: int, name: str) -> None:
        """Record a look for a name among a file's definitions (see `ReadKind.FILE`)."""
        number = self.names.get(name)
        if number is None:
            number = self.names[name] = len(self.names) + 1
        self.current.add((number << _NAME_SHIFT) | (node * NODE_KINDS))

    def name(self, qualified: str) -> None:
        """Record a look at the definitions of a (qualified) name across the commit."""
        self._text("=" + qualified)

    def path(self, key: str) -> None:
        """Record a lookup of the commit's paths, by its key (see `path_keys`)."""
        self._text(key)

    def _text(self, text: str) -> None:
        number = self.texts.get(text)
        if number is None:
            number = self.texts[text] = len(self.texts) + 1
        self.current.add(-number)


@dataclass(frozen=True, slots=True)
class ReadTable:
    """Reads as columns: who read (file node, phase), what kind, and of what."""

    reader: npt.NDArray[np.int32]
    phase: npt.NDArray[np.uint8]
    kind: npt.NDArray[np.uint8]
    node: npt.NDArray[np.int32]
    """The file read (-1 for a name)."""
    name: pa.Array
    """The name read (null for a file), dictionary-encoded: a commit's millions of reads
    read a few hundred thousand names, and a stored state keeps them so (see `encoded`)."""

    @staticmethod
    def empty() -> ReadTable:
        return ReadTable.of([], [], [], [], [])

    @staticmethod
    def of(
        reader: list[int],
        phase: list[int],
        kind: list[int],
        node: list[int],
        name: list[str | None],
    ) -> ReadTable:
        return ReadTable(
            reader=np.asarray(reader, dtype=np.int32),
            phase=np.asarray(phase, dtype=np.uint8),
            kind=np.asarray(kind, dtype=np.uint8),
            node=np.asarray(node, dtype=np.int32),
            name=pa.array(name, pa.string()).dictionary_encode(),
        )

    def __len__(self) -> int:
        return len(self.reader)

    def take(self, rows: npt.NDArray[np.int64]) -> ReadTable:
        """The rows picked."""
        return ReadTable(
            reader=self.reader[rows],
            phase=self.phase[rows],
            kind=self.kind[rows],
            node=self.node[rows],
            name=self.name.take(pa.array(rows, pa.int64())),
        )

    @staticmethod
    def concat(parts: list[ReadTable]) -> ReadTable:
        parts = [p for p in parts if len(p)] or [ReadTable.empty()]
        return ReadTable(
            reader=np.concatenate([p.reader for p in parts]),
            phase=np.concatenate([p.phase for p in parts]),
            kind=np.concatenate([p.kind for p in parts]),
            node=np.concatenate([p.node for p in parts]),
            name=_joined([encoded(p.name) for p in parts]),
        )


def _joined(parts: list[pa.DictionaryArray]) -> pa.DictionaryArray:
    """The dictionary arrays one after the other, over one dictionary: the first's, with the
    values only a later one holds after it.

    Each later dictionary is looked up in the one so far, its values hashed, not the one so
    far's: a carried build joins the few reads it made to the millions it keeps, and Arrow's
    concatenation would hash every name of those.
    """
    dictionary = parts[0].dictionary
    index_parts = [parts[0].indices.fill_null(0).to_numpy()]
    for part in parts[1:]:
        # Where each value so far is in this part's dictionary (null: not there).
        at = pc.index_in(dictionary, value_set=part.dictionary)
        found = at.is_valid().to_numpy(zero_copy_only=False)
        to_joined = np.full(len(part.dictionary), -1, dtype=np.int64)
        to_joined[at.fill_null(0).to_numpy()[found]] = np.flatnonzero(found)
        fresh = np.flatnonzero(to_joined < 0)
        to_joined[fresh] = len(dictionary) + np.arange(len(fresh))
        dictionary = pa.concat_arrays([dictionary, part.dictionary.take(pa.array(fresh))])
        to_joined = np.append(to_joined, 0)  # a null row's index (0) stays in bounds
        index_parts.append(to_joined[part.indices.fill_null(0).to_numpy()])
    valid = np.concatenate([p.indices.is_valid().to_numpy(zero_copy_only=False) for p in parts])
    return pa.DictionaryArray.from_arrays(
        pa.array(np.concatenate(index_parts).astype(np.int32), mask=~valid), dictionary
    )


def encoded(names: pa.Array) -> pa.DictionaryArray:
    """Names (strings) as a dictionary array (int32 indices, string values); names already
    so are returned as they are."""
    if pa.types.is_dictionary(names.type):
        if names.type.value_type == pa.string() and names.type.index_type == pa.int32():
            return names
        names = names.dictionary_decode()
    return names.cast(pa.string()).dictionary_encode()


def compacted(names: pa.DictionaryArray) -> pa.DictionaryArray:
    """The names without the dictionary's values no row reads: the rows a carried state
    keeps share its old dictionary, and what later commits add would pile up."""
    indices = names.indices.fill_null(0).to_numpy()
    valid = names.indices.is_valid().to_numpy(zero_copy_only=False)
    used = np.zeros(len(names.dictionary), dtype=bool)
    used[indices[valid]] = True
    if used.all():
        return names
    # One more place: a null row's index (0) stays in bounds of an empty dictionary.
    new_index = np.zeros(len(used) + 1, dtype=np.int32)
    new_index[: len(used)] = np.cumsum(used) - 1
    return pa.DictionaryArray.from_arrays(
        pa.array(new_index[indices], mask=~valid), names.dictionary.filter(pa.array(used))
    )


def read_table(reads: Reads) -> ReadTable:
    """The recorded reads as columns, without each file's reads of its own state."""
    groups = list(reads.by_reader.items())
    sizes = np.fromiter((len(keys) for _, keys in groups), dtype=np.int64, count=len(groups))
    reader = np.repeat(np.asarray([f for (f, _), _ in groups], dtype=np.int64), sizes)
    phase = np.repeat(np.asarray([p for (_, p), _ in groups], dtype=np.uint8), sizes)
    all_keys = np.fromiter(
        itertools.chain.from_iterable(k for _, k in groups), dtype=np.int64, count=int(sizes.sum())
    )
    of_file = all_keys >= 0  # else a text's negated number
    file_keys = all_keys[of_file]
    name_number = file_keys >> _NAME_SHIFT
    node, node_kind = np.divmod(file_keys & ((1 << _NAME_SHIFT) - 1), NODE_KINDS)
    file_reader = reader[of_file]
    own = node == file_reader
    is_text = ~of_file
    texts = pa.array(list(reads.texts), pa.string()).take(pa.array(-all_keys[is_text] - 1))
    is_name = pc.starts_with(texts, "=").to_numpy(zero_copy_only=False)
    names = pc.if_else(is_name, pc.utf8_slice_codeunits(texts, 1), texts)
    n_texts = len(texts)
    return ReadTable.concat(
        [
            ReadTable(
                reader=file_reader[~own].astype(np.int32),
                phase=phase[of_file][~own],
                kind=node_kind[~own].astype(np.uint8),
                node=node[~own].astype(np.int32),
                # A definition read's name, by its number (0: a read of a file's state).
                name=pa.DictionaryArray.from_arrays(
                    pa.array((name_number[~own] - 1).astype(np.int32), mask=name_number[~own] == 0),
                    pa.array(list(reads.names), pa.string()),
                ),
            ),
            ReadTable(
                reader=reader[is_text].astype(np.int32),
                phase=phase[is_text],
                kind=np.where(is_name, ReadKind.NAME, ReadKind.PATHS).astype(np.uint8),
                node=np.full(n_texts, -1, dtype=np.int32),
                name=names.dictionary_encode(),
            ),
        ]
    )


def keyed_reads(
    files: npt.NDArray[np.int64], keys: pa.Array, kind: ReadKind, phase: Phase
) -> ReadTable:
    """Reads of one kind made by vectorised resolution: each (file, key) once. `keys` may
    come dictionary-encoded already (by `dictionary_encode`: each value once)."""
    encoded = keys if pa.types.is_dictionary(keys.type) else keys.dictionary_encode()
    code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    n_codes = max(len(encoded.dictionary), 1)
    pairs = distinct(files * n_codes + code)
    return ReadTable(
        reader=(pairs // n_codes).astype(np.int32),
        phase=np.full(len(pairs), phase, dtype=np.uint8),
        kind=np.full(len(pairs), kind, dtype=np.uint8),
        node=np.full(len(pairs), -1, dtype=np.int32),
        name=pa.DictionaryArray.from_arrays(
            pa.array((pairs % n_codes).astype(np.int32)), encoded.dictionary.cast(pa.string())
        ),
    )
