"""Tests of excerpt cutting: bounded, whole lines, verifiable, overlapping spans merged."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worker.repos.excerpts import cut_excerpt, decode_text, is_binary, merge_spans

lines_strategy = st.lists(
    st.text(alphabet=st.characters(exclude_characters="\n"), max_size=60), min_size=1, max_size=40
)


@given(lines_strategy, st.integers(1, 40), st.integers(1, 40), st.integers(1, 300))
def test_excerpt_is_bounded_and_verifiable(lines: list[str], a: int, b: int, limit: int) -> None:
    """No excerpt is longer than its limit, and it equals the text at its span."""
    start, end = min(a, b), max(a, b)
    excerpt = cut_excerpt(lines, start, end, limit, lambda line: float(line.count("x")))
    if excerpt is None:
        return
    assert len(excerpt.text) <= limit
    assert excerpt.text == "\n".join(lines[excerpt.start - 1 : excerpt.end])
    assert start <= excerpt.start <= excerpt.end <= min(end, len(lines))
    whole = "\n".join(lines[start - 1 : min(end, len(lines))])
    assert excerpt.truncated == (excerpt.text != whole)


def test_whole_span_when_it_fits() -> None:
    """A span that fits is returned whole and not marked truncated."""
    excerpt = cut_excerpt(["a", "b", "c"], 1, 3, 100)
    assert excerpt is not None
    assert (excerpt.text, excerpt.start, excerpt.end, excerpt.truncated) == ("a\nb\nc", 1, 3, False)


def test_window_goes_where_the_terms_are() -> None:
    """When the span is too long, the window with the most matching lines wins."""
    lines = ["def f():", "    pass", "    pass", "    needle", "    needle", "    pass"]
    excerpt = cut_excerpt(lines, 1, 6, 22, lambda line: float("needle" in line))
    assert excerpt is not None
    assert excerpt.text == "    needle\n    needle"
    assert excerpt.truncated


def test_overlong_line_is_never_split() -> None:
    """A line longer than the limit cannot be excerpted, so such a span gives nothing."""
    assert cut_excerpt(["x" * 50], 1, 1, 10) is None
    excerpt = cut_excerpt(["x" * 50, "short"], 1, 2, 10)
    assert excerpt is not None
    assert excerpt.text == "short"


def test_merge_spans() -> None:
    """Overlapping and touching spans merge; separate ones stay apart."""
    assert merge_spans([(5, 8), (1, 3), (2, 4), (10, 12), (9, 9)]) == [(1, 12)]
    assert merge_spans([(1, 2), (4, 5)]) == [(1, 2), (4, 5)]


def test_decoding_is_lossless() -> None:
    """UTF-8 decodes as UTF-8, other bytes as latin-1 that encodes back to the same bytes."""
    utf8 = decode_text("héllo\nwörld".encode())
    assert utf8 is not None
    assert (utf8.encoding, utf8.lines) == ("utf-8", ("héllo", "wörld"))
    raw = b"caf\xe9\r\nna\xefve"
    latin = decode_text(raw)
    assert latin is not None
    assert latin.encoding == "latin-1"
    assert "\n".join(latin.lines).encode("latin-1") == raw


def test_binary_is_refused() -> None:
    """Data with a NUL byte near the start is binary and never decoded."""
    assert is_binary(b"\x89PNG\r\n\x1a\n\0\0")
    assert decode_text(b"abc\0def") is None
    assert not is_binary(b"plain text")
