"""Postings of a segment: (term, chunk, count) rows of two fields, grouped by term.

The rows of both fields arrive at the end of a build as blocks of (term, text, count) that
may repeat a pair (two raw tokens of a text with one term). `postings` sorts them all at
once, sums the repeats and puts a pair's body and symbol counts in one row. Groups are in
term id order (which is term order, see `worker.index.analysis.vocabulary`).

A row packs into one uint64 (term 24 bits, text 23, field 1, count 16) while ids fit, so
the sort is numpy's vectorised integer sort and the fields come out through shifts and
masks, a block at a time; past those limits rows are kept as wide arrays (slower, same
result).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
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
_BLOCK: Final = 1 << 20
"""Rows unpacked at a time: temporaries stay small (fresh memory is slow)."""


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
    return _unpacked(_sum_repeats(packed[:at]), n_terms)


def _sum_repeats(packed: U64) -> U64:
    """Sorted packed rows with each (term, text, field) once, its counts summed (clipped).

    Block by block, compacted in place: no temporaries of the full size.
    """
    count_mask = np.uint64(_COUNT_LIMIT)
    shift = np.uint64(_FIELD_SHIFT)
    written = 0
    for b0 in range(0, len(packed), _BLOCK):
        block = packed[b0 : b0 + _BLOCK]
        key = block >> shift
        new = np.ones(len(block), dtype=bool)
        np.not_equal(key[1:], key[:-1], out=new[1:])
        if written:
            new[0] = key[0] != packed[written - 1] >> shift
        starts = np.flatnonzero(new)
        lead = int(starts[0]) if len(starts) else len(block)
        if lead:
            # The block starts inside the last row written: its counts join that row's.
            last = packed[written - 1]
            total = (last & count_mask) + (block[:lead] & count_mask).sum(dtype=np.uint64)
            packed[written - 1] = (last & ~count_mask) | min(total, count_mask)
        if len(starts) == len(block):
            if written != b0:
                packed[written : written + len(block)] = block
            written += len(block)
            continue
        sums = np.add.reduceat(block & count_mask, starts) if len(starts) else starts
        out = block[starts] & ~count_mask
        out |= np.minimum(sums, count_mask).astype(np.uint64)
        packed[written : written + len(out)] = out
        written += len(out)
    return packed[:written]


def _unpacked(packed: U64, n_terms: int) -> Postings:
    """Postings from sorted, distinct packed rows: a symbol row joins the body row of its
    (term, text) just before it, or stands alone with a body count of 0.

    The chunk column is written over the packed rows already read (a row's chunk takes half
    the bytes of a packed row and no row moves forward): no buffer of that size is added.
    """
    pair_shift = np.uint64(_TEXT_SHIFT)
    is_sym = np.empty(len(packed), dtype=bool)
    joins = np.zeros(len(packed), dtype=bool)
    for b0 in range(0, len(packed), _BLOCK):
        block = packed[b0 : b0 + _BLOCK]
        np.not_equal(block & np.uint64(1 << _FIELD_SHIFT), 0, out=is_sym[b0 : b0 + _BLOCK])
        lo = max(b0, 1)
        pair = packed[lo - 1 : b0 + _BLOCK] >> pair_shift
        joins[lo : b0 + _BLOCK] = pair[1:] == pair[:-1]
    joins &= is_sym
    out = Postings(n_terms)
    total = len(packed) - int(np.count_nonzero(joins))
    chunk = packed.view(np.int32)[:total]
    out.tf_body = np.zeros(total, dtype=np.uint16)
    out.tf_sym = np.zeros(total, dtype=np.uint8)
    counts = np.zeros(n_terms, dtype=np.int64)
    row = 0
    for b0 in range(0, len(packed), _BLOCK):
        block = packed[b0 : b0 + _BLOCK]
        own = ~joins[b0 : b0 + _BLOCK]
        sym = is_sym[b0 : b0 + _BLOCK]
        dest = np.cumsum(own) + (row - 1)
        count = (block & np.uint64(_COUNT_LIMIT)).astype(np.int32)
        kept = block[own]
        term = (kept >> np.uint64(_TERM_SHIFT)).astype(np.int64)
        runs = np.flatnonzero(np.append(True, term[1:] != term[:-1]))
        counts[term[runs]] += np.diff(np.append(runs, len(term)))
        text = ((kept >> pair_shift) & np.uint64(_TEXT_LIMIT - 1)).astype(np.int32)
        del kept, block
        chunk[row : row + len(text)] = text
        body = own & ~sym
        out.tf_body[dest[body]] = count[body]
        out.tf_sym[dest[sym]] = np.minimum(count[sym], _SYM_LIMIT)
        row += len(text)
    out.chunk = chunk
    out.count = counts
    np.cumsum(counts[:-1], out=out.start[1:])
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
