"""The one table every benchmark prints: columns padded to their widest cell, a rule under
the header row."""

from __future__ import annotations

from collections.abc import Sequence


def render(rows: Sequence[Sequence[str]]) -> str:
    """`rows` (the first is the header) as aligned text."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "-" * max(len(line) for line in lines))
    return "\n".join(lines)
