"""The calls of a batch of blobs, found lexically: a name or chain before `(`, outside comments
and strings (see `call_kernels`), but for the words that are never calls; one per (entity,
callee), at its first line."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from worker.index.analysis.batch_text import BatchText
from worker.index.analysis.entities import BatchEntities, innermost
from worker.index.analysis.lexers import (
    BatchLexemes,
    Spans,
    c_lexemes,
    inside,
    moved_to_batch,
    python_lexemes,
)
from worker.index.analysis.more_calls import MORE_CALLS

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]


class Lexing(NamedTuple):
    """How C's lexer reads a language (see `lexers.c_lexemes`)."""

    directives: bool = True
    raw_strings: bool = False
    text_blocks: bool = False


_PLAIN: Final = Lexing()
_C_LEXING: Final = {
    "c": _PLAIN,
    "cpp": _PLAIN,
    "rust": _PLAIN,
    "java": Lexing(text_blocks=True),
    "go": Lexing(directives=False, raw_strings=True),
    "javascript": Lexing(directives=False),
    "typescript": Lexing(directives=False),
    "tsx": Lexing(directives=False),
    "php": _PLAIN,
    "csharp": _PLAIN,
    "kotlin": Lexing(directives=False, text_blocks=True),
}
"""The languages read with C's lexer and word lists, and how. Rust's `#[...]` attributes are
skipped as directives; Go's backticks are raw strings; Java's three quotes open a text
block, as they open a raw string in Kotlin; in JavaScript a `#` starts a private member's
name; PHP's `#` comments read as directives do, as do C#'s `#region` and `#if`."""
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


def _hashes(words: str) -> U64:
    from worker.index.analysis.call_kernels import name_hash

    return np.array(sorted(name_hash(w.encode()) for w in words.split()), dtype=np.uint64)


def batch_calls(
    text: BatchText,
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
        skip_starts, skip_ends = family_lexemes(text, family, at, reused, lexing)
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
    entity = innermost(entities, text, blob, row)
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
    text: BatchText, family: str, members: I64, skip_starts: I64, skip_ends: I64
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


def family_lexemes(
    text: BatchText,
    family: str,
    members: I64,
    lexed: BatchLexemes | None,
    lexing: Lexing = _PLAIN,
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
        own = BatchText(b"\n".join(datas), datas)
        ls, le = lexer(own.a, own.starts, own.ends)
        parts.append(moved_to_batch(rest, own.starts, text.starts, ls, le))
    if len(parts) == 1:
        return parts[0].starts, parts[0].ends
    starts = np.concatenate([p.starts for p in parts])
    order = np.argsort(starts, kind="stable")
    return starts[order], np.concatenate([p.ends for p in parts])[order]
