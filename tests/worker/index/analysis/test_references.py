"""References of a batch: calls, imports, bases, each held by the innermost entity."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from worker.index.analysis.chunking import chunk_batch
from worker.index.analysis.entities import batch_entities
from worker.index.analysis.grammars import grammar_of
from worker.index.analysis.references import RELATION_NAMES, batch_references

Row = tuple[str | None, str, str, str | None, str | None, int]


def analyse(files: dict[str, bytes], *, reuse: bool = True) -> dict[str, list[Row]]:
    """Each file's references as (entity name, relation, target, name, alias, 1-based line);
    `reuse`: with the lexemes and line starts the chunker read."""
    paths = list(files)
    datas = [files[p] for p in paths]
    chunks = chunk_batch(datas, [grammar_of(p) for p in paths])
    entities = batch_entities(chunks.definitions)
    found = batch_references(
        chunks.text,
        datas,
        chunks.grammars,
        chunks.definitions,
        entities,
        lexed=chunks.lexemes if reuse else None,
        line_starts=chunks.line_starts if reuse else None,
    )
    out: dict[str, list[Row]] = {p: [] for p in paths}
    for blob, entity, relation, target, name, alias, row in zip(
        found.blob.tolist(),
        found.entity.tolist(),
        found.relation.tolist(),
        found.target.to_pylist(),
        found.name.to_pylist(),
        found.alias.to_pylist(),
        found.row.tolist(),
        strict=True,
    ):
        holder = entities.name[entity] if entity >= 0 else None
        out[paths[blob]].append((holder, RELATION_NAMES[relation], target, name, alias, row + 1))
    return out


def calls(rows: list[Row]) -> list[tuple[str | None, str]]:
    return [(holder, target) for holder, relation, target, *_ in rows if relation == "invoke"]


PYTHON = b'''import os
from .models import Model as M


class Foo(Base, mixins.Thing, Generic[T], metaclass=ABCMeta):
    """Doc: not_a_call()"""

    def bar(self, x):
        # comment_call()
        y = os.path.join(x, "s(")
        return helper(y) + self.baz() + helper(x)

    def baz(self):
        return bar(1)


def helper(v):
    if (v):
        return Foo().bar(v)


print(helper(2))
'''

C = b"""#include <linux/slab.h>
#include "local.h"
static int
probe(struct device *dev)
{
\tvoid *p = kmalloc(10, GFP_KERNEL); /* free_it(p) */
\tif (!p)
\t\treturn -ENOMEM;
\tdev->ops->open(dev);
\treturn helper(dev) + sizeof(int);
}
int helper(struct device *dev);
struct foo *make_foo(int n) { return alloc_foo(n); }
"""


def test_python_calls_imports_and_bases() -> None:
    """Calls per entity (once each, first line), not in comments, strings or definitions."""
    rows = analyse({"pkg/foo.py": PYTHON})["pkg/foo.py"]
    assert calls(rows) == [
        ("Foo.bar", "os.path.join"),
        ("Foo.bar", "helper"),
        ("Foo.bar", "self.baz"),
        ("Foo.baz", "bar"),
        ("helper", "Foo"),
        (None, "helper"),
    ]
    assert [r for r in rows if r[1] == "import"] == [
        (None, "import", "os", None, None, 1),
        (None, "import", ".models", "Model", "M", 2),
    ]
    assert [(r[0], r[2], r[5]) for r in rows if r[1] == "inherit"] == [
        ("Foo", "Base", 5),
        ("Foo", "mixins.Thing", 5),
        ("Foo", "Generic", 5),
    ]


def test_c_calls_skip_keywords_declarations_and_comments() -> None:
    """`sizeof(`, `if (`, prototypes and commented calls are no calls; `->` chains are kept."""
    rows = analyse({"drivers/x.c": C})["drivers/x.c"]
    assert calls(rows) == [
        ("probe", "kmalloc"),
        ("probe", "dev->ops->open"),
        ("probe", "helper"),
        ("make_foo", "alloc_foo"),
    ]
    assert [r[2] for r in rows if r[1] == "import"] == ["linux/slab.h", "local.h"]


def test_bases_from_the_parse_per_language() -> None:
    """Extends/implements (Java, TypeScript), base clauses (C++), impl traits (Rust)."""
    found = analyse(
        {
            "A.java": b"class A extends B implements C {\n  void m() { run(); }\n}\n",
            "a.ts": b"class A<T> extends B<T> implements C {\n  m(): void { run(); }\n}\n",
            "a.cpp": b"class A : public B, private ns::C {\n  void m() { run(); }\n};\n",
            "a.rs": b"impl Display for Point {\n    fn fmt(&self) { write(); }\n}\n",
        }
    )
    bases = {p: [(r[0], r[2]) for r in rows if r[1] == "inherit"] for p, rows in found.items()}
    assert bases == {
        "A.java": [("A", "B"), ("A", "C")],
        "a.ts": [("A", "B"), ("A", "C")],
        "a.cpp": [("A", "B"), ("A", "ns::C")],
        "a.rs": [("Point", "Display")],
    }
    assert calls(found["A.java"]) == [("A.m", "run")]
    assert calls(found["a.rs"]) == [("Point.fmt", "write")]


def test_go_method_definitions_are_not_calls() -> None:
    """`func (r *R) Get(` declares Get; calls inside it are its own."""
    rows = analyse(
        {"r.go": b"package r\n\nfunc (r *R) Get(k string) int {\n\treturn lookup(k)\n}\n"}
    )["r.go"]
    assert calls(rows) == [("R.Get", "lookup")]


def test_go_calls_through_the_receiver_are_stored_as_this() -> None:
    """In `func (c *Context)`, `c.Next()` is `this.Next`; another object's call stays."""
    source = (
        b"package gin\n\nfunc (c *Context) Abort() {\n\tc.Next()\n\tc.engine.Run()\n"
        b"\tgo func() { c.reset() }()\n\tcopy.Next()\n}\n\n"
        b"func (*Context) Reset() {\n\tc.Next()\n}\n"
    )
    rows = analyse({"context.go": source})["context.go"]
    assert calls(rows) == [
        ("Context.Abort", "this.Next"),
        ("Context.Abort", "this.engine.Run"),
        ("Context.Abort", "this.reset"),
        ("Context.Abort", "copy.Next"),
        ("Context.Reset", "c.Next"),
    ]


