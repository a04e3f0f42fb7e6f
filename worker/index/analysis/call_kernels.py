"""The compiled loop that finds call sites in code (numba): a name, or a chain of them, and `(`.

A chain is identifiers joined by `.`, `::` or `->` (`os.path.join`, `Vec::new`, `dev->ops`,
and JavaScript's `this.#private`),
read outside comments and string literals (the spans the caller skips). For each chain that
is followed by `(` the kernel reports where it is, a hash of its bytes and a hash of the word
just before it: whether `word name(` is a call (`return f(`) or a declaration (`int f(`,
`def f(`) depends on that word, which the caller judges per language.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.index.analysis.compiled import compiled
from worker.index.analysis.outline import byte_table

FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)


def name_hash(name: bytes) -> int:
    """The hash `call_sites` gives a chain or word with these bytes (64-bit FNV-1a)."""
    value = int(FNV_OFFSET)
    for byte in name:
        value = ((value ^ byte) * int(FNV_PRIME)) & 0xFFFFFFFFFFFFFFFF
    return value


# Looked up, not compared: a name's bytes are read one at a time in every file.
_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_$"
_NAME_START = byte_table(_LETTERS)
_NAME = byte_table(_LETTERS + b"0123456789")
_SPACE = byte_table(b" \t\r\f\v\n")


@compiled(inline="always")
def _starts_name(byte: int) -> bool:
    return bool(_NAME_START[byte])


@compiled(inline="always")
def _in_name(byte: int) -> bool:
    return bool(_NAME[byte])


@compiled(inline="always")
def _is_space(byte: int) -> bool:
    return bool(_SPACE[byte])


@compiled(inline="always")
def _hash(text: Any, start: int, end: int) -> Any:
    value = np.uint64(0xCBF29CE484222325)
    for i in range(start, end):
        value = (value ^ np.uint64(text[i])) * np.uint64(0x100000001B3)
    return value


@compiled(nogil=True)
def call_sites(  # noqa: PLR0917, PLR0915 (numba compiles positional parameters only)
    text: Any,
    file_starts: Any,
    file_ends: Any,
    skip_starts: Any,
    skip_ends: Any,
    pointers: bool,
    out_start: Any,
    out_end: Any,
    out_hash: Any,
    out_before: Any,
) -> int:
    # Files in order; skip spans sorted and inside files. `before` is the hash of the word
    # just before the chain when only blanks (and, with `pointers`, `*` and `&`: the C
    # declaration `struct x *f(`) come between, else 0. A chain that is a member of some
    # other expression (`f().g(`, `x[0].g(`) is not reported: only its object could say
    # what it is.
    n = 0
    k = 0
    n_skip = len(skip_starts)
    for f in range(len(file_starts)):
        at = file_starts[f]
        end = file_ends[f]
        while k < n_skip and skip_ends[k] <= at:
            k += 1
        # The last code byte seen and the last word: where it starts and ends.
        last = -1
        word_start = -1
        word_end = -1
        while at < end:
            if k < n_skip and at >= skip_starts[k]:
                at = max(at, skip_ends[k])
                k += 1
                continue
            byte = text[at]
            if _is_space(byte):
                at += 1
                continue
            # `#name` is a JavaScript private member; in C a `#` starts a directive, skipped.
            private = byte == 0x23 and at + 1 < end and _starts_name(text[at + 1])
            if not (_starts_name(byte) or private):
                if 0x30 <= byte <= 0x39:
                    while at < end and _in_name(text[at]):
                        at += 1
                    last = at - 1
                    word_start = -1
                    continue
                last = at
                at += 1
                continue
            start = at
            q = at + 1 if private else at
            while q < end and _in_name(text[q]):
                q += 1
            while q < end:
                c = text[q]
                after = text[q + 1] if q + 1 < end else 0
                width = 1 if c == 0x2E else 2 if (c, after) in ((0x3A, 0x3A), (0x2D, 0x3E)) else 0
                if width == 0 or q + width >= end:
                    break
                if not _starts_name(text[q + width]):
                    # A JavaScript private member (`this.#name`): `#` starts its name.
                    private = (
                        c == 0x2E
                        and text[q + width] == 0x23
                        and q + width + 1 < end
                        and _starts_name(text[q + width + 1])
                    )
                    if not private:
                        break
                    width += 1
                q += width
                while q < end and _in_name(text[q]):
                    q += 1
            r = q
            while r < end and (text[r] == 0x20 or text[r] == 0x09):
                r += 1
            member = last >= 0 and (
                text[last] == 0x2E
                or (text[last] == 0x3A and last > 0 and text[last - 1] == 0x3A)
                or (text[last] == 0x3E and last > 0 and text[last - 1] == 0x2D)
            )
            if r < end and text[r] == 0x28 and not member and n < len(out_start):
                before = np.uint64(0)
                if word_start >= 0:
                    between = True
                    for i in range(word_end, start):
                        b = text[i]
                        if not (_is_space(b) or (pointers and b in (0x2A, 0x26))):
                            between = False
                            break
                    if between:
                        before = _hash(text, word_start, word_end)
                out_start[n] = start
                out_end[n] = q
                out_hash[n] = _hash(text, start, q)
                out_before[n] = before
                n += 1
            word_start = start
            word_end = q
            last = q - 1
            at = q
    return n
