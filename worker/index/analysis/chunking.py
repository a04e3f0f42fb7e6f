"""Split blobs into chunks: definitions from a real parser, line windows for other text.

Chunks partition a blob's non-blank lines: every line belongs to at most one chunk, each
chunk is a contiguous, blank-trimmed span. A definition's chunk starts at its leading doc
comments and decorators; a container (class, impl, namespace) keeps the lines that are not
in a nested definition (its head, its attributes). Spans are 0-based rows here; lines are
split on b"\\n", the same rule the excerpt code uses.

Blobs are chunked a batch at a time: line starts and blank lines come from numpy passes over
the whole batch, C, C++ and Python files are outlined together (see `outline`), the batch's
definitions (see `definitions`) are laid out one nesting level at a time with array
operations, and Python touches each definition and each window, never each line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Final

import numpy as np
import numpy.typing as npt

from worker.index.analysis.definitions import (
    NO_DEFINITIONS,
    Definition,
    Definitions,
    definitions,
    tree,
)
from worker.index.analysis.grammars import PARSED_LANGUAGES, comment_prefixes
from worker.index.analysis.lexers import BatchLexemes, moved_to_batch
from worker.index.analysis.outline import Outline, c_outlines
from worker.index.analysis.python_outline import python_outlines

MAX_CHUNK_LINES: Final = 150
"""A longer definition is cut into windows: one hit should not be a 2,000-line function."""
TEXT_WINDOW_LINES: Final = 40
MINIFIED_LINE_BYTES: Final = 1000
"""Lines longer than this on average make a file minified code, chunked as text.

