"""Pruning an index: the newest published commits stay with their segments, the rest go."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.worker.index.conftest import RepoFactory
from worker.index import IndexStore, build_commit_index
from worker.index.store.retention import prune_index, published_commits
from worker.index.views.graph.build import build_graph

REPO_ID = "acme/widgets"
BASE = {
    "src/router.py": b"def dispatch_request(path):\n    return lookup_handler(path)\n",
    "src/handlers.py": b"def lookup_handler(path):\n    return path\n",
}


@dataclass(frozen=True)
class History:
    """Four published commits, oldest first; the second holds a file no later one does."""

    factory: RepoFactory
    cache: Path
    commits: list[str]

    @property
    def index_dir(self) -> Path:
        return self.cache / "index" / "acme" / "widgets"

    def segments(self, commit: str) -> set[str]:
        manifest = json.loads((self.index_dir / "commits" / commit / "manifest.json").read_text())
        return set(manifest["segments"])

    def stored(self) -> set[str]:
        return {p.name for p in (self.index_dir / "segments").iterdir()}


@pytest.fixture
def history(make_repo: Callable[[str], RepoFactory], tmp_path: Path) -> History:
    """Each commit indexed in turn; manifests dated a minute apart, in commit order."""
    factory = make_repo("widgets")
    snapshots = [
        BASE,
        {**BASE, "src/retired.py": b"def retired_feature_flag():\n    return False\n"},
        {**BASE, "src/billing.py": b"def charge_invoice(total):\n    return total\n"},
        {
            **BASE,
            "src/billing.py": b"def charge_invoice(total):\n    return total\n",
            "src/refunds.py": b"def refund_invoice(total):\n    return -total\n",
        },
    ]
    cache = tmp_path / "cache"
    commits = []
    for i, files in enumerate(snapshots):
        commits.append(factory.commit(files, message=f"commit {i}"))
        commit_dir = build_commit_index(cache, REPO_ID, factory.repo, commits[-1])
        stamp = 1_700_000_000 + 60 * i
        os.utime(commit_dir / "manifest.json", (stamp, stamp))
    return History(factory, cache, commits)


def test_the_newest_commits_stay_with_their_segments(history: History) -> None:
    """Keeping two removes the two older commits and the segment only those used; the kept
    commits open as published, with every file they hold."""
    first, retired, billing, refunds = history.commits
    only_retired = history.segments(retired) - history.segments(billing) - history.segments(refunds)
    assert only_retired
    pruned = prune_index(history.index_dir, keep=2)
    assert pruned.commits == (first, retired)
    assert set(pruned.segments) == only_retired
    assert pruned.bytes > 0
    assert published_commits(history.index_dir) == [refunds, billing]
    assert history.stored() == history.segments(billing) | history.segments(refunds)
    assert not [p for p in history.index_dir.rglob(".*")]
    store = IndexStore(history.cache)
    index = store.open(REPO_ID, history.factory.repo, refunds, deadline=time.monotonic() + 60)
    assert store.on_demand_builds == 0
    assert next(iter(index.ranked("refund_invoice"))).path == "src/refunds.py"
    assert next(iter(index.ranked("dispatch_request"))).path == "src/router.py"


def test_a_removed_commit_is_built_on_demand(history: History) -> None:
    """A request pinned to a pruned commit finds it unpublished and builds it in the worker."""
    retired = history.commits[1]
    prune_index(history.index_dir, keep=2)
    store = IndexStore(history.cache)
    assert not store.stored(REPO_ID, retired)
    index = store.open(REPO_ID, history.factory.repo, retired, deadline=time.monotonic() + 60)
    assert store.on_demand_builds == 1
    assert next(iter(index.ranked("retired_feature_flag"))).path == "src/retired.py"


def test_an_index_opened_before_its_commit_was_removed_still_reads(history: History) -> None:
    """A worker that opened a commit before it was pruned keeps answering from it, and its
    graph builds from segments whose files are gone, as before."""
    retired = history.commits[1]
    store = IndexStore(history.cache)
    index = store.open(REPO_ID, history.factory.repo, retired, deadline=time.monotonic() + 60)
    graph_before = build_graph(index).graph
    prune_index(history.index_dir, keep=2)
    assert not (history.index_dir / "commits" / retired).exists()
    assert next(iter(index.ranked("retired_feature_flag"))).path == "src/retired.py"
    graph_after = build_graph(index).graph
    assert list(graph_after.names) == list(graph_before.names)
    assert graph_after.n_nodes == graph_before.n_nodes


def test_a_named_commit_stays_however_old(history: History) -> None:
    """A commit named to keep (the mirror names its head) stays beside the newest."""
    first, _, _, refunds = history.commits
    pruned = prune_index(history.index_dir, keep=1, also=(first,))
    assert set(published_commits(history.index_dir)) == {first, refunds}
    assert len(pruned.commits) == 2
    assert history.stored() == history.segments(first) | history.segments(refunds)


def test_leftovers_of_unfinished_builds_go(history: History) -> None:
    """Staged directories a build never renamed into place are removed with the rest."""
    for parent in ("commits", "segments"):
        staged = history.index_dir / parent / f".{'0' * 40}.abc123"
        staged.mkdir()
        (staged / "part.arrow").write_bytes(b"x" * 100)
    pruned = prune_index(history.index_dir, keep=4)
    assert (pruned.commits, pruned.segments, pruned.leftovers) == ((), (), 2)
    assert pruned.bytes == 200
    assert not [p for p in history.index_dir.rglob(".*")]


def test_an_unreadable_kept_manifest_keeps_every_segment(history: History) -> None:
    """When a kept commit's manifest cannot be read, no segment is taken for unused."""
    before = history.stored()
    (history.index_dir / "commits" / history.commits[-1] / "manifest.json").write_text("{")
    pruned = prune_index(history.index_dir, keep=2)
    assert len(pruned.commits) == 2
    assert pruned.segments == ()
    assert history.stored() == before


def test_keeping_none_is_refused(history: History) -> None:
    """At least one commit is kept: asking for none is an error, and nothing is removed."""
    with pytest.raises(ValueError, match="at least 1"):
        prune_index(history.index_dir, keep=0)
    assert len(published_commits(history.index_dir)) == 4


def test_a_directory_without_its_manifest_is_not_published(history: History) -> None:
    """A commit directory whose manifest is gone (one being removed) is neither listed nor
    counted among those kept."""
    refunds = history.commits[-1]
    (history.index_dir / "commits" / refunds / "manifest.json").unlink()
    assert refunds not in published_commits(history.index_dir)
    assert published_commits(history.index_dir)[0] == history.commits[2]
