"""Postings of a segment as a build adds them: (term, chunk, count) rows of two fields.

Rows arrive a batch at a time, each batch's chunks after the previous batch's. At the end
they are grouped by term id, each group by chunk, and a chunk's body and symbol counts
share one row. Groups are in term id order, not term order: the terms table, sorted by
term, points at each group with its start and count.

A row packs into one uint64 (term 24 bits, chunk 24, count 16) while ids fit, so the final
sort is numpy's vectorised integer sort and the fields come out through 32- and 16-bit
views of the sorted rows; past those limits rows are kept as wide arrays (slower, same
result).
"""

from __future__ import annotations

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


class Postings:
    """The finished postings: rows grouped by term id (each group by chunk)."""

    def __init__(self, n_terms: int) -> None:
        self.start = np.zeros(n_terms, dtype=np.int64)
        self.count = np.zeros(n_terms, dtype=np.int64)
        self.chunk = np.zeros(0, dtype=np.int32)
        self.tf_body = np.zeros(0, dtype=np.uint16)
        self.tf_sym = np.zeros(0, dtype=np.uint8)


class PostingRows:
    """Accumulates rows of the body field (0) and the symbol field (1)."""

    def __init__(self) -> None:
        self._packed: tuple[list[U64], list[U64]] = ([], [])
        self._wide: tuple[list[tuple[I64, I64, I64]], list[tuple[I64, I64, I64]]] | None = None

    def add(self, term: I64, chunk: I64, field: int, count: I64) -> None:
        """Rows of one field; a (term, chunk) pair at most once per field."""
        count = np.minimum(count, _COUNT_LIMIT)
        if self._wide is None:
            fits = np.little_endian and int(term.max(initial=0)) < _TERM_LIMIT
            if fits and int(chunk.max(initial=0)) < _CHUNK_LIMIT:
                packed = term.astype(np.uint64) << np.uint64(_TERM_SHIFT)
                packed |= chunk.astype(np.uint64) << np.uint64(_CHUNK_SHIFT)
                packed |= count.astype(np.uint64)
                self._packed[field].append(packed)
                return
            self._wide = ([], [])
            for f in (0, 1):
                self._wide[f].extend(_unpack(p) for p in self._packed[f])
            self._packed = ([], [])
        self._wide[field].append((term, chunk, count))

    def mark_terms(self, present: npt.NDArray[np.bool_]) -> None:
        """Set `present` at every term id that has a row."""
        for rows in self._packed:
            for packed in rows:
                present[packed.view(np.uint32)[1::2] >> np.uint32(_TERM_SHIFT - 32)] = True
        for wide in self._wide or ():
            for term, _, _ in wide:
                present[term] = True

    def finish(self, n_terms: int) -> Postings:
        """Group the rows by term id, a pair's two counts in one row."""
        body = _Field.sorted(self._packed[0], None if self._wide is None else self._wide[0])
        sym = _Field.sorted(self._packed[1], None if self._wide is None else self._wide[1])
        self._packed, self._wide = ([], []), None
        # A symbol row whose pair has a body row folds into it; the others are inserted.
        at = body.find(sym)
        hit = at >= 0
        tf_sym = np.zeros(len(body.chunk), dtype=np.uint8)
        tf_sym[at[hit]] = np.minimum(sym.count[hit], 255)
        alone = np.flatnonzero(~hit)
        # Symbol-only rows go in before the first body row after them (np.insert would sort
        # the positions again and build the same mask three times).
        total = len(body.chunk) + len(alone)
        slots = sym.insert_at[alone] + np.arange(len(alone), dtype=np.int64)
        from_body = np.ones(total, dtype=bool)
        from_body[slots] = False
        out = Postings(n_terms)
        out.chunk = _merged(body.chunk, sym.chunk[alone], from_body, slots)
        out.tf_body = _merged(
            body.count.astype(np.uint16, copy=False),
            np.zeros(len(alone), np.uint16),
            from_body,
            slots,
        )
        out.tf_sym = _merged(
            tf_sym, np.minimum(sym.count[alone], 255).astype(np.uint8), from_body, slots
        )
        counts = body.term_counts(n_terms)
        counts += np.bincount(sym.term[alone], minlength=n_terms)
        out.count = counts
        np.cumsum(counts[:-1], out=out.start[1:])
        return out