def test_ruby_calls_follow_any_word_but_def() -> None:
    """Ruby calls after a method name (`redirect to(x)`: both are calls), not in comments
    or strings."""
    source = (
        b"class App\n  def route(path)\n    redirect to(path) unless ok?(path)\n"
        b"    self.halt(1) # log(x)\n    'skip(1)'\n  end\nend\n"
    )
    assert calls(analyse({"app.rb": source})["app.rb"]) == [
        ("App.route", "redirect"),
        ("App.route", "to"),
        ("App.route", "self.halt"),
    ]


def test_php_calls_through_this_and_after_echo() -> None:
    """PHP's `$this->x()`, `self::x()` and `echo x()` are calls; `#` starts a comment."""
    source = (
        b"<?php\nclass Group {\n  function collect() {\n"
        b"    $this->register(1); self::make(); echo helper(2); # note(3)\n  }\n}\n"
    )
    assert calls(analyse({"group.php": source})["group.php"]) == [
        ("Group.collect", "$this->register"),
        ("Group.collect", "self::make"),
        ("Group.collect", "helper"),
    ]


def test_an_annotated_methods_own_name_is_no_call() -> None:
    """Below `@Test` or `[Fact]` a method's name is its declaration; a call of it is a call."""
    source = (
        b"class T {\n    @Test\n    public void silent() {\n        check(1);\n    }\n\n"
        b"    public void again() {\n        silent();\n    }\n}\n"
    )
    csharp = source.replace(b"@Test", b"[Fact]")
    rows = analyse({"T.java": source, "T.cs": csharp})
    for path in ("T.java", "T.cs"):
        assert calls(rows[path]) == [("T.silent", "check"), ("T.again", "silent")]


