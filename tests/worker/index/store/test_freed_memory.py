"""Tests for keeping a build worker's freed memory for its next segment.

The setting is a process's own: each test runs its process in a child.
"""

from __future__ import annotations

from tests.support.processes import last_line_printed

_PAGES = (64 << 20) // 4096
"""The pages of the 64 MB array each test fills again: above any threshold glibc sets itself."""


def test_memory_freed_is_filled_again_without_faulting_it_in() -> None:
    """Once keep_freed_memory is called, a large array freed and allocated again reuses the
    memory already faulted in; before, every page faults again."""
    before, took, after = (
        int(word)
        for word in last_line_printed(
            "from tests.support.processes import faults_filling_again\n"
            "from worker.index.store.freed_memory import keep_freed_memory\n"
            "before = faults_filling_again(64 << 20)\n"
            "took = keep_freed_memory()\n"
            "print(before, int(took), faults_filling_again(64 << 20))\n"
        )
    )
    assert before >= _PAGES
    assert took == 1
    assert after < _PAGES // 10


_POOL_THEN_FAULTS = """
from tests.support.processes import faults_filling_again
from worker.index.store import build_workers
if __name__ == "__main__":
    pool = build_workers.build_pool(1)
    with pool.executor:
        in_worker = pool.executor.submit(faults_filling_again, 64 << 20).result()
    print(in_worker, faults_filling_again(64 << 20))
"""


def test_build_workers_keep_freed_memory_and_leave_their_parent_as_it_was() -> None:
    """A build worker reuses the memory it freed; the process that started its pool still
    hands such memory back."""
    in_worker, in_parent = (int(word) for word in last_line_printed(_POOL_THEN_FAULTS))
    assert in_worker < _PAGES // 10
    assert in_parent >= _PAGES
