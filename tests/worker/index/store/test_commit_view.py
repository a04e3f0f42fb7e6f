"""A commit's path index: worked out ahead for every entry, then cut to the located ones."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.index.store.commit_view import (
    PathTerms,
    build_commit_tables,
    exchange_directories,
    path_terms,
)

_PARTS = st.sampled_from(
    ["src", "auth", "tokens", "HTTPServer", "get_user", "README", "docs", "x", "a1", "__init__"]
)
_PATHS = st.lists(
    st.builds(
        lambda dirs, name, ext: "/".join([*dirs, name + ext]),
        st.lists(_PARTS, max_size=3),
        _PARTS,
        st.sampled_from(["", ".py", ".c", ".tar.gz"]),
    ),
    max_size=30,
    unique=True,
)


def _entries(paths: list[str]) -> list[tuple[str, bytes]]:
    return [(path, i.to_bytes(20, "big")) for i, path in enumerate(paths)]


def _same(got: PathTerms, want: PathTerms) -> None:
    assert got.entries == want.entries
    assert got.terms.equals(want.terms)
    assert got.len_path.tolist() == want.len_path.tolist()
    assert got.len_name.tolist() == want.len_name.tolist()
    for name in ("start", "count", "chunk", "tf_body", "tf_sym"):
        got_column, want_column = getattr(got.postings, name), getattr(want.postings, name)
        assert got_column.dtype == want_column.dtype, name
        assert got_column.tolist() == want_column.tolist(), name


@given(_PATHS, st.data())
def test_kept_entries_index_as_if_alone(paths: list[str], data: st.DataObject) -> None:
    """Cutting the index of all entries to some gives what those alone give: rows
    renumbered, counts and lengths unchanged, terms no kept path has gone."""
    entries = _entries(paths)
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=len(paths), max_size=len(paths))))
    kept = [entry for entry, k in zip(entries, keep.tolist(), strict=True) if k]
    _same(path_terms(entries).kept(keep.astype(bool)), path_terms(kept))


@given(_PATHS, st.data())
def test_commit_tables_from_the_index_worked_out_ahead(
    paths: list[str], data: st.DataObject
) -> None:
    """The commit's tables are the same whether its path index was worked out ahead for
    every entry or here for the located ones; an index of other entries is not used."""
    entries = _entries(paths)
    located = data.draw(st.lists(st.booleans(), min_size=len(paths), max_size=len(paths)))
    locations = {
        oid: (i % 2, i)
        for i, ((_, oid), here) in enumerate(zip(entries, located, strict=True))
        if here
    }
    want = build_commit_tables(entries, locations)
    for ahead in (path_terms(entries), path_terms(entries[1:])):
        got = build_commit_tables(entries, locations, ahead=ahead)
        for name in ("paths", "path_terms", "path_postings"):
            assert getattr(got, name).equals(getattr(want, name)), name


def test_two_directories_swap_names_in_one_step(tmp_path: Path) -> None:
    """After the exchange each directory's content is under the other's name; on Linux it
    is done (not refused), and a missing directory is an error that changes nothing."""
    a, b = tmp_path / "a", tmp_path / "b"
    for directory, content in ((a, "A"), (b, "B")):
        directory.mkdir()
        (directory / "f").write_text(content)
    swapped = exchange_directories(a, b)
    assert swapped or sys.platform != "linux"
    assert ((a / "f").read_text(), (b / "f").read_text()) == (("B", "A") if swapped else ("A", "B"))
    if swapped:
        with pytest.raises(FileNotFoundError):
            exchange_directories(a, tmp_path / "missing")
        assert (a / "f").read_text() == "B"
