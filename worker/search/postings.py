"""Postings of a segment: (term, chunk, count) rows of two fields, grouped by term.

Each field's rows arrive once, at the end of a build, as blocks of (term, text, count) that
may repeat a pair (two raw tokens of a text with one term). `field_rows` sorts them and sums
the repeats; `merged_postings` puts a pair's body and symbol counts in one row. Groups are in
term id order (which is term order, see `worker.search.vocabulary`).

A row packs into one uint64 (term 24 bits, text 24, count 16) while ids fit, so the sort is
numpy's vectorised integer sort and the fields come out through 32- and 16-bit views of the
sorted rows; past those limits rows are kept as wide arrays (slower, same result).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
U64 = npt.NDArray[np.uint64]
G = TypeVar("G", bound=np.generic)

_TERM_SHIFT: Final = 40
_CHUNK_SHIFT: Final = 16
_TERM_LIMIT: Final = 1 << 24
_CHUNK_LIMIT: Final = 1 << 24
_COUNT_LIMIT: Final = 0xFFFF
_BLOCK: Final = 1 << 22
"""Rows unpacked at a time: temporaries stay small (fresh memory is slow)."""


class Postings:
    """The finished postings: rows grouped by term id (each group by chunk)."""

    def __init__(self, n_terms: int) -> None:
        self.start = np.zeros(n_terms, dtype=np.int64)
        self.count = np.zeros(n_terms, dtype=np.int64)
        self.chunk = np.zeros(0, dtype=np.int32)
        self.tf_body = np.zeros(0, dtype=np.uint16)
        self.tf_sym = np.zeros(0, dtype=np.uint8)


@dataclass(frozen=True, slots=True)
class FieldRows:
    """One field's rows, each (term, text) pair once, sorted by (term, text).

    `packed` when ids fit (see the module), else the wide `term`, `text`, `count` arrays.
    """

    packed: U64 | None = None
    term: I64 | None = None
    text: I64 | None = None
    count: I64 | None = None


def field_rows(
    blocks: Iterable[tuple[npt.NDArray[np.integer], ...]], total: int, n_terms: int, n_texts: int
) -> FieldRows:
    """Sort (term, text, count) rows given in blocks (`total` rows), summing repeated pairs."""
    if not (np.little_endian and n_terms <= _TERM_LIMIT and n_texts <= _CHUNK_LIMIT):
        return _wide_rows(blocks)
    packed = np.empty(total, dtype=np.uint64)
    at = 0
    for term, text, count in blocks:
        block = packed[at : at + len(term)]
        block[:] = term
        block <<= np.uint64(_TERM_SHIFT - _CHUNK_SHIFT)
        block |= text.astype(np.uint64)
        block <<= np.uint64(_CHUNK_SHIFT)
        block |= np.minimum(count, _COUNT_LIMIT).astype(np.uint64)
        at += len(term)
    packed.sort()
    return FieldRows(packed=_sum_repeats(packed))


def _sum_repeats(packed: U64) -> U64:
    """Sorted packed rows with each (term, text) pair once, its counts summed (clipped).

    Block by block, compacted in place: no temporaries of the full size.
    """
    count_mask = np.uint64(_COUNT_LIMIT)
    shift = np.uint64(_CHUNK_SHIFT)
    written = 0
    for b0 in range(0, len(packed), _BLOCK):
        block = packed[b0 : b0 + _BLOCK]
        pair = block >> shift
        new = np.ones(len(block), dtype=bool)
        np.not_equal(pair[1:], pair[:-1], out=new[1:])
        if written:
            new[0] = pair[0] != packed[written - 1] >> shift
        starts = np.flatnonzero(new)
        lead = int(starts[0]) if len(starts) else len(block)
        if lead:
            # The block starts inside the last pair written: its counts join that pair's.
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


def _wide_rows(blocks: Iterable[tuple[npt.NDArray[np.integer], ...]]) -> FieldRows:
    parts = list(blocks)
    empty = np.zeros(0, dtype=np.int64)
    term, text, count = (
        np.concatenate([empty] + [p[i] for p in parts]).astype(np.int64) for i in range(3)
    )
    keys = (term << 32) | text
    order = np.argsort(keys, kind="stable")
    keys, count = keys[order], count[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    starts = np.flatnonzero(first)
    sums = np.add.reduceat(count, starts) if len(starts) else count
    keys = keys[starts]
    return FieldRows(term=keys >> 32, text=keys & 0xFFFFFFFF, count=sums)


def merged_postings(body: FieldRows, sym: FieldRows, n_terms: int) -> Postings:
    """The postings of both fields: a pair's body and symbol counts share one row."""
    if body.packed is not None and sym.packed is not None:
        return _merged_packed(body.packed, sym.packed, n_terms)
    return _merged_wide(_Field.of(body), _Field.of(sym), n_terms)


