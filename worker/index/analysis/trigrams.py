"""The trigram part of a blob's analysis: which blobs of a segment hold each trigram.

A trigram is three consecutive bytes of the blob's folded text (see `fold`), packed into a
uint32 as `b0 << 16 | b1 << 8 | b2`. A segment stores, for every trigram any of its blobs
holds, the ascending ordinals of those blobs: code search intersects these lists to pick
the files it then verifies with RE2.

A second list per trigram covers only the blobs' definition lines (see DEFINITION_LINE):
code search bounds a file's best hit by it before reading the file.

The loops (each blob's distinct trigrams and definition lines, then a counting sort of the
pairs by trigram) are compiled with numba: numpy has no per-blob distinct or counting sort,
and with its sorts and a regular expression per blob this part of a Linux build cost more
than the rest of the analysis.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numba
import numpy as np
import numpy.typing as npt
import pyarrow as pa

TRIGRAM_SPACE: Final = 1 << 24
SMALL_PAIRS: Final = 1 << 20
"""Fewer (trigram, blob) pairs of text than this are sorted rather than counted per trigram."""
_MODIFIERS: Final = (
    b"export", b"public", b"private", b"protected", b"static", b"async", b"pub", b"extern",
    b"inline", b"abstract", b"final",
)  # fmt: skip
_KEYWORDS: Final = (
    b"def", b"class", b"func", b"fn", b"struct", b"enum", b"union", b"interface", b"trait",
    b"impl", b"type", b"module", b"function", b"macro",
)  # fmt: skip
_BLANK: Final = rb"[^\S\n]"
DEFINITION_LINE: Final = re.compile(
    _BLANK
    + b"*(?:(?:"
    + b"|".join(_MODIFIERS)
    + b")"
    + _BLANK
    + b"+)*(?:"
    + b"|".join(_KEYWORDS)
    + b"|#"
    + _BLANK
    + rb"*define)\b"
)
"""Whether a line (matched from its start, up to its end) defines something, in any language.

