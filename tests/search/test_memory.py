"""Handing freed memory back between build phases, and the switch that keeps it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

from worker.search import memory


@pytest.fixture
def restore_hand_back() -> Iterator[None]:
    """Put the per-process switch and Arrow's pool back as they were after the test."""
    saved, pool = memory._hand_back, pa.default_memory_pool()
    yield
    memory._hand_back = saved
    pa.set_memory_pool(pool)


def _run(program: str, *args: str) -> list[str]:
    """Run a Python program in a fresh process; the words it printed."""
    done = subprocess.run(
        [sys.executable, "-c", program, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.split()


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


def test_keep_freed_memory_has_arrow_allocate_from_the_c_heap() -> None:
    """After keep_freed_memory Arrow allocates with malloc, not with its own allocator."""
    program = (
        "import pyarrow as pa\n"
        "from worker.search import memory\n"
        "print(pa.default_memory_pool().backend_name)\n"
        "memory.keep_freed_memory()\n"
        "print(pa.default_memory_pool().backend_name)\n"
    )
    before, after = _run(program)
    assert before != "system"
    assert after == "system"


_GROWTH_AFTER_WARMING = """
import sys
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from worker.search import memory


def anon_kb():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1])


memory.keep_freed_memory()
numbers = pa.array(np.arange(2 << 20, dtype=np.int64))
target = int(sys.argv[1])
warmed = memory.warm_heap(lambda: target, lambda timeout: timeout > 0)
before = anon_kb()
ones = np.ones(32 << 20, dtype=np.uint8)
more = pc.add(numbers, 1)  # 16 MB written by Arrow
print(warmed, (anon_kb() - before) >> 10)
"""


@pytest.mark.parametrize("warm_mb", [0, 96])
def test_warm_heap_faults_in_what_numpy_and_arrow_then_reuse(warm_mb: int) -> None:
    """A process that warmed its heap puts its next numpy and Arrow arrays in pages it has:
    its resident memory does not grow; without warming it grows by their size (48 MB)."""
    warmed, growth_mb = map(int, _run(_GROWTH_AFTER_WARMING, str(warm_mb << 20)))
    assert warmed == warm_mb << 20
    if warm_mb:
        assert growth_mb < 8
    else:
        assert growth_mb >= 40


@pytest.fixture
def heap_kept(restore_hand_back: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process keeps freed memory, as a build worker does (without touching glibc)."""
    monkeypatch.setattr(memory, "_mallopt", lambda: lambda param, value: 1)
    memory._hand_back = False


def _until_caught_up(timeout: float) -> bool:
    """Stop as soon as warming waits for its target to rise."""
    return timeout > 0


def test_warm_heap_stops_once_told(heap_kept: None) -> None:
    """Warming asks before each step whether to stop, and ends on a partial last step."""
    asked: list[float] = []

    def stop_on_third_ask(timeout: float) -> bool:
        asked.append(timeout)
        return len(asked) == 3

    step = memory.WARM_STEP_BYTES
    assert memory.warm_heap(lambda: 10 * step, stop_on_third_ask) == 2 * step
    assert asked == [0, 0, 0]
    assert memory.warm_heap(lambda: step + 5, _until_caught_up) == step + 5


def test_warm_heap_follows_a_rising_target_and_reports_each_step(heap_kept: None) -> None:
    """Caught up, warming waits for the target to rise and warms up to the new one; each
    step is reported as it is made."""
    step = memory.WARM_STEP_BYTES
    targets = iter([step, step, 3 * step])
    current = [0]

    def target() -> int:
        current[0] = next(targets, current[0])
        return current[0]

    waits: list[float] = []

    def stopped(timeout: float) -> bool:
        if timeout:
            waits.append(timeout)
        return len(waits) == 2

    steps: list[int] = []
    assert memory.warm_heap(target, stopped, warmed=steps.append) == 3 * step
    assert steps == [step, step, step]
    assert waits == [memory.WARM_POLL_SECONDS] * 2


def test_warm_heap_ends_once_its_target_stays_put(heap_kept: None) -> None:
    """Never told to stop, warming ends once its target has not risen for `idle_seconds`."""
    step = memory.WARM_STEP_BYTES
    assert memory.warm_heap(lambda: step, lambda timeout: False, idle_seconds=0.05) == step


def test_warm_heap_does_nothing_where_freed_memory_goes_back(restore_hand_back: None) -> None:
    """A process that hands freed memory back (its heap would not keep them) warms nothing."""
    memory._hand_back = True
    assert memory.warm_heap(lambda: 1 << 30, lambda timeout: pytest.fail("asked to stop")) == 0


def test_mallopt_found_in_the_c_library() -> None:
    """The C library's mallopt is found (glibc: the build workers depend on it)."""
    assert memory._mallopt() is not None


def test_hand_back_gives_back_even_in_a_process_that_keeps(
    restore_hand_back: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hand_back_freed_memory trims the C heap and empties Arrow's pool after keep_freed_memory
    too (for just before one large allocation or write)."""
    asked: list[str] = []

    class Pool:
        def release_unused(self) -> None:
            asked.append("arrow")

    monkeypatch.setattr(memory, "_malloc_trim", lambda: lambda pad: asked.append("trim") or 1)
    monkeypatch.setattr(memory, "_mallopt", lambda: lambda param, value: 1)
    monkeypatch.setattr(memory.pa, "default_memory_pool", Pool)
    memory.keep_freed_memory()
    memory.release_freed_memory()
    assert asked == []
    memory.hand_back_freed_memory()
    assert asked == ["arrow", "trim"]


def _record_hand_back_and(
    monkeypatch: pytest.MonkeyPatch, module: ModuleType, step: str, label: str
) -> list[str]:
    """Record, in order, the module's hand-backs (not done) and its calls of `step` (done)."""
    events: list[str] = []
    monkeypatch.setattr(module, "hand_back_freed_memory", lambda: events.append("hand back"))
    real = getattr(module, step)

    def recorded(*args: Any, **kwargs: Any) -> Any:
        events.append(label)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, step, recorded)
    return events


def test_writing_a_segment_hands_back_freed_memory_first(
    restore_hand_back: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A segment's files are written after freed memory is handed back (their page cache
    then takes pages just freed)."""
    from worker.search import segment
    from worker.search.analysis import SegmentBuilder

    events = _record_hand_back_and(monkeypatch, segment, "write_table", "write")
    segment.write_segment(tmp_path, "abc", SegmentBuilder(1 << 20).tables())
    assert events[0] == "hand back"
    assert events.count("write") == len(segment.COMPONENTS)


def test_a_build_hands_back_freed_memory_before_packing_its_postings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A segment's postings are packed right after freed memory is handed back (the packed
    rows then take pages just freed)."""
    from worker.search import analysis
    from worker.search.analysis import BlobSource, SegmentBuilder

    events = _record_hand_back_and(monkeypatch, analysis, "term_postings", "postings")
    builder = SegmentBuilder(1 << 20)
    builder.add([BlobSource(b"a" * 20, "a.py", b"def handler():\n    return 1\n")])
    tables = builder.tables()
    assert events == ["hand back", "postings"]
    assert tables.postings.num_rows > 0


def _system(
    tmp_path: Path, meminfo: str | None, cgroup: str | None, files: dict[str, str] | None = None
) -> Path:
    """A fake /proc/meminfo, /proc/self/cgroup and cgroup tree under `tmp_path` (a file left
    out when None; `files` maps a path in the tree to its text)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    if meminfo is not None:
        (tmp_path / "meminfo").write_text(meminfo)
    if cgroup is not None:
        (tmp_path / "cgroup").write_text(cgroup)
    for name, text in (files or {}).items():
        path = tmp_path / "fs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def _available(root: Path) -> int | None:
    return memory.available_memory(root / "meminfo", root / "cgroup", root / "fs")


_MEMINFO = "MemTotal:       8000000 kB\nMemFree:        1000000 kB\nMemAvailable:   6000000 kB\n"


def test_available_memory_is_the_systems_without_a_limit(tmp_path: Path) -> None:
    """With no control group limit (v2 "max", or no group files), the system's MemAvailable."""
    root = _system(
        tmp_path, _MEMINFO, "0::/svc\n", {"svc/memory.max": "max\n", "svc/memory.current": "5\n"}
    )
    assert _available(root) == 6000000 << 10
    assert _available(_system(tmp_path / "bare", _MEMINFO, None)) == 6000000 << 10


def test_available_memory_is_what_a_v2_group_has_left_when_less(tmp_path: Path) -> None:
    """Under a version 2 limit below the system's, what the group has left."""
    root = _system(
        tmp_path,
        _MEMINFO,
        "0::/svc\n",
        {"svc/memory.max": f"{2 << 30}\n", "svc/memory.current": f"{512 << 20}\n"},
    )
    assert _available(root) == (2 << 30) - (512 << 20)


def test_available_memory_reads_a_v1_group_and_a_group_seen_as_the_root(tmp_path: Path) -> None:
    """A version 1 memory group is read at the process's path, or at the root when a
    container sees its group there."""
    own = _system(
        tmp_path / "own",
        _MEMINFO,
        "4:memory:/docker/abc\n0::/\n",
        {
            "memory/docker/abc/memory.limit_in_bytes": f"{1 << 30}\n",
            "memory/docker/abc/memory.usage_in_bytes": f"{1 << 28}\n",
        },
    )
    assert _available(own) == (1 << 30) - (1 << 28)
    at_root = _system(
        tmp_path / "root",
        _MEMINFO,
        "4:cpu,memory:/docker/abc\n",
        {
            "memory/memory.limit_in_bytes": f"{1 << 30}\n",
            "memory/memory.usage_in_bytes": f"{3 << 30}\n",
        },
    )
    assert _available(at_root) == 0


def test_available_memory_is_none_when_nothing_says(tmp_path: Path) -> None:
    """No meminfo and no control group: unknown, not zero."""
    assert _available(_system(tmp_path, None, None)) is None
    assert _available(_system(tmp_path / "other", "MemTotal: 1 kB\n", "1:cpu:/\n")) is None


def test_available_memory_of_this_machine_is_some_positive_amount() -> None:
    """Read from the real files, the figure is a positive number of bytes."""
    available = memory.available_memory()
    assert available is not None
    assert available > 0
