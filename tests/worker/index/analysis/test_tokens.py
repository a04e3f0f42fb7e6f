"""Tokenizer: identifier splitting, stemming, stop words, informative terms."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worker.index.analysis.tokens import (
    MAX_TOKEN_CHARS,
    identifier_parts,
    informative_terms,
    raw_tokens,
    text_terms,
)


def test_raw_tokens_are_whole_runs_within_the_length_limits() -> None:
    """A run of word characters is a token only whole, of two to MAX_TOKEN_CHARS characters;
    anything else (non-ASCII letters too) separates runs."""
    at_limit, past_limit = "a" * MAX_TOKEN_CHARS, "b" * (MAX_TOKEN_CHARS + 1)
    text = f"x go_2 {at_limit}.{past_limit} café naïve_x9\xff_y"
    assert raw_tokens(text) == ["go_2", at_limit, "caf", "na", "ve_x9", "_y"]


def test_camel_case_split_and_kept_whole() -> None:
    """A camelCase identifier yields its stemmed parts and the lower-cased whole."""
    assert text_terms("getUserName") == ["user", "name", "getusername"]


def test_snake_case_split_and_kept_whole() -> None:
    """A snake_case identifier yields its parts and the whole; `get` is a stop word as a part."""
    assert text_terms("get_user_name") == ["user", "name", "get_user_name"]


def test_acronyms_and_digits() -> None:
    """Runs of capitals and trailing digits stay together."""
    assert identifier_parts("HTTPServer2") == ["http", "server2"]
    assert identifier_parts("parseJSONResponse") == ["parse", "json", "response"]


def test_prose_is_stemmed() -> None:
    """Prose words are reduced to their stems, so inflections match."""
    assert text_terms("rotation rotates rotated") == ["rotat", "rotat", "rotat"]


def test_stop_words_and_keywords_dropped() -> None:
    """English stop words and common code keywords are no terms."""
    assert text_terms("the return of self and def") == []


def test_informative_terms_distinct_in_order() -> None:
    """Informative terms are distinct and in order of first appearance."""
    assert informative_terms("CSRF token, the csrf TOKEN rotation") == ["csrf", "token", "rotat"]


def test_informative_terms_empty_cases() -> None:
    """Empty, '*', only stop words, one character: no informative term."""
    for query in ("", "*", "the a of", "x", "  ** ?? !! ", "a b c d e"):
        assert informative_terms(query) == [], query


@given(st.text())
def test_tokenizer_never_crashes(text: str) -> None:
    """Any text, any alphabet: terms are non-empty lower-case ASCII strings."""
    for term in text_terms(text):
        assert term
        assert term == term.lower()
        assert term.isascii()
