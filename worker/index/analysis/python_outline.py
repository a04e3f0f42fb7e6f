"""The outline of Python files (see `outline`): numpy passes over a whole batch of them.

Function bodies go but for their last line, simple statements that do not end a block,
comments that cannot end one, the inside of parentheses, braces and triple-quoted strings.
A file whose brackets do not balance, or whose indentation has tabs, gets no outline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from worker.index.analysis.distinct import distinct
from worker.index.analysis.lexers import inside, python_lexemes
from worker.index.analysis.outline import (
    Outline,
    Outlined,
    byte_table,
    first_not_in,
    joined,
    split_outlines,
)

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Spans = tuple[I64, I64]

_NEWLINE, _HASH, _COLON = 10, 35, 58
_BLANK: Final = byte_table(b" \t\r\n\f\v")
_PY_OPEN: Final = byte_table(b"([{")
_PY_CLOSE: Final = byte_table(b")]}")
_PY_ELIDE_OPEN: Final = byte_table(b"({")
"""Bracket groups whose inside can go: `f( )`, `{ }` parse, an empty subscript `x[ ]` does not."""
_ONLY_SPACE: Final = byte_table(b" ")
_EMPTY: Final = np.zeros(0, dtype=np.int64)
_CUT: Final = 3


class _Batch:
    """Files joined by b"\\n" into one buffer, with the lookups every outline needs."""

    def __init__(self, files: Sequence[bytes]) -> None:
        self.data, self.starts, self.ends = joined(files)
        self.a = np.frombuffer(self.data, dtype=np.uint8)
        self.newlines = np.flatnonzero(self.a == _NEWLINE)
        self.ok = np.ones(len(files), dtype=bool)

    def file_of(self, pos: I64) -> I64:
        """The file each position lies in (a separator belongs to the file before it)."""
        found: I64 = np.searchsorted(self.starts, pos, side="right") - 1
        return found

    def structure(self, chars: bytes, ls: I64, le: I64) -> I64:
        """Positions of the bytes in `chars`, outside lexemes."""
        a = self.a
        marked = a == chars[0]
        for c in chars[1:]:
            marked |= a == c
        pos: I64 = np.flatnonzero(marked)
        return pos[~inside(pos, ls, le)] if len(ls) else pos

    def balanced(self, pos: I64, step: I64) -> tuple[I64, I64]:
        """Depth after each position within its file; files that do not balance are marked.

        Returns the depth and the file of each position.
        """
        fid = self.file_of(pos)
        depth = np.cumsum(step)
        if not len(pos):
            return depth, fid
        first = np.searchsorted(pos, self.starts)
        last = np.searchsorted(pos, self.ends, side="right") - 1
        has = last >= first
        depth = depth - np.concatenate([[0], depth])[first][fid]
        lowest = np.minimum.reduceat(depth, first[has])
        self.ok[has] &= (lowest >= 0) & (depth[last[has]] == 0)
        return depth, fid

    def outlines(self, drops: Sequence[Spans], keeps: Spans, vetoes: Spans) -> list[Outline | None]:
        """Assemble every good file's outline from the batch-wide drop spans."""
        from worker.index.analysis.outline_kernels import assembled

        seg_starts, seg_ends, dropped = _segments(
            len(self.a), drops, keeps, vetoes, self.starts, self.ends
        )
        # Segments are cut at every file's start and end: a file's are those in between.
        files = (
            self.starts,
            np.searchsorted(seg_starts, self.starts),
            np.searchsorted(seg_starts, self.ends),
        )
        text, text_at, rows, rows_at = assembled(
            self.a, self.newlines, (seg_starts, seg_ends, dropped), files
        )
        return split_outlines(text.tobytes(), text_at, rows, rows_at, self.ok)


def _previous_significant(a: U8, positions: I64, floor: I64, ls: I64, le: I64) -> tuple[U8, I64]:
    """The byte before each position, skipping blanks and the [ls, le) lexemes; 0 if none.

    `floor` is, per position, the first byte it may look at (its file's start). Returns the
    bytes and where they are (-1 if none).
    """
    q = positions - 1
    out = np.zeros(len(positions), dtype=np.uint8)
    where = np.full(len(positions), -1, dtype=np.int64)
    todo = np.flatnonzero(q >= floor)
    if not len(ls):
        ls = le = np.full(1, -1, dtype=np.int64)
    while len(todo):
        at = q[todo]
        k = np.searchsorted(ls, at, side="right") - 1
        in_lexeme = (k >= 0) & (at < le[np.maximum(k, 0)])
        blank = _BLANK[a[at]] & ~in_lexeme
        done = ~in_lexeme & ~blank
        out[todo[done]] = a[at[done]]
        where[todo[done]] = at[done]
        q[todo[blank]] -= 1
        q[todo[in_lexeme]] = ls[k[in_lexeme]] - 1
        todo = todo[~done]
        todo = todo[q[todo] >= floor[todo]]
    return out, where


