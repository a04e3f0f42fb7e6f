"""graph.search ranks by score, ties in id order, whatever it leaves unnamed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worker.capabilities.graph.queries import best_scored

_IDS = [f"pkg/m{i % 7}.py:f{i}" for i in range(40)]


@given(
    scores=st.dictionaries(
        st.integers(0, len(_IDS) - 1), st.sampled_from([0.225, 0.5, 0.85, 0.9, 1.0]), max_size=40
    ),
    limit=st.integers(1, 12),
)
def test_the_best_are_those_a_whole_sort_puts_first(scores: dict[int, float], limit: int) -> None:
    """The best `limit` nodes, many tied, are the first of every scored node sorted by score,
    then id."""
    whole = sorted(scores.items(), key=lambda item: (-item[1], _IDS[item[0]]))
    assert best_scored(scores, limit, _IDS) == whole[:limit]
