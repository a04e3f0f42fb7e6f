"""A batch's blobs joined into one text, with where each blob and each line starts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]


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
