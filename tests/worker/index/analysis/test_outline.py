"""Outlines: the parser finds the same definitions, on the same lines, as in the whole file."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.index.analysis.batch_text import line_starts
from worker.index.analysis.chunking import chunk_blob
from worker.index.analysis.definitions import definitions
from worker.index.analysis.lexers import (
    C_LEXEMES,
    GO_LEXEMES,
    JAVA_LEXEMES,
    JS_LEXEMES,
    PY_LEXEMES,
    c_lexemes,
    python_lexemes,
)
from worker.index.analysis.outline import Outline, c_outlines, first_not_in
from worker.index.analysis.python_outline import python_outlines

Flat = list[tuple[int, int, str, str]]
Lexer = Callable[[Any, Any, Any], tuple[Any, Any]]


def same_as_whole(data: bytes, language: str) -> Flat:
    """Assert the outlined parse equals the whole parse; return the definitions."""
    outliner = c_outlines if language in ("c", "cpp") else python_outlines
    outline = outliner([data]).outlines[0]
    assert outline is not None
    whole = definitions(data, language, None).rows()
    assert definitions(data, language, outline).rows() == whole
    return whole


def c_outline(data: bytes) -> Outline:
    """The outline of one C or C++ file, which must have one."""
    outline = c_outlines([data]).outlines[0]
    assert outline is not None
    return outline


C_SOURCE = b"""/* SPDX: a comment with { braces } and 'quotes' */
#include <linux/kernel.h>
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define LOCKED(x) do { \\
\tspin_lock(x); \\
} while (0)

struct outer {
\tint a; /* } */
\tstruct inner {
\t\tchar c;
\t} in;
#define OUTER_FLAG(x) (1 << (x))
};

static const struct ops table[] = {
\t{ .open = f_open, .name = "{" },
};

int prototype(int a, char *b);

/**
 * compute - kernel-doc comment
 */
static int compute(struct outer *o,
\t\t   int n)
{
\tif (n > 0) {
\t\tprintk("}%d\\n", n);
\t}
\treturn o->a + '}';
}

char *(*pick(int k))(void)
{
\treturn 0;
}
"""


def test_c_outline_matches_whole_parse() -> None:
    """C: functions, nested structs, macros, initialisers: same definitions and lines."""
    assert same_as_whole(C_SOURCE, "c") == [
        (2, 2, "MAX", "preproc_function_def"),
        (3, 5, "LOCKED", "preproc_function_def"),
        (7, 13, "outer", "struct_specifier"),
        (9, 11, "outer.inner", "struct_specifier"),
        (12, 12, "outer.OUTER_FLAG", "preproc_function_def"),
        (24, 31, "compute", "function_definition"),
    ]


def test_c_outline_drops_bodies_keeps_rows() -> None:
    """The outline is much shorter than the file and maps each of its rows to a file row."""
    outline = c_outline(C_SOURCE)
    assert len(outline.text) < len(C_SOURCE) // 2
    assert b"printk" not in outline.text
    assert b"kernel-doc" not in outline.text
    rows = outline.rows.tolist()
    assert len(rows) == outline.text.count(b"\n") + 1
    assert rows == sorted(rows)
    assert rows[-1] <= C_SOURCE.count(b"\n")


def test_c_body_after_unmatched_parenthesis_still_goes() -> None:
    """A body after a `)` with no `(` before it loses its inside and keeps its rows."""
    outline = c_outline(b"x)\n{\n\ta();\n}\nint y;\n")
    assert b"a()" not in outline.text
    assert outline.rows.tolist() == [0, 1, 3, 4, 5]


def test_c_parameters_go_whatever_parentheses_their_comments_and_strings_hold() -> None:
    """A function's parameters go from `(` to `)` though a comment or a string in them holds
    a parenthesis of its own."""
    source = (
        b'int f(int a /* ( */)\n{\n\treturn a;\n}\nint g(const char *s = "(")\n{\n}\n'
        b"int h(int a /* ) */, int b)\n{\n}\n"
    )
    assert c_outline(source).text == b"int f( )\n{\n}\nint g( )\n{\n}\nint h( )\n{\n}\n"
    assert same_as_whole(source, "cpp") == [
        (0, 3, "f", "function_definition"),
        (4, 6, "g", "function_definition"),
        (7, 9, "h", "function_definition"),
    ]


def test_c_unbalanced_braces_have_no_outline() -> None:
    """A file whose braces do not balance is parsed whole."""
    assert c_outlines([b"int f(void) {\n", b"int g(void) { }\n"]).outlines[0] is None
    assert c_outlines([b"int f(void) {\n", b"int g(void) { }\n"]).outlines[1] is not None


PY_SOURCE = b'''"""Module docstring with a def inside: def not_real():"""
import os

CONSTANT = {
    "a": 1,
}


@decorator(arg=1)
def top(a, b=(1, 2)):
    """Doc."""
    if a:
        return b
    # trailing comment in the body


class Widget(Base):
    x = 1
    y = 2

    def method(self):
        def inner():
            pass
        return inner

    async def other(self):
        with open("f") as f:
            data = f.read(
                10
            )
            # deeper comment
        # comment at method level


def last():
    return """