class _Field:
    """One field's rows sorted by (term, chunk): term, chunk, count, and a search key."""

    def __init__(
        self, term: npt.NDArray[np.integer], chunk: I32, count: npt.NDArray[np.integer]
    ) -> None:
        self.term = term
        self.chunk = chunk
        self.count = count
        self.packed: U64 | None = None
        self.keys: I64 | None = None
        self.insert_at = np.zeros(0, dtype=np.int64)

    @classmethod
    def sorted(cls, packed_parts: list[U64], wide: list[tuple[I64, I64, I64]] | None) -> _Field:
        if wide is None:
            packed = np.concatenate(packed_parts) if packed_parts else np.zeros(0, np.uint64)
            packed.sort()
            # Contiguous copies of the 32-bit halves, then in-place ops: strided ufuncs and
            # fresh temporaries of this size are several times slower.
            halves = packed.view(np.uint32).reshape(-1, 2)
            chunk = halves[:, 0].copy()
            high = halves[:, 1].copy()
            chunk >>= np.uint32(_CHUNK_SHIFT)
            term = high >> np.uint32(_TERM_SHIFT - 32)
            high &= np.uint32(0xFF)
            high <<= np.uint32(32 - _CHUNK_SHIFT)
            chunk |= high
            del high
            field = cls(term, chunk.view(np.int32), packed.view(np.uint16)[0::4].copy())
            field.packed = packed
            return field
        empty = np.zeros(0, dtype=np.int64)
        w_term, w_chunk, w_count = (
            np.concatenate([empty] + [w[i] for w in wide]) for i in range(3)
        )
        keys = (w_term << 32) | w_chunk
        order = np.argsort(keys)
        wide_field = cls(w_term[order], w_chunk[order].astype(np.int32), w_count[order])
        wide_field.keys = keys[order]
        return wide_field

    def _search_keys(self) -> npt.NDArray[np.integer]:
        if self.packed is not None:
            return self.packed >> np.uint64(_CHUNK_SHIFT)
        assert self.keys is not None
        return self.keys

    def find(self, other: _Field) -> I64:
        """For each row of `other`, the row of this field with its (term, chunk), or -1.

        Sets `other.insert_at`: where a row of `other` would go among this field's rows.
        """
        if self.packed is not None and other.packed is not None:
            # Search the packed rows directly: no 64-bit copy of this (large) field.
            query = other.packed & ~np.uint64(_COUNT_LIMIT)
            at = np.searchsorted(self.packed, query)
            found = np.minimum(at, max(len(self.packed) - 1, 0))
            same = (
                (self.packed[found] >> np.uint64(_CHUNK_SHIFT))
                == (query >> np.uint64(_CHUNK_SHIFT))
                if len(self.packed)
                else np.zeros(len(query), dtype=bool)
            )
        else:
            mine = self._search_keys().astype(np.int64)
            theirs = other._search_keys().astype(np.int64)
            at = np.searchsorted(mine, theirs)
            found = np.minimum(at, max(len(mine) - 1, 0))
            same = mine[found] == theirs if len(mine) else np.zeros(len(theirs), dtype=bool)
        other.insert_at = at.astype(np.int64)
        return np.where(same & (at < len(self.chunk)), found, -1).astype(np.int64)

    def term_counts(self, n_terms: int) -> I64:
        """Rows per term id (rows are sorted by term)."""
        if not len(self.term):
            return np.zeros(n_terms, dtype=np.int64)
        first = np.flatnonzero(self.term[1:] != self.term[:-1]) + 1
        bounds = np.concatenate([[0], first, [len(self.term)]])
        counts = np.zeros(n_terms, dtype=np.int64)
        counts[self.term[bounds[:-1]]] = np.diff(bounds)
        return counts


def _merged(
    body: npt.NDArray[G], extra: npt.NDArray[Any], from_body: npt.NDArray[np.bool_], slots: I64
) -> npt.NDArray[G]:
    """`body` with `extra` placed at `slots` (the positions `from_body` leaves out)."""
    out = np.empty(len(from_body), dtype=body.dtype)
    out[from_body] = body
    out[slots] = extra
    return out


def _unpack(packed: U64) -> tuple[I64, I64, I64]:
    return (
        (packed >> np.uint64(_TERM_SHIFT)).astype(np.int64),
        ((packed >> np.uint64(_CHUNK_SHIFT)) & np.uint64(_CHUNK_LIMIT - 1)).astype(np.int64),
        (packed & np.uint64(_COUNT_LIMIT)).astype(np.int64),
    )
