"""Variables declared of a named class are found in each language's own words."""

from __future__ import annotations

import pytest

from worker.index.analysis.local_types import declarations


@pytest.mark.parametrize(
    ("grammar", "source", "expected"),
    [
        ("python", b"    w = Widget(1)\n    n = count(2)\n    W = Other()\n", {("w", "Widget")}),
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
            {("s", "Shape"), ("items", "List"), ("items", "ArrayList")},
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
        (
            "cpp",
            b"  Circle c(1.0);\n  const Shape& s = c;\n  int n = 0;\n",
            {("c", "Circle"), ("s", "Shape")},
        ),
        ("c", b"  Circle c(1.0);\n", set()),
        ("ruby", b"  w = Widget.new\n", set()),
    ],
)
def test_declared_classes(grammar: str, source: bytes, expected: set[tuple[str, str]]) -> None:
    """Each form names the variable and its class; lower-case types, C and Ruby add none."""
    assert {(d.name, d.cls) for d in declarations(source, grammar)} == expected


def test_declarations_say_where_they_are() -> None:
    """A declaration's offset is where its variable is written."""
    source = b"x = 1\n  w = Widget()\n"
    (found,) = declarations(source, "python")
    assert source[found.at : found.at + 1] == b"w"
