"""Fixtures: a fresh real NATS server per test, real git repositories, a mirrored cache."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cache import SAMPLE_FILES, MirroredCache, SourceFactory
from tests.support.gitrepos import Content, make_repo
from worker.service.embedded_nats import EmbeddedNats


@pytest.fixture
def nats_server() -> Iterator[EmbeddedNats]:
    """A nats-server process of its own on a free loopback port."""
    with EmbeddedNats() as server:
        yield server


@pytest.fixture
def make_source(tmp_path: Path) -> SourceFactory:
    """Builds a source repository under tmp_path from a {path: content} mapping."""

    def build(name: str, files: dict[str, Content] | None = None) -> tuple[Path, str]:
        path = tmp_path / "sources" / name
        _, head = make_repo(path, SAMPLE_FILES if files is None else files)
        return path, head

    return build


@pytest.fixture
def cache(tmp_path: Path) -> MirroredCache:
    """An empty cache with its own config file."""
    return MirroredCache(tmp_path / "cache")
