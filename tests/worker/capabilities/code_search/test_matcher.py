"""Tests of RE2 query compilation, line matching and path globs."""

from __future__ import annotations

import pytest
import re2
from hypothesis import given
from hypothesis import strategies as st

from worker.capabilities.code_search.matcher import (
    compile_query,
    is_whole_word,
    path_glob_pattern,
)
from worker.errors import InvalidRequest


def lines(query: str, data: bytes, *, regex: bool = True, ignore_case: bool = False) -> list[int]:
    compiled = compile_query(query, regex=regex, ignore_case=ignore_case, max_mem=8 << 20)
    return [m.line_number for m in compiled.lines(data)]


@pytest.mark.timeout(10)
def test_a_catastrophic_pattern_answers_at_once() -> None:
    """`(a+)+$` against 'a' * 5000 + 'b' (exponential for backtracking engines) is linear in RE2."""
    data = b"a" * 5000 + b"b\n" + b"a" * 5000 + b"\n"
    assert lines("(a+)+$", data) == [2]
    assert lines("(x+x+)+y", b"x" * 100_000) == []


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [("(a)\\1", "escape"), ("(?=a)b", "(?="), ("a{1001}", "repetition"), ("(", "missing")],
)
def test_patterns_re2_rejects_are_invalid_requests(pattern: str, reason: str) -> None:
    """Backreferences, lookaround, huge repetitions and syntax errors are INVALID_REQUEST."""
    with pytest.raises(InvalidRequest) as error:
        compile_query(pattern, regex=True, ignore_case=False, max_mem=8 << 20)
    assert error.value.details["field"] == "query"
    assert reason in error.value.details["reason"]


def test_a_pattern_over_the_memory_budget_is_refused() -> None:
    """A pattern whose program needs more than max_mem is refused, never run."""
    with pytest.raises(InvalidRequest, match="too large"):
        compile_query("\\pL{200}\\pN{200}", regex=True, ignore_case=False, max_mem=1 << 16)


def test_a_line_break_in_the_query_is_refused() -> None:
    """Search is line by line, so a query spanning lines is INVALID_REQUEST, not empty."""
    with pytest.raises(InvalidRequest, match="line break"):
        compile_query("a\nb", regex=False, ignore_case=False, max_mem=8 << 20)


def test_literal_mode_escapes_metacharacters() -> None:
    """A literal query matches its text exactly, metacharacters included."""
    data = b"x = a.b*c\ny = aXbbbc\n"
    assert lines("a.b*c", data, regex=False) == [1]
    assert lines("a.b*c", data) == [2]


_PIECES = st.sampled_from(
    [b"a", b"b", b"ab", b" ", b"\n", b"\r\n", "\u00e9".encode(), b"\xc3", b"\xff"]
)
"""Bytes a text is made of: line breaks, UTF-8, a lone lead byte, a byte UTF-8 never has."""


@given(
    query=st.text(alphabet="ab \u00e9\u00ff.*", min_size=1, max_size=3),
    pieces=st.lists(st.one_of(_PIECES, st.none()), max_size=30),
)
def test_a_literal_is_found_where_re2_finds_it(query: str, pieces: list[bytes | None]) -> None:
    """A literal matched with case (found without RE2) matches the lines, at the same bytes,
    that RE2 finds for the literal escaped as a pattern."""
    data = b"".join(query.encode() if piece is None else piece for piece in pieces)
    found = compile_query(query, regex=False, ignore_case=False, max_mem=8 << 20)
    by_re2 = compile_query(re2.escape(query), regex=True, ignore_case=False, max_mem=8 << 20)
    assert found.literal is not None
    assert by_re2.literal is None
    assert list(found.lines(data)) == list(by_re2.lines(data))


