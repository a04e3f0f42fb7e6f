"""Compiling a caller's query and path glob with RE2, and finding matching lines in a blob.

RE2 runs in time linear in the text, whatever the pattern, so a hostile pattern such as
`(a+)+$` cannot make a worker backtrack for ever; patterns RE2 rejects (backreferences,
lookaround) or that need more than the memory budget are refused as INVALID_REQUEST.
Matching is line by line (RE2's `never_nl`: no match spans a line break), as grep does.
A literal matched with case is found with `bytes.find`, whose worst case is bounded too
(CPython moves to its linear two-way search where a long literal would be slow).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import re2

from worker.errors import InvalidRequest
from worker.index.views.queryplan import TrigramQuery, plan_literal, plan_regex

_WORD: Final = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


@dataclass(frozen=True, slots=True)
class LineMatch:
    """The first match on one line: byte offsets in the blob, and its line number."""

    line_number: int
    line_start: int
    line_end: int
    match_start: int
    match_end: int


@dataclass(frozen=True, slots=True)
class CompiledQuery:
    """A query ready to run: the RE2 program and the trigram plan that preselects files."""

    regex: Any
    plan: TrigramQuery
    needle: str | None
    """The literal query lowercased (for ranking file names), None for a regex."""
    literal: bytes | None = None
    """A literal query matched with case, as UTF-8: found with `bytes.find`, which finds the
    same first match of a line as the RE2 program, in less time."""

    def lines(self, data: bytes) -> Iterator[LineMatch]:
        """The first match of every matching line of `data`, in order."""
        first_match = self._first_match
        position, line_number, counted_to = 0, 1, 0
        size = len(data)
        while position <= size:
            found = first_match(data, position)
            if found is None:
                return
            start, end = found
            if start == size and (size == 0 or data[size - 1] == 0x0A):
                return  # an empty match after the final line break is not on a line
            line_number += data.count(b"\n", counted_to, start)
            counted_to = start
            line_start = data.rfind(b"\n", 0, start) + 1
            line_end = data.find(b"\n", end)
            if line_end < 0:
                line_end = size
            yield LineMatch(line_number, line_start, line_end, start, end)
            position = line_end + 1

    def matches(self, data: bytes) -> bool:
        """Whether any line of `data` matches."""
        return next(self.lines(data), None) is not None

    def _first_match(self, data: bytes, position: int) -> tuple[int, int] | None:
        """Where the first match at or after `position` starts and ends, if there is one."""
        if self.literal is not None:
            start = data.find(self.literal, position)
            return None if start < 0 else (start, start + len(self.literal))
        found = self.regex.search(data, position)
        return None if found is None else found.span()


def compile_query(query: str, *, regex: bool, ignore_case: bool, max_mem: int) -> CompiledQuery:
    """The compiled query, or InvalidRequest naming `query` and RE2's complaint."""
    if "\n" in query or "\r" in query:
        raise InvalidRequest(
            "query: a line break can never match (search is line by line)",
            field="query",
            reason="line-break",
        )
    options = re2.Options()
    options.never_nl = True
    options.log_errors = False
    options.max_mem = max_mem
    options.case_sensitive = not ignore_case
    # (?m): `^` and `$` match at line boundaries, as in grep.
    pattern = f"(?m){query}" if regex else re2.escape(query)
    try:
        program = re2.compile(pattern.encode(), options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise InvalidRequest(
            f"query: not an RE2 regular expression this server runs: {reason}",
            field="query",
            reason=reason,
        ) from None
    plan = (
        plan_regex(query, ignore_case=ignore_case)
        if regex
        else plan_literal(query, ignore_case=ignore_case)
    )
    return CompiledQuery(
        regex=program,
        plan=plan,
        needle=None if regex else query.lower(),
        literal=None if regex or ignore_case else query.encode(),
    )


def is_whole_word(data: bytes, start: int, end: int) -> bool:
    """Whether data[start:end] is non-empty and starts and ends on word boundaries.

    As RE2's `\\b` would have it: an edge that is a word character must not continue a word
    (`kmalloc(` is whole in `kmalloc(size)`, not in `xkmalloc(size)`).
    """
    if end <= start:
        return False
    if data[start] in _WORD and start > 0 and data[start - 1] in _WORD:
        return False
    return not (data[end - 1] in _WORD and end < len(data) and data[end] in _WORD)


def path_glob_pattern(glob: str, *, field: str = "path") -> str:
    """The RE2 pattern found in exactly the paths `glob` selects.

    A glob without wildcards selects that file or everything under that directory. With
    wildcards, `*` and `?` stay within a segment, `**` spans segments, `[...]` is a class and
    `{a,b}` either alternative (braces without a comma are literal, as in a shell); a glob
    without `/` is matched against file names, any other against whole paths.
    """
    if glob.startswith("/") or "\\" in glob or "\0" in glob:
        raise InvalidRequest(
            f"{field}: {glob!r} must be a relative path or glob inside the repository",
            field=field,
        )
    if any(segment in (".", "..") for segment in glob.split("/")):
        raise InvalidRequest(f"{field}: {glob!r} has a '.' or '..' segment", field=field)
    names_only = "/" not in glob
    translated, wild, _ = _translate(glob, 0, names_only=names_only, in_braces=False)
    if not wild:
        pattern = f"^{re.escape(glob.rstrip('/'))}(?:/|$)"
    elif names_only:
        pattern = f"(?:^|/)(?:{translated})$"
    else:
        pattern = f"^(?:{translated})$"
    options = re2.Options()
    options.log_errors = False
    try:
        re2.compile(pattern, options)
    except re2.error:
        raise InvalidRequest(f"{field}: {glob!r} is not a valid glob", field=field) from None
    return pattern


def _translate(glob: str, i: int, *, names_only: bool, in_braces: bool) -> tuple[str, bool, int]:
    """The regex of `glob` from `i` up to its end, or (in braces) to a `,` or `}` of this
    level; whether it holds a wildcard; where it stopped."""
    parts: list[str] = []
    wild = False
    while i < len(glob):
        char = glob[i]
        if in_braces and char in ",}":
            break
        if glob.startswith("**/", i):
            parts.append("(?:.*/)?")
            wild, i = True, i + 3
        elif glob.startswith("**", i):
            parts.append("[^/]*" if names_only else ".*")
            wild, i = True, i + 2
        elif char == "*":
            parts.append("[^/]*")
            wild, i = True, i + 1
        elif char == "?":
            parts.append("[^/]")
            wild, i = True, i + 1
        elif char == "[" and (end := glob.find("]", i + 2)) >= 0:
            body = glob[i + 1 : end]
            negate = body.startswith("!")
            body = re.sub(r"([\\\]\[^])", r"\\\1", body[1:] if negate else body)
            parts.append(f"[{'^' if negate else ''}{body}]")
            wild, i = True, end + 1
        elif char == "{" and (group := _braces(glob, i, names_only=names_only)) is not None:
            alternatives, inner_wild, i = group
            parts.append(f"(?:{'|'.join(alternatives)})")
            wild = wild or inner_wild or len(alternatives) > 1
        else:
            parts.append(re.escape(char))
            i += 1
    return "".join(parts), wild, i


def _braces(glob: str, i: int, *, names_only: bool) -> tuple[list[str], bool, int] | None:
    """The alternatives of the brace group at `i`, whether any is wild, and where the group
    ends; None when the group never closes or has no comma (then `{` is literal)."""
    alternatives: list[str] = []
    wild = False
    j = i + 1
    while True:
        part, part_wild, j = _translate(glob, j, names_only=names_only, in_braces=True)
        if j >= len(glob):
            return None
        alternatives.append(part)
        wild = wild or part_wild
        if glob[j] == "}":
            return (alternatives, wild, j + 1) if len(alternatives) > 1 else None
        j += 1
