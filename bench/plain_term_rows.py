"""The index's term counting with the query side's plain tokenizer in place of its bulk twin.

`PlainTermRows` has the interface of `vocabulary.TermRows` and keeps its bookkeeping (rows
per batch, term ids, expansion into postings); only the analysis differs: each text's raw
tokens come from `tokens.raw_tokens` (the regex) and are counted with a `Counter`, and the
distinct raw tokens of a build are analysed by `tokens.analyze_tokens` (a Python loop over
them, one PyStemmer call). `bench.tokenizer` builds an index both ways and times them.

The swap is for a benchmark process only (`plain_tokenizer`). A build's workers are forked
from a fork server that imports this module (the benchmark's main module uses it) but runs
no code of the benchmark: `VARIANT_ENV` set to "plain" in the environment the fork server
starts in swaps it there, at import.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import numpy as np
import pyarrow as pa

from worker.index.analysis import segment_builder, vocabulary
from worker.index.analysis.tokens import analyze_tokens, raw_tokens
from worker.index.analysis.vocabulary import TermRows, TokenTerms
from worker.index.store import commit_view

VARIANT_ENV: Final = "REPO_READER_BENCH_TOKENIZER"
VARIANTS: Final = ("bulk", "plain")
"""bulk: the product's numpy analysis (`vocabulary`); plain: `tokens` per text."""


def plain_analyse_tokens(tokens: pa.Array) -> TokenTerms:
    """`vocabulary.analyse_tokens` by `tokens.analyze_tokens`: distinct raw tokens' terms."""
    words = tokens.cast(pa.string()).to_pylist()
    per_token = analyze_tokens(words)
    names = sorted({term for terms in per_token for term in terms}, key=str.encode)
    id_of = {term: i for i, term in enumerate(names)}
    starts = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum([len(terms) for terms in per_token], out=starts[1:])
    ids = np.fromiter(
        (id_of[term] for terms in per_token for term in terms), dtype=np.int32, count=starts[-1]
    )
    return TokenTerms(pa.array(names, pa.string()).cast(pa.binary()), starts, ids)


class PlainTermRows(TermRows):
    """`TermRows` counting each text's raw tokens with the regex and a `Counter`."""

    def add(self, field: int, data: bytes, text_starts: vocabulary.I64, first_text: int) -> None:
        """Count the raw tokens of texts: consecutive slices of `data` from `text_starts`."""
        # Latin-1 maps each byte to one character, and no byte past ASCII is a word byte:
        # the regex finds the same runs as in the bytes.
        text = data.decode("latin-1")
        bounds = [*text_starts.tolist(), len(text)]
        slot_of: dict[str, int] = {}
        slots: list[int] = []
        owners: list[int] = []
        counts: list[int] = []
        for k, (start, end) in enumerate(itertools.pairwise(bounds)):
            for token, count in Counter(raw_tokens(text[start:end])).items():
                slots.append(slot_of.setdefault(token, len(slot_of)))
                owners.append(k)
                counts.append(count)
        if not slot_of:
            return
        n_texts = len(text_starts)
        count_array = np.array(counts, dtype=np.int64)
        self._rows[field].append(
            vocabulary._Rows(
                first_text,
                n_texts,
                len(self._strings),
                vocabulary._narrow(np.array(slots, dtype=np.int64), len(slot_of)),
                vocabulary._narrow(np.array(owners, dtype=np.int64), n_texts),
                vocabulary._narrow(count_array, int(count_array.max()) + 1),
            )
        )
        self._strings.append(pa.array(list(slot_of), pa.string()).cast(pa.binary()))


def install_plain() -> None:
    """Swap the plain tokenizer in for this process's builds, for good."""
    segment_builder.TermRows = PlainTermRows  # type: ignore[misc]
    commit_view.TermRows = PlainTermRows  # type: ignore[misc]
    vocabulary.analyse_tokens = plain_analyse_tokens


@contextmanager
def plain_tokenizer() -> Iterator[None]:
    """Builds in this process use the plain tokenizer within the block."""
    saved = (segment_builder.TermRows, commit_view.TermRows, vocabulary.analyse_tokens)
    install_plain()
    try:
        yield
    finally:
        segment_builder.TermRows, commit_view.TermRows, vocabulary.analyse_tokens = saved  # type: ignore[misc]


def variant_in_use() -> str:
    """Which tokenizer this process's builds use: "plain" or "bulk"."""
    return "plain" if segment_builder.TermRows is PlainTermRows else "bulk"


if os.environ.get(VARIANT_ENV) == "plain":
    install_plain()