text at column zero
"""
'''


def test_python_outline_matches_whole_parse() -> None:
    """Python: decorators, classes, methods, closures, trailing comments: same definitions."""
    defs = same_as_whole(PY_SOURCE, "python")
    assert [symbol for _, _, symbol, _ in defs] == [
        "top",
        "Widget",
        "Widget.method",
        "Widget.other",
        "last",
    ]


def test_python_tabs_have_no_outline() -> None:
    """Tab indentation is not followed: the file is parsed whole."""
    assert python_outlines([b"def f():\n\treturn 1\n"]).outlines[0] is None


def test_outlines_of_a_batch_are_independent() -> None:
    """A batch's files do not bleed into each other (a body running to the end of a file)."""
    files = [b"def a():\n    x = 1\n    y = 2", b"def b():\n    return 3\n", b""]
    outlines = python_outlines(files).outlines
    for data, outline in zip(files, outlines, strict=True):
        if outline is not None:
            assert outline.rows[-1] <= data.count(b"\n")
            assert (
                definitions(data, "python", outline).rows()
                == definitions(data, "python", None).rows()
            )


def test_macro_chunk_ends_on_its_last_line() -> None:
    """A macro definition's chunk ends on its own last line, not the line after it.

    Deliberate change: the node ends with its newline (column 0 of the next row), which used
    to pull the next line into the macro's chunk.
    """
    src = b"#define A(x) (x)\nint a_value;\n#define B(x) \\\n  (x)\nint b_value;\n"
    chunks, _ = chunk_blob(src, "c")
    spans = [(c.start_row + 1, c.end_row + 1, c.symbol) for c in chunks]
    assert spans == [(1, 1, "A"), (2, 2, None), (3, 4, "B"), (5, 5, None)]


def _python_block(depth: int) -> st.SearchStrategy[list[str]]:
    """Lines of a valid block (relative indentation), statements and nested blocks."""
    simple = st.sampled_from(
        [
            ["x = 1"],
            ["pass"],
            ["# comment"],
            [""],
            ["call(a,", "     b)"],
            ['s = """', "text at column zero", '"""'],
            ["return (1,", "  2)"],
            ["@decorator", "def decorated():", "    pass"],
        ]
    )
    if depth >= 3:
        return st.lists(simple, min_size=1, max_size=4).map(lambda xs: [ln for x in xs for ln in x])
    header = st.sampled_from(["def f():", "async def g(a, b=2):", "class C(Base):", "if x:"])
    compound = st.tuples(header, _python_block(depth + 1), st.sampled_from(["", "    # c", "# c"]))
    statement = st.one_of(simple, compound.map(_indent_compound))
    return st.lists(statement, min_size=1, max_size=4).map(lambda xs: [ln for x in xs for ln in x])


def _indent_compound(parts: tuple[str, list[str], str]) -> list[str]:
    head, body, trailer = parts
    if all(not ln.strip() or ln.lstrip().startswith("#") for ln in body):
        body = [*body, "pass"]
    lines = [head, *("    " + ln if ln else ln for ln in body)]
    return [*lines, trailer] if trailer else lines


