"""Find graph entities by name: exact, by identifier words, by substring; scored in [0, 1].

The index of names is built once per graph (lowercased names, the words of each name split
at `_`, case changes and digits). A query matches a name exactly (1.0, or 0.95 ignoring
case), ends a qualified name or a path (0.9), holds all the query's words (0.5 to 0.85,
more for a name with fewer other words), or holds the query as a substring (up to 0.5).

The index is Arrow and numpy arrays built by Arrow's compute kernels, never a Python object
per name: a graph of a million entities (Linux) would otherwise take seconds and hundreds of
megabytes to index on its first search.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from worker.index.views.graph.model import CommitGraph, names_array

_WORDS: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SPLIT: Final = re.compile(r"\.|::|/")
_WORD_BREAKS: Final = (
    (r"([a-z])([A-Z])", r"\1 \2"),
    (r"([A-Z])([A-Z][a-z])", r"\1 \2"),
    (r"([A-Za-z])([0-9])", r"\1 \2"),
    (r"([0-9])([A-Za-z])", r"\1 \2"),
)
"""Spaces that split names into `_WORDS`' words (`getHTTPResponse` -> get HTTP Response),
as RE2 has no lookahead; then anything but an ASCII letter or digit separates words."""
_SUBSTRING_HITS: Final = 5000
_NAMES_PER_PASS: Final = 1 << 16

I64 = npt.NDArray[np.int64]


def words(text: str) -> list[str]:
    """The lowercase words of a name or query (`getHTTPResponse` -> get, http, response)."""
    return [w.lower() for w in _WORDS.findall(text)]


def _short(name: str) -> str:
    return _SPLIT.split(name)[-1]


def _lower(texts: pa.Array) -> pa.Array:
    """Names lowercased, the one way both the index and a query are."""
    return pc.utf8_lower(texts)


def _shorts(names: pa.Array) -> pa.Array:
    """The last part of each name (`Flask.route` -> `route`, `a/b.py` -> `py`), as `_short`."""
    parts = pc.split_pattern_regex(names, _SPLIT.pattern)
    ends = np.asarray(parts.offsets)[1:] - 1
    return pc.list_flatten(parts).take(pa.array(ends))


def _word_lists(shorts: pa.Array) -> pa.ListArray:
    """Each short name's lowercase words, as `words` gives them."""
    spaced = shorts
    for pattern, replacement in _WORD_BREAKS:
        spaced = pc.replace_substring_regex(spaced, pattern, replacement)
    return pc.split_pattern_regex(pc.ascii_lower(spaced), r"[^a-z0-9]+")


