"""A commit's view carried from a stored one: the same tables as worked out whole."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from worker.index.store.carried_view import carried_commit_tables, kept_rows
from worker.index.store.commit_view import build_commit_tables, path_terms

_PARTS = st.sampled_from(
    ["src", "auth", "tokens", "HTTPServer", "get_user", "README", "x", "café", "日本", "__init__"]
)
_PATH = st.builds(
    lambda dirs, name, ext: "/".join([*dirs, name + ext]),
    st.lists(_PARTS, max_size=3),
    _PARTS,
    st.sampled_from(["", ".py", ".c", ".tar.gz"]),
)
_OIDS = st.binary(min_size=20, max_size=20)


def _place(oid: bytes) -> tuple[int, int]:
    """Where a blob is, in segments numbered as the whole build numbers them."""
    return oid[0] % 3, int.from_bytes(oid[1:4], "big")


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(_PATH, _OIDS, max_size=25),
    st.dictionaries(_PATH, st.none() | _OIDS, max_size=10),
    st.sets(st.integers(0, 255), max_size=60),
)
def test_a_view_carried_over_changed_paths_is_the_view_worked_out_whole(
    before: dict[str, bytes], change: dict[str, bytes | None], unindexed: set[int]
) -> None:
    """Paths gone, changed, come, and blobs that are not indexed: the carried view has the
    tables the new tree's entries give, row for row."""
    after = {**before, **change}
    after = {path: oid for path, oid in after.items() if oid is not None}

    def located(entries: dict[str, bytes]) -> dict[bytes, tuple[int, int]]:
        return {oid: _place(oid) for oid in entries.values() if oid[0] not in unindexed}

    # The base's segments are numbered one up: the carried view maps them back.
    base_locations = {oid: (s + 1, b) for oid, (s, b) in located(before).items()}
    base = build_commit_tables(sorted(before.items()), base_locations)
    gone = sorted(p for p in change if p in before)
    came = sorted(
        (p, oid) for p, oid in change.items() if oid is not None and oid[0] not in unindexed
    )
    places = np.array([_place(oid) for _, oid in came], dtype=np.int32).reshape(-1, 2)
    segment_map = np.array([-1, 0, 1, 2], dtype=np.int64)
    got = carried_commit_tables(base, kept_rows(base, gone), path_terms(came), places, segment_map)
    want = build_commit_tables(sorted(after.items()), located(after))
    for name in ("paths", "path_terms", "path_postings"):
        assert getattr(got, name).equals(getattr(want, name)), name
