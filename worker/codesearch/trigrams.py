"""Trigrams of text, folded so that one index serves case-sensitive and case-insensitive search.

A trigram is three consecutive bytes packed into a uint32 (`b0 << 16 | b1 << 8 | b2`).
Text is folded before it is cut: ASCII letters are lowercased, and the two non-ASCII
characters that RE2's case folding maps onto ASCII letters (KELVIN SIGN onto `k`, LONG
S onto `s`) are replaced by those letters. The same fold is applied to the literals of
a query, so a candidate set is always a superset of the files that really match.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

TrigramArray = npt.NDArray[np.uint32]

_KELVIN: Final = "\u212a".encode()
_LONG_S: Final = "\u017f".encode()


def fold(data: bytes) -> bytes:
    """`data` with ASCII letters lowercased and KELVIN SIGN / LONG S replaced by `k` / `s`."""
    if _KELVIN in data:
        data = data.replace(_KELVIN, b"k")
    if _LONG_S in data:
        data = data.replace(_LONG_S, b"s")
    return data.lower()


def trigrams_of(data: bytes, *, folded: bool = False) -> TrigramArray:
    """The distinct trigrams of `data` (folded first unless `folded`), sorted ascending."""
    if not folded:
        data = fold(data)
    if len(data) < 3:
        return np.empty(0, dtype=np.uint32)
    raw = np.frombuffer(data, dtype=np.uint8)
    codes = (
        (raw[:-2].astype(np.uint32) << np.uint32(16))
        | (raw[1:-1].astype(np.uint32) << np.uint32(8))
        | raw[2:].astype(np.uint32)
    )
    return np.unique(codes)


def trigram_text(code: int) -> str:
    """A trigram as readable text (for logs and details)."""
    return bytes([(code >> 16) & 0xFF, (code >> 8) & 0xFF, code & 0xFF]).decode("latin-1")
