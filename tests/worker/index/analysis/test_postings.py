"""Posting rows: grouped by term, by chunk within a term, a pair's two counts in one row."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.index.analysis.postings import Block, Postings, postings

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


def blocks_of(rows: Rows, n_blocks: int) -> tuple[list[Block], int]:
    """The rows as blocks in shuffled order, each pair's count split over two rows."""
    items = []
    for (term, chunk), count in rows.items():
        first = count // 2
        items.append((term, chunk, first))
        items.append((term, chunk, count - first))
    items = [i for i in items if i[2]]
    np.random.default_rng(len(items)).shuffle(items)
    blocks: list[Block] = []
    for part in np.array_split(np.arange(len(items)), n_blocks):
        picked = [items[i] for i in part.tolist()]
        columns = [np.asarray([p[k] for p in picked], dtype=np.int64) for k in range(3)]
        blocks.append((columns[0], columns[1], columns[2], np.ones(len(picked), np.int64)))
    return blocks, len(items)


pairs = st.dictionaries(
    st.tuples(st.integers(0, 30), st.integers(0, 60)), st.integers(1, 140000), max_size=80
)


@settings(max_examples=150, deadline=None)
@given(pairs, pairs, st.integers(1, 5))
def test_postings_match_reference(body: Rows, symbol: Rows, n_blocks: int) -> None:
    """Packed rows: every (term, chunk) once, repeats summed, counts clipped to their types."""
    fields = [blocks_of(rows, n_blocks) for rows in (body, symbol)]
    assert grouped(postings(fields, 31, 61), 31) == reference(body, symbol, 31)


@settings(max_examples=40, deadline=None)
@given(pairs, pairs)
def test_wide_rows_give_the_same_postings(body: Rows, symbol: Rows) -> None:
    """Texts past the packed limit switch to wide rows with the same result."""
    far = 1 << 24
    body = {**body, (30, far): 3}
    fields = [blocks_of(rows, 2) for rows in (body, symbol)]
    assert grouped(postings(fields, 31, far + 1), 31) == reference(body, symbol, 31)
