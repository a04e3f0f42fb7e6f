"""A batch's entities: definitions nested in pre-order, and the innermost one holding a line."""

from __future__ import annotations

import numpy as np

from worker.index.analysis.batch_text import BatchText
from worker.index.analysis.chunking import chunk_batch
from worker.index.analysis.entities import batch_entities, innermost

FIRST = b"""class Foo:
    def bar(self):
        return 1

    def baz(self):
        return 2


def helper():
    return 3
"""
SECOND = b"""def other():
    return 4
"""


def test_entities_nest_in_preorder_with_parents() -> None:
    """A method's parent is its class; top-level definitions have none."""
    entities = batch_entities(chunk_batch([FIRST], ["python"]).definitions)
    named = dict(zip(entities.name, entities.parent.tolist(), strict=True))
    assert named == {"Foo": -1, "Foo.bar": 0, "Foo.baz": 0, "helper": -1}


def test_parents_are_renumbered_to_the_rows_of_the_batch() -> None:
    """The second blob's entities follow the first's; each parent is a row of the batch."""
    entities = batch_entities(chunk_batch([FIRST, SECOND], ["python", "python"]).definitions)
    assert entities.name == ["Foo", "Foo.bar", "Foo.baz", "helper", "other"]
    assert entities.blob.tolist() == [0, 0, 0, 0, 1]
    assert entities.parent.tolist() == [-1, 0, 0, -1, -1]


def test_the_innermost_entity_holds_each_line_of_its_own_blob() -> None:
    """A method's body is the method's, a blank line between methods the class's, a line
    outside every definition the file's (-1); rows are each blob's own."""
    datas = [FIRST, SECOND]
    entities = batch_entities(chunk_batch(datas, ["python", "python"]).definitions)
    text = BatchText(b"\n".join(datas), datas)
    rows = {
        (0, 2): "Foo.bar",
        (0, 3): "Foo",
        (0, 5): "Foo.baz",
        (0, 7): None,
        (0, 9): "helper",
        (1, 0): "other",
        (1, 1): "other",
    }
    blob = np.asarray([b for b, _ in rows], dtype=np.int64)
    row = np.asarray([r for _, r in rows], dtype=np.int64)
    held = innermost(entities, text, blob, row).tolist()
    assert [entities.name[e] if e >= 0 else None for e in held] == list(rows.values())


def test_no_entities_hold_nothing() -> None:
    """Without a definition in the batch, every line is its file's."""
    datas = [b"x = 1\ny = 2\n"]
    entities = batch_entities(chunk_batch(datas, ["python"]).definitions)
    text = BatchText(datas[0], datas)
    held = innermost(entities, text, np.zeros(2, np.int64), np.arange(2, dtype=np.int64))
    assert held.tolist() == [-1, -1]
