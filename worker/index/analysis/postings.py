"""Postings of a segment: (term, chunk, count) rows of two fields, grouped by term.

The rows of both fields arrive at the end of a build as blocks of (term, text, count) that
may repeat a pair (two raw tokens of a text with one term). `postings` sorts them all at
once, sums the repeats and puts a pair's body and symbol counts in one row. Groups are in
term id order (which is term order, see `worker.index.analysis.vocabulary`).

A row packs into one uint64 (term 24 bits, text 23, field 1, count 16) while ids fit, so
the sort is numpy's vectorised integer sort and one compiled pass (`postings_kernels`) sums
the repeats and takes the fields out; past those limits rows are kept as wide arrays
(slower, same result).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
Block = tuple[
    npt.NDArray[np.integer],
    npt.NDArray[np.integer],
    npt.NDArray[np.integer],
    npt.NDArray[np.integer],
]
"""Rows of one field: (term, text, count, repeat): the i-th (text, count) stands for
`repeat[i]` rows, with consecutive terms of `term` (`len(term) == repeat.sum()`)."""

_TERM_SHIFT: Final = 40
_TEXT_SHIFT: Final = 17
_FIELD_SHIFT: Final = 16
_TERM_LIMIT: Final = 1 << 24
_TEXT_LIMIT: Final = 1 << 23
_COUNT_LIMIT: Final = 0xFFFF
_SYM_LIMIT: Final = 0xFF


class Postings:
    """The finished postings: rows grouped by term id (each group by chunk)."""

    def __init__(self, n_terms: int) -> None:
        self.start = np.zeros(n_terms, dtype=np.int64)
        self.count = np.zeros(n_terms, dtype=np.int64)
        self.chunk = np.zeros(0, dtype=np.int32)
        self.tf_body = np.zeros(0, dtype=np.uint16)
        self.tf_sym = np.zeros(0, dtype=np.uint8)


def postings(fields: Sequence[tuple[Iterable[Block], int]], n_terms: int, n_texts: int) -> Postings:
    """The postings of the body (0) and symbol (1) fields, each given as blocks of rows and
    their total; the blocks are consumed as they are packed."""
    if not (np.little_endian and n_terms <= _TERM_LIMIT and n_texts <= _TEXT_LIMIT):
        return _wide_postings([list(blocks) for blocks, _ in fields], n_terms)
    packed = np.empty(sum(total for _, total in fields), dtype=np.uint64)
    at = 0
    for field, (blocks, _) in enumerate(fields):
        for term, text, count, repeat in blocks:
            # The low bits once per (text, count), then repeated under each term.
            low = text.astype(np.uint64) << np.uint64(_TEXT_SHIFT)
            low |= np.minimum(count, _COUNT_LIMIT).astype(np.uint64)
            if field:
                low |= np.uint64(1 << _FIELD_SHIFT)
            block = packed[at : at + len(term)]
            block[:] = term
            block <<= np.uint64(_TERM_SHIFT)
            block |= np.repeat(low, repeat)
            at += len(term)
    packed.sort()
    return _unpacked(packed[:at], n_terms)


def _unpacked(packed: U64, n_terms: int) -> Postings:
    """Postings from sorted packed rows, which may repeat a (term, text, field)."""
    from worker.index.analysis.postings_kernels import unpacked

    out = Postings(n_terms)
    out.chunk, out.tf_body, out.tf_sym, out.count = unpacked(
        packed, n_terms, _TERM_SHIFT, _TEXT_SHIFT, _FIELD_SHIFT, _COUNT_LIMIT, _SYM_LIMIT
    )
    np.cumsum(out.count[:-1], out=out.start[1:])
    return out


def _wide_postings(fields: list[list[Block]], n_terms: int) -> Postings:
    """The same postings from wide rows: for ids past the packed limits."""
    keys: list[I64] = []
    counts: list[I64] = []
    for field, blocks in enumerate(fields):
        empty = np.zeros(0, dtype=np.int64)
        term = np.concatenate([empty] + [b[0] for b in blocks]).astype(np.int64)
        text, count = (
            np.concatenate([empty] + [np.repeat(b[i], b[3]) for b in blocks]).astype(np.int64)
            for i in (1, 2)
        )
        keys.append((term << 33) | (text << 1) | field)
        counts.append(count)
    key = np.concatenate(keys)
    count = np.concatenate(counts)
    order = np.argsort(key, kind="stable")
    key, count = key[order], count[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    sums = np.add.reduceat(count, starts) if len(starts) else count
    key = key[starts]
    pair = key >> 1
    is_sym = (key & 1).astype(bool)
    joins = np.zeros(len(key), dtype=bool)
    joins[1:] = (pair[1:] == pair[:-1]) & is_sym[1:]
    own = ~joins
    dest = np.cumsum(own) - 1
    out = Postings(n_terms)
    total = int(own.sum())
    out.chunk = (pair[own] & 0xFFFFFFFF).astype(np.int32)
    out.tf_body = np.zeros(total, dtype=np.uint16)
    out.tf_sym = np.zeros(total, dtype=np.uint8)
    body = own & ~is_sym
    out.tf_body[dest[body]] = np.minimum(sums[body], _COUNT_LIMIT)
    out.tf_sym[dest[is_sym]] = np.minimum(sums[is_sym], _SYM_LIMIT)
    out.count = np.bincount(pair[own] >> 32, minlength=n_terms).astype(np.int64)
    np.cumsum(out.count[:-1], out=out.start[1:])
    return out
