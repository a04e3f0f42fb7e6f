"""Definitions: pre-order, parents, qualified names, nesting under containers only."""

from __future__ import annotations

import tree_sitter
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.index.analysis.definitions import MAX_NESTING, Definition, definitions, tree
from worker.index.analysis.grammars import grammar
from worker.index.analysis.outline import c_outlines

PYTHON = b"""class Outer:
    def method(self):
        def closure():
            class Hidden:
                pass
        return closure

    class Inner:
        def deep(self):
            pass


def top():
    pass
"""


def test_definitions_come_in_pre_order_with_parents() -> None:
    """Each definition follows the one it is nested in, which its parent index names."""
    found = definitions(PYTHON, "python", None)
    assert found.rows() == [
        (0, 9, "Outer", "class_definition"),
        (1, 5, "Outer.method", "function_definition"),
        (7, 9, "Outer.Inner", "class_definition"),
        (8, 9, "Outer.Inner.deep", "function_definition"),
        (12, 13, "top", "function_definition"),
    ]
    assert found.parent.tolist() == [-1, 0, 0, 2, -1]


def test_a_function_keeps_what_is_nested_in_it() -> None:
    """Definitions inside a function (closures, their classes) get no entry of their own."""
    symbols = definitions(PYTHON, "python", None).symbol
    assert not any("closure" in s or "Hidden" in s for s in symbols)


def test_nesting_stops_at_max_nesting() -> None:
    """Classes nested deeper than MAX_NESTING stay inside the deepest one kept."""
    depth = MAX_NESTING + 3
    source = (
        "".join(f"{'    ' * i}class C{i}:\n" for i in range(depth)) + "    " * depth + "x = 1\n"
    )
    found = definitions(source.encode(), "python", None)
    assert len(found.symbol) == MAX_NESTING
    assert found.symbol[-1] == ".".join(f"C{i}" for i in range(MAX_NESTING))
    assert found.parent.tolist() == list(range(-1, MAX_NESTING - 1))


def test_no_definitions_is_empty() -> None:
    """A blob without definitions has none, and an empty tree."""
    found = definitions(b"x = 1\nprint(x)\n", "python", None)
    assert found.rows() == []
    assert len(found.parent) == 0
    assert tree(found) == []


_C_PIECES = [
    "int", " f", "(void)", ";", "\n", "struct s", " *p", "extern ", "x = 1", "/* c */", "\"s\"",
    "(", ")", "[3]", ",", "enum e", "typedef ", "class K", "::", "<T>", "template", "namespace n",
]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["c", "cpp"]), st.lists(st.sampled_from(_C_PIECES), max_size=40))
def test_c_text_without_a_brace_or_a_hash_defines_nothing(language: str, pieces: list[str]) -> None:
    """C and C++ without `{` or `#` (prototypes, constants, forward declarations) define
    nothing: the definition query matches nothing the parser makes of them, whole or
    outlined."""
    data = "".join(pieces).encode()
    outline = c_outlines([data]).outlines[0]
    parsed_with = grammar(language)
    parser = tree_sitter.Parser(parsed_with.language)
    for text in (data, data if outline is None else outline.text):
        root = parser.parse(text).root_node
        assert tree_sitter.QueryCursor(parsed_with.query).matches(root) == []
    assert definitions(data, language, outline).rows() == []


def test_a_c_body_or_macro_in_a_text_of_prototypes_is_found() -> None:
    """One brace or one function-like macro among prototypes is enough to find its definition."""
    prototypes = b"int f(void);\nextern char *g(int);\n"
    for text, symbol in ((b"struct s { int a; };\n", "s"), (b"#define M(x) (x)\n", "M")):
        data = prototypes + text
        found = definitions(data, "c", c_outlines([data]).outlines[0])
        assert found.symbol == [symbol]


def walk(roots: list[Definition]) -> tuple[list[tuple[int, int, str, str]], list[int]]:
    """The pre-order rows of a tree and the index of each one's parent (-1 for a root)."""
    rows: list[tuple[int, int, str, str]] = []
    parents: list[int] = []

    def visit(d: Definition, parent: int) -> None:
        index = len(rows)
        rows.append((d.start_row, d.end_row, d.symbol, d.kind))
        parents.append(parent)
        for child in d.children:
            visit(child, index)

    for root in roots:
        visit(root, -1)
    return rows, parents


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["class", "def"])), max_size=30))
def test_tree_walks_back_to_the_same_order(shape: list[tuple[int, str]]) -> None:
    """The tree's pre-order walk gives the flat definitions back, children under parents."""
    depths: list[int] = []
    for step, _ in shape:
        depths.append(min(step, depths[-1] + 1) if depths else 0)
    lines: list[str] = []
    for i, (depth, (_, keyword)) in enumerate(zip(depths, shape, strict=True)):
        head = f"class n{i}:" if keyword == "class" else f"def n{i}():"
        lines.append("    " * depth + head + "\n")
        if i + 1 == len(depths) or depths[i + 1] <= depth:
            lines.append("    " * (depth + 1) + "pass\n")
    found = definitions("".join(lines).encode(), "python", None)
    parents = found.parent.tolist()
    assert walk(tree(found)) == (found.rows(), parents)
    for i, parent in enumerate(parents):
        if parent >= 0:
            assert found.symbol[i].startswith(found.symbol[parent] + ".")
            assert found.start_row[parent] <= found.start_row[i] <= found.end_row[parent]


def test_a_rust_impl_for_a_reference_holds_its_methods() -> None:
    """`impl Trait for &'a mut Type<T>` is Type's; one for `&mut R`, R its parameter, none's."""
    source = (
        b"impl<'a, W> ser::Serializer for &'a mut Serializer<W> {\n"
        b"    fn serialize_f32(self, v: f32) {}\n"
        b"}\n"
        b"impl Display for &a::Path {\n"
        b"    fn fmt(&self) {}\n"
        b"}\n"
        b"impl<'a, R: Read<'a>> Read<'a> for &'a mut R {\n"
        b"    fn next(&mut self) { R::next(self) }\n"
        b"}\n"
    )
    assert definitions(source, "rust", None).symbol == [
        "Serializer",
        "Serializer.serialize_f32",
        "Path",
        "Path.fmt",
        "next",
    ]
