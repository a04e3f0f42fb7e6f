"""Index terms of many texts at once: raw tokens, their analysis, (term, text) counts.

The same analysis as `worker.search.tokens` (which the query side uses), done in bulk: a
batch's raw tokens are found with byte tables and numpy, made distinct with Arrow's
dictionary encoding, and only tokens never seen before are analysed, all at once, with
array operations (PyStemmer is called once per batch on the distinct new parts). Python
never touches a token occurrence, nor a distinct token.

Tokens and terms are known by a 64-bit key: a polynomial hash of their bytes with their
length in the top bits, so only two strings of the same length can collide (odds of about
n^2 / 2^59 for n strings of one length: negligible for the millions of tokens of a kernel).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import Stemmer

from worker.search.tokens import MAX_TOKEN_CHARS, MIN_TOKEN_CHARS, STOP_WORDS

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
U64 = npt.NDArray[np.uint64]
U8 = npt.NDArray[np.uint8]
Mask = npt.NDArray[np.bool_]

_WORD_BYTES: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"
_WORD_FLAGS: Final = bytes(1 if c in _WORD_BYTES else 0 for c in range(256))
_NON_WORD: Final = bytes(c for c in range(256) if c not in _WORD_BYTES)
_LOWER_BYTES: Final = bytes(c + 32 if 65 <= c <= 90 else c for c in range(256))
_UPPER_T: Final = np.zeros(256, dtype=bool)
_UPPER_T[65:91] = True
_LOWER_T: Final = np.zeros(256, dtype=bool)
_LOWER_T[97:123] = True
_DIGIT_T: Final = np.zeros(256, dtype=bool)
_DIGIT_T[48:58] = True
_UNDERSCORE: Final = 95
_STOP: Final = pa.array(sorted(STOP_WORDS), pa.string())

_HASH_BITS: Final = 58
_HASH_MASK: Final = np.uint64((1 << _HASH_BITS) - 1)
_BASE: Final = np.uint64(0x9E3779B97F4A7C15)
_POWERS: Final = np.concatenate(
    [np.ones(1, dtype=np.uint64), np.cumprod(np.full(MAX_TOKEN_CHARS, _BASE, dtype=np.uint64))]
)
_MIX: Final = np.uint64(0xBF58476D1CE4E5B9)

_NO_TERM: Final = -2
"""A known identifier part that stands for no term (a stop word, one character)."""

_stemmer = Stemmer.Stemmer("english")


def binary_parts(array: pa.Array) -> tuple[U8, I64]:
    """The data bytes and offsets (len + 1, from 0) of a binary or string array."""
    if array.type != pa.binary():
        array = array.cast(pa.binary())
    n = len(array)
    buffers = array.buffers()
    offsets = np.frombuffer(buffers[1], dtype=np.int32)[array.offset : array.offset + n + 1]
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None and n else None
    if data is None:
        return np.zeros(0, dtype=np.uint8), np.zeros(n + 1, dtype=np.int64)
    base = int(offsets[0])
    return data[base : int(offsets[-1])], offsets.astype(np.int64) - base


def binary_array(data: U8 | bytes, offsets: I64) -> pa.Array:
    """A binary array over contiguous data with the given offsets (len + 1, from 0)."""
    return pa.Array.from_buffers(
        pa.binary(),
        len(offsets) - 1,
        [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)],
    )


def keys_of(strings: pa.Array) -> U64:
    """The 64-bit key of each string: hash in the low 58 bits, length - 1 above (1..64 bytes)."""
    data, offsets = binary_parts(strings)
    lengths = np.diff(offsets)
    n = len(lengths)
    if not n:
        return np.zeros(0, dtype=np.uint64)
    position = np.arange(len(data), dtype=np.int32)
    position -= np.repeat(offsets[:-1].astype(np.int32), lengths)
    terms = _POWERS[position]
    terms *= data + np.uint64(1)
    h = np.add.reduceat(terms, offsets[:-1])
    h ^= h >> np.uint64(31)
    h *= _MIX
    h ^= h >> np.uint64(29)
    h &= _HASH_MASK
    h |= (lengths.astype(np.uint64) - np.uint64(1)) << np.uint64(_HASH_BITS)
    return h


class KeyIndex:
    """Sorted 64-bit keys -> ids: a large sorted run plus a small one merged into it lazily.

    Queries are sorted first and walk the runs in order, which keeps the binary searches in
    cache; a hash table probed at random (tried) is slower at millions of keys.
    """

    def __init__(self) -> None:
        self._keys = [np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint64)]
        self._ids = [np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)]

    def lookup(self, keys: U64) -> I64:
        """The id of each key, -1 where unknown."""
        out = np.full(len(keys), -1, dtype=np.int64)
        order = np.argsort(keys)
        ordered = keys[order]
        for run_keys, run_ids in zip(self._keys, self._ids, strict=True):
            if not len(run_keys):
                continue
            at = np.minimum(np.searchsorted(run_keys, ordered), len(run_keys) - 1)
            hit = run_keys[at] == ordered
            out[order[hit]] = run_ids[at[hit]]
        return out

    def add(self, keys: U64, ids: I64) -> None:
        """Add keys not yet known (distinct) with their ids."""
        order = np.argsort(keys)
        self._insert(1, keys[order], ids[order])
        if len(self._keys[1]) * 4 > len(self._keys[0]):
            self._insert(0, self._keys[1], self._ids[1])
            self._keys[1] = np.zeros(0, dtype=np.uint64)
            self._ids[1] = np.zeros(0, dtype=np.int64)

    def _insert(self, run: int, keys: U64, ids: I64) -> None:
        at = np.searchsorted(self._keys[run], keys)
        self._keys[run] = np.insert(self._keys[run], at, keys)
        self._ids[run] = np.insert(self._ids[run], at, ids)


class _Growable:
    """An int array that appends in amortised constant time."""

    def __init__(self, dtype: type[np.integer]) -> None:
        self.array: npt.NDArray[np.integer] = np.zeros(1024, dtype=dtype)
        self.n = 0

    def extend(self, values: npt.NDArray[np.integer]) -> None:
        need = self.n + len(values)
        if need > len(self.array):
            self.array = np.resize(self.array, max(need, 2 * len(self.array)))
        self.array[self.n : need] = values
        self.n = need

    def view(self) -> npt.NDArray[np.integer]:
        return self.array[: self.n]


def _identifier_part_starts(b: U8, first: Mask, last: Mask) -> Mask:
    """Where each identifier part starts (see `tokens.identifier_parts`); underscores split."""
    up, lo, dg = _UPPER_T[b], _LOWER_T[b], _DIGIT_T[b]
    us = b == _UNDERSCORE
    prev_up = np.zeros(len(b), dtype=bool)
    prev_lo = np.zeros(len(b), dtype=bool)
    prev_dg = np.zeros(len(b), dtype=bool)
    prev_us = np.zeros(len(b), dtype=bool)
    next_lo = np.zeros(len(b), dtype=bool)
    prev_up[1:], prev_lo[1:], prev_dg[1:], prev_us[1:] = up[:-1], lo[:-1], dg[:-1], us[:-1]
    next_lo[:-1] = lo[1:]
    prev_up[first] = prev_lo[first] = prev_dg[first] = prev_us[first] = False
    next_lo[last] = False
    starts: Mask = ~us & (
        first | prev_us | (up & (prev_lo | prev_dg | (prev_up & next_lo))) | (lo & prev_dg)
    )
    return starts


class Vocabulary:
    """Raw token -> index terms, grown as a build meets new tokens; terms get dense ids."""

    def __init__(self) -> None:
        self._raw = KeyIndex()
        self._terms = KeyIndex()
        self._parts = KeyIndex()
        self.n_raw = 0
        self.n_terms = 0
        self._raw_start = _Growable(np.int64)
        self._raw_len = _Growable(np.int32)
        self._raw_terms = _Growable(np.int32)
        self._term_strings: list[pa.Array] = []

    def terms(self) -> pa.Array:
        """Every term's string (binary), in id order."""
        if not self._term_strings:
            return pa.array([], pa.binary())
        return pa.concat_arrays(self._term_strings)

    def raw_ids(self, tokens: pa.Array) -> I64:
        """Raw ids of distinct tokens (binary), analysing the new ones; -1 for no token.

        A string shorter than MIN_TOKEN_CHARS or longer than MAX_TOKEN_CHARS is no token.
        """
        lengths = np.diff(binary_parts(tokens)[1])
        valid = np.flatnonzero((lengths >= MIN_TOKEN_CHARS) & (lengths <= MAX_TOKEN_CHARS))
        out = np.full(len(lengths), -1, dtype=np.int64)
        if not len(valid):
            return out
        candidates = tokens.take(pa.array(valid))
        keys = keys_of(candidates)
        ids = self._raw.lookup(keys)
        new = np.flatnonzero(ids < 0)
        if len(new):
            fresh = np.arange(self.n_raw, self.n_raw + len(new), dtype=np.int64)
            self._analyse(candidates.take(pa.array(new)))
            self._raw.add(keys[new], fresh)
            self.n_raw += len(new)
            ids[new] = fresh
        out[valid] = ids
        return out

    def expand(self, raw: I64, owner: I64) -> tuple[I64, I64]:
        """Each raw token occurrence's terms: (term ids, owner of each), in occurrence order."""
        lens = self._raw_len.view()[raw].astype(np.int64)
        total = int(lens.sum())
        ends = np.cumsum(lens)
        shift = np.repeat(self._raw_start.view()[raw] - (ends - lens), lens)
        terms = self._raw_terms.view()[shift + np.arange(total, dtype=np.int64)].astype(np.int64)
        return terms, np.repeat(owner, lens)

    def _term_ids(self, strings: pa.Array) -> I64:
        """Ids of terms (binary strings); new terms get the next ids, in order of their keys."""
        encoded = strings.dictionary_encode()
        distinct = encoded.dictionary
        keys = keys_of(distinct)
        ids = self._terms.lookup(keys)
        missing = np.flatnonzero(ids < 0)
        if len(missing):
            fresh = np.arange(self.n_terms, self.n_terms + len(missing), dtype=np.int64)
            self._terms.add(keys[missing], fresh)
            self._term_strings.append(distinct.take(pa.array(missing)))
            self.n_terms += len(missing)
            ids[missing] = fresh
        out: I64 = ids[encoded.indices.to_numpy()]
        return out

    def _part_terms(self, words: pa.Array, word_len: I64) -> I64:
        """The stem term id of each identifier part (binary), -1 for none (stop word, short).

        Parts repeat across tokens and batches: each is stemmed once per build.
        """
        keys = keys_of(words)
        known = self._parts.lookup(keys)
        new = np.flatnonzero(known == -1)
        if len(new):
            fresh = words.take(pa.array(new)).cast(pa.string())
            stems = pa.array(_stemmer.stemWords(fresh.to_pylist()), pa.string())
            stop = pc.or_(pc.is_in(fresh, value_set=_STOP), pc.is_in(stems, value_set=_STOP))
            good = np.flatnonzero(
                (word_len[new] >= MIN_TOKEN_CHARS) & ~stop.to_numpy(zero_copy_only=False)
            )
            ids = np.full(len(new), _NO_TERM, dtype=np.int64)
            if len(good):
                ids[good] = self._term_ids(stems.take(pa.array(good)).cast(pa.binary()))
            self._parts.add(keys[new], ids)
            known[new] = ids
        out: I64 = np.where(known >= 0, known, -1)
        return out

    def _analyse(self, tokens: pa.Array) -> None:
        """Append the terms of new raw tokens (same rules as `tokens.analyze_tokens`)."""
        data, offsets = binary_parts(tokens)
        n = len(offsets) - 1
        lengths = np.diff(offsets)
        starts = offsets[:-1]
        first = np.zeros(len(data), dtype=bool)
        first[starts] = True
        last = np.zeros(len(data), dtype=bool)
        last[offsets[1:] - 1] = True
        us = data == _UNDERSCORE
        part_start = _identifier_part_starts(data, first, last)
        kept = ~us
        part_at = np.flatnonzero(part_start)
        part_id = np.cumsum(part_start, dtype=np.int32)[kept]
        part_id -= 1
        part_len = np.bincount(part_id, minlength=len(part_at))
        part_token = np.searchsorted(starts, part_at, side="right") - 1
        lower = np.frombuffer(data.tobytes().translate(_LOWER_BYTES), dtype=np.uint8)
        parts = binary_array(
            lower[kept], np.concatenate([[0], np.cumsum(part_len)])
        ).dictionary_encode()
        part_of = parts.indices.to_numpy().astype(np.int64)
        words = parts.dictionary
        word_len = np.diff(binary_parts(words)[1])
        stem_ids = self._part_terms(words, word_len)
        long = word_len >= MIN_TOKEN_CHARS
        n_parts = np.bincount(part_token, weights=long[part_of], minlength=n).astype(np.int64)
        # A single part keeps the whole identifier too when they differ but for underscores.
        part_chars = np.bincount(
            part_token, weights=(word_len * long)[part_of], minlength=n
        ).astype(np.int64)
        stripped = (
            lengths
            - _run_length(data, starts, lengths, 1)
            - _run_length(data, offsets[1:] - 1, lengths, -1)
        )
        whole = (n_parts > 1) | ((n_parts == 1) & (stripped != part_chars))
        # Terms: the stems of the parts that are long enough and no stop word, then the whole.
        use = np.flatnonzero(stem_ids[part_of] >= 0)
        wholes = np.flatnonzero(whole)
        whole_ids = self._term_ids(binary_array(lower, offsets).take(pa.array(wholes)))
        owner = np.concatenate([part_token[use], wholes])
        term = np.concatenate([stem_ids[part_of[use]], whole_ids])
        order = np.argsort(owner, kind="stable")
        counts = np.bincount(owner, minlength=n)
        start = self._raw_terms.n + np.concatenate([[0], np.cumsum(counts)[:-1]])
        self._raw_start.extend(start)
        self._raw_len.extend(counts.astype(np.int32))
        self._raw_terms.extend(term[order].astype(np.int32))


