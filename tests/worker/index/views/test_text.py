"""Ranking a report: its title weighs more than its body; a commit ranks as itself."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.worker.index.conftest import RepoFactory, open_commit_index
from worker.index import CommitIndex, IndexStore, build_commit_index
from worker.index.views.ranking import RankingParams, analyse_query

FILES = {
    "pkg/cache.py": b'''def expire(entries, now):
    """Drop the cache entries whose deadline passed."""
    return {key: entry for key, entry in entries.items() if entry.deadline > now}
''',
    "pkg/session.py": b'''def connect(host, retries):
    """Open a session to the host, retrying the connection when it is refused."""
    for attempt in range(retries):
        session = open_session(host)
        if session:
            return session
    raise ConnectionError(host)
''',
}

REPORT = """\
Stale cache entries never expire

```python
client = make_client(host, retries=3)
```

The client reconnects its session to the host, and after the session
reconnects the connection is retried and the session comes back.
"""


@pytest.fixture
def index(make_repo: Callable[[str], RepoFactory], tmp_path: Path) -> CommitIndex:
    factory = make_repo("pkg")
    return open_commit_index(factory, factory.commit(FILES), tmp_path)


def test_title_terms_outweigh_a_longer_body(index: CommitIndex) -> None:
    """The file the title is about ranks first though the body's words favour another."""
    assert next(index.ranked(REPORT)).path == "pkg/cache.py"
    unboosted = analyse_query(REPORT, RankingParams(title_boost=1.0))
    assert next(index.ranked(unboosted)).path == "pkg/session.py"


def test_a_question_has_no_title_boost() -> None:
    """A one-line question is weighed as it is: it has no title apart from its text."""
    question = "where do cache entries expire"
    assert (
        analyse_query(question).weights
        == analyse_query(question, RankingParams(title_boost=1.0)).weights
    )


Ranked = list[tuple[str, int, float]]


def _ranked(cache: Path, factory: RepoFactory, commit: str, query: str) -> Ranked:
    """The first hits of `query` in the commit's index in `cache`: path, line, score."""
    store = IndexStore(cache)
    index = store.open("acme/pkg", factory.repo, commit, deadline=time.monotonic() + 60)
    return [(h.path, h.start_line, h.score) for h in itertools.islice(index.ranked(query), 20)]


def test_a_commit_indexed_over_an_older_one_ranks_as_if_indexed_alone(
    make_repo: Callable[[str], RepoFactory], tmp_path: Path
) -> None:
    """Built incrementally (its index keeps segments holding blobs it no longer has), a
    commit gives the same hits with the same scores as one indexed from nothing: what its
    terms weigh counts only its own chunks."""
    factory = make_repo("pkg")
    body = "(session):\n    return session.retry(connection)\n"
    old = {f"pkg/retry_{i}.py": f"def retry_{i}{body}".encode() for i in range(30)}
    first = factory.commit({**old, **FILES})
    second = factory.commit({"pkg/extra.py": b"def extra(session):\n    return 1\n", **FILES})
    build_commit_index(tmp_path / "incremental", "acme/pkg", factory.repo, first)
    build_commit_index(tmp_path / "incremental", "acme/pkg", factory.repo, second)
    build_commit_index(tmp_path / "alone", "acme/pkg", factory.repo, second)
    for query in (REPORT, "retry the session connection", "expire cache entries"):
        assert _ranked(tmp_path / "incremental", factory, second, query) == _ranked(
            tmp_path / "alone", factory, second, query
        )
