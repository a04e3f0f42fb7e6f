"""What each entity of a batch of blobs refers to: imports, calls, bases.

References are written as the source writes them (`os.path.join`, `./util`, `linux/slab.h`),
except a call through a Go method's receiver, whose name is the method's own choice: `c.Next`
in `func (c *Context)` is stored as `this.Next`. Each is held by the innermost entity whose
lines hold it (-1: the file itself; see `entities`). Calls are found lexically (see `calls`);
imports by each language's statements (see `imports`); bases from the parse, and for Python
from the class header. Nothing is resolved here: the graph view resolves per commit, and
drops what it cannot resolve.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from worker.index.analysis.batch_text import BatchText
from worker.index.analysis.calls import batch_calls, family_lexemes
from worker.index.analysis.definitions import Definitions
from worker.index.analysis.entities import BatchEntities, innermost
from worker.index.analysis.imports import c_includes, imports
from worker.index.analysis.lexers import BatchLexemes, Spans, inside
from worker.index.analysis.local_types import HEADER_TYPED, TYPED_GRAMMARS, declarations
from worker.index.analysis.more_calls import WRITTEN_SUPER

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]


class Relation(IntEnum):
    """What a reference is: the codes a segment stores."""

    IMPORT = 0
    INVOKE = 1
    INHERIT = 2


RELATION_NAMES: Final = tuple(relation.name.lower() for relation in Relation)
"""The relations by code, as the graph names them (`import`, `invoke`, `inherit`)."""


_INCLUDING: Final = frozenset({"c", "cpp"})
"""The languages whose imports are `#include` directives (see `imports.c_includes`)."""
_PY_CLASS_HEAD: Final = re.compile(rb"[ \t]*class[ \t]+\w+[ \t]*\(")
_HEADER_BYTES: Final = 400
"""How far a definition's first lines are read for its parameters."""
_HEAD: Final = r"^(?P<head>[A-Za-z_$][\w$]*)(?:\.|::|->)(?P<rest>.+)"
"""A chain's first name and the rest after its separator."""


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
    joined = BatchText(text, datas, newlines)
    parsed = [g or "" for g in grammars]
    read: list[Spans] = []
    call_blob, call_entity, call_row, call_start, call_end = batch_calls(
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
    joined: BatchText,
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
        entity_array[imported] = innermost(entities, joined, blob_of[imported], row_of[imported])
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
    text: BatchText, grammars: Sequence[str], lexed: Mapping[str, BatchLexemes]
) -> tuple[I64, I64, list[str]]:
    """(blob, row, path) of each include of the batch's C and C++ blobs, from the directives
    C's lexer found (those the outliner read, else read now)."""
    members = np.asarray([i for i, g in enumerate(grammars) if g in _INCLUDING], dtype=np.int64)
    if not len(members):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), []
    starts, ends = family_lexemes(text, "c", members, lexed.get("c"))
    directive = text.a[starts] == ord("#")
    at, paths = c_includes(text.data, (starts[directive], ends[directive]))
    blob = np.searchsorted(text.starts, at, side="right") - 1
    row = np.searchsorted(text.newlines, at) - text.row0[blob]
    return blob, row, paths


def _through_locals(
    targets: pa.Array,
    text: BatchText,
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
    held = innermost(entities, text, at_blob, at_row)
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


def _headers(text: BatchText, entities: BatchEntities, blob: int) -> list[tuple[int, int]]:
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
