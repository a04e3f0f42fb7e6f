"""Comments, string literals (and C directives) of C and its kin, and of Python, by array ops.

The same spans as a scan with `C_LEXEMES` (and its variants) or `PY_LEXEMES`
(finditer over each file), without a regular expression engine walking every byte (which
took 6% of a Python repository's build). Every place a lexeme could start (`//`, `/*`, `"`,
`'`, `#`, a backtick) gets the end it would have if one started there, from the next
newline, `*/`, quote, each found for all at once; then the lexemes that really start are
those a scan reaches: the first candidate, then the first one at or after its end, and so
on, a chain followed for all its links at once by pointer doubling.

Inside a literal or a directive a backslash escapes the next byte, so a quote or newline
after an odd run of backslashes does not end one. Inside a directive a block comment is
skipped whole (it may span lines) and quotes mean nothing; one that never closes ends the
directive where it starts. A raw string (Go's backticks) has no escapes and may span lines.
In Python a triple-quoted string runs to the first unescaped triple quote; one that never
closes is read as the empty string its first two quotes make.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Spans = tuple[I64, I64]

_C_COMMENTS_AND_STRINGS: Final = (
    rb"//[^\n]*|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/"  # comments
    rb"|\"[^\"\\\n]*(?:\\.[^\"\\\n]*)*\"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"  # strings, chars
)
_C_DIRECTIVES: Final = (
    # directives, with continuation lines and comments (a comment may run past the line end)
    rb"|#[^\n\\/]*(?:(?:\\.|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/|/(?!\*))[^\n\\/]*)*"
)
_RAW_STRINGS: Final = rb"|`[^`]*`"
_TEXT_BLOCKS: Final = rb'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""|'

C_LEXEMES: Final = re.compile(_C_COMMENTS_AND_STRINGS + _C_DIRECTIVES, re.S)
"""What `c_lexemes` finds, as a regular expression (the reference its tests compare with)."""
GO_LEXEMES: Final = re.compile(_C_COMMENTS_AND_STRINGS + _RAW_STRINGS, re.S)
"""What `c_lexemes` finds with raw strings and without directives (Go)."""
JAVA_LEXEMES: Final = re.compile(_TEXT_BLOCKS + _C_COMMENTS_AND_STRINGS + _C_DIRECTIVES, re.S)
"""What `c_lexemes` finds with text blocks (Java)."""
JS_LEXEMES: Final = re.compile(_C_COMMENTS_AND_STRINGS, re.S)
"""What `c_lexemes` finds without directives (JavaScript, TypeScript)."""
PY_LEXEMES: Final = re.compile(
    rb"#[^\n]*"
    rb'|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    rb"|'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
    rb'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    rb"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'",
    re.S,
)
"""What `python_lexemes` finds: comments, strings (string prefixes are read as names)."""


@dataclass(frozen=True, slots=True)
class BatchLexemes:
    """The lexemes of some blobs of a batch: [start, end) in the batch's joined text, in order."""

    blobs: I64
    """The blobs (batch indices, ascending) that were read: their lexemes are all here."""
    starts: I64
    ends: I64


def moved_to_batch(
    blobs: I64, own_starts: I64, batch_starts: I64, starts: I64, ends: I64
) -> BatchLexemes:
    """Lexemes read in a buffer of some blobs of their own (the i-th at `own_starts[i]`),
    moved to where those blobs lie in the batch's text (`batch_starts[blobs[i]]`)."""
    shift = batch_starts[blobs] - own_starts
    moved = shift[np.searchsorted(own_starts, starts, side="right") - 1]
    return BatchLexemes(blobs, starts + moved, ends + moved)


_SLASH, _STAR, _QUOTE, _APOSTROPHE, _HASH, _BACKSLASH, _NEWLINE = 47, 42, 34, 39, 35, 92, 10
_BACKTICK = 96
_EMPTY: Final = np.zeros(0, dtype=np.int64)


