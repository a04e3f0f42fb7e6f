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
    monkeypatch.setattr(memory, "_mallopt", lambda: lambda param, value: 1)
    memory._hand_back = True
    memory.release_freed_memory()
    assert asked == ["trim"]
    memory.keep_freed_memory()
    memory.release_freed_memory()
    assert asked == ["trim"]


def test_keep_freed_memory_stops_the_heap_mapping_and_trimming(
    restore_hand_back: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """keep_freed_memory asks glibc for no per-allocation mappings and no trimming."""
    settings: list[tuple[int, int]] = []
    monkeypatch.setattr(
        memory, "_mallopt", lambda: lambda param, value: settings.append((param, value)) or 1
    )
    memory.keep_freed_memory()
    assert dict(settings) == {memory._M_MMAP_MAX: 0, memory._M_TRIM_THRESHOLD: 2**31 - 1}


def test_mallopt_found_in_the_c_library() -> None:
    """The C library's mallopt is found (glibc: the build workers depend on it)."""
    assert memory._mallopt() is not None
