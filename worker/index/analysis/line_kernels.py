"""The compiled loops over lines and spans (numba), apart so that only a build imports numba."""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.index.analysis.compiled import compiled as _compiled


@_compiled(nogil=True)
def first_not_in(a: Any, starts: Any, ends: Any, skip: Any) -> Any:
    # For each [start, end), the position of its first byte `skip` does not select (or end).
    found = np.empty(len(starts), np.int64)
    for i in range(len(starts)):
        at, end = starts[i], ends[i]
        while at < end and skip[a[at]]:
            at += 1
        found[i] = at
    return found


@_compiled(nogil=True)
def line_rows(a: Any, newlines: Any, blank_bytes: Any) -> Any:
    # The rows of `a` (split at `newlines`, where every b"\n" is): where each starts and
    # ends, its first byte `blank_bytes` does not select (or its end), whether it is blank,
    # and for each row the next filled row at or after it (n past the last), the last
    # filled row at or before it and the last blank one (-1 before the first).
    n = len(newlines) + 1
    starts = np.empty(n, np.int64)
    ends = np.empty(n, np.int64)
    first = np.empty(n, np.int64)
    blank = np.empty(n, np.bool_)
    next_filled = np.empty(n, np.int64)
    prev_filled = np.empty(n, np.int64)
    prev_blank = np.empty(n, np.int64)
    start = 0
    last_filled = -1
    last_blank = -1
    for row in range(n):
        end = newlines[row] if row < n - 1 else len(a)
        at = start
        while at < end and blank_bytes[a[at]]:
            at += 1
        starts[row] = start
        ends[row] = end
        first[row] = at
        is_blank = at >= end
        blank[row] = is_blank
        if is_blank:
            last_blank = row
        else:
            last_filled = row
        prev_filled[row] = last_filled
        prev_blank[row] = last_blank
        start = end + 1
    following = n
    for row in range(n - 1, -1, -1):
        if not blank[row]:
            following = row
        next_filled[row] = following
    return starts, ends, first, blank, next_filled, prev_filled, prev_blank


@_compiled(inline="always")
def _closes_comment(a: Any, start: int, end: int) -> bool:
    # Whether the line [start, end) ends with `*/` (before a final b"\r").
    last = end - (1 if end > 0 and a[end - 1] == 0x0D else 0)
    return last - start >= 2 and a[last - 2] == 0x2A and a[last - 1] == 0x2F


@_compiled(nogil=True)
def last_stops(  # noqa: PLR0917 (numba compiles positional parameters only)
    a: Any,
    starts: Any,
    ends: Any,
    first: Any,
    blank: Any,
    prefix_first: Any,
    prefix_second: Any,
    bridge: bool,
) -> Any:
    # For each row, the last row at or before it that stops a run of leading comments: a
    # blank row, or one whose first bytes are no prefix (prefix_second[k] < 0: one byte).
    # With `bridge`, a blank row between a line that ends a block comment and a filled row
    # stops nothing.
    n = len(first)
    last = np.empty(n, np.int64)
    stop_at = -1
    bridges = bridge and len(a) >= 2
    for row in range(n):
        stop = bool(blank[row])
        if not stop:
            at = first[row]
            b0 = a[at]
            b1 = a[at + 1] if at + 1 < ends[row] else 0
            commented = False
            for k in range(len(prefix_first)):
                if b0 == prefix_first[k] and (prefix_second[k] < 0 or b1 == prefix_second[k]):
                    commented = True
                    break
            stop = not commented
        elif bridges and 0 < row < n - 1 and not blank[row + 1]:
            stop = not _closes_comment(a, starts[row - 1], ends[row - 1])
        if stop:
            stop_at = row
        last[row] = stop_at
    return last
