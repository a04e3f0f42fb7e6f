"""Index build, persistence, incremental reuse, on-demand indexing, ranking sanity."""

from __future__ import annotations

import gc
import itertools
import json
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import numpy as np
import pygit2
import pytest
from structlog.testing import capture_logs

from tests.worker.index.conftest import RepoFactory, handler_files
from worker.errors import Timeout
from worker.index import CommitIndex, IndexStore, SearchHit, build_commit_index
from worker.index.analysis import segment_builder
from worker.index.analysis.segment_builder import BlobSource, SegmentBuilder
from worker.index.store import blob_places, build_workers
from worker.index.store import build as build_module
from worker.index.store.commit_view import CommitTables, read_commit_tables, read_manifest
from worker.index.store.index_store import carried_in_memory
from worker.index.store.segment import Segment, release_mapped_pages, segment_id
from worker.index.store.shared_runs import MIN_STEAL_BYTES
from worker.index.store.tree_listing import tree_blobs

REPO_ID = "acme/widgets"

FILES = {
    "src/auth/tokens.py": b'''"""Token helpers."""
import hmac


def rotate_csrf_token(request):
    """Rotate the CSRF token after login so a fixated token stops working."""
    request.meta["CSRF_COOKIE"] = new_token()


def new_token():
    return hmac.new(b"k").hexdigest()
''',
    "src/auth/login.py": b'''from .tokens import rotate_csrf_token


class LoginView:
    """Logs a user in."""

    def post(self, request):
        user = authenticate(request)
        rotate_csrf_token(request)
        return user
''',
    "src/http/router.go": b"""package http

// Router dispatches requests to handlers by URL pattern.
type Router struct {
\troutes map[string]Handler
}

func (r *Router) Dispatch(path string) Handler {
\treturn r.routes[path]
}
""",
    "src/db/pool.c": b"""/* connection pool */
struct pool {
\tint size;
};

int pool_acquire(struct pool *p)
{
\treturn p->size--;
}
""",
    "docs/guide.md": b"# Guide\n\nThe router dispatches each URL to a handler.\n",
    "assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binary",
}


def take(hits: Iterator[SearchHit], n: int = 50) -> list[SearchHit]:
    out = []
    for hit in hits:
        out.append(hit)
        if len(out) >= n:
            break
    return out


def open_index(cache: Path, repo: pygit2.Repository, commit: str, **kw: object) -> CommitIndex:
    store = IndexStore(cache, **kw)  # type: ignore[arg-type]
    return store.open(REPO_ID, repo, commit, deadline=time.monotonic() + 60)


@pytest.fixture
def widgets(make_repo: Callable[[str], RepoFactory]) -> tuple[RepoFactory, str]:
    factory = make_repo("widgets")
    return factory, factory.commit(FILES)


def test_defining_file_ranks_first(widgets: tuple[RepoFactory, str], tmp_path: Path) -> None:
    """The file defining the asked-for function comes first, its definition as the hit."""
    factory, commit = widgets
    build_commit_index(tmp_path / "cache", REPO_ID, factory.repo, commit)
    index = open_index(tmp_path / "cache", factory.repo, commit)
    hits = take(index.ranked("where is rotate_csrf_token defined"))
    assert hits[0].path == "src/auth/tokens.py"
    assert hits[0].symbol == "rotate_csrf_token"
    assert (hits[0].start_line, hits[0].end_line) == (5, 7)
    assert hits[0].language == "python"
    blob = factory.repo[factory.repo.revparse_single(f"{commit}:src/auth/tokens.py").id]
    assert hits[0].blob == str(blob.id)
    go = take(index.ranked("router dispatch handler by URL"))
    assert go[0].path == "src/http/router.go"
    assert go[0].symbol in {"Router.Dispatch", "Router"}


def test_results_are_diverse_across_files(widgets: tuple[RepoFactory, str], tmp_path: Path) -> None:
    """A file's second chunk never comes before another matching file's first chunk."""
    factory, commit = widgets
    index = open_index(tmp_path / "cache", factory.repo, commit)
    hits = take(index.ranked("csrf token rotate login"))
    paths = [h.path for h in hits]
    first_seen = list(dict.fromkeys(paths))
    assert first_seen[:2] == paths[:2]
    assert set(first_seen[:2]) == {"src/auth/tokens.py", "src/auth/login.py"}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_extensions_filter(widgets: tuple[RepoFactory, str], tmp_path: Path) -> None:
    """Only files with the requested extensions are ranked."""
    factory, commit = widgets
    index = open_index(tmp_path / "cache", factory.repo, commit)
    hits = take(index.ranked("router dispatch URL handler", extensions=frozenset({".md"})))
    assert hits
    assert {h.path for h in hits} == {"docs/guide.md"}


