"""Which trigrams a matching file must contain, planned from a literal or an RE2 pattern.

The plan is conservative: it may require less than the pattern really needs (then more
files are verified), never more (then a match would be lost). A regular expression is
read by a small parser of RE2's syntax that keeps only what is certain: runs of literal
characters in a concatenation are required, an alternation requires one of its branches,
anything optional (`?`, `*`, `{0,n}`) or unknown (classes, `.`, `\\w`) requires nothing
and ends the run. A pattern the parser does not understand is planned as "every file"
(the search then scans). The pattern has been compiled by RE2 before it gets here, so
the parser never has to report syntax errors, only to stay safe on what it skips.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from worker.index.analysis.trigrams import fold


@dataclass(frozen=True, slots=True)
class Literal:
    """Every trigram of `text` (already folded, at least three bytes) must be present."""

    text: bytes


@dataclass(frozen=True, slots=True)
class AllOf:
    """Every part must hold; no parts means no requirement at all."""

    parts: tuple[TrigramQuery, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    """At least one part must hold."""

    parts: tuple[TrigramQuery, ...]


TrigramQuery = Literal | AllOf | AnyOf
MATCH_ALL: Final = AllOf(())
"""The plan of a query that requires no trigram: every file is a candidate."""

_CASE_FLAG: Final = re.compile(r"\(\?[A-Za-z-]*i")
_REPEAT: Final = re.compile(r"\{([0-9]+)(?:,([0-9]*))?\}")
_NAMED_GROUP: Final = re.compile(r"\?P?<[A-Za-z0-9_]+>")
_FLAG_GROUP: Final = re.compile(r"\?([A-Za-z-]*)([:)])")
_EMPTY_ESCAPES: Final = frozenset("bBAz")
_CLASS_ESCAPES: Final = frozenset("dDsSwWC")
_CONTROL_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}


def literal(text: bytes) -> TrigramQuery:
    """The requirement of a literal run of text: its trigrams, or nothing when too short."""
    folded = fold(text)
    return Literal(folded) if len(folded) >= 3 else MATCH_ALL


def all_of(parts: list[TrigramQuery]) -> TrigramQuery:
    """The conjunction of `parts`, flattened, without duplicates."""
    flat: list[TrigramQuery] = []
    for part in parts:
        for sub in part.parts if isinstance(part, AllOf) else (part,):
            if sub not in flat:
                flat.append(sub)
    return flat[0] if len(flat) == 1 else AllOf(tuple(flat))


def any_of(parts: list[TrigramQuery]) -> TrigramQuery:
    """The disjunction of `parts`; requires nothing as soon as one part requires nothing."""
    if not parts or any(part == MATCH_ALL for part in parts):
        return MATCH_ALL
    flat: list[TrigramQuery] = []
    for part in parts:
        for sub in part.parts if isinstance(part, AnyOf) else (part,):
            if sub not in flat:
                flat.append(sub)
    return flat[0] if len(flat) == 1 else AnyOf(tuple(flat))


def plan_literal(query: str, *, ignore_case: bool) -> TrigramQuery:
    """The plan of a literal query (non-ASCII characters split it when case is ignored)."""
    if not ignore_case:
        return literal(query.encode())
    runs = re.split(r"[^\x00-\x7f]", query)
    return all_of([literal(run.encode()) for run in runs])


def plan_regex(pattern: str, *, ignore_case: bool) -> TrigramQuery:
    """The plan of an RE2 pattern that compiled; MATCH_ALL when nothing is certain."""
    fold_unsafe = ignore_case or bool(_CASE_FLAG.search(pattern))
    try:
        return _Parser(pattern, non_ascii_breaks=fold_unsafe).parse()
    except _Unsupported:
        return MATCH_ALL


class _Unsupported(Exception):
    """The parser met syntax it does not model; the plan falls back to MATCH_ALL."""


@dataclass(frozen=True, slots=True)
class _Atom:
    kind: str
    """`char` (text), `group` (query), `empty` (zero-width) or `unknown` (one unknown char)."""
    text: bytes = b""
    query: TrigramQuery = MATCH_ALL


_UNKNOWN: Final = _Atom("unknown")
_EMPTY: Final = _Atom("empty")


class _Sequence:
    """The requirements of one concatenation: finished literal runs and required groups."""

    def __init__(self) -> None:
        self._required: list[TrigramQuery] = []
        self._run = bytearray()

    def add(self, atom: _Atom, least: int | None) -> None:
        """Append `atom`, repeated at least `least` times (None: exactly once)."""
        if atom.kind == "char":
            if least is None:
                self._run += atom.text
            elif least == 0:
                self._flush()
            else:
                # x+ and x{n,}: the run ends in x n times (three give every trigram more
                # could), and the next run starts with x.
                self._run += atom.text * min(least, 3)
                self._flush()
                self._run += atom.text
            return
        self._flush()
        if atom.kind == "group" and (least is None or least >= 1):
            self._required.append(atom.query)

    def query(self) -> TrigramQuery:
        """Everything the concatenation requires."""
        self._flush()
        return all_of(self._required)

    def _flush(self) -> None:
        self._required.append(literal(bytes(self._run)))
        self._run.clear()


class _Parser:
    """Recursive descent over RE2 syntax, producing the trigram query of what must match."""

    def __init__(self, pattern: str, *, non_ascii_breaks: bool) -> None:
        self._p = pattern
        self._i = 0
        self._non_ascii_breaks = non_ascii_breaks

    def parse(self) -> TrigramQuery:
        query = self._alternation()
        if self._i != len(self._p):
            raise _Unsupported
        return query

    def _peek(self, offset: int = 0) -> str:
        at = self._i + offset
        return self._p[at] if at < len(self._p) else ""

    def _alternation(self) -> TrigramQuery:
        branches = [self._concatenation()]
        while self._peek() == "|":
            self._i += 1
            branches.append(self._concatenation())
        return any_of(branches)

    def _concatenation(self) -> TrigramQuery:
        sequence = _Sequence()
        while self._peek() not in ("", "|", ")"):
            atoms = self._atoms()
            least = self._repetition()
            for atom in atoms[:-1]:
                sequence.add(atom, None)
            sequence.add(atoms[-1], least)
        return sequence.query()

    def _repetition(self) -> int | None:
        """The least repeat count of the quantifiers after an atom, or None without any."""
        least: int | None = None
        while True:
            char = self._peek()
            if char in ("*", "?"):
                count = 0
                self._i += 1
            elif char == "+":
                count = 1
                self._i += 1
            elif char == "{" and (match := _REPEAT.match(self._p, self._i)):
                count = int(match.group(1))
                self._i = match.end()
            else:
                return least
            if self._peek() == "?":  # non-greedy
                self._i += 1
            least = count if least is None else least * count

    def _atoms(self) -> list[_Atom]:
        char = self._peek()
        if char == "(":
            return [self._group()]
        if char == "[":
            return [self._class()]
        if char == "\\":
            return self._escape()
        self._i += 1
        if char == ".":
            return [_UNKNOWN]
        if char in ("^", "$"):
            return [_EMPTY]
        if char in ("*", "+", "?"):
            raise _Unsupported
        return [self._char(char)]

    def _char(self, char: str) -> _Atom:
        if ord(char) > 0x7F and self._non_ascii_breaks:
            return _UNKNOWN
        return _Atom("char", text=char.encode())

    def _group(self) -> _Atom:
        self._i += 1
        if self._peek() == "?":
            if self._p.startswith("?:", self._i):
                self._i += 2
            elif match := _NAMED_GROUP.match(self._p, self._i):
                self._i = match.end()
            elif match := _FLAG_GROUP.match(self._p, self._i):
                self._i = match.end()
                if match.group(2) == ")":
                    return _EMPTY
            else:
                raise _Unsupported
        query = self._alternation()
        if self._peek() != ")":
            raise _Unsupported
        self._i += 1
        return _Atom("group", query=query)

    def _escape(self) -> list[_Atom]:
        self._i += 1
        char = self._peek()
        self._i += 1
        if char == "":
            raise _Unsupported
        if char == "Q":
            end = self._p.find("\\E", self._i)
            text = self._p[self._i :] if end < 0 else self._p[self._i : end]
            self._i = len(self._p) if end < 0 else end + 2
            return [self._char(c) for c in text] or [_EMPTY]
        if char == "x":
            return [self._char(self._hex())]
        if char in _CONTROL_ESCAPES:
            return [self._char(_CONTROL_ESCAPES[char])]
        if char in _EMPTY_ESCAPES:
            return [_EMPTY]
        if char in _CLASS_ESCAPES:
            return [_UNKNOWN]
        if char in ("p", "P"):
            self._skip_property()
            return [_UNKNOWN]
        if char.isdigit():
            while self._peek().isdigit():
                self._i += 1
            return [_UNKNOWN]
        if char.isalnum():
            raise _Unsupported
        return [self._char(char)]

    def _hex(self) -> str:
        if self._peek() == "{":
            end = self._p.find("}", self._i)
            if end < 0:
                raise _Unsupported
            digits = self._p[self._i + 1 : end]
            self._i = end + 1
        else:
            digits = self._p[self._i : self._i + 2]
            self._i += 2
        try:
            return chr(int(digits, 16))
        except (ValueError, OverflowError):
            raise _Unsupported from None

    def _skip_property(self) -> None:
        if self._peek() == "{":
            end = self._p.find("}", self._i)
            if end < 0:
                raise _Unsupported
            self._i = end + 1
        else:
            self._i += 1

    def _class(self) -> _Atom:
        """A bracket class: one character when all its members fold to the same one."""
        self._i += 1
        simple = True
        if self._peek() == "^":
            simple = False
            self._i += 1
        members: set[bytes] = set()
        first = True
        while True:
            char = self._peek()
            if char == "":
                raise _Unsupported
            if char == "]" and not first:
                self._i += 1
                break
            first = False
            if char == "[" and self._peek(1) == ":":
                end = self._p.find(":]", self._i + 2)
                if end < 0:
                    raise _Unsupported
                self._i = end + 2
                simple = False
                continue
            member = self._class_member()
            if self._peek() == "-" and self._peek(1) not in ("]", ""):
                self._i += 1
                self._class_member()
                simple = False
                continue
            if member is None or (ord(member) > 0x7F and self._non_ascii_breaks):
                simple = False
            else:
                members.add(fold(member.encode()))
        if simple and len(members) == 1:
            return _Atom("char", text=members.pop())
        return _UNKNOWN

    def _class_member(self) -> str | None:
        """One member character of a class, or None for a class escape such as `\\d`."""
        char = self._peek()
        self._i += 1
        if char != "\\":
            return char
        escaped = self._peek()
        self._i += 1
        if escaped == "x":
            return self._hex()
        if escaped in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[escaped]
        if escaped in ("p", "P"):
            self._skip_property()
            return None
        if escaped.isalnum():
            while escaped.isdigit() and self._peek().isdigit():
                self._i += 1
            return None
        if escaped == "":
            raise _Unsupported
        return escaped
