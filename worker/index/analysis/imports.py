"""The imports of a source file, as each language writes them: module, imported name, alias.

Found from the keyword (`import`, `from`, `use`, `#include`, `require`): a search for a
literal is fast where a pattern that could start anywhere walks every byte. Nothing is
resolved here: `from ..db import models` is module `..db`, name `models`; the graph resolves
a module to files of the repository by the language's rules, per commit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
Spans = tuple[I64, I64]


class Import(NamedTuple):
    """One imported thing: `module` as written, the `name` taken from it, its local `alias`.

    `name` is None when the module itself is imported, "*" for all its names; `alias` is
    None when the local name is the imported one. `row` is 0-based.
    """

    row: int
    module: str
    name: str | None = None
    alias: str | None = None


_MAX_STATEMENT: Final = 4000
"""An import statement longer than this is not read (generated code, or no statement)."""
_NAME: Final = rb"[A-Za-z_$][\w$]*"


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _at_line_start(data: bytes, at: int, allowed: bytes = b"") -> bool:
    """Only blanks (or the words in `allowed`, e.g. `pub`) come before `at` on its line."""
    start = data.rfind(b"\n", 0, at) + 1
    head = data[start:at].strip(b" \t")
    return not head or (bool(allowed) and re.fullmatch(allowed, head) is not None)


class _Rows:
    """The row of each position asked of one blob, counted on from the last one asked.

    Positions mostly come in order; counting each from the blob's start was quadratic in
    the size of a bundle with thousands of imports.
    """

    __slots__ = ("_at", "_data", "_row")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0
        self._row = 0

    def __call__(self, at: int) -> int:
        if at < self._at:
            self._at = self._row = 0
        self._row += self._data.count(b"\n", self._at, at)
        self._at = at
        return self._row


def _word_boundary(data: bytes, at: int, size: int) -> bool:
    before = data[at - 1 : at]
    after = data[at + size : at + size + 1]
    return not (before.isalnum() or before in (b"_", b"$", b".")) and not (
        after.isalnum() or after in (b"_", b"$")
    )


def _hits(data: bytes, keyword: bytes) -> Iterator[int]:
    at = data.find(keyword)
    while at >= 0:
        if _word_boundary(data, at, len(keyword)):
            yield at
        at = data.find(keyword, at + len(keyword))


def _statements(
    data: bytes, pattern: re.Pattern[bytes], *keywords: bytes
) -> Iterator[tuple[int, re.Match[bytes]]]:
    """(row, match) of each statement `pattern` matches where a line starts with a keyword."""
    row_of = _Rows(data)
    for at in sorted({at for keyword in keywords for at in _hits(data, keyword)}):
        if _at_line_start(data, at):
            matched = pattern.match(data, at, at + _MAX_STATEMENT)
            if matched is not None:
                yield row_of(at), matched


# Python ------------------------------------------------------------------------------

_PY_FROM: Final = re.compile(rb"[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+$")
_PY_AS: Final = re.compile(r"([\w.]+)(?:\s+as\s+(\w+))?")


def _python_clause(data: bytes, at: int) -> str:
    """The text after `import` up to the statement's end (parentheses and `\\` joined)."""
    rest = data[at : at + _MAX_STATEMENT]
    stripped = rest.lstrip(b" \t")
    if stripped.startswith(b"("):
        close = stripped.find(b")")
        body = stripped[1 : close if close >= 0 else len(stripped)]
    else:
        body = re.match(rb"(?:[^\n\\;#]|\\\n)*", rest).group(0)  # type: ignore[union-attr]
    body = re.sub(rb"#[^\n]*", b"", body).replace(b"\\\n", b" ")
    return _text(body)


def python_imports(data: bytes) -> list[Import]:
    """`import a.b as c, d` and `from .a import (b as c, d)`, at the start of a line."""
    row_of = _Rows(data)
    found: list[Import] = []
    for at in _hits(data, b"import"):
        head = data[data.rfind(b"\n", 0, at) + 1 : at]
        module: str | None = None
        if head.strip(b" \t"):
            matched = _PY_FROM.match(head)
            if matched is None:
                continue
            module = _text(matched.group(1))
        row = row_of(at)
        for part in _python_clause(data, at + 6).split(","):
            matched_name = _PY_AS.fullmatch(part.strip())
            if matched_name is None:
                if module is not None and part.strip() == "*":
                    found.append(Import(row, module, "*"))
                continue
            name, alias = matched_name.group(1), matched_name.group(2)
            if module is None:
                found.append(Import(row, name, None, alias))
            else:
                found.append(Import(row, module, name, alias))
    return found


# JavaScript and TypeScript -----------------------------------------------------------

