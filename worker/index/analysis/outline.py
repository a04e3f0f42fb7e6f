"""The outline of a source file: only the text a parser needs to find its definitions.

Parsing is the costliest step of indexing, and most of a file is function bodies, comments,
field lists and declarations that hold no definition this index records. The outline drops
what cannot change the definitions found: in C and C++ the interior of function bodies,
initialisers and enums, comments, directives other than function-like macros (whose heads
stay), declarations without braces or with an initialiser's only; in Python function bodies
but for their last line, simple statements that do not end a block, comments that cannot end
one, the inside of parentheses, braces and triple-quoted strings. Each dropped run becomes
one separator (b"\\n" if it spanned lines, else b" "), and a row map takes every outline row
back to its row in the file, so a node's span maps to exact file lines.

The parser still finds every definition and its span; the outline only decides what it
need not read. A file the scan cannot follow (unbalanced braces or brackets, tabs in Python
indentation) gets no outline and is parsed whole. Files are outlined in batches: C and C++
here, by one compiled pass over each file; Python in `python_outline`, by numpy passes over
the whole batch (one pass over many files costs what a pass over one costs in call overhead).

Hand-written (with `lexers`) beside tree-sitter parsing whole files, and kept because whole
builds are 1.7x (Django) and 2.2x (Linux) faster with it: `python -m bench.hand_written`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

import numpy as np
import numpy.typing as npt

from worker.index.analysis.lexers import c_lexemes, directives_reading

U8: TypeAlias = npt.NDArray[np.uint8]
I64: TypeAlias = npt.NDArray[np.int64]
Mask: TypeAlias = npt.NDArray[np.bool_]
Spans = tuple[I64, I64]

# Unrolled loops and no capture groups: several times faster in `re` than the plain forms.
_C_MACRO_HEAD: Final = re.compile(rb"#[ \t]*define[ \t]+\w+\([^)\n\\]*(?:\\.[^)\n\\]*)*\)", re.S)


def byte_table(chars: bytes) -> Mask:
    """Whether each byte value is one of `chars`."""
    table = np.zeros(256, dtype=bool)
    table[list(chars)] = True
    return table


_HASH, _OPEN_PAREN = 35, 40
_MACRO_FILLER: Final = byte_table(b" \t\r\n\\")
_WORD: Final = byte_table(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
"""The bytes of a name (`\\w` of `_C_MACRO_HEAD`)."""


@dataclass(frozen=True, slots=True)
class Outline:
    """The text to parse and, for each of its rows, the file row it comes from."""

    text: bytes
    rows: I64


@dataclass(frozen=True, slots=True)
class Outlined:
    """The outlines of a batch of files, and the lexemes read to make them.

    The lexemes (comments, strings, directives) are [start, end) in the files joined by
    b"\\n", in order: what else reads the files' code (their calls) skips the same spans.
    """

    outlines: list[Outline | None]
    lexeme_starts: I64
    lexeme_ends: I64


def joined(files: Sequence[bytes]) -> tuple[bytes, I64, I64]:
    """The files joined by b"\\n", and where each starts and ends in the join."""
    sizes = np.fromiter(map(len, files), dtype=np.int64, count=len(files))
    starts = np.zeros(len(files), dtype=np.int64)
    np.cumsum(sizes[:-1] + 1, out=starts[1:])
    return b"\n".join(files), starts, starts + sizes


def c_outlines(files: Sequence[bytes]) -> Outlined:
    """The outlines of C or C++ files (None for a file whose braces do not balance).

    Found in one compiled pass per file (`outline_kernels.c_outlined`): its braces paired,
    the bodies, initialisers and enumerator lists they open, the parameters of those
    functions and the statements that declare nothing (no brace, or an initialiser's
    only), each a span that goes, beside the comments and directives. Function-like macros
    keep their head, the first byte of their body and the backslash-newline of every
    continued line: `#define F(a) d \\ \\` parses as the same definition on the same rows.
    """
    from worker.index.analysis.outline_kernels import c_outlined

    data, starts, ends = joined(files)
    a = np.frombuffer(data, dtype=np.uint8)
    ls, le = c_lexemes(a, starts, ends)
    first = a[ls]
    is_string = (first == 34) | (first == 39)
    hs = _function_like(a, ls[first == _HASH], le[first == _HASH])
    hs, he = _matches_at(data, _C_MACRO_HEAD, hs, ends[np.searchsorted(starts, hs, "right") - 1])
    me = le[_in_sorted(ls, hs)]
    body = first_not_in(a, he, me, _MACRO_FILLER)
    text, text_at, rows, rows_at, ok = c_outlined(
        a,
        starts,
        ends,
        (ls, le, is_string),
        (hs, he, body, me),
    )
    return Outlined(split_outlines(text.tobytes(), text_at, rows, rows_at, ok), ls, le)


def _matches_at(data: bytes, pattern: re.Pattern[bytes], at: I64, ends: I64) -> Spans:
    """[start, end) of the match of `pattern` at each position where it matches before the
    position's `ends`."""
    match = pattern.match
    spans = np.fromiter(
        (
            x
            for start, end in zip(at.tolist(), ends.tolist(), strict=True)
            if (found := match(data, start, end)) is not None
            for x in found.span()
        ),
        dtype=np.int64,
    ).reshape(-1, 2)
    return spans[:, 0].copy(), spans[:, 1].copy()


def split_outlines(
    raw: bytes, text_at: I64, rows: I64, rows_at: I64, ok: Mask
) -> list[Outline | None]:
    """Each file's outline from the outlines joined, where each starts and where its rows start
    (None where `ok` says there is none)."""
    starts, rows_starts = text_at.tolist(), rows_at.tolist()
    return [
        Outline(raw[starts[i] : starts[i + 1]], rows[rows_starts[i] : rows_starts[i + 1]])
        if good
        else None
        for i, good in enumerate(ok.tolist())
    ]


def first_not_in(a: U8, starts: I64, ends: I64, skip: Mask) -> I64:
    """For each [start, end), the position of its first byte `skip` does not select (or end)."""
    from worker.index.analysis.line_kernels import first_not_in as compiled_first_not_in

    found: I64 = compiled_first_not_in(
        a, np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64), skip
    )
    return found


def _function_like(a: U8, starts: I64, ends: I64) -> I64:
    """The starts of the directives ([start, end)) that may be function-like macros:
    `#define`, a name, then `(`. `_C_MACRO_HEAD` reads the rest: a regular expression
    tried on every directive costs more than these arrays, which leave it few."""
    defines, name = directives_reading(a, starts, ends, b"define")
    starts, ends = starts[defines], ends[defines]
    after = first_not_in(a, name, ends, _WORD)
    opens = (after < ends) & (a[np.minimum(after, len(a) - 1)] == _OPEN_PAREN)
    found: I64 = starts[opens & (after > name)]
    return found


def _in_sorted(values: I64, sorted_set: I64) -> Mask:
    """Whether each value is in `sorted_set` (ascending): a binary search, where `np.isin`
    would sort both arrays again."""
    if not len(sorted_set):
        return np.zeros(len(values), dtype=bool)
    k = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    found: Mask = sorted_set[k] == values
    return found
