"""Ranking links what a report mentions to the code: defined names, file paths, modules."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from tests.worker.index.conftest import RepoFactory
from worker.index import CommitIndex, IndexStore
from worker.index.views.linking import CommitLinks
from worker.index.views.ranking import Signals

FILES = {
    "pkg/__init__.py": b"from .units import Quantity\n",
    "pkg/units.py": b'''class Quantity:
    """A number with a unit."""

    def to_value(self, unit):
        return self.value * unit.scale

    def __repr__(self):
        return f"Quantity({self.value})"
''',
    "pkg/io/reader.py": b'''def read_table(path):
    """Read a table of values from a file, one row per line."""
    with open(path) as stream:
        return [line.split() for line in stream]


def parse_value(text):
    """A value of the table, parsed from its text; quantity values keep their unit."""
    return float(text)
''',
    "pkg/io/writer.py": b'''def write_table(path, rows):
    """Write a table of values, one row per line; quantity values print with their unit."""
    with open(path, "w") as stream:
        for row in rows:
            stream.write(" ".join(row))
''',
    "tox.ini": b"[tox]\nenvlist = numpy scipy table values\ndeps = numpy\n",
    "docs/units.rst": b"Quantity values and tables\n==========================\n",
}


@pytest.fixture
def index(make_repo: Callable[[str], RepoFactory], tmp_path: Path) -> CommitIndex:
    factory = make_repo("pkg")
    commit = factory.commit(FILES)
    store = IndexStore(tmp_path / "cache")
    return store.open("acme/pkg", factory.repo, commit, deadline=time.monotonic() + 60)


def test_defined_name_puts_its_definition_first(index: CommitIndex) -> None:
    """A function the report names is the first hit, marked as an entity link."""
    hits = list(index.ranked("Reading a table gives wrong values: `parse_value` drops the unit"))
    assert hits[0].path == "pkg/io/reader.py"
    assert hits[0].symbol == "parse_value"
    assert Signals.ENTITY in hits[0].signals
    assert Signals.TERMS in hits[0].signals


def test_traceback_path_names_its_file(index: CommitIndex) -> None:
    """A file named by a traceback frame outranks files that only share words."""
    report = (
        "Writing values fails\n\nTraceback (most recent call last):\n"
        '  File "/venv/lib/site-packages/pkg/io/writer.py", line 5, in somewhere\n'
        "TypeError: table values\n"
    )
    hits = list(index.ranked(report))
    assert hits[0].path == "pkg/io/writer.py"
    assert Signals.PATH in hits[0].signals


def test_dotted_module_names_its_file(index: CommitIndex) -> None:
    """A dotted module path in the query ranks that module's file."""
    hits = list(index.ranked("pkg.units is slow for values"))
    assert hits[0].path == "pkg/units.py"
    assert Signals.PATH in hits[0].signals


def test_configuration_files_yield_to_code_in_a_report(index: CommitIndex) -> None:
    """In a report, a config file matching its package names ranks below the code."""
    report = "table values wrong\n\n```\nimport numpy\nread_table('x')\n```\nnumpy scipy"
    paths = [hit.path for hit in index.ranked(report)]
    assert paths.index("pkg/io/reader.py") < paths.index("tox.ini")


def test_question_ranking_has_only_term_signals(index: CommitIndex) -> None:
    """A plain question with no code mentions ranks by terms alone."""
    hits = list(index.ranked("write a table"))
    assert hits
    assert all(hit.signals == Signals.TERMS for hit in hits)


def test_a_name_defined_everywhere_links_nothing(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """A name defined in more files than the limit gives no entity link."""
    factory = make_repo("many")
    files = {f"m{i}.py": f"def shared_name():\n    return {i}\n".encode() for i in range(40)}
    files["other.py"] = b"def other():\n    return 'shared name'\n"
    commit = factory.commit(files)
    store = IndexStore(tmp_path / "cache")
    index = store.open("acme/many", factory.repo, commit, deadline=time.monotonic() + 60)
    assert all(Signals.ENTITY not in hit.signals for hit in index.ranked("`shared_name` fails"))


def test_imports_resolve_to_the_files_they_read() -> None:
    """Relative, absolute (under a src/ layout) and `from pkg import module` imports name
    their files; an absolute module two files could be names none."""
    paths = [
        "src/app/__init__.py",
        "src/app/core.py",
        "src/app/io/__init__.py",
        "src/app/io/reader.py",
        "src/app/util.py",
        "tools/util.py",
        "src/app/extra/util.py",
    ]
    links = CommitLinks(pa.chunked_array([pa.array(paths)]))
    row = {path: i for i, path in enumerate(paths)}
    assert links.import_rows("src/app/core.py", ".util", "helper") == [row["src/app/util.py"]]
    assert links.import_rows("src/app/io/reader.py", "..core", None) == [row["src/app/core.py"]]
    assert links.import_rows("src/app/core.py", ".", "io") == [row["src/app/io/__init__.py"]]
    assert links.import_rows("src/app/core.py", "app.io", "reader") == [row["src/app/io/reader.py"]]
    assert links.import_rows("src/app/core.py", "app.io", "Reader") == [
        row["src/app/io/__init__.py"]
    ]
    assert links.import_rows("src/app/core.py", "util", None) == []
    assert links.import_rows("src/app/core.py", "numpy", "array") == []