_JS_IMPORT: Final = re.compile(
    rb"import(?:\s+type)?\s*(?:(" + _NAME + rb")\s*,?\s*)?"
    rb"(?:\*\s*as\s+(" + _NAME + rb")|\{([^}]*)\})?\s*(?:from\s*)?['\"]([^'\"\n]+)['\"]"
)
_JS_EXPORT: Final = re.compile(
    rb"export(?:\s+type)?\s*(?:\*(?:\s*as\s+(" + _NAME + rb"))?|\{([^}]*)\})\s*from\s*"
    rb"['\"]([^'\"\n]+)['\"]"
)
_JS_REQUIRE: Final = re.compile(rb"(?:require|import)\s*\(\s*['\"]([^'\"\n]+)['\"]\s*\)")
_JS_REQUIRED_AS: Final = re.compile(
    rb"(?:const|let|var)\s+([\w$]+|\{[^}]*\})\s*=\s*require\s*\(\s*['\"]([^'\"\n]+)['\"]\s*\)"
)
_JS_FIELD: Final = re.compile(r"([\w$]+)(?:\s*:\s*([\w$]+))?")
_JS_AS: Final = re.compile(r"(?:type\s+)?([\w$]+)(?:\s+as\s+([\w$]+))?")


def _js_names(row: int, module: str, braces: bytes) -> list[Import]:
    found = []
    for part in _text(braces).split(","):
        matched = _JS_AS.fullmatch(part.strip())
        if matched is not None:
            found.append(Import(row, module, matched.group(1), matched.group(2)))
    return found


def _required_as(row: int, matched: re.Match[bytes]) -> list[Import]:
    """What `const x = require("m")` binds (the module's exports, as `* as x`), or
    `const {a, b: c} = require("m")` (its names)."""
    bound, module = _text(matched.group(1)), _text(matched.group(2))
    if not bound.startswith("{"):
        return [Import(row, module, "*", bound)]
    found = []
    for part in bound.strip("{}").split(","):
        field = _JS_FIELD.fullmatch(part.strip())
        if field is not None:
            found.append(Import(row, module, field.group(1), field.group(2)))
    return found


def javascript_imports(data: bytes) -> list[Import]:
    """ES modules (`import`, `export … from`) and CommonJS `require("…")`, with the names a
    declaration binds to it."""
    row_of = _Rows(data)
    found: list[Import] = []
    for at in _hits(data, b"import"):
        matched = _JS_IMPORT.match(data, at, at + _MAX_STATEMENT)
        if matched is None:
            continue
        row, module = row_of(at), _text(matched.group(4))
        default, namespace, braces = matched.group(1), matched.group(2), matched.group(3)
        if default is not None:
            found.append(Import(row, module, "default", _text(default)))
        if namespace is not None:
            found.append(Import(row, module, "*", _text(namespace)))
        if braces is not None:
            found.extend(_js_names(row, module, braces))
        if default is None and namespace is None and braces is None:
            found.append(Import(row, module))
    for at in _hits(data, b"export"):
        matched = _JS_EXPORT.match(data, at, at + _MAX_STATEMENT)
        if matched is None:
            continue
        row, module = row_of(at), _text(matched.group(3))
        if matched.group(2) is not None:
            found.extend(_js_names(row, module, matched.group(2)))
        else:
            alias = matched.group(1)
            found.append(Import(row, module, "*", None if alias is None else _text(alias)))
    for keyword in (b"require", b"import"):
        for at in _hits(data, keyword):
            matched = _JS_REQUIRE.match(data, at, at + _MAX_STATEMENT)
            if matched is not None:
                found.append(Import(row_of(at), _text(matched.group(1))))
    for keyword in (b"const", b"let", b"var"):
        for at in _hits(data, keyword):
            matched = _JS_REQUIRED_AS.match(data, at, at + _MAX_STATEMENT)
            if matched is not None:
                found.extend(_required_as(row_of(at), matched))
    # A name may come twice, once under an alias (`export {a, a as b}`): None sorts first.
    return sorted(set(found), key=lambda i: (i.row, i.module, i.name or "", i.alias or ""))


# Go ------------------------------------------------------------------------------------

_GO_SPEC: Final = re.compile(rb"(?:([\w.]+)[ \t]+)?\"([^\"\n]+)\"")


def go_imports(data: bytes) -> list[Import]:
    """`import "fmt"`, `import f "fmt"` and grouped `import ( … )`."""
    row_of = _Rows(data)
    found: list[Import] = []
    for at in _hits(data, b"import"):
        if not _at_line_start(data, at):
            continue
        rest = data[at + 6 : at + 6 + _MAX_STATEMENT]
        stripped = rest.lstrip(b" \t")
        offset = at + 6 + len(rest) - len(stripped)
        if stripped.startswith(b"("):
            close = stripped.find(b")")
            body = stripped[1 : close if close >= 0 else len(stripped)]
            offset += 1
        else:
            body = stripped.split(b"\n", 1)[0]
        # Blanked, not removed: the specs' offsets give their rows.
        body = re.sub(rb"//[^\n]*", lambda comment: b" " * len(comment.group(0)), body)
        for spec in _GO_SPEC.finditer(body):
            alias = spec.group(1)
            found.append(
                Import(
                    row_of(offset + spec.start(2)),
                    _text(spec.group(2)),
                    None,
                    None if alias is None else _text(alias),
                )
            )
    return found


