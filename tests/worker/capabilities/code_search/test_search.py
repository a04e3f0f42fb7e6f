"""Tests of code.search ranking and excerpt shaping (over NATS: tests/worker/test_agenttools)."""

from __future__ import annotations

import time

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.gitrepos import Content, make_repo
from worker.capabilities.code_search.matcher import LineMatch, compile_query
from worker.capabilities.code_search.search import (
    Found,
    Scan,
    TopHits,
    context_window,
    line_count,
    line_window,
)
from worker.index import IndexStore
from worker.index.views.priors import file_prior
from worker.index.views.trigram import TrigramView


def test_file_prior_prefers_shallow_named_non_test_files() -> None:
    """Name matches rank up; depth and test/vendor directories rank down; range is 0..1."""
    assert file_prior("router.py", "router") > file_prior("app.py", "router")
    assert file_prior("app.py", None) > file_prior("a/b/c/app.py", None)
    assert file_prior("src/app.py", None) > file_prior("tests/app.py", None)
    assert file_prior("vendor/x/y.go", None) < file_prior("x/y.go", None)
    assert 0.0 <= file_prior("a/" * 40 + "tests/x", None) <= file_prior("router", "router") <= 1.0


LINES = [f"line {n}" for n in range(1, 11)] + [""]


def test_context_is_centred_and_clipped_at_the_edges() -> None:
    """Three lines around a hit; at the first or last line the window slides inward."""
    assert context_window(LINES, 5, 3, 1000) == ("line 4\nline 5\nline 6", "L4-L6")
    assert context_window(LINES, 1, 3, 1000) == ("line 1\nline 2\nline 3", "L1-L3")
    assert context_window(LINES, 10, 5, 1000)[1] == "L6-L10"  # the empty line after the last break
    assert context_window(LINES, 5, 4, 1000)[1] == "L4-L7"


def test_context_shrinks_to_its_character_bound() -> None:
    """Over the bound, lines are dropped (never cut); the hit's line always stays, or nothing."""
    text, span = context_window(LINES, 5, 5, 13)
    assert (text, span) == ("line 5\nline 6", "L5-L6")
    assert context_window(LINES, 5, 5, 5) == ("", None)


@given(
    line=st.text(min_size=0, max_size=300),
    column=st.integers(min_value=0, max_value=300),
    length=st.integers(min_value=0, max_value=50),
    limit=st.integers(min_value=10, max_value=100),
)
def test_a_long_line_is_windowed_around_the_match(
    line: str, column: int, length: int, limit: int
) -> None:
    """The window is a substring of the line, at most `limit` long, holding the match start."""
    column = min(column, len(line))
    offset, shown = line_window(line, column, length, limit)
    assert line[offset : offset + len(shown)] == shown
    assert len(shown) == min(len(line), limit)
    assert offset <= column <= offset + len(shown)


def test_line_count_ignores_the_empty_line_after_a_final_break() -> None:
    """'a\\nb\\n' has two lines; 'a\\nb' too; '' has one (empty) line."""
    assert line_count(["a", "b", ""]) == 2
    assert line_count(["a", "b"]) == 2
    assert line_count([""]) == 1


def test_top_hits_keep_the_best_in_a_stable_order() -> None:
    """Only the best `size` hits are kept, by score, then path, then line."""
    paths = ("b.py", "a.py")
    top = TopHits(2, paths)
    for score, row, line in [(0.5, 0, 1), (0.9, 0, 7), (0.5, 1, 3), (0.9, 1, 9), (0.1, 1, 1)]:
        top.add(Found(score=score, row=row, line=LineMatch(line, 0, 0, 0, 0)))
    assert [(f.score, paths[f.row], f.line.line_number) for f in top.best()] == [
        (0.9, "a.py", 9),
        (0.9, "b.py", 7),
    ]
    worst = top.worst()
    assert worst is not None
    assert (worst.score, paths[worst.row]) == (0.9, "b.py")
    assert TopHits(3, paths).worst() is None


DEFINED = "def handle_request(request):\n    return handle_request\n"
USED = "x = handle_request(1)\ny = prehandle_requests\n"


def indexed(
    tmp_path_factory: pytest.TempPathFactory, name: str, files: dict[str, Content]
) -> tuple[pygit2.Repository, TrigramView]:
    """A repository of `files` and the trigram view of its head."""
    root = tmp_path_factory.mktemp(name)
    git, head = make_repo(root / "repo", files)
    store = IndexStore(root / "cache")
    return git, TrigramView(store.open(f"acme/{name}", git, head, deadline=time.monotonic() + 60))


@pytest.fixture(scope="module")
def many_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[pygit2.Repository, TrigramView]:
    files: dict[str, Content] = {}
    for n in range(40):
        folders = ["tests"] * (n % 7 == 0) + ["d"] * (n % 6)
        files["/".join([*folders, f"f{n:02d}.py"])] = DEFINED if n % 5 == 0 else USED
    files["handle_request.py"] = USED
    return indexed(tmp_path_factory, "many", files)