def test_private_members_are_called_through_this() -> None:
    """`this.#name(` is a call of the private member, not of a bare `name`."""
    source = (
        b"class Ky {\n"
        b"  #delay(): number { return 1; }\n"
        b"  #retry() { return this.#delay() + this.#count; }\n"
        b"}\n"
    )
    rows = analyse({"ky.ts": source, "ky.js": source.replace(b"(): number", b"()")})
    assert calls(rows["ky.ts"]) == [("Ky.#retry", "this.#delay")]
    assert calls(rows["ky.js"]) == [("Ky.#retry", "this.#delay")]


def test_go_raw_strings_hold_no_calls_and_hide_none() -> None:
    """A backtick string is a string: no call in it, and a `/*` in it opens no comment."""
    source = (
        b"package q\n\nfunc Find() int {\n"
        b"\tpattern := `src/*.go`\n"
        b"\tquery := `SELECT count(*)\nFROM t`\n"
        b"\treturn run(pattern, query) /* done */\n}\n"
    )
    assert calls(analyse({"q.go": source})["q.go"]) == [("Find", "run")]


def test_java_text_blocks_hold_no_calls_and_hide_none() -> None:
    """A text block is a string: no call in it, and a `/*` in it opens no comment."""
    source = (
        b"class Q {\n  int find() {\n"
        b'    String sql = """\n      SELECT count(*) FROM t /* rows\n      """;\n'
        b"    return run(sql); // done */\n  }\n}\n"
    )
    assert calls(analyse({"Q.java": source})["Q.java"]) == [("Q.find", "run")]


def test_calls_in_a_batch_without_definitions_belong_to_their_files() -> None:
    """Top-level calls with no definition anywhere in the batch are held by the file."""
    rows = analyse({"run.py": b"main()\n", "x.h": b"DECLARE(x);\n"})
    assert calls(rows["run.py"]) == [(None, "main")]
    assert calls(rows["x.h"]) == [(None, "DECLARE")]


NAMES = st.sampled_from(["alpha", "beta", "gamma", "delta"])


@st.composite
def python_files(draw: st.DrawFn) -> bytes:
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        lines.append(f"def {draw(NAMES)}(x):")
        for _ in range(draw(st.integers(1, 3))):
            lines.append(f"    y = {draw(NAMES)}(x)  # {draw(NAMES)}(q)")
        lines.append("")
    return "\n".join(lines).encode()


@st.composite
def c_files(draw: st.DrawFn) -> bytes:
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        lines.append(f"int {draw(NAMES)}(int x)\n{{")
        for _ in range(draw(st.integers(1, 3))):
            lines.append(f'\treturn {draw(NAMES)}(x, "{draw(NAMES)}(");')
        lines.append("}")
    return "\n".join(lines).encode()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just(".py"), python_files()),
            st.tuples(st.just(".c"), c_files()),
            st.tuples(st.just(".md"), st.just(b"# notes: alpha(x)\n")),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_a_blobs_references_do_not_depend_on_its_batch(files: list[tuple[str, bytes]]) -> None:
    """Analysed in any company (one family, mixed, or alone), a blob has the same references."""
    named = {f"f{i}{suffix}": data for i, (suffix, data) in enumerate(files)}
    together = analyse(named)
    for path, data in named.items():
        assert analyse({path: data})[path] == together[path]


MIXED_BATCH = {
    "a.c": b'#include "a.h"\n/* f(x) */\nint f(int x) { return g(x, "h(") + k(1); }\n',
    "b.js": b"// call(no)\nfunction m() { return n('o(') }\n",
    "c.py": b"def p():\n    # q()\n    return r('s(')\n",
    "d.c": b'int latin(void) { return t("\xe9("); }\n',
    "e.c": b"int open(void) { u(\n",
    "f.txt": b"v(w) x(y)\n",
    "g.cpp": b"void z() { zz(); }\n",
}


