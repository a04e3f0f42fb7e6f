"""Split blobs into chunks: definitions from a real parser, line windows for other text.

Chunks partition a blob's non-blank lines: every line belongs to at most one chunk, each
chunk is a contiguous, blank-trimmed span. A definition's chunk starts at its leading doc
comments and decorators; a container (class, impl, namespace) keeps the lines that are not
in a nested definition (its head, its attributes). Spans are 0-based rows here; lines are
split on b"\\n", the same rule the excerpt code uses.

Blobs are chunked a batch at a time: line starts and blank lines come from numpy passes over
the whole batch, C, C++ and Python files are outlined together (see `worker.search.outline`),
and Python touches each definition and each window, never each line.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt
import tree_sitter

from worker.search.languages import PARSED_LANGUAGES, comment_prefixes, grammar
from worker.search.outline import Outline, c_outlines, python_outlines

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
MAX_NESTING: Final = 8
"""Deeper definitions stay inside their parent's chunk (generated code nests absurdly)."""
_BLANK: Final = b" \t\r\f\v"
_BLANK_TABLE = np.zeros(256, dtype=bool)
_BLANK_TABLE[list(_BLANK)] = True
CONTAINER_KINDS: Final = frozenset(
    {
        "class_definition",
        "class_declaration",
        "abstract_class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "module",
        "impl_item",
        "trait_item",
        "mod_item",
        "class_specifier",
        "struct_specifier",
        "namespace_definition",
    }
)
"""Definitions whose nested definitions get chunks of their own; a function keeps its closures."""
_OUTLINERS: Final = {"c": c_outlines, "cpp": c_outlines, "python": python_outlines}
_REPARSE_ON_ERROR: Final = frozenset({"python"})
"""Outlines whose parse is checked: a Python outline with a syntax error is parsed whole again.

C and C++ files have errors on their own (macros the parser cannot know), so the check would
throw away most outlines; their outlines were compared with whole parses instead.
"""

I64 = npt.NDArray[np.int64]


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
    offsets: I64
    """Where each chunk starts in `text`; its text runs to the next one's start (the lines
    between are blank)."""


class _Collector:
    """Chunks as they are found, by global row (blobs' rows numbered through the batch)."""

    def __init__(self) -> None:
        self.start: list[int] = []
        self.end: list[int] = []
        self.symbol: list[str | None] = []
        self.kind: list[str] = []
        self.array_parts: list[tuple[I64, I64, list[str | None], list[str]]] = []

    def add(self, start: int, end: int, symbol: str | None, kind: str) -> None:
        self.start.append(start)
        self.end.append(end)
        self.symbol.append(symbol)
        self.kind.append(kind)

    def add_arrays(self, start: I64, end: I64, symbol: list[str | None], kind: list[str]) -> None:
        self.array_parts.append((start, end, symbol, kind))

    def ordered(self) -> tuple[I64, I64, list[str | None], list[str]]:
        """Every chunk, by start row (chunks never overlap)."""
        starts = [np.asarray(self.start, dtype=np.int64)] + [p[0] for p in self.array_parts]
        ends = [np.asarray(self.end, dtype=np.int64)] + [p[1] for p in self.array_parts]
        symbols = self.symbol + [x for p in self.array_parts for x in p[2]]
        kinds = self.kind + [x for p in self.array_parts for x in p[3]]
        start = np.concatenate(starts)
        order = np.argsort(start, kind="stable")
        order_list = order.tolist()
        return (
            start[order],
            np.concatenate(ends)[order],
            [symbols[i] for i in order_list],
            [kinds[i] for i in order_list],
        )