def _segments(
    n: int, drops: Sequence[Spans], keeps: Spans, vetoes: Spans, *cuts: I64
) -> tuple[I64, I64, Mask]:
    """Cut [0, n) where the drop state changes or at `cuts`; segment starts, ends, dropped.

    A byte is dropped when a drop span covers it, unless a keep span does too and no veto
    span (a keep does not survive inside these) covers it.
    """
    groups = [*drops, keeps, vetoes]
    kinds = [0] * len(drops) + [1, 2]
    # Events as (position, kind, +1 / -1 / 0) packed into one sortable integer; the order of
    # events at one position does not matter but that a cut, if any, comes last.
    events = np.concatenate(
        [
            (np.concatenate([s, e]) << 4)
            | np.repeat(np.array([4 * k + 2, 4 * k], dtype=np.int64), len(s))
            for (s, e), k in zip(groups, kinds, strict=True)
        ]
        + [(c << 4) | (4 * _CUT + 1) for c in cuts]
    )
    events.sort()
    pos = events >> 4
    kind = (events & 15) >> 2
    delta = (events & 3) - 1
    drop_n = np.cumsum(np.where(kind == 0, delta, 0))
    keep_n = np.cumsum(np.where(kind == 1, delta, 0))
    veto_n = np.cumsum(np.where(kind == 2, delta, 0))
    dropped = (drop_n > 0) & ~((keep_n > 0) & (veto_n == 0))
    # The state after the last event at a position holds up to the next position.
    last = np.ones(len(pos), dtype=bool)
    last[:-1] = pos[1:] != pos[:-1]
    pos, dropped, kind = pos[last], dropped[last], kind[last]
    starts = np.concatenate([[0], pos]).astype(np.int64)
    flags = np.concatenate([[False], dropped])
    boundary = np.ones(len(starts), dtype=bool)
    boundary[1:] = flags[1:] != flags[:-1]
    if cuts:
        boundary[1:] |= kind == _CUT
    starts, flags = starts[boundary], flags[boundary]
    ends = np.append(starts[1:], n).astype(np.int64)
    nonempty = ends > starts
    return starts[nonempty], ends[nonempty], flags[nonempty]


def _starts_with(a: U8, positions: I64, words: tuple[bytes, ...]) -> Mask:
    """Whether the bytes at each position start with one of `words`."""
    n = len(a)
    out = np.zeros(len(positions), dtype=bool)
    for word in words:
        fits = positions + len(word) <= n
        match = fits.copy()
        at = positions[fits]
        for i, byte in enumerate(word):
            match[fits] &= a[at + i] == byte
        out |= match
    return out


@dataclass(frozen=True, slots=True)
class _CodeLines:
    """The logical lines of a batch of Python files that hold code (not blank, not comment)."""

    starts: I64
    ends: I64
    """Position of the newline (or file end) that ends each line."""
    first: I64
    """Position of each line's first byte that is not a space."""
    indent: I64
    file: I64
    shallower_next: Mask
    """Whether the next code line (of the same file) is indented less: a block ends here."""
    file_end: I64
    """For each line, the index one past its file's last code line."""


