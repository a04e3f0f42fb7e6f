"""A commit's chunks numbered through its segments: live only where the commit holds the blob."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tests.worker.index.conftest import RepoFactory
from worker.index.store.index_store import build_in_memory
from worker.index.views.commit_chunks import CommitChunks

FIRST = {
    "pkg/alpha.py": b"def alpha():\n    return widget(1)\n",
    "pkg/beta.py": b"def beta():\n    return widget(2)\n",
}
SECOND = {
    "pkg/alpha.py": b"def alpha():\n    return widget(1)\n",
    "pkg/gamma.py": b"def gamma():\n    return 3\n\n\ndef gamma_twice():\n    return 6\n",
}


def _chunks(make_repo: Callable[[str], RepoFactory]) -> CommitChunks:
    """The second commit's chunks, its segments the first commit's plus one of its own."""
    factory = make_repo("numbering")
    first, second = factory.commit(FIRST), factory.commit(SECOND)

    def no_deadline(_done: int, _total: int) -> None:
        return None

    stored, _, _ = build_in_memory(
        factory.repo, first, [], max_blob_bytes=1 << 20, check_deadline=no_deadline
    )
    segments, tables, _ = build_in_memory(
        factory.repo, second, stored, max_blob_bytes=1 << 20, check_deadline=no_deadline
    )
    assert len(segments) == 2
    return CommitChunks.of(segments, tables)


def test_global_ids_run_through_the_segments(make_repo: Callable[[str], RepoFactory]) -> None:
    """Each segment's chunks and blobs follow the previous segment's, and every path's
    global blob is the blob of its chunks."""
    at = _chunks(make_repo)
    assert at.chunk_off.tolist() == [0, at.segments[0].n_chunks, len(at.chunk_gblob)]
    assert at.blob_off[-1] == sum(seg.n_blobs for seg in at.segments)
    for row in range(at.paths.n_paths):
        chunks, _ = at.file_chunks(row, np.zeros(len(at.chunk_gblob)))
        seg = int(at.paths.segment[row])
        assert at.chunk_gblob[int(at.chunk_off[seg]) + chunks[0]] == at.path_gblob[row]


def test_a_dropped_blobs_chunks_are_not_live_and_define_nothing(
    make_repo: Callable[[str], RepoFactory],
) -> None:
    """The reused segment still holds beta.py's blob, which the commit dropped: its chunk is
    not live, so `beta` is defined nowhere; `gamma` is a word of two live definitions."""
    at = _chunks(make_repo)
    assert not at.all_live[0]
    assert at.all_live[1]
    assert len(at.defining_chunks("beta")) == 0
    (alpha,) = at.defining_chunks("alpha").tolist()
    assert at.chunk_gblob[alpha] in at.path_gblob
    assert len(at.defining_chunks("gamma")) == 2


def test_a_files_chunks_come_best_first(make_repo: Callable[[str], RepoFactory]) -> None:
    """A file's scoring chunks come best first with their scores; with none scoring, its
    first chunk comes with 0."""
    at = _chunks(make_repo)
    row = [at.paths.path(r) for r in range(at.paths.n_paths)].index("pkg/gamma.py")
    seg = int(at.paths.segment[row])
    scores = np.zeros(len(at.chunk_gblob))
    assert at.file_chunks(row, scores)[1] == [0.0]
    first = int(at.segments[seg].blob_chunk_start[int(at.paths.blob[row])])
    base = int(at.chunk_off[seg])
    scores[base + first] = 1.0
    scores[base + first + 1] = 2.0
    assert at.file_chunks(row, scores) == ([first + 1, first], [2.0, 1.0])


def test_a_terms_live_postings_count_only_the_commits_chunks(
    make_repo: Callable[[str], RepoFactory],
) -> None:
    """`widget` is in beta.py's chunk too, which the commit dropped: its postings in the
    reused segment count alpha.py's alone, at every query."""
    at = _chunks(make_repo)
    old, new = at.segments
    start, count = old.lookup("widget") or (0, 0)
    assert count == 2
    assert new.lookup("widget") is None
    for _ in range(2):
        assert at.live_postings(0, start, count) == 1