def c_lexemes(
    a: U8,
    file_starts: I64,
    file_ends: I64,
    newlines: I64,
    *,
    directives: bool = True,
    raw_strings: bool = False,
    text_blocks: bool = False,
) -> Spans:
    """[start, end) of every lexeme of each file [file_starts, file_ends) of `a`, in order.

    `newlines`: the positions of every b"\\n" in `a`. Without `directives` (the languages
    that borrowed C's comments and strings but not its preprocessor) a `#` is code; with
    `raw_strings` (Go) a string also runs from a backtick to the next, across lines; with
    `text_blocks` (Java) three quotes open a string that runs to the next unescaped three.
    """
    n = len(a)
    if not n:
        return _EMPTY, _EMPTY
    never = n + 1
    # One pass for every byte that matters, split by byte after.
    marked = a == _SLASH
    for value in (_STAR, _QUOTE, _APOSTROPHE, _HASH) + ((_BACKTICK,) if raw_strings else ()):
        marked |= a == value
    at = np.flatnonzero(marked)
    byte = a[at]
    slash = at[(byte == _SLASH) & (at + 1 < n)]
    after_slash = a[slash + 1]
    line = slash[after_slash == _SLASH]
    block = slash[after_slash == _STAR]
    star = at[(byte == _STAR) & (at + 1 < n)]
    closers = star[a[star + 1] == _SLASH]
    open_newlines = newlines[~_escaped(a, newlines)]
    kinds = []
    # Line comments run to the newline; block comments to the first `*/` after the `/*`.
    e = _file_end(line, file_starts, file_ends)
    kinds.append((line, np.minimum(_next(newlines, line + 2, never), e)))
    e = _file_end(block, file_starts, file_ends)
    end = _next(closers, block + 2, never) + 2
    kinds.append((block, np.where(end <= e, end, -1)))
    for quote in (_QUOTE, _APOSTROPHE):
        quotes = at[byte == quote]
        unescaped = ~_escaped(a, quotes)
        e = _file_end(quotes, file_starts, file_ends)
        close = _next(quotes[unescaped], quotes + 1, never)
        ok = (close < _next(open_newlines, quotes + 1, never)) & (close < e)
        end = np.where(ok, close + 1, -1)
        if text_blocks and quote == _QUOTE:
            opens, close = _triple_quoted(a, quotes, unescaped, e, never)
            end[opens] = close
        kinds.append((quotes, end))
    if raw_strings:
        ticks = at[byte == _BACKTICK]
        close = _next(ticks, ticks + 1, never)
        kinds.append(
            (ticks, np.where(close < _file_end(ticks, file_starts, file_ends), close + 1, -1))
        )
    if directives:
        hashes = at[byte == _HASH]
        openers = block[~_escaped(a, block)]
        marks = (open_newlines, openers, closers)
        files = (file_starts, file_ends)
        kinds.append((hashes, _directive_ends(a, hashes, marks, files, never)))
    return _chained(kinds)


def python_lexemes(a: U8, file_starts: I64, file_ends: I64, newlines: I64) -> Spans:
    """[start, end) of every comment and string of each file [file_starts, file_ends) of `a`.

    Files must be apart by at least one byte that is no quote. `newlines`: the positions of
    every b"\\n" in `a`.
    """
    n = len(a)
    if not n:
        return _EMPTY, _EMPTY
    never = n + 1
    marked = a == _HASH
    for value in (_QUOTE, _APOSTROPHE):
        marked |= a == value
    at = np.flatnonzero(marked)
    byte = a[at]
    # Where a lexeme starting at each candidate would end; -1 where none can start.
    end = np.full(len(at), -1, dtype=np.int64)
    e = _file_end(at, file_starts, file_ends)
    # The first newline after each candidate, and the first no backslash escapes.
    newline = np.searchsorted(newlines, at)
    is_open = np.append(~_escaped(a, newlines), True)
    ends_line = np.append(newlines, never)
    open_at = np.where(is_open, np.arange(len(ends_line)), len(ends_line) - 1)
    open_newline = ends_line[np.minimum.accumulate(open_at[::-1])[::-1][newline]]
    hashes = np.flatnonzero(byte == _HASH)
    end[hashes] = np.minimum(ends_line[newline[hashes]], e[hashes])
    for quote in (_QUOTE, _APOSTROPHE):
        which = np.flatnonzero(byte == quote)
        quotes = at[which]
        unescaped = ~_escaped(a, quotes)
        closing = np.append(quotes[unescaped], never)
        # The first unescaped quote after each: count the unescaped ones up to it.
        close = closing[np.cumsum(unescaped)]
        ok = (close < open_newline[which]) & (close < e[which])
        end[which[ok]] = close[ok] + 1
        opens, close = _triple_quoted(a, quotes, unescaped, e[which], never)
        end[which[opens]] = close
    return _reached(at, end)