def _run_length(data: U8, at: I64, limit: I64, step: int) -> I64:
    """How many underscores run from each position `at` in direction `step` (within limit)."""
    run = np.zeros(len(at), dtype=np.int64)
    todo = np.flatnonzero(data[at] == _UNDERSCORE)
    while len(todo):
        run[todo] += 1
        todo = todo[run[todo] < limit[todo]]
        todo = todo[data[at[todo] + step * run[todo]] == _UNDERSCORE]
    return run


def _ranges(starts: I64, lengths: I64) -> I64:
    """The concatenated index ranges [start, start + length) of each pair."""
    total = int(lengths.sum())
    ends = np.cumsum(lengths)
    return np.repeat(starts - (ends - lengths), lengths) + np.arange(total, dtype=np.int64)


def word_runs(data: bytes) -> tuple[I64, I64, pa.Array]:
    """Every run of word bytes ([A-Za-z0-9_]) in `data`: starts, ends, and the runs as binary."""
    n = len(data)
    word = np.frombuffer(data.translate(_WORD_FLAGS), dtype=np.bool_)
    if not n:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, pa.array([], pa.binary())
    edges = np.flatnonzero(word[1:] != word[:-1]) + 1
    if word[0]:
        edges = np.concatenate([[0], edges])
    if word[-1]:
        edges = np.append(edges, n)
    starts, ends = edges[0::2], edges[1::2]
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(ends - starts, out=offsets[1:])
    return starts, ends, binary_array(data.translate(None, _NON_WORD), offsets)


