"""A batch's blobs joined into one text: where each blob and each line starts, and each row's
extent and blankness."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
BLANK: Final = b" \t\r\f\v"
"""What else a blank line may hold."""
BLOCK_COMMENT: Final = b"/*"
"""What opens a block comment: a blank line after one still leads a definition."""
_BLANK_TABLE = np.zeros(256, dtype=bool)
_BLANK_TABLE[list(BLANK)] = True


class BatchText:
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


def line_starts(data: bytes) -> I64:
    """Byte offset where each line starts; lines are split on b"\\n" (so n_lines = count + 1)."""
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    starts = np.empty(len(newlines) + 1, dtype=np.int64)
    starts[0] = 0
    starts[1:] = newlines + 1
    return starts


class BatchLines:
    """Rows of the blobs of a batch: text and blankness by global row number.

    Arrays for the array code; Python lists (faster to index one at a time) only when the
    per-row code (nested definitions, long spans) asks for them.
    """

    __slots__ = (
        "_blank_list",
        "_bounds",
        "a",
        "blank_array",
        "data",
        "end_array",
        "first",
        "next_filled",
        "prev_blank",
        "prev_filled",
        "start_array",
    )

    def __init__(self, data: bytes) -> None:
        from worker.index.analysis.line_kernels import line_rows

        a = np.frombuffer(data, dtype=np.uint8)
        self.a = a
        self.data = data
        (
            self.start_array,
            self.end_array,
            self.first,
            self.blank_array,
            self.next_filled,
            self.prev_filled,
            self.prev_blank,
        ) = line_rows(a, np.flatnonzero(a == 10), _BLANK_TABLE)
        self._blank_list: list[bool] | None = None
        self._bounds: tuple[list[int], list[int]] | None = None

    @property
    def blank(self) -> list[bool]:
        """Whether each row is blank, as a list."""
        if self._blank_list is None:
            self._blank_list = self.blank_array.tolist()
        return self._blank_list

    def line(self, row: int) -> bytes:
        if self._bounds is None:
            self._bounds = (self.start_array.tolist(), self.end_array.tolist())
        starts, ends = self._bounds
        return self.data[starts[row] : ends[row]]

    def last_stop(self, prefixes: tuple[bytes, ...]) -> I64:
        """For each row, the last row at or before it that would stop a run of leading comments.

        A row stops it when it does not start (after blanks) with a prefix (its first two
        bytes), or when it is blank, except one blank row between the end of a block comment
        and a filled row: a doc comment written a blank line above its definition (Express's
        style) still leads it.
        """
        from worker.index.analysis.line_kernels import last_stops

        last: I64 = last_stops(
            self.a,
            self.start_array,
            self.end_array,
            self.first,
            self.blank_array,
            np.asarray([p[0] for p in prefixes], dtype=np.int64),
            np.asarray([p[1] if len(p) > 1 else -1 for p in prefixes], dtype=np.int64),
            BLOCK_COMMENT in prefixes,
        )
        return last