@settings(max_examples=150, deadline=None)
@given(_python_block(0))
def test_python_outline_never_changes_definitions(lines: list[str]) -> None:
    """Any valid arrangement of blocks: the definitions found are those of a whole parse."""
    data = "\n".join(lines).encode()
    outline = python_outlines([data]).outlines[0]
    whole = definitions(data, "python", None).rows()
    assert definitions(data, "python", outline).rows() == whole


def test_python_indentation_errors_are_parsed_whole() -> None:
    """A dedent the source gets wrong is not hidden by the outline: no outline."""
    assert python_outlines([b"def g():\n        pass\n    y = 2\n"]).outlines[0] is None
    assert python_outlines([b"def g():\n@dec\n    return 1\n"]).outlines[0] is None


def test_enumerators_go_from_the_outline() -> None:
    """An enum's enumerators go (C's `enum`, C++'s `enum class` and `enum struct`), its rows
    stay; an enum the outline cannot tell from its words (a base type) keeps them."""
    c_source = b"typedef enum e {\n\tE_ONE = 1,\n\tE_TWO,\n} e_t;\nenum { ANON };\nint f(void);\n"
    outline = c_outline(c_source)
    assert b"E_ONE" not in outline.text
    assert b"ANON" not in outline.text
    assert same_as_whole(c_source, "c") == [(0, 3, "e", "enum_specifier")]
    cpp_source = (
        b"enum class Color { RED, GREEN };\nenum struct Kind { PLAIN };\n"
        b"enum class Wide : int { BIG };\nnamespace n { class K { enum Q { R }; }; }\n"
    )
    outline = c_outline(cpp_source)
    assert not any(name in outline.text for name in (b"RED", b"PLAIN", b" R "))
    assert b"BIG" in outline.text
    assert same_as_whole(cpp_source, "cpp") == [
        (0, 0, "Color", "enum_specifier"),
        (1, 1, "Kind", "enum_specifier"),
        (2, 2, "Wide", "enum_specifier"),
        (3, 3, "n", "namespace_definition"),
        (3, 3, "n.K", "class_specifier"),
        (3, 3, "n.K.Q", "enum_specifier"),
    ]


C_ITEMS = [
    "int f{n}(int a)\n{{\n\treturn a;\n}}\n",
    "static void g{n}(void) {{ if (x) {{ y(); }} }}\n",
    "struct s{n} {{\n\tint a;\n\tstruct t{n} {{ int b; }} t;\n}};\n",
    "#define M{n}(a) \\\n\t((a) + 1)\n",
    "#define K{n} 3\n",
    "/* comment {{ {n} */\n",
    "// line comment }} {n}\n",
    "int v{n} = {{ 1, 2 }};\n",
    "extern int p{n}(char *s);\n",
    "enum e{n} {{ A{n}, B{n} }};\n",
    "enum {{ Z{n} = 1 << 2, Y{n} }};\n",
    "typedef enum te{n} {{\n\tTA{n},\n\tTB{n} = 2,\n}} te{n}_t;\n",
    "enum me{n} {{\n#define EM{n}(a) \\\n\t((a) + 1)\n\tMA{n},\n}};\n",
    "struct se{n} {{ enum ke{n} {{ KA{n} }} k; int x; }};\n",
    "typedef struct {{ int q; }} td{n};\n",
    'const char *s{n} = "{{";\n',
    "static const struct ops o{n} = {{ .open = f, .flags = {{ 1, 2 }} }};\n",
    "struct si{n} {{ int a; }} vi{n} = {{ 1 }};\n",
    "EXPORT_SYMBOL(x{n});\n",
    "int h{n}(void (*cb)(int), int x)\n{{\n\treturn x;\n}}\n",
    "int c{n}(int a) /* ( */\n{{\n\treturn a;\n}}\n",
    "static int w{n}(char *s /* ) */, int (*f)(void)) {{ return f(); }}\n",
]


@pytest.mark.parametrize("language", ["c", "cpp"])
@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(range(len(C_ITEMS))), max_size=20))
def test_c_outline_never_changes_definitions(language: str, items: list[int]) -> None:
    """Well-formed C items in any order, read as C or as C++: the definitions found are
    those of a whole parse."""
    data = "".join(C_ITEMS[k].format(n=i) for i, k in enumerate(items)).encode()
    same_as_whole(data, language)


