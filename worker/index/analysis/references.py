"""The entities of a batch of blobs and what each refers to: imports, calls, bases.

Entities are the definitions the parser found (`definitions`), contained in one another and
in their blob. References are written as the source writes them (`os.path.join`, `./util`,
`linux/slab.h`), except a call through a Go method's receiver, whose name is the method's
own choice: `c.Next` in `func (c *Context)` is stored as `this.Next`. Each is held by the
innermost entity whose lines hold it (-1: the file itself). Calls are found lexically,
outside comments and strings (see `call_kernels`), one per (entity, callee), at its first
line; imports by each language's statements (see `imports`); bases from the parse, and for
Python from the class header. Nothing is resolved here: the graph view resolves per commit,
and drops what it cannot resolve.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from worker.index.analysis.definitions import MAX_NESTING, Definitions
from worker.index.analysis.imports import c_includes, imports
from worker.index.analysis.lexers import (
    BatchLexemes,
    c_lexemes,
    inside,
    moved_to_batch,
    python_lexemes,
)
from worker.index.analysis.local_types import HEADER_TYPED, TYPED_GRAMMARS, declarations
from worker.index.analysis.more_calls import MORE_CALLS, WRITTEN_SUPER

I64 = npt.NDArray[np.int64]
Spans = tuple[I64, I64]
U64 = npt.NDArray[np.uint64]
U8 = npt.NDArray[np.uint8]


class Relation(IntEnum):
    """What a reference is: the codes a segment stores."""

    IMPORT = 0
    INVOKE = 1
    INHERIT = 2


RELATION_NAMES: Final = tuple(relation.name.lower() for relation in Relation)
"""The relations by code, as the graph names them (`import`, `invoke`, `inherit`)."""


class _Lexing(NamedTuple):
    """How C's lexer reads a language (see `lexers.c_lexemes`)."""

    directives: bool = True
    raw_strings: bool = False
    text_blocks: bool = False


_PLAIN: Final = _Lexing()
_C_LEXING: Final = {
    "c": _PLAIN,
    "cpp": _PLAIN,
    "rust": _PLAIN,
    "java": _Lexing(text_blocks=True),
    "go": _Lexing(directives=False, raw_strings=True),
    "javascript": _Lexing(directives=False),
    "typescript": _Lexing(directives=False),
    "tsx": _Lexing(directives=False),
    "php": _PLAIN,
    "csharp": _PLAIN,
    "kotlin": _Lexing(directives=False, text_blocks=True),
}
"""The languages read with C's lexer and word lists, and how. Rust's `#[...]` attributes are
skipped as directives; Go's backticks are raw strings; Java's three quotes open a text
block, as they open a raw string in Kotlin; in JavaScript a `#` starts a private member's
name; PHP's `#` comments read as directives do, as do C#'s `#region` and `#if`."""
_INCLUDING: Final = frozenset({"c", "cpp"})
"""The languages whose imports are `#include` directives (see `imports.c_includes`)."""
_PYTHON_LEXED: Final = ("python", "ruby")
"""The languages read with Python's lexer (`#` comments, quoted strings), each with its own
word lists."""
_NOT_CALLED: Final = {
    "python": (
        "if elif while for return not and or in is assert del except with yield lambda def "
        "class await from import global nonlocal async else try finally pass print exec "
        "raise match case"
    ),
    "ruby": "if elsif unless until while for return not and or in def class module yield "
    "super defined when case then do begin rescue ensure lambda proc raise else end self nil "
    "true false next break redo retry alias undef __method__",
    "c": (
        "if for while switch return sizeof typeof __typeof__ __typeof alignof _Alignof "
        "__alignof__ defined __attribute__ __attribute _Static_assert static_assert asm __asm__ "
        "__asm volatile __volatile__ catch function func fn do else case throw synchronized "
        "using decltype noexcept alignas __declspec operator template import match loop unsafe "
        "async await yield instanceof in of delete void with foreach defer select range struct "
        "isset empty unset list array declare "
        "union enum class interface extends implements this new"
    ),
}
"""Words that look like a call before `(` and are not one (`if (`, `sizeof (`)."""
_CALL_AFTER: Final = {
    "python": "return else not and or in is if elif while await yield assert raise del with from",
    "c": (
        "return else case do new throw await yield typeof delete void in of instanceof go "
        "defer sizeof co_await co_return co_yield default extends range move if while match "
        "echo print"
    ),
}
"""Words after which `name(` is still a call; after any other word it declares `name`."""
_DECLARED_AFTER: Final = {"ruby": "def"}
"""Languages where a call may follow any word (Ruby's `redirect to(path)`): the words after
which `name(` declares `name` instead."""
_PY_CLASS_HEAD: Final = re.compile(rb"[ \t]*class[ \t]+\w+[ \t]*\(")
_HEADER_BYTES: Final = 400
"""How far a definition's first lines are read for its parameters."""
_HEAD: Final = r"^(?P<head>[A-Za-z_$][\w$]*)(?:\.|::|->)(?P<rest>.+)"
"""A chain's first name and the rest after its separator."""


