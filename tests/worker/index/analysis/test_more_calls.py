"""Each language's own call finder: Python's `super().name(`, Ruby's calls without parentheses."""

from __future__ import annotations

from worker.index.analysis.more_calls import python_super_calls, ruby_bare_calls


def _targets(found: list[tuple[int, int, bytes]], data: bytes) -> list[tuple[bytes, bytes]]:
    return [(data[start:end], target) for start, end, target in found]


def test_super_members_are_written_super_dot_name() -> None:
    """The span runs from `super` to the member's name; the target drops what is between."""
    data = b"x = 1\nsuper().save(a)\nsuper(Cls, self).stop()\nsuper().x + 1\n"
    assert _targets(python_super_calls(data, [(0, len(data))]), data) == [
        (b"super().save", b"super.save"),
        (b"super(Cls, self).stop", b"super.stop"),
    ]


def test_ruby_locals_are_scoped_by_method() -> None:
    """A name assigned in one method is a local there, and still a call in the next (keywords
    are left to the caller)."""
    data = b"def a\n  total = 1\n  total\nend\n\ndef b\n  total\n  x = total\nend\n"
    found = ruby_bare_calls(data, [(0, len(data))])
    calls = [(target, data.count(b"\n", 0, start)) for start, _, target in found]
    assert [c for c in calls if c[0] not in (b"def", b"end")] == [(b"total", 6)]


def test_only_the_given_files_are_read() -> None:
    """A file is read within its bounds: a call after them is not its."""
    data = b"prepare\n\nfinish\n"
    assert [target for _, _, target in ruby_bare_calls(data, [(0, 8)])] == [b"prepare"]