def test_deterministic(widgets: tuple[RepoFactory, str], tmp_path: Path) -> None:
    """The same query twice gives the same hits in the same order."""
    factory, commit = widgets
    index = open_index(tmp_path / "cache", factory.repo, commit)
    assert take(index.ranked("token pool router")) == take(index.ranked("token pool router"))


def test_binary_blobs_not_indexed(widgets: tuple[RepoFactory, str], tmp_path: Path) -> None:
    """A blob with a NUL byte is never a hit, even when its path matches."""
    factory, commit = widgets
    index = open_index(tmp_path / "cache", factory.repo, commit)
    assert all(h.path != "assets/logo.png" for h in take(index.ranked("logo png assets")))


def test_oversized_blobs_not_indexed(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """A blob over max_blob_bytes is skipped; smaller ones are indexed."""
    factory = make_repo("big")
    commit = factory.commit({"big.txt": b"zebra " * 400, "small.txt": b"zebra crossing"})
    index = open_index(tmp_path / "cache", factory.repo, commit, max_blob_bytes=1000)
    assert [h.path for h in take(index.ranked("zebra"))] == ["small.txt"]


def test_non_utf8_text(make_repo: Callable[[str], RepoFactory], tmp_path: Path) -> None:
    """Latin-1 text is indexed; spans count lines split on b"\\n" like the excerpt code."""
    data = "caf\xe9 ol\xe9\n\nd\xe9j\xe0 vu\nfrobnicate_widget here\n".encode("latin-1")
    factory = make_repo("latin")
    commit = factory.commit(
        {"notes.txt": data, "src/m.py": b"def f\xe9():\n    frobnicate_widget()\n"}
    )
    index = open_index(tmp_path / "cache", factory.repo, commit)
    hits = take(index.ranked("frobnicate_widget"))
    assert {h.path for h in hits} == {"notes.txt", "src/m.py"}
    for hit in hits:
        blob = cast(pygit2.Blob, factory.repo[pygit2.Oid(hex=hit.blob)])
        excerpt = b"\n".join(blob.data.split(b"\n")[hit.start_line - 1 : hit.end_line])
        assert b"frobnicate_widget" in excerpt
    sym = next(h for h in hits if h.path == "src/m.py")
    assert sym.symbol == "f\xe9"


def test_persistence_round_trip_read_only(widgets: tuple[RepoFactory, str], tmp_path: Path) -> None:
    """A stored index reopened from a read-only copy of the cache answers identically."""
    factory, commit = widgets
    cache = tmp_path / "cache"
    build_commit_index(cache, REPO_ID, factory.repo, commit)
    live = IndexStore(cache).open(REPO_ID, factory.repo, commit, deadline=time.monotonic() + 60)
    copy = tmp_path / "ro"
    shutil.copytree(cache, copy)
    for root, dirs, files in os.walk(copy):
        for name in dirs + files:
            p = Path(root) / name
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    copy.chmod(0o555)
    try:
        store = IndexStore(copy)
        reopened = store.open(REPO_ID, factory.repo, commit, deadline=time.monotonic() + 60)
        assert store.on_demand_builds == 0
        for query in ("csrf token", "connection pool acquire", "router dispatch"):
            assert take(reopened.ranked(query)) == take(live.ranked(query))
    finally:
        for root, dirs, _ in os.walk(copy):
            for name in dirs:
                (Path(root) / name).chmod(0o755)
        copy.chmod(0o755)


def _segment_oids(cache: Path, commit: str) -> dict[str, set[str]]:
    base = cache / "index" / "acme" / "widgets"
    manifest = json.loads((base / "commits" / commit / "manifest.json").read_text())
    return {
        s: {o.hex() for o in Segment.open(base / "segments" / s).oids()}
        for s in manifest["segments"]
    }


def test_incremental_build_reuses_unchanged_blobs(
    widgets: tuple[RepoFactory, str], tmp_path: Path
) -> None:
    """A second commit keeps the first commit's segment and analyses only its changed blob."""
    factory, first = widgets
    cache = tmp_path / "cache"
    build_commit_index(cache, REPO_ID, factory.repo, first)
    changed = dict(FILES)
    changed["src/db/pool.c"] = (
        FILES["src/db/pool.c"] + b"\nint pool_release(struct pool *p) { return 0; }\n"
    )
    del changed["docs/guide.md"]
    second = factory.commit(changed)
    build_commit_index(cache, REPO_ID, factory.repo, second)
    before, after = _segment_oids(cache, first), _segment_oids(cache, second)
    (base_id,) = before
    assert base_id in after
    new = {k: v for k, v in after.items() if k != base_id}
    new_pool = str(factory.repo.revparse_single(f"{second}:src/db/pool.c").id)
    assert list(new.values()) == [{new_pool}]
    (new_id,) = new
    added = Segment.open(cache / "index" / "acme" / "widgets" / "segments" / new_id)
    assert added.entities(0).column("name").to_pylist() == [
        "pool",
        "pool_acquire",
        "pool_release",
    ]
    index = open_index(cache, factory.repo, second)
    assert take(index.ranked("pool_release"))[0].path == "src/db/pool.c"
    assert all(h.path != "docs/guide.md" for h in take(index.ranked("guide router URL")))
    old = open_index(cache, factory.repo, first)
    assert not [
        h
        for h in take(old.ranked("pool_release"))
        if h.path == "src/db/pool.c" and h.start_line > 9
    ]


def _view(cache: Path, commit: str) -> tuple[CommitTables, list[Segment]]:
    index_dir = cache / "index" / "acme" / "widgets"
    manifest = read_manifest(index_dir / "commits" / commit)
    segments = [Segment.open(index_dir / "segments" / s) for s in manifest["segments"]]
    return read_commit_tables(index_dir / "commits" / commit, manifest), segments


def _near_commits(factory: RepoFactory) -> tuple[str, str, list[str]]:
    """Two commits: files changed, gone and come, one turned binary, one a link, one
    executable; and the paths the second's index lists."""
    link, executable = pygit2.enums.FileMode.LINK, pygit2.enums.FileMode.BLOB_EXECUTABLE
    first = factory.commit(
        {
            **FILES,
            "bin/run.sh": b"echo run\n",
            "bin/old.sh": (executable, b"echo old\n"),
            "docs/ref": b"guide router\n",
        }
    )
    changed: dict[str, bytes | tuple[int, bytes]] = {
        **FILES,
        "src/db/pool.c": FILES["src/db/pool.c"] + b"\nint pool_release(struct pool *p);\n",
        "src/auth/tokens.py": b"\x00\x01 binary now",
        "src/http/mux.go": b"package http\n\nfunc Mux() {}\n",
        "bin/run.sh": (executable, b"echo run\n"),
        "docs/ref": (link, b"guide.md"),
        "copy/pool.c": FILES["src/db/pool.c"],
    }
    del changed["src/auth/login.py"]
    listed = sorted(set(changed) - {"src/auth/tokens.py", "docs/ref", "assets/logo.png"})
    return first, factory.commit(changed), listed


def _answers(index: CommitIndex) -> list[tuple[str, int]]:
    return [(h.path, h.start_line) for h in take(index.ranked("pool release router guide"))]


def test_a_commit_near_a_stored_one_is_carried_and_indexes_as_if_built_whole(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """The index carried from the stored commit's analyses only the changed blobs, lists
    what a whole build lists, and answers alike."""
    factory = make_repo("widgets")
    first, second, listed = _near_commits(factory)
    cache, whole_cache = tmp_path / "cache", tmp_path / "whole"
    build_commit_index(cache, REPO_ID, factory.repo, first)
    with capture_logs() as logs:
        build_commit_index(cache, REPO_ID, factory.repo, second)
    built = [e for e in logs if e["event"] == "search.index.built"]
    assert [(e.get("carried_from"), e["analysed_blobs"]) for e in built] == [(first, 3)]
    build_commit_index(whole_cache, REPO_ID, factory.repo, second)
    (carried, segments), (whole, _) = _view(cache, second), _view(whole_cache, second)
    assert carried.paths.column("path").to_pylist() == listed
    for name in ("path", "oid", "len_path", "len_name"):
        assert carried.paths.column(name).equals(whole.paths.column(name)), name
    assert carried.path_terms.equals(whole.path_terms)
    assert carried.path_postings.equals(whole.path_postings)
    rows = carried.paths.select(["oid", "segment", "blob"]).to_pylist()
    assert all(segments[r["segment"]].oid(r["blob"]) == r["oid"].hex() for r in rows)
    answers = [_answers(open_index(at, factory.repo, second)) for at in (cache, whole_cache)]
    assert answers[0] == answers[1]
    assert ("src/db/pool.c", 11) in answers[0]


def test_a_pinned_commit_near_a_stored_one_is_carried_on_demand(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """A commit with no stored index, near one that has, is indexed on demand from it: only
    its changed blobs are analysed, and it lists and answers what a whole build does."""
    factory = make_repo("widgets")
    first, second, listed = _near_commits(factory)
    cache, whole_cache = tmp_path / "cache", tmp_path / "whole"
    build_commit_index(cache, REPO_ID, factory.repo, first)
    build_commit_index(whole_cache, REPO_ID, factory.repo, second)
    store = IndexStore(cache)
    with capture_logs() as logs:
        index = store.open(REPO_ID, factory.repo, second, deadline=time.monotonic() + 60)
    built = [e for e in logs if e["event"] == "search.index.on_demand"]
    assert [(e["carried_from"], e["analysed_blobs"]) for e in built] == [(first, 3)]
    assert (store.on_demand_builds, store.blobs_analysed) == (1, 3)
    assert index.path_column.to_pylist() == listed
    assert _answers(index) == _answers(open_index(whole_cache, factory.repo, second))


def test_a_stored_view_replaced_after_it_is_found_is_still_carried_from(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """The stored view a worker carries from is mapped when found: the mirror replacing it
    meanwhile (its directory gone) does not fail the build."""
    factory = make_repo("widgets")
    first, second, listed = _near_commits(factory)
    cache = tmp_path / "cache"
    build_commit_index(cache, REPO_ID, factory.repo, first)
    index_dir = cache / "index" / "acme" / "widgets"
    base = build_module.newest_view(index_dir)
    assert base is not None
    assert base.commit == first
    shutil.rmtree(index_dir / "commits" / first)
    carried = carried_in_memory(
        factory.repo, second, base, max_blob_bytes=1 << 20, check_deadline=lambda _d, _t: None
    )
    assert carried is not None
    assert carried.tables.paths.column("path").to_pylist() == listed


def test_segments_hold_each_blobs_entities_and_references(
    widgets: tuple[RepoFactory, str], tmp_path: Path
) -> None:
    """A stored segment gives a blob's entities (qualified, nested) and what each refers to."""
    factory, commit = widgets
    cache = tmp_path / "cache"
    build_commit_index(cache, REPO_ID, factory.repo, commit)
    login = factory.repo.revparse_single(f"{commit}:src/auth/login.py").id.raw
    for segment_dir in (cache / "index" / "acme" / "widgets" / "segments").iterdir():
        segment = Segment.open(segment_dir)
        if login in segment.oids():
            blob = segment.oids().index(login)
            break
    entities = segment.entities(blob).to_pydict()
    assert entities["name"] == ["LoginView", "LoginView.post"]
    assert entities["start_line"] == [4, 7]
    first = segment.blob_entity_start[blob]
    assert entities["parent"] == [-1, first]
    references = segment.references(blob).to_pydict()
    rows = set(
        zip(
            [e - first if e >= 0 else -1 for e in references["entity"]],
            references["relation"],
            references["target"],
            references["name"],
            strict=True,
        )
    )
    assert rows == {
        (-1, "import", ".tokens", "rotate_csrf_token"),
        (1, "invoke", "authenticate", None),
        (1, "invoke", "rotate_csrf_token", None),
    }


def test_on_demand_index_of_unindexed_commit(
    widgets: tuple[RepoFactory, str], tmp_path: Path
) -> None:
    """A pinned commit without a stored index is built by the worker, reusing stored blobs."""
    factory, first = widgets
    cache = tmp_path / "cache"
    build_commit_index(cache, REPO_ID, factory.repo, first)
    second = factory.commit({**FILES, "src/new.py": b"def brand_new_feature():\n    pass\n"})
    store = IndexStore(cache)
    index = store.open(REPO_ID, factory.repo, second, deadline=time.monotonic() + 60)
    assert store.on_demand_builds == 1
    assert store.blobs_analysed == 1
    assert not (cache / "index" / "acme" / "widgets" / "commits" / second).exists()
    assert take(index.ranked("brand_new_feature"))[0].path == "src/new.py"
    assert take(index.ranked("rotate_csrf_token"))[0].path == "src/auth/tokens.py"


def test_on_demand_in_scratch_dir(widgets: tuple[RepoFactory, str], tmp_path: Path) -> None:
    """With a scratch directory, the on-demand segment is written there and mapped."""
    factory, commit = widgets
    scratch = tmp_path / "scratch"
    index = open_index(tmp_path / "empty-cache", factory.repo, commit, scratch_dir=scratch)
    assert any(scratch.rglob("postings.arrow"))
    assert take(index.ranked("pool_acquire"))[0].path == "src/db/pool.c"


def test_scratch_segments_go_with_the_indexes_that_use_them(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """An on-demand index's scratch segment is deleted once the LRU lets the index go, and
    the store's directory once the store goes."""
    factory = make_repo("many")
    commits = [factory.commit({"a.txt": f"version {i} of alpha".encode()}) for i in range(2)]
    scratch = tmp_path / "scratch"
    store = IndexStore(tmp_path / "cache", lru_size=1, scratch_dir=scratch)
    store.open(REPO_ID, factory.repo, commits[0], deadline=time.monotonic() + 60)
    first = set(scratch.rglob("segment.json"))
    assert first
    index = store.open(REPO_ID, factory.repo, commits[1], deadline=time.monotonic() + 60)
    gc.collect()
    kept = set(scratch.rglob("segment.json"))
    assert kept
    assert not kept & first
    assert take(index.ranked("version alpha"))[0].path == "a.txt"
    del store, index
    gc.collect()
    assert list(scratch.iterdir()) == []


def test_a_hit_names_the_language_of_its_own_path(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """One blob at a .py and a .txt path is a python hit at one and a text hit at the other."""
    factory = make_repo("twins")
    body = b"def rotate_csrf_token(session):\n    return session.rotate()\n"
    commit = factory.commit({"a.py": body, "b.txt": body})
    index = open_index(tmp_path / "cache", factory.repo, commit)
    languages = {hit.path: hit.language for hit in take(index.ranked("rotate csrf token"))}
    assert languages == {"a.py": "python", "b.txt": "text"}


def test_unknown_format_version_rebuilds(widgets: tuple[RepoFactory, str], tmp_path: Path) -> None:
    """An index whose format version is unknown is not read: the worker rebuilds on demand."""
    factory, commit = widgets
    cache = tmp_path / "cache"
    build_commit_index(cache, REPO_ID, factory.repo, commit)
    manifest_path = cache / "index" / "acme" / "widgets" / "commits" / commit / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["format_version"] = 999
    manifest_path.write_text(json.dumps(manifest))
    for seg_json in (cache / "index").rglob("segment.json"):
        meta = json.loads(seg_json.read_text())
        meta["format_version"] = 999
        seg_json.write_text(json.dumps(meta))
    store = IndexStore(cache)
    index = store.open(REPO_ID, factory.repo, commit, deadline=time.monotonic() + 60)
    assert store.on_demand_builds == 1
    assert store.blobs_analysed == len(FILES)
    assert take(index.ranked("rotate_csrf_token"))[0].path == "src/auth/tokens.py"


def test_timeout_when_deadline_passed(widgets: tuple[RepoFactory, str], tmp_path: Path) -> None:
    """On-demand indexing past the deadline raises Timeout with details."""
    factory, commit = widgets
    store = IndexStore(tmp_path / "cache")
    with pytest.raises(Timeout) as caught:
        store.open(REPO_ID, factory.repo, commit, deadline=time.monotonic() - 1)
    assert caught.value.details["repo"] == REPO_ID
    assert caught.value.details["commit"] == commit
    assert store.cached() == []


def test_lru_is_bounded(make_repo: Callable[[str], RepoFactory], tmp_path: Path) -> None:
    """The store keeps at most lru_size indexes, dropping the least recently used."""
    factory = make_repo("many")
    commits = [factory.commit({"a.txt": f"version {i} of alpha".encode()}) for i in range(4)]
    store = IndexStore(tmp_path / "cache", lru_size=2)
    for c in commits[:3]:
        store.open(REPO_ID, factory.repo, c, deadline=time.monotonic() + 60)
    store.open(REPO_ID, factory.repo, commits[1], deadline=time.monotonic() + 60)
    assert store.cached() == [(REPO_ID, commits[2]), (REPO_ID, commits[1])]
    assert store.on_demand_builds == 3


def test_released_pages_give_identical_results(
    widgets: tuple[RepoFactory, str], tmp_path: Path
) -> None:
    """Dropping mapped index pages from the resident set changes no answer."""
    factory, commit = widgets
    build_commit_index(tmp_path / "cache", REPO_ID, factory.repo, commit)
    index = open_index(tmp_path / "cache", factory.repo, commit)
    before = take(index.ranked("csrf token rotate pool"))
    assert release_mapped_pages() > 0
    assert take(index.ranked("csrf token rotate pool")) == before


def test_query_without_informative_terms_has_no_hits(
    widgets: tuple[RepoFactory, str], tmp_path: Path
) -> None:
    """A query of stop words and punctuation ranks nothing."""
    factory, commit = widgets
    index = open_index(tmp_path / "cache", factory.repo, commit)
    assert take(index.ranked("the * of a")) == []


@pytest.mark.usefixtures("two_workers_on_small_repos")
def test_workers_share_the_blobs_and_agree_with_one_process(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """Two workers taking runs of blobs as they go: every blob in exactly one of their
    segments (a worker that started late may have none), the same hits as one process."""
    files = handler_files(120)
    factory = make_repo("many")
    commit = factory.commit(files)
    shared = tmp_path / "shared"
    build_commit_index(shared, REPO_ID, factory.repo, commit, workers=2)
    alone = tmp_path / "alone"
    build_commit_index(alone, REPO_ID, factory.repo, commit)
    segments = list(_segment_oids(shared, commit).values())
    assert 1 <= len(segments) <= 2
    assert sum(map(len, segments)) == len(set().union(*segments))
    assert set().union(*segments) == set().union(*_segment_oids(alone, commit).values())
    for query in ("handler_17 req", "route_3"):
        got = take(open_index(shared, factory.repo, commit).ranked(query))
        want = take(open_index(alone, factory.repo, commit).ranked(query))
        assert [(h.path, h.start_line, h.end_line) for h in got] == [
            (h.path, h.start_line, h.end_line) for h in want
        ]


@pytest.mark.parametrize(
    ("files", "pool_sizes"),
    [
        # Many blobs in less than a run's bytes: this process, however many blobs.
        (handler_files(80), []),
        # Two blobs in more than a run's bytes: as many workers as asked for (two).
        (
            {
                f"big_{i}.py": "".join(
                    f"def f_{i}_{j}(x):\n    return x + {j}\n" for j in range(120)
                ).encode()
                for i in range(2)
            },
            [2],
        ),
    ],
)
def test_a_build_splits_into_workers_by_bytes_not_blobs(
    make_repo: Callable[[str], RepoFactory],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    pools_handed: list[build_workers.BuildPool],
    files: dict[str, bytes],
    pool_sizes: list[int],
) -> None:
    """With two workers asked for, a build takes a worker per run of STEAL_BYTES of blobs (one
    run or less: this process), and indexes what one process does."""
    monkeypatch.setattr(build_module, "STEAL_BYTES", 4096)
    factory = make_repo("split")
    commit = factory.commit(files)
    build_commit_index(tmp_path / "asked", REPO_ID, factory.repo, commit, workers=2)
    build_commit_index(tmp_path / "alone", REPO_ID, factory.repo, commit)
    assert [pool.size for pool in pools_handed] == pool_sizes
    asked = set().union(*_segment_oids(tmp_path / "asked", commit).values())
    assert asked == set().union(*_segment_oids(tmp_path / "alone", commit).values())


@pytest.mark.parametrize("workers", [None, 2])
def test_a_build_writes_segments_of_bounded_source(
    make_repo: Callable[[str], RepoFactory],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    workers: int | None,
) -> None:
    """A build closes a segment once it holds SEGMENT_BYTES of source (a build's memory
    grows with a segment, not with the repository): every blob in exactly one segment, and
    the same hits as a build into one segment."""
    files = {
        f"pkg/mod_{i:02d}.py": "".join(
            f"def f_{i}_{j}(x):\n    return x + {j}\n" for j in range(800)
        ).encode()
        for i in range(60)
    }
    factory = make_repo("bounded")
    commit = factory.commit(files)
    build_commit_index(tmp_path / "whole", REPO_ID, factory.repo, commit)
    monkeypatch.setattr(build_module, "STEAL_BYTES", MIN_STEAL_BYTES)
    monkeypatch.setattr(build_module, "SEGMENT_BYTES", 300 << 10)
    build_commit_index(tmp_path / "bounded", REPO_ID, factory.repo, commit, workers=workers)
    segments = _segments(tmp_path / "bounded", commit)
    # A segment takes blobs (a worker, runs of them) until it holds the budget.
    overshoot = max(map(len, files.values())) + (MIN_STEAL_BYTES if workers else 0)
    assert len(segments) >= sum(map(len, files.values())) // ((300 << 10) + overshoot)
    assert all(s.source_bytes < (300 << 10) + overshoot for s in segments)
    oids = [oid for s in segments for oid in s.oids()]
    assert len(oids) == len(set(oids)) == len(files)
    for query in ("f_17_3 x", "return x"):
        got = take(open_index(tmp_path / "bounded", factory.repo, commit).ranked(query))
        want = take(open_index(tmp_path / "whole", factory.repo, commit).ranked(query))
        assert [(h.path, h.start_line, h.end_line) for h in got] == [
            (h.path, h.start_line, h.end_line) for h in want
        ]


def test_progress_counts_blobs_through_every_segment(
    make_repo: Callable[[str], RepoFactory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build of several segments reports its progress (for an on-demand build's deadline
    and its TIMEOUT details) as blobs done of all of them, never going back."""
    files = handler_files(120)
    factory = make_repo("progress")
    commit = factory.commit(files)
    monkeypatch.setattr(build_module, "SEGMENT_BYTES", 1000)
    monkeypatch.setattr(segment_builder, "BATCH_BYTES", 200)
    reported: list[tuple[int, int]] = []
    items = sorted(tree_blobs(factory.repo, commit))
    built = list(
        build_module.analyse(
            factory.repo, items, 1 << 20, lambda done, total: reported.append((done, total))
        )
    )
    assert len(built) > 3
    done = [d for d, _ in reported]
    assert done == sorted(done)
    assert {t for _, t in reported} == {len(files)}
    # The last report is made in the last segment: past the blobs of all the others.
    assert sum(tables.blobs.num_rows for _, tables in built[:-1]) < done[-1] <= len(files)


def test_folding_small_segments_keeps_the_full_ones(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Commits that each add a small segment are folded once more than MAX_SEGMENTS are not
    full: the small ones are analysed again into one, the full ones stay as they are."""
    monkeypatch.setattr(build_module, "SEGMENT_BYTES", 1000)
    monkeypatch.setattr(build_module, "MAX_SEGMENTS", 3)
    files = handler_files(120)
    factory = make_repo("folded")
    cache = tmp_path / "cache"
    commits = [factory.commit(files)]
    build_commit_index(cache, REPO_ID, factory.repo, commits[0])
    full = {s.id for s in _segments(cache, commits[0]) if build_module.is_full(s)}
    assert len(full) >= 4
    counts = []
    for i in range(5):
        files = {**files, f"pkg/new_{i}.py": f"def added_{i}():\n    return {i}\n".encode()}
        commits.append(factory.commit(files))
        with capture_logs() as logs:
            build_commit_index(cache, REPO_ID, factory.repo, commits[-1])
        # Only the new blob, and when folding the small segments' few: not a full one's.
        (built,) = [e for e in logs if e["event"] == "search.index.built"]
        assert built["analysed_blobs"] < 10
        segments = _segments(cache, commits[-1])
        assert full <= {s.id for s in segments}
        counts.append(sum(not build_module.is_full(s) for s in segments))
    # Each commit adds a small segment until one more would be too many: then the small
    # ones but the largest are folded into one, with the new blob.
    assert counts[1] == counts[0] + 1
    assert max(counts) <= 3
    assert any(after < before for before, after in itertools.pairwise(counts))
    hits = take(open_index(cache, factory.repo, commits[-1]).ranked("added_4"))
    assert hits[0].path == "pkg/new_4.py"


def test_a_full_segment_mostly_dead_is_folded(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit that rewrites most files leaves full segments mostly dead: they are folded,
    their live blobs analysed again, so no full segment of the commit is mostly dead, and
    the index answers as one built whole."""
    monkeypatch.setattr(build_module, "SEGMENT_BYTES", 1000)
    files = handler_files(120)
    factory = make_repo("rewritten")
    cache = tmp_path / "cache"
    first = factory.commit(files)
    build_commit_index(cache, REPO_ID, factory.repo, first)
    rewritten = {
        path: data if i % 4 == 0 else data.replace(b"return", b"return 1 +")
        for i, (path, data) in enumerate(sorted(files.items()))
    }
    second = factory.commit(rewritten)
    with capture_logs() as logs:
        build_commit_index(cache, REPO_ID, factory.repo, second)
    (built,) = [e for e in logs if e["event"] == "search.index.built"]
    assert built["folded_segments"] > 0
    # The 90 rewritten blobs, and the folded segments' live ones with them.
    assert built["analysed_blobs"] > 90
    segments = _segments(cache, second)
    where, _ = blob_places.blob_locations(segments)
    tree = tree_blobs(factory.repo, second)
    live = blob_places.live_bytes(
        segments, np.array([where[oid] for _, oid in tree if oid in where], dtype=np.int64)
    )
    assert not [s for s, b in zip(segments, live, strict=True) if build_module.is_sparse(s, int(b))]
    whole = tmp_path / "whole"
    build_commit_index(whole, REPO_ID, factory.repo, second)
    for query in ("handler_8", "route_3 handler", "handler_101"):
        assert take(open_index(cache, factory.repo, second).ranked(query)) == take(
            open_index(whole, factory.repo, second).ranked(query)
        )


def _segments(cache: Path, commit: str) -> list[Segment]:
    base = cache / "index" / "acme" / "widgets"
    manifest = json.loads((base / "commits" / commit / "manifest.json").read_text())
    return [Segment.open(base / "segments" / s) for s in manifest["segments"]]


def test_blob_locations_first_segment_wins() -> None:
    """A blob in two segments is found in the first; one not indexable anywhere is skipped;
    looked up among a few blobs, the same."""

    def segment(blobs: list[tuple[bytes, bytes]]) -> Segment:
        builder = SegmentBuilder(1 << 20)
        builder.add(BlobSource(oid, f"f{i}.py", data) for i, (oid, data) in enumerate(blobs))
        return Segment(segment_id([oid for oid, _ in blobs]), builder.tables())

    # An id ending in zero bytes: numpy's fixed-width strings drop those from an item.
    shared, only_second, binary = b"a" * 18 + b"\0\0", b"b" * 20, b"c" * 20
    first = segment([(binary, b"\0\1\2"), (shared, b"def f():\n    return 1\n")])
    second = segment([(only_second, b"x = 1\n"), (shared, b"def f():\n    return 1\n")])
    where, skipped = blob_places.blob_locations([first, second])
    assert where == {shared: (0, 1), only_second: (1, 0)}
    assert skipped == {binary}
    assert blob_places.located_blobs([first, second], [shared, only_second, binary]) == (
        where,
        skipped,
    )
    assert blob_places.located_blobs([first, second], [only_second, b"d" * 20]) == (
        {only_second: (1, 0)},
        set(),
    )


class _CountedPaths:
    """A derived view that stores the paths its index lists, and the commits it was asked
    to make along with whether each was published then."""

    def __init__(self, version: str = "v2") -> None:
        self.version = version
        self.made: list[tuple[str, bool]] = []

    def stored(self, commit_dir: Path) -> bool:
        file = commit_dir / "counted.txt"
        return file.is_file() and file.read_text().startswith(self.version)

    def write(self, index: CommitIndex, staging: Path) -> None:
        self.made.append((index.commit, (staging.parent / index.commit).exists()))
        (staging / "counted.txt").write_text(f"{self.version} {index.n_paths}")


def test_a_derived_view_is_published_in_the_same_rename_as_the_index(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """A derived view is made from the commit's index while the commit is not yet visible,
    and is in the directory that appears; a carried commit's is made alike."""
    factory = make_repo("widgets")
    first, second, listed = _near_commits(factory)
    cache = tmp_path / "cache"
    counted = _CountedPaths()
    for commit in (first, second):
        commit_dir = build_commit_index(cache, REPO_ID, factory.repo, commit, derived=counted)
        n_paths = open_index(cache, factory.repo, commit).n_paths
        assert (commit_dir / "counted.txt").read_text() == f"v2 {n_paths}"
    assert n_paths == len(listed)
    assert counted.made == [(first, False), (second, False)]
    build_commit_index(cache, REPO_ID, factory.repo, second, derived=counted)
    assert counted.made == [(first, False), (second, False)]


def test_a_commit_without_its_derived_view_is_published_again_with_it(
    widgets: tuple[RepoFactory, str], tmp_path: Path
) -> None:
    """A stored commit whose derived view is missing or of another version gets one in a
    new publish that links the view's files; who opened the old files keeps reading them."""
    factory, commit = widgets
    cache = tmp_path / "cache"
    commit_dir = build_commit_index(cache, REPO_ID, factory.repo, commit)
    build_commit_index(cache, REPO_ID, factory.repo, commit, derived=_CountedPaths("v1"))
    paths_inode = (commit_dir / "paths.arrow").stat().st_ino
    with (commit_dir / "counted.txt").open() as old:
        counted = _CountedPaths("v2")
        build_commit_index(cache, REPO_ID, factory.repo, commit, derived=counted)
        assert old.read().startswith("v1 ")
    assert counted.made == [(commit, True)]
    assert (commit_dir / "counted.txt").read_text().startswith("v2 ")
    assert (commit_dir / "paths.arrow").stat().st_ino == paths_inode
    assert sorted(p.name for p in commit_dir.parent.iterdir()) == [commit]
    assert open_index(cache, factory.repo, commit).n_paths == 5


def test_a_failed_derived_view_publishes_nothing(
    widgets: tuple[RepoFactory, str], tmp_path: Path
) -> None:
    """When making the derived view fails, the commit is not published and no staged
    directory is left behind."""
    factory, commit = widgets
    cache = tmp_path / "cache"

    class Failing(_CountedPaths):
        def write(self, index: CommitIndex, staging: Path) -> None:
            raise RuntimeError("no graph")

    with pytest.raises(RuntimeError, match="no graph"):
        build_commit_index(cache, REPO_ID, factory.repo, commit, derived=Failing())
    commits_dir = cache / "index" / "acme" / "widgets" / "commits"
    assert list(commits_dir.iterdir()) == []
    assert not IndexStore(cache).stored(REPO_ID, commit)
