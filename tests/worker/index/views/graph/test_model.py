"""A graph's names and paths read alike whether held as Python strings or made when asked."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from worker.index.views.graph.model import Names, NodeIds, NodePaths, names_array

_NAMES = st.lists(st.text(max_size=6), max_size=12)
_BOUND = st.none() | st.integers(min_value=-15, max_value=15)


@given(_NAMES, _BOUND, _BOUND, st.none() | st.sampled_from([1, 2, -1]))
def test_names_slice_and_index_as_a_list_does(
    listed: list[str], start: int | None, stop: int | None, step: int | None
) -> None:
    """Any slice of the names, made before or after the whole list, is the list's slice;
    each item and the walk over them are the list's."""
    cut = slice(start, stop, step)
    fresh = Names(pa.array(listed, pa.string()))
    assert fresh[cut] == listed[cut]
    assert len(fresh) == len(listed)
    assert list(fresh) == listed
    assert [fresh[i] for i in range(-len(listed), len(listed))] == listed + listed
    assert fresh[cut] == listed[cut]


def test_names_as_an_array_are_the_same_array() -> None:
    """Names given as an Arrow array come back as that array; a list is made one."""
    array = pa.array(["a", "b.c"], pa.string())
    assert names_array(Names(array)) is array
    assert names_array(["a", "b.c"]).equals(array)


def _plain_and_entities() -> tuple[list[str], int, np.ndarray, list[str]]:
    plain = ["src", "src/a.py", "src/b.py", "top.py"]
    entity_path = np.asarray([0, 0, 0, 2], dtype=np.int64)  # rows of the files
    names = ["src", "a.py", "b.py", "top.py", "Shape", "Shape.area", "Shape", "main"]
    return plain, 1, entity_path, names


def test_node_paths_are_each_entity_its_files_path() -> None:
    """A directory's and a file's path is its own; an entity's is its file's."""
    plain, n_dirs, entity_path, _ = _plain_and_entities()
    paths = NodePaths(plain, n_dirs, entity_path)
    expected = [*plain, "src/a.py", "src/a.py", "src/a.py", "top.py"]
    assert list(paths) == expected
    assert len(paths) == len(expected)
    assert paths[-1] == "top.py"
    assert paths[3:6] == expected[3:6]


def test_node_ids_from_names_made_when_asked_are_those_of_a_list() -> None:
    """Ids and lookups by id are the same whether the names are a list or an Arrow array:
    a second definition of a name in a file is `#2`."""
    plain, n_dirs, entity_path, names = _plain_and_entities()
    listed = NodeIds(plain, n_dirs, entity_path, names)
    arrowed = NodeIds(plain, n_dirs, entity_path, Names(pa.array(names, pa.string())))
    expected = [
        *plain,
        "src/a.py:Shape",
        "src/a.py:Shape.area",
        "src/a.py:Shape#2",
        "top.py:main",
    ]
    assert list(listed) == list(arrowed) == expected
    for row, node_id in enumerate(expected):
        assert listed.row(node_id) == arrowed.row(node_id) == row
    assert arrowed.row("src/a.py:Shape#3") is None
