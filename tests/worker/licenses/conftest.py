"""Fixtures for the license tests: standard license texts and real git snapshots."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pygit2
import pytest

from tests.support.gitrepos import Content, make_repo

TEXTS = Path(__file__).parent / "texts"
STANDARD_TEXTS = {
    "MIT": "MIT.txt",
    "BSD-3-Clause": "BSD-3-Clause.txt",
    "ISC": "ISC.txt",
    "Apache-2.0": "Apache-2.0.txt",
    "GPL-3.0-only": "GPL-3.0.txt",
    "MPL-2.0": "MPL-2.0.txt",
}
"""SPDX id -> the file holding its full standard text (the GNU and Mozilla texts verbatim)."""


def license_text(spdx_id: str) -> str:
    """The full standard text of one of the `STANDARD_TEXTS` licenses."""
    return (TEXTS / STANDARD_TEXTS[spdx_id]).read_text(encoding="utf-8")


Snapshot = tuple[pygit2.Repository, pygit2.Tree]
SnapshotFactory = Callable[[Mapping[str, Content]], Snapshot]


@pytest.fixture
def snapshot(tmp_path: Path) -> SnapshotFactory:
    """Commits {path: content} to a fresh repository and returns it with the commit's tree."""
    count = 0

    def build(files: Mapping[str, Content]) -> Snapshot:
        nonlocal count
        count += 1
        repo, head = make_repo(tmp_path / f"repo{count}", files)
        return repo, repo[head].peel(pygit2.Commit).tree

    return build
