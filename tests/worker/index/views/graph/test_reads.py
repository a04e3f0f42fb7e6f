"""What resolving reads is recorded for every file that depends on it, under keys that any
change of the paths it could find shares."""

from __future__ import annotations

from worker.index.views.graph.reads import (
    Phase,
    ReadKind,
    Reads,
    ReadTable,
    directory_key,
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
