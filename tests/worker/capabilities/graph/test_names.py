"""Tests of finding graph entities by name: the array index scores as its rules say."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.capabilities.graph.names import NameIndex, words
from worker.index.views.graph.model import CommitGraph, Edges


def graph_of(names: list[str]) -> CommitGraph:
    """A graph of functions named `names` (ids `f.py:<name>#<row>`), no edges."""
    n = len(names)
    return CommitGraph(
        ids=[f"f.py:{name}#{row}" for row, name in enumerate(names)],
        names=names,
        types=np.full(n, 2, dtype=np.uint8),
        paths=["f.py"] * n,
        start_line=np.ones(n, dtype=np.int32),
        end_line=np.ones(n, dtype=np.int32),
        edges=Edges(
            source=np.zeros(0, np.int64),
            target=np.zeros(0, np.int64),
            relation=np.zeros(0, np.uint8),
        ),
    )


def short(name: str) -> str:
    return name.replace("::", ".").replace("/", ".").split(".")[-1]


def expected_scores(names: list[str], query: str) -> dict[int, float]:
    """The module's rules, one name at a time."""
    out: dict[int, float] = {}

    def offer(node: int, score: float) -> None:
        out[node] = max(out.get(node, 0.0), score)

    text = query.strip()
    lower = text.lower()
    for node, name in enumerate(names):
        if short(name).lower() == short(text).lower():
            if name == text or short(name) == text:
                offer(node, 1.0)
            elif name.lower() == lower or short(name).lower() == lower:
                offer(node, 0.95)
            elif name.lower().endswith(lower) or f"f.py:{name}#{node}".lower().endswith(lower):
                offer(node, 0.9)
    wanted = list(dict.fromkeys(words(text)))
    held: dict[int, int] = defaultdict(int)
    for node, name in enumerate(names):
        own = set(words(short(name)))
        held[node] = sum(w in own for w in wanted)
        if wanted and held[node] == len(wanted):
            offer(node, 0.5 + 0.35 / (1 + max(len(own) - len(wanted), 0)))
        elif len(wanted) > 1 and held[node]:
            offer(node, 0.45 * held[node] / len(wanted))
    if len(lower) >= 3 and " " not in lower:
        for node, name in enumerate(names):
            if lower in short(name).lower():
                offer(node, 0.5 * len(lower) / max(len(short(name)), 1))
    return out


def test_a_name_is_found_whole_by_its_words_and_by_a_part() -> None:
    """Exact names score 1.0, other case 0.95, all words 0.5-0.85, a substring up to 0.5."""
    index = NameIndex(graph_of(["getHTTPResponse", "Client.get_http_response", "responder"]))
    assert index.scores("getHTTPResponse", None)[0] == 1.0
    assert index.scores("gethttpresponse", None)[0] == 0.95
    by_words = index.scores("http response", None)
    assert by_words[0] == by_words[1] == 0.5 + 0.35 / 2
    assert index.scores("respond", None) == {2: 0.5 * 7 / 9}
    assert index.scores("x", [3]) == {}


def test_an_empty_graph_finds_nothing() -> None:
    """No names, no matches, and no failure."""
    assert NameIndex(graph_of([])).scores("anything here", None) == {}


name_text = st.text(alphabet="aAbBzZ09_.:/é", min_size=0, max_size=10)


@settings(max_examples=200, deadline=None)
@given(st.lists(name_text, min_size=1, max_size=30), st.data())
def test_the_index_scores_as_its_rules_say(names: list[str], data: st.DataObject) -> None:
    """For any names and a query drawn from them or made up, the scores the rules give."""
    query = data.draw(
        st.one_of(
            st.sampled_from(names),
            st.sampled_from(names).map(lambda name: name[1:5]),
            name_text,
            st.lists(name_text, max_size=3).map(" ".join),
        )
    )
    assert NameIndex(graph_of(names)).scores(query, None) == expected_scores(names, query)