@dataclass(slots=True)
class _Definition:
    start_row: int
    end_row: int
    start_byte: int
    end_byte: int
    symbol: str
    kind: str
    children: list[_Definition] = field(default_factory=list)


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
        a = np.frombuffer(data, dtype=np.uint8)
        newlines = np.flatnonzero(a == 10)
        starts = np.empty(len(newlines) + 1, dtype=np.int64)
        starts[0] = 0
        starts[1:] = newlines + 1
        ends = np.append(newlines, len(a))
        first = starts.copy()
        todo = np.flatnonzero(first < ends)
        while len(todo):
            todo = todo[_BLANK_TABLE[a[first[todo]]]]
            first[todo] += 1
            todo = todo[first[todo] < ends[todo]]
        blank = first >= ends
        rows = np.arange(len(starts), dtype=np.int64)
        self.a = a
        self.data = data
        self.first = first
        self.start_array = starts
        self.end_array = ends
        self.blank_array = blank
        self.next_filled = np.minimum.accumulate(np.where(blank, len(rows), rows)[::-1])[::-1]
        self.prev_filled = np.maximum.accumulate(np.where(blank, -1, rows))
        self.prev_blank = np.maximum.accumulate(np.where(blank, rows, -1))
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

        A row stops it when it is blank or does not start (after blanks) with a prefix.
        """
        a, first, ends = self.a, self.first, self.end_array
        n = len(a)
        b0 = a[np.minimum(first, max(n - 1, 0))] if n else np.zeros(len(first), np.uint8)
        b1 = np.where(first + 1 < ends, a[np.minimum(first + 1, max(n - 1, 0))], 0) if n else b0
        commented = np.zeros(len(first), dtype=bool)
        for prefix in prefixes:
            match = b0 == prefix[0]
            if len(prefix) > 1:
                match &= b1 == prefix[1]
            commented |= match
        stop = self.blank_array | ~commented
        rows = np.arange(len(first), dtype=np.int64)
        last: I64 = np.maximum.accumulate(np.where(stop, rows, -1))
        return last


_parsers = threading.local()


def _parser(language: str) -> tree_sitter.Parser:
    cache: dict[str, tree_sitter.Parser] | None = getattr(_parsers, "cache", None)
    if cache is None:
        cache = {}
        _parsers.cache = cache
    parser = cache.get(language)
    if parser is None:
        parser = tree_sitter.Parser(grammar(language).language)
        cache[language] = parser
    return parser


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


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


def _definitions(data: bytes, language: str, outline: Outline | None) -> list[_Definition]:
    """Top-level definitions with nested children, qualified names filled in.

    The parser reads the outline when there is one; rows map back through its row map. A
    node ending with a newline (at column 0) ends on the row before. Rows are the parser's
    own points (it counts b"\\n" as this module does), not recounted from byte offsets.
    """
    text = data if outline is None else outline.text
    parser = _parser(language)
    tree = parser.parse(text)
    if outline is not None and language in _REPARSE_ON_ERROR and tree.root_node.has_error:
        outline, text = None, data
        tree = parser.parse(text)
    matches = tree_sitter.QueryCursor(grammar(language).query).matches(tree.root_node)
    found: dict[tuple[int, int], tuple[str, str, int, int]] = {}
    for _, captures in matches:
        node = captures["def"][0]
        key = (node.start_byte, node.end_byte)
        if key in found:
            continue
        name_node = captures["name"][0]
        symbol = _decode(text[name_node.start_byte : name_node.end_byte])
        receiver = captures.get("receiver")
        if receiver:
            symbol = _decode(text[receiver[0].start_byte : receiver[0].end_byte]) + "." + symbol
        first, (last, column) = node.start_point[0], node.end_point
        # Ends right after a newline: the node's last row is the one before.
        if column == 0 and last > first:
            last -= 1
        found[key] = (symbol, node.type, first, last)
    if not found:
        return []
    spans = sorted(found, key=lambda k: (k[0], -k[1]))
    rows = np.asarray([found[k][2:] for k in spans], dtype=np.int64).reshape(-1, 2)
    start_row, end_row = rows[:, 0], rows[:, 1]
    if outline is not None:
        start_row, end_row = outline.rows[start_row], outline.rows[end_row]
    roots: list[_Definition] = []
    stack: list[tuple[_Definition, int]] = []
    for (start_byte, end_byte), first, last in zip(
        spans, start_row.tolist(), end_row.tolist(), strict=True
    ):
        symbol, kind = found[start_byte, end_byte][:2]
        while stack and stack[-1][0].end_byte <= start_byte:
            stack.pop()
        if not stack:
            d = _Definition(first, last, start_byte, end_byte, symbol, kind)
            roots.append(d)
            stack.append((d, 1))
            continue
        parent, depth = stack[-1]
        if depth >= MAX_NESTING or parent.kind not in CONTAINER_KINDS:
            continue
        d = _Definition(first, last, start_byte, end_byte, f"{parent.symbol}.{symbol}", kind)
        parent.children.append(d)
        stack.append((d, depth + 1))
    return roots


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
        self, lo: int, hi: int, symbol: str | None, kind: str, kids: list[_Definition]
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
        if not self.prefixes:
            return row
        while row - 1 >= bound:
            text = self.lines.line(self.row0 + row - 1).lstrip(_BLANK)
            if not text or not text.startswith(self.prefixes):
                break
            row -= 1
        return row


@dataclass(slots=True)
class _Regions:
    """Row ranges whose definitions are chunked together (`_Emitter.region`, for many).

    A region's rows outside its definitions go to chunks under the region's own symbol and
    kind (`module` for a whole blob, the class for a class body). Rows are global; regions
    are disjoint and in row order, each one's items in row order.
    """

    first: list[int] = field(default_factory=list)
    last: list[int] = field(default_factory=list)
    symbol: list[str | None] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    n_items: list[int] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    item_symbol: list[str] = field(default_factory=list)
    item_kind: list[str] = field(default_factory=list)
    kids: list[list[_Definition]] = field(default_factory=list)
    row0: list[int] = field(default_factory=list)
    """Per item, the first row of its blob (its children's rows count from there)."""

    def add(
        self,
        first: int,
        last: int,
        symbol: str | None,
        kind: str,
        *,
        items: list[_Definition],
        row0: int,
    ) -> None:
        """A region and its definitions (rows of the definitions relative to `row0`)."""
        self.first.append(first)
        self.last.append(last)
        self.symbol.append(symbol)
        self.kind.append(kind)
        self.n_items.append(len(items))
        self.start.extend(row0 + d.start_row for d in items)
        self.end.extend(row0 + d.end_row for d in items)
        self.item_symbol.extend(d.symbol for d in items)
        self.item_kind.extend(d.kind for d in items)
        self.kids.extend(d.children for d in items)
        self.row0.extend([row0] * len(items))


def _region_chunks(out: _Collector, lines: _Lines, regions: _Regions, last_stop: I64) -> _Regions:
    """Chunk one level of regions with array operations; returns the next level down.

    A definition's chunk starts at its leading comments (not before the end of the one
    before); a definition with children becomes a region of the next level instead.
    """
    counts = np.asarray(regions.n_items, dtype=np.int64)
    region_of = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    first = np.asarray(regions.first, dtype=np.int64)
    last = np.asarray(regions.last, dtype=np.int64)
    start = np.asarray(regions.start, dtype=np.int64)
    end = np.minimum(np.asarray(regions.end, dtype=np.int64), last[region_of])
    # Where each definition may start: after every earlier one of its region.
    reach = np.maximum.accumulate(end + 1) if len(end) else end
    cursor = np.maximum(first[region_of], np.concatenate([[0], reach[:-1]]).astype(np.int64))
    lead = last_stop[np.maximum(start - 1, 0)] + 1
    begin = np.maximum(cursor, np.where(start > 0, np.minimum(lead, start), start))
    kept = begin <= end
    tail_from = first
    if len(end):
        offsets = np.minimum(np.concatenate([[0], np.cumsum(counts)[:-1]]), len(end))
        furthest = np.maximum.reduceat(np.append(end + 1, 0), offsets)
        tail_from = np.where(counts > 0, np.maximum(first, furthest), first)
    kept_list = np.flatnonzero(kept).tolist()
    nested = [i for i in kept_list if regions.kids[i]]
    leaves = [i for i in kept_list if not regions.kids[i]]
    gap_region = region_of[kept].tolist()
    symbols: list[str | None] = [regions.symbol[r] for r in gap_region]
    symbols += [regions.item_symbol[i] for i in leaves]
    symbols += regions.symbol
    kinds = [regions.kind[r] for r in gap_region]
    kinds += [regions.item_kind[i] for i in leaves]
    kinds += regions.kind
    leaf = np.asarray(leaves, dtype=np.int64)
    raw_lo = np.concatenate([cursor[kept], begin[leaf], tail_from])
    raw_hi = np.concatenate([begin[kept] - 1, end[leaf], last])
    _emit_spans(out, lines, raw_lo, raw_hi, symbols=symbols, kinds=kinds)
    below = _Regions()
    begin_list, end_list = begin.tolist(), end.tolist()
    for i in nested:
        below.add(
            begin_list[i],
            end_list[i],
            regions.item_symbol[i],
            regions.item_kind[i],
            items=regions.kids[i],
            row0=regions.row0[i],
        )
    return below


def _emit_spans(
    out: _Collector,
    lines: _Lines,
    raw_lo: I64,
    raw_hi: I64,
    *,
    symbols: list[str | None],
    kinds: list[str],
) -> None:
    """Blank-trimmed chunks of row spans (empty ones skipped, long ones cut into windows)."""
    lo = lines.next_filled[np.clip(raw_lo, 0, len(lines.blank_array) - 1)]
    hi = lines.prev_filled[np.maximum(raw_hi, 0)]
    real = (raw_lo <= raw_hi) & (lo <= hi)
    long = real & (hi - lo >= MAX_CHUNK_LINES)
    short = np.flatnonzero(real & ~long).tolist()
    out.add_arrays(lo[short], hi[short], [symbols[i] for i in short], [kinds[i] for i in short])
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


def _outlines(datas: Sequence[bytes], languages: Sequence[str | None]) -> dict[int, Outline | None]:
    """The outline (or None: parse whole) of every blob an outliner takes, by blob index."""
    outlines: dict[int, Outline | None] = {}
    for family in set(_OUTLINERS.values()):
        members = [
            i
            for i, language in enumerate(languages)
            if _OUTLINERS.get(language or "") is family and _is_utf8(datas[i])
        ]
        if members:
            outlines.update(zip(members, family([datas[i] for i in members]), strict=True))
    return outlines


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
    outlines = _outlines(datas, languages)
    regions: dict[tuple[bytes, ...], _Regions] = {}
    for i, (data, language) in enumerate(zip(datas, languages, strict=True)):
        n, row0 = n_lines[i], first_rows[i]
        if language not in PARSED_LANGUAGES:
            _text_windows(out, lines, row0, n)
            continue
        assert language is not None
        if i in outlines:
            roots = _definitions(data, language, outlines[i])
        else:
            roots = _definitions(_as_utf8(data), language, None)
        prefixes = comment_prefixes(language)
        if any(len(p) > 2 for p in prefixes):
            _Emitter(out, lines, row0, prefixes).region(0, n - 1, None, "module", roots)
            continue
        group = regions.setdefault(prefixes, _Regions())
        group.add(row0, row0 + n - 1, None, "module", items=roots, row0=row0)
    for prefixes, top in regions.items():
        last_stop = lines.last_stop(prefixes)
        level = top
        while level.first:
            level = _region_chunks(out, lines, level, last_stop)
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
        offsets=lines.start_array[start],
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
