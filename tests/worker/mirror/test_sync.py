"""Tests of the mirror: full-history bare clones, fetches, default branches, atomic publication."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pygit2
import pytest
from structlog.testing import capture_logs

from tests.support.cache import SAMPLE_FILES
from tests.support.gitrepos import commit, init_repo
from tests.support.processes import last_line_printed
from tests.worker.licenses.conftest import license_text
from worker.config import ConfigError
from worker.errors import SyncError
from worker.index import IndexStore
from worker.index.store.graph_tables import read_graph
from worker.index.store.history import current_generation, read_records
from worker.index.views.graph.build import build_graph
from worker.licenses.identify import TextLicense
from worker.mirror.sync import Mirror, SyncResult
from worker.repos.catalog import RepoCatalog
from worker.repos.layout import CacheLayout, IdentifiedLicenses


def source_repo(path: Path, *, default: str = "main") -> pygit2.Repository:
    repo = init_repo(path)
    first = commit(repo, SAMPLE_FILES, message="first")
    commit(repo, {"sample/extra.py": "def extra():\n    return 1\n"}, message="second")
    repo.references.create("refs/tags/v1", pygit2.Oid(hex=first))
    repo.references.create("refs/heads/feature", pygit2.Oid(hex=first))
    if default != "main":
        repo.branches.local["main"].rename(default)
        repo.set_head(f"refs/heads/{default}")
    return repo


def synced_mirror(tmp_path: Path) -> tuple[Mirror, SyncResult]:
    """A mirror of the source repository at tmp_path/src as acme/tool, after its first sync."""
    mirror = Mirror(tmp_path / "cache", tmp_path / "cache" / "repo-reader.toml")
    mirror.add("acme/tool", str(tmp_path / "src"))
    (result,) = mirror.sync()
    return mirror, result


def test_sync_mirrors_full_history(tmp_path: Path) -> None:
    """A first sync makes a bare mirror of every branch, tag and commit, publishes state, and
    the head's index with its entity graph."""
    source = source_repo(tmp_path / "src", default="trunk")
    messages: list[str] = []
    mirror = Mirror(
        tmp_path / "cache",
        tmp_path / "cache" / "repo-reader.toml",
        progress=lambda _n, m: messages.append(m),
    )
    mirror.add("acme/tool", str(tmp_path / "src"))
    (result,) = mirror.sync()
    layout = CacheLayout(tmp_path / "cache")
    mirrored = pygit2.Repository(str(layout.repo_dir("acme/tool")))
    assert mirrored.is_bare
    assert set(mirrored.references) == {"refs/heads/trunk", "refs/heads/feature", "refs/tags/v1"}
    head = str(source.head.target)
    assert result.head == head
    assert result.previous_head is None
    assert len(list(mirrored.walk(mirrored[head].id))) == 2
    state = layout.read_state("acme/tool")
    assert state is not None
    assert (state.default_ref, state.head, state.indexed_commit, state.license) == (
        "refs/heads/trunk",
        head,
        head,
        "MIT",
    )
    assert any(m.startswith("receiving objects") for m in messages)
    assert any(m.startswith("indexing") for m in messages)
    graph = read_graph(tmp_path / "cache" / "index" / "acme" / "tool" / "commits" / head)
    assert graph is not None
    assert graph.n_nodes > 0


def test_a_new_head_carries_the_graph_of_the_last(tmp_path: Path) -> None:
    """Syncing a new head resolves again only what its commit may change, and stores the
    graph a whole build gives."""
    source = source_repo(tmp_path / "src")
    mirror, _ = synced_mirror(tmp_path)
    commit(source, {"sample/extra.py": "def extra():\n    return 2\n"}, message="third")
    with capture_logs() as logs:
        (result,) = mirror.sync()
    (built,) = [e for e in logs if e["event"] == "mirror.graph_built"]
    assert 0 < built["resolved"] < built["files"]
    cache = tmp_path / "cache"
    stored = read_graph(cache / "index" / "acme" / "tool" / "commits" / result.head)
    assert stored is not None
    mirrored = pygit2.Repository(str(CacheLayout(cache).repo_dir("acme/tool")))
    index = IndexStore(cache).open(
        "acme/tool", mirrored, result.head, deadline=time.monotonic() + 60
    )
    whole = build_graph(index).graph
    assert list(stored.names) == list(whole.names)
    for column in ("source", "target", "relation"):
        assert np.array_equal(getattr(stored.edges, column), getattr(whole.edges, column))


