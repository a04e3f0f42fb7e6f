"""A pinned revision's graph is built from the mirrored head's, when that is stored."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from structlog.testing import capture_logs

from tests.support.graphs import build_graph_cache
from worker.capabilities.graph.graphs import GraphStore
from worker.index import IndexStore
from worker.index.views.graph.build import build_graph
from worker.licenses import LicenseCache
from worker.repos.catalog import RepoCatalog


def test_a_revision_near_the_head_is_carried_from_the_heads_graph(tmp_path: Path) -> None:
    """The shop's first commit, one change behind the mirrored head, resolves again only what
    the change may touch, and its graph is the whole build's."""
    shop = build_graph_cache(tmp_path)
    catalog = RepoCatalog(shop.cache.config, shop.cache.mirror.layout)
    pinned = catalog.resolve("acme/shop", shop.first)
    indexes = IndexStore(shop.cache.root)
    with capture_logs() as logs:
        graph = (
            GraphStore(indexes, LicenseCache()).open(pinned, deadline=time.monotonic() + 60).graph
        )
    (built,) = [e for e in logs if e["event"] == "graph.built"]
    assert 0 < built["resolved"] < built["files"]
    index = indexes.open("acme/shop", pinned.repo, shop.first, deadline=time.monotonic() + 60)
    whole = build_graph(index).graph
    assert list(graph.ids) == list(whole.ids)
    for column in ("source", "target", "relation"):
        assert np.array_equal(getattr(graph.edges, column), getattr(whole.edges, column))
