"""Split a blob into chunks: definitions from a real parser, line windows for other text.

Chunks partition the blob's non-blank lines: every line belongs to at most one chunk, each
chunk is a contiguous, blank-trimmed span. A definition's chunk starts at its leading doc
comments and decorators; a container (class, impl, namespace) keeps the lines that are not
in a nested definition (its head, its attributes). Spans are 0-based rows here; lines are
split on b"\\n", the same rule the excerpt code uses.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt
import tree_sitter

from worker.search.languages import PARSED_LANGUAGES, comment_prefixes, grammar

MAX_CHUNK_LINES: Final = 150
"""A longer definition is cut into windows: one hit should not be a 2,000-line function."""
TEXT_WINDOW_LINES: Final = 40
MAX_NESTING: Final = 8
"""Deeper definitions stay inside their parent's chunk (generated code nests absurdly)."""
_BLANK: Final = b" \t\r\f\v"
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


@dataclass(frozen=True, slots=True)
class Chunk:
    """A span of rows (0-based, inclusive) with the definition it belongs to."""

    start_row: int
    end_row: int
    symbol: str | None
    kind: str


@dataclass(slots=True)
class _Definition:
    start_row: int
    end_row: int
    start_byte: int
    end_byte: int
    symbol: str
    kind: str
    children: list[_Definition] = field(default_factory=list)


def line_starts(data: bytes) -> npt.NDArray[np.int64]:
    """Byte offset where each line starts; lines are split on b"\\n" (so n_lines = count + 1)."""
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    starts = np.empty(len(newlines) + 1, dtype=np.int64)
    starts[0] = 0
    starts[1:] = newlines + 1
    return starts


class _Lines:
    """Row access over a blob without splitting it into a list of lines."""

    __slots__ = ("data", "n", "starts")

    def __init__(self, data: bytes, starts: npt.NDArray[np.int64]) -> None:
        self.data = data
        self.starts = starts.tolist()
        self.n = len(self.starts)

    def line(self, row: int) -> bytes:
        end = self.starts[row + 1] - 1 if row + 1 < self.n else len(self.data)
        return self.data[self.starts[row] : end]

    def blank(self, row: int) -> bool:
        return not self.line(row).strip(_BLANK)


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


def _as_utf8(data: bytes) -> bytes:
    """The blob as valid UTF-8 for the parser: non-UTF-8 text is read as latin-1.

    Re-encoding never adds or removes a b"\n", so rows stay those of the original blob.
    """
    if data.isascii():
        return data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1").encode("utf-8")
    return data


def _definitions(data: bytes, language: str) -> list[_Definition]:
    """Top-level definitions with nested children, qualified names filled in."""
    tree = _parser(language).parse(data)
    matches = tree_sitter.QueryCursor(grammar(language).query).matches(tree.root_node)
    found: dict[tuple[int, int], _Definition] = {}
    for _, captures in matches:
        node = captures["def"][0]
        key = (node.start_byte, node.end_byte)
        if key in found:
            continue
        name_node = captures["name"][0]
        symbol = _decode(data[name_node.start_byte : name_node.end_byte])
        receiver = captures.get("receiver")
        if receiver:
            symbol = _decode(data[receiver[0].start_byte : receiver[0].end_byte]) + "." + symbol
        found[key] = _Definition(
            node.start_point.row, node.end_point.row, key[0], key[1], symbol, node.type
        )
    roots: list[_Definition] = []
    stack: list[tuple[_Definition, int]] = []
    for d in sorted(found.values(), key=lambda d: (d.start_byte, -d.end_byte)):
        while stack and stack[-1][0].end_byte <= d.start_byte:
            stack.pop()
        if not stack:
            roots.append(d)
            stack.append((d, 1))
            continue
        parent, depth = stack[-1]
        if depth >= MAX_NESTING or parent.kind not in CONTAINER_KINDS:
            continue
        d.symbol = f"{parent.symbol}.{d.symbol}"
        parent.children.append(d)
        stack.append((d, depth + 1))
    return roots


class _Emitter:
    def __init__(self, lines: _Lines, prefixes: tuple[bytes, ...], max_lines: int) -> None:
        self.lines = lines
        self.prefixes = prefixes
        self.max_lines = max_lines
        self.chunks: list[Chunk] = []

    def own(self, lo: int, hi: int, symbol: str | None, kind: str) -> None:
        lines = self.lines
        while lo <= hi and lines.blank(lo):
            lo += 1
        while hi >= lo and lines.blank(hi):
            hi -= 1
        while lo <= hi:
            end = min(hi, lo + self.max_lines - 1)
            self.chunks.append(Chunk(lo, end, symbol, kind))
            lo = end + 1
            while lo <= hi and lines.blank(lo):
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
            text = self.lines.line(row - 1).lstrip(_BLANK)
            if not text or not text.startswith(self.prefixes):
                break
            row -= 1
        return row


def _text_windows(lines: _Lines) -> list[Chunk]:
    """Windows of about TEXT_WINDOW_LINES lines, cut at a blank line when there is one."""
    chunks: list[Chunk] = []
    row, n = 0, lines.n
    half = TEXT_WINDOW_LINES // 2
    while row < n:
        while row < n and lines.blank(row):
            row += 1
        if row >= n:
            break
        end = min(n - 1, row + TEXT_WINDOW_LINES - 1)
        if end < n - 1:
            for cut in range(end, row + half - 1, -1):
                if lines.blank(cut):
                    end = cut - 1
                    break
        last = end
        while lines.blank(last):
            last -= 1
        chunks.append(Chunk(row, last, None, "text"))
        row = end + 1
    return chunks


def chunk_blob(data: bytes, language: str | None) -> tuple[list[Chunk], npt.NDArray[np.int64]]:
    """The chunks of a (text) blob and its line starts.

    A parsed language gets definition chunks plus `module` chunks for top-level code between
    them; anything else gets line windows.
    """
    starts = line_starts(data)
    lines = _Lines(data, starts)
    if language not in PARSED_LANGUAGES:
        return _text_windows(lines), starts
    assert language is not None
    emitter = _Emitter(lines, comment_prefixes(language), MAX_CHUNK_LINES)
    emitter.region(0, lines.n - 1, None, "module", _definitions(_as_utf8(data), language))
    return emitter.chunks, starts
