"""Bulk analysis: the same terms as the query-side tokenizer, counted per text."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.index.analysis import vocabulary
from worker.index.analysis.postings import postings
from worker.index.analysis.tokens import analyze_tokens, text_terms
from worker.index.analysis.vocabulary import TermRows, analyse_tokens

TOKEN_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
tokens = st.text(alphabet=TOKEN_ALPHABET, min_size=2, max_size=64)


@settings(max_examples=200, deadline=None)
@given(st.lists(tokens, min_size=1, max_size=40, unique=True))
def test_bulk_analysis_equals_tokenizer(words: list[str]) -> None:
    """Each distinct raw token gets exactly the terms `tokens.analyze_tokens` gives it."""
    analysed = analyse_tokens(pa.array([w.encode() for w in words], pa.binary()))
    names = [t.decode() for t in analysed.terms.to_pylist()]
    got = [
        sorted(names[i] for i in analysed.ids[analysed.starts[k] : analysed.starts[k + 1]])
        for k in range(len(words))
    ]
    assert got == [sorted(terms) for terms in analyze_tokens(words)]
    assert names == sorted(set(names), key=str.encode)


def test_analysis_in_blocks_equals_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tokens split a block at a time get the same terms as all in one block."""
    words = [f"{w}_{i}x{i % 7}" for i in range(300) for w in ("getUser", "HTTPServer", "rotation")]
    arr = pa.array([w.encode() for w in words], pa.binary())
    whole = analyse_tokens(arr)
    monkeypatch.setattr(vocabulary, "ANALYSE_BLOCK", 64)
    blocked = analyse_tokens(arr)
    assert blocked.terms.equals(whole.terms)
    assert (blocked.starts == whole.starts).all()
    assert (blocked.ids == whole.ids).all()


def count_with(batches: list[list[bytes]]) -> tuple[Counter[tuple[str, int]], list[int]]:
    """(term, text) counts and each text's term count, texts added a batch at a time."""
    rows = TermRows(1)
    first = 0
    for texts in batches:
        data = b"\n".join(texts)
        starts = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]]).astype(np.int64)
        rows.add(0, data, starts, first)
        first += len(texts)
    names = [t.decode() for t in rows.analyse(first).to_pylist()]
    lengths = rows.lengths[0].tolist()
    blocks, total = rows.expanded(0, None)
    got: Counter[tuple[str, int]] = Counter()
    n = 0
    for term, text, count, repeat in blocks:
        n += len(term)
        text_ids = np.repeat(text, repeat).tolist()
        counts = np.repeat(count, repeat).tolist()
        for t, x, c in zip(term.tolist(), text_ids, counts, strict=True):
            got[names[t], x] += c
    assert n == total
    return got, lengths


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=80), min_size=1, max_size=12), st.integers(1, 3))
def test_term_counts_per_text(texts: list[str], n_batches: int) -> None:
    """(term, text) counts equal counting `text_terms` of each text on its own."""
    encoded = [t.replace("\n", " ").encode() for t in texts]
    batches = [list(b) for b in np.array_split(np.array(encoded, dtype=object), n_batches)]
    got, lengths = count_with([b for b in batches if b])
    expected: Counter[tuple[str, int]] = Counter()
    for i, text in enumerate(encoded):
        for term in text_terms(text.decode("utf-8", "replace")):
            expected[term, i] += 1
    assert got == expected
    assert lengths == [
        sum(c for (_, t), c in expected.items() if t == i) for i in range(len(texts))
    ]


def test_texts_renumbered_and_counts_summed() -> None:
    """Two raw tokens of one term in a text count in one posting; texts go through the map."""
    rows = TermRows(1)
    data = b"rotation rotations\nnothing here\nrotation"
    rows.add(0, data, np.array([0, 19, 32], dtype=np.int64), 0)
    names = [t.decode() for t in rows.analyse(3).to_pylist()]
    found = postings(
        [rows.expanded(0, np.array([0, 0, 1], dtype=np.int64)), (iter([]), 0)], len(names), 2
    )
    s = names.index("rotat")
    start, n = int(found.start[s]), int(found.count[s])
    assert found.chunk[start : start + n].tolist() == [0, 1]
    assert found.tf_body[start : start + n].tolist() == [2, 1]
    assert rows.lengths[0].tolist()[2] == 1


def test_counts_and_texts_past_16_bits_kept_exactly() -> None:
    """A batch with over 65,536 texts, or a count over 65,535, keeps exact 32-bit rows."""
    many = [b"alpha"] * 70_000 + [b"beta " * 70_000]
    got, lengths = count_with([many[:3], many])
    assert got["alpha", 0] == 1
    assert got["alpha", 3 + 69_999] == 1
    assert got["beta", 3 + 70_000] == 70_000
    assert lengths[-1] == 70_000
    assert len(lengths) == 3 + 70_001


def test_batch_of_more_token_text_pairs_than_32_bits_counts_exactly() -> None:
    """A batch whose distinct tokens times texts pass 2**31 (64-bit keys) counts exactly."""
    n = 46_341  # n * n > 2**31
    texts = [f"tok{i:06d} tok{(i * 7) % n:06d}".encode() for i in range(n)]
    got, lengths = count_with([texts])
    assert got[f"tok{n - 1:06d}", n - 1] == 1
    assert got["tok000000", 0] == 2
    assert got[f"tok{(5 * 7) % n:06d}", 5] == 1
    assert sum(got.values()) == 2 * n
    assert lengths == [2] * n