def test_declarations_with_only_an_initialiser_go_from_the_outline() -> None:
    """A declaration whose only braces are its initialiser's goes; one that defines a struct
    with its initialiser stays, and so does a statement right after a function's body."""
    source = (
        b"static const struct ops table = {\n\t.open = f_open,\n};\n"
        b"struct pair { int a; } origin = { 0 };\n"
        b"int f(void)\n{\n\treturn 0;\n}\nEXPORT_SYMBOL(f);\n"
    )
    outline = c_outline(source)
    assert b"table" not in outline.text
    assert b"origin" in outline.text
    assert b"EXPORT_SYMBOL(f)" in outline.text
    assert same_as_whole(source, "c") == [
        (3, 3, "pair", "struct_specifier"),
        (4, 7, "f", "function_definition"),
    ]
    # No `;` of the dropped table right after a body: C++ would read `void g() {} ;` as a
    # declaration with a brace initialiser.
    cpp_source = b"static void g(void *c)\n{\n\tf(c);\n}\nstatic Handler h = {\n\tg,\n};\n"
    assert same_as_whole(cpp_source, "cpp") == [(0, 3, "g", "function_definition")]


def test_rows_of_outline_cover_file_rows() -> None:
    """Every outline row maps into the file (no row past the last)."""
    for data in (C_SOURCE, PY_SOURCE):
        n_rows = len(line_starts(data))
        for outline in (c_outlines([data]).outlines[0], python_outlines([data]).outlines[0]):
            if outline is not None:
                assert int(outline.rows.max()) < n_rows


def reference_lexemes(data: bytes, pattern: re.Pattern[bytes] = C_LEXEMES) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(data)]


def array_lexemes(files: list[bytes], lexer: Lexer = c_lexemes) -> list[list[tuple[int, int]]]:
    """Lexemes of files lexed together, as spans within each file."""
    data = b"\n".join(files)
    sizes = np.array([len(f) for f in files], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes + 1)[:-1]]).astype(np.int64)
    ends = starts + sizes
    a = np.frombuffer(data, dtype=np.uint8)
    ls, le = lexer(a, starts, ends)
    out: list[list[tuple[int, int]]] = [[] for _ in files]
    for s, e in zip(ls.tolist(), le.tolist(), strict=True):
        i = int(np.searchsorted(starts, s, side="right")) - 1
        out[i].append((s - int(starts[i]), e - int(starts[i])))
    return out


C_LEXEME_CASES = [
    C_SOURCE,
    b'#define A "unterminated\nint x = 1; /* never closed\n',
    b"#define F(x) /* spans\n lines */ x \\\n  + 1\nint y; // c \\\n  'q'\n",
    b"char *s = \"a\\\"b\\\\\"; char c = '\\''; int z = 1 / 2 / * 3;",
    b'#include "a/*b" /* c */\n#x \\/* not */ y\n/*/ still open */ "x"',
    b"a = b ## c; # at end",
    b"'\n' \"\n\" /*",
    b'#if X /* never closed\n"s" // c\n',
]

lexeme_bytes = st.lists(
    st.sampled_from([b"/", b"*", b'"', b"'", b"#", b"\\", b"\n", b"a", b" ", b"{", b"}", b";"]),
    max_size=60,
).map(b"".join)


def test_c_lexemes_known_cases() -> None:
    """Comments, literals, escapes, directives with comments: the same spans as the regex."""
    got = array_lexemes(C_LEXEME_CASES)
    assert got == [reference_lexemes(f) for f in C_LEXEME_CASES]


def test_c_lexemes_denser_than_the_first_guess_are_all_found() -> None:
    """Files with a lexeme every few bytes, far more than the scan first has room for: the
    regex's spans, in order."""
    files = [b"'a' " * 500, b"x", b"//\n" * 300 + b'"s"/**/' * 200]
    got = array_lexemes(files)
    assert got == [reference_lexemes(f) for f in files]
    assert sum(map(len, got)) == 1200


