"""Bounded excerpts: blob text decoded losslessly, cut at line boundaries, overlapping spans merged.

An excerpt is always exactly `"\\n".join(lines[start - 1 : end])` of the blob's text, so
anyone holding the commit can check it. A line longer than the excerpt limit is never
cut in half: a window simply cannot contain it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

BINARY_SNIFF_BYTES: Final = 8000


@dataclass(frozen=True, slots=True)
class BlobText:
    """A text blob split into lines, with the encoding that decoded it."""

    lines: tuple[str, ...]
    encoding: str


@dataclass(frozen=True, slots=True)
class Excerpt:
    """Lines `start`..`end` (1-based, inclusive) of a blob, and whether its span was cut."""

    text: str
    start: int
    end: int
    truncated: bool


def is_binary(data: bytes) -> bool:
    """Git's heuristic: a NUL byte near the start means binary."""
    return b"\0" in data[:BINARY_SNIFF_BYTES]


def decode_text(data: bytes) -> BlobText | None:
    """The lines of a text blob (UTF-8, else latin-1, both lossless), or None for binary data."""
    if is_binary(data):
        return None
    try:
        text, encoding = data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        text, encoding = data.decode("latin-1"), "latin-1"
    return BlobText(lines=tuple(text.split("\n")), encoding=encoding)


def merge_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching line spans merged, in order."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def cut_excerpt(
    lines: Sequence[str],
    start: int,
    end: int,
    max_chars: int,
    line_weight: Callable[[str], float] | None = None,
) -> Excerpt | None:
    """The best window of whole lines within `start`..`end` whose text fits in `max_chars`.

    The whole span when it fits; otherwise the window with the most weight (the first
    line of the span counts extra, so a definition keeps its signature when it can),
    earliest on ties. None when not even one line of the span fits.
    """
    start = max(start, 1)
    end = min(end, len(lines))
    if start > end:
        return None
    span = lines[start - 1 : end]
    if sum(len(line) for line in span) + len(span) - 1 <= max_chars:
        return Excerpt(text="\n".join(span), start=start, end=end, truncated=False)

    weigh = line_weight or (lambda _line: 0.0)
    weights = [weigh(line) + (0.5 if i == 0 else 0.0) for i, line in enumerate(span)]
    best: tuple[float, int, int] | None = (
        None  # (weight, -first, last): heaviest, earliest, longest
    )
    first, size, weight = 0, 0, 0.0
    for last, line in enumerate(span):
        if len(line) > max_chars:
            first, size, weight = last + 1, 0, 0.0
            continue
        size += len(line) + (1 if last > first else 0)
        weight += weights[last]
        while size > max_chars:
            size -= len(span[first]) + 1
            weight -= weights[first]
            first += 1
        candidate = (weight, -first, last)
        if best is None or candidate > best:
            best = candidate
    if best is None:
        return None
    lo, hi = -best[1], best[2]
    return Excerpt(
        text="\n".join(span[lo : hi + 1]), start=start + lo, end=start + hi, truncated=True
    )
