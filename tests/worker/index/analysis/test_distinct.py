"""Tests of the sort-based distinct values of integer arrays."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from worker.index.analysis.distinct import count_distinct, distinct

_INTEGER_ARRAYS = hnp.arrays(
    dtype=st.sampled_from([np.uint8, np.uint32, np.int32, np.int64, np.uint64]),
    shape=st.integers(0, 300),
)


@given(_INTEGER_ARRAYS)
def test_distinct_is_what_np_unique_returns(values: np.ndarray) -> None:
    """The distinct values come out ascending, each once, in the input's dtype."""
    found = distinct(values)
    assert found.dtype == values.dtype
    assert np.array_equal(found, np.unique(values))


@given(hnp.arrays(dtype=np.int64, shape=st.integers(0, 300), elements=st.integers(-5, 5)))
def test_count_distinct_counts_each_value(values: np.ndarray) -> None:
    """Each distinct value comes with how often it occurs."""
    found, counts = count_distinct(values)
    expected, expected_counts = np.unique(values, return_counts=True)
    assert np.array_equal(found, expected)
    assert np.array_equal(counts, expected_counts)