def _merged_packed(body: U64, sym: U64, n_terms: int) -> Postings:
    # A symbol row whose pair has a body row folds into it; the others go in before the
    # first body row after them.
    query = sym & ~np.uint64(_COUNT_LIMIT)
    at = np.searchsorted(body, query)
    found = np.minimum(at, max(len(body) - 1, 0))
    hit = (at < len(body)) & (
        (body[found] >> np.uint64(_CHUNK_SHIFT)) == (query >> np.uint64(_CHUNK_SHIFT))
        if len(body)
        else np.zeros(len(sym), dtype=bool)
    )
    alone = np.flatnonzero(~hit)
    before = at[alone]
    total = len(body) + len(alone)
    out = Postings(n_terms)
    out.chunk = np.empty(total, dtype=np.int32)
    out.tf_body = np.zeros(total, dtype=np.uint16)
    out.tf_sym = np.zeros(total, dtype=np.uint8)
    counts = np.zeros(n_terms, dtype=np.int64)
    for b0 in range(0, len(body), _BLOCK):
        block = body[b0 : b0 + _BLOCK]
        term, chunk, count = _fields(block)
        rows = np.arange(b0, b0 + len(block), dtype=np.int64)
        dest = rows + np.searchsorted(before, rows, side="right")
        out.chunk[dest] = chunk
        out.tf_body[dest] = count
        runs = np.flatnonzero(np.append(True, term[1:] != term[:-1]))
        counts[term[runs]] += np.diff(np.append(runs, len(term)))
    sym_term, sym_chunk, sym_count = _fields(sym)
    folded = found[hit]
    out.tf_sym[folded + np.searchsorted(before, folded, side="right")] = np.minimum(
        sym_count[hit], 255
    )
    slots = before + np.arange(len(alone), dtype=np.int64)
    out.chunk[slots] = sym_chunk[alone]
    out.tf_sym[slots] = np.minimum(sym_count[alone], 255)
    counts += np.bincount(sym_term[alone].astype(np.int64), minlength=n_terms)
    out.count = counts
    np.cumsum(counts[:-1], out=out.start[1:])
    return out


def _merged_wide(body: _Field, sym: _Field, n_terms: int) -> Postings:
    at = body.find(sym)
    hit = at >= 0
    tf_sym = np.zeros(len(body.chunk), dtype=np.uint8)
    tf_sym[at[hit]] = np.minimum(sym.count[hit], 255)
    alone = np.flatnonzero(~hit)
    slots = sym.insert_at[alone] + np.arange(len(alone), dtype=np.int64)
    from_body = np.ones(len(body.chunk) + len(alone), dtype=bool)
    from_body[slots] = False
    out = Postings(n_terms)
    out.chunk = _merged(body.chunk, sym.chunk[alone], from_body, slots)
    out.tf_body = _merged(
        np.minimum(body.count, 65535).astype(np.uint16),
        np.zeros(len(alone), np.uint16),
        from_body,
        slots,
    )
    out.tf_sym = _merged(
        tf_sym, np.minimum(sym.count[alone], 255).astype(np.uint8), from_body, slots
    )
    counts = np.bincount(body.term, minlength=n_terms).astype(np.int64)
    counts += np.bincount(sym.term[alone], minlength=n_terms)
    out.count = counts
    np.cumsum(counts[:-1], out=out.start[1:])
    return out


def _fields(packed: U64) -> tuple[npt.NDArray[np.uint32], I32, npt.NDArray[np.uint16]]:
    """Term, chunk and count of packed rows, through their 32- and 16-bit halves."""
    halves = packed.view(np.uint32).reshape(-1, 2)
    chunk = halves[:, 0].copy()
    high = halves[:, 1].copy()
    chunk >>= np.uint32(_CHUNK_SHIFT)
    term = high >> np.uint32(_TERM_SHIFT - 32)
    high &= np.uint32(0xFF)
    high <<= np.uint32(32 - _CHUNK_SHIFT)
    chunk |= high
    return term, chunk.view(np.int32), packed.view(np.uint16)[0::4].copy()


class _Field:
    """One field's wide rows sorted by (term, chunk)."""

    def __init__(self, term: I64, chunk: I64, count: I64) -> None:
        self.term = term
        self.chunk = chunk.astype(np.int32)
        self.count = count
        self.keys = (term << 32) | chunk
        self.insert_at = np.zeros(0, dtype=np.int64)

    @classmethod
    def of(cls, rows: FieldRows) -> _Field:
        if rows.packed is not None:
            p = rows.packed
            return cls(
                (p >> np.uint64(_TERM_SHIFT)).astype(np.int64),
                ((p >> np.uint64(_CHUNK_SHIFT)) & np.uint64(_CHUNK_LIMIT - 1)).astype(np.int64),
                (p & np.uint64(_COUNT_LIMIT)).astype(np.int64),
            )
        assert rows.term is not None
        assert rows.text is not None
        assert rows.count is not None
        return cls(rows.term, rows.text, rows.count)

    def find(self, other: _Field) -> I64:
        """For each row of `other`, the row of this field with its (term, chunk), or -1.

        Sets `other.insert_at`: where a row of `other` would go among this field's rows.
        """
        at = np.searchsorted(self.keys, other.keys)
        found = np.minimum(at, max(len(self.keys) - 1, 0))
        same = (
            self.keys[found] == other.keys
            if len(self.keys)
            else np.zeros(len(other.keys), dtype=bool)
        )
        other.insert_at = at.astype(np.int64)
        return np.where(same & (at < len(self.keys)), found, -1).astype(np.int64)


def _merged(
    body: npt.NDArray[G], extra: npt.NDArray[Any], from_body: npt.NDArray[np.bool_], slots: I64
) -> npt.NDArray[G]:
    """`body` with `extra` placed at `slots` (the positions `from_body` leaves out)."""
    out = np.empty(len(from_body), dtype=body.dtype)
    out[from_body] = body
    out[slots] = extra
    return out