def _hashes(words: str) -> U64:
    from worker.index.analysis.call_kernels import name_hash

    return np.array(sorted(name_hash(w.encode()) for w in words.split()), dtype=np.uint64)


@dataclass(frozen=True, slots=True)
class BatchEntities:
    """A batch's entities, blob by blob in pre-order; rows 0-based and the blob's own."""

    blob: I64
    """The index of each one's blob in the batch."""
    parent: I64
    """The row (in this batch) of the entity each is nested in, -1 at the top of its blob."""
    start_row: I64
    end_row: I64
    name_row: I64
    """The row of each one's name (see `Definitions.name_row`)."""
    name: list[str]
    kind: list[str]


@dataclass(frozen=True, slots=True)
class BatchReferences:
    """A batch's references, by blob; `entity` is a row of the batch's entities or -1."""

    blob: I64
    entity: I64
    relation: npt.NDArray[np.uint8]
    target: pa.Array
    name: pa.Array
    alias: pa.Array
    row: I64


def batch_entities(found: Sequence[Definitions]) -> BatchEntities:
    """Every blob's definitions as one table (parents renumbered to batch rows)."""
    sizes = np.fromiter((len(d.symbol) for d in found), dtype=np.int64, count=len(found))
    firsts = np.zeros(len(found), dtype=np.int64)
    np.cumsum(sizes[:-1], out=firsts[1:])
    empty = np.zeros(0, np.int64)
    blob = np.repeat(np.arange(len(found), dtype=np.int64), sizes)
    parent = np.concatenate([empty] + [d.parent for d in found])
    parent = np.where(parent >= 0, parent + firsts[blob], -1)
    return BatchEntities(
        blob=blob,
        parent=parent,
        start_row=np.concatenate([empty] + [d.start_row for d in found]),
        end_row=np.concatenate([empty] + [d.end_row for d in found]),
        name_row=np.concatenate([empty] + [d.name_row for d in found]),
        name=[name for d in found for name in d.symbol],
        kind=[kind for d in found for kind in d.kind],
    )


class _Text:
    """The batch's blobs joined by b"\\n", with where each blob and each line starts."""

    def __init__(self, text: bytes, datas: Sequence[bytes], newlines: I64 | None = None) -> None:
        self.data = text
        self.a: U8 = np.frombuffer(text, dtype=np.uint8)
        sizes = np.fromiter(map(len, datas), dtype=np.int64, count=len(datas))
        self.starts = np.zeros(len(datas), dtype=np.int64)
        np.cumsum(sizes[:-1] + 1, out=self.starts[1:])
        self.ends = self.starts + sizes
        self.newlines = np.flatnonzero(self.a == 10) if newlines is None else newlines
        # The global row each blob's first row is.
        self.row0 = np.searchsorted(self.newlines, self.starts)

    def row_start(self, row: I64) -> I64:
        """Where each global row starts in the text."""
        starts = np.zeros(len(row), dtype=np.int64)
        inner = row > 0
        starts[inner] = self.newlines[row[inner] - 1] + 1
        return starts