def test_a_sync_without_a_new_commit_leaves_the_stored_graph_alone(tmp_path: Path) -> None:
    """The head's graph is built once: a later sync with nothing new neither builds it again
    nor writes over the files workers read."""
    source_repo(tmp_path / "src")
    mirror, first = synced_mirror(tmp_path)
    commit_dir = tmp_path / "cache" / "index" / "acme" / "tool" / "commits" / first.head
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in commit_dir.iterdir()}
    with capture_logs() as logs:
        (again,) = mirror.sync()
    assert again.head == first.head
    assert not [e for e in logs if e["event"] == "mirror.graph_built"]
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in commit_dir.iterdir()}
    assert after == before


def test_a_stored_graph_of_another_format_is_replaced_in_one_publish(tmp_path: Path) -> None:
    """A sync finding the head's graph of another format publishes the commit again with a
    new graph; a worker that mapped the old files keeps reading them unchanged."""
    source_repo(tmp_path / "src")
    mirror, first = synced_mirror(tmp_path)
    commit_dir = tmp_path / "cache" / "index" / "acme" / "tool" / "commits" / first.head
    meta = json.loads((commit_dir / "graph.json").read_text())
    (commit_dir / "graph.json").write_text(json.dumps({**meta, "format_version": 0}))
    assert read_graph(commit_dir) is None
    with (commit_dir / "graph_nodes.arrow").open("rb") as mapped:
        old_nodes = mapped.read()
        mapped.seek(0)
        with capture_logs() as logs:
            mirror.sync()
        assert mapped.read() == old_nodes
        # The old file was replaced whole, not written over: no path leads to it any more.
        assert os.fstat(mapped.fileno()).st_nlink == 0
    assert [e["commit"] for e in logs if e["event"] == "mirror.graph_built"] == [first.head]
    graph = read_graph(commit_dir)
    assert graph is not None
    assert graph.n_nodes > 0


def test_resync_fetches_and_prunes(tmp_path: Path) -> None:
    """A later sync brings new commits, moves the published head and drops deleted branches."""
    source = source_repo(tmp_path / "src")
    mirror, first = synced_mirror(tmp_path)
    newer = commit(source, {"sample/third.py": "x = 3\n"}, message="third")
    source.references.delete("refs/heads/feature")
    (second,) = mirror.sync(["acme/tool"])
    assert (second.previous_head, second.head) == (first.head, newer)
    mirrored = pygit2.Repository(str(CacheLayout(tmp_path / "cache").repo_dir("acme/tool")))
    assert "refs/heads/feature" not in set(mirrored.references)
    state = CacheLayout(tmp_path / "cache").read_state("acme/tool")
    assert state is not None
    assert state.head == newer


def test_failed_first_sync_leaves_nothing(tmp_path: Path) -> None:
    """A clone that fails leaves no repository, no temporary directory and no state; a path
    that does not exist is not even registered."""
    mirror = Mirror(tmp_path / "cache", tmp_path / "cache" / "repo-reader.toml")
    with pytest.raises(SyncError, match="does not exist"):
        mirror.add("acme/none", str(tmp_path / "does-not-exist"))
    assert mirror.config.repo("acme/none") is None
    (tmp_path / "not-a-repository").mkdir()
    mirror.add("acme/ghost", str(tmp_path / "not-a-repository"))
    with pytest.raises(SyncError, match="acme/ghost"):
        mirror.sync()
    owner_dir = tmp_path / "cache" / "repos" / "acme"
    assert not owner_dir.exists() or list(owner_dir.iterdir()) == []
    assert CacheLayout(tmp_path / "cache").read_state("acme/ghost") is None


