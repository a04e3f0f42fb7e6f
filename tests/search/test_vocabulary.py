"""Bulk analysis: the same terms as the query-side tokenizer, counted per text."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.search.tokens import analyze_tokens, text_terms
from worker.search.vocabulary import KeyIndex, Vocabulary, keys_of, term_counts

TOKEN_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
tokens = st.text(alphabet=TOKEN_ALPHABET, min_size=2, max_size=64)


def terms_of(vocabulary: Vocabulary, raw_ids: np.ndarray) -> list[list[str]]:
    names = vocabulary.terms().to_pylist()
    out = []
    for raw in raw_ids.tolist():
        ids, _ = vocabulary.expand(np.array([raw]), np.array([0]))
        out.append(sorted(names[i].decode() for i in ids.tolist()))
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(tokens, min_size=1, max_size=40, unique=True))
def test_bulk_analysis_equals_tokenizer(words: list[str]) -> None:
    """Each distinct raw token gets exactly the terms `tokens.analyze_tokens` gives it."""
    vocabulary = Vocabulary()
    raw = vocabulary.raw_ids(pa.array([w.encode() for w in words], pa.binary()))
    expected = [sorted(terms) for terms in analyze_tokens(words)]
    assert terms_of(vocabulary, raw) == expected


def test_known_tokens_keep_their_ids() -> None:
    """A token seen in an earlier batch maps to the same raw id; too short or long: none."""
    vocabulary = Vocabulary()
    first = vocabulary.raw_ids(pa.array([b"getUserName", b"rotation", b"x"], pa.binary()))
    again = vocabulary.raw_ids(
        pa.array([b"rotation", b"a" * 65, b"getUserName", b"fresh"], pa.binary())
    )
    assert first[2] == -1
    assert again[1] == -1
    assert again[0] == first[1]
    assert again[2] == first[0]
    assert again[3] == vocabulary.n_raw - 1


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=80), min_size=1, max_size=12))
def test_term_counts_per_text(texts: list[str]) -> None:
    """(term, text) counts equal counting `text_terms` of each text on its own."""
    encoded = [t.replace("\n", " ").encode() for t in texts]
    data = b"\n".join(encoded)
    starts = np.cumsum([0] + [len(e) + 1 for e in encoded[:-1]]).astype(np.int64)
    vocabulary = Vocabulary()
    keys, counts = term_counts(vocabulary, data, starts)
    names = vocabulary.terms().to_pylist()
    got: Counter[tuple[str, int]] = Counter()
    for key, count in zip(keys.tolist(), counts.tolist(), strict=True):
        got[names[key >> 32].decode(), key & 0xFFFFFFFF] += count
    expected: Counter[tuple[str, int]] = Counter()
    for i, text in enumerate(encoded):
        for term in text_terms(text.decode("utf-8", "replace")):
            expected[term, i] += 1
    assert got == expected


def test_keys_differ_for_different_strings() -> None:
    """Keys of distinct strings differ (the length is part of the key)."""
    strings = [b"ab", b"ba", b"abc", b"a" * 64, b"a" * 63, b"get_user", b"getuser"]
    keys = keys_of(pa.array(strings, pa.binary()))
    assert len(set(keys.tolist())) == len(strings)


def test_key_index_lookup_and_growth() -> None:
    """Added keys are found with their ids across both runs; unknown keys give -1."""
    index = KeyIndex()
    rng = np.random.default_rng(7)
    keys = np.unique(rng.integers(1, 2**63, 5000, dtype=np.int64).astype(np.uint64))
    for part in np.array_split(np.arange(len(keys)), 7):
        index.add(keys[part], part.astype(np.int64))
    assert (index.lookup(keys) == np.arange(len(keys))).all()
    assert (index.lookup(keys[:10] + np.uint64(1)) >= -1).all()
    assert index.lookup(np.array([0], dtype=np.uint64))[0] == -1
