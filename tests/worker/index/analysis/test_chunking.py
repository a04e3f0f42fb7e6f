"""Chunking: definition spans per language from tree-sitter, line windows for other text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from worker.index.analysis.chunk_layout import TEXT_WINDOW_LINES
from worker.index.analysis.chunking import MINIFIED_LINE_BYTES, chunk_blob


def spans(data: bytes, language: str | None) -> list[tuple[int, int, str | None]]:
    chunks, _ = chunk_blob(data, language)
    return [(c.start_row + 1, c.end_row + 1, c.symbol) for c in chunks]


PYTHON = b'''import os

# helper comment
@decorator
def top(a):
    return a

class Flask(Base):
    """Doc."""
    x = 1

    def route(self, rule):
        def inner():
            pass
        return inner

    async def other(self):
        pass
'''


def test_python_class_with_methods() -> None:
    """A class head, its methods (qualified, closures inside), decorators and comments attached."""
    assert spans(PYTHON, "python") == [
        (1, 1, None),
        (3, 6, "top"),
        (8, 10, "Flask"),
        (12, 15, "Flask.route"),
        (17, 18, "Flask.other"),
    ]


def test_javascript_functions_and_classes() -> None:
    """JS function declarations, classes with methods, arrow functions bound to a name."""
    src = b"""const x = 1;
function foo(a) {
  return a;
}
class Bar extends Baz {
  method(a) {
    return a;
  }
}
const arrow = (a) => a + 1;
"""
    assert spans(src, "javascript") == [
        (1, 1, None),
        (2, 4, "foo"),
        (5, 5, "Bar"),
        (6, 8, "Bar.method"),
        (9, 9, "Bar"),
        (10, 10, "arrow"),
    ]


def test_javascript_functions_assigned_to_members() -> None:
    """A function assigned to a member is defined under its owner, a prototype's under its class."""
    src = b"""var res = module.exports = {};

/** Set the status. */
res.status = function status(code) {
  this.statusCode = code;
  return this;
};

Router.prototype.route = function (path) {
  return new Route(path);
};
exports.compile = (a) => a + 1;
make().on.handler = function () {};
"""
    assert spans(src, "javascript") == [
        (1, 1, None),
        (3, 7, "res.status"),
        (9, 11, "Router.route"),
        (12, 12, "exports.compile"),
        (13, 13, "handler"),
    ]


def test_a_line_leads_a_definition_only_if_it_starts_with_a_whole_comment_prefix() -> None:
    """`//` and `/*` lead a C definition; a line that starts with only their first byte does
    not (a continued division), nor does one that starts with a prefix after code."""
    src = b"""int a = 4
/ 2;
int f() { return 1; }
// doc
int g() { return 1; }
x; // not a doc
int h() { return 1; }
"""
    assert spans(src, "c") == [(1, 2, None), (3, 3, "f"), (4, 5, "g"), (6, 6, None), (7, 7, "h")]


def test_a_doc_comment_a_blank_line_above_its_definition_leads_it() -> None:
    """A block comment one blank line above a definition leads it; two blanks or `//` do not."""
    src = b"""/**
 * Doc.
 */

int f() { return 1; }
/* two blanks */


int g() { return 1; }
// line

int h() { return 1; }
"""
    expected = [(1, 5, "f"), (6, 6, None), (9, 9, "g"), (10, 10, None), (12, 12, "h")]
    assert spans(src, "cpp") == expected
    js = src.replace(b"int ", b"function ")
    assert spans(js, "javascript") == expected


def test_typescript_var_and_member_functions() -> None:
    """TS functions bound by `var` and assigned to members are definitions, as in JS."""
    src = b"""var handler = function (x: number): number { return x; };
app.listen = (port: number): void => {
  serve(port);
};
"""
    assert spans(src, "typescript") == [(1, 1, "handler"), (2, 4, "app.listen")]


def test_typescript_interfaces_classes_functions() -> None:
    """TS interfaces, classes with methods and exported functions."""
    src = b"""interface Shape { area(): number; }
export class Circle implements Shape {
  area(): number {
    return 3.14;
  }
}
export function helper(x: number): number { return x; }
"""
    assert spans(src, "typescript") == [
        (1, 1, "Shape"),
        (2, 2, "Circle"),
        (3, 5, "Circle.area"),
        (6, 6, "Circle"),
        (7, 7, "helper"),
    ]