def test_failed_resync_keeps_the_published_state(tmp_path: Path) -> None:
    """When a fetch fails, readers keep seeing the last good sync."""
    source_repo(tmp_path / "src")
    mirror = Mirror(tmp_path / "cache", tmp_path / "cache" / "repo-reader.toml")
    mirror.add("acme/tool", str(tmp_path / "src"))
    mirror.sync()
    before = CacheLayout(tmp_path / "cache").state_file("acme/tool").read_bytes()
    (tmp_path / "src").rename(tmp_path / "moved")
    with pytest.raises(SyncError):
        mirror.sync()
    assert CacheLayout(tmp_path / "cache").state_file("acme/tool").read_bytes() == before


def test_an_error_while_analysing_fails_that_sync_alone(tmp_path: Path) -> None:
    """An error no check foresaw while indexing (here the index directory became a file) fails
    that repository's sync with its name; its last good state stays, the others sync."""
    source = source_repo(tmp_path / "src")
    source_repo(tmp_path / "other")
    mirror = Mirror(tmp_path / "cache", tmp_path / "cache" / "repo-reader.toml")
    mirror.add("acme/tool", str(tmp_path / "src"))
    mirror.add("acme/other", str(tmp_path / "other"))
    mirror.sync()
    layout = CacheLayout(tmp_path / "cache")
    before = layout.state_file("acme/tool").read_bytes()
    commit(source, {"sample/later.py": "LATER = 1\n"}, message="later")
    shutil.rmtree(layout.index_dir("acme/tool"))
    layout.index_dir("acme/tool").write_text("not a directory\n")
    mirror.add("acme/fresh", str(tmp_path / "other"))
    layout.index_dir("acme/fresh").parent.mkdir(parents=True, exist_ok=True)
    layout.index_dir("acme/fresh").write_text("not a directory\n")
    failed, other, first = mirror.sync_each()
    assert isinstance(failed, SyncError)
    assert str(failed).startswith("acme/tool: analysing ")
    assert str(failed).endswith("; the previous sync stays published")
    assert isinstance(other, SyncResult)
    assert layout.state_file("acme/tool").read_bytes() == before
    assert isinstance(first, SyncError)
    assert "previous" not in str(first)
    assert layout.read_state("acme/fresh") is None


def test_add_appends_to_the_config_and_refuses_duplicates(tmp_path: Path) -> None:
    """Registering keeps the existing config text; a second registration of a name is refused."""
    config = tmp_path / "repo-reader.toml"
    config.write_text("# ceilings chosen by ops\n[limits]\nmax_repos = 40\n")
    mirror = Mirror(tmp_path / "cache", config)
    mirror.add("acme/tool", "https://example.invalid/acme/tool.git")
    text = config.read_text()
    assert text.startswith("# ceilings chosen by ops\n[limits]\nmax_repos = 40\n")
    assert Mirror(tmp_path / "cache", config).config.repo("acme/tool") is not None
    with pytest.raises(ConfigError, match="already registered"):
        mirror.add("ACME/tool", "/elsewhere")
    with pytest.raises(SyncError, match="not registered"):
        mirror.sync(["acme/other"])


def test_repositories_of_another_owner_are_mirrored_and_served(tmp_path: Path) -> None:
    """A source and a cache written by another uid still open (the container case)."""
    source_repo(tmp_path / "src")
    for path in [tmp_path / "src", *(tmp_path / "src").rglob("*")]:
        os.chown(path, 4242, 4242, follow_symlinks=False)
    mirror = Mirror(tmp_path / "cache", tmp_path / "cache" / "repo-reader.toml")
    mirror.add("acme/tool", str(tmp_path / "src"))
    (result,) = mirror.sync()
    for path in [tmp_path / "cache", *(tmp_path / "cache").rglob("*")]:
        os.chown(path, 4343, 4343, follow_symlinks=False)
    catalog = RepoCatalog(mirror.config, mirror.layout)
    assert catalog.resolve("acme/tool").commit == result.head


