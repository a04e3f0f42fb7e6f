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


class _RowBuffer:
    """Packed rows appended batch by batch into one growing array (no copy at the end)."""

    def __init__(self) -> None:
        self.array = np.zeros(1 << 16, dtype=np.uint64)
        self.n = 0

    def extend(self, rows: U64) -> None:
        need = self.n + len(rows)
        if need > len(self.array):
            grown = np.empty(max(need, 2 * len(self.array)), dtype=np.uint64)
            grown[: self.n] = self.array[: self.n]
            self.array = grown
        self.array[self.n : need] = rows
        self.n = need

    def view(self) -> U64:
        return self.array[: self.n]


class PostingRows:
    """Accumulates rows of the body field (0) and the symbol field (1)."""

    BLOCK: Final = 1 << 22
    """Rows unpacked at a time at the end: temporaries stay small (fresh memory is slow)."""

    def __init__(self) -> None:
        self._packed = (_RowBuffer(), _RowBuffer())
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
                self._packed[field].extend(packed)
                return
            self._wide = ([], [])
            for f in (0, 1):
                if self._packed[f].n:
                    self._wide[f].append(_unpack(self._packed[f].view()))
            self._packed = (_RowBuffer(), _RowBuffer())
        self._wide[field].append((term, chunk, count))

    def mark_terms(self, present: npt.NDArray[np.bool_]) -> None:
        """Set `present` at every term id that has a row."""
        for rows in self._packed:
            packed = rows.view()
            for b0 in range(0, len(packed), self.BLOCK):
                high = packed[b0 : b0 + self.BLOCK].view(np.uint32)[1::2]
                present[high >> np.uint32(_TERM_SHIFT - 32)] = True
        for wide in self._wide or ():
            for term, _, _ in wide:
                present[term] = True

    def finish(self, n_terms: int) -> Postings:
        """Group the rows by term id, a pair's two counts in one row."""
        if self._wide is not None:
            return self._finish_wide(n_terms)
        body, sym = self._packed[0].view(), self._packed[1].view()
        body.sort()
        sym.sort()
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
        for b0 in range(0, len(body), self.BLOCK):
            block = body[b0 : b0 + self.BLOCK]
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
        self._packed = (_RowBuffer(), _RowBuffer())
        return out

    def _finish_wide(self, n_terms: int) -> Postings:
        assert self._wide is not None
        body = _Field.sorted(self._wide[0])
        sym = _Field.sorted(self._wide[1])
        self._wide = None
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
        counts = body.term_counts(n_terms)
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

    def __init__(self, term: I64, chunk: I64, count: I64, keys: I64) -> None:
        self.term = term
        self.chunk = chunk.astype(np.int32)
        self.count = count
        self.keys = keys
        self.insert_at = np.zeros(0, dtype=np.int64)

    @classmethod
    def sorted(cls, wide: list[tuple[I64, I64, I64]]) -> _Field:
        empty = np.zeros(0, dtype=np.int64)
        term, chunk, count = (np.concatenate([empty] + [w[i] for w in wide]) for i in range(3))
        keys = (term << 32) | chunk
        order = np.argsort(keys)
        return cls(term[order], chunk[order], count[order], keys[order])

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

    def term_counts(self, n_terms: int) -> I64:
        """Rows per term id (rows are sorted by term)."""
        return np.bincount(self.term, minlength=n_terms).astype(np.int64)


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