def scan(
    repo: pygit2.Repository,
    view: TrigramView,
    query: str,
    size: int,
    *,
    regex: bool,
    max_matches: int = 1_000_000,
) -> Scan:
    compiled = compile_query(query, regex=regex, ignore_case=False, max_mem=1 << 20)
    done = Scan(
        repo=repo,
        index=view,
        compiled=compiled,
        max_results=size,
        max_matches=max_matches,
        deadline=time.monotonic() + 60,
        source="test",
    )
    done.run(
        view.candidates(compiled.plan), definers=view.candidates(compiled.plan, definitions=True)
    )
    return done


def keys(view: TrigramView, found: list[Found]) -> list[tuple[float, str, int]]:
    """Hits as their rank keys: score, path, line."""
    return [(f.score, view.paths[f.row], f.line.line_number) for f in found]


@settings(max_examples=25, deadline=None)
@given(
    size=st.integers(min_value=1, max_value=30),
    query=st.sampled_from(
        [("handle_request", False), (r"handle_\w+", True), ("def handle", False), ("x = ", False)]
    ),
)
def test_stopping_early_returns_the_same_hits_as_verifying_every_file(
    many_files: tuple[pygit2.Repository, TrigramView], size: int, query: tuple[str, bool]
) -> None:
    """The first `size` hits are the same whether or not the scan stopped early."""
    repo, view = many_files
    early = scan(repo, view, query[0], size, regex=query[1])
    full = scan(repo, view, query[0], 10_000, regex=query[1])
    assert full.exhaustive
    assert keys(view, early.top.best()) == keys(view, full.top.best())[:size]
    if not early.exhaustive:
        assert early.scanned < full.scanned
        assert early.total < full.total


def test_a_scan_stops_counting_after_its_match_budget(
    many_files: tuple[pygit2.Repository, TrigramView],
) -> None:
    """Past `max_matches` matching lines no further file is verified: the count is then a
    lower bound, and the answer says it is not exhaustive."""
    repo, view = many_files
    full = scan(repo, view, "x = ", 1000, regex=False)
    capped = scan(repo, view, "x = ", 1000, regex=False, max_matches=full.total // 3)
    assert full.exhaustive
    assert not capped.exhaustive
    assert full.total // 3 <= capped.total < full.total
    assert capped.scanned < full.scanned


def test_a_blob_several_candidate_files_hold_is_read_once(
    many_files: tuple[pygit2.Repository, TrigramView],
) -> None:
    """Forty-one files hold two contents: each file is verified and has its hits, from one
    read of each content, whether the scan ends early or not."""
    repo, view = many_files
    rows = view.candidates(
        compile_query("handle_request", regex=False, ignore_case=False, max_mem=1 << 20).plan
    )
    assert len(rows) == 41
    assert len({view.oid(row) for row in rows.tolist()}) == 2
    full = scan(repo, view, "handle_request", 10_000, regex=False)
    assert full.exhaustive
    assert full.scanned == 41
    assert full.blobs_read == 2
    assert {view.paths[f.row] for f in full.top.best()} == {view.paths[r] for r in rows.tolist()}
    early = scan(repo, view, "handle_request", 3, regex=False)
    assert not early.exhaustive
    assert early.blobs_read <= 2


UNSIGNED_FIELD = r"\bu32 [a-z_]+;"
DECLARES = "struct config {\n\tu32 flags;\n};\n#define AS_U32(x) ((u32 )(x))\n"
"""Definition lines holding the pattern's trigrams, none matching it: a match off them."""
DEFINES = "struct inline_config { u32 flags; };\n"


@pytest.fixture(scope="module")
def declaring_files(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[pygit2.Repository, TrigramView]:
    files: dict[str, Content] = {f"f{n:02d}.h": DECLARES for n in range(30)}
    files["z_defines.h"] = DEFINES
    return indexed(tmp_path_factory, "declaring", files)


def test_a_file_whose_definition_lines_do_not_match_waits_for_its_plain_hits(
    declaring_files: tuple[pygit2.Repository, TrigramView],
) -> None:
    """Every file's definition lines hold the pattern's trigrams, one file's match it: that
    file's hit comes first and is found without verifying the others, and each answer is
    the one verifying every file gives."""
    repo, view = declaring_files
    definers = view.candidates(
        compile_query(UNSIGNED_FIELD, regex=True, ignore_case=False, max_mem=1 << 20).plan,
        definitions=True,
    )
    assert len(definers) == 31
    full = scan(repo, view, UNSIGNED_FIELD, 10_000, regex=True)
    assert full.exhaustive
    assert full.scanned == 31
    first = scan(repo, view, UNSIGNED_FIELD, 1, regex=True)
    assert [view.paths[f.row] for f in first.top.best()] == ["z_defines.h"]
    assert first.scanned == 1
    for size in (2, 5, 30, 31, 40):
        early = scan(repo, view, UNSIGNED_FIELD, size, regex=True)
        assert keys(view, early.top.best()) == keys(view, full.top.best())[:size]
