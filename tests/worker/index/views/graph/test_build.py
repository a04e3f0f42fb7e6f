"""A commit's graph resolves each language's references by its rules, and nothing else."""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.gitrepos import commit, init_repo
from worker.index import IndexStore, build_commit_index
from worker.index.views.graph.build import build_graph
from worker.index.views.graph.model import CommitGraph, Relation


def _graph(tmp_path: Path, files: dict[str, str]) -> CommitGraph:
    repo = init_repo(tmp_path / "repo")
    head = commit(repo, files)
    build_commit_index(tmp_path / "cache", "a/b", repo, head)
    index = IndexStore(tmp_path / "cache").open("a/b", repo, head, deadline=time.monotonic() + 60)
    return build_graph(index).graph


def _edges(graph: CommitGraph, relation: Relation) -> set[tuple[str, str]]:
    ids, edges = graph.ids, graph.edges
    return {
        (ids[int(s)], ids[int(t)])
        for s, t, r in zip(edges.source, edges.target, edges.relation, strict=True)
        if r == relation
    }


def test_c_includes_resolve_beside_relative_and_by_shortest_suffix(tmp_path: Path) -> None:
    """An include names the header beside its file, a path relative to it, else the shortest
    path ending with it; a system header the tree lacks, and a file's own name, add nothing."""
    graph = _graph(
        tmp_path,
        {
            "drivers/net/dev.c": (
                '#include "dev.h"\n#include "../core/core.h"\n#include <linux/slab.h>\n'
                "#include <stdio.h>\nint f(void) { return 0; }\n"
            ),
            "drivers/net/dev.h": '#include "dev.h"\nint f(void);\n',
            "drivers/core/core.h": "int g(void);\n",
            "include/linux/slab.h": "void *kmalloc(int n);\n",
            "tools/include/linux/slab.h": "void *kmalloc(int n);\n",
            "fs/file.c": '#include "dev.h"\n#include <linux/slab.h>\nint h(void) { return 1; }\n',
        },
    )
    assert _edges(graph, Relation.IMPORT) == {
        ("drivers/net/dev.c", "drivers/net/dev.h"),
        ("drivers/net/dev.c", "drivers/core/core.h"),
        ("drivers/net/dev.c", "include/linux/slab.h"),
        ("fs/file.c", "drivers/net/dev.h"),
        ("fs/file.c", "include/linux/slab.h"),
    }


def test_one_call_text_means_each_class_its_own_member(tmp_path: Path) -> None:
    """`self.step()` in two classes of one file, and Java's bare `step()`, are each class's
    own method; the same text at the top of a file is neither."""
    graph = _graph(
        tmp_path,
        {
            "jobs.py": (
                "class A:\n    def run(self):\n        self.step()\n\n    def step(self):\n"
                "        pass\n\n\nclass B:\n    def run(self):\n        self.step()\n\n"
                "    def step(self):\n        pass\n\n\nself.step()\n"
            ),
            "Jobs.java": (
                "class Jobs {\n  static class A {\n    void run() { step(); }\n"
                "    void step() {}\n  }\n  static class B {\n    void run() { step(); }\n"
                "    void step() {}\n  }\n}\n"
            ),
        },
    )
    assert _edges(graph, Relation.INVOKE) == {
        ("jobs.py:A.run", "jobs.py:A.step"),
        ("jobs.py:B.run", "jobs.py:B.step"),
        ("Jobs.java:Jobs.A.run", "Jobs.java:Jobs.A.step"),
        ("Jobs.java:Jobs.B.run", "Jobs.java:Jobs.B.step"),
    }


def test_super_calls_are_the_bases_members(tmp_path: Path) -> None:
    """`super().run()`, `super.run()`, `base.Run()` and `parent::run()` call the base's
    method; a bare `super(...)` (`: base()`) in a constructor calls the base class, except in
    Python, where `super()` only makes the proxy."""
    graph = _graph(
        tmp_path,
        {
            "py/shop.py": (
                "class Base:\n    def run(self):\n        pass\n\n\n"
                "class Engine(Base):\n    def __init__(self):\n        super()\n\n"
                "    def run(self):\n        super().run()\n        super(Engine, self).run()\n"
            ),
            "ts/shop.ts": (
                "class Base {\n  area(): number {\n    return 1;\n  }\n}\n\n"
                "class Square extends Base {\n  constructor() {\n    super();\n  }\n\n"
                "  label(): number {\n    return super.area();\n  }\n}\n"
            ),
            "Shop.java": (
                "class Base {\n  void run() {}\n}\n\nclass Engine extends Base {\n"
                "  Engine() {\n    super();\n  }\n\n  void run() {\n    super.run();\n  }\n}\n"
            ),
            "Shop.cs": (
                "class Base {\n  public virtual void Run() {}\n}\n\nclass Engine : Base {\n"
                "  public Engine() : base() {}\n\n  public override void Run() {\n"
                "    base.Run();\n  }\n}\n"
            ),
            "Shop.php": (
                "<?php\nclass Base {\n  function run() {}\n}\n\nclass Engine extends Base {\n"
                "  function run() {\n    parent::run();\n  }\n}\n"
            ),
        },
    )
    assert _edges(graph, Relation.INVOKE) == {
        ("py/shop.py:Engine.run", "py/shop.py:Base.run"),
        ("ts/shop.ts:Square.constructor", "ts/shop.ts:Base"),
        ("ts/shop.ts:Square.label", "ts/shop.ts:Base.area"),
        ("Shop.java:Engine.Engine", "Shop.java:Base"),
        ("Shop.java:Engine.run", "Shop.java:Base.run"),
        ("Shop.cs:Engine.Engine", "Shop.cs:Base"),
        ("Shop.cs:Engine.Run", "Shop.cs:Base.Run"),
        ("Shop.php:Engine.run", "Shop.php:Base.run"),
    }


def test_ruby_methods_called_without_parentheses_resolve(tmp_path: Path) -> None:
    """`prepare` alone calls the class's (or a base's) method; a local of the same name
    calls nothing."""
    graph = _graph(
        tmp_path,
        {
            "lib/base.rb": "class Base\n  def prepare\n    nil\n  end\nend\n",
            "lib/engine.rb": (
                'require_relative "base"\n\nclass Engine < Base\n  def run\n    prepare\n'
                "    finish\n  end\n\n  def stop\n    finish = 1\n    finish\n  end\n\n"
                "  def finish\n    nil\n  end\nend\n"
            ),
        },
    )
    assert _edges(graph, Relation.INVOKE) == {
        ("lib/engine.rb:Engine.run", "lib/base.rb:Base.prepare"),
        ("lib/engine.rb:Engine.run", "lib/engine.rb:Engine.finish"),
    }
