"""The compiled raw-token loop: each run of word bytes in range, slotted by first occurrence."""

from __future__ import annotations

import bisect
import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.index.analysis.token_kernels import word_keys


def expected_keys(
    data: bytes, text_starts: list[int], low: int, high: int
) -> tuple[list[bytes], list[int]]:
    """The distinct runs in first-occurrence order, and each run's slot * texts + text."""
    slots: dict[bytes, int] = {}
    keys = []
    for found in re.finditer(rb"[A-Za-z0-9_]+", data):
        word = found.group()
        if not low <= len(word) <= high:
            continue
        slot = slots.setdefault(word, len(slots))
        text = bisect.bisect_right(text_starts, found.start()) - 1
        keys.append(slot * len(text_starts) + max(text, 0))
    return list(slots), keys


def found_keys(
    data: bytes, text_starts: list[int], low: int, high: int
) -> tuple[list[bytes], list[int]]:
    words, offsets, keys = word_keys(
        np.frombuffer(data, dtype=np.uint8), np.asarray(text_starts, dtype=np.int64), low, high
    )
    runs = [bytes(words[offsets[i] : offsets[i + 1]]) for i in range(len(offsets) - 1)]
    return runs, keys.tolist()


_PIECES = st.sampled_from([b"a", b"ab", b"Ab", b"_", b"9", b" ", b"-", b"\xff", b"abc_d"])


@settings(deadline=None)
@given(
    st.lists(st.lists(_PIECES, max_size=12).map(b"".join), min_size=1, max_size=6),
    st.integers(1, 3),
    st.integers(3, 6),
)
def test_runs_slotted_by_first_occurrence_and_keyed_by_text(
    texts: list[bytes], low: int, high: int
) -> None:
    """Runs of word bytes of `low` to `high` bytes, each keyed by its slot and its text (texts
    joined by newlines, as a batch's are)."""
    data = b"\n".join(texts)
    text_starts = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]]).tolist()
    assert found_keys(data, text_starts, low, high) == expected_keys(data, text_starts, low, high)


def test_many_distinct_runs_grow_every_buffer() -> None:
    """Tens of thousands of distinct runs (past the first table, slots and keys) all count."""
    data = " ".join(f"w{i:05d}x w00001x" for i in range(40_000)).encode()
    text_starts = [0, len(data) // 3, 2 * len(data) // 3]
    assert found_keys(data, text_starts, 2, 64) == expected_keys(data, text_starts, 2, 64)


def test_no_text_no_runs() -> None:
    """Empty text, or one with no run in range, has no slots and no keys."""
    assert found_keys(b"", [0], 2, 64) == ([], [])
    assert found_keys(b"a b - c", [0], 2, 64) == ([], [])
