"""The class a local variable or parameter holds, where the source says it in so many words.

`w = Widget(...)`, `const w = new Widget()`, `Circle c(1.0)`, `c: &Circle`, `s := &Store{}`,
`Shape s)`: a call through such a variable (`w.render(`) is a call of a method of that class
(`Widget.render`), which the graph can resolve; a call through any other variable names
nothing the graph knows. Declarations are read lexically, by one pattern per language form;
each holds from its end to the end of the definition it is written in (in `x = x.Make()`
the call is through the `x` before it).
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple


class Declaration(NamedTuple):
    """A variable declared of a class: where it is written and where its declaration ends
    (offsets in its blob), its name, the class."""

    at: int
    end: int
    name: str
    cls: str


_CONSTRUCTED_WITH_NEW: Final = re.compile(
    rb"(?<![\w$.])(?P<var>[A-Za-z_$][\w$]*)[ \t]*=[ \t]*new[ \t]+"
    rb"(?P<type>(?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*)"
)
"""`x = new Foo(` (JavaScript, TypeScript, Java, C#), with `const`, `var`, a type before it."""
_TYPED_BEFORE: Final = re.compile(
    rb"(?<![\w.])(?P<type>[A-Z]\w*)(?:<[^<>\n]*>)?[ \t]+(?P<var>[a-z_]\w*)[ \t]*[,)=;]"
)
"""`Shape s)`, `List<T> items =` (Java, C#: a parameter or a local of a named class)."""
_TYPED_AFTER: Final = re.compile(
    rb"(?<![\w.$:])(?P<var>[a-z_$][\w$]*)\??:[ \t]*&?(?:mut[ \t]+)?"
    rb"(?P<type>(?:\w+(?:\.|::))*[A-Z]\w*)(?![\w.:<(])"
)
"""`s: Shape`, `c: &Circle`, `val c: Circle` (TypeScript, Kotlin, Rust: a parameter or a
typed local; `name: Type` with no blank before the colon, as a conditional's is not)."""

_DECLARATIONS: Final[dict[str, tuple[re.Pattern[bytes], ...]]] = {
    "python": (
        re.compile(
            rb"^[ \t]*(?P<var>[a-z_]\w*)[ \t]*=[ \t]*(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)[ \t]*\(",
            re.MULTILINE,
        ),
    ),
    "javascript": (_CONSTRUCTED_WITH_NEW,),
    "typescript": (_CONSTRUCTED_WITH_NEW, _TYPED_AFTER),
    "tsx": (_CONSTRUCTED_WITH_NEW, _TYPED_AFTER),
    "java": (_CONSTRUCTED_WITH_NEW, _TYPED_BEFORE),
    "csharp": (_CONSTRUCTED_WITH_NEW, _TYPED_BEFORE),
    "kotlin": (
        re.compile(
            rb"\b(?:val|var)[ \t]+(?P<var>[a-z_]\w*)[ \t]*=[ \t]*(?P<type>(?:\w+\.)*[A-Z]\w*)"
            rb"[ \t]*\("
        ),
        _TYPED_AFTER,
    ),
    "rust": (
        re.compile(
            rb"\blet[ \t]+(?:mut[ \t]+)?(?P<var>[a-z_]\w*)[ \t]*=[ \t]*"
            rb"(?P<type>(?:\w+::)*[A-Z]\w*)[ \t]*(?:::|\{|\()"
        ),
        _TYPED_AFTER,
    ),
    "go": (
        re.compile(
            rb"(?<![\w.])(?P<var>[a-z_]\w*)[ \t]*:=[ \t]*&?(?P<type>(?:[a-z_]\w*\.)?[A-Z]\w*)"
            rb"[ \t]*\{"
        ),
        re.compile(
            rb"(?<![\w.])(?P<var>[a-z_]\w*)[ \t]+\*?(?P<type>(?:[a-z_]\w*\.)?[A-Z]\w*)[ \t]*[,)]"
        ),
        re.compile(rb"\bvar[ \t]+(?P<var>[a-z_]\w*)[ \t]+\*?(?P<type>(?:[a-z_]\w*\.)?[A-Z]\w*)"),
    ),
    "cpp": (
        re.compile(
            rb"(?<![\w.:>])(?P<type>(?:\w+::)*[A-Z]\w*)(?:<[^<>\n]*>)?[ \t]*[*&]?[ \t]+"
            rb"(?P<var>[a-z_]\w*)[ \t]*[({;=,)]"
        ),
    ),
}
"""The declarations each language writes a class in; C has no classes (and Linux is large)."""

TYPED_GRAMMARS: Final = frozenset(_DECLARATIONS)


def declarations(data: bytes, grammar: str) -> list[Declaration]:
    """The variables a blob declares of a named class, in no particular order."""
    found: list[Declaration] = []
    for pattern in _DECLARATIONS.get(grammar, ()):
        for match in pattern.finditer(data):
            found.append(
                Declaration(
                    match.start("var"), match.end(), match["var"].decode(), match["type"].decode()
                )
            )
    return found
