"""The mirror's history tables: commits, changed files and messages, recorded incrementally."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from unittest.mock import patch

import pyarrow as pa
import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.gitrepos import commit, init_repo
from tests.worker.index.conftest import RepoFactory
from worker.index.store import history
from worker.index.store.history import current_generation, read_records, write_history
from worker.index.store.segment import column, read_table


def test_records_changed_files_newest_first(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """Each commit is recorded with its message and the files it added, changed or removed."""
    factory = make_repo("r")
    factory.commit({"a.py": b"1", "lib/b.py": b"1"}, "start")
    factory.commit({"a.py": b"2", "lib/b.py": b"1", "lib/c.py": b"1"}, "change a, add c")
    factory.commit({"a.py": b"2", "lib/c.py": b"1"}, "drop b")
    assert write_history(tmp_path, factory.repo, max_commits=100) == (3, 3)
    generation = current_generation(tmp_path)
    assert generation is not None
    records = read_records(generation)
    assert [r.message for r in records] == ["drop b", "change a, add c", "start"]
    assert [sorted(r.touched) for r in records] == [
        ["lib/b.py"],
        ["a.py", "lib/c.py"],
        ["a.py", "lib/b.py"],
    ]
    assert records[0].parents == (records[1].oid,)


def test_second_sync_diffs_only_new_commits(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """A sync with nothing new keeps the generation; a new commit makes a new one, alone."""
    factory = make_repo("r")
    factory.commit({"a.py": b"1"}, "one")
    write_history(tmp_path, factory.repo, max_commits=100)
    first = current_generation(tmp_path)
    assert write_history(tmp_path, factory.repo, max_commits=100) == (1, 0)
    assert current_generation(tmp_path) == first
    factory.commit({"a.py": b"2"}, "two")
    assert write_history(tmp_path, factory.repo, max_commits=100) == (2, 1)
    second = current_generation(tmp_path)
    assert second is not None
    assert second != first
    assert first is not None
    assert not first.exists()
    assert [r.message for r in read_records(second)] == ["two", "one"]


def test_keeps_only_the_newest_commits(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """At most `max_commits` are kept, the newest."""
    factory = make_repo("r")
    for n in range(5):
        factory.commit({"a.py": str(n).encode()}, f"c{n}")
    write_history(tmp_path, factory.repo, max_commits=3)
    generation = current_generation(tmp_path)
    assert generation is not None
    assert [r.message for r in read_records(generation)] == ["c4", "c3", "c2"]


def test_a_sweeping_commit_records_no_files(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """A commit changing more files than the limit names none of them."""
    factory = make_repo("r")
    many = history.MAX_TOUCHES + 5
    factory.commit({f"f{n}.py": b"1" for n in range(many)}, "import everything")
    factory.commit({**{f"f{n}.py": b"1" for n in range(many)}, "f0.py": b"2"}, "one fix")
    write_history(tmp_path, factory.repo, max_commits=100)
    generation = current_generation(tmp_path)
    assert generation is not None
    assert [r.touched for r in read_records(generation)] == [("f0.py",), ()]


def test_no_branches_records_nothing(tmp_path: Path) -> None:
    """An empty repository gives an empty history."""
    repo = pygit2.init_repository(str(tmp_path / "empty.git"), bare=True)
    assert write_history(tmp_path / "index", repo, max_commits=10) == (0, 0)


def _says(
    generation: Path,
) -> tuple[list[history.CommitRecord], dict[str, list[int]], list[int], list[str]]:
    """What a generation says, however it numbers its paths: its records, each term's
    (row, term count) postings, flattened, each commit's number of terms, and the paths it
    keeps."""
    terms = read_table(generation / "terms.arrow")
    postings = read_table(generation / "postings.arrow")
    rows, tf = column(postings, "commit").tolist(), column(postings, "tf").tolist()
    by_term = {
        term: [x for at in range(start, start + count) for x in (rows[at], tf[at])]
        for term, start, count in zip(
            terms.column("term").to_pylist(),
            column(terms, "start").tolist(),
            column(terms, "count").tolist(),
            strict=True,
        )
    }
    lengths = column(read_table(generation / "commits.arrow"), "length").tolist()
    paths = sorted(read_table(generation / "paths.arrow").column("path").to_pylist())
    return read_records(generation), by_term, lengths, paths


WORDS = ["parser", "cache", "router", "config", "token", "index", "merge", "graph"]


@settings(max_examples=12, deadline=None)
@given(
    steps=st.lists(st.tuples(st.integers(1, 4), st.booleans()), min_size=1, max_size=4),
    cap=st.integers(2, 10),
)
def test_a_history_extended_sync_by_sync_says_what_one_rebuilt_each_time_does(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[int, bool]], cap: int
) -> None:
    """Recording new commits over the last generation's tables (branches too, past the cap)
    gives the records, postings, lengths and paths that analysing every recorded commit again
    does."""
    root = tmp_path_factory.mktemp("history")
    repo = init_repo(root / "src")
    extended, rebuilt = root / "extended", root / "rebuilt"

    def rebuild(
        fresh: list[history.CommitRecord], _old: object, max_commits: int
    ) -> dict[str, pa.Table]:
        last = current_generation(rebuilt)
        assert last is not None
        return history._tables([*fresh, *read_records(last)][:max_commits])

    made = 0
    for new, branch in steps:
        for _ in range(new):
            words = " ".join(WORDS[(made + k) % len(WORDS)] for k in range(made % 4 + 1))
            commit(repo, {f"f{made % 5}.py": f"x = {made}\n"}, message=f"fix {words} {made}")
            made += 1
        if branch:
            commit(repo, {"side.py": f"y = {made}\n"}, message=f"side {made}", branch=f"b{made}")
            made += 1
        write_history(extended, repo, max_commits=cap)
        with patch.object(history, "_extended", rebuild):
            write_history(rebuilt, repo, max_commits=cap)
        one, other = current_generation(extended), current_generation(rebuilt)
        assert one is not None
        assert other is not None
        assert _says(one) == _says(other)


def test_a_generation_of_another_format_is_recorded_again_whole(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """A history in a layout this code does not read is not read: the next sync records every
    commit again, under a name of this format."""
    factory = make_repo("r")
    factory.commit({"a.py": b"1"}, "one")
    factory.commit({"a.py": b"2"}, "two")
    assert write_history(tmp_path, factory.repo, max_commits=100) == (2, 2)
    generation = current_generation(tmp_path)
    assert generation is not None
    older = generation.with_name("v0-" + generation.name.split("-", 1)[1])
    generation.rename(older)
    (tmp_path / history.HISTORY_DIR / history.CURRENT).write_text(older.name)
    assert current_generation(tmp_path) is None
    assert write_history(tmp_path, factory.repo, max_commits=100) == (2, 2)
    again = current_generation(tmp_path)
    assert again is not None
    assert [r.message for r in read_records(again)] == ["two", "one"]
