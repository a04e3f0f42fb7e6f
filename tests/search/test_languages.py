"""A file's language comes from its name, else from its extension, as pathlib reads them."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.search.languages import LANGUAGE_BY_EXTENSION, LANGUAGE_BY_NAME, language_of


def _by_pathlib(path: str) -> str | None:
    p = PurePosixPath(path)
    return LANGUAGE_BY_NAME.get(p.name) or LANGUAGE_BY_EXTENSION.get(p.suffix.lower())


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("django/db/models/query.py", "python"),
        ("kernel/sched/core.c", "c"),
        ("src/App.TSX", "tsx"),
        ("a/.py", None),
        ("a/b.", None),
        ("a.b/README", None),
    ],
)
def test_language_of_examples(path: str, language: str | None) -> None:
    """Extensions count case-insensitively; a leading or trailing dot is no extension."""
    assert language_of(path) == language


names = st.sampled_from(
    ["a", "x.py", ".py", "..py", "py.", "a..", "Makefile", "b.PY", "c.tar.gz", "d.h", "e.C"]
)
"""Names git allows in a tree ("." and ".." are not: pathlib would drop or keep them)."""


@settings(max_examples=300, deadline=None)
@given(st.lists(names, min_size=1, max_size=4))
def test_language_of_agrees_with_pathlib(components: list[str]) -> None:
    """For any git path, the same answer as PurePosixPath's name and suffix give."""
    path = "/".join(components)
    assert language_of(path) == _by_pathlib(path)
