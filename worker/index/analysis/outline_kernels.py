"""The compiled assembly of outlines (numba), apart so that only a build imports numba."""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.index.analysis.compiled import compiled as _compiled

_NEWLINE, _SPACE = 10, 32


@_compiled(nogil=True)
def assembled(a: Any, newlines: Any, segments: Any, files: Any) -> Any:
    # Each file's outline: its kept segments verbatim, each dropped one as one b"\n" (if it
    # held one) or b" ". `segments` are (starts, ends, dropped) of `a`, in order; `files`
    # (starts, first segments, end segments): where each file starts in `a`, and the
    # segments that are its; `newlines` are where every b"\n" of `a` is.
    #
    # Returns the outlines joined, where each starts (one past the last: the end), the
    # file row of each outline row joined, and where each file's rows start.
    starts, ends, dropped = segments
    file_starts, first_segments, end_segments = files
    n_files = len(file_starts)
    text = np.empty(len(a), np.uint8)
    text_at = np.empty(n_files + 1, np.int64)
    rows = np.empty(len(newlines) + n_files, np.int64)
    rows_at = np.empty(n_files + 1, np.int64)
    out, n_rows, k = 0, 0, 0
    for f in range(n_files):
        text_at[f] = out
        rows_at[f] = n_rows
        # Rows count from the file's first: the newlines before it are not its.
        while k < len(newlines) and newlines[k] < file_starts[f]:
            k += 1
        row0 = k
        rows[n_rows] = 0
        n_rows += 1
        for s in range(first_segments[f], end_segments[f]):
            begin, end = starts[s], ends[s]
            if dropped[s]:
                held = False
                while k < len(newlines) and newlines[k] < end:
                    held = True
                    k += 1
                text[out] = _NEWLINE if held else _SPACE
                out += 1
                if held:
                    # The row after a run's separator is the row the run ends on.
                    rows[n_rows] = k - row0
                    n_rows += 1
                continue
            text[out : out + end - begin] = a[begin:end]
            out += end - begin
            while k < len(newlines) and newlines[k] < end:
                k += 1
                rows[n_rows] = k - row0
                n_rows += 1
    text_at[n_files] = out
    rows_at[n_files] = n_rows
    return text[:out], text_at, rows[:n_rows].copy(), rows_at
