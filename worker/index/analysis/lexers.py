"""Comments, string literals (and C directives) of C and its kin, and of Python, in one scan.

The same spans as a scan with `C_LEXEMES` (and its variants) or `PY_LEXEMES` (finditer
over each file), by a compiled loop (`lexer_kernels`) instead of a regular expression
engine trying every byte (which took 6% of a Python repository's build): from each byte
that may open a lexeme, the first kind that matches there, then on from its end.

Inside a literal or a directive a backslash escapes the next byte, so a quote or newline
after an odd run of backslashes does not end one. Inside a directive a block comment is
skipped whole (it may span lines) and quotes mean nothing; one that never closes ends the
directive where it starts. A raw string (Go's backticks) has no escapes and may span lines.
In Python a triple-quoted string runs to the first unescaped triple quote; one that never
closes is read as the empty string its first two quotes make.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Spans = tuple[I64, I64]

_C_COMMENTS_AND_STRINGS: Final = (
    rb"//[^\n]*|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/"  # comments
    rb"|\"[^\"\\\n]*(?:\\.[^\"\\\n]*)*\"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'"  # strings, chars
)
_C_DIRECTIVES: Final = (
    # directives, with continuation lines and comments (a comment may run past the line end)
    rb"|#[^\n\\/]*(?:(?:\\.|/\*[^*]*\*+(?:[^/*][^*]*\*+)*/|/(?!\*))[^\n\\/]*)*"
)
_RAW_STRINGS: Final = rb"|`[^`]*`"
_TEXT_BLOCKS: Final = rb'"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""|'

C_LEXEMES: Final = re.compile(_C_COMMENTS_AND_STRINGS + _C_DIRECTIVES, re.S)
"""What `c_lexemes` finds, as a regular expression (the reference its tests compare with)."""
GO_LEXEMES: Final = re.compile(_C_COMMENTS_AND_STRINGS + _RAW_STRINGS, re.S)
"""What `c_lexemes` finds with raw strings and without directives (Go)."""
JAVA_LEXEMES: Final = re.compile(_TEXT_BLOCKS + _C_COMMENTS_AND_STRINGS + _C_DIRECTIVES, re.S)
"""What `c_lexemes` finds with text blocks (Java)."""
JS_LEXEMES: Final = re.compile(_C_COMMENTS_AND_STRINGS, re.S)
"""What `c_lexemes` finds without directives (JavaScript, TypeScript)."""
PY_LEXEMES: Final = re.compile(
    rb"#[^\n]*"
    rb'|"""[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*"""'
    rb"|'''[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*'''"
    rb'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    rb"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'",
    re.S,
)
"""What `python_lexemes` finds: comments, strings (string prefixes are read as names)."""


@dataclass(frozen=True, slots=True)
class BatchLexemes:
    """The lexemes of some blobs of a batch: [start, end) in the batch's joined text, in order."""

    blobs: I64
    """The blobs (batch indices, ascending) that were read: their lexemes are all here."""
    starts: I64
    ends: I64


def moved_to_batch(
    blobs: I64, own_starts: I64, batch_starts: I64, starts: I64, ends: I64
) -> BatchLexemes:
    """Lexemes read in a buffer of some blobs of their own (the i-th at `own_starts[i]`),
    moved to where those blobs lie in the batch's text (`batch_starts[blobs[i]]`)."""
    shift = batch_starts[blobs] - own_starts
    moved = shift[np.searchsorted(own_starts, starts, side="right") - 1]
    return BatchLexemes(blobs, starts + moved, ends + moved)


def c_lexemes(
    a: U8,
    file_starts: I64,
    file_ends: I64,
    *,
    directives: bool = True,
    raw_strings: bool = False,
    text_blocks: bool = False,
) -> Spans:
    """[start, end) of every lexeme of each file [file_starts, file_ends) of `a`, in order.

    Without `directives` (the languages that borrowed C's comments and strings but not its
    preprocessor) a `#` is code; with `raw_strings` (Go) a string also runs from a backtick
    to the next, across lines; with `text_blocks` (Java) three quotes open a string that runs
    to the next unescaped three.
    """
    from worker.index.analysis import lexer_kernels as kernels

    kinds = (
        kernels.C_COMMENTS
        | (kernels.DIRECTIVES if directives else 0)
        | (kernels.RAW_STRINGS if raw_strings else 0)
        | (kernels.TRIPLE_DOUBLE if text_blocks else 0)
    )
    return _scanned(a, file_starts, file_ends, kinds)


def python_lexemes(a: U8, file_starts: I64, file_ends: I64) -> Spans:
    """[start, end) of every comment and string of each file [file_starts, file_ends) of `a`."""
    from worker.index.analysis import lexer_kernels as kernels

    kinds = kernels.HASH_COMMENTS | kernels.TRIPLE_DOUBLE | kernels.TRIPLE_SINGLE
    return _scanned(a, file_starts, file_ends, kinds)


def _scanned(a: U8, file_starts: I64, file_ends: I64, kinds: int) -> Spans:
    from worker.index.analysis.lexer_kernels import lexemes

    starts, ends = lexemes(
        a,
        np.asarray(file_starts, dtype=np.int64),
        np.asarray(file_ends, dtype=np.int64),
        kinds,
    )
    return starts, ends


_DIRECTIVE_GAP: Final = np.zeros(256, dtype=bool)
_DIRECTIVE_GAP[list(b" \t")] = True
"""What may come between a directive's `#` and its keyword (`#  define`), and after it."""


def directives_reading(a: U8, starts: I64, ends: I64, keyword: bytes) -> tuple[I64, I64]:
    """Of C directives ([start, end) in `a`, as `c_lexemes` finds them), those whose keyword
    is `keyword`: their indices, and where the first byte after the keyword's blanks is."""
    from worker.index.analysis.line_kernels import first_not_in

    at = first_not_in(a, starts + 1, ends, _DIRECTIVE_GAP)
    picked = np.flatnonzero(at + len(keyword) <= ends)
    at = at[picked]
    for i, byte in enumerate(keyword):
        keep = a[at + i] == byte
        picked, at = picked[keep], at[keep]
    after = first_not_in(a, at + len(keyword), ends[picked], _DIRECTIVE_GAP)
    return picked, after


def inside(pos: I64, starts: I64, ends: I64) -> Mask:
    """Whether each position lies in one of the sorted, disjoint [start, end) spans."""
    if not len(starts):
        return np.zeros(len(pos), dtype=bool)
    k = np.searchsorted(starts, pos, side="right") - 1
    within: Mask = (k >= 0) & (pos < ends[np.maximum(k, 0)])
    return within