def test_class_fields_holding_functions_and_typescript_namespaces() -> None:
    """A class field bound to a function is a method; a TS namespace holds its functions."""
    src = b"""export class Store {
  count = 0;
  handle = (event: Event): void => {
    this.dispatch(event);
  };
  dispatch(event: Event) {}
}
namespace Util {
  export function clamp(x: number) { return x; }
}
"""
    assert spans(src, "typescript") == [
        (1, 2, "Store"),
        (3, 5, "Store.handle"),
        (6, 6, "Store.dispatch"),
        (7, 7, "Store"),
        (8, 8, "Util"),
        (9, 9, "Util.clamp"),
        (10, 10, "Util"),
    ]
    js = b"class Store {\n  handle = (event) => {\n    return event;\n  };\n}\n"
    assert spans(js, "javascript") == [(1, 1, "Store"), (2, 4, "Store.handle"), (5, 5, "Store")]


def test_go_funcs_and_methods() -> None:
    """Go functions, methods qualified by receiver type, types with their doc comment."""
    src = b"""package main

// Server serves.
type Server struct {
\taddr string
}

func (s *Server) Serve() error {
\treturn nil
}

func main() {
}
"""
    assert spans(src, "go") == [
        (1, 1, None),
        (3, 6, "Server"),
        (8, 10, "Server.Serve"),
        (12, 13, "main"),
    ]


def test_java_class_and_methods() -> None:
    """Java class head, constructor and methods with their javadoc."""
    src = b"""package x;

public class Foo {
    private int a;

    /** Doc. */
    public Foo() {}

    public int bar(int x) {
        return x;
    }
}
"""
    assert spans(src, "java") == [
        (1, 1, None),
        (3, 4, "Foo"),
        (6, 7, "Foo.Foo"),
        (9, 11, "Foo.bar"),
        (12, 12, "Foo"),
    ]


def test_rust_fns_and_impls() -> None:
    """Rust structs, impl blocks with qualified methods, free functions."""
    src = b"""use std::io;

/// A point.
pub struct Point { x: i32 }

impl Point {
    pub fn new() -> Self {
        Point { x: 0 }
    }
}

fn main() {
}
"""
    assert spans(src, "rust") == [
        (1, 1, None),
        (3, 4, "Point"),
        (6, 6, "Point"),
        (7, 9, "Point.new"),
        (10, 10, "Point"),
        (12, 13, "main"),
    ]


def test_c_functions_with_kernel_doc() -> None:
    """C functions (pointer return too), structs and function-like macros."""
    src = b"""#include <stdio.h>

/**
 * add - adds
 */
static int add(int a, int b)
{
\treturn a + b;
}

struct foo {
\tint x;
};

char *name(void) { return "x"; }
#define MAX(a, b) ((a) > (b) ? (a) : (b))
"""
    assert spans(src, "c") == [
        (1, 1, None),
        (3, 9, "add"),
        (11, 13, "foo"),
        (15, 15, "name"),
        (16, 16, "MAX"),
    ]


def test_cpp_namespaces_classes_methods() -> None:
    """C++ namespaces and classes nest; out-of-class method definitions keep `Class::name`."""
    src = b"""namespace ns {
class Widget {
 public:
  int size() const { return 1; }
};
void Widget::draw() {
}
}
"""
    assert spans(src, "cpp") == [
        (1, 1, "ns"),
        (2, 3, "ns.Widget"),
        (4, 4, "ns.Widget.size"),
        (5, 5, "ns.Widget"),
        (6, 7, "ns.Widget::draw"),
        (8, 8, "ns"),
    ]


def test_ruby_modules_classes_and_methods() -> None:
    """Ruby modules and classes (`A::B` by its last name), methods and `def self.x`."""
    src = b"""require 'rack'

module Sinatra
  # Serves requests.
  class Base < Parent
    def redirect(uri)
      halt 302
    end

    def self.build(app) = new(app)
  end

  class Sinatra::Application < Base; end
end
"""
    assert spans(src, "ruby") == [
        (1, 1, None),
        (3, 3, "Sinatra"),
        (4, 5, "Sinatra.Base"),
        (6, 8, "Sinatra.Base.redirect"),
        (10, 10, "Sinatra.Base.build"),
        (11, 11, "Sinatra.Base"),
        (13, 13, "Sinatra.Application"),
        (14, 14, "Sinatra"),
    ]


