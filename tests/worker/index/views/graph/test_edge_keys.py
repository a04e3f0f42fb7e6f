"""Edge keys: each edge's key gives the edge back, and keys sort as the edges do."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import given
from hypothesis import strategies as st

from worker.index.views.graph.edge_keys import edge_keys, edges_of
from worker.index.views.graph.model import Edges

SOURCES = st.integers(0, (1 << 30) - 1)
TARGETS = st.integers(0, (1 << 31) - 1)
EDGES = st.lists(st.tuples(SOURCES, TARGETS, st.integers(0, 3)), max_size=50)


def _listed(got: Edges) -> list[tuple[int, int, int]]:
    return list(zip(got.source.tolist(), got.target.tolist(), got.relation.tolist(), strict=True))


def _keys(edges: list[tuple[int, int, int]]) -> npt.NDArray[np.int64]:
    columns = np.asarray(edges, dtype=np.int64).reshape(-1, 3)
    return edge_keys(columns[:, 0], columns[:, 1], columns[:, 2])


@given(EDGES)
def test_keys_give_their_edges_back(edges: list[tuple[int, int, int]]) -> None:
    """Sources below 2**30, targets below 2**31 and the four relations survive the round trip."""
    assert _listed(edges_of(_keys(edges))) == edges


@given(EDGES)
def test_sorted_keys_are_the_edges_sorted(edges: list[tuple[int, int, int]]) -> None:
    """Sorting keys orders by source, then target, then relation; equal edges, equal keys."""
    assert _listed(edges_of(np.unique(_keys(edges)))) == sorted(set(edges))