def _innermost(entities: BatchEntities, text: _Text, blob: I64, row: I64) -> I64:
    """The entity (batch row) whose lines hold each (blob, blob row), innermost; else -1."""
    if not len(entities.blob) or not len(blob):
        return np.full(len(blob), -1, dtype=np.int64)
    key = text.row0[entities.blob] + entities.start_row
    site = text.row0[blob] + row
    # Pre-order within a blob: the last entity starting at or before the row, then up
    # through its parents to one that still holds the row.
    entity = np.searchsorted(key, site, side="right") - 1
    entity = np.where((entity >= 0) & (entities.blob[np.maximum(entity, 0)] == blob), entity, -1)
    for _ in range(MAX_NESTING + 1):
        safe = np.maximum(entity, 0)
        outside = (entity >= 0) & (entities.end_row[safe] < row)
        if not outside.any():
            break
        entity = np.where(outside, entities.parent[safe], entity)
    return entity


def _slices(a: U8, start: I64, end: I64) -> pa.Array:
    """The byte ranges of `a` as an Arrow string array, gathered without Python objects."""
    lengths = end - start
    offsets = np.zeros(len(start) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    index = np.repeat(start - offsets[:-1], lengths) + np.arange(offsets[-1], dtype=np.int64)
    data = a[index]
    binary = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(start), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    # Identifiers and `.`/`::`/`->`: ASCII, so valid UTF-8.
    return binary.cast(pa.large_string()).cast(pa.string())


def _calls(
    text: _Text,
    grammars: Sequence[str],
    entities: BatchEntities,
    lexed: Mapping[str, BatchLexemes],
    read: list[Spans],
) -> tuple[I64, I64, I64, I64, I64]:
    """(blob, entity, row, start, end) of each distinct call per (blob, entity, callee).

    The lexemes read on the way (comments, strings) are added to `read`.
    """
    from worker.index.analysis.call_kernels import call_sites

    parts: list[tuple[I64, I64, U64]] = []
    capacity = int(np.count_nonzero(text.a == 0x28))  # a call site per `(` at most
    # The outliners read Python, C and C++ with the plain lexers: their lexemes serve those.
    groups = [
        (family, [i for i, g in enumerate(grammars) if g == family], _PLAIN)
        for family in _PYTHON_LEXED
    ]
    groups += [
        ("c", [i for i, g in enumerate(grammars) if _C_LEXING.get(g) == lexing], lexing)
        for lexing in sorted(set(_C_LEXING.values()))
    ]
    for family, members, lexing in groups:
        if not members:
            continue
        at = np.asarray(members, dtype=np.int64)
        reused = lexed.get(family) if lexing == _PLAIN else None  # (none is Ruby's)
        skip_starts, skip_ends = _lexemes(text, family, at, reused, lexing)
        read.append((skip_starts, skip_ends))
        out_start = np.empty(capacity, np.int64)
        out_end = np.empty(capacity, np.int64)
        out_hash = np.empty(capacity, np.uint64)
        out_before = np.empty(capacity, np.uint64)
        n = call_sites(
            text.a,
            text.starts[at],
            text.ends[at],
            skip_starts.astype(np.int64),
            skip_ends.astype(np.int64),
            family == "c",
            out_start,
            out_end,
            out_hash,
            out_before,
        )
        before = out_before[:n]
        called = ~np.isin(out_hash[:n], _hashes(_NOT_CALLED[family]))
        if family in _DECLARED_AFTER:
            called &= ~np.isin(before, _hashes(_DECLARED_AFTER[family]))
        else:
            called &= (before == 0) | np.isin(before, _hashes(_CALL_AFTER[family]))
        start, end = out_start[:n][called], out_end[:n][called]
        parts.append((start, end, out_hash[:n][called]))
        if family in MORE_CALLS:
            parts.append(_more_calls(text, family, at, skip_starts, skip_ends))
    empty = np.zeros(0, np.int64)
    if not parts:
        return empty, empty, empty, empty, empty
    start = np.concatenate([p[0] for p in parts])
    end = np.concatenate([p[1] for p in parts])
    hashes = np.concatenate([p[2] for p in parts])
    order = np.argsort(start, kind="stable")
    start, end, hashes = start[order], end[order], hashes[order]
    blob = np.searchsorted(text.starts, start, side="right") - 1
    row = np.searchsorted(text.newlines, start) - text.row0[blob]
    entity = _innermost(entities, text, blob, row)
    # A definition's own name on its line (`def f(`, `func (r R) f(`, `@Test void f(`) is no
    # call.
    name_rows = entities.name_row if len(entities.blob) else np.full(1, -1, np.int64)
    own_line = np.flatnonzero((entity >= 0) & (name_rows[np.maximum(entity, 0)] == row))
    if len(own_line):
        data = text.data
        declared = [
            _names_itself(
                data[s:e].decode("ascii", "replace").replace("::", ".").replace("->", "."),
                entities.name[x],
            )
            for s, e, x in zip(
                start[own_line].tolist(),
                end[own_line].tolist(),
                entity[own_line].tolist(),
                strict=True,
            )
        ]
        keep = np.ones(len(start), dtype=bool)
        keep[own_line[np.asarray(declared, dtype=bool)]] = False
        start, end, hashes, blob, row, entity = (
            x[keep] for x in (start, end, hashes, blob, row, entity)
        )
    # The first call of each callee per (blob, entity): sorted by position, kept stable.
    order = np.lexsort((hashes, entity, blob))
    first = np.ones(len(order), dtype=bool)
    b, x, h = blob[order], entity[order], hashes[order]
    first[1:] = (b[1:] != b[:-1]) | (x[1:] != x[:-1]) | (h[1:] != h[:-1])
    chosen = np.sort(order[first])
    return blob[chosen], entity[chosen], row[chosen], start[chosen], end[chosen]


def _more_calls(
    text: _Text, family: str, members: I64, skip_starts: I64, skip_ends: I64
) -> tuple[I64, I64, U64]:
    """(start, end, hash) of the calls the family's own finder (`more_calls`) finds in the
    members, outside lexemes, but for the words that are never calls."""
    from worker.index.analysis.call_kernels import name_hash

    files = list(zip(text.starts[members].tolist(), text.ends[members].tolist(), strict=True))
    found = MORE_CALLS[family](text.data, files)
    start = np.asarray([f[0] for f in found], dtype=np.int64)
    hashes = np.asarray([name_hash(f[2]) for f in found], dtype=np.uint64)
    kept = ~inside(start, skip_starts, skip_ends) & ~np.isin(hashes, _hashes(_NOT_CALLED[family]))
    return start[kept], np.asarray([f[1] for f in found], dtype=np.int64)[kept], hashes[kept]


def _names_itself(written: str, qualified: str) -> bool:
    """Whether a chain (separators as `.`) on a definition's first line is its own name: its
    last part (a destructor's after the `~`: `~Shape()` writes `Shape(`), or the tail of its
    qualified name (`void Shape::area(`)."""
    whole = qualified.replace("::", ".")
    own = whole.rpartition(".")[2].removeprefix("~")
    return written in (own, whole) or whole.endswith("." + written)


def _python_bases(header: bytes) -> list[str]:
    """The bases in a class header from its `(`: positional arguments, subscripts dropped."""
    depth, part, parts = 0, bytearray(), []
    for byte in header:
        if byte in b"([{":
            depth += 1
            if depth == 1 and byte == 0x28:
                continue
        elif byte in b")]}":
            depth -= 1
            if depth == 0:
                parts.append(bytes(part))
                break
        elif byte == 0x2C and depth == 1:
            parts.append(bytes(part))
            part = bytearray()
            continue
        if depth >= 1:
            part.append(byte)
    bases = []
    for raw in parts:
        written = re.sub(rb"\[.*", b"", raw, flags=re.S).strip()
        if written and re.fullmatch(rb"[A-Za-z_][\w.]*", written):
            bases.append(written.decode())
    return bases


def _lexemes(
    text: _Text,
    family: str,
    members: I64,
    lexed: BatchLexemes | None,
    lexing: _Lexing,
) -> Spans:
    """The lexemes of the members (blobs read with the family's lexer, C's as `lexing` says)
    in the batch's text: those an outliner read already, and those of the rest, read now in
    a buffer of theirs.
    """
    lexer = (
        python_lexemes
        if family in _PYTHON_LEXED
        else functools.partial(
            c_lexemes,
            directives=lexing.directives,
            raw_strings=lexing.raw_strings,
            text_blocks=lexing.text_blocks,
        )
    )
    rest = members if lexed is None else members[~np.isin(members, lexed.blobs)]
    parts = [] if lexed is None else [lexed]
    if len(rest):
        datas = [
            text.data[s:e]
            for s, e in zip(text.starts[rest].tolist(), text.ends[rest].tolist(), strict=True)
        ]
        own = _Text(b"\n".join(datas), datas)
        ls, le = lexer(own.a, own.starts, own.ends)
        parts.append(moved_to_batch(rest, own.starts, text.starts, ls, le))
    if len(parts) == 1:
        return parts[0].starts, parts[0].ends
    starts = np.concatenate([p.starts for p in parts])
    order = np.argsort(starts, kind="stable")
    return starts[order], np.concatenate([p.ends for p in parts])[order]


def batch_references(
    text: bytes,
    datas: Sequence[bytes],
    grammars: Sequence[str | None],
    found: Sequence[Definitions],
    entities: BatchEntities,
    *,
    lexed: Mapping[str, BatchLexemes] | None = None,
    line_starts: I64 | None = None,
) -> BatchReferences:
    """The imports, calls and bases of a batch (`text`: its blobs joined by b"\\n").

    `lexed`: lexemes already read (see `chunking.ChunkBatch.lexemes`); the rest are read here.
    `line_starts`: where each line of `text` starts, when the caller found them already.
    """
    newlines = None if line_starts is None else line_starts[1:] - 1
    joined = _Text(text, datas, newlines)
    parsed = [g or "" for g in grammars]
    read: list[Spans] = []
    call_blob, call_entity, call_row, call_start, call_end = _calls(
        joined, parsed, entities, lexed or {}, read
    )
    firsts = np.zeros(len(found) + 1, dtype=np.int64)
    np.cumsum([len(d.symbol) for d in found], out=firsts[1:])
    declared = _imports_and_bases(
        joined, datas, parsed, found=found, entities=entities, firsts=firsts, lexed=lexed or {}
    )
    n_calls = len(call_blob)
    blob = np.concatenate([declared.blob, call_blob])
    order = np.argsort(blob, kind="stable")
    nulls = pa.nulls(n_calls, pa.string())
    called = _through_locals(
        _through_receivers(
            joined.a, found, firsts=firsts, entity=call_entity, start=call_start, end=call_end
        ),
        joined,
        datas,
        parsed,
        entities,
        blob=call_blob,
        entity=call_entity,
        start=call_start,
        lexemes=read,
    )
    return BatchReferences(
        blob=blob[order],
        entity=np.concatenate([declared.entity, call_entity])[order],
        relation=np.concatenate([declared.relation, np.full(n_calls, Relation.INVOKE, np.uint8)])[
            order
        ],
        target=pa.concat_arrays([declared.target, called]).take(pa.array(order)),
        name=pa.concat_arrays([declared.name, nulls]).take(pa.array(order)),
        alias=pa.concat_arrays([declared.alias, nulls]).take(pa.array(order)),
        row=np.concatenate([declared.row, call_row])[order],
    )


@dataclass(frozen=True, slots=True)
class _Declared:
    """A batch's bases and imports as columns; a blob's bases come before its imports."""

    blob: I64
    entity: I64
    relation: U8
    target: pa.Array
    name: pa.Array
    alias: pa.Array
    row: I64


def _imports_and_bases(
    joined: _Text,
    datas: Sequence[bytes],
    parsed: Sequence[str],
    *,
    found: Sequence[Definitions],
    entities: BatchEntities,
    firsts: I64,
    lexed: Mapping[str, BatchLexemes],
) -> _Declared:
    """The bases each blob's definitions name and the imports it makes, each import held by
    the innermost entity whose lines hold it."""
    blobs: list[int] = []
    entity_of: list[int] = []
    relation: list[int] = []
    targets: list[str] = []
    names: list[str | None] = []
    aliases: list[str | None] = []
    rows: list[int] = []
    for i, (data, grammar) in enumerate(zip(datas, parsed, strict=True)):
        if not grammar:
            continue
        definitions = found[i]
        first = int(firsts[i])
        bases: list[tuple[int, str]] = list(
            zip((definitions.base_of + first).tolist(), definitions.base, strict=True)
        )
        if grammar == "python":
            starts = joined.row_start(joined.row0[i] + definitions.start_row) - joined.starts[i]
            for d, (kind, at) in enumerate(zip(definitions.kind, starts.tolist(), strict=True)):
                if kind != "class_definition":
                    continue
                head = _PY_CLASS_HEAD.match(data, at)
                if head is not None:
                    header = data[head.end() - 1 :]
                    bases.extend((first + d, base) for base in _python_bases(header))
        for d, base in bases:
            blobs.append(i)
            entity_of.append(d)
            relation.append(Relation.INHERIT)
            targets.append(base)
            names.append(None)
            aliases.append(None)
            rows.append(int(entities.start_row[d]))
        if grammar in _INCLUDING:
            continue  # read for the whole batch below
        for imp in imports(data, grammar):
            blobs.append(i)
            entity_of.append(-1)
            relation.append(Relation.IMPORT)
            targets.append(imp.module)
            names.append(imp.name)
            aliases.append(imp.alias)
            rows.append(imp.row)
    include_blob, include_row, include_path = _includes(joined, parsed, lexed)
    n_includes = len(include_blob)
    blob_of = np.concatenate([np.asarray(blobs, dtype=np.int64), include_blob])
    row_of = np.concatenate([np.asarray(rows, dtype=np.int64), include_row])
    relations = np.concatenate(
        [np.asarray(relation, dtype=np.uint8), np.full(n_includes, Relation.IMPORT, np.uint8)]
    )
    entity_array = np.concatenate(
        [np.asarray(entity_of, dtype=np.int64), np.full(n_includes, -1, np.int64)]
    )
    imported = np.flatnonzero(relations == Relation.IMPORT)
    if len(imported):
        entity_array[imported] = _innermost(entities, joined, blob_of[imported], row_of[imported])
    include_nulls = pa.nulls(n_includes, pa.string())
    return _Declared(
        blob=blob_of,
        entity=entity_array,
        relation=relations,
        target=pa.concat_arrays(
            [pa.array(targets, pa.string()), pa.array(include_path, pa.string())]
        ),
        name=pa.concat_arrays([pa.array(names, pa.string()), include_nulls]),
        alias=pa.concat_arrays([pa.array(aliases, pa.string()), include_nulls]),
        row=row_of,
    )


def _includes(
    text: _Text, grammars: Sequence[str], lexed: Mapping[str, BatchLexemes]
) -> tuple[I64, I64, list[str]]:
    """(blob, row, path) of each include of the batch's C and C++ blobs, from the directives
    C's lexer found (those the outliner read, else read now)."""
    members = np.asarray([i for i, g in enumerate(grammars) if g in _INCLUDING], dtype=np.int64)
    if not len(members):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), []
    starts, ends = _lexemes(text, "c", members, lexed.get("c"), _PLAIN)
    directive = text.a[starts] == ord("#")
    at, paths = c_includes(text.data, (starts[directive], ends[directive]))
    blob = np.searchsorted(text.starts, at, side="right") - 1
    row = np.searchsorted(text.newlines, at) - text.row0[blob]
    return blob, row, paths


