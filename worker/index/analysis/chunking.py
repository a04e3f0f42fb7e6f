"""Split blobs into chunks: definitions from a real parser, line windows for other text.

Chunks partition a blob's non-blank lines: every line belongs to at most one chunk, each
chunk is a contiguous, blank-trimmed span. A definition's chunk starts at its leading doc
comments and decorators; a container (class, impl, namespace) keeps the lines that are not
in a nested definition (its head, its attributes). Spans are 0-based rows here; lines are
split on b"\\n", the same rule the excerpt code uses.

Blobs are chunked a batch at a time: line starts and blank lines come from numpy passes over
the whole batch (see `batch_text`), C, C++ and Python files are outlined together (see
`outline`), the batch's definitions (see `definitions`) are laid out one nesting level at a
time with array operations (see `chunk_layout`), and Python touches each definition and each
window, never each line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from worker.index.analysis.batch_text import BatchLines, line_starts
from worker.index.analysis.chunk_layout import (
    BatchDefinitions,
    ChunkCollector,
    DefinitionEmitter,
    region_chunks,
    text_windows,
)
from worker.index.analysis.definitions import NO_DEFINITIONS, Definitions, definitions, tree
from worker.index.analysis.grammars import PARSED_LANGUAGES, comment_prefixes
from worker.index.analysis.lexers import BatchLexemes, moved_to_batch
from worker.index.analysis.outline import Outline, c_outlines
from worker.index.analysis.python_outline import python_outlines

MINIFIED_LINE_BYTES: Final = 1000
"""Lines longer than this on average make a file minified code, chunked as text.

