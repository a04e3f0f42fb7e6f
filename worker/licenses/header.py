"""Read the `SPDX-License-Identifier:` header of a source file.

Only a tag at the start of a comment line counts (after an optional comment leader
such as `#`, `//`, `/*`, `*`, `--`, `<!--`, `;`, `%`), so a program that merely
mentions the tag in a string is not taken as declaring a license. The value must be a
syntactically valid SPDX license expression; it is kept as written, with whitespace
collapsed and a trailing comment closer removed. Ids are not checked against the SPDX
list here: a newer id or a `LicenseRef-` is still the author's declaration.
"""

from __future__ import annotations

import re

HEADER_SCAN_BYTES = 8192
"""How much of the start of a file is searched for the tag."""
HEADER_SCAN_LINES = 30
"""How many lines at the start of a file are searched for the tag."""
MAX_EXPRESSION_CHARS = 256
"""A longer value is not an expression somebody wrote by hand; it is ignored."""

_TAG_LINE = re.compile(
    r"""^[ \t]*
    (?:<!--|/\*+|\*+|//+|\#+|--|;+|%+|!|\(\*|\{-|\.\.|REM\b|@REM\b|::|dnl\b)?
    [ \t]*SPDX-License-Identifier:[ \t]*(?P<value>.*)$""",
    re.IGNORECASE | re.VERBOSE,
)
_COMMENT_CLOSERS = ("*/", "-->", "*)", "-}")
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_ID = re.compile(r"^(?:DocumentRef-[A-Za-z0-9.-]+:)?[A-Za-z0-9][A-Za-z0-9.-]*\+?$")
_OPERATORS = {"AND", "OR", "WITH"}


def spdx_header(head: bytes | str) -> str | None:
    """Return the SPDX expression declared at the top of a file, or None when there is none.

    Several tag lines in one file (as REUSE allows) all apply, so they are joined with AND.
    """
    if isinstance(head, bytes):
        head = head[:HEADER_SCAN_BYTES].decode("utf-8", errors="replace")
    head = head[:HEADER_SCAN_BYTES].removeprefix("\ufeff")
    found: list[str] = []
    for line in head.splitlines()[:HEADER_SCAN_LINES]:
        match = _TAG_LINE.match(line)
        if match is None:
            continue
        value = _clean(match.group("value"))
        if value is not None and value not in found:
            found.append(value)
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    return " AND ".join(f"({value})" if " " in value else value for value in found)


def is_spdx_expression(text: str) -> bool:
    """Tell whether `text` is a syntactically valid SPDX license expression."""
    tokens = _TOKEN.findall(text)
    if not tokens:
        return False
    parser = _ExpressionSyntax(tokens)
    return parser.expression() and parser.at_end()


def _clean(raw: str) -> str | None:
    value = raw.strip()
    stripped = True
    while stripped:
        stripped = False
        for closer in _COMMENT_CLOSERS:
            if value.endswith(closer):
                value = value[: -len(closer)].rstrip()
                stripped = True
    value = " ".join(value.split())
    if not value or len(value) > MAX_EXPRESSION_CHARS or not is_spdx_expression(value):
        return None
    return value


class _ExpressionSyntax:
    """A recursive-descent check of the SPDX expression grammar (SPDX 2.3, annex D).

    Operators are accepted in upper or lower case, as the specification allows.
    """

    def __init__(self, tokens: list[str]) -> None:
        self._tokens = tokens
        self._at = 0

    def at_end(self) -> bool:
        return self._at == len(self._tokens)

    def expression(self) -> bool:
        if not self._with_expression():
            return False
        while self._operator() in {"AND", "OR"}:
            self._at += 1
            if not self._with_expression():
                return False
        return True

    def _with_expression(self) -> bool:
        if not self._atom():
            return False
        if self._operator() == "WITH":
            self._at += 1
            return self._identifier()
        return True

    def _atom(self) -> bool:
        if self._peek() == "(":
            self._at += 1
            if not self.expression() or self._peek() != ")":
                return False
            self._at += 1
            return True
        return self._identifier()

    def _identifier(self) -> bool:
        token = self._peek()
        if token is None or token in {"(", ")"} or token.upper() in _OPERATORS:
            return False
        if _ID.match(token) is None:
            return False
        self._at += 1
        return True

    def _operator(self) -> str | None:
        token = self._peek()
        if token is None or token not in {"AND", "OR", "WITH", "and", "or", "with"}:
            return None
        return token.upper()

    def _peek(self) -> str | None:
        return self._tokens[self._at] if self._at < len(self._tokens) else None