@settings(max_examples=300, deadline=None)
@given(st.lists(lexeme_bytes, min_size=1, max_size=4))
def test_c_lexemes_equal_the_regex(files: list[bytes]) -> None:
    """Any mix of the bytes that matter, several files at once: the regex's spans."""
    assert array_lexemes(files) == [reference_lexemes(f) for f in files]


c_kin_lexeme_bytes = st.lists(
    st.sampled_from(
        [b"/", b"*", b'"', b"'", b"#", b"`", b"\\", b"\n", b"a", b" ", b"{", b"}", b";"]
    ),
    max_size=60,
).map(b"".join)


@pytest.mark.parametrize(
    ("directives", "raw_strings", "text_blocks", "pattern"),
    [
        (False, True, False, GO_LEXEMES),
        (False, False, False, JS_LEXEMES),
        (True, False, True, JAVA_LEXEMES),
        (True, False, False, C_LEXEMES),
    ],
)
@settings(max_examples=200, deadline=None)
@given(files=st.lists(c_kin_lexeme_bytes, min_size=1, max_size=4))
def test_c_kin_lexemes_equal_their_regex(
    directives: bool,
    raw_strings: bool,
    text_blocks: bool,
    pattern: re.Pattern[bytes],
    files: list[bytes],
) -> None:
    """Without directives, with raw strings (Go), with text blocks (Java): each variant gives
    its regex's spans."""
    lexer = functools.partial(
        c_lexemes, directives=directives, raw_strings=raw_strings, text_blocks=text_blocks
    )
    assert array_lexemes(files, lexer) == [reference_lexemes(f, pattern) for f in files]


PY_LEXEME_CASES = [
    PY_SOURCE,
    b'x = """never closed\ny = 1 # c\n',
    rb"s = '''a\''' b''' + 'c\'d' # q'" + b'\nt = """""""x"',
    b"u = 'line\\\n still' ; v = 'broken\n'",
    b'w = """a""""b"""" # "',
    b"'''",
    b"z = '",
]


def test_python_lexemes_known_cases() -> None:
    """Comments, short and triple-quoted strings, escapes, unclosed ones: the regex's spans."""
    got = array_lexemes(PY_LEXEME_CASES, python_lexemes)
    assert got == [reference_lexemes(f, PY_LEXEMES) for f in PY_LEXEME_CASES]


python_lexeme_bytes = st.lists(
    st.sampled_from([b'"', b"'", b'"""', b"'''", b"#", b"\\", b"\n", b"a", b" "]),
    max_size=60,
).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(st.lists(python_lexeme_bytes, min_size=1, max_size=4))
def test_python_lexemes_equal_the_regex(files: list[bytes]) -> None:
    """Any mix of quotes, hashes, backslashes and newlines, several files at once: the
    regex's spans."""
    expected = [reference_lexemes(f, PY_LEXEMES) for f in files]
    assert array_lexemes(files, python_lexemes) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([b" ", b" " * 4, b" " * 8, b"\t", b"x", b"\n"]), max_size=80).map(
        b"".join
    ),
    st.sampled_from([b" ", b" \t"]),
    st.data(),
)
def test_first_not_in_finds_the_first_byte_not_skipped(
    data: bytes, skipped: bytes, draw: st.DataObject
) -> None:
    """Lines of indentation-like bytes, and any spans of them: the first byte not skipped,
    or the span's end, as a byte-by-byte scan finds it (whatever runs of spaces are stepped
    over at once)."""
    newlines = [i for i, byte in enumerate(data) if byte == 10]
    spans = list(zip([0] + [i + 1 for i in newlines], [*newlines, len(data)], strict=True))
    position = st.integers(0, len(data))
    spans += draw.draw(st.lists(st.tuples(position, position).map(sorted), max_size=10))
    skip = np.zeros(256, dtype=bool)
    skip[list(skipped)] = True
    expected = []
    for start, end in spans:
        at = start
        while at < end and data[at] in skipped:
            at += 1
        expected.append(at)
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    ends = np.array([e for _, e in spans], dtype=np.int64)
    a = np.frombuffer(data, dtype=np.uint8)
    assert first_not_in(a, starts, ends, skip).tolist() == expected
