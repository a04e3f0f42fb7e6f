"""The compiled scan for comments, literals and directives (numba), apart so that only a
build imports numba."""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.index.analysis.compiled import compiled as _compiled

_SLASH, _STAR, _QUOTE, _APOSTROPHE, _HASH, _BACKSLASH, _NEWLINE = 47, 42, 34, 39, 35, 92, 10
_BACKTICK = 96
_OPENERS = np.zeros(256, np.int64)
_OPENERS[[_SLASH, _QUOTE, _APOSTROPHE, _HASH, _BACKTICK]] = 1

C_COMMENTS = 1
"""`//` to the line's end and `/* */`."""
HASH_COMMENTS = 2
"""`#` to the line's end (Python)."""
DIRECTIVES = 4
"""`#` to the first newline no backslash escapes, block comments skipped (C)."""
RAW_STRINGS = 8
"""Backtick to backtick, across lines (Go)."""
TRIPLE_DOUBLE = 16
"""`\"\"\"` to the next unescaped three (Java's text blocks, Python)."""
TRIPLE_SINGLE = 32
"""`'''` to the next unescaped three (Python)."""


@_compiled(nogil=True)
def _quoted(a: Any, at: int, end: int, quote: int) -> int:
    # Where a one-line literal opened at `at` ends (after its closing quote), or -1.
    p = at + 1
    while p < end:
        c = a[p]
        if c == quote:
            return p + 1
        if c == _BACKSLASH:
            if p + 1 >= end:
                return -1
            p += 2
        elif c == _NEWLINE:
            return -1
        else:
            p += 1
    return -1


@_compiled(nogil=True)
def _triple_quoted(a: Any, at: int, end: int, quote: int) -> int:
    # Where a string opened by three quotes at `at` ends (after the next unescaped three),
    # or -1 if there is no such three in its file (or `at` holds no three).
    if at + 2 >= end or a[at + 1] != quote or a[at + 2] != quote:
        return -1
    p = at + 3
    while p < end:
        c = a[p]
        if c == _BACKSLASH:
            if p + 1 >= end:
                return -1
            p += 2
        elif c == quote and p + 2 < end and a[p + 1] == quote and a[p + 2] == quote:
            return p + 3
        else:
            p += 1
    return -1


@_compiled(nogil=True)
def _block_comment_end(a: Any, at: int, end: int) -> int:
    # Where a `/*` at `at` ends (after its `*/`), or -1 if it never closes in its file.
    p = at + 2
    while p + 1 < end:
        if a[p] == _STAR and a[p + 1] == _SLASH:
            return p + 2
        p += 1
    return -1


@_compiled(nogil=True)
def _directive_end(a: Any, at: int, end: int) -> int:
    # Where a directive opened by the `#` at `at` ends: at its first newline no backslash
    # escapes, block comments skipped whole; before a `/*` that never closes, or before a
    # last backslash with nothing to escape.
    p = at + 1
    while p < end:
        c = a[p]
        if c == _NEWLINE:
            return p
        if c == _BACKSLASH:
            if p + 1 >= end:
                return p
            p += 2
        elif c == _SLASH and p + 1 < end and a[p + 1] == _STAR:
            close = _block_comment_end(a, p, end)
            if close < 0:
                return p
            p = close
        else:
            p += 1
    return end


@_compiled(nogil=True)
def _line_end(a: Any, at: int, end: int) -> int:
    p = at
    while p < end and a[p] != _NEWLINE:
        p += 1
    return p


@_compiled(nogil=True)
def _scan(  # noqa: PLR0917 (numba compiles positional parameters only)
    a: Any,
    file_starts: Any,
    file_ends: Any,
    kinds: int,
    position: Any,
    spans: Any,
) -> None:
    # Lexemes from `position` (file, byte, lexemes found) on, into `spans` (starts, ends)
    # until it is full or every file is read; `position` is left where the scan stopped.
    f, at, found = position[0], position[1], position[2]
    while f < len(file_starts):
        end = file_ends[f]
        while at < end:
            c = a[at]
            if not _OPENERS[c]:
                at += 1
                continue
            stop = -1
            if c == _SLASH:
                if kinds & C_COMMENTS and at + 1 < end:
                    if a[at + 1] == _SLASH:
                        stop = _line_end(a, at + 2, end)
                    elif a[at + 1] == _STAR:
                        stop = _block_comment_end(a, at, end)
            elif c == _QUOTE:
                if kinds & TRIPLE_DOUBLE:
                    stop = _triple_quoted(a, at, end, c)
                if stop < 0:
                    stop = _quoted(a, at, end, c)
            elif c == _APOSTROPHE:
                if kinds & TRIPLE_SINGLE:
                    stop = _triple_quoted(a, at, end, c)
                if stop < 0:
                    stop = _quoted(a, at, end, c)
            elif c == _HASH:
                if kinds & HASH_COMMENTS:
                    stop = _line_end(a, at + 1, end)
                elif kinds & DIRECTIVES:
                    stop = _directive_end(a, at, end)
            elif c == _BACKTICK and kinds & RAW_STRINGS:
                p = at + 1
                while p < end and a[p] != _BACKTICK:
                    p += 1
                if p < end:
                    stop = p + 1
            if stop < 0:
                at += 1
                continue
            if found == spans.shape[1]:
                position[0], position[1], position[2] = f, at, found
                return
            spans[0, found] = at
            spans[1, found] = stop
            found += 1
            at = stop
        f += 1
        if f < len(file_starts):
            at = file_starts[f]
    position[0], position[1], position[2] = f, at, found


@_compiled(nogil=True)
def lexemes(a: Any, file_starts: Any, file_ends: Any, kinds: int) -> Any:
    # [start, end) of every lexeme of each file [file_starts, file_ends) of `a`, in order:
    # from each position a lexeme may start at, the first kind that matches there (in the
    # order of the regular expressions in `lexers`), then on from its end.
    #
    # Room for a lexeme in every 64 bytes at first (code has about one in 150), twice as
    # much each time it fills: counting the bytes that may open one first took a third of
    # the time of the scan.
    size = 0
    for f in range(len(file_starts)):
        size += file_ends[f] - file_starts[f]
    spans = np.empty((2, size // 64 + 16), np.int64)
    position = np.zeros(3, np.int64)
    if len(file_starts):
        position[1] = file_starts[0]
    while True:
        _scan(a, file_starts, file_ends, kinds, position, spans)
        if position[0] >= len(file_starts):
            break
        grown = np.empty((2, 2 * spans.shape[1]), np.int64)
        grown[:, : spans.shape[1]] = spans
        spans = grown
    found = position[2]
    return spans[0, :found], spans[1, :found]
