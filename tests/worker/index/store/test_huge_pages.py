"""Tests for keeping a building process off transparent huge pages.

The setting is a process's own: each test runs its process in a child.
"""

from __future__ import annotations

from tests.support.processes import last_line_printed

_HEAD = """
from tests.support.processes import SELF_STATUS, huge_pages_allowed
def allowed(): return huge_pages_allowed(SELF_STATUS.read_text())
"""


def _report(script: str) -> list[str]:
    """What `script` prints last, run in a fresh child process with `allowed()` defined."""
    return last_line_printed(_HEAD + script)


def test_a_process_kept_off_huge_pages_is_off_them_from_then_on() -> None:
    """keep_off_huge_pages takes the process that calls it off huge pages, and says it did;
    importing it changes nothing."""
    printed = _report(
        "from worker.index.store.huge_pages import keep_off_huge_pages\n"
        "print(allowed(), keep_off_huge_pages(), allowed())\n"
    )
    assert printed == ["True", "True", "False"]


def test_a_process_is_off_huge_pages_until_the_last_block_leaves() -> None:
    """Overlapping blocks keep the process off huge pages until the last one ends; then it
    is back on them."""
    printed = _report(
        "from worker.index.store.huge_pages import huge_pages_off\n"
        "outer, inner = huge_pages_off(), huge_pages_off()\n"
        "outer.__enter__(); inner.__enter__(); a = allowed()\n"
        "outer.__exit__(None, None, None); b = allowed()\n"
        "inner.__exit__(None, None, None); print(a, b, allowed())\n"
    )
    assert printed == ["False", "False", "True"]


def test_a_block_leaves_a_process_already_off_huge_pages_off() -> None:
    """A block in a process that was kept off huge pages does not put it back on them."""
    printed = _report(
        "from worker.index.store.huge_pages import huge_pages_off, keep_off_huge_pages\n"
        "keep_off_huge_pages()\n"
        "with huge_pages_off(): pass\n"
        "print(allowed())\n"
    )
    assert printed == ["False"]


def test_a_block_that_fails_puts_the_process_back_on_huge_pages() -> None:
    """An exception out of the block still ends it."""
    printed = _report(
        "from worker.index.store.huge_pages import huge_pages_off\n"
        "try:\n"
        "    with huge_pages_off(): raise ValueError\n"
        "except ValueError: print(allowed())\n"
    )
    assert printed == ["True"]
