"""The distinct values of integer arrays, found by sorting.

`np.unique` in numpy 2 hashes the values before it orders them, which on large integer
arrays is many times slower than numpy's vectorised sort; these sort, then drop repeats.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
Integer = TypeVar("Integer", bound=np.integer)


def distinct(values: npt.NDArray[Integer]) -> npt.NDArray[Integer]:
    """The distinct values, ascending (what `np.unique` returns)."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    first = np.empty(len(ordered), dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    kept: npt.NDArray[Integer] = ordered[first]
    return kept


def count_distinct(values: I64) -> tuple[I64, I64]:
    """The distinct values, ascending, and how often each occurs."""
    ordered = np.sort(values)
    if not len(ordered):
        return ordered, np.zeros(0, dtype=np.int64)
    first = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    bounds = np.concatenate([[0], first, [len(ordered)]])
    return ordered[bounds[:-1]], np.diff(bounds)
