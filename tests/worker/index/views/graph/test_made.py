"""What resolving made, as rows, reads back per file as it was made, and renumbers as the
nodes it names do."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from worker.index.views.graph.made import BaseRows, FileImports, ImportRows

_names = st.text(alphabet="abc_.", min_size=1, max_size=4)
_nodes = st.one_of(st.just(-1), st.integers(min_value=0, max_value=30))  # -1: the root
_imports = st.builds(
    FileImports,
    st.dictionaries(_names, st.integers(min_value=0, max_value=30), max_size=4),
    st.lists(_nodes, max_size=3).map(tuple),
    st.lists(_names, max_size=2).map(tuple),
).filter(lambda made: bool(made.bindings or made.wildcards or made.namespaces))
_files = st.integers(min_value=0, max_value=20)
_bases = st.dictionaries(
    _names, st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=3), max_size=3
)


@given(st.dictionaries(_files, _imports, max_size=6))
def test_import_rows_read_back_each_files_imports_as_made(made: dict[int, FileImports]) -> None:
    """Bindings, wildcards and namespaces come back per file, in order; a file without
    imports has none."""
    rows = ImportRows.of(made)
    assert rows.by_file() == made
    assert rows.files() == sorted(made)
    assert rows.get(99) is None


@given(st.dictionaries(_files, _bases.filter(bool), max_size=6))
def test_base_rows_read_back_each_classes_bases_in_order(
    made: dict[int, dict[str, list[int]]],
) -> None:
    """Each class's bases come back in the order written, keyed by (file, class)."""
    keyed = {
        file: {(file, name): tuple(bases) for name, bases in classes.items()}
        for file, classes in made.items()
    }
    rows = BaseRows.of(keyed)
    assert rows.by_file() == keyed
    assert rows.get(99) is None


@given(st.dictionaries(_files, _imports, max_size=6), st.data())
def test_renumbered_rows_follow_their_nodes(
    made: dict[int, FileImports], data: st.DataObject
) -> None:
    """Files gone leave no rows; nodes move, a node gone reads -1, and -1 (the root) stays."""
    node_map = np.asarray(
        data.draw(st.lists(st.integers(min_value=-1, max_value=40), min_size=31, max_size=31)),
        dtype=np.int64,
    )
    moved = ImportRows.of(made).renumbered(node_map).by_file()

    def new(node: int) -> int:
        return node if node < 0 else int(node_map[node])

    expected = {
        new(file): FileImports(
            {name: new(node) for name, node in imports.bindings.items()},
            tuple(new(node) for node in imports.wildcards),
            imports.namespaces,
        )
        for file, imports in made.items()
        if new(file) >= 0
    }
    assume(len(expected) == len([f for f in made if new(f) >= 0]))  # files stay distinct
    assert moved == expected


@given(st.dictionaries(_files, _imports, max_size=6), st.dictionaries(_files, _imports, max_size=6))
def test_rows_kept_and_rows_made_join_grouped_by_file(
    carried: dict[int, FileImports], made: dict[int, FileImports]
) -> None:
    """The carried rows of files not made again, joined with those made, read back as one
    state with each file's own."""
    rows = ImportRows.of(carried)
    again = np.isin(rows.file_column, list(made))
    joined = ImportRows.concat([rows.without(again), ImportRows.of(made)])
    assert joined.by_file() == {**{f: m for f, m in carried.items() if f not in made}, **made}
    assert joined.files() == sorted(set(carried) | set(made))