Its definitions would all start on its few lines, and a chunk is made of whole lines, so a
parse could not split it any finer; it would only cost: Django's three minified scripts
(240 KB, two or three lines each) took 0.07 s to parse, 4% of the build. The longest lines
of written code average about 150 bytes (Linux's register tables), minified code 9 KB.
"""
_BLANK: Final = b" \t\r\f\v"
_BLOCK_COMMENT: Final = b"/*"
_BLANK_TABLE = np.zeros(256, dtype=bool)
_BLANK_TABLE[list(_BLANK)] = True
_OUTLINERS: Final = {"c": c_outlines, "python": python_outlines}
"""The outliner of each grammar family: C's reads C and C++."""
_FAMILY_LANGUAGES: Final = {"c": frozenset({"c", "cpp"}), "python": frozenset({"python"})}

I64 = npt.NDArray[np.int64]
Objects = npt.NDArray[np.object_]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A span of rows (0-based, inclusive) with the definition it belongs to."""

    start_row: int
    end_row: int
    symbol: str | None
    kind: str


@dataclass(slots=True)
class ChunkBatch:
    """The chunks of a batch of blobs, in blob then row order, and each blob's line count."""

    blob: I64
    start_row: I64
    end_row: I64
    symbol: list[str | None]
    kind: list[str]
    n_lines: list[int]
    text: bytes
    """The blobs joined by b"\\n": each chunk's text is a slice of it."""
    line_starts: I64
    """Where each line of `text` starts."""
    offsets: I64
    """Where each chunk starts in `text`; its text runs to the next one's start (the lines
    between are blank)."""
    grammars: list[str | None]
    """The grammar each blob was parsed with; None if it was not (minified code is not)."""
    definitions: list[Definitions]
    """Each blob's definitions (none if it was not parsed)."""
    lexemes: dict[str, BatchLexemes]
    """The comments, strings and directives the outliners read, by lexer ("c", "python")."""


class _Collector:
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


def line_starts(data: bytes) -> I64:
    """Byte offset where each line starts; lines are split on b"\\n" (so n_lines = count + 1)."""
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    starts = np.empty(len(newlines) + 1, dtype=np.int64)
    starts[0] = 0
    starts[1:] = newlines + 1
    return starts


class _Lines:
    """Rows of the blobs of a batch: text and blankness by global row number.

    Arrays for the array code; Python lists (faster to index one at a time) only when the
    per-row code (nested definitions, long spans) asks for them.
    """

    __slots__ = (
        "_blank_list",
        "_bounds",
        "a",
        "blank_array",
        "data",
        "end_array",
        "first",
        "next_filled",
        "prev_blank",
        "prev_filled",
        "start_array",
    )

    def __init__(self, data: bytes) -> None:
        from worker.index.analysis.line_kernels import line_rows

        a = np.frombuffer(data, dtype=np.uint8)
        self.a = a
        self.data = data
        (
            self.start_array,
            self.end_array,
            self.first,
            self.blank_array,
            self.next_filled,
            self.prev_filled,
            self.prev_blank,
        ) = line_rows(a, np.flatnonzero(a == 10), _BLANK_TABLE)
        self._blank_list: list[bool] | None = None
        self._bounds: tuple[list[int], list[int]] | None = None

    @property
    def blank(self) -> list[bool]:
        """Whether each row is blank, as a list."""
        if self._blank_list is None:
            self._blank_list = self.blank_array.tolist()
        return self._blank_list

    def line(self, row: int) -> bytes:
        if self._bounds is None:
            self._bounds = (self.start_array.tolist(), self.end_array.tolist())
        starts, ends = self._bounds
        return self.data[starts[row] : ends[row]]

    def last_stop(self, prefixes: tuple[bytes, ...]) -> I64:
        """For each row, the last row at or before it that would stop a run of leading comments.

        A row stops it when it does not start (after blanks) with a prefix (its first two
        bytes), or when it is blank, except one blank row between the end of a block comment
        and a filled row: a doc comment written a blank line above its definition (Express's
        style) still leads it.
        """
        from worker.index.analysis.line_kernels import last_stops

        last: I64 = last_stops(
            self.a,
            self.start_array,
            self.end_array,
            self.first,
            self.blank_array,
            np.asarray([p[0] for p in prefixes], dtype=np.int64),
            np.asarray([p[1] if len(p) > 1 else -1 for p in prefixes], dtype=np.int64),
            _BLOCK_COMMENT in prefixes,
        )
        return last


def _is_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _as_utf8(data: bytes) -> bytes:
    """The blob as valid UTF-8 for the parser: non-UTF-8 text is read as latin-1.

    Re-encoding never adds or removes a b"\n", so rows stay those of the original blob.
    """
    return data if _is_utf8(data) else data.decode("latin-1").encode("utf-8")


class _Emitter:
    """Emits one blob's chunks, nested definitions and all; rows are the blob's."""

    def __init__(
        self, out: _Collector, lines: _Lines, row0: int, prefixes: tuple[bytes, ...]
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
        bridges = _BLOCK_COMMENT in self.prefixes
        while row - 1 >= bound:
            text = self.lines.line(self.row0 + row - 1).lstrip(_BLANK)
            if not text and bridges and row - 2 >= bound:
                above = self.lines.line(self.row0 + row - 2).removesuffix(b"\r")
                if above.endswith(b"*/"):
                    row -= 1
                    continue
            if not text or not text.startswith(self.prefixes):
                break
            row -= 1
        return row


class _BatchDefinitions:
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
    """Row ranges whose definitions are chunked together (`_Emitter.region`, for many).

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


def _region_chunks(
    out: _Collector, lines: _Lines, level: _Level, defs: _DefinitionArrays, last_stop: I64
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
    out: _Collector,
    lines: _Lines,
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


def _text_windows(out: _Collector, lines: _Lines, row0: int, n: int) -> None:
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


def _outlines(
    datas: Sequence[bytes], languages: Sequence[str | None], file_starts: I64
) -> tuple[dict[int, Outline | None], dict[str, BatchLexemes]]:
    """The outline (or None: parse whole) of every blob an outliner takes, by blob index;
    and the lexemes each outliner read, by grammar family, as [start, end) in the batch's
    text (where the blobs start at `file_starts`).

    Only valid UTF-8 gets an outline (the parser reads other text re-encoded), but every
    member's lexemes are kept: the call sites are read from the raw bytes.
    """
    outlines: dict[int, Outline | None] = {}
    lexemes: dict[str, BatchLexemes] = {}
    for name, outliner in _OUTLINERS.items():
        members = [i for i, language in enumerate(languages) if language in _FAMILY_LANGUAGES[name]]
        if not members:
            continue
        outlined = outliner([datas[i] for i in members])
        outlines.update(
            (i, outline)
            for i, outline in zip(members, outlined.outlines, strict=True)
            if _is_utf8(datas[i])
        )
        sizes = np.fromiter((len(datas[i]) for i in members), dtype=np.int64, count=len(members))
        own_starts = np.zeros(len(members), dtype=np.int64)
        np.cumsum(sizes[:-1] + 1, out=own_starts[1:])
        lexemes[name] = moved_to_batch(
            np.asarray(members, dtype=np.int64),
            own_starts,
            file_starts,
            outlined.lexeme_starts,
            outlined.lexeme_ends,
        )
    return outlines, lexemes


def chunk_batch(datas: Sequence[bytes], languages: Sequence[str | None]) -> ChunkBatch:
    """The chunks of a batch of (text) blobs, analysed under the given languages.

    A parsed language gets definition chunks plus `module` chunks for top-level code between
    them; anything else, and minified code, gets line windows.
    """
    lines = _Lines(b"\n".join(datas))
    out = _Collector()
    # Each blob starts a row: the one its offset in the joined text starts.
    sizes = np.fromiter(map(len, datas), dtype=np.int64, count=len(datas)) + 1
    offsets = np.zeros(len(datas), dtype=np.int64)
    np.cumsum(sizes[:-1], out=offsets[1:])
    row0s = np.searchsorted(lines.start_array, offsets)
    n_lines: list[int] = np.diff(np.append(row0s, len(lines.start_array))).tolist()
    first_rows: list[int] = row0s.tolist()
    languages = [
        None if len(data) > MINIFIED_LINE_BYTES * n else language
        for data, language, n in zip(datas, languages, n_lines, strict=True)
    ]
    outlines, lexemes = _outlines(datas, languages, offsets)
    groups: dict[tuple[bytes, ...], _BatchDefinitions] = {}
    found_all: list[Definitions] = []
    for i, (data, language) in enumerate(zip(datas, languages, strict=True)):
        n, row0 = n_lines[i], first_rows[i]
        if language not in PARSED_LANGUAGES:
            _text_windows(out, lines, row0, n)
            found_all.append(NO_DEFINITIONS)
            continue
        assert language is not None
        if i in outlines:
            found = definitions(data, language, outlines[i])
        else:
            found = definitions(_as_utf8(data), language, None)
        found_all.append(found)
        prefixes = comment_prefixes(language)
        if any(len(p) > 2 for p in prefixes):
            _Emitter(out, lines, row0, prefixes).region(0, n - 1, None, "module", tree(found))
            continue
        group = groups.setdefault(prefixes, _BatchDefinitions())
        group.add(row0, row0 + n - 1, found)
    for prefixes, group in groups.items():
        last_stop = lines.last_stop(prefixes)
        defs, level = group.arrays()
        while len(level.first):
            level = _region_chunks(out, lines, level, defs, last_stop)
    start, end, symbol, kind = out.ordered()
    blob = np.searchsorted(row0s, start, side="right") - 1
    return ChunkBatch(
        blob=blob,
        start_row=start - row0s[blob],
        end_row=end - row0s[blob],
        symbol=symbol,
        kind=kind,
        n_lines=n_lines,
        text=lines.data,
        line_starts=lines.start_array,
        offsets=lines.start_array[start],
        grammars=[g if g in PARSED_LANGUAGES else None for g in languages],
        definitions=found_all,
        lexemes=lexemes,
    )


def chunk_blob(data: bytes, language: str | None) -> tuple[list[Chunk], I64]:
    """The chunks of one (text) blob and its line starts."""
    batch = chunk_batch([data], [language])
    chunks = [
        Chunk(s, e, sym, k)
        for s, e, sym, k in zip(
            batch.start_row.tolist(), batch.end_row.tolist(), batch.symbol, batch.kind, strict=True
        )
    ]
    return chunks, line_starts(data)
