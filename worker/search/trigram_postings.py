"""The trigram part of a blob's analysis: which blobs of a segment hold each trigram.

A trigram is three consecutive bytes of the blob's folded text (see `fold`), packed into a
uint32 as `b0 << 16 | b1 << 8 | b2`. A segment stores, for every trigram any of its blobs
holds, the ascending ordinals of those blobs: code search intersects these lists to pick
the files it then verifies with RE2.

The two loops (each blob's distinct trigrams, then a counting sort of the pairs by trigram)
are compiled with numba: numpy has no per-blob distinct or counting sort, and its sorts made
the trigram part of a Linux build cost about four times the one-pass analysis it joins.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numba
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import re2

TRIGRAM_SPACE: Final = 1 << 24
_KELVIN: Final = "\u212a".encode()
_LONG_S: Final = "\u017f".encode()

U32 = npt.NDArray[np.uint32]
I64 = npt.NDArray[np.int64]

_BLANK: Final = rb"[^\S\n]"
_DEFINITION: Final = (
    rb"(?:(?:export|public|private|protected|static|async|pub|extern|inline|abstract|final)"
    + _BLANK
    + rb"+)*(?:def|class|func|fn|struct|enum|union|interface|trait|impl|type|module|function"
    rb"|macro|#" + _BLANK + rb"*define)\b"
)
DEFINITION_LINE: Final = re.compile(_BLANK + b"*" + _DEFINITION)
"""Whether a line (matched from its start, up to its end) defines something, in any language.

The same pattern picks the lines whose trigrams a segment keeps apart (`definition_lines`), so
a search knows, before reading a file, whether any of its definition lines can match."""
_DEFINITION_LINES: Final = re2.compile(b"(?m)^" + _BLANK + b"*" + _DEFINITION + rb"[^\n]*")


def definition_lines(data: bytes) -> bytes:
    """The lines of `data` that DEFINITION_LINE accepts, joined by line breaks."""
    return b"\n".join(_DEFINITION_LINES.findall(data))


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


def trigrams_of(text: bytes) -> U32:
    """The distinct trigrams of already folded text, ascending."""
    if len(text) < 3:
        return np.empty(0, dtype=np.uint32)
    raw = np.frombuffer(text, dtype=np.uint8).astype(np.uint32)
    return np.unique((raw[:-2] << 16) | (raw[1:-1] << 8) | raw[2:])


def trigram_text(code: int) -> str:
    """A trigram as readable text (for logs and details)."""
    return bytes([(code >> 16) & 0xFF, (code >> 8) & 0xFF, code & 0xFF]).decode("latin-1")


@numba.njit(nogil=True, cache=False)
def _distinct_pairs(  # noqa: PLR0917 (numba compiles positional parameters only)
    text: Any, starts: Any, ends: Any, blobs: Any, stamp: Any, codes: Any, owners: Any
) -> int:
    # stamp[code] holds 1 + the last blob that emitted the trigram: blobs are distinct and
    # each is emitted once, so a blob's repeats are skipped without clearing anything.
    n = 0
    for i in range(len(starts)):
        start, end = starts[i], ends[i]
        if end - start < 3:
            continue
        mark = blobs[i] + 1
        code = (np.int64(text[start]) << 8) | np.int64(text[start + 1])
        for at in range(start + 2, end):
            code = ((code << 8) | np.int64(text[at])) & 0xFFFFFF
            if stamp[code] != mark:
                stamp[code] = mark
                codes[n] = code
                owners[n] = blobs[i]
                n += 1
    return n


@numba.njit(nogil=True, cache=False)
def _by_trigram(codes: Any, owners: Any, space: int) -> Any:
    # A stable counting sort: each trigram's blobs stay in the order the pairs came in.
    counts = np.zeros(space, np.int64)
    for i in range(len(codes)):
        counts[codes[i]] += 1
    distinct = 0
    for c in range(space):
        if counts[c]:
            distinct += 1
    trigrams = np.empty(distinct, np.uint32)
    start = np.empty(distinct, np.int64)
    count = np.empty(distinct, np.int32)
    fill = np.empty(space, np.int64)
    row = 0
    at = 0
    for c in range(space):
        if counts[c]:
            trigrams[row] = c
            start[row] = at
            count[row] = counts[c]
            fill[c] = at
            at += counts[c]
            row += 1
    postings = np.empty(len(codes), np.uint32)
    for i in range(len(codes)):
        c = codes[i]
        postings[fill[c]] = owners[i]
        fill[c] += 1
    return trigrams, start, count, postings


@dataclass(frozen=True, slots=True)
class TrigramTables:
    """A trigram component of a segment: the dictionary and the postings it slices."""

    trigrams: pa.Table
    """trigram (uint32, ascending), start (int64), count (int32): a slice of postings."""
    postings: pa.Table
    """blob (uint32): segment blob ordinals, ascending within each trigram's slice."""


class TrigramCollector:
    """Collects the distinct (trigram, blob) pairs of the blobs analysed into one segment."""

    def __init__(self) -> None:
        self._stamp: U32 | None = None
        self._codes: list[U32] = []
        self._owners: list[U32] = []
        self.pairs = 0

    def add(self, texts: Sequence[bytes], blobs: Sequence[int]) -> None:
        """Add the trigrams of each text (raw blob bytes) as those of segment blob `blobs[i]`.

        Blobs must come in ascending order over all calls, so each trigram's list is sorted.
        """
        if not texts:
            return
        if self._stamp is None:
            self._stamp = np.zeros(TRIGRAM_SPACE, dtype=np.uint32)
        folded = [fold(t) for t in texts]
        sizes = np.fromiter(map(len, folded), dtype=np.int64, count=len(folded))
        ends = np.cumsum(sizes)
        text = np.frombuffer(b"".join(folded), dtype=np.uint8)
        codes = np.empty(len(text), dtype=np.uint32)
        owners = np.empty(len(text), dtype=np.uint32)
        n = _distinct_pairs(
            text,
            ends - sizes,
            ends,
            np.asarray(blobs, dtype=np.int64),
            self._stamp,
            codes,
            owners,
        )
        self._codes.append(codes[:n].copy())
        self._owners.append(owners[:n].copy())
        self.pairs += n

    def tables(self) -> TrigramTables:
        """The trigram dictionary and postings of everything added."""
        self._stamp = None
        codes = np.concatenate([np.empty(0, np.uint32), *self._codes])
        owners = np.concatenate([np.empty(0, np.uint32), *self._owners])
        self._codes, self._owners = [], []
        trigrams, start, count, postings = _by_trigram(codes, owners, TRIGRAM_SPACE)
        return TrigramTables(
            trigrams=pa.table({"trigram": trigrams, "start": start, "count": count}),
            postings=pa.table({"blob": postings}),
        )