def test_sync_publishes_identified_license_files(tmp_path: Path) -> None:
    """A sync publishes the identification of every license file in the head, by blob id."""
    source = source_repo(tmp_path / "src")
    commit(source, {"vendor/lib/COPYING": license_text("GPL-3.0-only")}, message="vendored")
    _, result = synced_mirror(tmp_path)
    tree = source[result.head].peel(pygit2.Tree)
    licenses = CacheLayout(tmp_path / "cache").read_licenses("acme/tool")
    assert licenses is not None
    assert licenses.commit == result.head
    assert {blob: text.spdx if text else None for blob, text in licenses.texts.items()} == {
        str((tree / "LICENSE").id): "MIT",
        str((tree / "vendor/lib/COPYING").id): "GPL-3.0-only",
    }


def test_resync_reuses_identified_license_files(tmp_path: Path) -> None:
    """A later sync takes the last sync's answers for unchanged license texts as they are."""
    source = source_repo(tmp_path / "src")
    mirror, first = synced_mirror(tmp_path)
    layout = CacheLayout(tmp_path / "cache")
    license_id = str((source[first.head].peel(pygit2.Tree) / "LICENSE").id)
    # An answer no identification of the MIT text gives: it can only have been reused.
    reused = {license_id: TextLicense(spdx="0BSD", confidence=0.9)}
    layout.write_licenses("acme/tool", IdentifiedLicenses(commit=first.head, texts=reused))
    newer = commit(source, {"sample/third.py": "x = 3\n"}, message="third")
    mirror.sync(["acme/tool"])
    state = layout.read_state("acme/tool")
    assert state is not None
    assert (state.head, state.license, state.license_confidence) == (newer, "0BSD", 0.9)
    assert layout.read_licenses("acme/tool") == IdentifiedLicenses(commit=newer, texts=reused)


def test_unreadable_license_file_is_identified_again(tmp_path: Path) -> None:
    """A damaged identification file is read as none: the next sync identifies and rewrites it."""
    source = source_repo(tmp_path / "src")
    mirror, first = synced_mirror(tmp_path)
    layout = CacheLayout(tmp_path / "cache")
    layout.licenses_file("acme/tool").write_bytes(b'{"commit": 7')
    assert layout.read_licenses("acme/tool") is None
    mirror.sync(["acme/tool"])
    license_id = str((source[first.head].peel(pygit2.Tree) / "LICENSE").id)
    again = layout.read_licenses("acme/tool")
    assert again is not None
    assert again.commit == first.head
    assert {blob: text.spdx if text else None for blob, text in again.texts.items()} == {
        license_id: "MIT"
    }


def test_a_sync_with_several_index_workers_builds_in_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync with several index workers starts them during its fetch and builds in them."""
    repo = source_repo(tmp_path / "src")
    commit(repo, {f"src/m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(50)})
    monkeypatch.setattr(Mirror, "_index_workers", lambda self: 2)
    _, result = synced_mirror(tmp_path)
    assert result.index_workers == 2
    assert result.index_seconds > 0


def test_sync_records_history_and_a_resync_adds_only_new_commits(tmp_path: Path) -> None:
    """The mirror publishes every commit's message and files; a resync records only new ones."""
    source = source_repo(tmp_path / "src")
    mirror, _ = synced_mirror(tmp_path)
    index_dir = tmp_path / "cache" / "index" / "acme" / "tool"
    generation = current_generation(index_dir)
    assert generation is not None
    assert [r.message.strip() for r in read_records(generation)] == ["second", "first"]
    commit(source, {"sample/extra.py": "def extra():\n    return 2\n"}, message="third")
    (result,) = mirror.sync()
    generation = current_generation(index_dir)
    assert generation is not None
    records = read_records(generation)
    assert [r.message.strip() for r in records] == ["third", "second", "first"]
    assert records[0].touched == ("sample/extra.py",)
    assert result.history_seconds > 0