A segment keeps the trigrams of the lines it accepts apart (`_pairs` finds them the same
way), so a search knows, before reading a file, whether one of its definition lines can
match."""
_KELVIN: Final = "\u212a".encode()
_LONG_S: Final = "\u017f".encode()

U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]


def _word_table(words: Sequence[bytes]) -> tuple[npt.NDArray[np.uint8], I64]:
    table = np.zeros((len(words), max(map(len, words))), dtype=np.uint8)
    for i, word in enumerate(words):
        table[i, : len(word)] = np.frombuffer(word, dtype=np.uint8)
    return table, np.fromiter(map(len, words), dtype=np.int64, count=len(words))


_MODIFIER_TABLE, _MODIFIER_LENGTHS = _word_table(_MODIFIERS)
_LOWER: Final = np.frombuffer(bytes(range(256)).lower(), dtype=np.uint8).astype(np.int64)
_KEYWORD_TABLE, _KEYWORD_LENGTHS = _word_table(_KEYWORDS)


def _compiled(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """numba.njit, with compiled code cached on disk where numba finds a writable place.

    Compiling these kernels takes a process about two seconds; loading them from the cache,
    milliseconds. A read-only installation without NUMBA_CACHE_DIR compiles once per process.
    """

    def compile_(function: Callable[..., Any]) -> Any:
        try:
            return numba.njit(cache=True, **options)(function)
        except RuntimeError:  # numba: "no locator available", nowhere writable to cache
            return numba.njit(**options)(function)

    return compile_


def fold(data: bytes) -> bytes:
    """`data` with ASCII letters lowercased and KELVIN SIGN / LONG S replaced by `k` / `s`.

    RE2's case folding maps those two non-ASCII characters onto ASCII letters; folding them
    the same way keeps a case-insensitive query's candidates a superset of its matches.
    """
    if _KELVIN in data:
        data = data.replace(_KELVIN, b"k")
    if _LONG_S in data:
        data = data.replace(_LONG_S, b"s")
    return data.lower()


def needs_full_fold(data: bytes) -> bool:
    """Whether folding `data` does more than lowercase ASCII letters."""
    return not data.isascii() and (_KELVIN in data or _LONG_S in data)


def definition_lines(data: bytes) -> list[bytes]:
    """The lines of `data` that DEFINITION_LINE accepts (the slow way, for tests and rare
    texts)."""
    return [line for line in data.split(b"\n") if DEFINITION_LINE.match(line)]


def trigrams_of(text: bytes) -> U32:
    """The distinct trigrams of already folded text, ascending."""
    if len(text) < 3:
        return np.empty(0, dtype=np.uint32)
    raw = np.frombuffer(text, dtype=np.uint8).astype(np.uint32)
    return np.unique((raw[:-2] << 16) | (raw[1:-1] << 8) | raw[2:])


def trigram_text(code: int) -> str:
    """A trigram as readable text (for logs and details)."""
    return bytes([(code >> 16) & 0xFF, (code >> 8) & 0xFF, code & 0xFF]).decode("latin-1")


@_compiled(inline="always")
def _is_blank(byte: int) -> bool:
    return byte in (0x20, 0x09, 0x0D, 0x0C, 0x0B)


@_compiled(inline="always")
def _is_word(byte: int) -> bool:
    return (
        (0x30 <= byte <= 0x39) or (0x41 <= byte <= 0x5A) or (0x61 <= byte <= 0x7A) or byte == 0x5F
    )


@_compiled(inline="always")
def _word_at(text: Any, at: int, end: int, table: Any, lengths: Any) -> int:
    # The length of the first word of `table` that `text` holds at `at` (before `end`), or 0.
    for k in range(len(lengths)):
        size = lengths[k]
        if at + size > end:
            continue
        same = True
        for i in range(size):
            if text[at + i] != table[k, i]:
                same = False
                break
        if same:
            return int(size)
    return 0


@_compiled()
def _defines(  # noqa: PLR0917 (numba compiles positional parameters only)
    text: Any, at: int, end: int, modifiers: Any, n_mod: Any, keywords: Any, n_kw: Any
) -> bool:
    # DEFINITION_LINE.match on the line starting at `at` (it ends at a line break or `end`),
    # by hand: blanks, modifiers each followed by blanks, then a keyword or `#define` ending
    # on a word boundary. No keyword starts a modifier nor the reverse, so taking modifiers
    # greedily never misses a match. A line break is neither blank nor a word character.
    while at < end and _is_blank(text[at]):
        at += 1
    while True:
        for k in range(len(n_kw)):
            size = n_kw[k]
            if at + size <= end:
                same = True
                for i in range(size):
                    if text[at + i] != keywords[k, i]:
                        same = False
                        break
                if same and (at + size == end or not _is_word(text[at + size])):
                    return True
        if at < end and text[at] == 0x23:  # '#'
            q = at + 1
            while q < end and _is_blank(text[q]):
                q += 1
            if (
                q + 6 <= end
                and text[q] == 0x64 and text[q + 1] == 0x65 and text[q + 2] == 0x66
                and text[q + 3] == 0x69 and text[q + 4] == 0x6E and text[q + 5] == 0x65
                and (q + 6 == end or not _is_word(text[q + 6]))
            ):  # fmt: skip
                return True
        size = _word_at(text, at, end, modifiers, n_mod)
        if size == 0 or at + size >= end or not _is_blank(text[at + size]):
            return False
        at += size
        while at < end and _is_blank(text[at]):
            at += 1


@_compiled(nogil=True)
def _pairs(  # noqa: PLR0917 (numba compiles positional parameters only)
    text: Any,
    starts: Any,
    ends: Any,
    blobs: Any,
    folded: bool,
    stamps: Any,
    codes: Any,
    owners: Any,
    definition_codes: Any,
    definition_owners: Any,
    lower: Any,
    modifiers: Any,
    n_mod: Any,
    keywords: Any,
    n_kw: Any,
) -> Any:
    # Each blob's distinct trigrams of its lowercased text, and of its definition lines, in
    # one pass. stamps[code] holds 1 + the last blob that emitted the trigram, with the top
    # bit set once that blob emitted it for a definition line too: blobs are distinct and
    # each emitted once, so a blob's repeats are skipped without clearing anything. Text the
    # caller `folded` gets no definition lines here (its case is gone).
    n = 0
    n_def = 0
    for i in range(len(starts)):
        start, end = starts[i], ends[i]
        blob = blobs[i]
        mark = np.uint32(blob + 1)
        both = mark | np.uint32(0x80000000)
        line = start
        defining = not folded and _defines(text, start, end, modifiers, n_mod, keywords, n_kw)
        code = 0
        for at in range(start, end):
            byte = text[at]
            code = ((code << 8) | lower[byte]) & 0xFFFFFF
            if at - start < 2:
                if byte == 0x0A:
                    line = at + 1
                    defining = not folded and _defines(
                        text, line, end, modifiers, n_mod, keywords, n_kw
                    )
                continue
            stamp = stamps[code]
            if stamp & np.uint32(0x7FFFFFFF) != mark:
                stamp = mark
                codes[n] = code
                owners[n] = blob
                n += 1
            if byte == 0x0A:
                line = at + 1
                defining = not folded and _defines(
                    text, line, end, modifiers, n_mod, keywords, n_kw
                )
            elif defining and at - line >= 2 and stamp != both:
                stamp = both
                definition_codes[n_def] = code
                definition_owners[n_def] = blob
                n_def += 1
            stamps[code] = stamp
    return n, n_def


@_compiled(nogil=True)
def _by_trigram(codes: Any, owners: Any, work: Any) -> Any:
    # A stable counting sort: each trigram's blobs stay in the order the pairs came in.
    # `work` (one zeroed int32 per trigram) holds counts, then where each list is filled.
    for i in range(len(codes)):
        work[codes[i]] += 1
    distinct = 0
    for c in range(len(work)):
        if work[c]:
            distinct += 1
    trigrams = np.empty(distinct, np.uint32)
    start = np.empty(distinct, np.int64)
    count = np.empty(distinct, np.int32)
    row = 0
    at = 0
    for c in range(len(work)):
        n = work[c]
        if n:
            trigrams[row] = c
            start[row] = at
            count[row] = n
            work[c] = at
            at += n
            row += 1
    postings = np.empty(len(codes), np.uint32)
    for i in range(len(codes)):
        c = codes[i]
        postings[work[c]] = owners[i]
        work[c] += 1
    return trigrams, start, count, postings


def _tables(parts: list[tuple[U32, U32]], work: npt.NDArray[np.int32] | None) -> TrigramTables:
    """The dictionary and postings of the pairs; `work` is scratch of TRIGRAM_SPACE int32,
    or None when there are too few pairs to count them into every trigram."""
    codes = np.concatenate([np.empty(0, np.uint32), *(c for c, _ in parts)])
    owners = np.concatenate([np.empty(0, np.uint32), *(o for _, o in parts)])
    if work is not None:
        work.fill(0)
        trigrams, start, count, postings = _by_trigram(codes, owners, work)
    else:
        order = np.argsort(codes, kind="stable")
        postings = owners[order]
        ordered = codes[order]
        first = np.flatnonzero(np.diff(ordered, prepend=np.int64(-1)) != 0)
        trigrams = ordered[first]
        start = first.astype(np.int64)
        count = np.diff(np.append(first, len(ordered))).astype(np.int32)
    return TrigramTables(
        trigrams=pa.table({"trigram": trigrams, "start": start, "count": count}),
        postings=pa.table({"blob": postings}),
    )


@dataclass(frozen=True, slots=True)
class TrigramTables:
    """A trigram component of a segment: the dictionary and the postings it slices."""

    trigrams: pa.Table
    """trigram (uint32, ascending), start (int64), count (int32): a slice of postings."""
    postings: pa.Table
    """blob (uint32): segment blob ordinals, ascending within each trigram's slice."""