# Java ------------------------------------------------------------------------------------

_JAVA_IMPORT: Final = re.compile(rb"import\s+(static\s+)?([\w.]+?)(?:\.(\*|\w+))\s*;")


def java_imports(data: bytes) -> list[Import]:
    """`import a.b.C;`, `import a.b.*;` and `import static a.b.C.m;`."""
    return [
        Import(row, _text(matched.group(2)), _text(matched.group(3)))
        for row, matched in _statements(data, _JAVA_IMPORT, b"import")
    ]


# PHP -------------------------------------------------------------------------------------

_PHP_USE: Final = re.compile(
    rb"use\s+(function\s+|const\s+)?\\?([\w\\]+?)"
    rb"(?:\\\{([^}]*)\}|(?:\s+as\s+(\w+))?)\s*;"
)
_PHP_AS: Final = re.compile(r"\\?([\w\\]+?)(?:\s+as\s+(\w+))?")


def _php_class(row: int, qualified: str, alias: str | None) -> Import:
    module, _, name = qualified.rpartition("\\")
    return Import(row, module, name, alias)


def php_imports(data: bytes) -> list[Import]:
    """`use A\\B\\C;`, `use A\\B\\C as D;` and `use A\\B\\{C, D as E};` (classes; a
    function or a constant imported by `use function`/`use const` is left out)."""
    found: list[Import] = []
    for row, matched in _statements(data, _PHP_USE, b"use"):
        if matched.group(1) is not None:
            continue
        qualified = _text(matched.group(2))
        if matched.group(3) is None:
            alias = matched.group(4)
            found.append(_php_class(row, qualified, None if alias is None else _text(alias)))
            continue
        for part in _text(matched.group(3)).split(","):
            named = _PHP_AS.fullmatch(part.strip())
            if named is not None:
                found.append(_php_class(row, f"{qualified}\\{named.group(1)}", named.group(2)))
    return found


# C# --------------------------------------------------------------------------------------

_CSHARP_USING: Final = re.compile(
    rb"(?:global\s+)?using\s+(static\s+)?(?:(\w+)\s*=\s*)?([\w.]+)\s*;"
)


def csharp_imports(data: bytes) -> list[Import]:
    """`using A.B;` and `using static A.B.C;` (every name of it: `*`), `using X = A.B;`."""
    found: list[Import] = []
    for row, matched in _statements(data, _CSHARP_USING, b"using", b"global"):
        module, alias = _text(matched.group(3)), matched.group(2)
        if alias is None:
            found.append(Import(row, module, "*"))
        else:
            found.append(Import(row, module, None, _text(alias)))
    return found


# Ruby ------------------------------------------------------------------------------------

_RUBY_REQUIRE: Final = re.compile(rb"require(_relative)?[ \t(]+['\"]([^'\"\n]+)['\"]")


def ruby_imports(data: bytes) -> list[Import]:
    """`require "a/b"` as written, `require_relative "b"` as `./b`."""
    found: list[Import] = []
    for row, matched in _statements(data, _RUBY_REQUIRE, b"require", b"require_relative"):
        path = _text(matched.group(2))
        relative = matched.group(1) is not None and not path.startswith(".")
        found.append(Import(row, f"./{path}" if relative else path))
    return found


# Kotlin ----------------------------------------------------------------------------------

_KOTLIN_IMPORT: Final = re.compile(rb"import[ \t]+([\w.]+)\.(\*|\w+)(?:[ \t]+as[ \t]+(\w+))?")


def kotlin_imports(data: bytes) -> list[Import]:
    """`import a.b.C`, `import a.b.*` and `import a.b.C as D` (no semicolons)."""
    found: list[Import] = []
    for row, matched in _statements(data, _KOTLIN_IMPORT, b"import"):
        alias = matched.group(3)
        module, name = _text(matched.group(1)), _text(matched.group(2))
        found.append(Import(row, module, name, None if alias is None else _text(alias)))
    return found


# Rust ------------------------------------------------------------------------------------

_RUST_VISIBILITY: Final = rb"pub(?:\s*\([^)]*\))?"
_RUST_USE: Final = re.compile(rb"use\s+([^;]+);")
_RUST_MOD: Final = re.compile(rb"mod\s+(\w+)\s*;")
_RUST_CRATE: Final = re.compile(rb"extern\s+crate\s+(\w+)(?:\s+as\s+(\w+))?\s*;")


