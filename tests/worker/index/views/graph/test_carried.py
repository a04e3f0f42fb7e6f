"""A graph built from an earlier commit's graph is the graph a whole build gives, and it
resolves again only the files whose references may mean something else."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pygit2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.gitrepos import commit, init_repo
from worker.index import IndexStore, build_commit_index
from worker.index.store.graph_tables import GRAPH_FILES, read_carried, write_graph
from worker.index.views.graph.build import GraphBuild, build_graph
from worker.index.views.graph.carried import Previous
from worker.index.views.graph.model import CommitGraph


def _build(
    cache: Path, repo: pygit2.Repository, head: str, previous: Previous | None
) -> GraphBuild:
    """The commit's graph, carried from `previous` however much changed (no carry limit)."""
    build_commit_index(cache, "a/b", repo, head)
    index = IndexStore(cache).open("a/b", repo, head, deadline=time.monotonic() + 60)
    return build_graph(index, previous, carry_limit=1.0)


def _stored(commit_dir: Path, built: GraphBuild) -> Previous:
    """The build as the mirror keeps it: written, then read back."""
    commit_dir.mkdir(parents=True, exist_ok=True)
    write_graph(commit_dir, built.graph, built.state)
    previous = read_carried(commit_dir)
    assert previous is not None
    return previous


def _assert_same(carried: CommitGraph, whole: CommitGraph) -> None:
    assert list(carried.ids) == list(whole.ids)
    assert list(carried.names) == list(whole.names)
    for name in ("types", "start_line", "end_line"):
        assert np.array_equal(getattr(carried, name), getattr(whole, name))
    for name in ("source", "target", "relation"):
        assert np.array_equal(getattr(carried.edges, name), getattr(whole.edges, name)), name


_PACKAGE = {
    "shop/__init__.py": "from shop.models import Order\n",
    "shop/models.py": (
        "class Base:\n    def save(self):\n        return 1\n\n"
        "class Order(Base):\n    def total(self):\n        return self.save()\n"
    ),
    "shop/views.py": (
        "from shop.models import Order\nfrom shop import util\n\n"
        "def show():\n    order = Order()\n    util.fmt(order.total())\n    return Order.total\n"
    ),
    "shop/util.py": "def fmt(x):\n    return str(x)\n",
    **{f"shop/other{i}.py": f"def other{i}():\n    return {i}\n" for i in range(8)},
    "lib/list.h": "int list_add(int x);\n",
    "lib/list.c": '#include "list.h"\nint list_add(int x) { return x + 1; }\n',
    "lib/use.c": '#include "list.h"\nint use(void) { return list_add(2); }\n',
}


def test_an_edited_commit_resolves_only_what_may_differ(tmp_path: Path) -> None:
    """Renaming a method, moving a base, adding and removing files and a C definition give the
    whole build's graph, and unrelated files are not resolved again."""
    repo = init_repo(tmp_path / "repo")
    first = commit(repo, _PACKAGE)
    before = _build(tmp_path / "cache", repo, first, None)
    second = commit(
        repo,
        {
            "shop/models.py": (
                "class Base:\n    def store(self):\n        return 1\n\n"
                "class Order(Base):\n    def total(self):\n        return self.save()\n"
            ),
            "shop/base.py": "class Base:\n    def save(self):\n        return 2\n",
            "shop/other3.py": None,
            "lib/list2.c": "int list_add(int x) { return x; }\n",
        },
    )
    carried = _build(tmp_path / "cache", repo, second, _stored(tmp_path / "g1", before))
    whole = _build(tmp_path / "cache", repo, second, None)
    _assert_same(carried.graph, whole.graph)
    assert carried.resolved < whole.resolved == whole.files


def test_a_new_definition_or_file_resolves_again_only_what_looked_its_name_up(
    tmp_path: Path,
) -> None:
    """A definition added to a file, and a file added to a package, change only lookups of
    their names there: the files that import other names from them are not resolved again."""
    repo = init_repo(tmp_path / "repo")
    first = commit(repo, _PACKAGE)
    before = _build(tmp_path / "cache", repo, first, None)
    second = commit(
        repo,
        {
            "shop/util.py": "def fmt(x):\n    return str(x)\n\ndef extra():\n    return 0\n",
            "shop/new.py": "def fresh():\n    return 1\n",
        },
    )
    carried = _build(tmp_path / "cache", repo, second, _stored(tmp_path / "g1", before))
    whole = _build(tmp_path / "cache", repo, second, None)
    _assert_same(carried.graph, whole.graph)
    assert carried.resolved == 2  # util.py and new.py themselves