def test_references_are_the_same_whether_the_chunkers_reading_is_reused_or_not() -> None:
    """References read with the outliners' lexemes and the chunker's line starts equal those
    read afresh, in a batch mixing C, C++, JavaScript, Python, Latin-1 C, unbalanced C and
    plain text."""
    reused = analyse(MIXED_BATCH)
    assert reused == analyse(MIXED_BATCH, reuse=False)
    calls = {
        p: sorted(t for _, rel, t, _, _, _ in rows if rel == "invoke") for p, rows in reused.items()
    }
    assert calls["a.c"] == ["g", "k"]
    assert calls["b.js"] == ["n"]
    assert calls["c.py"] == ["r"]
    assert calls["d.c"] == ["t"]
    assert calls["f.txt"] == []
    assert calls["g.cpp"] == ["zz"]


def test_python_super_member_calls_are_stored_as_super_dot_name() -> None:
    """`super().run(` and `super(Engine, self).stop(` are calls of `super.run` and
    `super.stop`, once each, not in strings or comments; other calls on a call's result
    are left out."""
    source = b"""class Engine(Base):
    def run(self):
        super().run()
        super(Engine, self).stop(1)
        text = "super().hidden()"  # super().gone()
        make().other()
        return super().run()
"""
    rows = analyse({"engine.py": source})["engine.py"]
    assert calls(rows) == [
        ("Engine.run", "super"),
        ("Engine.run", "super.run"),
        ("Engine.run", "super.stop"),
        ("Engine.run", "make"),
    ]


def test_a_bare_super_call_in_a_constructor_is_a_call() -> None:
    """JavaScript's and Java's `super(x)` calls the base's constructor; `super.m(` its method."""
    source = b"class A extends B {\n  constructor(x) {\n    super(x);\n    super.init();\n  }\n}\n"
    rows = analyse({"a.js": source})["a.js"]
    assert calls(rows) == [("A.constructor", "super"), ("A.constructor", "super.init")]


def test_ruby_calls_without_parentheses_unless_the_name_is_a_local() -> None:
    """A statement that starts with a lowercase name (`prepare`, `halt 404 if x`, the head of
    `settings.views`) calls it; a local variable, a parameter, a block's parameter, a keyword,
    or a name in a string or comment does not."""
    source = b"""class App
  def route(path, opts = {})
    prepare
    content_type :json
    halt 404 if missing?
    total = count
    total
    items.each do |item|
      item
    end
    settings.views
    opts
    render(path)
    "finish" # finish
  end
end
"""
    rows = analyse({"app.rb": source})["app.rb"]
    assert calls(rows) == [
        ("App.route", "prepare"),
        ("App.route", "content_type"),
        ("App.route", "halt"),
        ("App.route", "items"),
        ("App.route", "settings"),
        ("App.route", "render"),
    ]


def test_calls_through_a_variable_of_a_known_class_name_the_class() -> None:
    """`w.render()` after `w = Widget()` in the same function is `Widget.render`; before the
    declaration (`m = m.Maker()` too), in another function, or through an untyped variable
    it stays as written."""
    source = b"""def main():
    v.render()
    w = Widget()
    w.render()
    x.render()
    v = View()
    m = m.Maker()


def other():
    w.close()
"""
    rows = analyse({"app.py": source})["app.py"]
    assert calls(rows) == [
        ("main", "v.render"),
        ("main", "Widget"),
        ("main", "Widget.render"),
        ("main", "x.render"),
        ("main", "View"),
        ("main", "m.Maker"),
        ("other", "w.close"),
    ]


def test_a_declaration_in_a_string_or_comment_declares_nothing() -> None:
    """`"zone: Zone"` in a string and `# w = Widget()` in a comment type no variable."""
    source = b"""def main():
    check("zone: Zone")
    # w = Widget()
    zone.activate()
    w.render()
"""
    rows = analyse({"app.py": source})["app.py"]
    assert calls(rows) == [("main", "check"), ("main", "zone.activate"), ("main", "w.render")]
