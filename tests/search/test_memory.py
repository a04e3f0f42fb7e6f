"""Handing freed memory back between build phases, and the switch that keeps it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from worker.search import memory


@pytest.fixture
def restore_hand_back() -> Iterator[None]:
    """Put the per-process switch back as it was after the test."""
    saved = memory._hand_back
    yield
    memory._hand_back = saved


def test_keep_freed_memory_turns_release_into_nothing(
    restore_hand_back: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After keep_freed_memory neither the Arrow pool nor the C heap is asked to give back."""
    asked: list[str] = []
    monkeypatch.setattr(memory, "_malloc_trim", lambda: lambda pad: asked.append("trim") or 1)
    memory._hand_back = True
    memory.release_freed_memory()
    assert asked == ["trim"]
    memory.keep_freed_memory()
    memory.release_freed_memory()
    assert asked == ["trim"]