def _carried_and_whole(
    tmp_path: Path, files: dict[str, str], edits: dict[str, str | None]
) -> tuple[GraphBuild, GraphBuild]:
    """The graph of a commit that edits `files`, carried from theirs and built whole."""
    repo = init_repo(tmp_path / "repo")
    before = _build(tmp_path / "cache", repo, commit(repo, files), None)
    second = commit(repo, edits)
    carried = _build(tmp_path / "cache", repo, second, _stored(tmp_path / "g1", before))
    return carried, _build(tmp_path / "cache", repo, second, None)


def test_a_file_resolved_again_sees_no_bindings_of_a_later_file_yet(tmp_path: Path) -> None:
    """As in a whole build, a file does not see the bindings of a file after it: a file's
    carried bindings are in place only once the build has passed it."""
    carried, whole = _carried_and_whole(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.z import thing\n\ndef use():\n    return thing()\n",
            "pkg/util.py": "def thing():\n    return 1\n",
            "pkg/z.py": "from pkg.util import thing\n",
        },
        {"pkg/a.py": "from pkg.z import thing\n\ndef use():\n    return thing() + 1\n"},
    )
    _assert_same(carried.graph, whole.graph)
    assert carried.resolved < whole.resolved


def test_a_file_resolved_again_for_its_calls_alone_keeps_its_imports(tmp_path: Path) -> None:
    """A file resolved again only for its calls (a class it inherits from changed bases)
    still resolves the names its imports bound, which are carried."""
    carried, whole = _carried_and_whole(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/base1.py": "class A:\n    def run(self):\n        return 1\n",
            "pkg/base2.py": "class B:\n    def run(self):\n        return 2\n",
            "pkg/models.py": "from pkg.base1 import A\n\nclass M(A):\n    pass\n",
            "pkg/user.py": (
                "from pkg.models import M\nfrom pkg.util import helper\n\n"
                "class U(M):\n    def go(self):\n        helper()\n        return self.run()\n"
            ),
            "pkg/util.py": "def helper():\n    return 0\n",
        },
        {"pkg/models.py": "from pkg.base2 import B\n\nclass M(B):\n    pass\n"},
    )
    _assert_same(carried.graph, whole.graph)
    assert carried.resolved < whole.resolved


def test_a_chain_of_carried_graphs_stays_whole(tmp_path: Path) -> None:
    """Each commit built from the one before (as stored) equals its whole build, commit after
    commit."""
    repo = init_repo(tmp_path / "repo")
    previous = None
    order = "class Order(Base):\n    def total(self):\n        return 0\n"
    edits: list[dict[str, str | None]] = [
        _PACKAGE,
        {"shop/util.py": "def fmt(x):\n    return repr(x)\n"},
        {"shop/views.py": "from shop.util import fmt\n\ndef show():\n    return fmt(1)\n"},
        {"shop/util.py": None, "shop/util/__init__.py": "def fmt(x):\n    return x\n"},
        {"lib/list.h": None, "lib/inc/list.h": "int list_add(int x);\n"},
        # Definitions an unchanged importer names move, then go.
        {"shop/util/__init__.py": "def parse(x):\n    return x\n\ndef fmt(x):\n    return x\n"},
        {"shop/util/__init__.py": "def parse(x):\n    return x\n"},
        {"shop/views.py": "from shop.extra import later\n\ndef show():\n    return later()\n"},
        {"shop/extra.py": "def later():\n    return 1\n", "lib/list.h": "int list_add(int x);\n"},
        {
            "shop/api.py": "from shop import Order\n\ndef make():\n    return Order().total()\n",
            "shop/orders.py": "class Order:\n    def total(self):\n        return 0\n",
        },
        # Only what the package binds changes: its importers must follow it.
        {"shop/__init__.py": "from shop.orders import Order\n"},
        {
            "shop/api.py": (
                "from shop import Order\n\n"
                "class Special(Order):\n    def go(self):\n        return self.save()\n"
            ),
            "shop/orders.py": f"from shop.base import Base\n\n{order}",
        },
        # Only the class's base changes: what its methods mean elsewhere must follow it.
        {"shop/orders.py": f"from shop.models import Base\n\n{order}"},
    ]
    for step, files in enumerate(edits):
        head = commit(repo, files)
        built = _build(tmp_path / "cache", repo, head, previous)
        _assert_same(built.graph, _build(tmp_path / "cache", repo, head, None).graph)
        assert step == 0 or built.resolved < built.files  # carried, not built whole again
        previous = _stored(tmp_path / f"g{step}", built)


