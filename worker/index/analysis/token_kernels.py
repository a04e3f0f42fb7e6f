"""The compiled loops of raw-token analysis (numba), apart so that only a build imports numba."""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.index.analysis.compiled import compiled as _compiled
from worker.index.analysis.tokens import WORD_CHARACTERS

_WORD_BYTES = np.zeros(256, np.bool_)
_WORD_BYTES[list(WORD_CHARACTERS.encode())] = True


@_compiled(nogil=True)
def word_runs(text: Any, text_starts: Any, min_length: int, max_length: int) -> Any:
    # Every run of word bytes ([A-Za-z0-9_]) of `text` that is min_length to max_length
    # long: the runs' bytes joined, their offsets, and the text each starts in (texts are
    # slices from text_starts, the first at 0).
    n = len(text)
    words = np.empty(n, np.uint8)
    offsets = np.empty(n // 2 + 2, np.int64)
    texts = np.empty(n // 2 + 1, np.int64)
    offsets[0] = 0
    n_runs = 0
    n_bytes = 0
    current = 0
    at = 0
    while at < n:
        if not _WORD_BYTES[text[at]]:
            at += 1
            continue
        start = at
        end = n_bytes
        # Copied as it is read; a run out of range is written over by the next.
        while at < n and _WORD_BYTES[text[at]]:
            words[end] = text[at]
            end += 1
            at += 1
        if not min_length <= at - start <= max_length:
            continue
        while current + 1 < len(text_starts) and text_starts[current + 1] <= start:
            current += 1
        n_bytes = end
        texts[n_runs] = current
        n_runs += 1
        offsets[n_runs] = n_bytes
    return words[:n_bytes], offsets[: n_runs + 1], texts[:n_runs]


@_compiled()
def identifier_parts(  # noqa: PLR0917 (numba compiles positional parameters only)
    data: Any, offsets: Any, classes: Any, starts_part: Any, lower: Any, underscore: int, past: int
) -> Any:
    # Each token's (data[offsets[t]:offsets[t + 1]]) identifier parts: a part starts where
    # starts_part[before * 25 + class * 5 + after] says (the classes of the bytes around
    # it, `past` beyond the token's ends) and holds the lower-cased bytes up to the next
    # start but underscores. Returns the tokens lower-cased, the parts' bytes joined,
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
        before = past
        for at in range(offsets[token], end):
            this = classes[data[at]]
            after = classes[data[at + 1]] if at + 1 < end else past
            lowered[at] = lower[data[at]]
            if starts_part[before * 25 + this * 5 + after]:
                part_offsets[n_parts] = n_kept
                part_token[n_parts] = token
                n_parts += 1
            if this != underscore:
                kept[n_kept] = lowered[at]
                n_kept += 1
            before = this
    part_offsets[n_parts] = n_kept
    return lowered, kept[:n_kept], part_offsets[: n_parts + 1], part_token[:n_parts]
