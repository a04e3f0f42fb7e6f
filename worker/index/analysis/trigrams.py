"""The trigram part of a blob's analysis: which blobs of a segment hold each trigram.

A trigram is three consecutive bytes of the blob's folded text (see `fold`), packed into a
uint32 as `b0 << 16 | b1 << 8 | b2`. A segment stores, for every trigram any of its blobs
holds, the ascending ordinals of those blobs: code search intersects these lists to pick
the files it then verifies with RE2.

A second list per trigram covers only the blobs' definition lines (see DEFINITION_LINE),
and the segment keeps those lines' text too: code search bounds a file's best hit by them
before reading the file. The lists say which files may have a matching definition line; the
text, whether one has (a file's lines may hold a pattern's trigrams without one line holding
them all: in C, most files' do).

The loops (each blob's distinct trigrams and definition lines, then a counting sort of the
pairs by trigram) are compiled with numba: numpy has no per-blob distinct or counting sort,
and with its sorts and a regular expression per blob this part of a Linux build cost more
than the rest of the analysis.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from worker.index.analysis.distinct import distinct

TRIGRAM_SPACE: Final = 1 << 24
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

A segment keeps the trigrams of the lines it accepts apart (`trigram_kernels.pairs` finds
them the same way), so a search knows, before reading a file, whether one of its definition
lines can match."""
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
_OPENING = np.zeros(1 << 16, dtype=np.bool_)
"""The first two bytes a definition line's first word may start with (see `_defines`)."""
_OPENING[[word[0] << 8 | word[1] for word in (*_MODIFIERS, *_KEYWORDS, b"#d")]] = True
_OPENING[[ord("#") << 8 | blank for blank in b" \t\r\f\v"]] = True


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


def definition_text(data: bytes) -> bytes:
    """The lines of `data` that DEFINITION_LINE accepts, each with its own line break (the
    last line may have none), as a segment stores them (the slow way, for tests and rare
    texts)."""
    lines = data.split(b"\n")
    last = len(lines) - 1
    return b"".join(
        line + b"\n" * (i < last) for i, line in enumerate(lines) if DEFINITION_LINE.match(line)
    )


def trigrams_of(text: bytes) -> U32:
    """The distinct trigrams of already folded text, ascending."""
    if len(text) < 3:
        return np.empty(0, dtype=np.uint32)
    raw = np.frombuffer(text, dtype=np.uint8).astype(np.uint32)
    return distinct((raw[:-2] << np.uint32(16)) | (raw[1:-1] << np.uint32(8)) | raw[2:])


Pairs = tuple[U32, I64, I64]
"""A run of (trigram, blob) pairs: the trigrams, the blobs that own them, and where each
blob's pairs end (blob i owns those from the end before its own)."""