def test_an_edit_among_many_files_carries_to_the_whole_graph(tmp_path: Path) -> None:
    """An edit among many files carries to the whole build's graph: of the unchanged files,
    only those resolved again have their stored references read (a few rows of many)."""
    repo = init_repo(tmp_path / "repo")
    many = {
        f"pkg/m{i}.py": f"def g{i}():\n    return {i}\n\ndef f{i}():\n    return g{i}() + g{i}()\n"
        for i in range(40)
    }
    many["pkg/util.py"] = "def fmt(x):\n    return str(x)\n"
    many["pkg/use.py"] = "from pkg.util import fmt\n\ndef show():\n    return fmt(1)\n"
    first = commit(repo, many)
    previous = _stored(tmp_path / "g0", _build(tmp_path / "cache", repo, first, None))
    head = commit(repo, {"pkg/util.py": "def parse(x):\n    return x\n"})
    built = _build(tmp_path / "cache", repo, head, previous)
    assert built.resolved == 2  # util.py, and use.py, which looked `fmt` up in it
    _assert_same(built.graph, _build(tmp_path / "cache", repo, head, None).graph)


def test_a_file_gone_takes_its_edges_and_the_rest_carries(tmp_path: Path) -> None:
    """A file removed takes its imports and calls with it; the graph is still carried, not
    built whole, and equals the whole build's."""
    repo = init_repo(tmp_path / "repo")
    first = commit(repo, _PACKAGE)
    previous = _stored(tmp_path / "g0", _build(tmp_path / "cache", repo, first, None))
    head = commit(repo, {"shop/views.py": None, "lib/use.c": None})
    built = _build(tmp_path / "cache", repo, head, previous)
    assert built.resolved < built.files
    _assert_same(built.graph, _build(tmp_path / "cache", repo, head, None).graph)


_NAMES = ("alpha", "beta", "gamma")
_SLOTS = (
    "p/one.py",
    "p/two.py",
    "q/three.py",
    "c/one.c",
    "c/two.c",
    "c/two.h",
    "x/one.cpp",
    "x/two.cpp",
)


def _python(defines: list[str], calls: list[str], imports: list[int]) -> str:
    lines = []
    for slot in imports:
        module = _SLOTS[slot].removesuffix(".py").replace("/", ".")
        lines.append(f"from {module} import {_NAMES[slot % len(_NAMES)]}")
    lines += [f"class {name.title()}:\n    def {name}(self):\n        return 1" for name in defines]
    body = "".join(f"\n    {name}()" for name in calls) or "\n    pass"
    lines.append(f"def main():{body}")
    return "\n".join(lines) + "\n"


def _c(defines: list[str], calls: list[str], imports: list[int]) -> str:
    lines = ['#include "two.h"'] if imports else []
    lines += [f"int {name}(void) {{ return 1; }}" for name in defines]
    # A chain's first name is one of C's global names (`Scopes.only`).
    chained = f" {calls[0]}.next();" if calls else ""
    body = "".join(f" {name}();" for name in calls) + chained
    lines.append("int run(void) {" + body + " return 0; }")
    return "\n".join(lines) + "\n"


def _cpp(defines: list[str], calls: list[str], imports: list[int]) -> str:
    lines = [f"struct {name.title()} {{\n  int {name}() {{ return 1; }}\n}};" for name in defines]
    # A class named from another file is one of C++'s global names (`Scopes.only`).
    body = "".join(f" {name.title()}::{name}();" for name in calls)
    lines.append("int run() {" + body + " return 0; }")
    return "\n".join(lines) + "\n"


