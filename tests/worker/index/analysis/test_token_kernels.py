"""The compiled raw-token loops: runs of word bytes in range, identifier parts."""

from __future__ import annotations

import bisect
import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.index.analysis.token_kernels import word_runs


def expected_runs(
    data: bytes, text_starts: list[int], low: int, high: int
) -> tuple[list[bytes], list[int]]:
    """The runs of word bytes `low` to `high` long, and the text each starts in."""
    runs = [m for m in re.finditer(rb"[A-Za-z0-9_]+", data) if low <= len(m.group()) <= high]
    return [m.group() for m in runs], [
        bisect.bisect_right(text_starts, m.start()) - 1 for m in runs
    ]


def found_runs(
    data: bytes, text_starts: list[int], low: int, high: int
) -> tuple[list[bytes], list[int]]:
    # Buffers longer than needed, and not clean: a caller keeps them from text to text.
    size = len(data) + 7
    words = np.full(size, 0x61, dtype=np.uint8)
    offsets = np.full(size // 2 + 2, 5, dtype=np.int64)
    texts = np.full(size // 2 + 1, 3, dtype=np.int64)
    end, n = word_runs(
        np.frombuffer(data, dtype=np.uint8),
        np.asarray(text_starts, dtype=np.int64),
        low,
        high,
        words,
        offsets,
        texts,
    )
    runs = [bytes(words[offsets[i] : offsets[i + 1]]) for i in range(n)]
    assert offsets[n] == end
    return runs, texts[:n].tolist()


_PIECES = st.sampled_from([b"a", b"ab", b"Ab", b"_", b"9", b" ", b"-", b"\xff", b"abc_d"])


@settings(deadline=None)
@given(
    st.lists(st.lists(_PIECES, max_size=12).map(b"".join), min_size=1, max_size=6),
    st.integers(1, 3),
    st.integers(3, 6),
)
def test_runs_in_range_with_the_text_each_starts_in(
    texts: list[bytes], low: int, high: int
) -> None:
    """Runs of word bytes of `low` to `high` bytes, each with its text (texts joined by
    newlines, as a batch's are)."""
    data = b"\n".join(texts)
    text_starts = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]]).tolist()
    assert found_runs(data, text_starts, low, high) == expected_runs(data, text_starts, low, high)


def test_as_many_runs_as_bytes_allow() -> None:
    """One-byte runs between single separators: the most runs a text can hold all come out."""
    for data in (b"a b c", b"a b c ", b"a"):
        assert found_runs(data, [0], 1, 64) == expected_runs(data, [0], 1, 64)


def test_no_text_no_runs() -> None:
    """Empty text, or one with no run in range, has no runs."""
    assert found_runs(b"", [0], 2, 64) == ([], [])
    assert found_runs(b"a b - c", [0], 2, 64) == ([], [])