def _through_locals(
    targets: pa.Array,
    text: _Text,
    datas: Sequence[bytes],
    grammars: Sequence[str],
    entities: BatchEntities,
    *,
    blob: I64,
    entity: I64,
    start: I64,
    lexemes: Sequence[Spans],
) -> pa.Array:
    """The calls' targets, but a variable the entity declared of a class (before the call,
    not in a comment or string) written as its class: `w.render` as `Widget.render` (see
    `local_types`)."""
    found = [
        (i, declared)
        for i, grammar in enumerate(grammars)
        if grammar in TYPED_GRAMMARS
        for declared in declarations(
            datas[i], grammar, _headers(text, entities, i) if grammar in HEADER_TYPED else ()
        )
    ]
    if not found or not len(blob):
        return targets
    at_blob = np.asarray([i for i, _ in found], dtype=np.int64)
    at = text.starts[at_blob] + np.asarray([d.at for _, d in found], dtype=np.int64)
    in_code = np.ones(len(at), dtype=bool)
    for lexeme_starts, lexeme_ends in lexemes:  # each a family's blobs: sorted, disjoint
        in_code &= ~inside(at, lexeme_starts, lexeme_ends)
    kept = np.flatnonzero(in_code)
    found = [found[k] for k in kept.tolist()]
    at_blob, at = at_blob[kept], at[kept]
    at_row = np.searchsorted(text.newlines, at) - text.row0[at_blob]
    held = _innermost(entities, text, at_blob, at_row)
    # (blob, entity, variable) -> (where each declaration of it ends, its class)
    known: dict[tuple[int, int, str], list[tuple[int, str]]] = {}
    ends = (text.starts[at_blob] + np.asarray([d.end for _, d in found], dtype=np.int64)).tolist()
    for (i, declared), e, end in zip(found, held.tolist(), ends, strict=True):
        known.setdefault((i, e, declared.name), []).append((end, declared.cls))
    known_names = {name for _, _, name in known}
    # Only calls through a name declared somewhere in the batch are looked at one by one.
    chains = pc.extract_regex(targets, _HEAD)
    named = pc.and_(
        pc.is_valid(chains),
        pc.is_in(chains.field("head"), value_set=pa.array(sorted(known_names), pa.string())),
    )
    maybe = np.flatnonzero(named.fill_null(False).to_numpy(zero_copy_only=False))
    picked = chains.take(pa.array(maybe))
    changed: list[int] = []
    written: list[str] = []
    for k, head, rest in zip(
        maybe.tolist(),
        picked.field("head").to_pylist(),
        picked.field("rest").to_pylist(),
        strict=True,
    ):
        classes = known.get((int(blob[k]), int(entity[k]), head))
        before = [c for c in classes or () if c[0] <= start[k]]
        if before:
            changed.append(k)
            written.append(f"{max(before)[1]}.{rest}")
    if not changed:
        return targets
    mask = np.zeros(len(targets), dtype=bool)
    mask[changed] = True
    return pc.replace_with_mask(targets, pa.array(mask), pa.array(written, pa.string()))


