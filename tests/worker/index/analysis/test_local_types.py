"""Variables declared of a named class are found in each language's own words."""

from __future__ import annotations

import pytest

from worker.index.analysis.local_types import declarations


@pytest.mark.parametrize(
    ("grammar", "source", "expected"),
    [
        (
            "python",
            b"    w = Widget(1)\n    n = count(2)\n    x.y = Other()\n    a == Thing()\n",
            {("w", "Widget")},
        ),
        ("python", b"def f(s: Shape, n: int, m: Maker()):\n", {("s", "Shape")}),
        ("python", b"    s = models.Store()\n", {("s", "models.Store")}),
        ("javascript", b"  const w = new Widget();\n  this.v = new View();\n", {("w", "Widget")}),
        (
            "typescript",
            b"function f(s: Shape, n: number) {\n  const w = new ui.Widget();\n  a ? b : C;\n}\n",
            {("s", "Shape"), ("w", "ui.Widget")},
        ),
        (
            "java",
            b"void f(Shape s, int n) {\n  List<T> items = new ArrayList<>();\n}\n",
            {("items", "ArrayList")},
        ),
        ("csharp", b"var engine = new Engine();\n", {("engine", "Engine")}),
        (
            "kotlin",
            b"fun f(c: Circle) {\n  val s = Store(1)\n}\n",
            {("c", "Circle"), ("s", "Store")},
        ),
        (
            "rust",
            b"fn area(c: &Circle) {\n    let mut v = Vec::new();\n    let p = Point { x: 1 };\n}\n",
            {("c", "Circle"), ("v", "Vec"), ("p", "Point")},
        ),
        (
            "go",
            b"func f(s *Store, n int) {\n\tc := &http.Client{}\n\tvar m Map\n}\n",
            {("s", "Store"), ("c", "http.Client"), ("m", "Map")},
        ),
        ("cpp", b"  Circle c(1.0);\n  const Shape& s = c;\n", set()),
        ("c", b"  Circle c(1.0);\n", set()),
        ("ruby", b"  w = Widget.new\n", set()),
    ],
)
def test_declared_classes(grammar: str, source: bytes, expected: set[tuple[str, str]]) -> None:
    """Each form names the variable and its class; lower-case types, attributes,
    comparisons, C and Ruby add none, nor `Type name` outside a definition's first lines."""
    assert {(d.name, d.cls) for d in declarations(source, grammar)} == expected


def test_declarations_say_where_they_are() -> None:
    """A declaration's offset is where its variable is written."""
    source = b"x = 1\n  w = Widget()\n"
    (found,) = declarations(source, "python")
    assert source[found.at : found.at + 1] == b"w"


@pytest.mark.parametrize(
    ("grammar", "header"),
    [
        ("java", b"  void f(Shape s, List<T> items, int n) {"),
        ("csharp", b"  public void F(Shape s, List<T> items, int n) {"),
        ("cpp", b"double f(const Shape& s, List<T>* items, int n) {"),
    ],
)
def test_parameters_in_definition_headers(grammar: str, header: bytes) -> None:
    """`Type name` is read where a definition starts: its parameters of named classes."""
    source = header + b"\n  Other o = x;\n}\n"
    found = declarations(source, grammar, [(0, len(header))])
    assert {(d.name, d.cls) for d in found} == {("s", "Shape"), ("items", "List")}


def test_go_parameters_of_functions_methods_and_literals() -> None:
    """A Go function's, a method's and a function literal's parameters are read (a method's
    receiver is `this` already)."""
    source = (
        b"func Run(t *testing.T, n int) {\n\tr.GET(func(c *Context) {})\n}\n"
        b"func (s *Store) Get(k Key) {}\n"
    )
    assert {(d.name, d.cls) for d in declarations(source, "go")} == {
        ("t", "testing.T"),
        ("c", "Context"),
        ("k", "Key"),
    }