def test_history_can_be_turned_off(tmp_path: Path) -> None:
    """`history_commits = 0` records no history."""
    source_repo(tmp_path / "src")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "repo-reader.toml").write_text("[mirror]\nhistory_commits = 0\n")
    synced_mirror(tmp_path)
    assert current_generation(tmp_path / "cache" / "index" / "acme" / "tool") is None


def test_a_sync_keeps_the_newest_commits_and_removes_the_rest(tmp_path: Path) -> None:
    """With `keep_commits = 2`, each sync past the second removes the oldest published commit
    and the segments only it used; the head's graph is still carried from the last."""
    source = source_repo(tmp_path / "src")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "repo-reader.toml").write_text("[mirror]\nkeep_commits = 2\n")
    mirror, first = synced_mirror(tmp_path)
    index_dir = tmp_path / "cache" / "index" / "acme" / "tool"
    heads = [first.head]
    for i in range(3):
        commit(source, {f"sample/gone_{i}.py": f"def gone_{i}():\n    return {i}\n"})
        with capture_logs() as logs:
            (result,) = mirror.sync()
        heads.append(result.head)
        (built,) = [e for e in logs if e["event"] == "mirror.graph_built"]
        assert 0 < built["resolved"] < built["files"]
        pruned = [e for e in logs if e["event"] == "mirror.pruned"]
        assert [e["commits"] for e in pruned] == ([] if i == 0 else [1])
    assert {p.name for p in (index_dir / "commits").iterdir()} == set(heads[-2:])
    used = set()
    for head in heads[-2:]:
        manifest = json.loads((index_dir / "commits" / head / "manifest.json").read_text())
        used |= set(manifest["segments"])
    assert {p.name for p in (index_dir / "segments").iterdir()} == used


def test_rebuilding_an_old_revision_never_removes_the_head(tmp_path: Path) -> None:
    """An old revision indexed on request becomes the newest published commit; with
    `keep_commits = 1` the head stays beside it."""
    source = source_repo(tmp_path / "src")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "repo-reader.toml").write_text("[mirror]\nkeep_commits = 1\n")
    mirror, result = synced_mirror(tmp_path)
    first = str(source.revparse_single("v1").id)
    mirror.rebuild_index("acme/tool", first)
    commits_dir = tmp_path / "cache" / "index" / "acme" / "tool" / "commits"
    assert {p.name for p in commits_dir.iterdir()} == {first, result.head}


_SYNC_WATCHING_HUGE_PAGES = """
import sys
from pathlib import Path

import worker.index
from tests.support.cache import SAMPLE_FILES
from tests.support.gitrepos import commit, init_repo
from tests.support.processes import last_line_printed
from tests.support.processes import SELF_STATUS, huge_pages_allowed
from worker.mirror.sync import Mirror

during = []
build = worker.index.build_commit_index


def observed(*args, **kwargs):
    during.append(huge_pages_allowed(SELF_STATUS.read_text()))
    return build(*args, **kwargs)


worker.index.build_commit_index = observed
root = Path(sys.argv[1])
commit(init_repo(root / "src"), SAMPLE_FILES, message="first")
mirror = Mirror(root / "cache", root / "cache" / "repo-reader.toml")
mirror.add("acme/tool", str(root / "src"))
before = huge_pages_allowed(SELF_STATUS.read_text())
mirror.sync()
print(before, *during, huge_pages_allowed(SELF_STATUS.read_text()))
"""


def test_a_sync_builds_off_huge_pages_and_puts_the_process_back(tmp_path: Path) -> None:
    """The mirror's process is off huge pages while it builds an index, and back after."""
    printed = last_line_printed(_SYNC_WATCHING_HUGE_PAGES, str(tmp_path))
    assert printed == ["True", "False", "True"]