def _tables(parts: list[Pairs]) -> TrigramTables:
    """The dictionary and postings of the pairs in `parts`, which it empties.

    A counting sort by trigram. Each trigram is numbered by its rank among those present
    (a bitset over every possible trigram, 2 MB), so there is one counter per trigram
    present: a few megabytes whatever the build's size, where a counter per possible
    trigram would be 64 MB of fresh memory for every segment.
    """
    from worker.index.analysis.trigram_kernels import (
        mark_trigrams,
        place_owners,
        present_codes,
        rank_codes,
        rank_words,
    )

    present = np.zeros(TRIGRAM_SPACE // 64, dtype=np.uint64)
    for codes, _, _ in parts:
        mark_trigrams(codes, present)
    before, n = rank_words(present)
    count = np.zeros(n, dtype=np.int64)
    for codes, _, _ in parts:
        rank_codes(codes, present, before, count)
    start = np.zeros(n, dtype=np.int64)
    np.cumsum(count[:-1], out=start[1:])
    at = start.copy()
    postings = np.empty(sum(len(codes) for codes, _, _ in parts), dtype=np.uint32)
    # Placed part by part, each let go once placed: a copy of all the pairs in one array
    # would be a build worker's peak of memory.
    parts.reverse()
    while parts:
        ranks, blobs, ends = parts.pop()
        place_owners(ranks, blobs, ends, at, postings)
        del ranks
    return TrigramTables(
        trigrams=pa.table(
            {"trigram": present_codes(present, n), "start": start, "count": count.astype(np.int32)}
        ),
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
    for their whole text and for their definition lines, and those lines' text."""

    def __init__(self) -> None:
        self._seen: npt.NDArray[np.uint64] | None = None
        self._scratch = np.empty((2, 0), dtype=np.uint32)
        self._text_scratch = np.empty(0, dtype=np.uint8)
        self._text: list[Pairs] = []
        self._definitions: list[Pairs] = []
        self._definition_sizes: list[tuple[I64, I64]] = []
        """Per run: its blobs and the size of each one's definition lines."""
        self._definition_lines = bytearray()
        """Every run's definition lines, in blob order (blobs come in ascending order).

        One buffer grown in place (a large one is remapped, not copied, as it grows) that
        becomes the column as it is: no copy of the runs' lines into it at the end."""

    def add(self, texts: Sequence[bytes], blobs: Sequence[int]) -> None:
        """Add the trigrams of each text (raw blob bytes) as those of segment blob `blobs[i]`.

        Blobs must come in ascending order over all calls, so each trigram's list is sorted.
        """
        if self._seen is None:
            self._seen = np.zeros((2, TRIGRAM_SPACE // 64), dtype=np.uint64)
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
        assert self._seen is not None
        raw = texts
        if folded:
            texts = [fold(t) for t in texts]
        sizes = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        ends = np.cumsum(sizes)
        text = np.frombuffer(b"".join(texts), dtype=np.uint8)
        if self._scratch.shape[1] < len(text):
            # Kept from batch to batch: fresh pages for every batch cost more than the pass.
            self._scratch = np.empty((2, len(text)), dtype=np.uint32)
            self._text_scratch = np.empty(len(text), dtype=np.uint8)
        codes, definition_codes = self._scratch
        pair_ends = np.empty((2, len(texts)), dtype=np.int64)
        definition_ends = np.empty(len(texts), dtype=np.int64)
        from worker.index.analysis.trigram_kernels import pairs

        n, n_def = pairs(
            text,
            ends - sizes,
            ends,
            folded,
            self._seen,
            codes,
            definition_codes,
            pair_ends,
            self._text_scratch,
            definition_ends,
            _LOWER,
            _MODIFIER_TABLE,
            _MODIFIER_LENGTHS,
            _KEYWORD_TABLE,
            _KEYWORD_LENGTHS,
            _OPENING,
        )
        owner_array = np.asarray(blobs, dtype=np.int64)
        self._text.append((codes[:n].copy(), owner_array, pair_ends[0]))
        if not folded:
            self._definitions.append((definition_codes[:n_def].copy(), owner_array, pair_ends[1]))
            written = int(definition_ends[-1]) if texts else 0
            sizes = np.diff(definition_ends, prepend=np.int64(0))
            self._definition_sizes.append((owner_array, sizes))
            self._definition_lines += self._text_scratch[:written].data
            return
        found_text = [definition_text(data) for data in raw]
        self._definition_sizes.append(
            (owner_array, np.fromiter(map(len, found_text), np.int64, count=len(found_text)))
        )
        self._definition_lines += b"".join(found_text)
        for text_of_blob, blob in zip(found_text, blobs, strict=True):
            lines = [trigrams_of(fold(line)) for line in text_of_blob.split(b"\n")]
            found = distinct(np.concatenate([np.empty(0, np.uint32), *lines]))
            self._definitions.append(
                (found.astype(np.uint32), np.array([blob]), np.array([len(found)]))
            )

    def definition_texts(self, n_blobs: int) -> pa.Array:
        """Each of `n_blobs` blobs' definition lines (see `definition_text`), by blob ordinal:
        large binary, empty for a blob never added."""
        sizes = np.zeros(n_blobs, dtype=np.int64)
        for blobs, blob_sizes in self._definition_sizes:
            sizes[blobs] = blob_sizes
        self._definition_sizes = []
        offsets = np.zeros(n_blobs + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        data, self._definition_lines = self._definition_lines, bytearray()
        return pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), n_blobs, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )

    def done_adding(self) -> None:
        """Let go of what adding keeps from batch to batch (tens of megabytes), so a segment's
        other tables, made before these, do not have to be made beside it."""
        self._seen = None
        self._scratch = np.empty((2, 0), dtype=np.uint32)
        self._text_scratch = np.empty(0, dtype=np.uint8)

    def tables(self) -> tuple[TrigramTables, TrigramTables]:
        """The trigram dictionaries and postings of everything added: text, definition lines."""
        self.done_adding()
        text = _tables(self._text)
        definitions = _tables(self._definitions)
        return text, definitions
