"""How a batch's rows become chunks: definitions laid out a nesting level at a time with
array operations (leading comments and all), the rest of a container under its own name,
long spans cut into windows, and text without a parser in windows cut at blank lines.

Rows are global here: the blobs' rows numbered through the batch (see `BatchLines`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Final

import numpy as np
import numpy.typing as npt

from worker.index.analysis.batch_text import BLANK, BLOCK_COMMENT, BatchLines
from worker.index.analysis.definitions import Definition, Definitions

I64 = npt.NDArray[np.int64]
Objects = npt.NDArray[np.object_]

MAX_CHUNK_LINES: Final = 150
"""A longer definition is cut into windows: one hit should not be a 2,000-line function."""
TEXT_WINDOW_LINES: Final = 40


class ChunkCollector:
    """Chunks as they are found, by global row (blobs' rows numbered through the batch)."""

    def __init__(self) -> None:
        self.start: list[int] = []
        self.end: list[int] = []
        self.symbol: list[str | None] = []
        self.kind: list[str] = []
        self.array_parts: list[tuple[I64, I64, Objects, Objects]] = []

    def add(self, start: int, end: int, symbol: str | None, kind: str) -> None:
        self.start.append(start)
        self.end.append(end)
        self.symbol.append(symbol)
        self.kind.append(kind)

    def add_arrays(self, start: I64, end: I64, symbol: Objects, kind: Objects) -> None:
        self.array_parts.append((start, end, symbol, kind))

    def ordered(self) -> tuple[I64, I64, list[str | None], list[str]]:
        """Every chunk, by start row (chunks never overlap)."""
        parts = self.array_parts
        start = np.concatenate([np.asarray(self.start, dtype=np.int64)] + [p[0] for p in parts])
        order = np.argsort(start, kind="stable")
        ends = np.concatenate([np.asarray(self.end, dtype=np.int64)] + [p[1] for p in parts])
        symbols = np.concatenate([_objects(self.symbol)] + [p[2] for p in parts])
        kinds = np.concatenate([_objects(self.kind)] + [p[3] for p in parts])
        return start[order], ends[order], symbols[order].tolist(), kinds[order].tolist()


def _objects(values: Sequence[object]) -> Objects:
    """The values as a one-dimensional object array (strings stay whole)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class DefinitionEmitter:
    """Emits one blob's chunks, nested definitions and all; rows are the blob's."""

    def __init__(
        self, out: ChunkCollector, lines: BatchLines, row0: int, prefixes: tuple[bytes, ...]
    ) -> None:
        self.out = out
        self.lines = lines
        self.row0 = row0
        self.prefixes = prefixes

    def own(self, lo: int, hi: int, symbol: str | None, kind: str) -> None:
        blank, row0, out = self.lines.blank, self.row0, self.out
        while lo <= hi and blank[row0 + lo]:
            lo += 1
        while hi >= lo and blank[row0 + hi]:
            hi -= 1
        while lo <= hi:
            end = min(hi, lo + MAX_CHUNK_LINES - 1)
            out.add(row0 + lo, row0 + end, symbol, kind)
            lo = end + 1
            while lo <= hi and blank[row0 + lo]:
                lo += 1

    def region(
        self, lo: int, hi: int, symbol: str | None, kind: str, kids: list[Definition]
    ) -> None:
        cursor = lo
        for child in kids:
            start = max(self._with_leading_comments(child.start_row, cursor), cursor)
            end = min(child.end_row, hi)
            if start > end:
                continue
            if start > cursor:
                self.own(cursor, start - 1, symbol, kind)
            self.region(start, end, child.symbol, child.kind, child.children)
            cursor = end + 1
        if cursor <= hi:
            self.own(cursor, hi, symbol, kind)

    def _with_leading_comments(self, row: int, bound: int) -> int:
        """The first row of the comments leading the definition on `row` (as `last_stop`)."""
        if not self.prefixes:
            return row
        bridges = BLOCK_COMMENT in self.prefixes
        while row - 1 >= bound:
            text = self.lines.line(self.row0 + row - 1).lstrip(BLANK)
            if not text and bridges and row - 2 >= bound:
                above = self.lines.line(self.row0 + row - 2).removesuffix(b"\r")
                if above.endswith(b"*/"):
                    row -= 1
                    continue
            if not text or not text.startswith(self.prefixes):
                break
            row -= 1
        return row


class BatchDefinitions:
    """The definitions of a batch's blobs, added a blob at a time; `arrays` puts them together.

    Each blob is a region of its own (the top level); its definitions keep their pre-order,
    and blobs follow one another, so all of them are in pre-order and in row order.
    """

    def __init__(self) -> None:
        self.first: list[int] = []
        self.last: list[int] = []
        self.found: list[Definitions] = []

    def add(self, first: int, last: int, found: Definitions) -> None:
        """A blob on rows [first, last] and its definitions."""
        self.first.append(first)
        self.last.append(last)
        self.found.append(found)

    def arrays(self) -> tuple[_DefinitionArrays, _Level]:
        """Every definition, rows global, parents numbered through the batch; the top level."""
        found = self.found
        counts = np.fromiter((len(f.symbol) for f in found), dtype=np.int64, count=len(found))
        base = np.zeros(len(found), dtype=np.int64)
        np.cumsum(counts[:-1], out=base[1:])
        first = np.asarray(self.first, dtype=np.int64)
        blob = np.repeat(np.arange(len(found), dtype=np.int64), counts)
        n = int(counts.sum())
        shift = first[blob]
        parent = np.concatenate([np.zeros(0, np.int64)] + [f.parent for f in found])
        root = parent < 0
        # A top-level definition's parent is n: the one past the end (no definition).
        parent = np.where(root, n, parent + base[blob])
        defs = _DefinitionArrays(
            start=np.concatenate([np.zeros(0, np.int64)] + [f.start_row for f in found]) + shift,
            end=np.concatenate([np.zeros(0, np.int64)] + [f.end_row for f in found]) + shift,
            symbol=_objects(list(chain.from_iterable(f.symbol for f in found))),
            kind=_objects(list(chain.from_iterable(f.kind for f in found))),
            parent=parent,
            n_kids=np.bincount(parent, minlength=n + 1)[:n],
        )
        top = _Level(
            first=first,
            last=np.asarray(self.last, dtype=np.int64),
            symbol=_objects([None] * len(found)),
            kind=_objects(["module"] * len(found)),
            counts=np.bincount(blob[root], minlength=len(found)),
            items=np.flatnonzero(root),
        )
        return defs, top


@dataclass(frozen=True, slots=True)
class _DefinitionArrays:
    """A batch's definitions in pre-order: global rows, names, the one each is nested in."""

    start: I64
    end: I64
    symbol: Objects
    kind: Objects
    parent: I64
    """The definition each is nested in; at top level, the number of definitions."""
    n_kids: I64


@dataclass(frozen=True, slots=True)
class _Level:
    """Row ranges whose definitions are chunked together (`DefinitionEmitter.region`, for many).

    A region's rows outside its definitions go to chunks under the region's own symbol and
    kind (`module` for a whole blob, the class for a class body). Rows are global; regions
    are disjoint and in row order, their items (definitions) grouped by region, in row order.
    """

    first: I64
    last: I64
    symbol: Objects
    kind: Objects
    counts: I64
    """How many items each region has."""
    items: I64


def region_chunks(
    out: ChunkCollector, lines: BatchLines, level: _Level, defs: _DefinitionArrays, last_stop: I64
) -> _Level:
    """Chunk one level of regions with array operations; returns the next level down.

    A definition's chunk starts at its leading comments (not before the end of the one
    before); a kept definition with nested ones becomes a region of the next level instead.
    """
    counts, first, last, items = level.counts, level.first, level.last, level.items
    region_of = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    start = defs.start[items]
    end = np.minimum(defs.end[items], last[region_of])
    # Where each definition may start: after every earlier one of its region.
    reach = np.maximum.accumulate(end + 1) if len(end) else end
    cursor = np.maximum(first[region_of], np.concatenate([[0], reach[:-1]]).astype(np.int64))
    lead = last_stop[np.maximum(start - 1, 0)] + 1
    begin = np.maximum(cursor, np.where(start > 0, np.minimum(lead, start), start))
    kept = np.flatnonzero(begin <= end)
    tail_from = first
    if len(end):
        offsets = np.minimum(np.concatenate([[0], np.cumsum(counts)[:-1]]), len(end))
        furthest = np.maximum.reduceat(np.append(end + 1, 0), offsets)
        tail_from = np.where(counts > 0, np.maximum(first, furthest), first)
    has_kids = defs.n_kids[items[kept]] > 0
    nested, leaves = kept[has_kids], kept[~has_kids]
    gap_region = region_of[kept]
    symbols = np.concatenate([level.symbol[gap_region], defs.symbol[items[leaves]], level.symbol])
    kinds = np.concatenate([level.kind[gap_region], defs.kind[items[leaves]], level.kind])
    raw_lo = np.concatenate([cursor[kept], begin[leaves], tail_from])
    raw_hi = np.concatenate([begin[kept] - 1, end[leaves], last])
    _emit_spans(out, lines, raw_lo, raw_hi, symbols=symbols, kinds=kinds)
    # The next level: the nested definitions of each region made here, in its order.
    regions = items[nested]
    rank = np.full(len(defs.parent) + 1, -1, dtype=np.int64)
    rank[regions] = np.arange(len(regions), dtype=np.int64)
    region_of_kid = rank[defs.parent]
    kids = np.flatnonzero(region_of_kid >= 0)
    return _Level(
        first=begin[nested],
        last=end[nested],
        symbol=defs.symbol[regions],
        kind=defs.kind[regions],
        counts=np.bincount(region_of_kid[kids], minlength=len(regions)),
        items=kids,
    )


def _emit_spans(
    out: ChunkCollector,
    lines: BatchLines,
    raw_lo: I64,
    raw_hi: I64,
    *,
    symbols: Objects,
    kinds: Objects,
) -> None:
    """Blank-trimmed chunks of row spans (empty ones skipped, long ones cut into windows)."""
    lo = lines.next_filled[np.clip(raw_lo, 0, len(lines.blank_array) - 1)]
    hi = lines.prev_filled[np.maximum(raw_hi, 0)]
    real = (raw_lo <= raw_hi) & (lo <= hi)
    long = real & (hi - lo >= MAX_CHUNK_LINES)
    short = np.flatnonzero(real & ~long)
    out.add_arrays(lo[short], hi[short], symbols[short], kinds[short])
    blank = lines.blank
    for i in np.flatnonzero(long).tolist():
        a, b = int(lo[i]), int(hi[i])
        while a <= b:
            stop = min(b, a + MAX_CHUNK_LINES - 1)
            out.add(a, stop, symbols[i], kinds[i])
            a = stop + 1
            while a <= b and blank[a]:
                a += 1


def text_windows(out: ChunkCollector, lines: BatchLines, row0: int, n: int) -> None:
    """Windows of about TEXT_WINDOW_LINES lines, cut at a blank line when there is one.

    Rows are global; the next filled row, the last blank one and the last filled one come
    from the batch's arrays, so a window costs a few lookups whatever its length.
    """
    next_filled, prev_blank, prev_filled = lines.next_filled, lines.prev_blank, lines.prev_filled
    half = TEXT_WINDOW_LINES // 2
    row, last_row = row0, row0 + n - 1
    while row <= last_row:
        row = int(next_filled[row])
        if row > last_row:
            break
        end = min(last_row, row + TEXT_WINDOW_LINES - 1)
        if end < last_row:
            cut = int(prev_blank[end])
            if cut >= row + half:
                end = cut - 1
        out.add(row, int(prev_filled[end]), None, "text")
        row = end + 1