class TrigramCollector:
    """Collects the distinct (trigram, blob) pairs of the blobs analysed into one segment,
    for their whole text and for their definition lines."""

    def __init__(self) -> None:
        self._stamps: npt.NDArray[np.uint32] | None = None
        self._scratch = np.empty((4, 0), dtype=np.uint32)
        self._text: list[tuple[U32, U32]] = []
        self._definitions: list[tuple[U32, U32]] = []
        self.pairs = 0

    def add(self, texts: Sequence[bytes], blobs: Sequence[int]) -> None:
        """Add the trigrams of each text (raw blob bytes) as those of segment blob `blobs[i]`.

        Blobs must come in ascending order over all calls, so each trigram's list is sorted.
        """
        if self._stamps is None:
            self._stamps = np.zeros(TRIGRAM_SPACE, dtype=np.uint32)
        # The rare text whose fold is more than lowercasing ASCII is folded here, and its
        # definition lines found the slow way; runs keep the pairs in blob order.
        rare = [needs_full_fold(t) for t in texts]
        start = 0
        while start < len(texts):
            stop = start + 1
            while stop < len(texts) and rare[stop] == rare[start]:
                stop += 1
            self._add_run(texts[start:stop], blobs[start:stop], folded=rare[start])
            start = stop

    def _add_run(self, texts: Sequence[bytes], blobs: Sequence[int], *, folded: bool) -> None:
        assert self._stamps is not None
        raw = texts
        if folded:
            texts = [fold(t) for t in texts]
        sizes = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        ends = np.cumsum(sizes)
        text = np.frombuffer(b"".join(texts), dtype=np.uint8)
        if self._scratch.shape[1] < len(text):
            # Kept from batch to batch: fresh pages for every batch cost more than the pass.
            self._scratch = np.empty((4, len(text)), dtype=np.uint32)
        codes, owners, definition_codes, definition_owners = self._scratch
        n, n_def = _pairs(
            text,
            ends - sizes,
            ends,
            np.asarray(blobs, dtype=np.int64),
            folded,
            self._stamps,
            codes,
            owners,
            definition_codes,
            definition_owners,
            _LOWER,
            _MODIFIER_TABLE,
            _MODIFIER_LENGTHS,
            _KEYWORD_TABLE,
            _KEYWORD_LENGTHS,
        )
        self._text.append((codes[:n].copy(), owners[:n].copy()))
        self.pairs += n
        if not folded:
            pairs = (definition_codes[:n_def].copy(), definition_owners[:n_def].copy())
            self._definitions.append(pairs)
            return
        for data, blob in zip(raw, blobs, strict=True):
            lines = [trigrams_of(fold(line)) for line in definition_lines(data)]
            found = np.unique(np.concatenate([np.empty(0, np.uint32), *lines]))
            self._definitions.append(
                (found.astype(np.uint32), np.full(len(found), blob, dtype=np.uint32))
            )

    def tables(self) -> tuple[TrigramTables, TrigramTables]:
        """The trigram dictionaries and postings of everything added: text, definition lines."""
        self._stamps = None
        self._scratch = np.empty((4, 0), dtype=np.uint32)
        # Many pairs are counted into every trigram (linear); a few (a small on-demand build)
        # are sorted, which beats passes over all 16M trigrams.
        many = self.pairs >= SMALL_PAIRS
        work = np.zeros(TRIGRAM_SPACE, dtype=np.int32) if many else None
        text = _tables(self._text, work)
        definitions = _tables(self._definitions, work)
        self._text, self._definitions = [], []
        return text, definitions
