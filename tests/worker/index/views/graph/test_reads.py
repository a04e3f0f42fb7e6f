"""What resolving reads is recorded for every file that depends on it, under keys that any
change of the paths it could find shares."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from worker.index.views.graph.reads import (
    Phase,
    ReadKind,
    Reads,
    ReadTable,
    compacted,
    directory_key,
    encoded,
    entry_key,
    file_key,
    listing_key,
    module_key,
    path_keys,
    read_table,
)


def test_a_remembered_lookup_counts_for_every_file_that_uses_it() -> None:
    """The reads a lookup made when first made are recorded again for a file that reuses it,
    the first file's own state included; a file's reads of its own state are left out."""
    reads = Reads()
    reads.at(1, Phase.CALLS)
    outer, inner = reads.current, set()
    reads.current = inner
    reads.definition(1, "save")
    reads.name("x")
    reads.current = outer
    outer.update(inner)
    reads.at(2, Phase.CALLS)
    reads.current.update(inner)
    assert _rows(read_table(reads)) == {
        (1, ReadKind.NAME, -1, "x"),
        (2, ReadKind.FILE, 1, "save"),
        (2, ReadKind.NAME, -1, "x"),
    }


def test_paths_coming_or_going_change_the_keys_of_lookups_that_could_find_them() -> None:
    """A file changes lookups of its name, of its directory's listing, of its entry there
    (with or without its extension) and of its module; a directory those of its name, of
    its parent's listing and of its entry there."""
    keys = path_keys(["src/pkg/mod.py", "src/pkg/__init__.py"], ["src/pkg"])
    assert entry_key("src/pkg", "mod") in keys
    assert entry_key("src/pkg", "mod.py") in keys
    assert entry_key("src", "pkg") in keys
    assert entry_key("src/pkg", "other") not in keys
    assert file_key("other/mod.py") in keys
    assert listing_key("src/pkg") in keys
    assert module_key("a.b.mod") in keys
    assert module_key("pkg") in keys  # the package `pkg` is its __init__.py
    assert directory_key("vendor/src/pkg") in keys
    assert listing_key("src") in keys
    assert file_key("mod.rs") not in keys
    assert listing_key("src/other") not in keys


def test_a_file_resolved_again_in_a_phase_keeps_what_it_read_before() -> None:
    """Coming back to a (file, phase) after another adds to its reads; none are lost."""
    reads = Reads()
    reads.at(1, Phase.CALLS)
    reads.name("a")
    reads.at(2, Phase.CALLS)
    reads.name("b")
    reads.at(1, Phase.CALLS)
    reads.name("c")
    table = read_table(reads)
    rows = set(zip(table.reader.tolist(), table.name.to_pylist(), strict=True))
    assert rows == {(1, "a"), (1, "c"), (2, "b")}


def test_a_look_among_a_files_definitions_is_recorded_by_name() -> None:
    """What a file looked up among another's definitions is kept with the name looked up;
    among its own, it is left out."""
    reads = Reads()
    reads.at(1, Phase.CALLS)
    reads.definition(5, "save")
    reads.definition(1, "helper")
    assert _rows(read_table(reads)) == {(1, ReadKind.FILE, 5, "save")}


_RECORD_READS = """
from worker.index.views.graph.reads import Phase, Reads, read_table, entry_key
reads = Reads()
for file in range(1, 4):
    reads.at(file, Phase.CALLS)
    for i in range(40):
        reads.name(f"name_{(file * 7 + i) % 50}")
        reads.path(entry_key("src", f"mod_{i}"))
        reads.definition(10 + i % 5, f"member_{i}")
table = read_table(reads)
print(table.reader.tolist(), table.kind.tolist(), table.node.tolist())
print(table.name.dictionary.to_pylist(), table.name.indices.to_pylist())
"""


def test_the_reads_come_out_alike_in_every_process() -> None:
    """Recorded reads make the same table whatever Python's hashing of strings
    (PYTHONHASHSEED): a graph's stored state is the same bytes on every host."""
    tables = {
        subprocess.run(
            [sys.executable, "-c", _RECORD_READS],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            check=True,
            text=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(tables) == 1


def _rows(table: ReadTable) -> set[tuple[int, int, int, str | None]]:
    """The reads as (reader, kind, node, name) rows."""
    return set(
        zip(
            table.reader.tolist(),
            table.kind.tolist(),
            table.node.tolist(),
            table.name.to_pylist(),
            strict=True,
        )
    )


@given(
    st.lists(st.none() | st.sampled_from(["a", "b", "get", "Shape.area", "é"]), max_size=30),
    st.lists(st.integers(0, 29), max_size=30),
    st.lists(st.sampled_from(["b", "new", None]), max_size=5),
)
def test_names_kept_and_joined_drop_the_dictionary_values_no_read_reads(
    names: list[str | None], picks: list[int], added: list[str | None]
) -> None:
    """Reads taken and joined to new ones keep their names; compacted, their dictionary
    holds each name read once, and no other."""
    table = ReadTable.of(
        [0] * len(names), [0] * len(names), [0] * len(names), [-1] * len(names), names
    )
    rows = np.asarray([p for p in picks if p < len(names)], dtype=np.int64)
    new = ReadTable.of(
        [1] * len(added), [0] * len(added), [0] * len(added), [-1] * len(added), added
    )
    joined = ReadTable.concat([table.take(rows), new])
    want = [names[r] for r in rows.tolist()] + added
    assert joined.name.to_pylist() == want
    kept = compacted(encoded(joined.name))
    assert kept.to_pylist() == want
    assert sorted(kept.dictionary.to_pylist()) == sorted({n for n in want if n is not None})
    assert encoded(pa.array(want, pa.string())).to_pylist() == want