def _code_lines(batch: _Batch, pos: I64, ch: U8, depth: I64) -> _CodeLines | None:
    """Logical lines: a newline outside brackets and strings, not after a backslash, ends one.

    Marks the files whose indentation has a tab (the outline does not follow those).
    """
    a = batch.a
    n = len(a)
    if not n:
        return None
    ends = pos[(ch == _NEWLINE) & (depth == 0)]
    ends = ends[(ends == 0) | (a[np.maximum(ends - 1, 0)] != 92)]
    ends = np.sort(np.concatenate([ends, batch.ends]))
    ends = ends[np.append(True, ends[1:] != ends[:-1])]
    starts = np.empty(len(ends), dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    first = first_not_in(a, starts, ends, _ONLY_SPACE)
    head = a[np.minimum(first, n - 1)]
    line_file = batch.file_of(starts)
    batch.ok[line_file[(first < ends) & (head == 9)]] = False
    code = (first < ends) & (head != _HASH) & (head != _NEWLINE) & (head != 13)
    starts, ends, first, line_file = starts[code], ends[code], first[code], line_file[code]
    if not len(starts):
        return None
    indent = first - starts
    last_line = np.searchsorted(line_file, np.arange(len(batch.starts)), side="right") - 1
    next_line = np.arange(1, len(indent) + 1, dtype=np.int64)
    next_line[last_line[last_line >= 0]] = len(indent)
    # Each file ends with a line shallower than any: no block runs into the next file.
    shallower_next = np.append(indent, -1)[next_line] < indent
    return _CodeLines(
        starts, ends, first, indent, line_file, shallower_next, last_line[line_file] + 1
    )


def _def_bodies(batch: _Batch, lines: _CodeLines) -> Spans:
    """What goes of each def's body: all but its last logical line, kept at body indentation.

    The last line keeps the def's last row in place; at the body's indentation, comments
    after it fall in or out of the body as they do in the file (the parser counts a comment
    indented at least that deep into the block). A body with a line indented less than its
    first (an indentation error the outline would hide) marks its file as not followed.
    """
    a = batch.a
    indent = lines.indent
    defs = np.flatnonzero(_starts_with(a, lines.first, (b"def ", b"async def ")))
    after = np.empty(len(defs), dtype=np.int64)
    limit = lines.file_end[defs]
    for k in distinct(indent[defs]).tolist():
        at = indent[defs] == k
        shallow = np.flatnonzero(indent <= k)
        j = np.searchsorted(shallow, defs[at], side="right")
        found = shallow[np.minimum(j, len(shallow) - 1)]
        after[at] = np.where((j < len(shallow)) & (found < limit[at]), found, limit[at])
    last = after - 1
    long = np.flatnonzero(last > defs + 1)
    defs, last = defs[long], last[long]
    body_indent = indent[defs + 1]
    if len(defs):
        lowest = np.minimum.reduceat(
            np.append(indent, 0), np.stack([defs + 1, after[long]], 1).ravel()
        )[0::2]
        batch.ok[lines.file[defs[lowest < body_indent]]] = False
    return lines.ends[defs], lines.first[last] - body_indent


def python_outlines(files: Sequence[bytes]) -> Outlined:
    """The outlines of Python files (None where brackets do not balance or tabs indent)."""
    batch = _Batch(files)
    a = batch.a
    n = len(a)
    ls, le = python_lexemes(a, batch.starts, batch.ends)
    pos = batch.structure(b"()[]{}\n", ls, le)
    ch = a[pos]
    step = _PY_OPEN[ch].astype(np.int64) - _PY_CLOSE[ch]
    depth, fid = batch.balanced(pos, step)
    good = batch.ok[fid]
    pos, ch, step, depth = pos[good], ch[good], step[good], depth[good]
    lines = _code_lines(batch, pos, ch, depth)
    if lines is None:
        return Outlined([None] * len(files), ls, le)
    bodies = _def_bodies(batch, lines)
    # A simple statement followed by one as deeply indented cannot end a block: drop it with
    # what follows up to the next line. Headers (`if x:`), defs and classes stay.
    is_comment = a[ls] == _HASH
    cs, ce = ls[is_comment], le[is_comment]
    header = _previous_significant(a, lines.ends, batch.starts[lines.file], cs, ce)[0] == _COLON
    named = _starts_with(a, lines.first, (b"def ", b"async def ", b"class "))
    simple = np.flatnonzero(~lines.shallower_next & ~header & ~named)
    # After a simple statement only a line as deep is valid: a deeper one is an indentation
    # error that dropping the statement would hide from the parser.
    nxt = np.minimum(simple + 1, len(lines.indent) - 1)
    deeper = (lines.indent[nxt] > lines.indent[simple]) & (lines.file[nxt] == lines.file[simple])
    batch.ok[lines.file[simple[deeper]]] = False
    statements: Spans = (
        lines.first[simple],
        lines.starts[np.minimum(simple + 1, len(lines.starts) - 1)],
    )
    # Comments go too, but for those before a dedent: the parser may count them into the
    # block that ends there.
    before = np.searchsorted(lines.first, cs, side="right") - 1
    trailing = (before >= 0) & lines.shallower_next[np.maximum(before, 0)]
    comments: Spans = (cs[~trailing], ce[~trailing])
    # Triple-quoted strings keep their quotes: `\"\"\"` + separator + `\"\"\"` spans the
    # same rows.
    q = a[ls]
    triple = (le - ls >= 6) & ((q == 34) | (q == 39))
    triple &= (a[np.minimum(ls + 1, n - 1)] == q) & (a[np.minimum(ls + 2, n - 1)] == q)
    strings: Spans = (ls[triple] + 3, le[triple] - 3)
    # The inside of an outermost ( ) or { } group: arguments, parameters, literals.
    groups = _outer_groups(pos, ch, depth, step)
    outlines = batch.outlines([bodies, statements, comments, strings, groups], _NONE, _NONE)
    return Outlined(outlines, ls, le)


def _outer_groups(pos: I64, ch: U8, depth: I64, step: I64) -> Spans:
    """The insides of bracket groups opened at depth 0 with `(` or `{`."""
    opens = np.flatnonzero((step == 1) & (depth == 1))
    closes = np.flatnonzero((step == -1) & (depth == 0))
    if len(opens) != len(closes):
        return _NONE
    keep = _PY_ELIDE_OPEN[ch[opens]]
    return pos[opens[keep]] + 1, pos[closes[keep]]


_NONE: Final = (_EMPTY, _EMPTY)
