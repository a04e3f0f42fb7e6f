"""The compiled loops of raw-token analysis (numba), apart so that only a build imports numba."""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.index.analysis.compiled import compiled as _compiled
from worker.index.analysis.tokens import WORD_CHARACTERS

_WORD_BYTES = np.zeros(256, np.bool_)
_WORD_BYTES[list(WORD_CHARACTERS.encode())] = True


@_compiled(inline="always")
def _run_ends(  # noqa: PLR0917 (numba compiles positional parameters only)
    start: int,
    stop: int,
    end: int,
    min_length: int,
    max_length: int,
    text_starts: Any,
    offsets: Any,
    texts: Any,
    state: Any,
) -> int:
    # A run [start, stop) ends with its bytes written up to `end`: kept if its length is in
    # range, else its bytes are taken back. state: (runs kept, the text of the last kept).
    if not min_length <= stop - start <= max_length:
        return int(offsets[state[0]])
    current = state[1]
    while current + 1 < len(text_starts) and text_starts[current + 1] <= start:
        current += 1
    state[1] = current
    texts[state[0]] = current
    state[0] += 1
    offsets[state[0]] = end
    return end


@_compiled(nogil=True)
def word_runs(  # noqa: PLR0917 (numba compiles positional parameters only)
    text: Any,
    text_starts: Any,
    min_length: int,
    max_length: int,
    words: Any,
    offsets: Any,
    texts: Any,
) -> Any:
    # Every run of word bytes ([A-Za-z0-9_]) of `text` that is min_length to max_length
    # long: the runs' bytes joined into `words`, their offsets into `offsets`, and the text
    # each starts in into `texts` (texts are slices from text_starts, the first at 0).
    # Returns how many bytes and runs were written. The caller's arrays hold len(text),
    # len(text) // 2 + 2 and len(text) // 2 + 1 at least: what the most runs take.
    #
    # One step per byte and few branches: every byte is written, and only a word byte
    # moves the end on (the next byte overwrites any other).
    n = len(text)
    offsets[0] = 0
    state = np.zeros(2, np.int64)
    end = 0
    run_start = 0
    in_run = False
    for at in range(n):
        byte = text[at]
        word = _WORD_BYTES[byte]
        words[end] = byte
        end += word
        if word != in_run:
            if word:
                run_start = at
            else:
                end = _run_ends(
                    run_start, at, end, min_length, max_length, text_starts, offsets, texts, state
                )
            in_run = word
    if in_run:
        end = _run_ends(
            run_start, n, end, min_length, max_length, text_starts, offsets, texts, state
        )
    return end, state[0]


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
