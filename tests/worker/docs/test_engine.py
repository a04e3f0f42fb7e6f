"""The engine: one squashed commit on refs/repo-reader/docs, memory-based diffing, bounded
history, upstream refs untouched."""

from __future__ import annotations

from pathlib import Path

import pygit2

from contracts.docs import DOC_PATHS, DOC_TYPES, DOCS_REF
from tests.support.cache import MirroredCache, SourceFactory
from tests.support.gitrepos import commit
from tests.worker.docs.conftest import REPO, SHOP_FILES
from worker.docs.manifest import read_docs


def upstream_refs(repo: pygit2.Repository) -> dict[str, str]:
    """Every ref but the engine's, with its target."""
    return {
        name: str(repo.references[name].target)
        for name in repo.references
        if not name.startswith("refs/repo-reader/")
    }


def mirrored(cache: MirroredCache) -> pygit2.Repository:
    return pygit2.Repository(str(cache.mirror.layout.repo_dir(REPO)))


def test_first_regeneration_writes_every_document_in_one_commit(
    shop: tuple[Path, MirroredCache],
) -> None:
    """Every type is generated from the head into one root commit; upstream refs stay."""
    _, cache = shop
    repo = mirrored(cache)
    before = upstream_refs(repo)
    done = cache.mirror.regenerate_docs(REPO, DOC_TYPES)
    assert done.regenerated == list(DOC_TYPES)
    assert done.reason_skipped is None
    docs = repo.references[DOCS_REF].peel(pygit2.Commit)
    assert str(docs.id) == done.docs_commit
    assert docs.parents == []
    assert sorted(e.name for e in docs.tree) == sorted([*DOC_PATHS.values(), "LICENSE"])
    assert docs.tree["LICENSE"].id == repo.revparse_single("HEAD").peel(pygit2.Tree)["LICENSE"].id
    assert upstream_refs(repo) == before
    state = read_docs(repo)
    assert state is not None
    assert {d: r.generated_from for d, r in state.manifest.documents.items()} == dict.fromkeys(
        DOC_TYPES, done.head
    )


def test_nothing_changed_means_nothing_written(shop: tuple[Path, MirroredCache]) -> None:
    """Asking again at the same head writes nothing and says why."""
    _, cache = shop
    first = cache.mirror.regenerate_docs(REPO, DOC_TYPES)
    objects = sorted(p.name for p in (cache.mirror.layout.repo_dir(REPO) / "objects").rglob("*"))
    again = cache.mirror.regenerate_docs(REPO, ("repo_map", "api_index"))
    assert again.docs_commit == first.docs_commit
    assert again.regenerated == []
    assert again.reason_skipped is not None
    assert "nothing the requested documents depend on changed" in again.reason_skipped
    after = sorted(p.name for p in (cache.mirror.layout.repo_dir(REPO) / "objects").rglob("*"))
    assert after == objects


def test_only_documents_whose_inputs_changed_are_regenerated(
    shop: tuple[Path, MirroredCache],
) -> None:
    """A README-only change regenerates the map, the license report and the churn report
    (they read the tree or the history), not the API index or the architecture note."""
    source, cache = shop
    first = cache.mirror.regenerate_docs(REPO, DOC_TYPES)
    commit(pygit2.Repository(str(source)), {"README.md": "# Shop\n\nOrders, prices, more.\n"})
    cache.mirror.sync([REPO])
    done = cache.mirror.regenerate_docs(REPO, DOC_TYPES)
    assert set(done.generated) == {"repo_map", "license_report", "churn_report"}
    assert "api_index" not in done.regenerated
    assert "architecture" not in done.regenerated
    assert done.reason_skipped is not None
    assert "api_index, architecture: nothing they depend on changed" in done.reason_skipped
    repo = mirrored(cache)
    docs = repo.references[DOCS_REF].peel(pygit2.Commit)
    assert [str(p) for p in docs.parent_ids] == [first.docs_commit]
    kept = {d.doc_type: d.generated_from for d in done.documents}
    assert kept["api_index"] == first.head
    assert kept["repo_map"] == done.head != first.head


def test_a_sync_keeps_the_docs_ref(shop: tuple[Path, MirroredCache]) -> None:
    """Fetching with prune never deletes the engine's ref: it is outside the fetched ones."""
    source, cache = shop
    done = cache.mirror.regenerate_docs(REPO, ("repo_map",))
    commit(pygit2.Repository(str(source)), {"shop/more.py": "X = 1\n"})
    cache.mirror.sync([REPO])
    assert str(mirrored(cache).references[DOCS_REF].target) == done.docs_commit


def test_the_history_of_the_docs_ref_is_bounded(
    make_source: SourceFactory, cache: MirroredCache
) -> None:
    """With history = 2, the ref holds two commits: the older made a root again."""
    source, _ = make_source("shop", SHOP_FILES)
    cache.add(REPO, source)
    cache.set_config("[docs]\nhistory = 2\n")
    commits = []
    for n in range(3):
        commit(pygit2.Repository(str(source)), {"README.md": f"# Shop {n}\n"})
        cache.mirror.sync([REPO])
        commits.append(cache.mirror.regenerate_docs(REPO, ("repo_map",)))
    repo = mirrored(cache)
    newest = repo.references[DOCS_REF].peel(pygit2.Commit)
    assert str(newest.id) == commits[-1].docs_commit
    (older,) = newest.parents
    assert older.parents == []
    assert older.tree_id == repo[commits[1].docs_commit].peel(pygit2.Commit).tree_id
    assert older.message == repo[commits[1].docs_commit].peel(pygit2.Commit).message


def test_the_same_head_gives_the_same_docs_commit(
    make_source: SourceFactory, tmp_path: Path
) -> None:
    """Two mirrors of one source write byte-identical documents and the same commit id."""
    source, _ = make_source("shop", SHOP_FILES)
    ids = []
    for host in ("a", "b"):
        cache = MirroredCache(tmp_path / host)
        cache.add(REPO, source)
        ids.append(cache.mirror.regenerate_docs(REPO, DOC_TYPES).docs_commit)
    assert ids[0] == ids[1]
