"""Calls the chain finder (`call_kernels`) leaves out, found by each language's own pattern.

Python's `super().name(` is a member of a call's result, which the finder skips (only the
object could say what it is, and here the words do: a base's `name`). Idiomatic Ruby calls
methods without parentheses (`prepare`, `halt 404 if x`), which the finder, looking for
`name(`, never sees. Each finder returns (start, end, target) per call, offsets in the
text it is given, targets as the segment stores them; the caller drops those in comments
and strings, and the words that are never calls (`end`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import Final

Found = list[tuple[int, int, bytes]]

_PY_SUPER_MEMBER: Final = re.compile(
    rb"super[ \t]*\([^()\n]*\)[ \t]*\.[ \t]*([A-Za-z_]\w*)[ \t]*\("
)
"""`super().name(`, `super(Cls, self).name(`; also matches `mysuper().x(` and `o.super().x(`,
which the finder drops after: a pattern that starts with a fixed word is searched fast."""
_NAME_OR_DOT: Final = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
WRITTEN_SUPER: Final = r"^super\s*\([^)]*\)\s*\.\s*"
"""What a stored target of `_PY_SUPER_MEMBER` starts with before it is written `super.name`."""
_RUBY_BARE_CALL: Final = re.compile(
    rb"(?m)(?:^|[;{])[ \t]*([a-z_][A-Za-z0-9_]*[?!]?)"
    rb"(?=[ \t]*(?:$|[;}#]|\.[a-z_]|[ \t](?:if|unless|while|until|rescue|and|or)\b)"
    rb"|[ \t]+[A-Za-z0-9_:@'\"])"
)
"""A Ruby statement that starts with a lowercase name and no parentheses: `prepare`,
`content_type :json`, `halt 404 if x`, `settings.views`. Unless the name is a local
variable, it is a method called on `self`."""
_RUBY_LOCALS: Final = re.compile(
    rb"(?<![.:@$\w])([a-z_]\w*)[ \t]*(?:\|\||&&|\*\*|<<|>>|[-+*/%|&^])?=(?![=~>])"
    rb"|^[ \t]*([a-z_]\w*)[ \t]*,(?=[^=\n]*=[^=])"
    rb"|=>[ \t]*([a-z_]\w*)"
    rb"|\bfor[ \t]+([a-z_]\w*)",
    re.MULTILINE,
)
"""What assigns a Ruby local variable: `x = `, `x ||= `, `a, b = `, `rescue => e`, `for x`."""
_RUBY_PARAMETERS: Final = re.compile(
    rb"\|([^|\n]*)\||\bdef[ \t]+(?:self\.)?[\w?!=]+(?:[ \t]*\(([^)\n]*)\)|[ \t]+([^\n#;]+))"
)
"""A block's parameters (`|a, b|`) and a method's, with or without parentheses."""
_RUBY_WORD: Final = re.compile(rb"[a-z_]\w*")
_RUBY_DEF: Final = re.compile(rb"^[ \t]*def\b", re.MULTILINE)


def python_super_calls(data: bytes, files: Sequence[tuple[int, int]]) -> Found:
    """The `super().name(` calls of the files ([start, end) of `data`), as `super.name`."""
    return [
        (match.start(), match.end(1), b"super." + match[1])
        for s, e in files
        for match in _PY_SUPER_MEMBER.finditer(data, s, e)
        if match.start() == s or data[match.start() - 1] not in _NAME_OR_DOT
    ]


def ruby_bare_calls(data: bytes, files: Sequence[tuple[int, int]]) -> Found:
    """The Ruby calls written without parentheses (`_RUBY_BARE_CALL`) of names that are no
    local variable where they are written.

    A `def` opens a new scope of locals: each method (from its `def` to the next) is read on
    its own, and so is the code before the first.
    """
    found: Found = []
    for s, e in files:
        bounds = [s, *(m.start() for m in _RUBY_DEF.finditer(data, s, e)), e]
        for lo, hi in itertools.pairwise(bounds):
            scope = data[lo:hi]
            locals_ = {m for match in _RUBY_LOCALS.finditer(scope) for m in match.groups() if m}
            for match in _RUBY_PARAMETERS.finditer(scope):
                for group in match.groups():
                    if group:
                        locals_.update(_RUBY_WORD.findall(group))
            found.extend(
                (lo + match.start(1), lo + match.end(1), match[1])
                for match in _RUBY_BARE_CALL.finditer(scope)
                if match[1] not in locals_
            )
    return found


MORE_CALLS: Final[dict[str, Callable[[bytes, Sequence[tuple[int, int]]], Found]]] = {
    "python": python_super_calls,
    "ruby": ruby_bare_calls,
}
"""Each language family's own finder."""