def test_php_classes_traits_functions_and_namespaces() -> None:
    """PHP classes with their doc comment and methods, traits, functions, braced namespaces."""
    src = b"""<?php
namespace Slim\\Routing;

/**
 * A group of routes.
 */
final class RouteGroup extends Base
{
    public function collect(): void
    {
        $this->register(1);
    }
}

trait Named { function name() {} }
function helper($x) { return $x; }
namespace Other { function inner() {} }
"""
    assert spans(src, "php") == [
        (1, 2, None),
        (4, 8, "RouteGroup"),
        (9, 12, "RouteGroup.collect"),
        (13, 13, "RouteGroup"),
        (15, 15, "Named.name"),
        (16, 16, "helper"),
        (17, 17, "Other.inner"),
    ]


def test_csharp_namespaces_classes_and_methods() -> None:
    """C# namespaces qualify their types; doc comments and attributes lead a method."""
    src = b"""using System;

namespace Acme.Shop
{
    public class Engine : Base
    {
        /// <summary>Runs.</summary>
        [Obsolete]
        public int Run()
        {
            return Step();
        }

        private int Step() => 1;
    }
}
"""
    assert spans(src, "csharp") == [
        (1, 1, None),
        (3, 4, "Acme.Shop"),
        (5, 6, "Acme.Shop.Engine"),
        (7, 12, "Acme.Shop.Engine.Run"),
        (14, 14, "Acme.Shop.Engine.Step"),
        (15, 15, "Acme.Shop.Engine"),
        (16, 16, "Acme.Shop"),
    ]


def test_kotlin_classes_objects_and_functions() -> None:
    """Kotlin classes (their companion's functions inside), objects and top-level functions."""
    src = b"""package shop

/** An engine. */
class Engine(val size: Int) : Base() {
    fun start() {
        run()
    }

    companion object {
        fun create() = Engine(1)
    }
}

object Registry {
    fun find(name: String) = name
}

fun helper(x: Int) = x
"""
    assert spans(src, "kotlin") == [
        (1, 1, None),
        (3, 4, "Engine"),
        (5, 7, "Engine.start"),
        (9, 9, "Engine"),
        (10, 10, "Engine.create"),
        (11, 12, "Engine"),
        (14, 14, "Registry"),
        (15, 15, "Registry.find"),
        (16, 16, "Registry"),
        (18, 18, "helper"),
    ]


def test_plain_text_line_windows() -> None:
    """Text without a parser becomes blank-trimmed windows of at most TEXT_WINDOW_LINES."""
    lines = [f"line {i}" for i in range(1, 101)]
    lines[29] = ""  # a paragraph break the window prefers to cut at
    result = spans("\n".join(lines).encode(), None)
    assert result[0] == (1, 29, None)
    assert all(end - start < TEXT_WINDOW_LINES for start, end, _ in result)
    covered = [n for start, end, _ in result for n in range(start, end + 1)]
    assert covered == [n for n in range(1, 101) if n != 30]


def test_minified_code_is_chunked_as_text() -> None:
    """Code whose lines average over MINIFIED_LINE_BYTES gets line windows, not definitions."""
    body = b"".join(b"function f%d(a){return a+%d}" % (i, i) for i in range(200))
    minified = b"/*! lib v1 */\n" + body
    assert len(minified) > 2 * MINIFIED_LINE_BYTES
    assert spans(minified, "javascript") == [(1, 2, None)]
    written = minified.replace(b"}", b"}\n")
    assert spans(written, "javascript")[:2] == [(1, 2, "f0"), (3, 3, "f1")]


def test_blank_blob_has_no_chunks() -> None:
    """A blob of blank lines has nothing to index."""
    assert spans(b"\n\n  \n", None) == []
    assert spans(b"", "python") == []


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(["def f():", "    pass", "class A:", "  x = 1", "", "#c", "}"]), max_size=40
    ),
    st.sampled_from(["python", "c", "javascript", None]),
)
def test_spans_within_blob(lines: list[str], language: str | None) -> None:
    """Chunks are ordered, disjoint and within the blob's line count (split on b"\\n")."""
    data = "\n".join(lines).encode()
    n_lines = len(data.split(b"\n"))
    previous_end = 0
    for start, end, _ in spans(data, language):
        assert previous_end < start <= end <= n_lines
        previous_end = end
