"""Index terms of many texts at once: raw tokens counted per text, analysed once per build.

The same analysis as `worker.index.analysis.tokens` (which the query side uses), done in bulk. A
batch's raw tokens are found in one compiled pass (`token_kernels`) and made distinct with
Arrow's dictionary encoding; its rows count each distinct token per text, naming the token
by a slot (its place among the batch's distinct tokens). Nothing is looked up per batch: at
the end the batches' distinct tokens are deduplicated at once (one dictionary over them
all), each distinct token is analysed once with array operations (PyStemmer called once, on
the distinct parts), and the rows are expanded into (term, text) counts with one integer
sort.
Python never touches a token occurrence, nor a distinct token.
bench.tokenizer: 1.5x on a whole Django build in wall time, 1.6x in CPU seconds (9 rounds).

Terms get ids in the order of their UTF-8 bytes, so rows sorted by term id are sorted by term.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import Stemmer

from worker.index.analysis.distinct import count_distinct
from worker.index.analysis.postings import Block
from worker.index.analysis.strings import binary_array, binary_parts, sort_binary
from worker.index.analysis.tokens import (
    MAX_TOKEN_CHARS,
    MIN_TOKEN_CHARS,
    STEMMER_LANGUAGE,
    STOP_WORDS,
)

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
U8 = npt.NDArray[np.uint8]
Mask = npt.NDArray[np.bool_]

_LOWER_TABLE: Final = np.asarray([c + 32 if 65 <= c <= 90 else c for c in range(256)], np.uint8)
_UPPER, _LOWER, _DIGIT, _US, _NONE = 0, 1, 2, 3, 4
"""Byte classes (`_NONE`: past a token's ends)."""
_CLASS: Final = np.full(256, _US, dtype=np.uint8)
_CLASS[65:91], _CLASS[97:123], _CLASS[48:58] = _UPPER, _LOWER, _DIGIT


def _part_start_table() -> Mask:
    """Whether a byte starts an identifier part, by (class before, its class, class after).

    The rules of `tokens.identifier_parts`: underscores split and belong to no part; a part
    starts a token, follows an underscore, is an upper-case letter after a lower-case one
    or a digit, or the last of a run of capitals before a lower-case letter (`HTTPResponse`),
    or a lower-case letter after a digit.
    """
    table = np.zeros((5, 5, 5), dtype=bool)
    for before in range(5):
        for this in range(4):
            for after in range(5):
                table[before, this, after] = this != _US and (
                    before in (_NONE, _US)
                    or (
                        this == _UPPER
                        and (before in (_LOWER, _DIGIT) or (before == _UPPER and after == _LOWER))
                    )
                    or (this == _LOWER and before == _DIGIT)
                )
    return table.ravel()


_PART_START: Final = _part_start_table()
ANALYSE_BLOCK: Final = 1 << 16
"""Distinct tokens split into parts at a time."""
_UNDERSCORE: Final = 95
_STOP: Final = pa.array(sorted(STOP_WORDS), pa.string())

_stemmer = Stemmer.Stemmer(STEMMER_LANGUAGE, 0)
"""Without PyStemmer's cache of recent words: every word reaches it once (distinct), and
keeping the cache costs more than the stemming (2.6 times as long for 60k words)."""


def _stems(words: pa.Array, word_len: I64) -> pa.Array:
    """The stem (binary) of each word of at least MIN_TOKEN_CHARS; a shorter one is kept.

    A word ending in a digit is its own stem (every suffix the stemmer removes or rewrites
    ends in a letter), so only the others go through the stemmer.
    """
    data, offsets = binary_parts(words)
    ends_in_letter = _CLASS[data[np.maximum(offsets[1:] - 1, 0)]] != _DIGIT
    todo = np.flatnonzero((word_len >= MIN_TOKEN_CHARS) & ends_in_letter)
    if not len(todo):
        return words
    fresh = words.take(pa.array(todo)).cast(pa.string()).to_pylist()
    stemmed = pa.array(_stemmer.stemWords(fresh), pa.string()).cast(pa.binary())
    mask = np.zeros(len(words), dtype=bool)
    mask[todo] = True
    return pc.replace_with_mask(words, pa.array(mask), stemmed)


@dataclass(frozen=True, slots=True)
class TokenTerms:
    """The terms of distinct raw tokens: token i's term ids are `ids[starts[i]:starts[i + 1]]`.

    A term's id is its position in `terms` (binary strings in ascending byte order).
    """

    terms: pa.Array
    starts: I64
    ids: I32


def analyse_tokens(tokens: pa.Array) -> TokenTerms:
    """The index terms of distinct raw tokens (binary, MIN_TOKEN_CHARS to MAX_TOKEN_CHARS long).

    Same rules as `tokens.analyze_tokens`: the stems of the identifier parts that are long
    enough and no stop word, then the lower-cased whole when it says more than its one part.
    Tokens are split a block at a time (temporaries stay small: fresh memory is slow); their
    parts are made distinct over all blocks, so each is stemmed once.
    """
    data, offsets = binary_parts(tokens)
    n = len(offsets) - 1
    blocks = []
    for b0 in range(0, n, ANALYSE_BLOCK):
        at = offsets[b0 : b0 + ANALYSE_BLOCK + 1]
        blocks.append(_split_tokens(data[at[0] : at[-1]], at - at[0]))
    encoded = pa.concat_arrays(
        [pa.array([], pa.binary())] + [b.words for b in blocks]
    ).dictionary_encode()
    words = encoded.dictionary
    word_of = encoded.indices.to_numpy()
    word_len = np.diff(binary_parts(words)[1])
    stems = _stems(words, word_len)
    stop = pc.or_(pc.is_in(words, value_set=_STOP), pc.is_in(stems, value_set=_STOP))
    good = np.flatnonzero((word_len >= MIN_TOKEN_CHARS) & ~stop.to_numpy(zero_copy_only=False))
    # Terms: the stems of the parts that are long enough and no stop word, and the wholes.
    candidates = pa.concat_arrays([stems.take(pa.array(good))] + [b.whole_strings for b in blocks])
    by_bytes, repeat = sort_binary(candidates)
    term_of = np.empty(len(by_bytes), dtype=np.int32)
    term_of[by_bytes] = np.cumsum(~repeat, dtype=np.int32) - 1
    stem_term = np.full(len(words), -1, dtype=np.int32)
    stem_term[good] = term_of[: len(good)]
    whole_term = term_of[len(good) :]
    counts = np.zeros(n, dtype=np.int64)
    ids = []
    first_word = first_whole = 0
    for b0, block in zip(range(0, n, ANALYSE_BLOCK), blocks, strict=True):
        block_word = word_of[first_word : first_word + len(block.words)]
        block_ids, block_counts = block.term_ids(
            stem_term[block_word], whole_term[first_whole : first_whole + len(block.wholes)]
        )
        first_word += len(block.words)
        first_whole += len(block.wholes)
        ids.append(block_ids)
        counts[b0 : b0 + len(block_counts)] = block_counts
    token_starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=token_starts[1:])
    all_ids = np.concatenate([np.zeros(0, np.int32), *ids])
    terms = candidates.take(pa.array(by_bytes[~repeat]))
    return TokenTerms(terms, token_starts, all_ids)