def _word_index(shorts: pa.Array) -> tuple[pa.Array, I64, I64]:
    """Every word of the names, and the nodes that have each: word `i`'s nodes, ascending,
    are `nodes[starts[i]:starts[i + 1]]`."""
    n = max(len(shorts), 1)
    parts: list[pa.Array] = []
    owners: list[I64] = []
    # A slice at a time, so that the passes' temporary arrays stay small.
    for first in range(0, len(shorts), _NAMES_PER_PASS):
        lists = _word_lists(shorts.slice(first, _NAMES_PER_PASS))
        flat = pc.list_flatten(lists)
        present = pc.not_equal(pc.binary_length(flat), 0)
        parts.append(flat.filter(present))
        owner = pc.list_parent_indices(lists).to_numpy().astype(np.int64) + first
        owners.append(owner[present.to_numpy(zero_copy_only=False)])
    encoded = pa.chunked_array(parts, pa.string()).dictionary_encode()
    if not encoded.num_chunks:
        return pa.array([], pa.string()), np.zeros(1, np.int64), np.zeros(0, np.int64)
    word_id = np.concatenate([c.indices.to_numpy().astype(np.int64) for c in encoded.iterchunks()])
    # Sorted, then deduplicated: np.unique hashes, several times slower on millions.
    pairs = np.sort(word_id * n + np.concatenate(owners))
    pairs = pairs[np.append(True, pairs[1:] != pairs[:-1])] if len(pairs) else pairs
    words_of = encoded.chunk(encoded.num_chunks - 1).dictionary
    starts = np.searchsorted(pairs // n, np.arange(len(words_of) + 1)).astype(np.int64)
    return words_of, starts, pairs % n


class _Sorted(Sequence[str]):
    """Strings of an Arrow array in the order `order` sorts them, for `bisect`."""

    def __init__(self, values: pa.Array, order: pa.Array) -> None:
        self._values = values.take(order)

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        return str(self._values[i].as_py())


class NameIndex:
    """Lookups over a graph's node names."""

    def __init__(self, graph: CommitGraph) -> None:
        self.graph = graph
        shorts = _shorts(names_array(graph.names))
        short_lower = _lower(shorts)
        n = len(short_lower)
        # Every short name followed by a line break, as bytes: substring search runs over it.
        joined = pc.binary_join_element_wise(short_lower, "\n", "").cast(pa.large_string())
        _, offsets, data = joined.buffers()
        self._starts: I64 = np.frombuffer(offsets, dtype=np.int64)[: n + 1].copy()
        self._joined = data.to_pybytes()[: int(self._starts[-1])] if n else b""
        self._length: I64 = pc.utf8_length(short_lower).to_numpy().astype(np.int64)
        order = pc.sort_indices(short_lower)
        self._by_short_order: I64 = order.to_numpy().astype(np.int64)
        self._by_short_keys = _Sorted(short_lower, order)
        words_of, self._word_start, self._word_nodes = _word_index(shorts)
        self._word_id = {w: i for i, w in enumerate(words_of.to_pylist())}
        self.word_count: I64 = np.bincount(self._word_nodes, minlength=n).astype(np.int64)

    def _nodes_named(self, short_lower: str) -> list[int]:
        """The nodes whose lowercased short name is `short_lower`, in node order."""
        keys = self._by_short_keys
        first = bisect.bisect_left(keys, short_lower)
        last = bisect.bisect_right(keys, short_lower, lo=first)
        return sorted(self._by_short_order[first:last].tolist())

    def _nodes_with_word(self, word: str) -> set[int]:
        found = self._word_id.get(word)
        if found is None:
            return set()
        return set(self._word_nodes[self._word_start[found] : self._word_start[found + 1]].tolist())

    def scores(self, query: str, allowed: Iterable[int] | None) -> dict[int, float]:
        """Every matching node's score."""
        types = None if allowed is None else set(allowed)
        graph = self.graph
        out: dict[int, float] = {}

        def offer(node: int, score: float) -> None:
            if types is not None and int(graph.types[node]) not in types:
                return
            if score > out.get(node, 0.0):
                out[node] = score

        text = query.strip()
        lower = text.lower()
        exact = graph.node(text)
        if exact is not None:
            offer(exact, 1.0)
        last = str(_lower(pa.array([_short(text)], pa.string()))[0].as_py())
        for node in self._nodes_named(last):
            name = graph.names[node]
            if name == text or _short(name) == text:
                offer(node, 1.0)
            elif name.lower() == lower or _short(name).lower() == lower:
                offer(node, 0.95)
            elif name.lower().endswith(lower) or graph.ids[node].lower().endswith(lower):
                offer(node, 0.9)
        query_words = list(dict.fromkeys(words(text)))
        if query_words:
            pools = [self._nodes_with_word(w) for w in query_words]
            found = set.intersection(*pools) if all(pools) else set()
            for node in found:
                extra = int(self.word_count[node]) - len(query_words)
                offer(node, 0.5 + 0.35 / (1 + max(extra, 0)))
            if len(query_words) > 1:
                # Names holding some of the words: below every name holding all of them.
                counts: dict[int, int] = defaultdict(int)
                for pool in pools:
                    for node in pool:
                        counts[node] += 1
                for node, count in counts.items():
                    if count < len(query_words):
                        offer(node, 0.45 * count / len(query_words))
        if len(lower) >= 3 and " " not in lower:
            self._offer_substrings(lower, offer)
        return out

    def _offer_substrings(self, lower: str, offer: Callable[[int, float], None]) -> None:
        """Offer the first nodes whose lowercased short name holds `lower`."""
        needle = str(_lower(pa.array([lower], pa.string()))[0].as_py()).encode()
        at = self._joined.find(needle)
        seen = 0
        while at >= 0 and seen < _SUBSTRING_HITS:
            node = int(np.searchsorted(self._starts, at, side="right")) - 1
            offer(node, 0.5 * len(lower) / max(int(self._length[node]), 1))
            at = self._joined.find(needle, int(self._starts[node + 1]))
            seen += 1