def test_each_matching_line_is_reported_once_in_order() -> None:
    """Only the first match of a line counts; numbering is 1-based and exact."""
    data = b"foo foo\nbar\r\nfoo\n\nfoo"
    assert lines("foo", data) == [1, 3, 5]
    assert lines("^$", b"a\n\nb\n") == [2]
    assert lines("r$", data) == []  # the CR stays part of the line, as in git grep
    assert lines("x*", b"a\nb\n") == [1, 2]  # no phantom line after the final break


def test_matches_never_span_lines() -> None:
    """Classes that include a line break still match within one line only."""
    assert lines("a[^z]*b", b"a\nb\nab\n") == [3]
    assert lines("a\\s*b", b"a\nb\n") == []


def test_case_can_be_ignored() -> None:
    """ignore_case matches any case, including RE2's Unicode folds."""
    assert lines("hello", b"HeLLo\n", ignore_case=True) == [1]
    assert lines("hello", b"HeLLo\n", regex=False, ignore_case=True) == [1]
    assert lines("hello", b"HeLLo\n") == []
    assert lines("kelvin", "\u212aelvin\n".encode(), ignore_case=True) == [1]


def test_whole_words() -> None:
    """A whole-word match does not continue a word at an edge that is a word character."""
    assert is_whole_word(b"(route)", 1, 6)
    assert not is_whole_word(b"routes", 0, 5)
    assert not is_whole_word(b"_route", 1, 6)
    assert is_whole_word(b"p = kmalloc(size)", 4, 12)
    assert not is_whole_word(b"p = xkmalloc(size)", 5, 13)
    assert is_whole_word(b"a->b", 1, 3)
    assert not is_whole_word(b"", 0, 0)
    assert not is_whole_word(b"abc", 1, 1)


@pytest.mark.parametrize(
    ("glob", "selected", "rejected"),
    [
        ("src", ["src/a.py", "src/b/c.py"], ["srcs/a.py", "lib/src/a.py"]),
        ("src/a.py", ["src/a.py"], ["src/a.pyc"]),
        ("*.py", ["a.py", "src/deep/b.py"], ["a.pyc", "py"]),
        ("src/*.py", ["src/a.py"], ["src/b/c.py", "a.py"]),
        ("src/**/*.py", ["src/a.py", "src/b/c/d.py"], ["lib/a.py"]),
        ("**/test_*.py", ["test_a.py", "x/test_b.py"], ["x/b_test.py"]),
        ("[!a]*.c", ["b.c", "x/c.c"], ["a.c"]),
        ("file?.txt", ["file1.txt"], ["file10.txt", "file/.txt"]),
        ("*.{c,h}", ["a.c", "x/y.h"], ["a.cc", "a.{c,h}", "c"]),
        ("{src,lib}/**/*.py", ["src/a.py", "lib/b/c.py"], ["test/a.py", "srclib/a.py"]),
        ("*.{py,{c,h}pp}", ["a.py", "b.cpp", "x/c.hpp"], ["a.pp", "a.c"]),
        ("{{cookiecutter.slug}}/x.py", ["{{cookiecutter.slug}}/x.py"], ["cookiecutter.slug/x.py"]),
        ("a{b", ["a{b", "a{b/c.py"], ["ab"]),
        ("a**b", ["ab", "x/aXYb"], ["a/b", "a/x/b"]),
    ],
)
def test_path_globs(glob: str, selected: list[str], rejected: list[str]) -> None:
    """Prefixes select subtrees; `*`, `?` stay in a segment; `**` spans segments; braces with
    a comma are alternatives, others literal."""
    pattern = re2.compile(path_glob_pattern(glob))
    assert [p for p in selected if not pattern.search(p)] == []
    assert [p for p in rejected if pattern.search(p)] == []


@pytest.mark.parametrize("glob", ["/etc/*", "../x", "a/../b", "a\\b", "./a"])
def test_path_globs_stay_inside_the_repository(glob: str) -> None:
    """Absolute globs, dot segments and backslashes are INVALID_REQUEST naming `path`."""
    with pytest.raises(InvalidRequest) as error:
        path_glob_pattern(glob)
    assert error.value.details["field"] == "path"
