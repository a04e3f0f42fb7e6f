"""Tests of query planning: the trigrams a plan requires are always present in matching text."""

from __future__ import annotations

import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.index.analysis.trigrams import fold, trigrams_of
from worker.index.views.queryplan import (
    MATCH_ALL,
    AllOf,
    AnyOf,
    Literal,
    TrigramQuery,
    plan_literal,
    plan_regex,
)


def holds(plan: TrigramQuery, text: str) -> bool:
    """Whether `text` contains what `plan` requires (evaluated directly on its trigrams)."""
    present = set(trigrams_of(fold(text.encode())).tolist())
    return _holds(plan, present)


def _holds(plan: TrigramQuery, present: set[int]) -> bool:
    if isinstance(plan, Literal):
        return set(trigrams_of(plan.text).tolist()) <= present
    if isinstance(plan, AllOf):
        return all(_holds(p, present) for p in plan.parts)
    assert isinstance(plan, AnyOf)
    return any(_holds(p, present) for p in plan.parts)


def matches(pattern: str, text: str, *, ignore_case: bool = False) -> bool:
    options = re2.Options()
    options.never_nl = True
    options.log_errors = False
    options.case_sensitive = not ignore_case
    return re2.compile(pattern, options).search(text) is not None


def test_literal_runs_are_required() -> None:
    """A plain pattern requires its whole text, folded to lower case."""
    assert plan_regex("HandleRequest", ignore_case=False) == Literal(b"handlerequest")


def test_alternation_requires_one_branch() -> None:
    """`(foo|bar)baz` requires foo or bar, and baz."""
    assert plan_regex("(foo|bar)baz", ignore_case=False) == AllOf(
        (AnyOf((Literal(b"foo"), Literal(b"bar"))), Literal(b"baz"))
    )


def test_optional_parts_require_nothing() -> None:
    """Optional atoms and groups end a run and add no requirement."""
    assert plan_regex("spin_lock(_irqsave)?\\(", ignore_case=False) == Literal(b"spin_lock")
    assert plan_regex("x?yzw", ignore_case=False) == Literal(b"yzw")


def test_classes_escapes_and_quoting() -> None:
    """Case-only classes, escaped punctuation, \\Q..\\E and \\x{..} are literal text."""
    assert plan_regex("[Ff]oo\\.bar", ignore_case=False) == Literal(b"foo.bar")
    assert plan_regex("\\QA.B*C\\E", ignore_case=False) == Literal(b"a.b*c")
    assert plan_regex("\\x{41}BC", ignore_case=False) == Literal(b"abc")
    assert plan_regex("[[:alpha:]]]foo", ignore_case=False) == Literal(b"]foo")


def test_repetition_keeps_the_repeated_character_at_both_ends() -> None:
    """`ab+cd` requires `bcd` (the run restarts with the repeated character)."""
    assert plan_regex("ab+cd", ignore_case=False) == Literal(b"bcd")


def test_a_counted_repetition_requires_its_least_count() -> None:
    """`x{1000}` requires `xxx`, and `ab{3,}cd` both `abbb` and `bcd`: no scan of every file."""
    assert plan_regex("x{1000}", ignore_case=False) == Literal(b"xxx")
    assert plan_regex("ab{3,}cd", ignore_case=False) == AllOf((Literal(b"abbb"), Literal(b"bcd")))


def test_patterns_needing_no_trigram_plan_a_scan() -> None:
    """A pattern with no certain three-byte literal requires nothing."""
    for pattern in ("(a+)+$", "\\w+", "foo|", "ab", ".*", "[a-z]{3}"):
        assert plan_regex(pattern, ignore_case=False) == MATCH_ALL


def test_non_ascii_breaks_runs_when_case_is_ignored() -> None:
    """Case-insensitive non-ASCII characters cannot be folded bytewise, so they end runs."""
    assert plan_literal("Ärgerlich", ignore_case=True) == Literal(b"rgerlich")
    assert plan_literal("Ärgerlich", ignore_case=False) == Literal(fold("Ärgerlich".encode()))
    assert plan_regex("(?i)éabc", ignore_case=False) == Literal(b"abc")


def test_kelvin_sign_and_long_s_fold_to_ascii() -> None:
    """RE2 folds KELVIN SIGN to k and LONG S to s; the index folds them the same way."""
    plan = plan_regex("(?i)kiss", ignore_case=False)
    assert matches("(?i)kiss", "\u212ai\u017fs")
    assert holds(plan, "\u212ai\u017fs")


ALPHABET = "abAB_-."


def regex_strategy() -> st.SearchStrategy[str]:
    atoms = st.one_of(
        st.sampled_from(["a", "b", "A", "B", "_", "-", "\\."]),
        st.sampled_from([".", "\\w", "[aB]", "[Aa]", "[^a]", "\\b", "^", "$", "\\Qa.b\\E"]),
        st.tuples(
            st.sampled_from(["a", "b", "A", "_"]), st.sampled_from(["{2}", "{3}", "{3,}", "{2,4}"])
        ).map("".join),
    )

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.lists(inner, min_size=1, max_size=5).map("".join),
            st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{0,2}", "{1,}", "+?"])).map(
                lambda t: f"({t[0]}){t[1]}"
            ),
            inner.map(lambda s: f"(?i:{s})"),
        )

    return st.recursive(atoms, extend, max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(pattern=regex_strategy(), text=st.text(alphabet=ALPHABET, max_size=40), nocase=st.booleans())
def test_a_match_always_satisfies_the_plan(pattern: str, text: str, nocase: bool) -> None:
    """Whenever RE2 finds a match, the text holds every trigram the plan requires."""
    plan = plan_regex(pattern, ignore_case=nocase)
    if matches(pattern, text, ignore_case=nocase):
        assert holds(plan, text), (pattern, text, plan)


@settings(max_examples=200, deadline=None)
@given(
    needle=st.text(alphabet="abAB_é\u212a", min_size=1, max_size=8),
    text=st.text(alphabet="abAB_é\u212a", max_size=40),
    nocase=st.booleans(),
)
def test_a_literal_match_always_satisfies_the_plan(needle: str, text: str, nocase: bool) -> None:
    """The literal plan never requires a trigram a matching text lacks."""
    if matches(re2.escape(needle), text, ignore_case=nocase):
        assert holds(plan_literal(needle, ignore_case=nocase), text)