def term_counts(vocabulary: Vocabulary, data: bytes, text_starts: I64) -> tuple[I64, I64]:
    """(key, count) of each distinct (term, text) pair, key = term << 32 | text.

    The texts are consecutive slices of `data` starting at `text_starts` (ascending); a
    token never spans two (each text starts after a non-word byte, or at 0).
    """
    starts, _, runs = word_runs(data)
    if not len(starts):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    encoded = runs.dictionary_encode()
    raw_of_distinct = vocabulary.raw_ids(encoded.dictionary)
    raw = raw_of_distinct[encoded.indices.to_numpy()]
    real = np.flatnonzero(raw >= 0)
    raw = raw[real]
    first_token = np.searchsorted(starts[real], text_starts)
    per_text = np.diff(np.append(first_token, len(real)))
    text = np.repeat(np.arange(len(text_starts), dtype=np.int64), per_text)
    terms, owners = vocabulary.expand(raw, text)
    if not len(terms):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return count_distinct((terms << 32) | owners)


def count_distinct(values: I64) -> tuple[I64, I64]:
    """The distinct values, ascending, and how often each occurs.

    `np.sort` is a vectorised sort for 64-bit integers; `np.unique` hashes here, which is
    several times slower on millions of values.
    """
    ordered = np.sort(values)
    if not len(ordered):
        return ordered, np.zeros(0, dtype=np.int64)
    first = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    bounds = np.concatenate([[0], first, [len(ordered)]])
    return ordered[bounds[:-1]], np.diff(bounds)
