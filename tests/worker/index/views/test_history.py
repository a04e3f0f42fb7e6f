"""History as evidence: files changed by past commits whose messages match the query."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.worker.index.conftest import RepoFactory
from worker.index.store.history import write_history
from worker.index.views.history import HistoryStore
from worker.index.views.ranking import query_weights

BASE = {"parser.py": b"x", "printer.py": b"x", "units.py": b"x"}


def _history_repo(factory: RepoFactory) -> tuple[str, str]:
    factory.commit(BASE, "initial import")
    pinned = factory.commit(
        {**BASE, "printer.py": b"y"}, "Fix latex printing of fractions in the printer"
    )
    later = factory.commit(
        {**BASE, "printer.py": b"y", "parser.py": b"y"}, "Fix the parser overflow"
    )
    return pinned, later


def test_matching_commits_lend_their_files(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """A file changed by a commit whose message matches the query scores; others do not."""
    factory = make_repo("r")
    pinned, _ = _history_repo(factory)
    write_history(tmp_path, factory.repo, max_commits=100)
    history = HistoryStore().get(tmp_path)
    assert history is not None
    scores = history.file_scores(pinned, query_weights("latex fractions print wrong"))
    assert set(scores) == {"printer.py"}


def test_commits_after_the_pinned_one_never_count(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """A later commit (possibly the fix itself) is not evidence for an earlier pin."""
    factory = make_repo("r")
    pinned, later = _history_repo(factory)
    write_history(tmp_path, factory.repo, max_commits=100)
    history = HistoryStore().get(tmp_path)
    assert history is not None
    assert history.file_scores(pinned, query_weights("parser overflow")) == {}
    assert set(history.file_scores(later, query_weights("parser overflow"))) == {"parser.py"}


def test_unrecorded_commit_has_no_history(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """A commit the history does not hold gives no evidence, and no error."""
    factory = make_repo("r")
    _history_repo(factory)
    write_history(tmp_path, factory.repo, max_commits=100)
    history = HistoryStore().get(tmp_path)
    assert history is not None
    assert history.file_scores("ab" * 20, query_weights("parser")) == {}


def test_store_follows_new_generations(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """After the mirror publishes more history, the store maps the new generation."""
    factory = make_repo("r")
    store = HistoryStore()
    assert store.get(tmp_path) is None
    factory.commit(BASE, "initial import")
    write_history(tmp_path, factory.repo, max_commits=100)
    first = store.get(tmp_path)
    newest = factory.commit({**BASE, "units.py": b"z"}, "Convert units of angles")
    write_history(tmp_path, factory.repo, max_commits=100)
    second = store.get(tmp_path)
    assert first is not None
    assert second is not None
    assert second.generation != first.generation
    assert set(second.file_scores(newest, query_weights("angle units"))) == {"units.py"}