_WRITERS = {".py": _python, ".c": _c, ".h": _c, ".cpp": _cpp}
_FILE = st.none() | st.tuples(
    st.lists(st.sampled_from(_NAMES), unique=True),
    st.lists(st.sampled_from(_NAMES), unique=True),
    st.lists(st.sampled_from(range(3)), unique=True, max_size=2),
)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.lists(_FILE, min_size=len(_SLOTS), max_size=len(_SLOTS)), min_size=2, max_size=4
    )
)
def test_any_sequence_of_edits_carries_to_the_whole_graph(
    tmp_path_factory: object, steps: list[list[tuple[list[str], list[str], list[int]] | None]]
) -> None:
    """Files coming, going and changing what they define, call and import, in Python, C and
    C++, give the whole build's graph at every commit."""
    assert hasattr(tmp_path_factory, "mktemp")
    root: Path = tmp_path_factory.mktemp("edits")
    repo = init_repo(root / "repo")
    previous = None
    for step, slots in enumerate(steps):
        files: dict[str, str | None] = {"README": f"step {step}\n"}
        for slot, spec in zip(_SLOTS, slots, strict=True):
            if spec is None:
                files[slot] = None
            else:
                files[slot] = _WRITERS[slot[slot.rindex(".") :]](*spec)
        head = commit(repo, files)
        built = _build(root / "cache", repo, head, previous)
        _assert_same(built.graph, _build(root / "cache", repo, head, None).graph)
        previous = _stored(root / f"g{step}", built)


def test_a_commit_changing_most_files_is_built_whole(tmp_path: Path) -> None:
    """Past the carry limit the graph is built whole (carrying would cost more), and it is
    the same graph."""
    repo = init_repo(tmp_path / "repo")
    first = commit(repo, _PACKAGE)
    before = _stored(tmp_path / "g0", _build(tmp_path / "cache", repo, first, None))
    second = commit(repo, {path: text + "\n# edited\n" for path, text in _PACKAGE.items()})
    build_commit_index(tmp_path / "cache", "a/b", repo, second)
    index = IndexStore(tmp_path / "cache").open("a/b", repo, second, deadline=time.monotonic() + 60)
    built = build_graph(index, before)
    assert built.resolved == built.files
    _assert_same(built.graph, build_graph(index).graph)


_WRITE_GRAPH = """
import sys, time
from pathlib import Path
import pygit2
from worker.index import IndexStore
from worker.index.store.graph_tables import write_graph
from worker.index.views.graph.build import build_graph
cache, repo_dir, head, out = sys.argv[1:]
repo = pygit2.Repository(repo_dir)
index = IndexStore(Path(cache)).open("a/b", repo, head, deadline=time.monotonic() + 60)
built = build_graph(index)
write_graph(Path(out), built.graph, built.state)
"""


def test_a_graph_and_its_state_are_the_same_bytes_in_every_process(tmp_path: Path) -> None:
    """However Python hashes strings (PYTHONHASHSEED), a graph is stored with the same bytes,
    the state a later commit carries over (each class's bases) too: hosts agree."""
    classes = "".join(f"class Shape{i}(Base, Mixin{i % 3}):\n    pass\n\n" for i in range(16))
    files = {
        "geo/base.py": "class Base:\n    pass\n\n"
        + "".join(f"class Mixin{i}:\n    pass\n\n" for i in range(3)),
        "geo/shapes.py": "from geo.base import Base, Mixin0, Mixin1, Mixin2\n\n" + classes,
    }
    repo = init_repo(tmp_path / "repo")
    head = commit(repo, files)
    build_commit_index(tmp_path / "cache", "a/b", repo, head)
    stored: set[tuple[bytes, ...]] = set()
    for seed in ("1", "2", "3", "4"):
        out = tmp_path / f"graph{seed}"
        out.mkdir()
        subprocess.run(
            [
                sys.executable,
                "-c",
                _WRITE_GRAPH,
                str(tmp_path / "cache"),
                repo.path,
                head,
                str(out),
            ],
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
        )
        stored.add(tuple((out / name).read_bytes() for name in sorted(GRAPH_FILES)))
    assert len(stored) == 1
