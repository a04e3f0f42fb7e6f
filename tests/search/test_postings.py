"""Posting rows: grouped by term, by chunk within a term, a pair's two counts in one row."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.search.postings import PostingRows, Postings

Rows = dict[tuple[int, int], int]


def reference(body: Rows, symbol: Rows, n_terms: int) -> dict[int, list[tuple[int, int, int]]]:
    out: dict[int, list[tuple[int, int, int]]] = {t: [] for t in range(n_terms)}
    for term, chunk in sorted(set(body) | set(symbol)):
        out[term].append(
            (chunk, min(body.get((term, chunk), 0), 65535), min(symbol.get((term, chunk), 0), 255))
        )
    return out


def grouped(postings: Postings, n_terms: int) -> dict[int, list[tuple[int, int, int]]]:
    out = {}
    for term in range(n_terms):
        s, n = int(postings.start[term]), int(postings.count[term])
        out[term] = list(
            zip(
                postings.chunk[s : s + n].tolist(),
                postings.tf_body[s : s + n].tolist(),
                postings.tf_sym[s : s + n].tolist(),
                strict=True,
            )
        )
    return out


def add_batches(rows: PostingRows, body: Rows, symbol: Rows, n_batches: int) -> None:
    """Add rows a batch of chunks at a time, as a build does."""
    chunks = sorted({c for _, c in body} | {c for _, c in symbol})
    for part in np.array_split(np.asarray(chunks, dtype=np.int64), n_batches):
        mine = set(part.tolist())
        for field, rows_of in enumerate((body, symbol)):
            picked = sorted((t, c) for t, c in rows_of if c in mine)
            if not picked:
                continue
            term = np.asarray([t for t, _ in picked], dtype=np.int64)
            chunk = np.asarray([c for _, c in picked], dtype=np.int64)
            count = np.asarray([rows_of[p] for p in picked], dtype=np.int64)
            rows.add(term, chunk, field, count)


pairs = st.dictionaries(
    st.tuples(st.integers(0, 30), st.integers(0, 60)), st.integers(1, 70000), max_size=80
)


@settings(max_examples=150, deadline=None)
@given(pairs, pairs, st.integers(1, 5))
def test_postings_match_reference(body: Rows, symbol: Rows, n_batches: int) -> None:
    """Packed rows: every (term, chunk) once, counts clipped to their column types."""
    rows = PostingRows()
    add_batches(rows, body, symbol, n_batches)
    assert grouped(rows.finish(31), 31) == reference(body, symbol, 31)


@settings(max_examples=40, deadline=None)
@given(pairs, pairs)
def test_wide_rows_give_the_same_postings(body: Rows, symbol: Rows) -> None:
    """A chunk id past the packed limit switches to wide rows with the same result."""
    far = 1 << 24
    rows = PostingRows()
    add_batches(rows, body, symbol, 2)
    rows.add(np.asarray([31]), np.asarray([far]), 0, np.asarray([1]))
    expected = reference({**body, (31, far): 1}, symbol, 32)
    assert grouped(rows.finish(32), 32) == expected