Its definitions would all start on its few lines, and a chunk is made of whole lines, so a
parse could not split it any finer; it would only cost: Django's three minified scripts
(240 KB, two or three lines each) took 0.07 s to parse, 4% of the build. The longest lines
of written code average about 150 bytes (Linux's register tables), minified code 9 KB.
"""
_OUTLINERS: Final = {"c": c_outlines, "python": python_outlines}
"""The outliner of each grammar family: C's reads C and C++."""
_FAMILY_LANGUAGES: Final = {"c": frozenset({"c", "cpp"}), "python": frozenset({"python"})}

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Chunk:
    """A span of rows (0-based, inclusive) with the definition it belongs to."""

    start_row: int
    end_row: int
    symbol: str | None
    kind: str


@dataclass(slots=True)
class ChunkBatch:
    """The chunks of a batch of blobs, in blob then row order, and each blob's line count."""

    blob: I64
    start_row: I64
    end_row: I64
    symbol: list[str | None]
    kind: list[str]
    n_lines: list[int]
    text: bytes
    """The blobs joined by b"\\n": each chunk's text is a slice of it."""
    line_starts: I64
    """Where each line of `text` starts."""
    offsets: I64
    """Where each chunk starts in `text`; its text runs to the next one's start (the lines
    between are blank)."""
    grammars: list[str | None]
    """The grammar each blob was parsed with; None if it was not (minified code is not)."""
    definitions: list[Definitions]
    """Each blob's definitions (none if it was not parsed)."""
    lexemes: dict[str, BatchLexemes]
    """The comments, strings and directives the outliners read, by lexer ("c", "python")."""


def _is_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _as_utf8(data: bytes) -> bytes:
    """The blob as valid UTF-8 for the parser: non-UTF-8 text is read as latin-1.

    Re-encoding never adds or removes a b"\n", so rows stay those of the original blob.
    """
    return data if _is_utf8(data) else data.decode("latin-1").encode("utf-8")


def _outlines(
    datas: Sequence[bytes], languages: Sequence[str | None], file_starts: I64
) -> tuple[dict[int, Outline | None], dict[str, BatchLexemes]]:
    """The outline (or None: parse whole) of every blob an outliner takes, by blob index;
    and the lexemes each outliner read, by grammar family, as [start, end) in the batch's
    text (where the blobs start at `file_starts`).

    Only valid UTF-8 gets an outline (the parser reads other text re-encoded), but every
    member's lexemes are kept: the call sites are read from the raw bytes.
    """
    outlines: dict[int, Outline | None] = {}
    lexemes: dict[str, BatchLexemes] = {}
    for name, outliner in _OUTLINERS.items():
        members = [i for i, language in enumerate(languages) if language in _FAMILY_LANGUAGES[name]]
        if not members:
            continue
        outlined = outliner([datas[i] for i in members])
        outlines.update(
            (i, outline)
            for i, outline in zip(members, outlined.outlines, strict=True)
            if _is_utf8(datas[i])
        )
        sizes = np.fromiter((len(datas[i]) for i in members), dtype=np.int64, count=len(members))
        own_starts = np.zeros(len(members), dtype=np.int64)
        np.cumsum(sizes[:-1] + 1, out=own_starts[1:])
        lexemes[name] = moved_to_batch(
            np.asarray(members, dtype=np.int64),
            own_starts,
            file_starts,
            outlined.lexeme_starts,
            outlined.lexeme_ends,
        )
    return outlines, lexemes


def chunk_batch(datas: Sequence[bytes], languages: Sequence[str | None]) -> ChunkBatch:
    """The chunks of a batch of (text) blobs, analysed under the given languages.

    A parsed language gets definition chunks plus `module` chunks for top-level code between
    them; anything else, and minified code, gets line windows.
    """
    lines = BatchLines(b"\n".join(datas))
    out = ChunkCollector()
    # Each blob starts a row: the one its offset in the joined text starts.
    sizes = np.fromiter(map(len, datas), dtype=np.int64, count=len(datas)) + 1
    offsets = np.zeros(len(datas), dtype=np.int64)
    np.cumsum(sizes[:-1], out=offsets[1:])
    row0s = np.searchsorted(lines.start_array, offsets)
    n_lines: list[int] = np.diff(np.append(row0s, len(lines.start_array))).tolist()
    first_rows: list[int] = row0s.tolist()
    languages = [
        None if len(data) > MINIFIED_LINE_BYTES * n else language
        for data, language, n in zip(datas, languages, n_lines, strict=True)
    ]
    outlines, lexemes = _outlines(datas, languages, offsets)
    groups: dict[tuple[bytes, ...], BatchDefinitions] = {}
    found_all: list[Definitions] = []
    for i, (data, language) in enumerate(zip(datas, languages, strict=True)):
        n, row0 = n_lines[i], first_rows[i]
        if language not in PARSED_LANGUAGES:
            text_windows(out, lines, row0, n)
            found_all.append(NO_DEFINITIONS)
            continue
        assert language is not None
        if i in outlines:
            found = definitions(data, language, outlines[i])
        else:
            found = definitions(_as_utf8(data), language, None)
        found_all.append(found)
        prefixes = comment_prefixes(language)
        if any(len(p) > 2 for p in prefixes):
            DefinitionEmitter(out, lines, row0, prefixes).region(
                0, n - 1, None, "module", tree(found)
            )
            continue
        group = groups.setdefault(prefixes, BatchDefinitions())
        group.add(row0, row0 + n - 1, found)
    for prefixes, group in groups.items():
        last_stop = lines.last_stop(prefixes)
        defs, level = group.arrays()
        while len(level.first):
            level = region_chunks(out, lines, level, defs, last_stop)
    start, end, symbol, kind = out.ordered()
    blob = np.searchsorted(row0s, start, side="right") - 1
    return ChunkBatch(
        blob=blob,
        start_row=start - row0s[blob],
        end_row=end - row0s[blob],
        symbol=symbol,
        kind=kind,
        n_lines=n_lines,
        text=lines.data,
        line_starts=lines.start_array,
        offsets=lines.start_array[start],
        grammars=[g if g in PARSED_LANGUAGES else None for g in languages],
        definitions=found_all,
        lexemes=lexemes,
    )


def chunk_blob(data: bytes, language: str | None) -> tuple[list[Chunk], I64]:
    """The chunks of one (text) blob and its line starts."""
    batch = chunk_batch([data], [language])
    chunks = [
        Chunk(s, e, sym, k)
        for s, e, sym, k in zip(
            batch.start_row.tolist(), batch.end_row.tolist(), batch.symbol, batch.kind, strict=True
        )
    ]
    return chunks, line_starts(data)
