"""Find graph entities by name: exact, by identifier words, by substring; scored in [0, 1].

The index of names is built once per graph (lowercased names, the words of each name split
at `_`, case changes and digits). A query matches a name exactly (1.0, or 0.95 ignoring
case), ends a qualified name or a path (0.9), holds all the query's words (0.5 to 0.85,
more for a name with fewer other words), or holds the query as a substring (up to 0.5).
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Final

from worker.index.views.graph.model import CommitGraph

_WORDS: Final = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SPLIT: Final = re.compile(r"\.|::|/")


def words(text: str) -> list[str]:
    """The lowercase words of a name or query (`getHTTPResponse` -> get, http, response)."""
    return [w.lower() for w in _WORDS.findall(text)]


def _short(name: str) -> str:
    return _SPLIT.split(name)[-1]


class NameIndex:
    """Lookups over a graph's node names."""

    def __init__(self, graph: CommitGraph) -> None:
        self.graph = graph
        self.short_lower: list[str] = []
        self.by_short: dict[str, list[int]] = defaultdict(list)
        self.by_word: dict[str, list[int]] = defaultdict(list)
        self.word_count: list[int] = []
        for node, name in enumerate(graph.names):
            short = _short(name).lower()
            self.short_lower.append(short)
            self.by_short[short].append(node)
            found = set(words(_short(name)))
            self.word_count.append(len(found))
            for word in found:
                self.by_word[word].append(node)
        self._joined = "\n".join(self.short_lower) + "\n"
        self._starts: list[int] = []
        at = 0
        for short in self.short_lower:
            self._starts.append(at)
            at += len(short) + 1

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
        last = _short(text).lower()
        for node in self.by_short.get(last, []):
            name = graph.names[node]
            if name == text or _short(name) == text:
                offer(node, 1.0)
            elif name.lower() == lower or _short(name).lower() == lower:
                offer(node, 0.95)
            elif name.lower().endswith(lower) or graph.ids[node].lower().endswith(lower):
                offer(node, 0.9)
        query_words = list(dict.fromkeys(words(text)))
        if query_words:
            pools = [set(self.by_word.get(w, ())) for w in query_words]
            found = set.intersection(*pools) if all(pools) else set()
            for node in found:
                extra = self.word_count[node] - len(query_words)
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
            at = self._joined.find(lower)
            seen = 0
            while at >= 0 and seen < 5000:
                node = self._node_at(at)
                offer(node, 0.5 * len(lower) / max(len(self.short_lower[node]), 1))
                at = self._joined.find(lower, self._starts[node] + len(self.short_lower[node]) + 1)
                seen += 1
        return out

    def _node_at(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset) - 1