def _use_tree(tree: str, prefix: str, row: int, out: list[Import]) -> None:
    """Flatten `a::{b, c::{d as e}}` into (module, name, alias) triples."""
    tree = tree.strip()
    brace = tree.find("{")
    if brace >= 0 and tree.endswith("}"):
        head = tree[:brace].rstrip(":").strip()
        base = f"{prefix}::{head}" if prefix and head else (prefix or head)
        depth, part_start = 0, brace + 1
        for i in range(brace + 1, len(tree) - 1):
            char = tree[i]
            depth += char == "{"
            depth -= char == "}"
            if char == "," and depth == 0:
                _use_tree(tree[part_start:i], base, row, out)
                part_start = i + 1
        _use_tree(tree[part_start:-1], base, row, out)
        return
    if not tree:
        return
    path, _, alias = tree.partition(" as ")
    path = path.strip()
    full = f"{prefix}::{path}" if prefix else path
    module, _, name = full.rpartition("::")
    if name == "self":
        module, _, name = module.rpartition("::")
    out.append(Import(row, module, name, alias.strip() or None))


def rust_imports(data: bytes) -> list[Import]:
    """`use a::b::{c, d as e};`, `mod m;` and `extern crate x;`."""
    row_of = _Rows(data)
    found: list[Import] = []
    for at in _hits(data, b"use"):
        if not _at_line_start(data, at, _RUST_VISIBILITY):
            continue
        matched = _RUST_USE.match(data, at, at + _MAX_STATEMENT)
        if matched is not None:
            text = re.sub(r"\s+", " ", _text(matched.group(1)))
            _use_tree(text.replace(" ::", "::").replace(":: ", "::"), "", row_of(at), found)
    for at in _hits(data, b"mod"):
        if _at_line_start(data, at, _RUST_VISIBILITY):
            matched = _RUST_MOD.match(data, at, at + _MAX_STATEMENT)
            if matched is not None:
                found.append(Import(row_of(at), _text(matched.group(1))))
    for at in _hits(data, b"extern"):
        matched = _RUST_CRATE.match(data, at, at + _MAX_STATEMENT)
        if matched is not None and _at_line_start(data, at, _RUST_VISIBILITY):
            alias = matched.group(2)
            found.append(
                Import(
                    row_of(at),
                    _text(matched.group(1)),
                    None,
                    None if alias is None else _text(alias),
                )
            )
    return found


# C and C++ -------------------------------------------------------------------------------

_INCLUDE: Final = re.compile(rb"#[ \t]*include[ \t]*[<\"]([^>\"\n]+)[>\"]")


def c_includes(data: bytes, directives: Spans) -> tuple[I64, list[str]]:
    """Where each `#include "x.h"` or `#include <linux/slab.h>` of the directives ([start,
    end) in `data`, from C's lexer) is, and the path between its delimiters.

    Only a directive at its line's start counts. Arrays leave the regular expression the
    directives that read `include`: a C tree has hundreds of thousands of them.
    """
    from worker.index.analysis.lexers import directives_reading

    starts, ends = directives
    picked, _ = directives_reading(np.frombuffer(data, dtype=np.uint8), starts, ends, b"include")
    at: list[int] = []
    paths: list[str] = []
    for start in starts[picked].tolist():
        matched = _INCLUDE.match(data, start)
        if matched is not None and _at_line_start(data, start):
            at.append(start)
            paths.append(_text(matched.group(1)))
    return np.asarray(at, dtype=np.int64), paths


def c_imports(data: bytes) -> list[Import]:
    """`#include "x.h"` and `#include <linux/slab.h>`: the path between the delimiters."""
    from worker.index.analysis.lexers import c_lexemes

    row_of = _Rows(data)
    a = np.frombuffer(data, dtype=np.uint8)
    starts, ends = c_lexemes(a, np.zeros(1, np.int64), np.full(1, len(data), np.int64))
    directive = a[starts] == ord("#")
    at, paths = c_includes(data, (starts[directive], ends[directive]))
    return [Import(row_of(p), path) for p, path in zip(at.tolist(), paths, strict=True)]


_BY_GRAMMAR: Final[dict[str, Callable[[bytes], list[Import]]]] = {
    "python": python_imports,
    "javascript": javascript_imports,
    "typescript": javascript_imports,
    "tsx": javascript_imports,
    "go": go_imports,
    "java": java_imports,
    "rust": rust_imports,
    "c": c_imports,
    "cpp": c_imports,
    "php": php_imports,
    "ruby": ruby_imports,
    "csharp": csharp_imports,
    "kotlin": kotlin_imports,
}


def imports(data: bytes, grammar: str) -> list[Import]:
    """The imports of a blob parsed with `grammar`, in no particular order."""
    reader = _BY_GRAMMAR.get(grammar)
    return [] if reader is None else reader(data)
