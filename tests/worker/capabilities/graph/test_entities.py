"""Tests of what an entity's own text says: its signature."""

from __future__ import annotations

from worker.capabilities.graph.entities import signature_of


def test_a_signature_is_the_head_on_one_line() -> None:
    """Lines of a head are joined, and the opener of the body dropped."""
    lines = ["def route(", "    self, rule: str,", "    **options):", "    pass"]
    assert signature_of(lines, 1, 4) == "def route( self, rule: str, **options)"
    assert signature_of(["int main(void) {", "}"], 1, 2) == "int main(void)"


def test_a_byte_order_mark_is_no_part_of_a_signature() -> None:
    """A file that starts with a UTF-8 byte order mark gives its first definition's head
    without it."""
    assert signature_of(["\ufeffdef brew():", "    pass"], 1, 2) == "def brew()"