def _triple_quoted(
    a: U8, quotes: I64, unescaped: Mask, file_end: I64, never: int
) -> tuple[I64, I64]:
    """The quotes (indices into `quotes`, all of one kind) that open three in a row, and
    where the string each opens ends: after the next unescaped three, if its file has one
    (the others are left out)."""
    n = len(a)
    quote = a[quotes[0]] if len(quotes) else 0
    triple = (a[np.minimum(quotes + 1, n - 1)] == quote) & (
        a[np.minimum(quotes + 2, n - 1)] == quote
    )
    triple &= quotes + 2 < n
    opens = np.flatnonzero(triple)
    close = _next(quotes[triple & unescaped], quotes[opens] + 3, never) + 3
    closed = close <= file_end[opens]
    return opens[closed], close[closed]


def _chained(kinds: list[tuple[I64, I64]]) -> Spans:
    """The lexemes a scan reaches among candidates of several kinds (start, end)."""
    starts = np.concatenate([k[0] for k in kinds])
    ends = np.concatenate([k[1] for k in kinds])
    order = np.argsort(starts)
    return _reached(starts[order], ends[order])


def _reached(starts: I64, ends: I64) -> Spans:
    """The lexemes a scan reaches among candidates in start order (end -1: none can start)."""
    real = ends >= 0
    starts, ends = starts[real], ends[real]
    chain = _chain(np.searchsorted(starts, ends))
    return starts[chain], ends[chain]


def _escaped(a: U8, at: I64) -> Mask:
    """Whether an odd run of backslashes comes right before each position."""
    run = np.zeros(len(at), dtype=np.int64)
    todo = np.flatnonzero(at > 0)
    while len(todo):
        todo = todo[a[at[todo] - run[todo] - 1] == _BACKSLASH]
        run[todo] += 1
        todo = todo[at[todo] - run[todo] > 0]
    odd: Mask = (run & 1).astype(bool)
    return odd


def _next(sorted_at: I64, at: I64, never: int) -> I64:
    """The first of `sorted_at` at or after each position, `never` if none."""
    if not len(sorted_at):
        return np.full(len(at), never, dtype=np.int64)
    i = np.searchsorted(sorted_at, at)
    found: I64 = np.where(i < len(sorted_at), sorted_at[np.minimum(i, len(sorted_at) - 1)], never)
    return found


def _file_end(at: I64, file_starts: I64, file_ends: I64) -> I64:
    end: I64 = file_ends[np.searchsorted(file_starts, at, side="right") - 1]
    return end


def _directive_ends(
    a: U8, hashes: I64, marks: tuple[I64, I64, I64], files: tuple[I64, I64], never: int
) -> I64:
    """Where each directive ends: its first newline no backslash escapes, block comments
    skipped; at a `/*` that never closes; or at its file's end (before a last backslash
    that has nothing to escape).

    `marks`: newlines not escaped, `/*` whose slash is not escaped, `*/`.
    """
    open_newlines, openers, closers = marks
    e = _file_end(hashes, *files)
    # A file that ends in a backslash with nothing to escape ends its directive before it.
    last = e - _escaped(a, e)
    end = np.full(len(hashes), -1, dtype=np.int64)
    pos = hashes + 1
    todo = np.arange(len(hashes), dtype=np.int64)
    while len(todo):
        stop = np.minimum(_next(open_newlines, pos[todo], never), last[todo])
        comment = _next(openers, pos[todo], never)
        plain = comment >= stop
        end[todo[plain]] = stop[plain]
        todo, comment = todo[~plain], comment[~plain]
        close = _next(closers, comment + 2, never) + 2
        closed = close <= e[todo]
        end[todo[~closed]] = comment[~closed]
        todo = todo[closed]
        pos[todo] = close[closed]
    return end


def _chain(next_of: I64) -> I64:
    """The nodes reached from node 0 following `next_of` (a node past the last ends it), in
    order: each round follows every link found so far as far again (pointer doubling)."""
    m = len(next_of)
    if not m:
        return _EMPTY
    jump = np.append(np.minimum(next_of, m), m)
    members = np.zeros(1, dtype=np.int64)
    while True:
        found = jump[members]
        found = found[found < m]
        if not len(found):
            break
        members = np.concatenate([members, found])
        jump = jump[jump]
    members.sort()
    return members


def inside(pos: I64, starts: I64, ends: I64) -> Mask:
    """Whether each position lies in one of the sorted, disjoint [start, end) spans."""
    if not len(starts):
        return np.zeros(len(pos), dtype=bool)
    k = np.searchsorted(starts, pos, side="right") - 1
    within: Mask = (k >= 0) & (pos < ends[np.maximum(k, 0)])
    return within