def _headers(text: _Text, entities: BatchEntities, blob: int) -> list[tuple[int, int]]:
    """[start, end) in the blob of its definitions' first lines: from the line of each name
    to the `{` or `;` after it (a few lines at most), where parameters are declared."""
    mine = np.flatnonzero(entities.blob == blob)
    if not len(mine):
        return []
    base = int(text.starts[blob])
    data = text.data
    heads = (text.row_start(text.row0[blob] + entities.name_row[mine]) - base).tolist()
    spans = []
    for start in heads:
        window = data[base + start : base + start + _HEADER_BYTES]
        cut = [at for at in (window.find(b"{"), window.find(b";")) if at >= 0]
        spans.append((start, start + min(cut, default=len(window))))
    return spans


def _through_receivers(
    a: U8,
    found: Sequence[Definitions],
    *,
    firsts: I64,
    entity: I64,
    start: I64,
    end: I64,
) -> pa.Array:
    """The calls' targets as written, but `super.` for Python's `super().` and `this.` for a
    Go method's receiver's name."""
    targets = _slices(a, start, end)
    if pc.any(pc.starts_with(targets, "super")).as_py():
        targets = pc.replace_substring_regex(targets, WRITTEN_SUPER, "super.")
    names: dict[int, bytes] = {}
    for i, definitions in enumerate(found):
        first = int(firsts[i])
        for d, name in zip(
            definitions.receiver_of.tolist(), definitions.receiver_name, strict=True
        ):
            names[first + d] = name.encode() + b"."
    if not names:
        return targets
    through = np.zeros(len(targets), dtype=bool)
    written: list[str] = []
    held = np.flatnonzero(np.isin(entity, np.fromiter(names, dtype=np.int64, count=len(names))))
    for r in held.tolist():
        prefix, call = names[int(entity[r])], a[start[r] : end[r]].tobytes()
        if call.startswith(prefix):
            through[r] = True
            written.append("this." + call[len(prefix) :].decode())
    if not written:
        return targets
    return pc.replace_with_mask(targets, pa.array(through), pa.array(written, pa.string()))
