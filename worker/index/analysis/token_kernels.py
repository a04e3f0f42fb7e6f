"""The compiled loops of raw-token analysis (numba), apart so that only a build imports numba."""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.index.analysis.compiled import compiled as _compiled
from worker.index.analysis.tokens import WORD_CHARACTERS

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_EMPTY = -1
_AT, _TEXT, _KEYS, _BYTES, _SLOTS = 0, 1, 2, 3, 4
"""Where `_scan` is and what it has filled, kept in a small array between its calls."""


_WORD_BYTES = np.zeros(256, np.bool_)
_WORD_BYTES[list(WORD_CHARACTERS.encode())] = True


@_compiled(inline="always")
def _is_word(byte: int) -> bool:
    return bool(_WORD_BYTES[byte])


@_compiled()
def _grown(array: Any, size: int) -> Any:
    # The array with room for `size` items (doubled as needed), its items kept.
    capacity = len(array)
    if size <= capacity:
        return array
    while capacity < size:
        capacity *= 2
    bigger = np.empty(capacity, array.dtype)
    bigger[: len(array)] = array
    return bigger


@_compiled()
def _rehashed(hashes: Any, n_slots: int, capacity: int) -> Any:
    # A table of `capacity` (a power of two) holding slots 0..n_slots-1 by their hashes.
    table = np.full(capacity, _EMPTY, np.int32)
    mask = np.uint64(capacity - 1)
    for slot in range(n_slots):
        at = hashes[slot] & mask
        while table[at] != _EMPTY:
            at = (at + np.uint64(1)) & mask
        table[at] = slot
    return table


@_compiled(inline="always")
def _word_end(text: Any, at: int) -> Any:
    # Where the run of word bytes from `at` ends, and its hash (FNV-1a).
    h = _FNV_OFFSET
    while at < len(text) and _is_word(text[at]):
        h = (h ^ np.uint64(text[at])) * _FNV_PRIME
        at += 1
    return at, h


@_compiled(inline="always")
def _find(  # noqa: PLR0917 (numba compiles positional parameters only)
    table: Any, h: Any, hashes: Any, starts: Any, words: Any, word: Any
) -> Any:
    # The table position that holds `word`'s slot, or the empty one it would go to, and
    # the slot (-1: none yet).
    mask = np.uint64(len(table) - 1)
    probe = h & mask
    while table[probe] != _EMPTY:
        slot = table[probe]
        first = starts[slot]
        if hashes[slot] == h and starts[slot + 1] - first == len(word):
            same = True
            for i in range(len(word)):
                if words[first + i] != word[i]:
                    same = False
                    break
            if same:
                return probe, np.int64(slot)
        probe = (probe + np.uint64(1)) & mask
    return probe, np.int64(-1)


@_compiled()
def _scan(  # noqa: PLR0917 (numba compiles positional parameters only)
    text: Any,
    text_starts: Any,
    min_length: int,
    max_length: int,
    state: Any,
    keys: Any,
    words: Any,
    starts: Any,
    hashes: Any,
    table: Any,
) -> None:
    # `word_keys` from state[AT] on, until the text ends or a buffer is full: it stops
    # before a run that might not fit. The buffers are never replaced here, so the loop
    # holds them as they are (replacing one in the loop made every pass slower).
    at, current = state[_AT], state[_TEXT]
    n_keys, n_bytes, n_slots = state[_KEYS], state[_BYTES], state[_SLOTS]
    n_texts = len(text_starts)
    while at < len(text):
        if not _is_word(text[at]):
            at += 1
            continue
        start = at
        end, h = _word_end(text, at)
        length = end - start
        if length < min_length or length > max_length:
            at = end
            continue
        if (
            n_keys == len(keys)
            or n_bytes + length > len(words)
            or n_slots + 2 > len(starts)
            or 2 * (n_slots + 1) > len(table)
        ):
            break
        at = end
        while current + 1 < n_texts and text_starts[current + 1] <= start:
            current += 1
        probe, slot = _find(table, h, hashes, starts, words, text[start:end])
        if slot < 0:
            slot = n_slots
            words[n_bytes : n_bytes + length] = text[start:end]
            starts[slot] = n_bytes
            n_bytes += length
            n_slots += 1
            starts[n_slots] = n_bytes
            hashes[slot] = h
            table[probe] = slot
        keys[n_keys] = slot * n_texts + current
        n_keys += 1
    state[_AT], state[_TEXT] = at, current
    state[_KEYS], state[_BYTES], state[_SLOTS] = n_keys, n_bytes, n_slots


@_compiled()
def word_keys(text: Any, text_starts: Any, min_length: int, max_length: int) -> Any:
    # Every run of word bytes ([A-Za-z0-9_]) of `text` that is min_length to max_length
    # long, named by its slot: its place among the distinct such runs, in the order each
    # first occurs. Returns the distinct runs' bytes and offsets, and one key per run,
    # slot * len(text_starts) + the text it starts in (texts are slices from text_starts).
    n = len(text)
    keys = np.empty(max(16, n // 4), np.int64)
    words = np.empty(max(16, n // 16), np.uint8)
    starts = np.zeros(1024, np.int64)
    hashes = np.empty(1024, np.uint64)
    table = np.full(2048, _EMPTY, np.int32)
    state = np.zeros(5, np.int64)
    while True:
        _scan(text, text_starts, min_length, max_length, state, keys, words, starts, hashes, table)
        if state[_AT] >= n:
            break
        n_keys, n_bytes, n_slots = state[_KEYS], state[_BYTES], state[_SLOTS]
        keys = _grown(keys, n_keys + 1)
        words = _grown(words, n_bytes + max_length)
        starts = _grown(starts, n_slots + 2)
        hashes = _grown(hashes, n_slots + 2)
        if 2 * (n_slots + 1) > len(table):
            table = _rehashed(hashes, n_slots, 2 * len(table))
    n_bytes, n_slots = state[_BYTES], state[_SLOTS]
    return words[:n_bytes].copy(), starts[: n_slots + 1].copy(), keys[: state[_KEYS]].copy()


@_compiled()
def identifier_parts(data: Any, offsets: Any, classes: Any, starts_part: Any, lower: Any) -> Any:
    # Each token's (data[offsets[t]:offsets[t + 1]]) identifier parts: a part starts where
    # starts_part[before * 25 + class * 5 + after] says (the classes of the bytes around
    # it, 4 past the token's ends) and holds the lower-cased bytes up to the next start
    # but underscores (class 3). Returns the tokens lower-cased, the parts' bytes joined,
    # their offsets, and each part's token.
    n = len(data)
    lowered = np.empty(n, np.uint8)
    kept = np.empty(n, np.uint8)
    part_offsets = np.empty(n + 1, np.int64)
    part_token = np.empty(n, np.int32)
    n_kept = 0
    n_parts = 0
    for token in range(len(offsets) - 1):
        end = offsets[token + 1]
        before = 4
        for at in range(offsets[token], end):
            this = classes[data[at]]
            after = classes[data[at + 1]] if at + 1 < end else 4
            lowered[at] = lower[data[at]]
            if starts_part[before * 25 + this * 5 + after]:
                part_offsets[n_parts] = n_kept
                part_token[n_parts] = token
                n_parts += 1
            if this != 3:
                kept[n_kept] = lowered[at]
                n_kept += 1
            before = this
    part_offsets[n_parts] = n_kept
    return lowered, kept[:n_kept], part_offsets[: n_parts + 1], part_token[:n_parts]
