"""A pinned revision's graph is built from the mirrored head's, when that is stored."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from structlog.testing import capture_logs

from tests.support.graphs import build_graph_cache
from worker.capabilities.graph.graphs import GraphStore
from worker.errors import Timeout
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


@pytest.mark.parametrize(("lru_size", "reads"), [(1, 3), (2, 2)])
def test_a_graph_is_kept_as_long_as_its_index_is_open(
    tmp_path: Path, lru_size: int, reads: int
) -> None:
    """The index store's LRU bounds graphs too: a graph is read again only after its index
    was let go for another commit's."""
    shop = build_graph_cache(tmp_path)
    catalog = RepoCatalog(shop.cache.config, shop.cache.mirror.layout)
    head, first = catalog.resolve("acme/shop"), catalog.resolve("acme/shop", shop.first)
    store = GraphStore(IndexStore(shop.cache.root, lru_size=lru_size), LicenseCache())
    deadline = time.monotonic() + 60
    store.open(head, deadline=deadline)
    store.open(head, deadline=deadline)
    assert store.builds == 1
    store.open(first, deadline=deadline)
    gc.collect()
    store.open(head, deadline=deadline)
    assert store.builds == reads


def test_a_graph_not_built_in_time_is_a_timeout_saying_where_it_stopped(tmp_path: Path) -> None:
    """Past the deadline a graph build is a Timeout naming the commit and stage; nothing of it
    is kept, so a request with time builds the graph."""
    shop = build_graph_cache(tmp_path)
    pinned = RepoCatalog(shop.cache.config, shop.cache.mirror.layout).resolve(
        "acme/shop", shop.first
    )
    indexes = IndexStore(shop.cache.root)
    indexes.open("acme/shop", pinned.repo, shop.first, deadline=time.monotonic() + 60)
    store = GraphStore(indexes, LicenseCache())
    with pytest.raises(Timeout) as caught:
        store.open(pinned, deadline=time.monotonic() - 1)
    assert caught.value.details["commit"] == shop.first
    assert caught.value.details["stage"].startswith("graph")
    assert store.open(pinned, deadline=time.monotonic() + 60).graph.n_nodes > 0


def test_a_build_stops_wherever_its_deadline_passes(tmp_path: Path) -> None:
    """A build asks its deadline between stages: past it at any of them, the build stops."""
    shop = build_graph_cache(tmp_path)
    head = RepoCatalog(shop.cache.config, shop.cache.mirror.layout).resolve("acme/shop")
    index = IndexStore(shop.cache.root).open(
        "acme/shop", head.repo, head.commit, deadline=time.monotonic() + 60
    )
    asked: list[str] = []
    build_graph(index, check_deadline=asked.append)
    assert len(asked) >= 4

    for passed_at in range(len(asked)):
        checks = iter(range(len(asked)))

        def check(stage: str, passed_at: int = passed_at, checks: Iterator[int] = checks) -> None:
            if next(checks) == passed_at:
                raise Timeout(f"past the deadline at {stage}")

        with pytest.raises(Timeout):
            build_graph(index, check_deadline=check)
