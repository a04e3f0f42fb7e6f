"""The compiled loops of the trigram analysis (numba), apart so that only a build imports numba."""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.index.analysis.compiled import compiled as _compiled

_DEFINE = np.frombuffer(b"define", dtype=np.uint8).reshape(1, 6)
_DEFINE_LENGTH = np.array([6], dtype=np.int64)


@_compiled(inline="always")
def _is_blank(byte: int) -> bool:
    return byte in (0x20, 0x09, 0x0D, 0x0C, 0x0B)


@_compiled(inline="always")
def is_word(byte: int) -> bool:
    return (
        (0x30 <= byte <= 0x39) or (0x41 <= byte <= 0x5A) or (0x61 <= byte <= 0x7A) or byte == 0x5F
    )


@_compiled(inline="always")
def word_at(text: Any, at: int, end: int, table: Any, lengths: Any) -> int:
    # The length of a word of `table` that `text` holds at `at` and that ends on a word
    # boundary (`end`, a line break or any other non-word byte follows), else 0.
    for k in range(len(lengths)):
        size = lengths[k]
        if at + size > end or (at + size < end and is_word(text[at + size])):
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
    text: Any,
    at: int,
    end: int,
    modifiers: Any,
    n_mod: Any,
    keywords: Any,
    n_kw: Any,
    opening: Any,
) -> bool:
    # DEFINITION_LINE.match on the line starting at `at` (it ends at a line break or `end`),
    # by hand: blanks, modifiers each followed by blanks, then a keyword or `#define` ending
    # on a word boundary. No keyword starts a modifier nor the reverse, so taking modifiers
    # greedily never misses a match. A line break is neither blank nor a word character.
    # `opening[b0 << 8 | b1]` selects the two bytes a modifier, a keyword or `#` (then a
    # blank or `d`) starts with: most lines start with none, and are done with one look.
    while at < end and _is_blank(text[at]):
        at += 1
    while True:
        if at + 1 >= end or not opening[(np.int64(text[at]) << 8) | text[at + 1]]:
            return False
        if word_at(text, at, end, keywords, n_kw):
            return True
        if text[at] == 0x23:  # '#' (the look above saw a byte after it)
            q = at + 1
            while q < end and _is_blank(text[q]):
                q += 1
            if word_at(text, q, end, _DEFINE, _DEFINE_LENGTH):
                return True
        size = word_at(text, at, end, modifiers, n_mod)
        if size == 0 or at + size >= end or not _is_blank(text[at + size]):
            return False
        at += size
        while at < end and _is_blank(text[at]):
            at += 1


@_compiled(nogil=True)
def pairs(  # noqa: PLR0917 (numba compiles positional parameters only)
    text: Any,
    starts: Any,
    ends: Any,
    folded: bool,
    seen: Any,
    codes: Any,
    definition_codes: Any,
    pair_ends: Any,
    definition_text: Any,
    definition_ends: Any,
    lower: Any,
    modifiers: Any,
    n_mod: Any,
    keywords: Any,
    n_kw: Any,
    opening: Any,
) -> Any:
    # Each blob's distinct trigrams of its lowercased text, and of its definition lines, in
    # one pass. seen[0] and seen[1] are bit sets of every trigram (uint64 words), all clear
    # between blobs: the blob's trigrams so far, and those of its definition lines so far.
    # A blob clears the bits it set from the trigrams it emitted, so two sets of 2 MB serve
    # every blob without a pass over them. Text the caller `folded` gets no definition lines
    # here (its case is gone).
    #
    # Blob i's pairs end where pair_ends[0, i] (text) and pair_ends[1, i] (definition lines)
    # say: the blobs of a run of pairs are known without writing one for each pair.
    #
    # The definition lines' own bytes, each with its line break (the last line of a blob may
    # have none), go to `definition_text`; `definition_ends[i]` is where blob i's end there.
    in_text, in_definitions = seen[0], seen[1]
    n = 0
    n_def = 0
    m = 0
    for i in range(len(starts)):
        start, end = starts[i], ends[i]
        first, first_def = n, n_def
        code = 0
        at = start
        # Line by line: whether a line defines something is read once, at its start.
        while at < end:
            line = at
            defining = not folded and _defines(
                text, line, end, modifiers, n_mod, keywords, n_kw, opening
            )
            while at < end:
                byte = text[at]
                if defining:
                    definition_text[m] = byte
                    m += 1
                code = ((code << 8) | lower[byte]) & 0xFFFFFF
                at += 1
                # `code` holds the three bytes before `at`: the blob's (and the line's) once
                # `at` is three past its start.
                if at - start > 2:
                    word = code >> 6
                    bit = np.uint64(1) << np.uint64(code & 63)
                    # Written always, kept (n moves on) only if new: no branch to mispredict.
                    held = in_text[word]
                    in_text[word] = held | bit
                    codes[n] = code
                    n += (held & bit) == 0
                    if (
                        defining
                        and byte != 0x0A
                        and at - line > 2
                        and not in_definitions[word] & bit
                    ):
                        in_definitions[word] |= bit
                        definition_codes[n_def] = code
                        n_def += 1
                if byte == 0x0A:
                    break
        for k in range(first, n):
            in_text[codes[k] >> 6] = 0
        for k in range(first_def, n_def):
            in_definitions[definition_codes[k] >> 6] = 0
        pair_ends[0, i], pair_ends[1, i] = n, n_def
        definition_ends[i] = m
    return n, n_def


