"""Runs of blobs the build workers share: how they are taken, and the list they come from."""

from __future__ import annotations

import itertools
import multiprocessing

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.index.store import build_workers
from worker.index.store.build import STEAL_BYTES
from worker.index.store.shared_runs import MIN_STEAL_BYTES, BlobList, take_run


def test_workers_take_runs_that_shrink_towards_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs are STEAL_BYTES while much is left, a share of the rest near the end, and every
    blob is taken exactly once."""
    sizes = [64 << 10] * 1000  # 64 MB of 64 KB blobs
    ends = list(itertools.accumulate(sizes))
    monkeypatch.setitem(build_workers._shared, "next", multiprocessing.get_context().Value("q", 0))
    runs = []
    while True:
        start, stop = take_run(ends, STEAL_BYTES, 2)
        if start >= stop:
            break
        runs.append((start, stop))
    assert [i for a, b in runs for i in range(a, b)] == list(range(1000))
    run_bytes = [sum(sizes[a:b]) for a, b in runs]
    assert run_bytes[0] == STEAL_BYTES
    assert run_bytes[-1] <= MIN_STEAL_BYTES
    assert run_bytes == sorted(run_bytes, reverse=True)


@given(
    st.lists(
        st.tuples(
            st.text(st.characters(blacklist_characters="\0"), min_size=1),
            st.binary(min_size=20, max_size=20),
        ),
        max_size=50,
    )
)
def test_blob_list_gives_back_the_same_paths_and_oids(items: list[tuple[str, bytes]]) -> None:
    """The build workers' packed blob list unpacks to exactly the (path, oid) pairs it got,
    with their sizes, and weighs a blob too large to analyse as nothing."""
    sizes = [(i * 7) % 12 for i in range(len(items))]
    blob_list = BlobList.of(items, sizes, 10)
    assert blob_list.items() == items
    assert blob_list.sizes.tolist() == sizes
    assert blob_list.ends.tolist() == list(itertools.accumulate(s if s <= 10 else 0 for s in sizes))
