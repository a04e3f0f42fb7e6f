"""Imports read per language: module as written, imported name, alias, row."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worker.index.analysis.imports import Import, _Rows, imports

_NAMES = st.sampled_from(["a", "b", "colors", "$x", "_y"])


def test_python_plain_from_relative_parenthesised_and_star() -> None:
    """`import a as b, c`, `from ..m import (x as y,\\n z)` and `*`; strings and calls are not."""
    data = (
        b"import os, a.b as c\n"
        b"from ..db import (models,\n    x as y)  # note\n"
        b"  from . import z\n"
        b"s = 'import q'\n"
        b"from a import *\n"
        b"import_thing()\n"
    )
    assert imports(data, "python") == [
        Import(0, "os"),
        Import(0, "a.b", None, "c"),
        Import(1, "..db", "models"),
        Import(1, "..db", "x", "y"),
        Import(3, ".", "z"),
        Import(5, "a", "*"),
    ]


def test_javascript_es_modules_and_require() -> None:
    """Default, named, namespace and bare imports, re-exports and require in JS and TS."""
    data = (
        b"import X, {a as b, c} from './m';\n"
        b'import * as ns from "n"\n'
        b"import 'side'\n"
        b"export {q} from './q'\n"
        b"const r = require('r')\n"
        b"import type {T} from './t'\n"
    )
    want = {
        Import(0, "./m", "default", "X"),
        Import(0, "./m", "a", "b"),
        Import(0, "./m", "c"),
        Import(1, "n", "*", "ns"),
        Import(2, "side"),
        Import(3, "./q", "q"),
        Import(4, "r"),
        Import(4, "r", "*", "r"),
        Import(5, "./t", "T"),
    }
    for grammar in ("javascript", "typescript", "tsx"):
        assert set(imports(data, grammar)) == want


def test_javascript_require_binds_what_its_declaration_names() -> None:
    """`var u = require("./u")` binds the module as `u`; `{a, b: c}` binds its names."""
    data = (
        b"var utils = require('./utils');\nconst { a, b: c } = require(\"./m\");\n"
        b"require('./side');\n"
    )
    assert set(imports(data, "javascript")) == {
        Import(0, "./utils"),
        Import(0, "./utils", "*", "utils"),
        Import(1, "./m"),
        Import(1, "./m", "a"),
        Import(1, "./m", "b", "c"),
        Import(2, "./side"),
    }


def test_javascript_name_exported_with_and_without_an_alias() -> None:
    """`export {a, a as b} from` gives both, in order (chalk's index.js failed its build)."""
    data = b"export {\n  colors,\n  colors as colorNames,\n} from './styles.js'\n"
    assert imports(data, "javascript") == [
        Import(0, "./styles.js", "colors"),
        Import(0, "./styles.js", "colors", "colorNames"),
    ]


@given(st.lists(st.tuples(_NAMES, st.none() | _NAMES), max_size=6))
def test_javascript_export_lists_read_every_name(names: list[tuple[str, str | None]]) -> None:
    """Any `export {…} from` list reads as its names and aliases, sorted, each once."""
    listed = ", ".join(name if alias is None else f"{name} as {alias}" for name, alias in names)
    data = f"export {{{listed}}} from './m'\n".encode()
    found = imports(data, "javascript")
    assert set(found) == {Import(0, "./m", name, alias) for name, alias in names}
    assert len(found) == len(set(found))


def test_go_single_and_grouped_with_aliases() -> None:
    """`import "fmt"` and a group with an alias, a blank import and a comment."""
    data = b'package p\nimport "fmt"\nimport (\n\t"os"\n\tf "a/b" // why\n\t_ "c"\n)\n'
    assert imports(data, "go") == [
        Import(1, "fmt"),
        Import(3, "os"),
        Import(4, "a/b", None, "f"),
        Import(5, "c", None, "_"),
    ]


def test_java_types_static_members_and_wildcards() -> None:
    """A type, a static member and a package wildcard."""
    data = b"package x;\nimport a.b.C;\nimport static a.b.C.m;\nimport a.*;\n"
    assert imports(data, "java") == [
        Import(1, "a.b", "C"),
        Import(2, "a.b.C", "m"),
        Import(3, "a", "*"),
    ]


def test_rust_use_trees_modules_and_crates() -> None:
    """Nested use trees with `self` and aliases, `pub use`, `mod m;`, `extern crate`."""
    data = (
        b"use std::{io::{self, Read}, fmt as f};\n"
        b"pub use crate::a::B;\n"
        b"mod m;\n"
        b"extern crate serde as s;\n"
        b"use super::*;\n"
        b"mod inline { }\n"
    )
    assert set(imports(data, "rust")) == {
        Import(0, "std", "io"),
        Import(0, "std::io", "Read"),
        Import(0, "std", "fmt", "f"),
        Import(1, "crate::a", "B"),
        Import(2, "m"),
        Import(3, "serde", None, "s"),
        Import(4, "super", "*"),
    }


def test_c_includes_at_line_starts_only() -> None:
    """Angle and quoted includes; one inside a string is not an include."""
    data = b'#include <linux/slab.h>\n# include "x.h"\n  s = "#include <no>";\n'
    for grammar in ("c", "cpp"):
        assert imports(data, grammar) == [Import(0, "linux/slab.h"), Import(1, "x.h")]


def test_c_includes_commented_out_or_in_strings_are_not_includes() -> None:
    """An include in a block comment, or in a string continued over lines, includes nothing."""
    data = (
        b'/*\n#include "old.h"\n*/\n#include "new.h"\n'
        b'puts("\\n\\\n#include <generated.h>\\n\\\n");\n#define X 1\n#include <after.h>\n'
    )
    assert imports(data, "c") == [Import(3, "new.h"), Import(8, "after.h")]


def test_php_use_of_classes_aliases_and_groups() -> None:
    """`use A\\B;`, `as`, `use A\\{B, C as D};`; `use function` and class bodies' `use` of a
    trait on the class's line are not class imports."""
    data = (
        b"<?php\nuse Shop\\Util\\Clamp;\nuse \\Psr\\Log as Logger;\n"
        b"use Slim\\{App, Routing\\Group as G};\nuse function Foo\\bar;\n"
        b"class X { use Named; }\n"
    )
    assert imports(data, "php") == [
        Import(1, "Shop\\Util", "Clamp"),
        Import(2, "Psr", "Log", "Logger"),
        Import(3, "Slim", "App"),
        Import(3, "Slim\\Routing", "Group", "G"),
    ]


def test_ruby_require_and_require_relative() -> None:
    """`require` as written, `require_relative` beside the file; not in a comment."""
    data = b"require 'json'\nrequire_relative \"base\"\nrequire(\"a/b\")\nx = 1 # require 'z'\n"
    assert imports(data, "ruby") == [
        Import(0, "json"),
        Import(1, "./base"),
        Import(2, "a/b"),
    ]


def test_csharp_usings_static_aliases_and_not_statements() -> None:
    """`using A.B;`, `using static`, `global using` and aliases; a `using` statement is not."""
    data = (
        b"using System;\nusing static Acme.Util.Clamp;\nusing Json = Newtonsoft.Json;\n"
        b"global using Acme.Shop;\nclass T {\n    void F() {\n        using var s = Open();\n"
        b"        using (var t = Open()) { }\n    }\n}\n"
    )
    assert imports(data, "csharp") == [
        Import(0, "System", "*"),
        Import(1, "Acme.Util.Clamp", "*"),
        Import(2, "Newtonsoft.Json", None, "Json"),
        Import(3, "Acme.Shop", "*"),
    ]


def test_kotlin_imports_without_semicolons() -> None:
    """`import a.b.C`, `import a.b.*` and `as`; the last dot splits package from name."""
    data = (
        b"package x\n\nimport okhttp3.internal.http.Chain\nimport okio.Buffer as B\nimport a.b.*\n"
    )
    assert imports(data, "kotlin") == [
        Import(2, "okhttp3.internal.http", "Chain"),
        Import(3, "okio", "Buffer", "B"),
        Import(4, "a.b", "*"),
    ]


def test_unparsed_languages_have_no_imports() -> None:
    """Only parsed languages are read."""
    assert imports(b"import x\n", "markdown") == []


@given(st.binary(max_size=200).map(lambda b: b.replace(b"\x00", b"\n")), st.data())
def test_rows_asked_in_any_order_count_the_newlines_before(
    data: bytes, draw: st.DataObject
) -> None:
    """Positions asked in any order, each gets the count of newlines before it."""
    row_of = _Rows(data)
    positions = draw.draw(st.lists(st.integers(0, len(data)), max_size=20))
    assert [row_of(at) for at in positions] == [data.count(b"\n", 0, at) for at in positions]