@_compiled(inline="always")
def _ones(word: Any) -> Any:
    # How many bits of a uint64 are set (LLVM makes this one popcount instruction).
    word = word - ((word >> np.uint64(1)) & np.uint64(0x5555555555555555))
    word = (word & np.uint64(0x3333333333333333)) + (
        (word >> np.uint64(2)) & np.uint64(0x3333333333333333)
    )
    word = (word + (word >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((word * np.uint64(0x0101010101010101)) >> np.uint64(56))


@_compiled(nogil=True)
def mark_trigrams(codes: Any, present: Any) -> None:
    # Set each code's bit in `present` (a bitset over every trigram, 64 to a word).
    for i in range(len(codes)):
        code = np.uint64(codes[i])
        present[code >> np.uint64(6)] |= np.uint64(1) << (code & np.uint64(63))


@_compiled(nogil=True)
def rank_words(present: Any) -> Any:
    # For each word of `present`, how many bits the words before it set; and how many in all.
    before = np.empty(len(present), np.int64)
    total = 0
    for w in range(len(present)):
        before[w] = total
        total += _ones(present[w])
    return before, total


@_compiled(nogil=True)
def rank_codes(codes: Any, present: Any, before: Any, counts: Any) -> None:
    # Replace each code by its rank among the codes `present` holds, and count it.
    for i in range(len(codes)):
        code = np.uint64(codes[i])
        w = code >> np.uint64(6)
        below = present[w] & ((np.uint64(1) << (code & np.uint64(63))) - np.uint64(1))
        rank = before[w] + _ones(below)
        codes[i] = rank
        counts[rank] += 1


@_compiled(nogil=True)
def present_codes(present: Any, n: int) -> Any:
    # The `n` codes `present` holds, ascending.
    found = np.empty(n, np.uint32)
    k = 0
    for w in range(len(present)):
        word = present[w]
        while word:
            lowest = word & (~word + np.uint64(1))
            found[k] = np.uint32(w * 64 + _ones(lowest - np.uint64(1)))
            k += 1
            word ^= lowest
    return found


@_compiled(nogil=True)
def place_owners(ranks: Any, blobs: Any, ends: Any, at: Any, postings: Any) -> None:
    # A stable counting sort's last pass, one part at a time and parts in order: each
    # trigram's blobs stay in the order the pairs came in. Blob blobs[i] owns the pairs up
    # to ends[i] (from the previous end); `at` holds where each rank's list fills from.
    i = 0
    for b in range(len(blobs)):
        blob = blobs[b]
        while i < ends[b]:
            rank = ranks[i]
            postings[at[rank]] = blob
            at[rank] += 1
            i += 1