@dataclass(frozen=True, slots=True)
class _SplitTokens:
    """A block of tokens split into identifier parts."""

    n: int
    words: pa.Array
    """The distinct parts, lower-cased (binary)."""
    part_of: I32
    """Which word each part is; parts in token order."""
    part_token: I32
    wholes: I64
    """The tokens that keep their lower-cased whole as a term too."""
    whole_strings: pa.Array

    def term_ids(self, word_term: I32, whole_term: I32) -> tuple[I32, I64]:
        """Each token's term ids (its stems in part order, then its whole) and their count.

        `word_term` is each word's stem term, -1 for none (short, a stop word).
        """
        part_term = word_term[self.part_of]
        use = np.flatnonzero(part_term >= 0)
        owner = self.part_token[use]
        n_stems = np.bincount(owner, minlength=self.n)
        counts = n_stems.copy()
        counts[self.wholes] += 1
        starts = np.zeros(self.n, dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        # A token's stems are a run of `use`: each goes to its token's start plus its place.
        stem_run = np.cumsum(n_stems) - n_stems
        ids = np.empty(int(counts.sum()), dtype=np.int32)
        ids[starts[owner] + np.arange(len(use)) - stem_run[owner]] = part_term[use]
        ids[starts[self.wholes] + n_stems[self.wholes]] = whole_term
        return ids, counts


def _split_tokens(data: U8, offsets: I64) -> _SplitTokens:
    """Split tokens into identifier parts; find those whose whole is a term too."""
    n = len(offsets) - 1
    lower, part_token, parts = _identifier_parts(data, offsets)
    part_of = parts.indices.to_numpy()
    words = parts.dictionary
    word_len = np.diff(binary_parts(words)[1])
    long_part = np.flatnonzero(word_len[part_of] >= MIN_TOKEN_CHARS)
    n_parts = np.bincount(part_token[long_part], minlength=n)
    # A single part keeps the whole identifier too when they differ but for underscores.
    single_len = np.zeros(n, dtype=np.int64)
    single_len[part_token[long_part]] = word_len[part_of[long_part]]
    lengths = np.diff(offsets)
    stripped = (
        lengths
        - _run_length(data, offsets[:-1], lengths, 1)
        - _run_length(data, offsets[1:] - 1, lengths, -1)
    )
    wholes = np.flatnonzero((n_parts > 1) | ((n_parts == 1) & (stripped != single_len)))
    whole_strings = binary_array(lower, offsets).take(pa.array(wholes))
    return _SplitTokens(n, words, part_of, part_token, wholes, whole_strings)


def _identifier_parts(data: U8, offsets: I64) -> tuple[U8, I32, pa.DictionaryArray]:
    """The tokens' bytes lower-cased, and their identifier parts: the token of each part and
    the parts (lower-cased, in token order) dictionary-encoded."""
    from worker.index.analysis.token_kernels import identifier_parts

    lower, kept, part_offsets, part_token = identifier_parts(
        data, offsets, _CLASS, _PART_START, _LOWER_TABLE, _US, _NONE
    )
    return lower, part_token, binary_array(kept, part_offsets).dictionary_encode()


@dataclass(slots=True)
class _Rows:
    """One batch's rows of one field: each distinct (token, text) pair with its count.

    `token` holds the batch's slots (its place among the batch's distinct tokens, in
    `TermRows` string chunk `chunk`) until `TermRows.analyse`, raw token ids after; `text`
    counts from `first_text`. Each column is as narrow as its values allow (16 bits for
    most batches): the rows of a whole build are held until its end.
    """

    first_text: int
    n_texts: int
    chunk: int
    token: npt.NDArray[np.integer]
    text: npt.NDArray[np.integer]
    count: npt.NDArray[np.integer]
    n_terms: int = 0
    """Rows the batch's pairs expand into (after `analyse`)."""


class _RunBuffers:
    """Where `token_kernels.word_runs` writes the runs of a text of up to `size` bytes.

    Kept from batch to batch: arrays this large, allocated for each 4 MB batch, came back
    as fresh pages from the kernel every time, and cost more than the pass that fills them.
    """

    def __init__(self, size: int) -> None:
        self.words = np.empty(size, dtype=np.uint8)
        self.offsets = np.empty(size // 2 + 2, dtype=np.int64)
        self.texts = np.empty(size // 2 + 1, dtype=np.int64)


def _narrow(values: I64, limit: int) -> npt.NDArray[np.integer]:
    """`values` (all in [0, limit)) as uint16 when limit allows, else int32."""
    return values.astype(np.uint16 if limit <= 1 << 16 else np.int32)


class TermRows:
    """Raw-token counts of texts in fields, added a batch at a time; terms worked out at the end.

    Texts are numbered through the build (a batch says where its texts start). `analyse`
    returns the terms and gives each text's count of term occurrences per field (`lengths`);
    `expanded` then gives a field's (term, text) rows.
    """

    def __init__(self, n_fields: int) -> None:
        self._strings: list[pa.Array] = []
        self._rows: list[list[_Rows]] = [[] for _ in range(n_fields)]
        self._runs = _RunBuffers(0)
        self._token_terms = TokenTerms(
            pa.array([], pa.binary()), np.zeros(1, np.int64), np.zeros(0, np.int32)
        )
        self.lengths: list[I64] = []

    def add(self, field: int, data: bytes, text_starts: I64, first_text: int) -> None:
        """Count the raw tokens of texts: consecutive slices of `data` from `text_starts`.

        A token never spans two texts (each starts after a non-word byte, or at 0).
        """
        from worker.index.analysis.token_kernels import word_runs

        if len(self._runs.words) < len(data):
            self._runs = _RunBuffers(len(data))
        runs = self._runs
        end, n_runs = word_runs(
            np.frombuffer(data, dtype=np.uint8),
            np.asarray(text_starts, dtype=np.int64),
            MIN_TOKEN_CHARS,
            MAX_TOKEN_CHARS,
            runs.words,
            runs.offsets,
            runs.texts,
        )
        if not n_runs:
            return
        words, offsets, text = runs.words[:end], runs.offsets[: n_runs + 1], runs.texts[:n_runs]
        encoded = binary_array(words, offsets).dictionary_encode()
        distinct = encoded.dictionary
        n_valid, n_texts = len(distinct), len(text_starts)
        # Each token's (slot, text) as one key, slot major: in 32 bits when they fit (a 4 MB
        # batch's do), as every array here is one entry per token.
        key_type = np.int64 if n_valid * n_texts >= 1 << 31 else np.int32
        key = encoded.indices.to_numpy().astype(key_type)
        key *= n_texts
        key += text.astype(key_type)
        keys, counts = count_distinct(key)
        self._rows[field].append(
            _Rows(
                first_text,
                n_texts,
                len(self._strings),
                _narrow(keys // n_texts, n_valid),
                _narrow(keys % n_texts, n_texts),
                _narrow(counts, int(counts.max()) + 1),
            )
        )
        self._strings.append(distinct)

    def analyse(self, n_texts: int) -> pa.Array:
        """Analyse every distinct token seen; returns the terms (binary, ascending), by id.

        Fills `lengths`: per field, each text's count of term occurrences.
        """
        self._runs = _RunBuffers(0)  # no batch comes after: not kept beside what follows
        # Encoded chunk by chunk (one per batch), against one dictionary: no copy of them all.
        encoded = pa.chunked_array(self._strings, pa.binary()).dictionary_encode()
        self._strings = []
        raw_of_slot = [chunk.indices.to_numpy() for chunk in encoded.iterchunks()]
        tokens = (
            encoded.chunk(encoded.num_chunks - 1).dictionary
            if encoded.num_chunks
            else pa.array([], pa.binary())
        )
        del encoded
        self._token_terms = analyse_tokens(tokens)
        per_token = np.diff(self._token_terms.starts).astype(np.int32)
        self.lengths = []
        for parts in self._rows:
            lengths = np.zeros(n_texts, dtype=np.int64)
            for rows in parts:
                rows.token = raw_of_slot[rows.chunk][rows.token]
                terms_per_row = per_token[rows.token]
                weight = terms_per_row * rows.count
                rows.n_terms = int(terms_per_row.sum())
                lengths[rows.first_text : rows.first_text + rows.n_texts] += np.bincount(
                    rows.text, weights=weight, minlength=rows.n_texts
                ).astype(np.int64)
            self.lengths.append(lengths)
        return self._token_terms.terms

    def expanded(self, field: int, text_map: I64 | None) -> tuple[Iterator[Block], int]:
        """The field's (term, text, count) rows, a batch at a time (see `postings.Block`),
        and how many there are; texts renumbered through `text_map` when given.

        A pair may repeat (two tokens of a text with one term). Each batch's token rows are
        let go once expanded.
        """
        parts, self._rows[field] = self._rows[field], []
        tt = self._token_terms
        per_token = np.diff(tt.starts)
        total = sum(rows.n_terms for rows in parts)

        def blocks() -> Iterator[Block]:
            parts.reverse()
            while parts:
                rows = parts.pop()
                n = per_token[rows.token]
                ends = np.cumsum(n)
                at = np.repeat(tt.starts[rows.token] - (ends - n), n)
                at += np.arange(rows.n_terms, dtype=np.int64)
                text = rows.text + np.int64(rows.first_text)
                yield tt.ids[at], text if text_map is None else text_map[text], rows.count, n

        return blocks(), total


def _run_length(data: U8, at: I64, limit: I64, step: int) -> I64:
    """How many underscores run from each position `at` in direction `step` (within limit)."""
    run = np.zeros(len(at), dtype=np.int64)
    todo = np.flatnonzero(data[at] == _UNDERSCORE)
    while len(todo):
        run[todo] += 1
        todo = todo[run[todo] < limit[todo]]
        todo = todo[data[at[todo] + step * run[todo]] == _UNDERSCORE]
    return run
