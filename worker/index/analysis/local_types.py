"""The class a local variable or parameter holds, where the source says it in so many words.

`w = Widget(...)`, `const w = new Widget()`, `c: &Circle`, `s := &Store{}`, `func f(s *Store)`,
`void f(Shape s)`: a call through such a variable (`w.render(`) is a call of a method of that
class (`Widget.render`), which the graph can resolve; a call through any other variable names
nothing the graph knows. Declarations are read lexically. Each holds from its end to the end
of the definition it is written in (in `x = x.Make()` the call is through the `x` before it).

Every pattern starts with a fixed word or sign (`=`, `:`, `new`, `let`, `func`), which the
regular expression engine finds fast, and the variable's name is read back from there: a
pattern that starts with a name would try every position of every file. `Type name` is only
read in the first lines of definitions (`headers`), where Java, C# and C++ declare parameters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, NamedTuple


class Declaration(NamedTuple):
    """A variable declared of a class: where it is written and where its declaration ends
    (offsets in its blob), its name, the class."""

    at: int
    end: int
    name: str
    cls: str


class _Form(NamedTuple):
    """A way of writing a declaration: the pattern (with a `type` group, and a `var` group
    unless the variable is the name just before the match)."""

    pattern: re.Pattern[bytes]
    line_start: bool = False
    """The name before the match starts its line (Python's assignments)."""
    adjacent: bool = False
    """Nothing comes between the name and the match (`name: Type`; a conditional's `a : b`
    has blanks)."""
    word: bool = False
    """The match starts with a word (`let`), not inside a longer name (`outlet`)."""


_ASSIGNED_NEW: Final = _Form(
    re.compile(rb"=[ \t]*new[ \t]+(?P<type>(?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*)")
)
"""`x = new Foo(` (JavaScript, TypeScript, Java, C#), after `const`, `var` or a type."""
_ANNOTATED: Final = _Form(
    re.compile(rb":[ \t]*&?(?:mut[ \t]+)?(?P<type>(?:\w+(?:\.|::))*[A-Z]\w*)(?![\w.:<(\[])"),
    adjacent=True,
)
"""`s: Shape`, `c: &Circle`, `val c: Circle`: a parameter or a typed local."""
_GO_PARAMETERS: Final = re.compile(
    rb"(?<![\w.])(?P<var>[a-z_]\w*)[ \t]+\*?(?P<type>(?:[a-z_]\w*\.)?[A-Z]\w*)[ \t]*[,)]"
)
_TYPE_THEN_NAME: Final = re.compile(
    rb"(?<![\w.])(?P<type>[A-Z]\w*)(?:<[^<>\n]*>)?[ \t]+(?P<var>[a-z_]\w*)[ \t]*[,)]"
)
_HEADER_PARAMETERS: Final = {
    "java": _TYPE_THEN_NAME,
    "csharp": _TYPE_THEN_NAME,
    "cpp": re.compile(
        rb"(?<![\w.:>])(?P<type>(?:\w+::)*[A-Z]\w*)(?:<[^<>\n]*>)?[ \t]*[*&]?[ \t]+"
        rb"(?P<var>[a-z_]\w*)[ \t]*[,)=]"
    ),
}
"""`Shape s)` in a definition's first lines: a parameter of a named class."""
_FORMS: Final[dict[str, tuple[_Form, ...]]] = {
    "python": (
        _Form(
            re.compile(rb"=[ \t]*(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)[ \t]*\("), line_start=True
        ),
        _ANNOTATED,
    ),
    "javascript": (_ASSIGNED_NEW,),
    "typescript": (_ASSIGNED_NEW, _ANNOTATED),
    "tsx": (_ASSIGNED_NEW, _ANNOTATED),
    "java": (_ASSIGNED_NEW,),
    "csharp": (_ASSIGNED_NEW,),
    "kotlin": (
        _Form(
            re.compile(
                rb"va[lr][ \t]+(?P<var>[a-z_]\w*)[ \t]*=[ \t]*"
                rb"(?P<type>(?:\w+\.)*[A-Z]\w*)[ \t]*\("
            ),
            word=True,
        ),
        _ANNOTATED,
    ),
    "rust": (
        _Form(
            re.compile(
                rb"let[ \t]+(?:mut[ \t]+)?(?P<var>[a-z_]\w*)[ \t]*=[ \t]*"
                rb"(?P<type>(?:\w+::)*[A-Z]\w*)[ \t]*(?:::|\{|\()"
            ),
            word=True,
        ),
        _ANNOTATED,
    ),
    "go": (
        _Form(re.compile(rb":=[ \t]*&?(?P<type>(?:[a-z_]\w*\.)?[A-Z]\w*)[ \t]*\{")),
        _Form(
            re.compile(rb"var[ \t]+(?P<var>[a-z_]\w*)[ \t]+\*?(?P<type>(?:[a-z_]\w*\.)?[A-Z]\w*)"),
            word=True,
        ),
    ),
}
"""The declarations each language writes a class in; C has no classes (and Linux is large)."""
_GO_SIGNATURE: Final = re.compile(rb"func[ \t]*(?:\([^()]*\)[ \t]*)?\w*[ \t]*\(([^()]*)\)")
"""A Go function's, method's or function literal's parameter list."""
_NOT_ASSIGNING: Final = frozenset(b"=!<>+-*/%&|^:~")
"""Signs before `=` that make it no assignment (`==`, `<=`, `+=`)."""
_NAME_BYTES: Final = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")

_NO_CLASSES: Final = frozenset({"None", "True", "False", "NotImplemented"})
"""Python's capitalised constants: `x: None` declares nothing."""

HEADER_TYPED: Final = frozenset(_HEADER_PARAMETERS)
"""Languages whose parameters are read in the definitions' first lines (`headers`)."""
TYPED_GRAMMARS: Final = frozenset(_FORMS) | HEADER_TYPED


def declarations(
    data: bytes, grammar: str, headers: Sequence[tuple[int, int]] = ()
) -> list[Declaration]:
    """The variables a blob declares of a named class, in no particular order, in comments
    and strings too (the caller knows where those are).

    `headers`: [start, end) of its definitions' first lines, for `HEADER_TYPED` languages.
    """
    found: list[Declaration] = []
    for form in _FORMS.get(grammar, ()):
        for match in form.pattern.finditer(data):
            if form.word and _inside_a_name(data, match.start()):
                continue
            cls = match["type"].decode()
            if cls in _NO_CLASSES:
                continue
            if "var" in form.pattern.groupindex:
                found.append(
                    Declaration(match.start("var"), match.end(), match["var"].decode(), cls)
                )
                continue
            named = _name_before(data, match.start(), form)
            if named is not None:
                found.append(Declaration(named[0], match.end(), named[1], cls))
    if grammar == "go":
        parameters: re.Pattern[bytes] | None = _GO_PARAMETERS
        spans: Sequence[tuple[int, int]] = [  # the parameters and the `)` after them
            (m.start(1), m.end(1) + 1)
            for m in _GO_SIGNATURE.finditer(data)
            if not _inside_a_name(data, m.start())
        ]
    else:
        parameters, spans = _HEADER_PARAMETERS.get(grammar), headers
    if parameters is None:
        return found
    for start, end in spans:
        found.extend(
            Declaration(
                match.start("var"), match.end(), match["var"].decode(), match["type"].decode()
            )
            for match in parameters.finditer(data, start, end)
        )
    return found


def _inside_a_name(data: bytes, at: int) -> bool:
    """Whether the byte before `at` is part of a name (`outlet` holds no `let`)."""
    return at > 0 and data[at - 1] in _NAME_BYTES


def _name_before(data: bytes, at: int, form: _Form) -> tuple[int, str] | None:
    """The variable a declaration matched at `at` (its `=` or `:`) names: the name just
    before, and where it starts; None if there is none, or it is an attribute (`self.x =`),
    or the sign is no assignment or annotation."""
    sign = data[at]
    before = data[at - 1] if at else 0
    if sign == ord("=") and before in _NOT_ASSIGNING:
        return None
    if sign == ord(":") and (before == ord(":") or data[at + 1 : at + 2] == b":"):
        return None
    end = at
    if form.adjacent:
        end -= data[end - 1 : end] == b"?"  # TypeScript's optional `name?: Type`
    else:
        while end > 0 and data[end - 1] in b" \t":
            end -= 1
    start = end
    while start > 0 and data[start - 1] in _NAME_BYTES:
        start -= 1
    if start == end or data[start] in b"0123456789" or data[start - 1 : start] == b".":
        return None
    if form.line_start and data[data.rfind(b"\n", 0, start) + 1 : start].strip(b" \t"):
        return None
    return start, data[start:end].decode()
